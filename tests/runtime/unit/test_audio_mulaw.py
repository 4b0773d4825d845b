"""G.711 µ-law: table codec against a scalar transcription of the reference algorithm, on every input."""

from __future__ import annotations

import numpy as np
import pytest

from voicebridge.audio.mulaw import DECODE_TABLE, ENCODE_TABLE, mulaw_decode, mulaw_encode

BIAS = 0x84
CLIP = 32635
SEGMENT_ENDS = (0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF, 0x3FFF, 0x7FFF)
ALL_INT16 = np.arange(-32768, 32768, dtype=np.int64)


def reference_linear_to_ulaw(sample: int) -> int:
    """Sun g711.c ``linear2ulaw`` (16-bit input, BIAS 0x84, CLIP 32635), one sample at a time."""
    sign = 0x80 if sample < 0 else 0x00
    magnitude = min(-sample if sample < 0 else sample, CLIP) + BIAS
    segment = next(index for index, end in enumerate(SEGMENT_ENDS) if magnitude <= end)
    mantissa = (magnitude >> (segment + 3)) & 0x0F
    return ~(sign | (segment << 4) | mantissa) & 0xFF


def reference_ulaw_to_linear(code: int) -> int:
    """Sun g711.c ``ulaw2linear``, one code at a time."""
    code = ~code & 0xFF
    magnitude = ((((code & 0x0F) << 3) + BIAS) << ((code & 0x70) >> 4)) - BIAS
    return -magnitude if code & 0x80 else magnitude


def encode_all() -> np.ndarray:
    return np.frombuffer(mulaw_encode(ALL_INT16.astype(np.int16)), dtype=np.uint8)


def test_encoding_matches_the_reference_for_every_int16() -> None:
    expected = np.array([reference_linear_to_ulaw(int(s)) for s in ALL_INT16], dtype=np.uint8)
    np.testing.assert_array_equal(encode_all(), expected)


def test_decoding_matches_the_reference_for_every_code() -> None:
    expected = np.array([reference_ulaw_to_linear(code) for code in range(256)], dtype=np.int16)
    np.testing.assert_array_equal(mulaw_decode(bytes(range(256))), expected)


@pytest.mark.parametrize(
    ("sample", "code"),
    [
        (0, 0xFF),
        (1, 0xFF),
        (-1, 0x7F),
        (100, 0xF2),
        (-100, 0x72),
        (32124, 0x80),
        (32767, 0x80),
        (-32124, 0x00),
        (-32768, 0x00),
    ],
)
def test_known_samples_encode_to_their_table_codes(sample: int, code: int) -> None:
    assert mulaw_encode(np.array([sample], dtype=np.int16)) == bytes([code])


@pytest.mark.parametrize(("code", "sample"), [(0xFF, 0), (0x7F, 0), (0x80, 32124), (0x00, -32124), (0xF2, 104)])
def test_known_codes_decode_to_their_table_samples(code: int, sample: int) -> None:
    assert mulaw_decode(bytes([code])).tolist() == [sample]


def test_encoding_a_decoded_code_gives_the_code_back_except_negative_zero() -> None:
    codes = np.arange(256, dtype=np.uint8)
    again = np.frombuffer(mulaw_encode(DECODE_TABLE[codes]), dtype=np.uint8)
    expected = codes.copy()
    expected[0x7F] = 0xFF  # both zeros decode to 0, which encodes as positive zero
    np.testing.assert_array_equal(again, expected)


def test_round_trip_error_is_at_most_half_a_quantisation_step_below_the_clip_level() -> None:
    inside = ALL_INT16[np.abs(ALL_INT16) <= CLIP]
    codes = np.frombuffer(mulaw_encode(inside.astype(np.int16)), dtype=np.uint8)
    segment = ((~codes & 0xFF) >> 4) & 0x07
    half_step = 4 << segment.astype(np.int64)
    error = np.abs(DECODE_TABLE[codes].astype(np.int64) - inside)
    assert np.all(error <= half_step)


def test_samples_beyond_the_clip_level_saturate_to_the_extreme_codes() -> None:
    loud = np.array([32636, 32700, 32767, -32636, -32700, -32768], dtype=np.int16)
    assert mulaw_encode(loud) == b"\x80\x80\x80\x00\x00\x00"


def test_round_trip_is_monotonic_in_the_input() -> None:
    decoded = DECODE_TABLE[encode_all()].astype(np.int64)
    assert np.all(np.diff(decoded) >= 0)


def test_encoding_a_strided_view_equals_encoding_its_copy() -> None:
    samples = np.arange(-30000, 30000, 7, dtype=np.int16)
    assert mulaw_encode(samples[::3]) == mulaw_encode(samples[::3].copy())


def test_one_byte_per_sample_in_both_directions() -> None:
    samples = np.zeros(321, dtype=np.int16)
    assert len(mulaw_encode(samples)) == 321
    assert mulaw_decode(bytes(321)).shape == (321,)


def test_tables_are_read_only() -> None:
    with pytest.raises(ValueError):
        ENCODE_TABLE[0] = 0
    with pytest.raises(ValueError):
        DECODE_TABLE[0] = 1
