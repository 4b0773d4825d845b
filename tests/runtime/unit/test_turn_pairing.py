"""Each of Ink's turns is paired with its own audio: pauses inside a turn, sounds Ink makes no turn of, and a dropped
socket after them leave every turn's span, latency and sequence number its own, and every turn stored once."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from tests.fixtures.clock import ManualClock
from tests.fixtures.tracks import MemoryStore, quiet, voice
from voicebridge.errors import InkUnavailable
from voicebridge.ink.pacer import Pacer
from voicebridge.ink.session import TurnListener
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber
from voicebridge.store.turns import TrackProgress, Turn

BYTES_PER_MS = 16
START_DELAY_MS = 160
END_DELAY_MS = 700
"""How far past a turn's first and last voiced frame the scripted Ink must have heard before it says so."""


@dataclass(frozen=True)
class ScriptedTurn:
    """A turn of the call as the simulator knows it: its first and last voiced frame, in ms into the stream."""

    start_ms: int
    end_ms: int
    text: str
    updates: tuple[tuple[int, str], ...] = ()
    """Ink's ``turn.update`` words, each once it has heard this far past the turn's start (ms)."""


class ScriptedInk:
    """Stands in for Ink's turns socket: it knows where the call's turns are and reports each once it has heard far
    enough past its start and end. Its events are delivered by :meth:`deliver`, as a receiver thread would, outside
    the sender's lock. Voice outside the script (a cough) is never a turn, as Ink does with it."""

    script: ClassVar[list[ScriptedTurn]] = []
    opened: ClassVar[list[ScriptedInk]] = []
    refusal = None

    def __init__(self, listener: TurnListener, name: str) -> None:
        self.listener = listener
        self.alive = True
        self.sent_bytes = 0
        self._events: list[Callable[[], None]] = []
        self._started: set[int] = set()
        self._ended: set[int] = set()
        self._updated: set[tuple[int, int]] = set()

    def open(self) -> None:
        ScriptedInk.opened.append(self)
        self.started_at = getattr(self.listener, "settled", TrackProgress()).stream_bytes

    @property
    def heard_ms(self) -> float:
        return (self.started_at + self.sent_bytes) / BYTES_PER_MS

    def send_audio(self, pcm: bytes) -> None:
        if not self.alive:
            raise InkUnavailable("gone")
        self.sent_bytes += len(pcm)
        heard, began = self.heard_ms, self.started_at / BYTES_PER_MS
        for index, turn in enumerate(self.script):
            if turn.end_ms <= began:
                continue
            if index not in self._started and heard >= turn.start_ms + START_DELAY_MS:
                self._started.add(index)
                self._events.append(self.listener.on_turn_start)
            for at_ms, words in turn.updates:
                if index in self._started and (index, at_ms) not in self._updated and heard >= turn.start_ms + at_ms:
                    self._updated.add((index, at_ms))
                    self._events.append(functools.partial(self.listener.on_turn_update, words))
            if index in self._started and index not in self._ended and heard >= turn.end_ms + END_DELAY_MS:
                self._ended.add(index)
                self._events.append(functools.partial(self.listener.on_turn_end, turn.text))

    def deliver(self) -> None:
        events, self._events = self._events, []
        for event in events:
            event()

    def finalize(self) -> None:
        pass

    def close(self, *, timeout_s: float = 0) -> None:
        self.alive = False


