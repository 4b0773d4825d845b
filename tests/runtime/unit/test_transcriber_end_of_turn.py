"""Our own end of turn in the transcriber: the model's verdict on each stop of the caller's voice ends a manual-mode
turn after the policy's quiet, is an eager end on Ink's turns endpoint, and is held against Ink's turn end; a
language's policy decides what ends its turns."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import numpy.typing as npt
from aws_lambda_powertools.metrics import MetricUnit

from tests.fixtures.clock import ManualClock
from voicebridge.audio.end_of_turn import EndOfTurnModel, TurnEndWatch
from voicebridge.config import Settings
from voicebridge.ink.session import TurnListener
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber, TurnEnding, turn_ending
from voicebridge.store.turns import TrackProgress, Turn


@dataclass(frozen=True)
class FixedModel(EndOfTurnModel):
    """Says the same of every stop."""

    probability: float = 0.9

    def score(self, audio: npt.NDArray[np.float32]) -> float:
        return self.probability


class FakeSession:
    """Stands in for the Ink socket: records where each finalize went out, in bytes of audio sent before it."""

    made: ClassVar[list[FakeSession]] = []

    def __init__(self, listener: TurnListener, name: str) -> None:
        self.listener = listener
        self.sent = 0
        self.finalized_at: list[int] = []
        self.alive = True
        FakeSession.made.append(self)

    def open(self) -> None:
        pass

    def send_audio(self, pcm: bytes) -> None:
        self.sent += len(pcm)

    def finalize(self) -> None:
        self.finalized_at.append(self.sent)

    def close(self, *, timeout_s: float = 0) -> None:
        self.alive = False


class Store:
    def put_turn(self, turn: Turn) -> bool:
        return True


@dataclass
class Counted(MetricSink):
    counts: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, unit: MetricUnit, value: float) -> None:
        self.counts[name] = self.counts.get(name, 0) + value


@dataclass
class Call:
    transcriber: TrackTranscriber
    clock: ManualClock
    sink: Counted
    eager_ends: list[tuple[int, str]]
    resumes: list[int]
    ended: list[Turn]

    @property
    def session(self) -> FakeSession:
        return FakeSession.made[-1]

    def hear(self, pcm: bytes) -> None:
        """``pcm`` as a live stream delivers it, 20 ms at a time."""
        for offset in range(0, len(pcm), 320):
            self.clock.advance(0.02)
            self.transcriber.audio("1", offset + self.offset, pcm[offset : offset + 320], None)
        self.offset += len(pcm)

    offset: int = 0


MODEL_END_QUIET_MS = 200
"""The quiet after a complete verdict these tests' manual mode waits before ending the turn."""


def call(mode: str, probability: float, *, ends_turns: bool = True, ending: TurnEnding | None = None) -> Call:
    """A track in ``mode`` whose model says ``probability`` of every stop; ``ending``: a language's way of ending
    turns instead (its watch given the fixed model)."""
    if ending is None:
        ending = TurnEnding(
            end_of_turn=TurnEndWatch(model=FixedModel(probability=probability)),
            model_ends_turns=ends_turns,
            manual_end_silence_ms=700,
            model_end_quiet_ms=MODEL_END_QUIET_MS,
        )
    elif ending["end_of_turn"] is not None:
        ending["end_of_turn"] = replace(ending["end_of_turn"], model=FixedModel(probability=probability))
    FakeSession.made = []
    clock, sink = ManualClock(), Counted(threading.Lock())
    eager_ends: list[tuple[int, str]] = []
    resumes: list[int] = []
    ended: list[Turn] = []
    transcriber = TrackTranscriber(
        contact_id="c1",
        track="customer",
        progress=TrackProgress(),
        store=Store(),  # type: ignore[arg-type]
        open_session=FakeSession,  # type: ignore[arg-type]
        sink=sink,
        mode=mode,
        **ending,
        clock=clock,
        on_eager_end=lambda seq, words: eager_ends.append((seq, words)),
        on_resume=resumes.append,
        on_turn_ended=ended.append,
    )
    return Call(transcriber, clock, sink, eager_ends, resumes, ended)


def voice(ms: int) -> bytes:
    t = np.arange(ms * 8) / 8000
    return (8000 * np.sin(2 * np.pi * 300 * t)).astype("<i2").tobytes()


def quiet(ms: int) -> bytes:
    return bytes(ms * 16)


def test_manual_mode_ends_the_turn_once_the_model_calls_it_complete_and_the_caller_stays_quiet() -> None:
    c = call("manual", probability=0.9)
    c.hear(quiet(200) + voice(800) + quiet(300))
    # Sent when the finalize went out: the voice ended 1,000 ms in, and the caller stayed quiet 200 ms after it.
    assert c.session.finalized_at == [(1000 + MODEL_END_QUIET_MS) * 16]


def test_manual_mode_does_not_end_the_turn_at_a_gap_between_words_the_model_called_complete() -> None:
    c = call("manual", probability=0.9)
    c.hear(quiet(200) + voice(800) + quiet(120) + voice(600) + quiet(100))
    assert c.session.finalized_at == []
    c.hear(quiet(200))
    assert c.session.finalized_at == [(1000 + 120 + 600 + MODEL_END_QUIET_MS) * 16]


def test_manual_mode_leaves_the_turn_to_the_silence_unless_the_model_may_end_turns() -> None:
    c = call("manual", probability=0.9, ends_turns=False)
    c.hear(quiet(200) + voice(800) + quiet(600))
    assert c.session.finalized_at == []


def test_manual_mode_waits_out_the_silence_when_the_model_says_the_caller_is_not_done() -> None:
    c = call("manual", probability=0.2)
    c.hear(quiet(200) + voice(800) + quiet(600))
    assert c.session.finalized_at == []
    c.hear(quiet(200))
    assert len(c.session.finalized_at) == 1


