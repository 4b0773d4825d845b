"""What the records of calls an emulator keeps share: each is a dataclass a test reads as JSON, kept in a
bounded log, oldest first."""

from __future__ import annotations

import dataclasses
import threading
from collections import deque
from typing import Any, ClassVar, Generic, Self, TypeVar

__all__ = ["CallLog", "Record"]


class Record:
    """Mixed into a frozen dataclass recording one call."""

    # Declared for the type checker only: the dataclass a record is sets them.
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def of(cls, state: object, **given: Any) -> Self:
        """The record of a call from its running bookkeeping ``state``: each field the state has by name, the
        others from ``given``."""
        taken = {name: getattr(state, name) for name in cls.__dataclass_fields__ if hasattr(state, name)}
        return cls(**{**taken, **given})

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


R = TypeVar("R")


class CallLog(Generic[R]):
    """The last ``limit`` records of calls (all of them without one), appended by the server's threads and
    read by a test's."""

    def __init__(self, limit: int | None = None) -> None:
        self._lock = threading.Lock()
        self._records: deque[R] = deque(maxlen=limit)

    def append(self, record: R) -> None:
        with self._lock:
            self._records.append(record)

    def snapshot(self) -> list[R]:
        """The records, oldest first (a copy)."""
        with self._lock:
            return list(self._records)
