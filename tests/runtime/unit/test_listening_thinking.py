"""A long poll that runs out is not always silence: the caller may be mid-turn (``Listening``) or the agent still
making its reply (``Thinking``), and neither may be answered with "Are you still there?"."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest

from tests.fixtures.clock import ManualClock
from voicebridge import container
from voicebridge.call.speaking import SpeakingMarks
from voicebridge.connect.events import ContactFlowEvent
from voicebridge.errors import StorageError, Superseded
from voicebridge.handlers.converse import _nothing_yet
from voicebridge.polls.next_segment import Next, Thinking, next_to_play
from voicebridge.polls.next_turn import caller_speaking_ms
from voicebridge.store.replies import ReplyStatus, Segment
from voicebridge.store.turns import LISTENING, STOPPED, Checkpoint, Turn

CONTACT = "c-1"


class Marks:
    """The checkpoint's SpeakingSince as the table keeps it; ``refuse`` makes the next writes fail."""

    def __init__(self, generation: int = 0) -> None:
        self.generation = generation
        self.written: list[int] = []
        self.refuse = 0
        self.changed = threading.Condition()

    def mark_speaking(self, contact_id: str, generation: int, since_ms: int) -> None:
        if generation != self.generation:
            raise Superseded("owned by a newer consumer")
        if self.refuse:
            self.refuse -= 1
            raise StorageError("turn table throttled")
        with self.changed:
            self.written.append(since_ms)
            self.changed.notify_all()

    def until(self, last: int, timeout_s: float = 5.0) -> list[int]:
        with self.changed:
            self.changed.wait_for(lambda: bool(self.written) and self.written[-1] == last, timeout_s)
            return list(self.written)


def marks(store: Marks) -> tuple[SpeakingMarks, ManualClock]:
    clock = ManualClock(epoch=1_764_000_000.0)
    return SpeakingMarks(store, CONTACT, 0, clock=clock), clock  # type: ignore[arg-type]


def test_a_turn_that_begins_is_marked_with_its_start_and_cleared_once_it_is_stored() -> None:
    store = Marks()
    speaking, clock = marks(store)
    speaking.update(0, True)
    began = int(clock.time() * 1000)
    assert store.until(began)[-1] == began
    clock.advance(12.0)
    speaking.update(0, True)  # Ink says the same turn began again (a replayed session): its start stays
    speaking.update(0, False)
    assert store.until(0) == [began, 0]
    speaking.close(timeout_s=1.0)


def test_the_end_of_an_earlier_turn_leaves_a_later_one_open() -> None:
    store = Marks()
    speaking, clock = marks(store)
    speaking.update(3, True)
    clock.advance(1.0)
    speaking.update(4, True)
    later = int(clock.time() * 1000)
    speaking.update(3, False)  # turn 3 was stored after the caller began turn 4
    assert speaking.since_ms == later
    assert store.until(later)[-1] == later
    speaking.close(timeout_s=1.0)


class StatusMarks:
    """The reply status's mark: when the open turn began, and which turn it is."""

    def __init__(self) -> None:
        self.written: list[tuple[int, int]] = []
        self.paused: list[int] = []

    def mark_speaking(self, contact_id: str, since_ms: int, turn: int = -1, paused_ms: int = 0) -> None:
        self.written.append((since_ms, turn))
        self.paused.append(paused_ms)


def with_status() -> tuple[SpeakingMarks, Marks, StatusMarks, ManualClock]:
    """Marks written to the checkpoint and to the reply status, as when the flow converses."""
    store, status = Marks(), StatusMarks()
    clock = ManualClock(epoch=1_764_000_000.0)
    return SpeakingMarks(store, CONTACT, 0, replies=status, clock=clock), store, status, clock  # type: ignore[arg-type]


def test_the_reply_status_is_told_which_turn_the_caller_is_speaking() -> None:
    speaking, store, status, clock = with_status()
    speaking.update(3, True)
    began = int(clock.time() * 1000)
    store.until(began)
    clock.advance(0.5)
    speaking.update(4, True)  # the caller went on after turn 3 was ended, before it was stored
    went_on = int(clock.time() * 1000)
    store.until(went_on)
    speaking.update(3, False)
    speaking.update(4, False)
    store.until(0)
    speaking.close(timeout_s=1.0)
    assert status.written == [(began, 3), (went_on, 4), (0, -1)]