class Call:
    """A caller's audio built piece by piece, with the truth of where each scripted turn's voice lies."""

    def __init__(self) -> None:
        self.audio = bytearray()
        self.turns: list[ScriptedTurn] = []

    @property
    def at_ms(self) -> int:
        return len(self.audio) // BYTES_PER_MS

    def silence(self, ms: int) -> Call:
        self.audio += quiet(ms)
        return self

    def noise(self, ms: int) -> Call:
        """A cough or an "mm": voiced audio that is no turn."""
        self.audio += voice(ms)
        return self

    def turn(self, text: str, *parts: int, updates: tuple[tuple[int, str], ...] = ()) -> Call:
        """A turn of voiced parts (ms) with pauses (ms) between them: ``turn("yes please", 600, 400, 700)``; Ink's
        words along the way with ``updates``, each (ms after the turn's start Ink must have heard, words)."""
        start = self.at_ms
        for index, ms in enumerate(parts):
            self.audio += voice(ms) if index % 2 == 0 else quiet(ms)
        self.turns.append(ScriptedTurn(start, self.at_ms, text, updates))
        return self


@dataclass
class Run:
    transcriber: TrackTranscriber
    store: MemoryStore
    clock: ManualClock
    epoch_ms: float
    """Connect's clock at the stream's first byte."""
    offset: int = 0

    def feed(self, audio: bytes, *, block: int = 1024, drop_at_ms: float | None = None) -> None:
        """The call's audio as a live stream delivers it, each block when it has been produced; Ink's socket is
        dropped once the stream reaches ``drop_at_ms``."""
        end = self.offset + len(audio)
        while self.offset < end:
            piece = bytes(audio[self.offset - end + len(audio) :][:block])
            self.clock.advance(len(piece) / 16000)
            produced_end_ms = self.epoch_ms + (self.offset + len(piece)) / BYTES_PER_MS
            self.transcriber.audio("100", self.offset, piece, produced_end_ms)
            self.offset += len(piece)
            self.pump()
            if drop_at_ms is not None and self.offset / BYTES_PER_MS >= drop_at_ms and ScriptedInk.opened[-1].alive:
                ScriptedInk.opened[-1].alive = False
                drop_at_ms = None

    def pump(self) -> None:
        for session in list(ScriptedInk.opened):
            session.deliver()

    def idle(self, seconds: float) -> None:
        """The source has stalled: keep-alive silence and the pace's backlog go out."""
        for _ in range(int(seconds * 10)):
            self.clock.advance(0.1)
            self.transcriber.keepalive(idle_ms=200)
            self.transcriber.audio("100", self.offset, b"", None)
            self.pump()

    def stored(self) -> list[Turn]:
        assert self.transcriber.drain_writes(5.0)
        return sorted(self.store.turns.values(), key=lambda turn: turn.seq)


def run(call: Call, **options: Any) -> Run:
    ScriptedInk.script = call.turns
    ScriptedInk.opened = []
    clock = ManualClock()
    store = MemoryStore()
    transcriber = TrackTranscriber(
        contact_id="c1",
        track="customer",
        progress=TrackProgress(),
        store=store,  # type: ignore[arg-type]
        open_session=ScriptedInk,  # type: ignore[arg-type]
        sink=MetricSink(threading.Lock()),
        ack_ms=400,
        clock=clock,
        pacer=Pacer(catch_up_after_ms=float("inf")),
        **options,
    )
    return Run(transcriber, store, clock, epoch_ms=clock.time() * 1000)


def assert_true_to(call: Call, stored: list[Turn], epoch_ms: float) -> None:
    """Every scripted turn stored once, in order, with its own span and latency (within 100 ms of the truth)."""
    assert [turn.transcript for turn in stored] == [turn.text for turn in call.turns]
    assert [turn.seq for turn in stored] == list(range(len(call.turns)))
    for truth, turn in zip(call.turns, stored, strict=True):
        assert abs(turn.audio_start_ms - truth.start_ms) <= 100, (turn.transcript, turn.audio_start_ms, truth)
        assert abs(turn.audio_end_ms - truth.end_ms) <= 100, (turn.transcript, turn.audio_end_ms, truth)
        assert turn.latency_ms is not None
        true_latency = turn.ended_at_ms - (epoch_ms + truth.end_ms)
        assert abs(turn.latency_ms - true_latency) <= 100, (turn.transcript, turn.latency_ms, true_latency)


