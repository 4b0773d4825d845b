"""A long poll answers within its wait, counted from the invocation's start, however slow each look is."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests.fixtures.clock import ManualClock
from voicebridge.polls.longpoll import LongPoll
from voicebridge.polls.next_segment import next_to_play
from voicebridge.polls.next_turn import await_turn


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
    clock = ManualClock(start=0.0)
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
    clock = ManualClock(start=0.0)
    clock.advance(1.2)  # a cold container made its clients for 1.2 s after the invocation began at 0
    turns = SlowTurns(clock, 0.3)

    turn, waited_ms = await_turn(
        "contact",
        {"AfterTurn": "-1", "MaxWaitMs": "2000"},
        store=turns,  # type: ignore[arg-type]
        max_wait_ms=7000,
        poll_interval_ms=100,
        remaining_ms=None,
        started=0.0,
        clock=clock,
    )

    assert turn is None
    assert waited_ms <= 2000 and clock.monotonic() <= 2.0
    assert turns.looks == 2


def test_a_poll_with_no_wait_looks_once_and_answers() -> None:
    clock = ManualClock(start=0.0)
    poll = LongPoll(0, clock=clock)

    with poll.look():
        clock.advance(0.01)

    assert not poll.pause(0.1)
    assert poll.waited_ms == pytest.approx(10)
