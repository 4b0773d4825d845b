"""A long poll answers within its wait, counted from the invocation's start, however slow each look is, and on time
even when a look stalls."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from tests.fixtures.clock import ManualClock
from voicebridge.polls.longpoll import LateLook, LongPoll
from voicebridge.polls.next_segment import Next, next_to_play
from voicebridge.polls.next_turn import await_turn
from voicebridge.store.replies import ReplyStatus


class SlowReplies:
    """A reply store that has nothing yet and takes ``look_s`` to say so."""

    def __init__(self, clock: ManualClock, look_s: float) -> None:
        self.clock, self.look_s, self.looks = clock, look_s, 0

    def status(self, contact_id: str) -> None:
        self.looks += 1
        self.clock.advance(self.look_s)


class SlowTurns:
    """A turn store with a live listener and no turn yet, ``look_s`` to say so."""

    def __init__(self, clock: ManualClock, look_s: float) -> None:
        self.clock, self.look_s, self.looks = clock, look_s, 0

    def turns_after(self, contact_id: str, **_: Any) -> list[Any]:
        self.looks += 1
        self.clock.advance(self.look_s)
        return []

    def load(self, contact_id: str) -> Any:
        return SimpleNamespace(alive=lambda now_ms: True, why_not_listening="")

    def now_ms(self) -> int:
        return 0


@pytest.mark.parametrize("look_s", [0.0, 0.05, 0.5, 1.5])
def test_converse_answers_timeout_within_its_wait_however_slow_the_store(look_s: float) -> None:
    clock = ManualClock(start=0.0, settle_s=5.0)
    replies = SlowReplies(clock, look_s)

    found = next_to_play(
        "contact",
        {"TurnIndex": "0", "Segment": "0", "MaxWaitMs": "2000"},
        replies=replies,  # type: ignore[arg-type]
        turns=SlowTurns(clock, 0.0),  # type: ignore[arg-type]
        max_wait_ms=6000,
        fast_poll_ms=20,
        slow_poll_ms=100,
        remaining_ms=None,
        clock=clock,
    )

    assert found.timed_out
    assert clock.monotonic() <= 2.0
    # It went on looking for as long as a look could still end in time.
    assert clock.monotonic() > 2.0 - 2 * max(look_s, 0.1)
    assert replies.looks >= (2 if look_s < 1 else 1)


def test_await_turn_counts_what_the_invocation_did_before_polling() -> None:
    clock = ManualClock(start=0.0, settle_s=5.0)
    clock.advance(1.2)  # a cold container made its clients for 1.2 s after the invocation began at 0
    turns = SlowTurns(clock, 0.3)

    awaited = await_turn(
        "contact",
        {"AfterTurn": "-1", "MaxWaitMs": "2000"},
        store=turns,  # type: ignore[arg-type]
        max_wait_ms=7000,
        poll_interval_ms=100,
        remaining_ms=None,
        started=0.0,
        clock=clock,
    )

    assert awaited.turn is None
    assert awaited.waited_ms <= 2000 and clock.monotonic() <= 2.0
    assert turns.looks == 2


def test_a_poll_with_no_wait_looks_once_and_answers() -> None:
    clock = ManualClock(start=0.0, settle_s=5.0)
    poll = LongPoll(0, clock=clock)

    poll.look(lambda: clock.advance(0.01))

    assert not poll.pause(0.1)
    assert poll.waited_ms == pytest.approx(10)


class Stall:
    """A table read that does not end until the test lets it (at the latest after ``release_s``, so a poll that waits
    for it cannot hang the suite): what a throttled or hot partition does to one look."""

    def __init__(self, release_s: float = 5.0) -> None:
        self.released = threading.Event()
        self._timer = threading.Timer(release_s, self.released.set)
        self._timer.start()

    def __call__(self) -> None:
        self.released.wait()

    def release(self) -> None:
        self.released.set()
        self._timer.cancel()


class StallingReplies:
    """Turn 3's reply being made, its second segment not stored yet; every look after the first stalls."""

    def __init__(self, stall: Stall) -> None:
        self.stall, self.looks = stall, 0

    def status(self, contact_id: str) -> ReplyStatus:
        self.looks += 1
        if self.looks > 1:
            self.stall()
        return ReplyStatus(3, 1, done=False, updated_at_ms=0)


def converse_over(replies: StallingReplies, wait_ms: int) -> tuple[Next, bool]:
    """ConverseFunction's poll after turn 3's first segment, on the system clock; what it answered, and whether it
    answered while a look was still stalled."""
    try:
        found = next_to_play(
            "contact",
            {"TurnIndex": "3", "Segment": "0", "MaxWaitMs": str(wait_ms)},
            replies=replies,  # type: ignore[arg-type]
            turns=SlowTurns(ManualClock(), 0.0),  # type: ignore[arg-type]
            max_wait_ms=6000,
            fast_poll_ms=10,
            slow_poll_ms=100,
            remaining_ms=None,
        )
        return found, not replies.stall.released.is_set()
    finally:
        replies.stall.release()


def test_a_stalled_look_is_left_behind_and_converse_answers_on_time_from_what_it_saw() -> None:
    found, answered_while_stalled = converse_over(StallingReplies(Stall()), 300)

    assert answered_while_stalled
    # What the last look saw: turn 3's reply still being made, its first segment already played.
    assert (
        found.timed_out and found.thinking is not None and (found.thinking.turn, found.thinking.started) == (3, False)
    )


def test_a_converse_poll_whose_first_look_stalls_says_a_reply_is_still_to_come() -> None:
    replies = StallingReplies(Stall())
    replies.looks = 1  # every look stalls
    found, answered_while_stalled = converse_over(replies, 200)

    # Nothing is known: the flow plays the silent prompt and asks again, rather than hear "Are you still there?".
    assert answered_while_stalled and found.thinking is not None and found.thinking.started is False


def test_a_stalled_look_is_left_behind_and_await_turn_answers_on_time() -> None:
    stall = Stall()

    class StallingTurns(SlowTurns):
        def turns_after(self, contact_id: str, **_: Any) -> list[Any]:
            stall()
            return []

    try:
        awaited = await_turn(
            "contact",
            {"AfterTurn": "-1", "MaxWaitMs": "200"},
            store=StallingTurns(ManualClock(), 0.0),  # type: ignore[arg-type]
            max_wait_ms=7000,
            poll_interval_ms=40,
            remaining_ms=None,
        )
        answered_while_stalled = not stall.released.is_set()
    finally:
        stall.release()

    assert answered_while_stalled and awaited.turn is None and awaited.speaking_ms is None


def test_a_poll_looks_no_more_once_a_look_was_late() -> None:
    clock = ManualClock(start=0.0)
    poll = LongPoll(100, clock=clock)
    stall = Stall()
    try:
        with pytest.raises(LateLook):
            poll.look(stall)
        with pytest.raises(LateLook):
            poll.look(lambda: None)
        assert not poll.spare_look()
    finally:
        stall.release()
        poll.close()


def test_what_a_look_raises_is_raised_by_the_poll() -> None:
    poll = LongPoll(1000, clock=ManualClock(start=0.0, settle_s=5.0))

    def refused() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        poll.look(refused)
    poll.close()