def test_a_pause_is_written_to_the_reply_status_alone_and_goes_with_the_turn() -> None:
    speaking, store, status, clock = with_status()
    speaking.update(2, True)
    began = int(clock.time() * 1000)
    store.until(began)
    clock.advance(0.7)
    speaking.pause(2, True)
    paused = int(clock.time() * 1000)
    speaking.update(2, True)  # Ink's turn.start for the same voice, late: the pause stands
    speaking.pause(1, True)  # not the open turn: nothing
    deadline = time.monotonic() + 5
    while len(status.paused) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    speaking.update(2, False)
    store.until(0)
    speaking.close(timeout_s=1.0)
    written = list(zip(status.written, status.paused, strict=True))
    assert written == [((began, 2), 0), ((began, 2), paused), ((0, -1), 0)]
    # The checkpoint, which says Listening, was written for the turn's start and end only.
    assert store.written == [began, 0]


def test_a_refused_write_is_tried_again_with_the_newest_state() -> None:
    store = Marks()
    store.refuse = 2
    speaking, clock = marks(store)
    speaking.update(0, True)
    began = int(clock.time() * 1000)
    assert store.until(began) == [began]
    speaking.update(0, False)
    assert store.until(0) == [began, 0]
    speaking.close(timeout_s=1.0)


def test_marks_of_a_consumer_that_lost_the_contact_stop_quietly() -> None:
    store = Marks(generation=1)
    speaking, _ = marks(store)
    speaking.update(0, True)
    speaking.close(timeout_s=1.0)
    assert store.written == []


def test_turns_heard_after_the_contact_passed_to_a_newer_consumer_are_not_written_and_raise_nothing() -> None:
    store = Marks(generation=1)
    speaking, _ = marks(store)
    speaking.update(0, True)
    speaking._thread.join(5.0)  # it stopped at the refusal
    speaking.update(1, True)
    speaking.update(1, False)
    speaking.close(timeout_s=1.0)
    assert store.written == []


def test_an_invocation_that_hears_no_turn_starts_no_thread() -> None:
    speaking, _ = marks(Marks())
    speaking.close(timeout_s=0)
    assert speaking.since_ms == 0


class Checkpoints:
    """The turn table's checkpoint, and the turns stored (``stored``)."""

    def __init__(self, checkpoint: Checkpoint | None, now_ms: int, stored: tuple[Turn, ...] = ()) -> None:
        self.checkpoint, self._now = checkpoint, now_ms
        self.stored = stored
        self.turn_reads = 0

    def load(self, contact_id: str) -> Checkpoint | None:
        return self.checkpoint

    def turns_after(
        self, contact_id: str, *, after: int, track: str = "AUDIO_FROM_CUSTOMER", limit: int = 10
    ) -> list[Turn]:
        self.turn_reads += 1
        return [turn for turn in self.stored if turn.seq > after][:limit]

    def now_ms(self) -> int:
        return self._now


def checkpoint(*, speaking_since_ms: int, state: str = LISTENING, heartbeat_at_ms: int = 99_000) -> Checkpoint:
    return Checkpoint(
        CONTACT, "arn", "1", state=state, heartbeat_at_ms=heartbeat_at_ms, speaking_since_ms=speaking_since_ms
    )


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (checkpoint(speaking_since_ms=70_000), 30_000),
        (checkpoint(speaking_since_ms=0), None),
        # A consumer that stopped, or stopped answering, is not listening to anyone.
        (checkpoint(speaking_since_ms=70_000, state=STOPPED), None),
        (checkpoint(speaking_since_ms=70_000, heartbeat_at_ms=1_000), None),
        (None, None),
    ],
)
def test_the_caller_is_speaking_while_a_turn_is_open_and_a_consumer_is_alive(
    state: Checkpoint | None, expected: int | None
) -> None:
    assert caller_speaking_ms(Checkpoints(state, now_ms=100_000), CONTACT) == expected  # type: ignore[arg-type]