def test_pauses_inside_a_turn_leave_nothing_over_for_the_next_turn() -> None:
    call = (
        Call()
        .silence(500)
        .turn("yes, please go ahead", 800, 300, 600)
        .silence(1500)
        .turn("my card, the visa one", 700, 500, 500)
        .silence(1500)
        .turn("it ends in, uh, four two", 600, 900, 400, 600, 300)
        .silence(1500)
        .turn("thanks", 500)
        .silence(1500)
    )
    r = run(call)
    r.feed(bytes(call.audio))
    r.idle(1.0)
    assert_true_to(call, r.stored(), r.epoch_ms)


def test_a_sound_ink_makes_no_turn_of_belongs_to_no_turn() -> None:
    call = (
        Call()
        .silence(600)
        .turn("i want to check my balance", 1200)
        .silence(1200)
        .noise(160)
        .silence(2000)
        .turn("the checking account", 900, 400, 500)
        .silence(800)
        .noise(100)
        .silence(1500)
        .turn("yes", 300)
        .silence(1500)
    )
    r = run(call)
    r.feed(bytes(call.audio))
    r.idle(1.0)
    assert_true_to(call, r.stored(), r.epoch_ms)


def test_silence_after_a_cough_settles() -> None:
    call = Call().silence(400).turn("hello", 700).silence(1200).noise(160).silence(1500)
    r = run(call)
    r.feed(bytes(call.audio))
    r.idle(0.6)
    assert r.transcriber.quiet
    assert r.transcriber.settled.stream_bytes == len(call.audio)


def test_a_dropped_socket_after_paused_turns_and_coughs_stores_every_turn_once() -> None:
    call = (
        Call()
        .silence(500)
        .turn("yes, please go ahead", 800, 400, 600)
        .silence(1200)
        .noise(140)
        .silence(1500)
        .turn("my card, the visa one", 700, 600, 500)
        .silence(1500)
    )
    tail = Call()
    tail.audio, tail.turns = bytearray(call.audio), list(call.turns)
    tail.turn("and the other one", 900, 350, 400).silence(1500)
    r = run(tail)
    # Ink's socket drops in the silence after the second turn; the rest of the call goes to a new session.
    r.feed(bytes(tail.audio), drop_at_ms=call.at_ms - 300)
    r.idle(2.0)
    assert len(ScriptedInk.opened) == 2
    replay_start_ms = ScriptedInk.opened[1].started_at / BYTES_PER_MS
    assert replay_start_ms >= call.turns[-1].end_ms
    assert_true_to(tail, r.stored(), r.epoch_ms)


def test_a_short_turn_over_the_agent_that_asks_for_something_is_answered_not_kept_as_a_backchannel() -> None:
    call = Call().silence(500).turn("stop", 400).silence(1500).turn("uh huh", 400).silence(1500)
    answered: list[Turn] = []

    r = run(call, talked_over=lambda start_ms, end_ms: True, on_turn=answered.append, language="en-US")
    r.feed(bytes(call.audio))
    r.idle(1.0)

    assert [(turn.transcript, turn.backchannel) for turn in r.stored()] == [("stop", False), ("uh huh", True)]
    assert [turn.transcript for turn in answered] == ["stop"]


