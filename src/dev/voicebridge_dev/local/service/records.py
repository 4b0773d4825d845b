"""What the records of calls an emulator keeps share: each is a dataclass a test reads as JSON, kept in a
bounded log, oldest first. A call served by a :class:`~voicebridge_dev.local.service.server.CallHandler` is kept
as a :class:`CallState` while it runs and recorded, once done, as a :class:`CallRecord` taken from its fields."""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar


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


@dataclass(frozen=True, kw_only=True)
class CallRecord(Record):
    """What the record of every call a :class:`~voicebridge_dev.local.service.server.CallHandler` serves holds:
    its request id, the request's ``body`` as it arrived, the status answered, how the call ended (``outcome``:
    ``ok``, the emulator's own, ``client_disconnected`` or ``emulator_stopped``), the fault that struck it, and
    when it began and ended (``time.perf_counter()`` seconds; ``finished`` just before its last bytes)."""

    request_id: str
    body: Any
    http_status: int
    outcome: str
    fault: str | None
    started: float
    finished: float


@dataclass(kw_only=True)
class CallState:
    """The mutable bookkeeping of one call while it runs; ``recorded`` once its record is kept."""

    started: float
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    body: Any = None
    http_status: int = 200
    outcome: str = "ok"
    fault: str | None = None
    recorded: bool = False


@dataclass(frozen=True, kw_only=True)
class AnswerRecord(CallRecord):
    """The record of a call answered with one whole JSON body (an
    :class:`~voicebridge_dev.local.service.server.AnsweringHandler`'s): what was answered (``answer``, None for an
    error or a cut connection), and the error's type and message when it was refused."""

    answer: Any
    error_type: str | None
    error_message: str | None


@dataclass(kw_only=True)
class AnswerState(CallState):
    """The bookkeeping of such a call while it runs."""

    answer: Any = None
    error_type: str | None = None
    error_message: str | None = None


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
