"""Turn detection from signal energy, sans-I/O: audio in, ``start`` / ``eager_end`` / ``resume`` / ``end`` out.

The service's turn settings (``start_threshold``, ``eager_end_threshold``, ``end_threshold``,
``end_timeout_ms``) act on an emulated speaking probability, within the ranges the service accepts from a
client: the SDK documents them (``cartesia.types.stt.AutoFinalizeWebsocketParams`` and the ``config`` command's
``turn``: start 0.5–0.9, eager end 0.3–0.6, end 0.05–0.5, strictly ordered start > eager end > end, and
``end_timeout_ms`` "Default: 5600. Range: 640-11200"). A value out of range is refused: at the handshake with
HTTP 400, in a ``config`` command with an error event (:mod:`~voicebridge_dev.local.ink.sessions`). The SDK's
docs give the ranges but not the server's answer to a value outside them; refusing is the strict reading.

When a turn ends. ``end_timeout_ms`` is the "Maximum amount of time in milliseconds that the model will wait
after the user stops speaking before ending the turn" (SDK): an upper bound. The real model usually ends a
turn sooner, once it is confident; Cartesia's troubleshooting page for turn detection puts what it adds to the
final transcript at about 0.5 s. The emulator has no model, so its confidence is a fixed delay,
``end_delay_ms`` (700 ms by default: a confident model, just above the shortest ``end_timeout_ms`` the service
accepts, and validated to that same 640–11,200 ms range), bounded by the session's ``end_timeout_ms``: a turn
ends ``min(end_delay_ms, end_timeout_ms)`` after the last voiced frame. The detector advances only on audio it
is fed, so a turn ends only while audio keeps arriving, as pipecat (``services/cartesia/turns/stt.py``: "If we
stop sending audio after a `turn.start`, the server never emits `turn.end` unless we resume sending audio") and
Cartesia's troubleshooting page for turn detection (https://docs.cartesia.ai/ja-jp/use-the-api/stt/troubleshooting/
auto: the API expects a continuous stream, and a muted client should send silence) describe.

A noisy line. Cartesia says ink-whisper "Reliably transcribes speech with background noise" and "Accurately
transcribes audio with telephony artifacts" (https://docs.cartesia.ai/build-with-cartesia/stt-models/older-models),
and that Ink-2 is "Built for real-world audio settings — telephony, background noise" (https://cartesia.ai/ink): the
service hears the caller, not the line. How it does so is not published; the emulator's rule is its own choice, sized
on the simulated caller's clips under the demo's line noises (``voicebridge demo --line-noise``; docs/benchmarks.md,
"A noisy line"). The detector keeps the levels of the last ``noise_window_ms`` (6 s) of the line: every frame outside
a turn, and the frames inside one below the silent level (so a line whose noise changes under a turn is still
learnt, while the caller's voice, and its quiet between syllables, is not). From them it estimates the loudest the
noise reaches, ``top``: the 25th percentile of those levels plus ``noise_spread`` (1.5) times its distance above
the 5th (steady white noise spreads ±1 dB, babble ±6 dB; the low percentiles stay on the noise while the caller
speaks less than three quarters of the window). A frame is voiced at ``voiced_above_noise_db`` (4 dB) over ``top`` and
silent under ``silence_above_noise_db`` (3 dB) over it, and never below the fixed levels: on a clean line (digital
silence, or steady noise under about -55 dBFS) the detector decides exactly as the fixed levels alone do. Digital
silence (a client's keep-alive while its source stalls) is left out of the estimate where at least :data:`NOISY_SHARE`
of the frames between turns carry signal. For its first :data:`YOUNG_FRAMES` frames (2 s) a session may have heard only
the caller's voice (it opened on it): ``top`` is then at most :data:`NOISE_RANGE_DB` (16 dB) above the quietest frame
heard, as noise spans no more. The manual endpoint's utterances are the turns this detector hears
(:func:`voiced_turns`).
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from voicebridge_dev.local.ink.audio import DIGITAL_SILENCE_DBFS, Samples, frame_levels
from voicebridge_dev.local.ink.errors import InvalidTurnSettingsError

CLIENT_RANGES: dict[str, tuple[float, float]] = {
    "start_threshold": (0.5, 0.9),
    "eager_end_threshold": (0.3, 0.6),
    "end_threshold": (0.05, 0.5),
    "end_timeout_ms": (640.0, 11200.0),
}
END_TIMEOUT_MS = 5600.0
END_DELAY_MS = 700.0
NOISE_RANGE_DB = 16.0
YOUNG_FRAMES = 100
NOISY_SHARE = 0.25
"""The share of the frames between turns that must carry signal for the line's digital silence to be taken as gaps
in its noise (between turns a clean line carries nothing but the first frames of the caller's voice)."""


def _check_range(name: str, value: float, limits: str | None = None) -> None:
    """InvalidTurnSettingsError unless ``value`` lies within the client range of ``limits`` (by default ``name``)."""
    low, high = CLIENT_RANGES[limits or name]
    if not low <= value <= high:
        raise InvalidTurnSettingsError(f"{name} must be within [{low:g}, {high:g}], got {value:g}")


@dataclass(frozen=True)
class TurnSettings:
    """How the emulator finds turns in the signal.

    A frame is voiced at or above ``voiced_dbfs`` and silent below ``silence_dbfs``, each raised above the line's
    noise as :class:`LineLevels` hears it (see the module); frames in between continue whatever is happening
    (hysteresis). The service's thresholds act on an emulated speaking
    probability: it rises by one per ``start_ramp_ms`` of consecutive voiced audio (turn.start once it reaches
    ``start_threshold``: 100 ms with the defaults) and, after the last voiced frame, falls linearly so that it
    crosses ``end_threshold`` exactly :attr:`end_after_ms` later (turn.end); turn.eager_end fires when it
    crosses ``eager_end_threshold``. ``end_timeout_ms`` is the client's bound (the service's default, 5600 ms,
    unless the session sets it); ``end_delay_ms`` is the emulated model's own delay (see the module).
    """

    start_threshold: float = 0.8
    eager_end_threshold: float = 0.4
    end_threshold: float = 0.2
    end_timeout_ms: float = END_TIMEOUT_MS
    end_delay_ms: float = END_DELAY_MS
    voiced_dbfs: float = -40.0
    silence_dbfs: float = -50.0
    start_ramp_ms: float = 125.0
    frame_ms: float = 20.0
    noise_window_ms: float = 6000.0
    noise_spread: float = 1.5
    voiced_above_noise_db: float = 4.0
    silence_above_noise_db: float = 3.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.end_threshold < self.start_threshold <= 1.0:
            raise InvalidTurnSettingsError("end_threshold must lie below start_threshold, both within [0, 1]")
        if not 0.0 < self.eager_end_threshold < 1.0:
            raise InvalidTurnSettingsError("eager_end_threshold must lie within (0, 1)")
        if self.start_ramp_ms <= 0 or self.frame_ms <= 0 or self.noise_window_ms < self.frame_ms:
            raise InvalidTurnSettingsError("durations must be positive")
        for name in ("end_timeout_ms", "end_delay_ms"):
            _check_range(name, getattr(self, name), "end_timeout_ms")
        if self.silence_dbfs > self.voiced_dbfs:
            raise InvalidTurnSettingsError("silence_dbfs must not exceed voiced_dbfs")
        if self.noise_spread < 0 or self.silence_above_noise_db > self.voiced_above_noise_db:
            raise InvalidTurnSettingsError(
                "noise_spread must not be negative, nor silence_above_noise_db exceed voiced_above_noise_db"
            )

    @property
    def end_after_ms(self) -> float:
        """How long after the last voiced frame a turn ends: the model's delay, bounded by the client's timeout."""
        return min(self.end_delay_ms, self.end_timeout_ms)

    def with_client_values(self, values: Mapping[str, float]) -> TurnSettings:
        """These settings as updated by a client (query or config command), within the service's ranges."""
        for name, value in values.items():
            _check_range(name, value)
        updated = replace(self, **values)
        if not updated.end_threshold < updated.eager_end_threshold < updated.start_threshold:
            raise InvalidTurnSettingsError("eager_end_threshold must stay between end_threshold and start_threshold")
        return updated


@dataclass(frozen=True)
class TurnSignal:
    """A decision of the detector, at a sample offset of the received audio."""

    kind: Literal["start", "eager_end", "resume", "end"]
    at_sample: int


class LineLevels:
    """The line's noise as the detector has heard it, and the voiced and silent levels it sets (see the module).

    The detector asks for the levels at every frame of every session, so the window is kept sorted as frames come
    and go (a frame's level inserted and the oldest removed by bisection) rather than sorted again at each frame;
    the percentiles are read from it as :func:`numpy.percentile` (its default, linear method) computes them."""

    def __init__(self, settings: TurnSettings) -> None:
        self._settings = settings
        self._frames = max(1, round(settings.noise_window_ms / settings.frame_ms))
        self._heard: deque[tuple[float, bool]] = deque()
        # The levels with signal in them, sorted; digital silence (all at DIGITAL_SILENCE_DBFS) only counted.
        self._signal: list[float] = []
        self._silent = 0
        self._between = 0
        self._signal_between = 0

    def hear(self, level: float, *, in_turn: bool = False) -> None:
        """Count a frame's level (dBFS) as the line's."""
        if len(self._heard) == self._frames:
            self._count(*self._heard.popleft(), -1)
        self._heard.append((level, not in_turn))
        self._count(level, not in_turn, 1)

    def _count(self, level: float, between: bool, sign: int) -> None:
        signal = level > DIGITAL_SILENCE_DBFS
        if signal and sign > 0:
            bisect.insort(self._signal, level)
        elif signal:
            del self._signal[bisect.bisect_left(self._signal, level)]
        else:
            self._silent += sign
        self._between += sign * between
        self._signal_between += sign * (between and signal)

    @property
    def heard(self) -> bool:
        return bool(self._heard)

    def thresholds(self) -> tuple[float, float]:
        """The voiced level and the silent level, in dBFS: the fixed ones, raised above the noise heard."""
        s = self._settings
        # Between turns a noisy line carries its noise throughout: digital silence there is a client's keep-alive
        # while its source stalls (the product sends one), a gap that says nothing of the noise.
        silent = 0 if self._signal_between >= NOISY_SHARE * self._between else self._silent
        size = silent + len(self._signal)
        if size == 0:
            return s.voiced_dbfs, s.silence_dbfs

        def at(index: int) -> float:
            return DIGITAL_SILENCE_DBFS if index < silent else self._signal[index - silent]

        low, quarter = (_percentile(at, size, q) for q in (0.05, 0.25))
        top = quarter + s.noise_spread * (quarter - low)
        if size < YOUNG_FRAMES:
            # Little heard yet, and maybe only the caller's voice (a session that opens on it): noise spans at most
            # NOISE_RANGE_DB above its quietest frame, a wider spread is a voice.
            top = min(top, at(0) + NOISE_RANGE_DB)
        return max(s.voiced_dbfs, top + s.voiced_above_noise_db), max(s.silence_dbfs, top + s.silence_above_noise_db)


def _percentile(at: Callable[[int], float], size: int, q: float) -> float:
    """The ``q`` quantile of ``size`` sorted values (``at(i)`` the i-th), by :func:`numpy.percentile`'s linear
    method, in its order of operations (so the same float)."""
    index = (size - 1) * q
    below = math.floor(index)
    a, b = at(below), at(min(below + 1, size - 1))
    gamma = index - below
    if gamma >= 0.5:
        return b - (b - a) * (1 - gamma)
    return a + (b - a) * gamma


class TurnDetector:
    """Sans-I/O energy turn detector: ``feed(samples)`` returns the turn signals those samples complete."""

    def __init__(self, settings: TurnSettings, sample_rate: int) -> None:
        self.settings = settings
        self._rate = sample_rate
        self.frame_len = max(1, round(sample_rate * settings.frame_ms / 1000.0))
        self._pending: Samples = np.zeros(0, np.float32)
        self.samples_seen = 0
        self.in_turn = False
        self.speech_start_sample = 0
        self.speech_end_sample = 0
        self.last_voiced_sample = 0
        self._run_frames = 0
        self._run_start = 0
        self._silent_frames = 0
        self._eager = False
        self._line = LineLevels(settings)

    def feed(self, samples: Samples) -> list[TurnSignal]:
        buffered = np.concatenate((self._pending, samples)) if self._pending.size else samples
        whole = buffered.size // self.frame_len * self.frame_len
        self._pending = buffered[whole:].copy()
        signals: list[TurnSignal] = []
        # Every whole frame's level at once: one numpy pass for the piece rather than one per 20 ms frame.
        for level in frame_levels(buffered[:whole], self.frame_len):
            signal = self._frame(level)
            if signal is not None:
                signals.append(signal)
        return signals

    def end_turn(self) -> None:
        """Leave the current turn without a decision of the signal (the client closed the session)."""
        self.in_turn = False
        self._run_frames = 0

    def _frame(self, level: float) -> TurnSignal | None:
        s = self.settings
        frame_start = self.samples_seen
        self.samples_seen += self.frame_len
        frame_ms = self.frame_len * 1000.0 / self._rate
        if not self.in_turn:
            self._line.hear(level)
        voiced_at, silent_below = self._line.thresholds()
        if not self.in_turn:
            if level < voiced_at:
                self._run_frames = 0
                return None
            if self._run_frames == 0:
                self._run_start = frame_start
            self._run_frames += 1
            if self._run_frames * frame_ms / s.start_ramp_ms < s.start_threshold:
                return None
            self.in_turn = True
            self.speech_start_sample = self._run_start
            self.speech_end_sample = self.last_voiced_sample = self.samples_seen
            self._silent_frames = 0
            self._eager = False
            return TurnSignal("start", self.samples_seen)
        if level < silent_below:
            # Silent by the line's present noise: what the noise may have become under the turn. A frame between the
            # two levels is not counted: inside a long turn it is the voice's own quiet (between syllables), and
            # counting it raised the noise estimate into the voice until a caller who kept talking was cut off.
            self._line.hear(level, in_turn=True)
        if level >= voiced_at:
            self.last_voiced_sample = self.samples_seen
        if level >= silent_below:
            self.speech_end_sample = self.samples_seen
            self._silent_frames = 0
            if self._eager:
                self._eager = False
                return TurnSignal("resume", self.samples_seen)
            return None
        self._silent_frames += 1
        silence_ms = self._silent_frames * frame_ms
        end_after_ms = s.end_after_ms
        if silence_ms >= end_after_ms:
            self.end_turn()
            return TurnSignal("end", self.samples_seen)
        probability = 1.0 - (1.0 - s.end_threshold) * silence_ms / end_after_ms
        if not self._eager and probability <= s.eager_end_threshold:
            self._eager = True
            return TurnSignal("eager_end", self.samples_seen)
        return None


def voiced_span(samples: Samples, settings: TurnSettings, sample_rate: int) -> tuple[int, int] | None:
    """First and one-past-last sample of the frames at the fixed voiced level, or None when none is (for a clip as
    recorded; audio from the caller's line is judged by :func:`voiced_turns`)."""
    frame_len = max(1, round(sample_rate * settings.frame_ms / 1000.0))
    voiced = np.flatnonzero(np.array(frame_levels(samples, frame_len)) >= settings.voiced_dbfs)
    if voiced.size == 0:
        return None
    return int(voiced[0]) * frame_len, (int(voiced[-1]) + 1) * frame_len


def voiced_turns(samples: Samples, settings: TurnSettings, sample_rate: int) -> list[tuple[int, int]]:
    """The turns a :class:`TurnDetector` hears in audio from the caller's line, each from its first voiced sample
    to one past its last, the last one possibly still open."""
    detector = TurnDetector(settings, sample_rate)
    spans: list[tuple[int, int]] = []
    frame_len = detector.frame_len
    for begin in range(0, samples.size - frame_len + 1, frame_len):
        if any(signal.kind == "start" for signal in detector.feed(samples[begin : begin + frame_len])):
            spans.append((detector.speech_start_sample, detector.samples_seen))
        if detector.in_turn:
            spans[-1] = (spans[-1][0], detector.last_voiced_sample)
    return spans
