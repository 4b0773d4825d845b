"""The caller is marked speaking from the product's own voice detection, not only from Ink's ``turn.start``: a caller
who starts in the gap between two sentences has the next one held back, before Ink has said anything."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from tests.fixtures.clock import ManualClock
from tests.fixtures.tracks import SilentInk
from voicebridge.call.speaking import SpeakingMarks
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber
from voicebridge.polls.next_segment import next_to_play
from voicebridge.store.replies import ReplyStatus, Segment
from voicebridge.store.turns import LISTENING, Checkpoint, TrackProgress

CONTACT = "c-voice"


def voice(ms: int) -> bytes:
    t = np.arange(ms * 8) / 8000
    return (8000 * np.sin(2 * np.pi * 300 * t)).astype("<i2").tobytes()


def quiet(ms: int) -> bytes:
    return np.full(ms * 8, 1, dtype="<i2").tobytes()


class Heard:
    """A transcriber of the caller's track and the marks it makes, fed audio at its live pace."""

    def __init__(self, on_speaking: Any = None) -> None:
        self.marks: list[tuple[int, bool]] = []
        self.clock = ManualClock()
        self.offset = 0
        self.transcriber = TrackTranscriber(
            contact_id=CONTACT,
            track="customer",
            progress=TrackProgress(next_seq=4),
            store=None,  # type: ignore[arg-type]  # no turn is stored here
            open_session=SilentInk,  # type: ignore[arg-type]
            sink=MetricSink(threading.Lock()),
            clock=self.clock,
            on_speaking=on_speaking or (lambda seq, speaking: self.marks.append((seq, speaking))),
        )

    def feed(self, pcm: bytes, block: int = 1600) -> None:
        for start in range(0, len(pcm), block):
            piece = pcm[start : start + block]
            self.clock.advance(len(piece) / 16000)
            self.transcriber.audio("100", self.offset, piece, None)
            self.offset += len(piece)


def test_the_caller_is_marked_speaking_as_soon_as_the_voice_detector_hears_them() -> None:
    heard = Heard()
    heard.feed(quiet(500))
    assert heard.marks == []
    heard.feed(voice(200))
    # Turn 4 is the one the caller is beginning; Ink has not started it.
    assert heard.marks == [(4, True)]


def test_a_sound_ink_takes_for_no_turn_clears_the_mark_once_its_silence_settles() -> None:
    heard = Heard()
    heard.feed(voice(200) + quiet(1000))
    assert heard.marks == [(4, True), (4, False)]


def test_a_voice_that_ends_before_ink_begins_its_turn_stays_marked_until_ink_does() -> None:
    heard = Heard()
    # A short word, or a backlog read faster than Ink is sent it: the detector hears the voice end before Ink has
    # begun a turn of it. The caller is mid-turn until Ink's turn ends: a wait running out now is Listening.
    heard.feed(voice(200) + quiet(500))
    assert heard.marks == [(4, True)]
    heard.transcriber.on_turn_start()
    heard.feed(quiet(1000))
    assert heard.marks == [(4, True), (4, True)]


def test_once_ink_has_begun_the_turn_the_mark_is_its_to_clear() -> None:
    heard = Heard()
    heard.feed(voice(200))
    heard.transcriber.on_turn_start()
    heard.feed(quiet(600))
    # A pause inside the caller's turn is no end of it: the turn's end (once stored) clears the mark.
    assert heard.marks == [(4, True), (4, True)]


class Table:
    """The checkpoint and the reply status, as the consumer marks them and ConverseFunction reads them: turn 3's
    reply has two sentences stored, the flow has played the first."""

    def __init__(self) -> None:
        self.speaking_since_ms = 0
        self.speaking_turn: int | None = None
        self.paused_ms = 0
        self.held: tuple[int, int] | None = None
        self.released: list[tuple[int, int, int | None]] = []
        self.marked = threading.Event()

    # the consumer's side (the reply status's mark; the checkpoint's is :class:`Checkpoints`')
    def mark_speaking(self, contact_id: str, since_ms: int, turn: int = -1, paused_ms: int = 0) -> None:
        self.speaking_since_ms, self.speaking_turn = since_ms, (turn if turn >= 0 else None)
        self.paused_ms = paused_ms
        self.marked.set()

    # the flow's side
    def status(self, contact_id: str) -> ReplyStatus:
        return ReplyStatus(
            3,
            2,
            done=False,
            speaking_since_ms=self.speaking_since_ms,
            speaking_turn=self.speaking_turn,
            speaking_paused_ms=self.paused_ms,
            held_back=self.held,
        )

    def hold_back(self, contact_id: str, turn: int, segment: int) -> None:
        self.held = (turn, segment)

    def release_hold(self, contact_id: str, turn: int, segment: int, *, went_on_for: int | None = None) -> None:
        self.held = None
        self.released.append((turn, segment, went_on_for))

    def segment(self, contact_id: str, turn: int, index: int, keys: str) -> Segment:
        return Segment(CONTACT, turn, index, "and your savings are fine.", "s3://b/k.wav", "balance?")

    def load(self, contact_id: str) -> Checkpoint:
        return Checkpoint(CONTACT, "arn", "1", state=LISTENING, heartbeat_at_ms=10**15)

    def now_ms(self) -> int:
        return 0


