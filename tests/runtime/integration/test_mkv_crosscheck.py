"""The Matroska reader against independent ones: FFmpeg and MKVToolNix write and read the same files.

Each test skips when its tool is not installed (Debian packages ``ffmpeg`` and ``mkvtoolnix``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import wave
from pathlib import Path

import pytest

from tests.fixtures.mkv import CUSTOMER, Stream, connect_stream
from voicebridge.kvs.mkv import AudioFrame, Event, MalformedInput, MatroskaReader, Tags, TracksChanged

PCM_CODEC = "A_PCM/INT/LIT"
TIMEOUT = 30


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed")
    return path


def run(*args: str) -> bytes:
    return subprocess.run(args, check=True, capture_output=True, timeout=TIMEOUT).stdout


def read(data: bytes, chunk: int = 4096) -> list[Event]:
    reader = MatroskaReader()
    events: list[Event] = []
    for at in range(0, len(data), chunk):
        events.extend(reader.feed(data[at : at + chunk]))
    events.extend(reader.close())
    assert not [e for e in events if isinstance(e, MalformedInput)]
    return events


def track_pcm(events: list[Event], number: int = 1) -> bytes:
    return b"".join(e.pcm for e in events if isinstance(e, AudioFrame) and e.track_number == number)


def ffmpeg_pcm(path: Path, stream: int = 0) -> bytes:
    return run(tool("ffmpeg"), "-v", "error", "-i", str(path), "-map", f"0:{stream}", "-f", "s16le", "-")


def sine_mkv(path: Path, *extra: str, seconds: float = 3.0, freq: int = 440) -> Path:
    run(
        tool("ffmpeg"),
        "-v",
        "error",
        "-y",
        "-f",
        "lavfi",
        "-i",
        f"sine=frequency={freq}:duration={seconds}",
        "-ar",
        "8000",
        "-ac",
        "1",
        "-c:a",
        "pcm_s16le",
        "-metadata:s:a:0",
        f"title={CUSTOMER}",
        *extra,
        str(path),
    )
    return path


def test_an_ffmpeg_file_reads_as_ffmpeg_decodes_it(tmp_path: Path) -> None:
    path = sine_mkv(tmp_path / "sine.mkv")
    events = read(path.read_bytes())
    (tracks,) = [e for e in events if isinstance(e, TracksChanged)]
    assert [(t.name, t.codec_id, t.sampling_rate, t.bit_depth) for t in tracks.tracks.values()] == [
        (CUSTOMER, PCM_CODEC, 8000.0, 16)
    ]
    assert track_pcm(events) == ffmpeg_pcm(path)


def test_frame_timecodes_match_ffprobe_packet_times(tmp_path: Path) -> None:
    path = sine_mkv(tmp_path / "sine.mkv")
    probe = json.loads(
        run(
            tool("ffprobe"),
            "-v",
            "error",
            "-select_streams",
            "a:0",
            "-show_entries",
            "packet=pts_time",
            "-of",
            "json",
            str(path),
        )
    )
    expected = [round(float(p["pts_time"]) * 1000) for p in probe["packets"]]
    assert [e.timecode_ms for e in read(path.read_bytes()) if isinstance(e, AudioFrame)] == expected


def test_ffmpeg_live_matroska_with_unknown_sizes_reads_as_ffmpeg_decodes_it(tmp_path: Path) -> None:
    path = tmp_path / "live.mkv"
    path.write_bytes(
        run(
            tool("ffmpeg"),
            "-v",
            "error",
            "-f",
            "lavfi",
            "-i",
            "sine=frequency=300:duration=3",
            "-ar",
            "8000",
            "-ac",
            "1",
            "-c:a",
            "pcm_s16le",
            "-live",
            "1",
            "-f",
            "matroska",
            "-",
        )
    )
    assert track_pcm(read(path.read_bytes(), chunk=333)) == ffmpeg_pcm(path)


def test_concatenated_ffmpeg_documents_read_one_after_the_other(tmp_path: Path) -> None:
    first = sine_mkv(tmp_path / "a.mkv", seconds=1.0, freq=300)
    second = sine_mkv(tmp_path / "b.mkv", seconds=1.5, freq=500)
    events = read(first.read_bytes() + second.read_bytes())
    assert track_pcm(events) == ffmpeg_pcm(first) + ffmpeg_pcm(second)


def test_an_mkvmerge_file_with_laced_blocks_reads_as_the_wav_it_came_from(tmp_path: Path) -> None:
    source = tmp_path / "source.wav"
    run(
        tool("ffmpeg"),
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=2",
        "-ar",
        "8000",
        "-ac",
        "1",
        "-c:a",
        "pcm_s16le",
        str(source),
    )
    merged = tmp_path / "merged.mkv"
    run(tool("mkvmerge"), "-q", "-o", str(merged), str(source))
    with wave.open(str(source)) as original:
        expected = original.readframes(original.getnframes())
    events = read(merged.read_bytes())
    assert track_pcm(events) == expected
    timecodes = [e.timecode_ms for e in events if isinstance(e, AudioFrame)]
    assert timecodes == sorted(timecodes)
    assert timecodes[-1] == pytest.approx(2000 - 40, abs=1)


def test_mkvmerge_tags_are_read(tmp_path: Path) -> None:
    source = sine_mkv(tmp_path / "sine.mkv", seconds=1.0)
    tags_xml = tmp_path / "tags.xml"
    tags_xml.write_text("<Tags><Tag><Simple><Name>ContactId</Name><String>4a573372</String></Simple></Tag></Tags>")
    merged = tmp_path / "tagged.mkv"
    run(tool("mkvmerge"), "-q", "-o", str(merged), "--global-tags", str(tags_xml), str(source))
    tags = [e.tags for e in read(merged.read_bytes()) if isinstance(e, Tags)]
    assert any(t.get("ContactId") == "4a573372" for t in tags)


FIXTURE_VARIANTS = {
    "connect": {},
    "known-sizes": {"unknown_sizes": False},
    "xiph": {"lacing": "xiph"},
    "ebml-lacing": {"lacing": "ebml"},
    "fixed-lacing": {"lacing": "fixed"},
    "block-groups": {"group": True},
    "void-crc": {"noise": True, "crc": True},
    "two-byte-track-vints": {"track_vint_length": 2},
}


def fixture_file(tmp_path: Path, name: str) -> tuple[Path, Stream]:
    options = FIXTURE_VARIANTS[name]
    stream = connect_stream(1, blocks_per_track=6, codec_id=PCM_CODEC, **options)  # type: ignore[arg-type]
    path = tmp_path / f"{name}.mkv"
    path.write_bytes(stream.data)
    return path, stream


@pytest.mark.parametrize("name", sorted(FIXTURE_VARIANTS))
def test_ffmpeg_reads_the_test_fixtures_as_the_reader_does(tmp_path: Path, name: str) -> None:
    path, stream = fixture_file(tmp_path, name)
    ours = track_pcm(read(stream.data))
    assert ours == stream.pcm(CUSTOMER)
    assert ffmpeg_pcm(path) == ours


@pytest.mark.parametrize("name", sorted(FIXTURE_VARIANTS))
def test_mkvextract_reads_the_test_fixtures_as_the_reader_does(tmp_path: Path, name: str) -> None:
    path, stream = fixture_file(tmp_path, name)
    extracted = tmp_path / "customer.raw"
    run(tool("mkvextract"), str(path), "tracks", "--raw", f"0:{extracted}")
    assert extracted.read_bytes() == track_pcm(read(stream.data))
