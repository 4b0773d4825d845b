"""G.711 µ-law companding (ITU-T G.711, the µ-law half), vectorised with numpy.

Encoding is bit-exact with the classic ``linear2ulaw`` of the public-domain Sun ``g711.c`` family: the 16-bit
sample's magnitude is clipped to 32635, biased by 0x84 (132), split into a 3-bit segment (exponent) and a
4-bit mantissa, and the sign|segment|mantissa byte is bit-inverted, so 0 → 0xFF, 32767 → 0x80, -32768 → 0x00.
Decoding is the matching ``ulaw2linear``: 0x80 → 32124, 0x00 → -32124, 0xFF and 0x7F → 0.

Both directions are table look-ups: encoding indexes a 65,536-entry table with the samples' bit patterns
(their ``uint16`` view), so one chunk costs one gather and no arithmetic per sample.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

__all__ = ["DECODE_TABLE", "ENCODE_TABLE", "mulaw_decode", "mulaw_encode"]

_BIAS = 0x84
_CLIP = 32635


def _build_encode_table() -> NDArray[np.uint8]:
    # Entry i is the code of the int16 whose bit pattern is i (two's complement, as the uint16 view sees it).
    linear = np.arange(65536, dtype=np.uint16).view(np.int16).astype(np.int32)
    sign = np.where(linear < 0, 0x80, 0x00)
    biased = np.minimum(np.abs(linear), _CLIP) + _BIAS
    # The segment is the position of the leading one above bit 7: biased lies in [2**(7+seg), 2**(8+seg)).
    _, exponent = np.frexp(biased)
    segment = exponent.astype(np.int32) - 8
    mantissa = (biased >> (segment + 3)) & 0x0F
    code = ~(sign | (segment << 4) | mantissa) & 0xFF
    table: NDArray[np.uint8] = code.astype(np.uint8)
    table.setflags(write=False)
    return table


def _build_decode_table() -> NDArray[np.int16]:
    inverted = ~np.arange(256, dtype=np.int32) & 0xFF
    segment = (inverted >> 4) & 0x07
    magnitude = ((((inverted & 0x0F) << 3) + _BIAS) << segment) - _BIAS
    table = np.where(inverted & 0x80, -magnitude, magnitude).astype(np.int16)
    table.setflags(write=False)
    return table


ENCODE_TABLE: NDArray[np.uint8] = _build_encode_table()
"""µ-law code of every int16, indexed by the sample's ``uint16`` bit pattern (read-only)."""

DECODE_TABLE: NDArray[np.int16] = _build_decode_table()
"""Linear int16 value of every µ-law code (read-only)."""


def mulaw_encode(pcm: NDArray[np.int16]) -> bytes:
    """Encode int16 samples to µ-law bytes, one byte per sample.

    >>> mulaw_encode(np.array([0, 32767, -32768], dtype=np.int16))
    b'\\xff\\x80\\x00'
    """
    samples = np.ascontiguousarray(pcm, dtype=np.int16)
    return ENCODE_TABLE.take(samples.view(np.uint16)).tobytes()


def mulaw_decode(data: bytes | bytearray | memoryview) -> NDArray[np.int16]:
    """Decode µ-law bytes to int16 samples.

    >>> mulaw_decode(b'\\xff\\x80\\x00').tolist()
    [0, 32124, -32124]
    """
    decoded: NDArray[np.int16] = DECODE_TABLE[np.frombuffer(data, dtype=np.uint8)]
    return decoded
