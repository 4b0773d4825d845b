"""The end-of-turn model: its input features against a reference, and its verdicts on speech that ends or pauses."""

from __future__ import annotations

import wave
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest

from voicebridge.audio import onnx
from voicebridge.audio.end_of_turn import (
    ASK_AT_MS,
    PRE_SPEECH_MS,
    EndOfTurnModel,
    TurnEndWatch,
    Verdict,
    log_mel,
    telephone_to_model,
)
from voicebridge.audio.vad import VoiceActivity, detector
from voicebridge.errors import ConfigurationError
from voicebridge.language import TurnEndPolicy

ROOT = Path(__file__).resolve().parents[3]
REFERENCE = np.load(ROOT / "tests" / "data" / "log_mel" / "chirp.npz")
CLIPS = ROOT / "src" / "dev" / "voicebridge_dev" / "simulator" / "clips"


def chirp() -> npt.NDArray[np.float32]:
    t = np.arange(3 * 16000) / 16000
    noise = 0.05 * np.random.default_rng(0).normal(size=t.size)
    return (0.3 * np.sin(2 * np.pi * (200 + 300 * t) * t) + noise).astype(np.float32)


def clip(name: str) -> bytes:
    with wave.open(str(CLIPS / f"{name}.wav"), "rb") as wav:
        return wav.readframes(wav.getnframes())


def silence(ms: int) -> bytes:
    return bytes(ms * 16)


def test_the_features_match_the_reference_implementation_frame_by_frame() -> None:
    features = log_mel(chirp())
    assert features.shape == (80, 800)
    np.testing.assert_allclose(features[:, REFERENCE["frames"]], REFERENCE["features"], atol=1e-5)


def test_no_frame_or_band_of_the_features_departs_from_the_reference() -> None:
    features = log_mel(chirp()).astype(np.float64)
    np.testing.assert_allclose(features.sum(axis=1), REFERENCE["band_sums"], atol=1e-3)
    np.testing.assert_allclose(features.sum(axis=0), REFERENCE["frame_sums"], atol=1e-3)


def test_audio_longer_than_the_window_is_judged_by_its_last_eight_seconds() -> None:
    tail = chirp()
    assert np.array_equal(
        log_mel(np.concatenate((np.ones(20000, np.float32), tail, tail, tail))),
        log_mel(np.concatenate((tail[-(128000 - 2 * len(tail)) :], tail, tail))),
    )


def test_telephone_audio_is_heard_at_the_models_rate() -> None:
    assert len(telephone_to_model(silence(1000))) == 16000


def test_a_finished_sentence_is_complete() -> None:
    assert EndOfTurnModel().complete(telephone_to_model(clip("person") + silence(200)))


def test_a_sentence_broken_off_after_a_connective_is_not_complete() -> None:
    audio = clip("dispute")
    cut = audio[: len(audio) * 55 // 100 // 2 * 2]
    assert not EndOfTurnModel().complete(telephone_to_model(cut + silence(200)))


@dataclass(frozen=True)
class Heard(EndOfTurnModel):
    """Gives ``probability`` of every stop, and keeps how much audio (ms) it was asked about each time."""

    probability: float = 0.9
    asked_ms: list[float] = field(default_factory=list)

    def score(self, audio: npt.NDArray[np.float32]) -> float:
        self.asked_ms.append(len(audio) / 16)
        return self.probability


def verdicts(stream: bytes, model: EndOfTurnModel | None = None) -> list[Verdict]:
    """What the watch says of ``stream``, fed in 20 ms chunks after a Silero-judged voice detector."""
    vad = VoiceActivity(detector=detector("silero"), close_ms=300)
    watch = TurnEndWatch() if model is None else TurnEndWatch(model=model)
    found = []
    for offset in range(0, len(stream), 320):
        vad.feed(stream[offset : offset + 320])
        if (verdict := watch.feed(stream[offset : offset + 320], vad)) is not None:
            found.append(verdict)
    return found


def test_the_watch_asks_no_more_about_a_stop_once_it_is_complete() -> None:
    said = verdicts(silence(300) + clip("person") + silence(800) + clip("thanks") + silence(800))
    assert all(
        later.voice_end_ms != verdict.voice_end_ms
        for verdict in said
        if verdict.complete
        for later in said[said.index(verdict) + 1 :]
    )


def test_a_sentence_followed_by_silence_ends_with_a_complete_verdict() -> None:
    said = verdicts(silence(300) + clip("thanks") + silence(800))
    assert said[-1].complete


def test_a_stop_is_asked_about_once_however_long_the_silence_after_it() -> None:
    said = verdicts(silence(300) + clip("dispute") + silence(1500), Heard(probability=0.1))
    assert len(said) == 1


def test_a_stop_is_asked_about_when_its_silence_reaches_the_watchs_setting() -> None:
    stream = silence(300) + clip("thanks") + silence(1000)
    (said,) = verdicts(stream, Heard(probability=0.1))
    vad = VoiceActivity(detector=detector("silero"), close_ms=300)
    for offset in range(0, len(stream), 320):
        vad.feed(stream[offset : offset + 320])
        if vad.last_voiced_end_ms == said.voice_end_ms and vad.silent_for_ms > 0 and vad.silent_for_ms >= ASK_AT_MS:
            break
    assert said.at_ms == vad.position_ms


def test_the_first_turn_is_heard_from_half_a_second_before_its_voice() -> None:
    model = Heard()
    (said,) = verdicts(silence(3000) + clip("thanks") + silence(600), model)
    heard_from_ms = said.at_ms - model.asked_ms[0]
    # The detector finds the voice within a tenth of a second of the clip's start.
    assert 3000 - PRE_SPEECH_MS <= heard_from_ms <= 3000 - PRE_SPEECH_MS + 100


def test_after_a_complete_answer_the_next_turn_is_heard_without_the_one_before() -> None:
    model = Heard()
    said = verdicts(silence(300) + clip("person") + silence(1500) + clip("thanks") + silence(600), model)
    heard_from_ms = said[-1].at_ms - model.asked_ms[-1]
    starts_ms = 300 + len(clip("person")) / 16 + 1500
    assert starts_ms - PRE_SPEECH_MS <= heard_from_ms <= starts_ms - PRE_SPEECH_MS + 100


def test_the_watch_never_asks_about_silence_or_line_noise() -> None:
    noise = np.random.default_rng(3).normal(0, 300, 8000 * 3).astype("<i2").tobytes()
    assert verdicts(silence(1000) + noise) == []


def test_a_missing_model_file_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(onnx, "FOLDER", tmp_path)
    onnx.session.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match="make models"):
            onnx.session(onnx.SMART_TURN)
    finally:
        onnx.session.cache_clear()


def test_a_policy_without_a_threshold_asks_for_no_watch() -> None:
    assert TurnEndWatch.for_policy(TurnEndPolicy(silence_ms=900)) is None


def test_a_policys_watch_asks_where_the_policy_says_with_its_threshold() -> None:
    watch = TurnEndWatch.for_policy(TurnEndPolicy(silence_ms=950, threshold=0.95, ask_at_ms=150, quiet_ms=800))
    assert watch is not None
    assert (watch.ask_at_ms, watch.threshold) == ((150.0,), 0.95)
