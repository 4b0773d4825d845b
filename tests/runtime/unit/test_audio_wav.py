"""WAV files: the µ-law header byte for byte, PCM16 files and the reader, checked by independent tools."""

from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import wave

import numpy as np
import pytest

from voicebridge.audio.wav import mulaw_wav_bytes, mulaw_wav_header, pcm16_wav_bytes, read_wav
from voicebridge.errors import AudioFormatError


def le32(value: int) -> bytes:
    return value.to_bytes(4, "little")


def le16(value: int) -> bytes:
    return value.to_bytes(2, "little")


def ffprobe_stream(data: bytes) -> dict[str, object]:
    ffprobe = shutil.which("ffprobe")
    if ffprobe is None:
        pytest.skip("ffprobe is not installed")
    entries = "stream=codec_name,sample_rate,channels,duration"
    result = subprocess.run(
        [ffprobe, "-v", "error", "-show_entries", entries, "-of", "json", "-i", "pipe:0"],
        input=data,
        capture_output=True,
        check=True,
        timeout=20,
    )
    stream: dict[str, object] = json.loads(result.stdout)["streams"][0]
    return stream


def test_mulaw_header_lays_out_riff_fmt_fact_and_data_chunks() -> None:
    assert mulaw_wav_header(1000) == (
        b"RIFF" + le32(50 + 1000) + b"WAVE"
        + b"fmt " + le32(18)
        + le16(7) + le16(1) + le32(8000) + le32(8000) + le16(1) + le16(8) + le16(0)
        + b"fact" + le32(4) + le32(1000)
        + b"data" + le32(1000)
    )  # fmt: skip


def test_mulaw_header_is_58_bytes() -> None:
    assert len(mulaw_wav_header(0)) == 58


def test_odd_data_length_counts_the_pad_byte_in_the_riff_size_only() -> None:
    header = mulaw_wav_header(1001)
    assert struct.unpack_from("<I", header, 4)[0] == 50 + 1001 + 1
    assert struct.unpack_from("<I", header, 54)[0] == 1001


def test_mulaw_file_appends_a_pad_byte_after_odd_data() -> None:
    assert mulaw_wav_bytes(b"\x01\x02\x03") == mulaw_wav_header(3) + b"\x01\x02\x03\x00"
    assert mulaw_wav_bytes(b"\x01\x02") == mulaw_wav_header(2) + b"\x01\x02"


@pytest.mark.parametrize("length", [-1, 0xFFFFFFFF])
def test_mulaw_header_rejects_lengths_a_wav_cannot_hold(length: int) -> None:
    with pytest.raises(AudioFormatError):
        mulaw_wav_header(length)


def test_ffprobe_reads_a_mulaw_file_as_8khz_mono_pcm_mulaw_of_the_right_duration() -> None:
    stream = ffprobe_stream(mulaw_wav_bytes(bytes(12001)))
    assert (stream["codec_name"], stream["sample_rate"], stream["channels"]) == ("pcm_mulaw", "8000", 1)
    assert float(str(stream["duration"])) == pytest.approx(12001 / 8000, abs=1e-3)


def test_ffmpeg_decodes_every_mulaw_code_as_the_reader_does() -> None:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        pytest.skip("ffmpeg is not installed")
    wav = mulaw_wav_bytes(bytes(range(256)))
    result = subprocess.run(
        [ffmpeg, "-v", "error", "-i", "pipe:0", "-f", "s16le", "pipe:1"],
        input=wav, capture_output=True, check=True, timeout=20,
    )  # fmt: skip
    samples, _ = read_wav(wav)
    np.testing.assert_array_equal(np.frombuffer(result.stdout, dtype="<i2"), samples)


def test_pcm16_file_lays_out_a_plain_pcm_fmt_chunk() -> None:
    data = pcm16_wav_bytes(np.array([[1, -1], [2, -2]], dtype=np.int16), 16000, channels=2)
    assert data[:12] == b"RIFF" + le32(36 + 8) + b"WAVE"
    assert data[12:36] == b"fmt " + le32(16) + le16(1) + le16(2) + le32(16000) + le32(64000) + le16(4) + le16(16)
    assert data[36:] == b"data" + le32(8) + struct.pack("<4h", 1, -1, 2, -2)


def test_the_standard_library_reads_a_pcm16_file_back() -> None:
    pcm = np.arange(-3000, 3000, 3, dtype=np.int16)
    with wave.open(io.BytesIO(pcm16_wav_bytes(pcm, 22050))) as reader:
        assert (reader.getnchannels(), reader.getsampwidth(), reader.getframerate()) == (1, 2, 22050)
        frames = reader.readframes(reader.getnframes())
    np.testing.assert_array_equal(np.frombuffer(frames, dtype="<i2"), pcm)


