"""The simulated call's clocks: seconds since the call began, in real or virtual time.

:class:`RealClock` is the wall clock: the demo runs on it so a person can follow the call as it happens.

:class:`VirtualClock` is real time with the simulator's own waits skipped: playing a prompt or a hold — what
the flow would otherwise sleep through — moves the clock forward at once. Everything else takes its real time: a
Lambda function running in another process cannot be made to skip, and neither can the caller's speech, which Ink
accepts no faster than one second per second (the simulator never skips across it). Tests run on it: a minute of
call passes in seconds, and what the functions really took is still what the timeline shows.

Both clocks place a wall-clock moment on the call's time (:meth:`Clock.call_time`), so what the functions record in
epoch milliseconds (a turn's end, a segment ready) lines up with what the simulator saw: on the virtual clock, the
waits skipped before that moment are added.
"""

from __future__ import annotations

import bisect
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

    def call_time(self, epoch_s: float) -> float:
        """The moment of the call (seconds since it began) when the wall clock read ``epoch_s``."""
        ...

    def epoch_ms(self, moment: float) -> int | None:
        """The wall clock's epoch milliseconds at ``moment`` of the call; None where the call runs ahead of the wall
        clock (skipped waits), so no wall time is the call's."""
        ...


class RealClock:
    """Wall-clock time since construction."""

    virtual = False

    def __init__(self) -> None:
        self._origin = time.monotonic()
        self._origin_epoch = time.time()

    def now(self) -> float:
        return time.monotonic() - self._origin

    def sleep_until(self, moment: float) -> None:
        delay = moment - self.now()
        if delay > 0:
            time.sleep(delay)

    def call_time(self, epoch_s: float) -> float:
        return epoch_s - self._origin_epoch

    def epoch_ms(self, moment: float) -> int | None:
        return round((self._origin_epoch + moment) * 1000)


class VirtualClock:
    """Real time since construction plus every wait skipped so far."""

    virtual = True

    def __init__(self) -> None:
        self._origin = time.monotonic()
        self._origin_epoch = time.time()
        self._skipped = 0.0
        # (real seconds since the origin when a wait was skipped, total skipped from then on), in order.
        self._skips: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return time.monotonic() - self._origin + self._skipped

    def sleep_until(self, moment: float) -> None:
        with self._lock:
            real = time.monotonic() - self._origin
            gap = moment - (real + self._skipped)
            if gap > 0:
                self._skipped += gap
                self._skips.append((real, self._skipped))

    def call_time(self, epoch_s: float) -> float:
        real = epoch_s - self._origin_epoch
        with self._lock:
            position = bisect.bisect_right(self._skips, (real, float("inf")))
            skipped = self._skips[position - 1][1] if position else 0.0
        return real + skipped

    def epoch_ms(self, moment: float) -> int | None:
        return None
