"""A long poll that answers within its wait: Connect gives a function 8 s, and an answer a moment late is none.

AwaitTurnFunction and ConverseFunction wait for something to appear in DynamoDB by looking at one item again and
again. Two things carried them past their wait on a starved machine: what the invocation did before its first look
(a cold container making its clients) was not counted, and a look begun just before the deadline ended after it.
:class:`LongPoll` counts from when the invocation began and does not begin a look that, at the pace of the slowest
look so far, would end past the deadline::

    poll = LongPoll(wait_ms, started=entered)
    while True:
        with poll.look():
            found = store.get(...)
        if found:
            return found
        if not poll.pause(0.1):
            return None  # the wait is over
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.connect.events import whole_number

__all__ = ["LongPoll", "Meanwhile"]


ANSWER_MARGIN_MS = 300
"""What a long poll leaves of Lambda's remaining time for answering: its wait ends this long before the timeout."""


class LongPoll:
    """The wait of one long poll, ``wait_ms`` from ``started`` (``clock.monotonic()``; now, if not given)."""

    @classmethod
    def asked(
        cls,
        parameters: Mapping[str, Any],
        *,
        max_wait_ms: int,
        remaining_ms: int | None,
        started: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> LongPoll:
        """The wait a Connect block asked for (its ``MaxWaitMs``), never more than ``max_wait_ms``, and ending
        :data:`ANSWER_MARGIN_MS` before the invocation's ``remaining_ms`` run out."""
        wait_ms = min(whole_number(parameters, "MaxWaitMs", default=max_wait_ms, low=0), max_wait_ms)
        if remaining_ms is not None:
            wait_ms = max(0, min(wait_ms, remaining_ms - ANSWER_MARGIN_MS))
        return cls(wait_ms, started=started, clock=clock)

    def __init__(self, wait_ms: float, *, started: float | None = None, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self.started = clock.monotonic() if started is None else started
        self.deadline = self.started + max(wait_ms, 0) / 1000
        self._slowest = 0.0

    @contextmanager
    def look(self) -> Iterator[None]:
        """Time one look at what is waited for."""
        began = self._clock.monotonic()
        try:
            yield
        finally:
            self._slowest = max(self._slowest, self._clock.monotonic() - began)

    def pause(self, seconds: float) -> bool:
        """Wait up to ``seconds`` before the next look; False, at once, when the next look would end too late."""
        now = self._clock.monotonic()
        if now + self._slowest >= self.deadline:
            return False
        self._clock.sleep(min(seconds, self.deadline - self._slowest - now))
        return True

    def spare_look(self) -> bool:
        """Whether one more look, at the pace of the slowest so far, ends within half the answer margin past the
        deadline: what a poll whose wait ran out may spend on learning what to answer."""
        return self._clock.monotonic() + self._slowest <= self.deadline + ANSWER_MARGIN_MS / 2000

    @property
    def waited_ms(self) -> float:
        """Milliseconds since the invocation began."""
        return (self._clock.monotonic() - self.started) * 1000


MEANWHILE_JOIN_S = 0.05
"""How long an answer waits for work begun while its poll waited, before going without it."""


class Meanwhile:
    """Work a long poll does while it waits anyway (redacting what the flow has read): begun at the first pause,
    in a thread of its own, so a look is never late for it; the answer waits for it at most
    :data:`MEANWHILE_JOIN_S`. Its failures are the job's to report: ``job`` must not raise."""

    def __init__(self, job: Callable[[], None] | None) -> None:
        self._job = job
        self._thread: threading.Thread | None = None

    def begin(self) -> None:
        if self._job is not None and self._thread is None:
            self._thread = threading.Thread(target=self._job, name="poll-meanwhile", daemon=True)
            self._thread.start()

    def end(self) -> None:
        if self._thread is not None:
            self._thread.join(MEANWHILE_JOIN_S)
