"""The simulated call's clocks: seconds since the call began, in real or virtual time.

:class:`RealClock` is the wall clock: the demo runs on it so a person can follow the call as it happens.

:class:`VirtualClock` is real time with the simulator's own waits skipped: playing a prompt, the caller's
pause and speech, a hold — anything the simulator would otherwise sleep through — moves the clock forward at
once. Everything else takes its real time, in particular a Lambda function running in another process,
which cannot be made to skip. Tests run on it: a minute of call passes in seconds, and what the functions
really took is still what the timeline shows.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol

__all__ = ["Clock", "RealClock", "VirtualClock"]


class Clock(Protocol):
    """Seconds since the call began; :meth:`sleep_until` waits (or skips) until a moment of the call."""

    @property
    def virtual(self) -> bool:
        """True when waits are skipped rather than slept."""
        ...

    def now(self) -> float: ...

    def sleep_until(self, moment: float) -> None: ...


class RealClock:
    """Wall-clock time since construction."""

    virtual = False

    def __init__(self) -> None:
        self._origin = time.monotonic()

    def now(self) -> float:
        return time.monotonic() - self._origin

    def sleep_until(self, moment: float) -> None:
        delay = moment - self.now()
        if delay > 0:
            time.sleep(delay)


class VirtualClock:
    """Real time since construction plus every wait skipped so far."""

    virtual = True

    def __init__(self) -> None:
        self._origin = time.monotonic()
        self._skipped = 0.0
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return time.monotonic() - self._origin + self._skipped

    def sleep_until(self, moment: float) -> None:
        with self._lock:
            gap = moment - (time.monotonic() - self._origin + self._skipped)
            if gap > 0:
                self._skipped += gap
