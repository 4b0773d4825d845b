"""Bounded exponential back-off with full jitter, for every reconnect path (GetMedia, Ink) and every retried write.

The delay before attempt *n* is uniform in ``[0, min(cap, base · 2ⁿ⁻¹)]`` — "full jitter" (AWS Architecture Blog,
*Exponential Backoff And Jitter*), so many consumers retrying at once spread out instead of arriving together.
A connection that succeeds but is lost again at once must not reset the count (a service failing right after every
connect would otherwise be hammered), so the count resets only once a connection has stayed up for ``stable_s``::

    backoff = Backoff(base_s=0.1, cap_s=5.0, stable_s=10.0)
    delay = backoff.failure(now)     # wait this long before the next attempt
    backoff.success(now)             # connected; the count resets if it stays up for stable_s
"""

from __future__ import annotations

import random
from collections.abc import Callable


class Backoff:
    """Delays between attempts at one thing."""

    def __init__(
        self, *, base_s: float, cap_s: float, stable_s: float = 0.0, rng: Callable[[], float] = random.random
    ) -> None:
        self.base_s = base_s
        self.cap_s = cap_s
        self.stable_s = stable_s
        self.attempts = 0
        self._rng = rng
        self._up_since: float | None = None

    def failure(self, now: float) -> float:
        """An attempt failed, or a connection was lost: the delay before the next attempt, in seconds."""
        if self._up_since is not None and now - self._up_since >= self.stable_s:
            self.attempts = 0
        self._up_since = None
        self.attempts += 1
        return self._rng() * self.ceiling

    def success(self, now: float) -> None:
        """An attempt succeeded (connected, or made progress)."""
        if self.stable_s == 0:
            self.attempts = 0
        elif self._up_since is None:
            self._up_since = now

    @property
    def ceiling(self) -> float:
        """The largest delay the current count allows."""
        if self.attempts == 0:
            return 0.0
        return min(self.cap_s, self.base_s * 2.0 ** min(self.attempts - 1, 30))