class Status:
    """A reply status that never changes."""

    def __init__(self, status: ReplyStatus | None) -> None:
        self._status = status
        self.held: tuple[int, int] | None = None
        self.left: tuple[int, int] | None = None

    def status(self, contact_id: str) -> ReplyStatus | None:
        return self._status

    def hold_back(self, contact_id: str, turn: int, segment: int) -> None:
        self.held = (turn, segment)

    def release_hold(self, contact_id: str, turn: int, segment: int, *, went_on_for: int | None = None) -> None:
        if self.held == (turn, segment):
            self.held = None

    def note_left(self, contact_id: str, turn: int, segment: int) -> None:
        self.left = (turn, segment)

    def outcome(self, contact_id: str, turn: int) -> ReplyStatus | None:
        """How an earlier reply ended: not kept here, as before its end was stored."""
        return None


def poll(
    replies: Any, turns: Any, *, turn: int, segment: int, clock: ManualClock | None = None, making_poll_ms: int = 20
) -> Next:
    """ConverseFunction's poll after ``segment`` of ``turn``, a 500 ms wait on a clock the test moves."""
    return next_to_play(
        CONTACT,
        {"TurnIndex": str(turn), "Segment": str(segment), "MaxWaitMs": "500"},
        replies=replies,
        turns=turns,
        max_wait_ms=6000,
        fast_poll_ms=20,
        slow_poll_ms=100,
        making_poll_ms=making_poll_ms,
        remaining_ms=None,
        clock=clock or ManualClock(start=0.0, epoch=1_764_000_010.0, settle_s=5.0),
    )


def waited(status: ReplyStatus | None, turn: int, segment: int, stored: tuple[Turn, ...] = ()) -> Next:
    turns = Checkpoints(checkpoint(speaking_since_ms=0, heartbeat_at_ms=10**15), 0, stored)
    return poll(Status(status), turns, turn=turn, segment=segment)


NOW_MS = 1_764_000_010_500
"""The poll's epoch time when its 500 ms wait runs out."""


def test_a_reply_to_a_newer_turn_with_nothing_stored_yet_is_thinking_from_when_it_began() -> None:
    found = waited(ReplyStatus(3, 0, done=False, updated_at_ms=NOW_MS - 2_500), turn=2, segment=1)
    assert found.timed_out and found.thinking == Thinking(3, 2_500, started=True)


def test_a_reply_whose_next_segment_is_late_is_thinking_but_already_started() -> None:
    found = waited(ReplyStatus(3, 1, done=False, updated_at_ms=NOW_MS - 700), turn=3, segment=0)
    assert found.thinking == Thinking(3, 700, started=False)


def stored_turn(seq: int, ended_at_ms: int) -> Turn:
    return Turn(CONTACT, "AUDIO_FROM_CUSTOMER", seq, "words", 0, 1_000, ended_at_ms)


@pytest.mark.parametrize("status", [None, ReplyStatus(2, 3, done=True)], ids=["none", "older-done"])
def test_a_stored_turn_whose_reply_has_not_begun_is_thinking_from_when_the_turn_ended(
    status: ReplyStatus | None,
) -> None:
    # The responder has been asked and has not answered yet: the reply's status still names an older turn, or none.
    stored = (stored_turn(2, NOW_MS - 9_000), stored_turn(3, NOW_MS - 1_200))
    found = waited(status, turn=2, segment=2, stored=stored)
    assert found.timed_out and found.thinking == Thinking(3, 1_200, started=True)


def test_a_poll_whose_table_is_slow_answers_timeout_on_time_rather_than_look_for_a_stored_turn() -> None:
    clock = ManualClock(start=0.0, epoch=1_764_000_010.0, settle_s=5.0)

    class SlowStatus(Status):
        def status(self, contact_id: str) -> ReplyStatus | None:
            clock.advance(0.4)  # each look at the reply's status takes 400 ms
            return None

    turns = Checkpoints(checkpoint(speaking_since_ms=0, heartbeat_at_ms=10**15), 0, (stored_turn(3, NOW_MS),))
    found = poll(SlowStatus(None), turns, turn=2, segment=2, clock=clock)
    assert found.timed_out and found.thinking is None and turns.turn_reads == 0
    assert found.waited_ms <= 500 + 150


