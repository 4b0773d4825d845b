"""The queue of injected faults every emulator keeps: faults wait in the order they were injected, and each
strikes a number of calls before it is spent.

What a fault does, and which calls it strikes, is each emulator's own; the queue only keeps the order and the
counts, under a lock, so a test thread can inject while the server's threads take. A fault that strikes
twice is taken by two calls, then the queue is empty::

    queue.push(Fault(FaultKind.THROTTLE, count=2))
    queue.take(), queue.take(), queue.take()   # the fault, the fault, None
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, Self, TypeVar

__all__ = ["FaultQueue", "FaultSpecError", "InjectableFault"]


class FaultSpecError(ValueError):
    """A fault description (from Python or ``POST /_emulator/faults``) is malformed."""


class InjectableFault(Protocol):
    """What the queue needs to know of a fault: how many calls it strikes."""

    @property
    def uses(self) -> int:
        """How many calls the fault strikes before it is spent."""
        ...

    def with_uses(self, uses: int) -> Self:
        """This fault with ``uses`` calls left to strike (how pending faults are shown)."""
        ...


F = TypeVar("F", bound=InjectableFault)


@dataclass(eq=False)
class _Pending(Generic[F]):
    fault: F
    left: int


class FaultQueue(Generic[F]):
    """Pending faults, oldest first; taking a fault spends one of its uses, and a spent fault leaves the queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Pending[F]] = []

    def push(self, fault: F) -> None:
        with self._lock:
            self._pending.append(_Pending(fault, fault.uses))

    def take(self, strikes: Callable[[F], bool] = lambda fault: True) -> F | None:
        """The oldest fault that ``strikes`` says applies to this call, one use spent; None when there is none."""
        with self._lock:
            for entry in self._pending:
                if strikes(entry.fault):
                    self._spend(entry)
                    return entry.fault
            return None

    def take_all(self, strikes: Callable[[F], bool]) -> list[F]:
        """Every fault that ``strikes`` says applies to this call, oldest first, one use of each spent."""
        with self._lock:
            taken = [entry for entry in self._pending if strikes(entry.fault)]
            for entry in taken:
                self._spend(entry)
            return [entry.fault for entry in taken]

    def pending(self) -> list[F]:
        """Snapshot of the queue, each fault with the uses it has left."""
        with self._lock:
            return [entry.fault.with_uses(entry.left) for entry in self._pending]

    def clear(self) -> int:
        """Drop every pending fault; returns how many calls they would still have struck."""
        with self._lock:
            remaining = sum(entry.left for entry in self._pending)
            self._pending.clear()
            return remaining

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def _spend(self, entry: _Pending[F]) -> None:
        entry.left -= 1
        if entry.left == 0:
            self._pending.remove(entry)
