"""Whether the caller has finished their turn, from the sound of its end: Smart Turn v3.2, with features in numpy.

Smart Turn v3.2 (BSD-2-Clause, Daily; docs/protocols.md, "Smart Turn") is a Whisper-encoder classifier: it hears the
last 8 s of a turn at 16 kHz — words, intonation, a trailing "and…" — and gives the probability that the speaker is
done. It is asked when the voice detector sees the caller stop, so the product can end a turn (or start its reply)
without waiting out a silence timer, in any of the languages it was trained on.

Its input is Whisper's log-mel spectrogram, computed here (nothing of Whisper's or the framework's code is needed):

1. the audio, 16 kHz, cut to its last 8 s or padded with zeros in front to 8 s (128,000 samples), then scaled to zero
   mean and unit variance (variance plus 1e-7);
2. a short-time Fourier transform: 400-sample periodic Hann windows every 160 samples, the signal padded by 200
   samples of reflection at each end, so frame *k* is centred on sample 160·*k* (801 frames; the last is dropped);
3. the power spectrum's 201 bins through 80 triangular mel filters spanning 0–8 kHz on the Slaney scale (linear to
   1 kHz, logarithmic above), each scaled to unit area (2 / its width in Hz);
4. log10 of the filter energies (floored at 1e-10), floored again at 8 below their maximum, then (x + 4) / 4.

The result, 80 × 800, is fed as ``input_features`` (1 × 80 × 800, float32); the model's one output is the
probability. Telephone audio is 8 kHz: it is upsampled with soxr, so the band above 4 kHz is empty, as it was on the
line.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from voicebridge.audio import onnx
from voicebridge.audio.vad import VoiceActivity
from voicebridge.language import TurnEndPolicy

MODEL_RATE = 16000
WINDOW_SAMPLES = 8 * MODEL_RATE
FFT_SIZE = 400
HOP = 160
MEL_BANDS = 80

_BYTES_PER_MS = 16
"""The stream's 8 kHz s16le audio."""
_KEPT_BYTES = 8 * 1000 * _BYTES_PER_MS
"""8 s of it."""

Samples = npt.NDArray[np.float32]