def test_a_turn_the_transport_calls_a_backchannel_is_stored_as_one_and_never_passed_on_to_be_answered() -> None:
    call = Call().silence(500).turn("uh huh", 400).silence(1500).turn("what is my balance", 900).silence(1500)
    asked: list[tuple[float, float]] = []
    ended: list[Turn] = []
    answered: list[Turn] = []

    def talked_over(start_ms: float, end_ms: float) -> bool:
        asked.append((start_ms, end_ms))
        return len(asked) == 1

    r = run(call, talked_over=talked_over, on_turn_ended=ended.append, on_turn=answered.append)
    r.feed(bytes(call.audio))
    r.idle(1.0)
    stored = r.stored()
    assert [(turn.transcript, turn.backchannel) for turn in stored] == [
        ("uh huh", True),
        ("what is my balance", False),
    ]
    assert [turn.seq for turn in ended] == [0, 1] and ended[0].backchannel
    assert [turn.transcript for turn in answered] == ["what is my balance"]
    # Asked with the voice's first and last frame on Connect's clock, as the stream's producer times say; not asked of
    # the question, whose words make it a turn whatever its timing.
    ((start_ms, end_ms),) = asked
    assert abs(start_ms - (r.epoch_ms + 500)) <= 100 and abs(end_ms - (r.epoch_ms + 900)) <= 100


def test_where_each_turns_voice_lay_on_connects_clock_is_kept_for_a_transport_that_tells_backchannels() -> None:
    call = Call().silence(500).turn("what is my balance", 900).silence(1500)
    r = run(call, talked_over=lambda start_ms, end_ms: False)
    r.feed(bytes(call.audio[: 1000 * BYTES_PER_MS]))
    # The turn being spoken: its start, no end yet; none for a later one.
    began = r.transcriber.voice_of(0)
    assert began is not None and abs(began[0] - (r.epoch_ms + 500)) <= 100 and began[1] is None
    assert r.transcriber.voice_of(1) is None
    # Its voice stopped, the turn not yet ended: where it stopped so far.
    r.feed(bytes(call.audio[1000 * BYTES_PER_MS : 1800 * BYTES_PER_MS]))
    paused = r.transcriber.voice_of(0)
    assert paused is not None and paused[1] is not None and abs(paused[1] - (r.epoch_ms + 1400)) <= 100
    assert not r.stored()
    r.feed(bytes(call.audio[1800 * BYTES_PER_MS :]))
    r.idle(1.0)
    voice = r.transcriber.voice_of(0)
    assert voice is not None and voice[1] is not None
    assert abs(voice[0] - (r.epoch_ms + 500)) <= 100 and abs(voice[1] - (r.epoch_ms + 1400)) <= 100
    # A transport that tells no backchannels is told nothing of it.
    plain = run(call)
    plain.feed(bytes(call.audio))
    plain.idle(1.0)
    assert plain.transcriber.voice_of(0) is None and len(plain.stored()) == 1


# --- a short voice over the agent that stopped: marked paused before Ink ends its turn ---------------------------


@dataclass
class Marks:
    """What the transcriber told, in order: speaking marks, pause marks and turns ended."""

    told: list[tuple[str, int, object]]

    def speaking(self, seq: int, speaking: bool) -> None:
        self.told.append(("speaking", seq, speaking))

    def paused(self, seq: int, paused: bool) -> None:
        self.told.append(("paused", seq, paused))

    def ended(self, turn: Turn) -> None:
        self.told.append(("ended", turn.seq, turn.transcript))

    def of(self, kind: str) -> list[tuple[int, object]]:
        return [(seq, value) for told, seq, value in self.told if told == kind]


def paused_run(call: Call, paused_over: Callable[[float, float], bool]) -> tuple[Run, Marks]:
    marks = Marks([])
    r = run(
        call,
        talked_over=lambda start_ms, end_ms: True,
        paused_over=paused_over,
        on_paused=marks.paused,
        on_speaking=marks.speaking,
        on_turn_ended=marks.ended,
        language="en-US",
    )
    r.feed(bytes(call.audio))
    r.idle(1.5)
    return r, marks