def test_a_stored_turn_already_answered_is_not_thinking() -> None:
    found = waited(ReplyStatus(3, 2, done=True), turn=3, segment=1, stored=(stored_turn(3, NOW_MS - 4_000),))
    assert found.timed_out and found.thinking is None


@pytest.mark.parametrize(
    "status", [None, ReplyStatus(3, 2, done=True), ReplyStatus(2, 0, done=False)], ids=["none", "done", "older"]
)
def test_no_reply_in_the_making_is_silence(status: ReplyStatus | None) -> None:
    found = waited(status, turn=3, segment=1)
    assert found.timed_out and found.thinking is None


@pytest.fixture
def prompt_bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("PROMPT_BUCKET", "voicebridge-prompts")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-2")
    container.reset()
    yield
    container.reset()


def answer(found: Next, speaking_ms: int | None, **parameters: str) -> dict[str, Any]:
    event = ContactFlowEvent.parse(
        {"Details": {"ContactData": {"ContactId": CONTACT}, "Parameters": parameters}, "Name": "ContactFlowEvent"}
    )
    return _nothing_yet(event, found, speaking_ms, hold_after_ms=4000)


PAUSE = "https://voicebridge-prompts.s3.eu-west-2.amazonaws.com/prompts/pause-200ms.wav"


@pytest.mark.usefixtures("prompt_bucket")
def test_a_caller_mid_turn_is_listened_to_even_while_a_reply_is_in_the_making() -> None:
    found = Next(thinking=Thinking(3, 9_000, started=True))
    assert answer(found, 31_000) == {"Result": "Listening", "SpeakingMs": "31000", "PromptUri": PAUSE}


@pytest.mark.usefixtures("prompt_bucket")
@pytest.mark.parametrize(
    ("thinking", "held", "hold"),
    [
        (Thinking(3, 3_999, started=True), "-1", "false"),
        (Thinking(3, 4_000, started=True), "-1", "true"),
        # Once per turn: the flow says which turn it last held.
        (Thinking(3, 9_000, started=True), "3", "false"),
        (Thinking(4, 9_000, started=True), "3", "true"),
        # Never in the middle of a reply the caller is already hearing.
        (Thinking(3, 9_000, started=False), "-1", "false"),
    ],
)
def test_a_slow_reply_asks_for_one_holding_line_per_turn(thinking: Thinking, held: str, hold: str) -> None:
    assert answer(Next(thinking=thinking), None, HeldTurn=held) == {
        "Result": "Thinking",
        "TurnIndex": str(thinking.turn),
        "ThinkingMs": str(thinking.ms),
        "Hold": hold,
        "PromptUri": PAUSE,
    }


@pytest.mark.usefixtures("prompt_bucket")
def test_nothing_in_the_making_and_nobody_speaking_is_a_timeout() -> None:
    assert answer(Next(), None) == {"Result": "Timeout"}


class Ready(Status):
    """Turn 3's reply with its second sentence stored, while the caller is speaking (as the status says) for the
    first ``speaking_for`` looks."""

    def __init__(self, speaking_for: int) -> None:
        super().__init__(ReplyStatus(3, 2, done=False, updated_at_ms=NOW_MS))
        self.looks, self._speaking_for = 0, speaking_for

    def status(self, contact_id: str) -> ReplyStatus | None:
        self.looks += 1
        speaking = NOW_MS - 2_000 if self.looks <= self._speaking_for else 0
        return ReplyStatus(3, 2, done=False, updated_at_ms=NOW_MS, speaking_since_ms=speaking, held_back=self.held)

    def segment(self, contact_id: str, turn: int, index: int, keys: str) -> Segment:
        return Segment(CONTACT, turn, index, "and your savings are fine.", "s3://b/k.wav", "balance?")


def played(replies: Ready, *, turn: int = 3, segment: int = 0) -> Next:
    return poll(replies, quiet(), turn=turn, segment=segment)


