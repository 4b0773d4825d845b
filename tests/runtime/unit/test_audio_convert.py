"""MulawConverter: Sonic's raw chunks in any split → the same 8 kHz mono µ-law WAV that Connect plays."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.audio.convert import ConverterFinishedError, MulawConverter, SourceEncoding
from voicebridge.audio.mulaw import mulaw_encode
from voicebridge.audio.resample import ResamplerKind
from voicebridge.audio.wav import mulaw_wav_bytes, read_wav
from voicebridge.errors import AudioFormatError, VoiceBridgeError


def tone(frequency: float, rate: int, seconds: float, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(round(rate * seconds)) / rate
    return amplitude * np.sin(2 * np.pi * frequency * t)


def raw(signal: np.ndarray, encoding: SourceEncoding) -> bytes:
    """Sonic's bytes for a float signal in [-1, 1]."""
    if encoding == "pcm_f32le":
        return signal.astype("<f4").tobytes()
    pcm = np.rint(signal * 32767).astype(np.int16)
    return mulaw_encode(pcm) if encoding == "pcm_mulaw" else pcm.astype("<i2").tobytes()


def convert(
    data: bytes,
    encoding: SourceEncoding,
    rate: int,
    cuts: list[int] | None = None,
    resampler: ResamplerKind = "soxr",
) -> bytes:
    converter = MulawConverter(encoding, rate, resampler)
    bounds = [0, *sorted(cuts or []), len(data)]
    for start, end in itertools.pairwise(bounds):
        converter.feed(data[start:end])
    return converter.finish()


@settings(max_examples=60, deadline=None)
@given(
    encoding=st.sampled_from(["pcm_s16le", "pcm_f32le", "pcm_mulaw"]),
    rate=st.sampled_from([8000, 16000, 22050, 24000, 44100, 48000]),
    resampler=st.sampled_from(["soxr", "numpy"]),
    cuts=st.lists(st.integers(0, 4000), max_size=15),
)
def test_any_split_of_the_bytes_even_inside_a_sample_gives_the_same_file(
    encoding: SourceEncoding, rate: int, resampler: ResamplerKind, cuts: list[int]
) -> None:
    data = raw(tone(440, rate, 0.05), encoding)
    whole = convert(data, encoding, rate, resampler=resampler)
    assert convert(data, encoding, rate, [c for c in cuts if c <= len(data)], resampler) == whole


@pytest.mark.parametrize("encoding", ["pcm_s16le", "pcm_f32le"])
def test_odd_byte_chunks_give_the_same_file_as_one_piece(encoding: SourceEncoding) -> None:
    data = raw(tone(300, 24000, 0.2), encoding)
    odd_cuts = list(range(3, len(data), 7))
    assert convert(data, encoding, 24000, odd_cuts) == convert(data, encoding, 24000)


def test_mulaw_at_8khz_is_copied_into_the_file_untouched() -> None:
    data = bytes(range(256)) * 3
    assert convert(data, "pcm_mulaw", 8000, [1, 100, 101]) == mulaw_wav_bytes(data)


def test_s16le_at_8khz_is_encoded_sample_for_sample() -> None:
    pcm = np.random.default_rng(9).integers(-32768, 32768, 1001, dtype=np.int16)
    assert convert(pcm.astype("<i2").tobytes(), "pcm_s16le", 8000) == mulaw_wav_bytes(mulaw_encode(pcm))


def test_f32le_beyond_full_scale_is_clipped_rather_than_wrapped() -> None:
    data = np.array([2.0, -2.0, 1.0, -1.0, 0.5], dtype="<f4").tobytes()
    expected = mulaw_encode(np.array([32767, -32768, 32767, -32768, 16384], dtype=np.int16))
    assert convert(data, "pcm_f32le", 8000) == mulaw_wav_bytes(expected)


def test_f32le_nan_becomes_silence() -> None:
    data = np.array([np.nan, 0.5, np.inf, -np.inf], dtype="<f4").tobytes()
    expected = mulaw_encode(np.array([0, 16384, 32767, -32768], dtype=np.int16))
    assert convert(data, "pcm_f32le", 8000) == mulaw_wav_bytes(expected)