def test_a_short_voice_over_the_agent_whose_words_only_acknowledge_is_marked_paused_before_its_turn_ends() -> None:
    call = Call().silence(500).turn("uh huh", 400, updates=((650, "uh huh"),)).silence(2000)
    asked: list[tuple[float, float]] = []

    def over_the_agent(start_ms: float, end_ms: float) -> bool:
        asked.append((start_ms, end_ms))
        return True

    r, marks = paused_run(call, over_the_agent)

    assert marks.of("paused") == [(0, True)]
    # Told once the voice had stopped and Ink's words covered it, before Ink ended the turn (700 ms after the voice).
    told = [(kind, seq) for kind, seq, _ in marks.told]
    assert told.index(("paused", 0)) < told.index(("ended", 0))
    assert [(turn.transcript, turn.backchannel) for turn in r.stored()] == [("uh huh", True)]
    # Asked with the voice's first and last frame on Connect's clock.
    ((start_ms, end_ms),) = asked
    assert abs(start_ms - (r.epoch_ms + 500)) <= 100 and abs(end_ms - (r.epoch_ms + 900)) <= 100


def test_no_pause_for_words_that_ask_for_none_yet_or_a_voice_the_transport_calls_not_short_over_the_agent() -> None:
    asking = Call().silence(500).turn("stop", 400, updates=((650, "stop"),)).silence(2000)
    _, marks = paused_run(asking, lambda start_ms, end_ms: True)
    assert marks.of("paused") == []

    # No words from Ink before it ends the turn: nothing to judge the voice by, so it holds the reply as before.
    wordless = Call().silence(500).turn("uh huh", 400).silence(2000)
    _, marks = paused_run(wordless, lambda start_ms, end_ms: True)
    assert marks.of("paused") == []

    not_over = Call().silence(500).turn("uh huh", 400, updates=((650, "uh huh"),)).silence(2000)
    _, marks = paused_run(not_over, lambda start_ms, end_ms: False)
    assert marks.of("paused") == []


def test_voice_after_a_pause_takes_it_back_and_the_words_before_the_voice_stopped_do_not_mark_one() -> None:
    # "uh huh", a pause the voice detector closes, then more in the same turn: marked paused, then taken back.
    call = (
        Call()
        .silence(500)
        .turn("uh huh and my card", 400, 600, 900, updates=((200, "uh"), (650, "uh huh"), (1700, "uh huh and my card")))
        .silence(2000)
    )

    _, marks = paused_run(call, lambda start_ms, end_ms: True)

    # The words at 200 ms came while the caller still spoke: not judged on them.
    assert marks.of("paused") == [(0, True), (0, False)]
    told = [(kind, seq, value) for kind, seq, value in marks.told if kind != "speaking"]
    assert told == [("paused", 0, True), ("paused", 0, False), ("ended", 0, "uh huh and my card")]


def test_voice_that_goes_on_when_ink_ends_the_turn_marks_the_next_turn_begun_before_this_one_is_passed_on() -> None:
    # Ink ends a turn 700 ms after what it took for its end, while the caller is still speaking (a quiet stretch it
    # heard as silence): their next turn has begun, and no new voice will mark it until Ink's turn.start.
    call = Call().silence(500)
    call.audio += voice(3000)
    call.turns.append(ScriptedTurn(500, 1200, "I want to pay"))
    call.silence(1500)
    marks = Marks([])
    r = run(call, on_speaking=marks.speaking, on_turn_ended=marks.ended)
    r.feed(bytes(call.audio))
    r.idle(1.0)

    told = marks.told
    ended = told.index(("ended", 0, "I want to pay"))
    assert ("speaking", 1, True) in told[:ended], told
    assert [turn.transcript for turn in r.stored()] == ["I want to pay"]


def test_a_turn_ink_ends_after_the_voice_stopped_marks_no_next_turn() -> None:
    call = Call().silence(500).turn("I want to pay", 1000).silence(1500)
    marks = Marks([])
    r = run(call, on_speaking=marks.speaking, on_turn_ended=marks.ended)
    r.feed(bytes(call.audio))
    r.idle(1.0)
    # Marked by the voice detector and again by Ink's turn.start: turn 0 only.
    assert {seq for seq, speaking in marks.of("speaking") if speaking} == {0}