def test_the_next_sentence_of_a_reply_is_not_said_over_a_caller_who_began_speaking() -> None:
    replies = Ready(speaking_for=100)
    found = played(replies)
    assert found.segment is None and found.thinking == Thinking(3, 0, started=False)
    assert found.speaking_ms == 2_000
    # Marked for the consumer, which judges the caller's turn by it: the reply has more to say.
    assert replies.held == (3, 1)


def test_the_reply_goes_on_once_the_callers_sound_turns_out_not_to_be_a_turn() -> None:
    replies = Ready(speaking_for=3)
    found = played(replies)
    assert found.segment is not None and (found.segment.turn, found.segment.index) == (3, 1)
    assert replies.held is None


def test_a_newer_turns_first_sentence_is_never_held_back() -> None:
    replies = Ready(speaking_for=100)
    found = played(replies, turn=2, segment=4)
    assert found.segment is not None and (found.segment.turn, found.segment.index) == (3, 0)
    # How turn 2's reply ended is not known here: the caller's turn is marked as heard to its fifth sentence.
    assert replies.left == (2, 5)


def test_holding_a_sentence_back_reads_nothing_but_the_reply_status() -> None:
    # The status carries the caller's speaking mark: the hold-back costs no checkpoint read per look, only the one
    # that says, once per invocation, that a consumer is listening.
    turns = quiet()
    checkpoint_reads = 0
    loaded = turns.load

    def load(contact_id: str) -> Checkpoint | None:
        nonlocal checkpoint_reads
        checkpoint_reads += 1
        return loaded(contact_id)

    turns.load = load  # type: ignore[method-assign]
    replies = Ready(speaking_for=100)
    found = poll(replies, turns, turn=3, segment=0)
    assert found.segment is None and replies.looks > 1 and checkpoint_reads == 1


def test_a_held_back_sentence_is_looked_for_at_the_slow_pace() -> None:
    # Nothing is due while the caller speaks over the sentence that is ready: 500 ms at 100 ms a look, not 20.
    replies = Ready(speaking_for=100)
    poll(replies, quiet(), turn=3, segment=0)
    assert replies.looks <= 6


class Counted(Status):
    """A reply status that never changes, its looks counted."""

    def __init__(self, status: ReplyStatus) -> None:
        super().__init__(status)
        self.looks = 0

    def status(self, contact_id: str) -> ReplyStatus | None:
        self.looks += 1
        return super().status(contact_id)


def looks_waiting_for(status: ReplyStatus) -> int:
    """How many looks a 500 ms wait for segment 0 of turn 4 makes after the flow played turn 3's reply (20 ms fast,
    50 ms at the making pace)."""
    replies = Counted(status)
    poll(replies, quiet(), turn=3, segment=1, making_poll_ms=50)
    return replies.looks


@pytest.mark.parametrize(
    "status",
    [ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS), ReplyStatus(3, 2, done=True, expecting=4)],
    ids=["a reply begun", "an eager end heard"],
)
def test_a_first_sentence_still_with_the_responder_is_looked_for_at_the_making_pace(status: ReplyStatus) -> None:
    assert looks_waiting_for(status) <= 12


@pytest.mark.parametrize(
    "status",
    [
        ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS, synthesizing=4),
        ReplyStatus(3, 2, done=True, expecting=4, synthesizing=4),
    ],
    ids=["a reply begun", "an eager end heard"],
)
def test_a_first_sentence_sonic_is_making_is_looked_for_fast(status: ReplyStatus) -> None:
    assert looks_waiting_for(status) >= 20


def test_sonic_making_an_older_turns_sentence_does_not_hurry_the_wait_for_a_newer_one() -> None:
    assert looks_waiting_for(ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS, synthesizing=3)) <= 12


STARTED_MS = NOW_MS - 500
"""When :func:`looks_waiting_for`'s wait begins (epoch ms)."""


