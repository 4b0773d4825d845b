"""Sonic's raw audio chunks → one 8 kHz mono µ-law WAV, converted chunk by chunk while the stream arrives.

Sonic's ``raw`` container carries headerless samples in the requested ``output_format``: ``pcm_s16le``
(int16), ``pcm_f32le`` (float32 in [-1, 1]) or ``pcm_mulaw`` (G.711 bytes), all little-endian and mono, at one
of the documented sample rates. A chunk (≤ 20 ms) may end inside a sample: the tail waits for the next chunk.

Per chunk: bytes → int16 → streaming resample to 8 kHz → µ-law table look-up → append. ``pcm_mulaw`` at
8 kHz is already what Connect plays and is appended untouched. :meth:`MulawConverter.finish` flushes the
resampler and returns the whole file (see :mod:`voicebridge.audio.wav` for its layout).
"""

from __future__ import annotations

from typing import Literal, get_args

import numpy as np
from numpy.typing import NDArray

from voicebridge.audio.mulaw import DECODE_TABLE, ENCODE_TABLE
from voicebridge.audio.resample import ResamplerKind, StreamResampler, make_resampler
from voicebridge.audio.wav import MULAW_RATE, mulaw_wav_bytes
from voicebridge.errors import AudioFormatError

__all__ = ["SOURCE_ENCODINGS", "SOURCE_RATES", "ConverterFinishedError", "MulawConverter", "SourceEncoding"]

SourceEncoding = Literal["pcm_s16le", "pcm_f32le", "pcm_mulaw"]
SOURCE_ENCODINGS: frozenset[str] = frozenset(get_args(SourceEncoding))
SOURCE_RATES: frozenset[int] = frozenset({8000, 16000, 22050, 24000, 44100, 48000})
"""The sample rates Sonic's raw output format offers."""


class ConverterFinishedError(RuntimeError):
    """A converter was fed or finished again after :meth:`MulawConverter.finish` returned its file."""


_SAMPLE_WIDTH: dict[str, int] = {"pcm_s16le": 2, "pcm_f32le": 4, "pcm_mulaw": 1}
_DTYPE: dict[str, np.dtype[np.generic]] = {
    "pcm_s16le": np.dtype("<i2"),
    "pcm_f32le": np.dtype("<f4"),
    "pcm_mulaw": np.dtype(np.uint8),
}
_FLOAT_SCALE = np.float32(32768.0)


class MulawConverter:
    """Streaming converter of one synthesis to an 8 kHz mono µ-law WAV file.

    >>> converter = MulawConverter("pcm_s16le", 16000)
    >>> converter.feed(bytes(640))  # 20 ms of silence
    >>> wav = converter.finish()
    >>> converter.samples_out, converter.duration_ms, len(wav)
    (160, 20.0, 218)
    """

    def __init__(self, source_encoding: SourceEncoding, source_rate: int, resampler: ResamplerKind = "soxr") -> None:
        if source_encoding not in SOURCE_ENCODINGS:
            raise AudioFormatError(f"unsupported source encoding {source_encoding!r}")
        if source_rate not in SOURCE_RATES:
            raise AudioFormatError(f"unsupported source sample rate {source_rate}")
        self.source_encoding = source_encoding
        self.source_rate = source_rate
        self._width = _SAMPLE_WIDTH[source_encoding]
        self._dtype = _DTYPE[source_encoding]
        self._copy_through = source_encoding == "pcm_mulaw" and source_rate == MULAW_RATE
        self._resampler: StreamResampler = make_resampler(source_rate, MULAW_RATE, resampler)
        self._partial = b""
        self._data = bytearray()
        self._finished = False

    @property
    def samples_out(self) -> int:
        """µ-law samples produced so far (all of them once :meth:`finish` has run)."""
        return len(self._data)

    @property
    def duration_ms(self) -> float:
        """Duration of the samples produced so far, in milliseconds."""
        return len(self._data) * 1000 / MULAW_RATE

    def feed(self, raw: bytes | bytearray | memoryview) -> None:
        """Convert the next chunk of source bytes and append it to the file's data."""
        if self._finished:
            raise ConverterFinishedError("the converter has already finished its file")
        if self._copy_through:
            self._data += raw
            return
        if self._partial:
            raw = self._partial + bytes(raw)
        whole = len(raw) - len(raw) % self._width
        self._partial = bytes(raw[whole:])
        if whole:
            samples = np.frombuffer(raw, dtype=self._dtype, count=whole // self._width)
            self._append(self._resampler.process(self._to_int16(samples)))

    def finish(self) -> bytes:
        """Flush the resampler and return the complete WAV file (header, µ-law data, pad byte)."""
        if self._finished:
            raise ConverterFinishedError("the converter has already finished its file")
        self._finished = True
        if self._partial:
            raise AudioFormatError(
                f"{self.source_encoding} stream ended inside a sample ({len(self._partial)} stray bytes)"
            )
        if not self._copy_through:
            self._append(self._resampler.flush())
        return mulaw_wav_bytes(self._data)

    def _to_int16(self, samples: NDArray[np.generic]) -> NDArray[np.int16]:
        if self.source_encoding == "pcm_s16le":
            return samples.astype(np.int16, copy=False)
        if self.source_encoding == "pcm_mulaw":
            decoded: NDArray[np.int16] = DECODE_TABLE[samples]
            return decoded
        scaled = samples.astype(np.float32) * _FLOAT_SCALE
        # A NaN would cast to an arbitrary int16 (a click at full scale): it becomes silence instead.
        np.nan_to_num(scaled, copy=False)
        np.rint(scaled, out=scaled)
        np.clip(scaled, -32768.0, 32767.0, out=scaled)
        return scaled.astype(np.int16)

    def _append(self, pcm: NDArray[np.int16]) -> None:
        encoded = ENCODE_TABLE.take(pcm.view(np.uint16))
        # Through its memoryview: `bytearray += ndarray` would dispatch to numpy's element-wise addition.
        self._data += encoded.data
