"""A local service's lifecycle: a ``with`` block around start and stop, and the count of work in flight that
tells when it is idle."""

from __future__ import annotations

import contextlib
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from types import TracebackType
from typing import Self


class LocalService(ABC):
    """A loopback service of the local cloud."""

    @abstractmethod
    def start(self) -> Self:
        """Start serving; returns the service."""

    @abstractmethod
    def stop(self) -> None:
        """Stop serving and free the port."""

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class InFlight:
    """How many pieces of work (invocations, responses, sessions) a service is busy with, and a wait for none.

    >>> work = InFlight()
    >>> with work.serving():
    ...     work.count
    1
    >>> work.wait_idle(0)
    True
    """

    def __init__(self) -> None:
        self._idle = threading.Condition()
        self._count = 0

    @property
    def count(self) -> int:
        with self._idle:
            return self._count

    def begin(self) -> None:
        with self._idle:
            self._count += 1

    def end(self) -> None:
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Count the work of the ``with`` block."""
        self.begin()
        try:
            yield
        finally:
            self.end()

    def wait_idle(self, timeout: float | None) -> bool:
        """Wait until nothing is in flight; False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)