@pytest.mark.parametrize(
    "status",
    [
        ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS, synthesizing=4, due_at_ms=STARTED_MS + 400),
        ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS, due_at_ms=STARTED_MS + 400),
        ReplyStatus(3, 2, done=True, expecting=4, synthesizing=4, due_at_ms=STARTED_MS + 400),
    ],
    ids=["Sonic making it", "a reply begun", "an eager end heard"],
)
def test_a_first_sentence_is_not_looked_for_before_it_is_due(status: ReplyStatus) -> None:
    # One look, none for the 400 ms it cannot be stored in, then the 100 ms left at its pace (20 or 50 ms).
    assert looks_waiting_for(status) <= 8


def test_a_first_sentence_whose_due_time_has_passed_is_looked_for_fast() -> None:
    status = ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS, synthesizing=4, due_at_ms=STARTED_MS - 100)
    assert looks_waiting_for(status) >= 20


def test_a_due_time_further_ahead_than_a_clock_can_be_trusted_is_not_waited_for() -> None:
    status = ReplyStatus(4, 0, done=False, updated_at_ms=NOW_MS, synthesizing=4, due_at_ms=STARTED_MS + 60_000)
    assert looks_waiting_for(status) >= 20


def test_the_segment_stored_before_the_last_is_handed_out_from_the_status_too() -> None:
    second, third = (
        Segment(CONTACT, 3, index, f"Sentence {index}.", f"s3://b/{index}.wav", "balance?") for index in (1, 2)
    )
    # The status alone (no segment item to read): Sonic stored the third sentence while the first was playing.
    found = waited(ReplyStatus(3, 3, done=False, updated_at_ms=NOW_MS, latest=third, earlier=second), turn=3, segment=0)
    assert found.segment == second and found.more


def looks_idle(status: ReplyStatus) -> int:
    """How many looks a 500 ms wait makes after the flow played the whole of turn 3's reply (100 ms the slow pace)."""
    replies = Counted(status)
    poll(replies, quiet(), turn=3, segment=1)
    return replies.looks


def test_while_nothing_is_being_made_the_poll_looks_as_often_as_the_calls_least_lead() -> None:
    assert looks_idle(ReplyStatus(3, 2, done=True, updated_at_ms=NOW_MS, lead_ms=250)) <= 3


def test_a_lead_shorter_than_the_slow_pace_does_not_hurry_an_idle_poll() -> None:
    assert looks_idle(ReplyStatus(3, 2, done=True, updated_at_ms=NOW_MS, lead_ms=20)) <= 6


class HeldBack(Counted):
    """Turn 3's reply, whole in three segments, while the caller speaks: its later sentences are held back."""

    def segment(self, contact_id: str, turn: int, index: int, keys: str) -> Segment:
        return Segment(CONTACT, turn, index, "and your savings are fine.", "s3://b/k.wav", "balance?")


def test_the_last_sentences_held_back_over_a_speaking_caller_are_looked_for_at_the_slow_pace_whatever_the_lead() -> (
    None
):
    replies = HeldBack(ReplyStatus(3, 3, done=True, updated_at_ms=NOW_MS, lead_ms=400, speaking_since_ms=NOW_MS))
    found = poll(replies, quiet(), turn=3, segment=0)
    assert found.segment is None and replies.looks >= 5


def test_a_later_sentence_of_the_reply_being_played_is_looked_for_fast_whatever_a_due_time_says() -> None:
    replies = Counted(ReplyStatus(4, 1, done=False, updated_at_ms=NOW_MS, due_at_ms=STARTED_MS + 400))
    poll(replies, quiet(), turn=4, segment=0)
    assert replies.looks >= 20


# -- a reply that asks for something of the caller's (the card on the keypad)

KEYPAD = {"Collect": "card"}


class Asked(Status):
    """Turn 3's reply asked for the card on the keypad, in two segments, and is over; ``newer`` a turn since."""

    def __init__(self, *, newer: bool = False) -> None:
        done = ReplyStatus(3, 2, done=True, attributes=KEYPAD, updated_at_ms=NOW_MS)
        super().__init__(ReplyStatus(4, 1, done=False, updated_at_ms=NOW_MS) if newer else done)
        self._ended = done

    def outcome(self, contact_id: str, turn: int) -> ReplyStatus | None:
        return self._ended if turn == 3 else None

    def segment(self, contact_id: str, turn: int, index: int, keys: str) -> Segment:
        return Segment(CONTACT, turn, index, "Sorry?", "s3://b/k.wav", "beep boop")