def test_a_stop_the_model_ended_is_finalized_once() -> None:
    c = call("manual", probability=0.9)
    c.hear(quiet(200) + voice(800) + quiet(1500))
    assert len(c.session.finalized_at) == 1


def test_on_the_turns_endpoint_a_complete_verdict_is_an_eager_end_with_inks_words_once_they_cover_the_stop() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.transcriber.on_turn_update("what is my")
    c.hear(voice(300) + quiet(100))
    # Judged complete, but Ink's words are of the audio before the stop: the last word may be missing.
    assert c.eager_ends == []
    c.transcriber.on_turn_update("what is my balance")
    assert c.eager_ends == [(0, "what is my balance")]


def test_a_complete_verdict_waiting_for_inks_words_is_void_once_the_caller_goes_on() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.transcriber.on_turn_update("I want")
    c.hear(voice(300) + quiet(100) + voice(300))
    c.transcriber.on_turn_update("I want to")
    assert (c.eager_ends, c.resumes) == ([], [])


def test_inks_own_eager_end_before_inks_words_cover_the_stop_stands_in_for_ours() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.transcriber.on_turn_update("what is my")
    c.hear(voice(300) + quiet(100))
    c.transcriber.on_turn_eager_end("what is my balance")
    c.transcriber.on_turn_update("what is my bal")
    assert c.eager_ends == [(0, "what is my balance")]


def test_a_complete_verdict_after_inks_own_eager_end_for_the_stop_adds_nothing() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(600))
    c.transcriber.on_turn_start()
    c.transcriber.on_turn_eager_end("what is my balance")
    c.hear(quiet(100))
    c.transcriber.on_turn_update("what is my bal")
    assert c.eager_ends == [(0, "what is my balance")]


def test_the_caller_speaking_again_after_our_eager_end_is_a_resume() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.transcriber.on_turn_update("I want to")
    c.hear(voice(300) + quiet(100))
    c.transcriber.on_turn_update("I want to pay")
    assert c.resumes == []
    c.hear(voice(300))
    assert c.resumes == [0]


def test_no_eager_end_of_ours_before_ink_has_words() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.hear(voice(300) + quiet(100))
    assert c.eager_ends == []


def test_inks_turn_end_after_our_complete_verdict_counts_as_agreement() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.hear(voice(300) + quiet(400))
    c.transcriber.on_turn_end("what is my balance")
    assert (c.sink.counts.get("EndOfTurnAgreed"), c.sink.counts.get("EndOfTurnDisagreed")) == (1, None)


def test_inks_turn_end_after_an_incomplete_verdict_counts_as_disagreement() -> None:
    c = call("turns", probability=0.2)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.hear(voice(300) + quiet(400))
    c.transcriber.on_turn_end("what is my balance")
    assert (c.sink.counts.get("EndOfTurnAgreed"), c.sink.counts.get("EndOfTurnDisagreed")) == (None, 1)


def test_a_manual_mode_turn_is_recorded_as_ended_by_the_product() -> None:
    c = call("manual", probability=0.9)
    c.hear(quiet(200) + voice(800) + quiet(200))
    c.transcriber.on_turn_end("quiero saber mi saldo")
    assert [(t.transcript, t.ended_by) for t in c.ended] == [("quiero saber mi saldo", "voicebridge")]


def test_a_turn_of_inks_turns_endpoint_is_recorded_as_ended_by_ink() -> None:
    c = call("turns", probability=0.9)
    c.hear(quiet(200) + voice(300))
    c.transcriber.on_turn_start()
    c.hear(voice(300) + quiet(400))
    c.transcriber.on_turn_end("what is my balance")
    assert [(t.transcript, t.ended_by) for t in c.ended] == [("what is my balance", "ink")]


def spanish(probability: float) -> Call:
    """A Spanish caller's track with the product's default settings."""
    return call("manual", probability, ending=turn_ending(Settings().languages.listening("es"), answered=True))


def test_a_spanish_callers_600_ms_pause_after_a_stop_the_model_calls_complete_does_not_end_the_turn() -> None:
    c = spanish(probability=0.99)
    c.hear(quiet(200) + voice(800) + quiet(600) + voice(600) + quiet(100))
    assert c.session.finalized_at == []


def test_a_spanish_callers_turn_ends_after_900_ms_of_silence_by_default_whatever_the_model_would_say() -> None:
    c = spanish(probability=0.99)
    c.hear(quiet(200) + voice(800) + quiet(1000))
    assert c.session.finalized_at == [(1000 + 900) * 16]


def test_manual_mode_ends_the_turn_at_the_policys_silence_when_the_model_says_the_caller_is_not_done() -> None:
    ending = TurnEnding(
        end_of_turn=TurnEndWatch(), model_ends_turns=True, manual_end_silence_ms=900, model_end_quiet_ms=500
    )
    c = call("manual", probability=0.2, ending=ending)
    c.hear(quiet(200) + voice(800) + quiet(880))
    assert c.session.finalized_at == []
    c.hear(quiet(100))
    assert c.session.finalized_at == [(1000 + 900) * 16]


def test_manual_mode_ends_the_turn_on_a_complete_verdict_only_after_the_policys_quiet() -> None:
    ending = TurnEnding(
        end_of_turn=TurnEndWatch(), model_ends_turns=True, manual_end_silence_ms=900, model_end_quiet_ms=500
    )
    c = call("manual", probability=0.99, ending=ending)
    c.hear(quiet(200) + voice(800) + quiet(400) + voice(600) + quiet(480))
    assert c.session.finalized_at == []
    c.hear(quiet(40))
    assert c.session.finalized_at == [(1000 + 400 + 600 + 500) * 16]
