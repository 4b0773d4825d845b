"""The caller's line: the noise under everything the caller sends, speech and silence alike.

A telephone line is never digitally silent: there is the caller's room, the network's hiss, and the comfort noise a
gateway fills pauses with. The simulated caller's line carries one of these, continuously (``voicebridge demo
--line-noise``), and ``bench/bench_vad.py`` mixes the same noises into its stream:

- ``white-20db``, ``white-10db``: white noise at 20 and 10 dB below the speech's active level;
- ``babble-20db``, ``babble-10db``: six of the caller's clips reversed (speech's spectrum and rhythm, no words), each
  looped from its own offset, summed, at 20 and 10 dB below;
- ``comfort-noise``: low-passed noise at -50 dBov, a loud comfort-noise fill (RFC 3389 lets it take any level; a
  gateway matches the far end's background).

The speech's active level is the mean power of the caller's clips' 20 ms frames within 30 dB of their loudest (ITU-T
P.56's idea, simplified).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["LINE_NOISES", "LineNoise", "active_power", "noise"]

LINE_NOISES = ("white-20db", "white-10db", "babble-20db", "babble-10db", "comfort-noise")
RATE = 8000
_FRAME = 160
_LOOP_S = 20.0
"""How long a line's noise runs before it repeats (longer than any pause a caller leaves)."""

Signal = npt.NDArray[np.float64]


def active_power(clips: Sequence[Signal]) -> float:
    """The clips' active speech power (samples scaled to ±1): the mean of their frames within 30 dB of the loudest."""
    powers = np.concatenate(
        [np.mean(np.square(c[: len(c) - len(c) % _FRAME].reshape(-1, _FRAME)), axis=1) for c in clips]
    )
    return float(np.mean(powers[powers > powers.max() / 1000]))


def noise(condition: str, samples: int, clips: Sequence[Signal], speech_power: float, seed: int = 11) -> Signal:
    """``condition``'s noise (one of :data:`LINE_NOISES`, or ``clean``: none), ``samples`` long, at its level
    against ``speech_power``; ValueError for a condition not known."""
    rng = np.random.default_rng(seed)
    if condition == "clean":
        return np.zeros(samples)
    if condition not in LINE_NOISES:
        raise ValueError(f"line noise {condition!r}: one of {', '.join(LINE_NOISES)}")
    if condition.startswith("white"):
        shape = rng.normal(0, 1, samples)
    elif condition.startswith("babble"):
        shape = np.zeros(samples)
        for clip in clips[:6]:
            looped = np.tile(clip[::-1], samples // len(clip) + 2)
            offset = int(rng.integers(0, len(clip)))
            shape += looped[offset : offset + samples]
    else:
        white = rng.normal(0, 1, samples + 7)
        shape = np.convolve(white, np.ones(8) / 8, mode="valid")[:samples]
    shape /= np.sqrt(np.mean(np.square(shape)))
    if condition == "comfort-noise":
        return shape * 10 ** (-50 / 20)
    snr_db = float(condition.rsplit("-", 1)[1].removesuffix("db"))
    scaled: Signal = shape * np.sqrt(speech_power / 10 ** (snr_db / 10))
    return scaled


@dataclass(frozen=True)
class LineNoise:
    """A caller's line noise, the same for any stretch of the call asked twice (it loops every 20 s)."""

    condition: str
    loop: npt.NDArray[np.int16]

    @classmethod
    def of(cls, condition: str, clips: Sequence[npt.NDArray[np.int16]], seed: int = 11) -> LineNoise:
        """``condition``'s noise at its level against the caller's ``clips`` (8 kHz)."""
        scaled = [clip.astype(np.float64) / 32768.0 for clip in clips]
        made = noise(condition, int(_LOOP_S * RATE), scaled, active_power(scaled), seed)
        return cls(condition, np.clip(np.rint(made * 32768), -32768, 32767).astype(np.int16))

    def samples(self, first: int, count: int) -> npt.NDArray[np.int16]:
        """The noise from sample ``first`` of the call (8 kHz) for ``count`` samples."""
        taken: npt.NDArray[np.int16] = self.loop[np.arange(first, first + count) % self.loop.size]
        return taken

    def added(self, pcm: npt.NDArray[np.int16], first: int) -> npt.NDArray[np.int16]:
        """``pcm`` (from sample ``first`` of the call) with the line's noise under it."""
        mixed = pcm.astype(np.int32) + self.samples(first, pcm.size)
        clipped: npt.NDArray[np.int16] = np.clip(mixed, -32768, 32767).astype(np.int16)
        return clipped
