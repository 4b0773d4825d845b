"""A long poll that answers within its wait: Connect gives a function 8 s, and an answer a moment late is none.

AwaitTurnFunction and ConverseFunction wait for something to appear in DynamoDB by looking at one item again and
again. Three things carried them past their wait on a starved machine: what the invocation did before its first look
(a cold container making its clients) was not counted, a look begun just before the deadline ended after it, and a
look that turned slow (a stalled read: a throttled or hot partition, a saturated table) held the answer until it
ended. :class:`LongPoll` counts from when the invocation began, does not begin a look that, at the pace of the
slowest look so far, would end past the deadline, and runs each look on a thread of its own: a look that has not
ended when the answer is due (:attr:`LongPoll.answer_by`) raises :class:`LateLook`, and the poll answers from what
it already knows while the read goes on unheeded::

    poll = LongPoll(wait_ms, started=entered)
    try:
        while True:
            try:
                found = poll.look(lambda: store.get(...))
            except LateLook:
                return what_is_known  # on time
            if found:
                return found
            if not poll.pause(0.1):
                return None  # the wait is over
    finally:
        poll.close()

A client read timeout cannot do this: botocore retries a timed-out read with the same timeout, and a timeout short
enough to answer on time fails every first look of a cold container against a busy table (tried, and reverted).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.connect.events import whole_number
from voicebridge.telemetry import in_context

__all__ = ["LateLook", "LongPoll", "Meanwhile"]

T = TypeVar("T")


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
        self.answer_by = self.deadline + ANSWER_MARGIN_MS / 2000
        """The latest a look may end: half the answer margin past the wait's end, the rest left for answering."""
        self._slowest = 0.0
        self._looker: _Looker | None = None
        self.late = False
        """A look did not end in time: the poll looks no more, and answers from what it knows."""

    def look(self, read: Callable[[], T]) -> T:
        """One look at what is waited for: ``read``'s value (or what it raised), or LateLook once it cannot end by
        :attr:`answer_by`. A late read goes on, on its own, and the poll looks no more."""
        if self.late:
            raise LateLook
        began = self._clock.monotonic()
        try:
            if self._looker is None:
                self._looker = _Looker()
            return self._looker.run(read, self._clock, self.answer_by)
        except LateLook:
            self.late = True
            raise
        finally:
            self._slowest = max(self._slowest, self._clock.monotonic() - began)

    def close(self) -> None:
        """Let the looks' thread end (after a late read, once that read does)."""
        if self._looker is not None:
            self._looker.close()
            self._looker = None

    def pause(self, seconds: float) -> bool:
        """Wait up to ``seconds`` before the next look; False, at once, when the next look would end too late."""
        now = self._clock.monotonic()
        if now + self._slowest >= self.deadline:
            return False
        self._clock.sleep(min(seconds, self.deadline - self._slowest - now))
        return True

    def spare_look(self) -> bool:
        """Whether one more look, at the pace of the slowest so far, ends by :attr:`answer_by`: what a poll whose
        wait ran out may spend on learning what to answer."""
        return not self.late and self._clock.monotonic() + self._slowest <= self.answer_by

    @property
    def waited_ms(self) -> float:
        """Milliseconds since the invocation began."""
        return (self._clock.monotonic() - self.started) * 1000


class LateLook(Exception):
    """A look had not ended when the poll's answer was due: the poll answers from what it knows."""


class _Looker:
    """The thread a poll's looks run on, one at a time, so the poll can stop waiting for one."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Look[Any] | None] = queue.SimpleQueue()
        threading.Thread(target=in_context(self._serve), name="poll-look", daemon=True).start()

    def run(self, read: Callable[[], T], clock: Clock, answer_by: float) -> T:
        """``read``'s outcome, run on this thread; LateLook when it has not ended by ``answer_by``."""
        job = _Look(read)
        self._jobs.put(job)
        if not clock.wait(job.done, answer_by - clock.monotonic()) or clock.monotonic() > answer_by:
            raise LateLook
        return job.outcome()

    def close(self) -> None:
        self._jobs.put(None)

    def _serve(self) -> None:
        while (job := self._jobs.get()) is not None:
            job.run()


class _Look(Generic[T]):
    """One read on the looks' thread: its value or what it raised, once ``done``."""

    def __init__(self, read: Callable[[], T]) -> None:
        self._read = read
        self.done = threading.Event()
        self._value: tuple[T] | None = None
        self._error: BaseException | None = None

    def run(self) -> None:
        try:
            self._value = (self._read(),)
        except BaseException as exc:  # handed to the poll, which raises it as its own
            self._error = exc
        finally:
            self.done.set()

    def outcome(self) -> T:
        if self._value is None:
            raise self._error or LateLook
        return self._value[0]


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
            self._thread = threading.Thread(target=in_context(self._job), name="poll-meanwhile", daemon=True)
            self._thread.start()

    def end(self) -> None:
        if self._thread is not None:
            self._thread.join(MEANWHILE_JOIN_S)