def test_reader_reads_a_file_the_standard_library_wrote() -> None:
    pcm = np.arange(-200, 200, dtype=np.int16).reshape(-1, 2)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as writer:
        writer.setnchannels(2)
        writer.setsampwidth(2)
        writer.setframerate(44100)
        writer.writeframes(pcm.astype("<i2").tobytes())
    samples, rate = read_wav(buffer.getvalue())
    assert rate == 44100
    np.testing.assert_array_equal(samples, pcm)


def test_reader_decodes_mulaw_data_to_linear_samples() -> None:
    samples, rate = read_wav(mulaw_wav_bytes(b"\xff\x80\x00\x7f\xf2"))
    assert rate == 8000
    assert samples.dtype == np.int16
    assert samples.tolist() == [0, 32124, -32124, 0, 104]


def test_reader_round_trips_mono_pcm16() -> None:
    pcm = np.random.default_rng(5).integers(-32768, 32768, 777, dtype=np.int16)
    samples, rate = read_wav(pcm16_wav_bytes(pcm, 24000))
    assert rate == 24000
    np.testing.assert_array_equal(samples, pcm)


def test_reader_skips_unknown_chunks_including_their_pad_byte() -> None:
    wav = mulaw_wav_bytes(bytes([0x80] * 4))
    odd_chunk = b"LIST" + le32(3) + b"abc" + b"\x00"
    samples, _ = read_wav(wav[:12] + odd_chunk + wav[12:])
    assert samples.tolist() == [32124] * 4


def test_reader_takes_the_samples_to_the_end_when_a_streamed_file_left_the_size_unknown() -> None:
    wav = bytearray(mulaw_wav_bytes(bytes([0x00] * 6)))
    struct.pack_into("<I", wav, 54, 0xFFFFFFFF)
    samples, _ = read_wav(bytes(wav))
    assert samples.tolist() == [-32124] * 6


def test_reader_accepts_wave_format_extensible_pcm() -> None:
    pcm = np.array([5, -5, 7], dtype=np.int16)
    guid_pcm = le16(1) + bytes.fromhex("000000001000800000aa00389b71")
    fmt = le16(0xFFFE) + le16(1) + le32(8000) + le32(16000) + le16(2) + le16(16) + le16(22) + le16(16)
    fmt += le32(4) + guid_pcm
    body = b"WAVE" + b"fmt " + le32(len(fmt)) + fmt + b"data" + le32(6) + pcm.astype("<i2").tobytes()
    samples, rate = read_wav(b"RIFF" + le32(len(body)) + body)
    assert rate == 8000
    np.testing.assert_array_equal(samples, pcm)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"RIFX" + bytes(8), "not a RIFF/WAVE file"),
        (b"RIFF" + le32(4) + b"WAVE", "no fmt chunk"),
        (mulaw_wav_bytes(b"\x00\x00")[:50], "no data chunk"),
        (b"RIFF" + le32(12) + b"WAVE" + b"data" + le32(0), "before its fmt chunk"),
        (mulaw_wav_bytes(bytes(10))[:-3], "declares 10 bytes"),
        (pcm16_wav_bytes(np.zeros(3, dtype=np.int16), 8000)[:-1], "declares 6 bytes"),
    ],
)
def test_reader_rejects_malformed_files_saying_why(data: bytes, reason: str) -> None:
    with pytest.raises(AudioFormatError, match=reason):
        read_wav(data)


def test_reader_rejects_data_that_ends_inside_a_frame() -> None:
    wav = bytearray(pcm16_wav_bytes(np.zeros(4, dtype=np.int16), 8000, channels=2))
    struct.pack_into("<I", wav, 40, 6)
    with pytest.raises(AudioFormatError, match="inside a frame"):
        read_wav(bytes(wav[:-2]))


def test_reader_rejects_encodings_other_than_pcm16_and_mulaw() -> None:
    pcm8 = bytearray(pcm16_wav_bytes(np.zeros(2, dtype=np.int16), 8000))
    struct.pack_into("<H", pcm8, 34, 8)
    with pytest.raises(AudioFormatError, match="unsupported WAV encoding"):
        read_wav(bytes(pcm8))


def test_pcm16_writer_rejects_samples_that_are_not_int16() -> None:
    with pytest.raises(AudioFormatError):
        pcm16_wav_bytes(np.zeros(4, dtype=np.float32), 8000)


def test_pcm16_writer_rejects_samples_that_do_not_fill_whole_frames() -> None:
    with pytest.raises(AudioFormatError):
        pcm16_wav_bytes(np.zeros(3, dtype=np.int16), 8000, channels=2)