def _hz_to_mel(hz: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Slaney's mel scale: 3 mels per 200 Hz up to 1 kHz (15 mels), then 27 mels per factor of 6.4."""
    linear = hz * 3.0 / 200.0
    logarithmic = 15.0 + np.log(np.maximum(hz, 1e-9) / 1000.0) * 27.0 / np.log(6.4)
    return np.where(hz < 1000.0, linear, logarithmic)


def _mel_to_hz(mel: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    linear = mel * 200.0 / 3.0
    logarithmic = 1000.0 * np.exp((mel - 15.0) * np.log(6.4) / 27.0)
    return np.where(mel < 15.0, linear, logarithmic)


@functools.cache
def mel_filters() -> npt.NDArray[np.float64]:
    """The filter bank, 80 × 201: filter *m* rises from edge *m* to *m*+1 and falls to *m*+2, in Hz."""
    edges = _mel_to_hz(np.linspace(0.0, float(_hz_to_mel(np.array(MODEL_RATE / 2.0))), MEL_BANDS + 2))
    bins = np.linspace(0.0, MODEL_RATE / 2.0, FFT_SIZE // 2 + 1)
    lower, centre, upper = edges[:-2, np.newaxis], edges[1:-1, np.newaxis], edges[2:, np.newaxis]
    rising = (bins - lower) / (centre - lower)
    falling = (upper - bins) / (upper - centre)
    return np.maximum(0.0, np.minimum(rising, falling)) * (2.0 / (upper - lower))


@functools.cache
def _hann() -> npt.NDArray[np.float64]:
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * np.arange(FFT_SIZE) / FFT_SIZE)


def last_window(audio: Samples) -> Samples:
    """The last 8 s of 16 kHz audio, padded with zeros in front when shorter."""
    audio = np.asarray(audio, dtype=np.float32)[-WINDOW_SAMPLES:]
    return np.concatenate((np.zeros(WINDOW_SAMPLES - len(audio), dtype=np.float32), audio))


def log_mel(audio: Samples) -> Samples:
    """The model's input features (80 × 800) for up to 8 s of 16 kHz audio scaled to ±1."""
    window = last_window(audio)
    window = (window - window.mean()) / np.sqrt(window.var() + 1e-7)
    padded = np.pad(window.astype(np.float64), FFT_SIZE // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, FFT_SIZE)[::HOP]
    power = np.abs(np.fft.rfft(frames * _hann(), axis=1)) ** 2
    energies = np.log10(np.maximum(mel_filters() @ power.T, 1e-10))[:, :-1]
    energies = np.maximum(energies, energies.max() - 8.0)
    features: Samples = ((energies + 4.0) / 4.0).astype(np.float32)
    return features


def telephone_to_model(pcm: bytes) -> Samples:
    """8 kHz s16le audio as the model hears it: 16 kHz, scaled to ±1."""
    import soxr

    samples = np.frombuffer(pcm, dtype="<i2").astype(np.float32) / 32768.0
    return np.asarray(soxr.resample(samples, 8000, MODEL_RATE, quality="HQ"), dtype=np.float32)


@dataclass(frozen=True)
class EndOfTurnModel:
    """Smart Turn v3.2: ``score`` gives the probability that the turn is complete (above 0.5, its authors' line)."""

    def score(self, audio: Samples) -> float:
        """The probability that the speaker is done, from the last ≤ 8 s of 16 kHz audio scaled to ±1."""
        features = log_mel(audio)[np.newaxis]
        (probability,) = onnx.session(onnx.SMART_TURN).run(None, {"input_features": features})
        return float(np.asarray(probability).reshape(-1)[0])

    def complete(self, audio: Samples) -> bool:
        return self.score(audio) > 0.5


@dataclass(frozen=True)
class Verdict:
    """The model's answer for one stop of the caller's voice."""

    voice_end_ms: float
    """Where the caller's voice stopped, by the detector (ms from the stream's start)."""
    at_ms: float
    """The stream position the model was asked at."""
    probability: float
    complete: bool


ASK_AT_MS = 0.0
"""The silence after the caller's last voiced frame at which the model is asked about a stop, once: 0 is the first
frame the detector hears unvoiced (the detector dates the voice's end back to where the audio changed). Sooner than
the reference's 200 ms, because on the development set it cut off fewer pauses at a lower latency
(docs/benchmarks.md, "End of turn")."""
PRE_SPEECH_MS = 500.0
"""How much audio before a turn's first voiced frame the model hears with it."""


@dataclass
class TurnEndWatch:
    """Asks the end-of-turn model whether the caller is done, each time the voice detector sees them stop.

    Fed the same 8 kHz audio as the :class:`~voicebridge.audio.vad.VoiceActivity` it watches (after it), it asks
    about a stop once the silence since the caller's last voiced frame reaches ``ask_at_ms`` (each of them in turn,
    until an answer is complete, when there are several), and never again about that stop: the model takes a long
    silence itself for an end, so asking again as the silence grows turns most mid-sentence pauses into ends
    (docs/benchmarks.md, "End of turn", measures both). A contact language's
    :class:`~voicebridge.language.TurnEndPolicy` sets ``ask_at_ms`` and ``threshold`` (:meth:`for_policy`).

    The model hears what Smart Turn's own inference hears: the current turn from :data:`PRE_SPEECH_MS` before its
    first voiced frame (a turn starts with the first voice after a complete answer, or the stream's first voice), up
    to its last 8 s — not the turn before it.
    """

    model: EndOfTurnModel = field(default_factory=EndOfTurnModel)
    ask_at_ms: tuple[float, ...] = (ASK_AT_MS,)
    threshold: float = 0.5
    _audio: bytearray = field(default_factory=bytearray)
    _stop_ms: float | None = None
    """The voice end of the stop being asked about."""
    _asked: int = 0
    """How many of ``ask_at_ms`` have been asked about for it."""
    _done: bool = False
    _new_turn: bool = True
    """The last answer was complete (or none was given): the next voice starts a turn."""

    @classmethod
    def for_policy(cls, policy: TurnEndPolicy) -> TurnEndWatch | None:
        """The watch a language's policy asks for: asking where it says, complete above its threshold; None when
        the model has no part in it (silence alone ends the turns)."""
        if policy.threshold is None:
            return None
        return cls(ask_at_ms=(float(policy.ask_at_ms),), threshold=policy.threshold)

    def feed(self, pcm: bytes, vad: VoiceActivity) -> Verdict | None:
        """Keep ``pcm`` (already fed to ``vad``); a verdict when this audio reached a silence worth asking about."""
        self._audio += pcm
        del self._audio[: max(0, len(self._audio) - _KEPT_BYTES)]
        voice_end, silent_ms = vad.last_voiced_end_ms, vad.silent_for_ms
        if voice_end is None or silent_ms <= 0:
            return None
        if voice_end != self._stop_ms:
            self._stop_ms, self._asked, self._done = voice_end, 0, False
            if self._new_turn and vad.open_start_ms is not None:
                self._new_turn = False
                kept_ms = vad.position_ms - max(0.0, vad.open_start_ms - PRE_SPEECH_MS)
                del self._audio[: max(0, len(self._audio) - int(kept_ms) * _BYTES_PER_MS)]
        if self._done or self._asked == len(self.ask_at_ms) or silent_ms < self.ask_at_ms[self._asked]:
            return None
        while self._asked < len(self.ask_at_ms) and silent_ms >= self.ask_at_ms[self._asked]:
            self._asked += 1
        probability = self.model.score(telephone_to_model(bytes(self._audio)))
        self._done = self._new_turn = probability > self.threshold
        return Verdict(voice_end, vad.position_ms, probability, self._done)
