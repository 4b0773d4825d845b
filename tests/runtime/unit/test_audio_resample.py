"""Streaming resamplers: chunking invariance, delay-compensated lengths, passband and stopband."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.audio.resample import (
    NumpyResampler,
    PassthroughResampler,
    ResamplerKind,
    SoxrResampler,
    StreamResampler,
    make_resampler,
)
from voicebridge.errors import AudioFormatError

KINDS: tuple[ResamplerKind, ...] = ("numpy", "soxr")
SONIC_RATES = (16000, 22050, 24000, 44100, 48000)


def resample(resampler: StreamResampler, pcm: np.ndarray, cuts: list[int] | None = None) -> np.ndarray:
    bounds = [0, *sorted(cuts or []), len(pcm)]
    parts = [resampler.process(pcm[a:b]) for a, b in itertools.pairwise(bounds)]
    return np.concatenate([*parts, resampler.flush()])


def tone(frequency: float, rate: int, seconds: float, amplitude: float = 16000.0) -> np.ndarray:
    t = np.arange(round(rate * seconds)) / rate
    return np.rint(amplitude * np.sin(2 * np.pi * frequency * t)).astype(np.int16)


def level_db(signal: np.ndarray) -> float:
    rms = float(np.sqrt(np.mean(signal.astype(np.float64) ** 2)))
    return 20 * math.log10(max(rms, 1e-9))


def interior(signal: np.ndarray, rate: int) -> np.ndarray:
    """Drops 50 ms at both ends, where the filter sees the silence around the stream."""
    margin = rate // 20
    return signal[margin:-margin]


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(KINDS),
    rate=st.sampled_from(SONIC_RATES),
    seed=st.integers(0, 2**32 - 1),
    length=st.integers(0, 3000),
    cuts=st.lists(st.integers(0, 3000), max_size=12),
)
def test_any_split_of_the_input_gives_the_same_output(
    kind: ResamplerKind, rate: int, seed: int, length: int, cuts: list[int]
) -> None:
    pcm = np.random.default_rng(seed).integers(-32768, 32768, length, dtype=np.int16)
    whole = resample(make_resampler(rate, 8000, kind), pcm)
    split = resample(make_resampler(rate, 8000, kind), pcm, [c for c in cuts if c <= length])
    np.testing.assert_array_equal(split, whole)


@pytest.mark.parametrize("kind", KINDS)
def test_sample_by_sample_feeding_gives_the_same_output_as_one_piece(kind: ResamplerKind) -> None:
    pcm = tone(440, 22050, 0.05)
    one_by_one = resample(make_resampler(22050, 8000, kind), pcm, list(range(1, len(pcm))))
    np.testing.assert_array_equal(one_by_one, resample(make_resampler(22050, 8000, kind), pcm))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("rate", "length"), [(24000, 7), (24000, 2), (22050, 100), (44100, 12345), (16000, 3)])
def test_output_length_is_the_scaled_input_length_rounded_half_up(kind: ResamplerKind, rate: int, length: int) -> None:
    out = resample(make_resampler(rate, 8000, kind), np.zeros(length, dtype=np.int16))
    assert len(out) == (2 * length * 8000 + rate) // (2 * rate)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rate", SONIC_RATES)
def test_a_1khz_tone_passes_with_less_than_1db_loss(kind: ResamplerKind, rate: int) -> None:
    source = tone(1000, rate, 0.5)
    out = resample(make_resampler(rate, 8000, kind), source)
    loss = level_db(interior(source, rate)) - level_db(interior(out, 8000))
    assert abs(loss) < 1.0


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("rate", SONIC_RATES)
def test_the_filter_delay_is_compensated(kind: ResamplerKind, rate: int) -> None:
    out = resample(make_resampler(rate, 8000, kind), tone(1000, rate, 0.5))
    error = interior(out, 8000).astype(np.float64) - interior(tone(1000, 8000, 0.5), 8000)
    assert level_db(error) < level_db(interior(out, 8000)) - 40


@pytest.mark.parametrize("kind", KINDS)
def test_a_5khz_tone_at_16khz_is_attenuated_by_at_least_50db(kind: ResamplerKind) -> None:
    source = tone(5000, 16000, 0.5, amplitude=32000)
    out = resample(make_resampler(16000, 8000, kind), source)
    assert level_db(interior(out, 8000)) <= level_db(source) - 50


@pytest.mark.parametrize(
    ("rate", "frequency"),
    [(16000, 4100), (16000, 7000), (22050, 4500), (22050, 9000), (24000, 4200), (24000, 6000), (24000, 11000),
     (44100, 5000), (44100, 20000), (48000, 4100), (48000, 15000)],
)  # fmt: skip
def test_numpy_stopband_is_at_least_60db_down_above_4khz(rate: int, frequency: int) -> None:
    source = tone(frequency, rate, 0.5, amplitude=32000)
    out = resample(NumpyResampler(rate, 8000), source)
    assert level_db(interior(out, 8000)) <= level_db(source) - 60


@pytest.mark.parametrize("kind", KINDS)
def test_digital_silence_stays_digital_silence(kind: ResamplerKind) -> None:
    out = resample(make_resampler(24000, 8000, kind), np.zeros(4800, dtype=np.int16))
    assert not out.any()


@pytest.mark.parametrize("kind", KINDS)
def test_overshoot_of_a_full_scale_square_wave_clips_instead_of_wrapping(kind: ResamplerKind) -> None:
    square = np.where(tone(300, 24000, 0.2) >= 0, 32767, -32768).astype(np.int16)
    out = resample(make_resampler(24000, 8000, kind), square)
    plateau = np.sign(square[::3].astype(np.int64))[: len(out)]
    settled = np.abs(np.convolve(plateau, np.ones(9), mode="same")) == 9  # four samples or more from an edge
    assert np.all(np.sign(out[settled]) == plateau[settled])
    assert out.max() == 32767
    assert out.min() == -32768


@pytest.mark.parametrize("kind", KINDS)
def test_flush_readies_the_resampler_for_a_new_stream(kind: ResamplerKind) -> None:
    resampler = make_resampler(24000, 8000, kind)
    pcm = tone(700, 24000, 0.1)
    first = resample(resampler, pcm)
    np.testing.assert_array_equal(resample(resampler, pcm), first)


@pytest.mark.parametrize("kind", KINDS)
def test_upsampling_8khz_to_16khz_keeps_a_1khz_tone(kind: ResamplerKind) -> None:
    source = tone(1000, 8000, 0.5)
    out = resample(make_resampler(8000, 16000, kind), source)
    assert len(out) == 2 * len(source)
    assert abs(level_db(interior(out, 16000)) - level_db(interior(source, 8000))) < 1.0


@pytest.mark.parametrize("kind", KINDS)
def test_same_rate_is_a_pass_through(kind: ResamplerKind) -> None:
    resampler = make_resampler(8000, 8000, kind)
    pcm = np.random.default_rng(3).integers(-32768, 32768, 999, dtype=np.int16)
    assert isinstance(resampler, PassthroughResampler)
    np.testing.assert_array_equal(resampler.process(pcm), pcm)
    assert len(resampler.flush()) == 0


def test_numpy_resampler_at_the_same_rate_is_also_a_pass_through() -> None:
    pcm = np.arange(-500, 500, dtype=np.int16)
    np.testing.assert_array_equal(resample(NumpyResampler(16000, 16000), pcm, [13, 400]), pcm)


def test_make_resampler_builds_the_requested_kind() -> None:
    assert isinstance(make_resampler(24000, 8000, "numpy"), NumpyResampler)
    assert isinstance(make_resampler(24000, 8000, "soxr"), SoxrResampler)


def test_soxr_is_the_default_kind() -> None:
    assert isinstance(make_resampler(24000, 8000), SoxrResampler)


def test_an_unknown_kind_is_rejected() -> None:
    with pytest.raises(AudioFormatError):
        make_resampler(24000, 8000, "linear")  # type: ignore[arg-type]


@pytest.mark.parametrize(("in_rate", "out_rate"), [(0, 8000), (24000, -8000)])
@pytest.mark.parametrize("kind", KINDS)
def test_non_positive_rates_are_rejected(kind: ResamplerKind, in_rate: int, out_rate: int) -> None:
    with pytest.raises(AudioFormatError):
        make_resampler(in_rate, out_rate, kind)


def test_numpy_resampler_rejects_a_ratio_too_fine_for_its_polyphase_bank() -> None:
    with pytest.raises(AudioFormatError):
        NumpyResampler(44100, 7999)