def quiet() -> Checkpoints:
    return Checkpoints(checkpoint(speaking_since_ms=0, heartbeat_at_ms=10**15), now_ms=10)


def test_a_reply_that_asks_for_the_keypad_is_over_with_its_request() -> None:
    found = poll(Asked(), quiet(), turn=3, segment=1)

    assert (found.segment, found.timed_out, dict(found.attributes)) == (None, False, KEYPAD)


def test_a_request_the_flow_has_taken_is_not_made_again() -> None:
    found = next_to_play(
        CONTACT,
        {"TurnIndex": "3", "Segment": "1", "CollectedTurn": "3", "MaxWaitMs": "100"},
        replies=cast(Any, Asked()),
        turns=cast(Any, quiet()),
        max_wait_ms=6000,
        fast_poll_ms=20,
        slow_poll_ms=100,
        remaining_ms=None,
        clock=ManualClock(start=0.0, epoch=1_764_000_010.0, settle_s=5.0),
    )

    assert found.timed_out


def test_a_request_comes_before_a_newer_turns_reply_once_the_flow_played_the_whole_of_it() -> None:
    found = poll(Asked(newer=True), quiet(), turn=3, segment=1)

    assert found.segment is None and dict(found.attributes) == KEYPAD


def test_a_newer_turns_reply_takes_the_place_of_a_request_the_flow_did_not_hear_to_its_end() -> None:
    replies = Asked(newer=True)
    found = poll(replies, quiet(), turn=3, segment=0)

    assert found.segment is not None and (found.segment.turn, found.segment.index) == (4, 0)
    # The caller heard the first of its two sentences.
    assert replies.left == (3, 1)


class HalfMade:
    """The turn table answering the reply status's key alone: what a read sees of an item an UpdateItem is creating
    in moto, which puts the keys in the table before it sets the rest."""

    table = "turns"

    def call(self, operation: str, **kwargs: Any) -> Any:
        return {"Item": {"ContactId": {"S": CONTACT}, "TurnKey": {"S": "reply"}}}


def test_a_reply_status_read_half_made_is_no_status_yet() -> None:
    from voicebridge.store.replies import ReplyStore

    assert ReplyStore(HalfMade()).status(CONTACT) is None  # type: ignore[arg-type]


class Answered(Status):
    """Turn 3's reply over in two sentences; turn 4's begun (``held_back``: the mark a hold left on the status)."""

    def __init__(self, held_back: tuple[int, int] | None = None) -> None:
        super().__init__(ReplyStatus(4, 1, done=False, updated_at_ms=NOW_MS, held_back=held_back))

    def outcome(self, contact_id: str, turn: int) -> ReplyStatus | None:
        return ReplyStatus(3, 2, done=True, updated_at_ms=NOW_MS) if turn == 3 else None

    def segment(self, contact_id: str, turn: int, index: int, keys: str) -> Segment:
        return Segment(CONTACT, turn, index, "Sure.", "s3://b/k.wav", "thanks")


@pytest.mark.parametrize(("segment", "left"), [(1, None), (0, (3, 1))])
def test_the_flow_leaving_a_reply_for_a_newer_turns_marks_only_what_it_did_not_play(
    segment: int, left: tuple[int, int] | None
) -> None:
    replies = Answered()
    found = poll(replies, quiet(), turn=3, segment=segment)
    assert found.segment is not None and (found.segment.turn, found.segment.index) == (4, 0)
    assert replies.left == left


def test_a_reply_whose_sentence_a_hold_marked_is_not_marked_again_as_the_flow_leaves_it() -> None:
    # The caller spoke over turn 3's reply after its first sentence: the poll held the second back (marked then), and
    # now turn 4's reply takes its place. The mark says it already: no second write.
    replies = Answered(held_back=(3, 1))
    found = poll(replies, quiet(), turn=3, segment=0)
    assert found.segment is not None and (found.segment.turn, found.segment.index) == (4, 0)
    assert replies.left is None