@pytest.mark.parametrize("resampler", ["soxr", "numpy"])
@pytest.mark.parametrize("rate", [16000, 22050, 24000, 44100, 48000])
def test_one_second_at_any_rate_becomes_8000_samples_and_1000_ms(resampler: ResamplerKind, rate: int) -> None:
    converter = MulawConverter("pcm_s16le", rate, resampler)
    converter.feed(raw(tone(1000, rate, 1.0), "pcm_s16le"))
    wav = converter.finish()
    assert (converter.samples_out, converter.duration_ms) == (8000, 1000.0)
    assert len(wav) == 58 + 8000


def test_samples_out_grows_while_chunks_arrive() -> None:
    converter = MulawConverter("pcm_mulaw", 8000)
    converter.feed(bytes(160))
    assert (converter.samples_out, converter.duration_ms) == (160, 20.0)


@pytest.mark.parametrize("resampler", ["soxr", "numpy"])
def test_a_1khz_tone_comes_out_at_8khz_with_its_level_and_frequency(resampler: ResamplerKind) -> None:
    wav = convert(raw(tone(1000, 24000, 0.5), "pcm_s16le"), "pcm_s16le", 24000, resampler=resampler)
    samples, rate = read_wav(wav)
    body = samples[400:-400].astype(np.float64) / 32767
    spectrum = np.abs(np.fft.rfft(body * np.hanning(len(body))))
    assert rate == 8000
    assert np.fft.rfftfreq(len(body), 1 / 8000)[spectrum.argmax()] == pytest.approx(1000, abs=5)
    assert 20 * np.log10(np.sqrt(np.mean(body**2)) * np.sqrt(2) / 0.5) == pytest.approx(0, abs=0.5)


def test_ffprobe_reads_the_converted_file_as_8khz_mono_pcm_mulaw_of_the_right_duration() -> None:
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        pytest.skip("ffprobe is not installed")
    wav = convert(raw(tone(500, 22050, 1.5), "pcm_s16le"), "pcm_s16le", 22050, list(range(441, 66150, 441)))
    result = subprocess.run(
        [
            ffprobe,
            "-v",
            "error",
            "-show_entries",
            "stream=codec_name,sample_rate,channels,duration",
            "-of",
            "json",
            "-",
        ],
        input=wav,
        capture_output=True,
        check=True,
        timeout=20,
    )
    stream = json.loads(result.stdout)["streams"][0]
    assert (stream["codec_name"], stream["sample_rate"], stream["channels"]) == ("pcm_mulaw", "8000", 1)
    assert float(stream["duration"]) == pytest.approx(1.5, abs=0.001)


def test_an_unsupported_encoding_is_a_typed_format_error() -> None:
    with pytest.raises(AudioFormatError, match="encoding"):
        MulawConverter("pcm_alaw", 8000)  # type: ignore[arg-type]


def test_an_unsupported_rate_is_a_typed_format_error() -> None:
    with pytest.raises(AudioFormatError, match="rate"):
        MulawConverter("pcm_s16le", 11025)


def test_the_format_error_is_a_value_error_with_a_stable_code() -> None:
    error = AudioFormatError("x")
    assert isinstance(error, ValueError)
    assert isinstance(error, VoiceBridgeError)
    assert error.code == "AudioFormatError"


def test_a_stream_that_ends_inside_a_sample_is_a_format_error() -> None:
    converter = MulawConverter("pcm_f32le", 24000)
    converter.feed(bytes(4 * 480 + 3))
    with pytest.raises(AudioFormatError, match="inside a sample"):
        converter.finish()


def test_a_finished_converter_takes_no_more_audio() -> None:
    converter = MulawConverter("pcm_s16le", 16000)
    converter.finish()
    with pytest.raises(ConverterFinishedError):
        converter.feed(bytes(2))
    with pytest.raises(ConverterFinishedError):
        converter.finish()


def test_an_empty_stream_makes_an_empty_but_valid_file() -> None:
    samples, rate = read_wav(MulawConverter("pcm_s16le", 24000).finish())
    assert (len(samples), rate) == (0, 8000)
