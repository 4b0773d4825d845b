"""Silero VAD on telephone audio: a speech probability per 32 ms window of 8 kHz audio, from its ONNX model.

The model (Silero VAD v6, MIT, from the ``silero-vad`` package; docs/protocols.md, "Silero VAD") takes 256 samples
at 8 kHz preceded by the last 32 samples it saw, its recurrent state (2×1×128 floats) and the sample rate, and gives
the probability that the window holds speech and its next state. A frame of the stream (20 ms) is judged by the
newest window that ended in it or before it, so a decision lags the audio by at most one window; the voice a frame
first shows, and its end, are dated from the start of the window that found the change (``change_lead_ms``).

Decisions use two thresholds, as Silero's own segmenter does: speech starts above ``threshold`` and stops below
``threshold - 0.15``, so a probability wavering around one value does not flap. The recurrent state drifts in long
non-speech on 8 kHz audio until speech that follows is under-scored; it is cleared every ``reset_every_ms`` of audio,
but only in clear non-speech (a run of low scores), never inside an utterance.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from voicebridge.audio import onnx

SAMPLE_RATE = 8000
WINDOW = 256
CONTEXT = 32
WINDOW_MS = WINDOW * 1000 / SAMPLE_RATE
_QUIET_SCORE = 0.1
_QUIET_WINDOWS = 5


def _fresh_state() -> npt.NDArray[np.float32]:
    return np.zeros((2, 1, 128), dtype=np.float32)


@dataclass
class SileroDetector:
    """Voiced or not per frame of 8 kHz audio, from Silero VAD; one per stream (it holds the model's state)."""

    threshold: float = 0.5
    reset_every_ms: float = 2000.0
    probability: float = 0.0
    """The newest window's speech probability."""
    _speech: bool = False
    _samples: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(0, dtype=np.float32))
    _context: npt.NDArray[np.float32] = field(default_factory=lambda: np.zeros(CONTEXT, dtype=np.float32))
    _state: npt.NDArray[np.float32] = field(default_factory=_fresh_state)
    _since_reset_ms: float = 0.0
    _quiet_windows: int = 0
    _fed: int = 0
    """Samples judged so far."""
    _changed: int = 0
    """Where the window that last turned speech on or off started, in samples from the stream's first."""
    _sure_until: int = 0
    """Where the last window that scored speech (at ``threshold`` or above) ended."""
    change_lead_ms: float = 0.0
    """How long before the newest frame's start the window that changed the decision began (0 if none did)."""

    def voiced(self, frames: npt.NDArray[np.float32]) -> list[bool]:
        """One decision per row of ``frames`` (samples scaled to ±1), in order."""
        decisions = []
        for frame in frames:
            frame_start, was_speech = self._fed, self._speech
            self._fed += len(frame)
            self._samples = np.concatenate((self._samples, frame))
            while len(self._samples) >= WINDOW:
                self._score(self._samples[:WINDOW], self._fed - len(self._samples))
                self._samples = self._samples[WINDOW:]
            changed = self._speech != was_speech
            self.change_lead_ms = max(0, frame_start - self._changed) * 1000 / SAMPLE_RATE if changed else 0.0
            decisions.append(self._speech)
        return decisions

    def _score(self, window: npt.NDArray[np.float32], start: int) -> None:
        model_input = np.concatenate((self._context, window))[np.newaxis, :]
        probability, self._state = onnx.session(onnx.SILERO_VAD).run(
            None, {"input": model_input, "state": self._state, "sr": np.array(SAMPLE_RATE, dtype=np.int64)}
        )
        self._context = window[-CONTEXT:]
        self.probability = float(probability.reshape(-1)[0])
        was_speech = self._speech
        if self.probability >= self.threshold:
            self._speech = True
            self._sure_until = start + WINDOW
        elif self.probability < self.threshold - 0.15:
            self._speech = False
        if self._speech != was_speech:
            # Speech is dated from the start of the window that found it, and to the end of the last window sure of it.
            self._changed = start if self._speech else self._sure_until
        self._quiet_windows = self._quiet_windows + 1 if self.probability < _QUIET_SCORE else 0
        self._since_reset_ms += WINDOW_MS
        if self._since_reset_ms >= self.reset_every_ms and not self._speech and self._quiet_windows >= _QUIET_WINDOWS:
            self._state = _fresh_state()
            self._context = np.zeros(CONTEXT, dtype=np.float32)
            self._since_reset_ms = 0.0
