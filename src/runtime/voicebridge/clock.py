"""Time, passed in: the Listen path reads the clock only through a :class:`Clock`, so tests can drive it.

Production uses :data:`SYSTEM_CLOCK`. A test passes its own clock (``tests/fixtures/clock.py``) to the transcriber or
the consumer and moves time forward itself, so waits (acknowledgement windows, back-off, hand-over margins) take no
wall time and every timing decision is reproducible::

    transcriber = TrackTranscriber(..., clock=clock)
    clock.advance(0.5)
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """Monotonic time for intervals, wall time for Connect's clock, and waiting."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (intervals, deadlines)."""
        ...

    def time(self) -> float:
        """Seconds since the epoch (compared with Connect's producer timestamps)."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds``."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait up to ``seconds`` for ``event``; whether it is set."""
        ...


class SystemClock:
    """The process's clocks."""

    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(max(0.0, seconds))


SYSTEM_CLOCK = SystemClock()