class Checkpoints:
    """The contact's checkpoint, where the consumer marks the caller speaking too (not read here)."""

    def mark_speaking(self, contact_id: str, generation: int, since_ms: int) -> None:
        pass


def next_sentence(
    table: Table,
    *,
    wait_ms: int = 300,
    clock: ManualClock | None = None,
    fast_poll_ms: int = 20,
    slow_poll_ms: int = 100,
    making_poll_ms: int | None = None,
    backchannel_ms: int = 0,
) -> Any:
    """ConverseFunction's answer after the flow played turn 3's first sentence."""
    return next_to_play(
        CONTACT,
        {"TurnIndex": "3", "Segment": "0", "MaxWaitMs": str(wait_ms)},
        replies=table,  # type: ignore[arg-type]
        turns=table,  # type: ignore[arg-type]
        max_wait_ms=6000,
        fast_poll_ms=fast_poll_ms,
        slow_poll_ms=slow_poll_ms,
        making_poll_ms=making_poll_ms,
        backchannel_ms=backchannel_ms,
        remaining_ms=None,
        clock=clock or ManualClock(start=0.0, settle_s=5.0),
    )


def test_a_caller_who_starts_between_two_sentences_has_the_next_held_back_before_ink_says_a_word() -> None:
    table = Table()
    marks = SpeakingMarks(Checkpoints(), CONTACT, 0, replies=table)  # type: ignore[arg-type]
    heard = Heard(on_speaking=marks.update)
    assert next_sentence(table).segment is not None  # nobody speaks: the second sentence is handed out

    heard.feed(quiet(300) + voice(200))  # the caller starts in the gap; Ink's turn.start is still to come
    assert table.marked.wait(5.0)
    found = next_sentence(table)
    marks.close(timeout_s=1.0)

    assert found.segment is None and found.speaking_ms is not None


def test_a_short_voice_over_the_agent_that_paused_lets_the_held_sentence_go_and_says_it_went_on_over_it() -> None:
    table = Table()
    marks = SpeakingMarks(Checkpoints(), CONTACT, 0, replies=table)  # type: ignore[arg-type]
    marks.update(4, True)  # "uh-huh" over the first sentence
    assert table.marked.wait(5.0)
    assert next_sentence(table).segment is None and table.held == (3, 1)

    table.marked.clear()
    marks.pause(4, True)  # its voice stopped; Ink has yet to end the turn
    assert table.marked.wait(5.0) and table.paused_ms > 0
    found = next_sentence(table)

    assert found.segment is not None and (found.segment.turn, found.segment.index) == (3, 1)
    assert table.released == [(3, 1, 4)]

    # The caller spoke again: the pause is taken back, and a sentence after it is held again.
    table.marked.clear()
    marks.pause(4, False)
    assert table.marked.wait(5.0) and table.paused_ms == 0
    assert next_sentence(table).segment is None
    # A pause told for a turn that is no longer the open one changes nothing.
    marks.update(4, False)
    marks.pause(4, True)
    marks.close(timeout_s=1.0)
    assert (table.speaking_turn, table.paused_ms) == (None, 0)


class Looked(Table):
    """The table, counting the poll's looks at the status."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0

    def status(self, contact_id: str) -> ReplyStatus:
        self.looks += 1
        return super().status(contact_id)


def test_a_hold_over_a_caller_who_may_be_saying_a_backchannel_is_looked_at_often_then_slowly() -> None:
    def looks(speaking_for_ms: int) -> int:
        table = Looked()
        clock = ManualClock(start=0.0, settle_s=5.0)
        table.speaking_since_ms, table.speaking_turn = int(clock.time() * 1000) - speaking_for_ms, 4
        found = next_sentence(
            table, wait_ms=1000, clock=clock, fast_poll_ms=10, slow_poll_ms=250, making_poll_ms=40, backchannel_ms=600
        )
        assert found.segment is None and table.held == (3, 1)
        return table.looks

    # Began 200 ms ago: a pause may be marked any moment, so the poll looks every 40 ms for the next 1,400 ms.
    assert looks(200) >= 20
    # Began 3 s ago: no backchannel, the slow pace (a look every 250 ms).
    assert looks(3000) <= 5
