"""The raw audio encodings Ink accepts, decoded to float samples, and the level of a frame."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

Samples = npt.NDArray[np.float32]

BYTES_PER_SAMPLE: dict[str, int] = {
    "pcm_s16le": 2,
    "pcm_s32le": 4,
    "pcm_f16le": 2,
    "pcm_f32le": 4,
    "pcm_mulaw": 1,
    "pcm_alaw": 1,
}


def _g711_tables() -> tuple[Samples, Samples]:
    codes = np.arange(256, dtype=np.int32)
    inverted = ~codes & 0xFF
    exponent = (inverted >> 4) & 0x07
    mantissa = inverted & 0x0F
    magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
    mulaw = np.where(inverted & 0x80, -magnitude, magnitude)
    toggled = codes ^ 0x55
    exponent = (toggled >> 4) & 0x07
    mantissa = toggled & 0x0F
    magnitude = np.where(exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << np.maximum(exponent - 1, 0))
    alaw = np.where(toggled & 0x80, magnitude, -magnitude)
    return (mulaw / 32768.0).astype(np.float32), (alaw / 32768.0).astype(np.float32)


_MULAW, _ALAW = _g711_tables()


def decode(encoding: str, data: bytes) -> Samples:
    """Whole samples of ``data`` as float32 in [-1, 1]."""
    width = BYTES_PER_SAMPLE[encoding]
    data = data[: len(data) // width * width]
    if encoding == "pcm_s16le":
        return np.frombuffer(data, "<i2").astype(np.float32) / np.float32(32768.0)
    if encoding == "pcm_s32le":
        return (np.frombuffer(data, "<i4").astype(np.float64) / 2.0**31).astype(np.float32)
    if encoding == "pcm_f16le":
        return np.frombuffer(data, "<f2").astype(np.float32)
    if encoding == "pcm_f32le":
        return np.frombuffer(data, "<f4").astype(np.float32)
    table = _MULAW if encoding == "pcm_mulaw" else _ALAW
    return table[np.frombuffer(data, np.uint8)]


def as_s16le(encoding: str, data: bytes) -> bytes:
    """The audio as 16-bit PCM; s16le passes through byte for byte so registered clips still match exactly."""
    if encoding == "pcm_s16le":
        return data[: len(data) // 2 * 2]
    return (np.clip(decode(encoding, data), -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


DIGITAL_SILENCE_DBFS = -120.0
"""The level of a frame with no signal in it (under 1e-6 RMS: zeros, at 16 bits)."""


def frame_levels(samples: Samples, frame_len: int) -> list[float]:
    """The level (dBFS) of each whole frame of ``frame_len`` samples: its RMS in decibels, or
    :data:`DIGITAL_SILENCE_DBFS` for a frame without signal. The mean squares are one numpy pass over every frame."""
    frames = samples[: samples.size // frame_len * frame_len].reshape(-1, frame_len)
    mean_squares: list[float] = np.mean(np.square(frames, dtype=np.float64), axis=1).tolist()
    return [_dbfs(math.sqrt(mean_square)) for mean_square in mean_squares]


def _dbfs(rms: float) -> float:
    return 20.0 * math.log10(rms) if rms > 1e-6 else DIGITAL_SILENCE_DBFS
