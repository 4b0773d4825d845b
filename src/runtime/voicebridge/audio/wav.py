"""RIFF/WAVE files: the µ-law prompts Amazon Connect plays, plain PCM16 recordings, and a reader for both.

Layout of a µ-law prompt (all integers little-endian; 58 bytes before the samples)::

    "RIFF" <riff size>  "WAVE"
    "fmt " 18           format tag 7 (WAVE_FORMAT_MULAW), 1 channel, 8000 Hz, 8000 bytes/s,
                        block align 1, 8 bits per sample, cbSize 0
    "fact" 4            sample count
    "data" <data size>  one byte per sample, then a pad byte if the size is odd

Every chunk is padded to an even length: the pad byte is not counted in the chunk's size, but is in the RIFF
size.

Writing a µ-law prompt needs nothing but :mod:`struct`; numpy is imported only where samples are arrays, so the
long-poll functions, which store a short silent prompt and ship without numpy, can write one.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from voicebridge.errors import AudioFormatError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["MULAW_RATE", "mulaw_wav_bytes", "mulaw_wav_header", "pcm16_wav_bytes", "read_wav"]

MULAW_RATE = 8000

_WAVE_FORMAT_PCM = 0x0001
_WAVE_FORMAT_MULAW = 0x0007
_WAVE_FORMAT_EXTENSIBLE = 0xFFFE
_MULAW_HEADER_LEN = 58
_MAX_RIFF_SIZE = 0xFFFFFFFF
# Writers that cannot seek back (pipes) leave the data size at its maximum: the samples run to the end.
_UNKNOWN_SIZE = 0xFFFFFFFF


def _pad(length: int) -> int:
    return length & 1


def mulaw_wav_header(data_len: int) -> bytes:
    """The 58 header bytes of an 8 kHz mono µ-law WAV holding ``data_len`` samples.

    The caller writes the samples after it, then one zero pad byte when ``data_len`` is odd.
    """
    riff_size = _MULAW_HEADER_LEN - 8 + data_len + _pad(data_len)
    if data_len < 0 or riff_size > _MAX_RIFF_SIZE:
        raise AudioFormatError(f"µ-law data length {data_len} does not fit a WAV file")
    return b"".join(
        (
            struct.pack("<4sI4s", b"RIFF", riff_size, b"WAVE"),
            struct.pack("<4sIHHIIHHH", b"fmt ", 18, _WAVE_FORMAT_MULAW, 1, MULAW_RATE, MULAW_RATE, 1, 8, 0),
            struct.pack("<4sII", b"fact", 4, data_len),
            struct.pack("<4sI", b"data", data_len),
        )
    )


def mulaw_wav_bytes(data: bytes | bytearray | memoryview) -> bytes:
    """A complete 8 kHz mono µ-law WAV file around ``data`` (µ-law bytes, one per sample)."""
    length = len(data)
    return b"".join((mulaw_wav_header(length), data, b"\x00" * _pad(length)))


def pcm16_wav_bytes(pcm: NDArray[np.int16], rate: int, channels: int = 1) -> bytes:
    """A PCM WAV file (format tag 1, 16 bits) of int16 samples, interleaved or ``(frames, channels)``."""
    import numpy as np

    samples = np.asarray(pcm)
    if samples.dtype != np.int16:
        raise AudioFormatError(f"PCM16 WAV needs int16 samples, got {samples.dtype}")
    if channels < 1 or rate <= 0:
        raise AudioFormatError(f"invalid WAV layout: {channels} channels at {rate} Hz")
    if samples.ndim == 2 and samples.shape[1] != channels:
        raise AudioFormatError(f"samples have {samples.shape[1]} channels, {channels} declared")
    if samples.ndim > 2 or samples.size % channels:
        raise AudioFormatError(f"{samples.size} samples do not make whole frames of {channels} channels")
    data = samples.astype("<i2", copy=False).tobytes()
    block_align = 2 * channels
    riff_size = 4 + 24 + 8 + len(data)
    if riff_size > _MAX_RIFF_SIZE:
        raise AudioFormatError(f"{len(data)} bytes of PCM do not fit a WAV file")
    return b"".join(
        (
            struct.pack("<4sI4s", b"RIFF", riff_size, b"WAVE"),
            struct.pack(
                "<4sIHHIIHH",
                b"fmt ",
                16,
                _WAVE_FORMAT_PCM,
                channels,
                rate,
                rate * block_align,
                block_align,
                16,
            ),
            struct.pack("<4sI", b"data", len(data)),
            data,
        )
    )


def read_wav(data: bytes | bytearray | memoryview) -> tuple[NDArray[np.int16], int]:
    """Read a PCM16 or µ-law WAV as ``(samples, rate)``: int16, shaped ``(frames,)`` or ``(frames, ch)``.

    µ-law samples are decoded to linear int16. Chunks other than ``fmt `` and ``data`` are skipped.
    """
    view = memoryview(data).cast("B")
    if len(view) < 12 or bytes(view[0:4]) != b"RIFF" or bytes(view[8:12]) != b"WAVE":
        raise AudioFormatError("not a RIFF/WAVE file")
    offset = 12
    fmt: tuple[int, int, int, int] | None = None
    while offset + 8 <= len(view):
        chunk_id = bytes(view[offset : offset + 4])
        (size,) = struct.unpack_from("<I", view, offset + 4)
        body = offset + 8
        if chunk_id == b"fmt ":
            fmt = _parse_fmt(view[body : body + size], size)
        elif chunk_id == b"data":
            if fmt is None:
                raise AudioFormatError("WAV data chunk comes before its fmt chunk")
            end = len(view) if size == _UNKNOWN_SIZE else body + size
            if end > len(view):
                raise AudioFormatError(f"WAV data chunk declares {size} bytes, {len(view) - body} present")
            return _decode_samples(view[body:end], fmt)
        offset = body + size + _pad(size)
    raise AudioFormatError("WAV file has no data chunk" if fmt is not None else "WAV file has no fmt chunk")


def _parse_fmt(body: memoryview, size: int) -> tuple[int, int, int, int]:
    if size < 16 or len(body) < 16:
        raise AudioFormatError(f"WAV fmt chunk too short ({size} bytes)")
    tag, channels, rate, _byte_rate, _block_align, bits = struct.unpack_from("<HHIIHH", body)
    if tag == _WAVE_FORMAT_EXTENSIBLE:
        # The sub-format GUID (after cbSize, valid bits, channel mask) starts with the plain format tag.
        if len(body) < 26:
            raise AudioFormatError("WAVE_FORMAT_EXTENSIBLE fmt chunk too short")
        (tag,) = struct.unpack_from("<H", body, 24)
    if channels < 1 or rate <= 0:
        raise AudioFormatError(f"invalid WAV layout: {channels} channels at {rate} Hz")
    return tag, channels, rate, bits


def _decode_samples(body: memoryview, fmt: tuple[int, int, int, int]) -> tuple[NDArray[np.int16], int]:
    import numpy as np

    from voicebridge.audio.mulaw import DECODE_TABLE

    tag, channels, rate, bits = fmt
    if tag == _WAVE_FORMAT_PCM and bits == 16:
        frame_bytes = 2 * channels
    elif tag == _WAVE_FORMAT_MULAW and bits == 8:
        frame_bytes = channels
    else:
        raise AudioFormatError(f"unsupported WAV encoding: format tag {tag:#06x}, {bits} bits")
    if len(body) % frame_bytes:
        raise AudioFormatError(f"WAV data of {len(body)} bytes ends inside a frame")
    if tag == _WAVE_FORMAT_PCM:
        samples = np.frombuffer(body, dtype="<i2").astype(np.int16)
    else:
        samples = DECODE_TABLE[np.frombuffer(body, dtype=np.uint8)]
    if channels > 1:
        samples = samples.reshape(-1, channels)
    return samples, rate
