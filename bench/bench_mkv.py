"""Benchmark: the incremental Matroska reader against ebmlite and PyAV's demuxer.

The input is a Connect-shaped GetMedia payload built in memory: one Matroska document per ~1 s fragment
(EBML header, unknown-size Segment, Info, Tracks AUDIO_FROM_CUSTOMER / AUDIO_TO_CUSTOMER labelled ``A_AAC``,
producer Tags, unknown-size Cluster of 64 ms SimpleBlocks of s16le 8 kHz PCM from both tracks, GetMedia's
Tags).

In process, over 10 minutes of it, each contender does the work a consumer needs: walk every element and get
every block's payload bytes.

- ``voicebridge``: :class:`MatroskaReader` fed 64 KiB chunks, as a GetMedia response arrives.
- ``ebmlite``: its Matroska schema over the whole payload in memory; every element visited, leaf values read.
- ``pyav``: FFmpeg's matroska demuxer over a BytesIO; every packet's bytes read. Demuxing does not decode,
  so the ``A_AAC`` label on PCM data does not matter here (FFmpeg would mis-decode it, but returns the
  packets intact).

As a whole process, over 60 minutes of it in a file: ``voicebridge mkv dump --track AUDIO_FROM_CUSTOMER``
against a Python process that demuxes the file with PyAV and writes that track's packets to its standard
output, each timed by its CPU time (user and system) from start to exit, interpreter and imports included.
Both write to /dev/null, after a first run each whose output is checked (the two must agree byte for byte)
and which leaves both with bytecode caches, as installed code has them.

First-frame latency is the time from feeding the last byte of a SimpleBlock to holding its AudioFrame.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import math
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from voicebridge.kvs.mkv import AudioFrame, MatroskaReader

SECONDS = 600
WHOLE_PROCESS_SECONDS = 3600
FRAGMENT_BLOCKS = 16  # per track: 16 x 64 ms = 1.024 s per fragment
BLOCK_BYTES = 1024  # 512 samples of s16le at 8 kHz = 64 ms
CHUNK = 64 * 1024
REPEAT = 5
WHOLE_PROCESS_REPEAT = 9
"""Rounds of the whole-process comparison: a process's CPU time varies more than a loop's on a busy machine."""
TRACK = "AUDIO_FROM_CUSTOMER"

_PYAV_DUMP = """
import sys

import av

with open(sys.argv[1], "rb") as source, av.open(source, mode="r", format="matroska") as container:
    out = sys.stdout.buffer
    (stream,) = [s for s in container.streams if s.metadata.get("title") == sys.argv[2]]
    for packet in container.demux(stream):
        if packet.size:
            out.write(bytes(packet))
"""
"""The PyAV peer of ``voicebridge mkv dump``: FFmpeg reports a Matroska track's Name as its title."""


def _vint(value: int) -> bytes:
    n = next(n for n in range(1, 9) if value < (1 << (7 * n)) - 1)
    return ((1 << (7 * n)) | value).to_bytes(n, "big")


def _el(eid: int, payload: bytes, unknown: bool = False) -> bytes:
    size = b"\x01\xff\xff\xff\xff\xff\xff\xff" if unknown else _vint(len(payload))
    return eid.to_bytes((eid.bit_length() + 7) // 8, "big") + size + payload


def _uint(eid: int, value: int) -> bytes:
    return _el(eid, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))


def _str(eid: int, value: str) -> bytes:
    return _el(eid, value.encode())


def _tags(values: dict[str, str]) -> bytes:
    return _el(
        0x1254C367,
        b"".join(
            _el(0x7373, _el(0x63C0, _uint(0x68CA, 50)) + _el(0x67C8, _str(0x45A3, k) + _str(0x4487, v)))
            for k, v in values.items()
        ),
    )


@functools.cache
def _period(step: int) -> bytes:
    """Two periods of the waveform of ``_pcm``, packed: any ``n_samples`` up to a period are a slice of them."""
    samples = 16000 // math.gcd(step, 16000)
    one = struct.pack(f"<{samples}h", *((i * step) % 16000 - 8000 for i in range(samples)))
    return one + one


def _pcm(n_samples: int, start: int, step: int) -> bytes:
    # A cheap deterministic waveform, ((start + i) * step) % 16000 - 8000; the content is irrelevant to parsing.
    period = _period(step)
    at = start % (len(period) // 4) * 2
    return period[at : at + 2 * n_samples]


def connect_stream(seconds: int = SECONDS, codec_id: str = "A_AAC") -> tuple[bytes, list[int]]:
    """The payload, and the stream offset just after each SimpleBlock."""
    header = _el(
        0x1A45DFA3,
        _uint(0x4286, 1)
        + _uint(0x42F7, 1)
        + _uint(0x42F2, 4)
        + _uint(0x42F3, 8)
        + _str(0x4282, "matroska")
        + _uint(0x4287, 4)
        + _uint(0x4285, 2),
    )
    info = _el(0x1549A966, _uint(0x2AD7B1, 1_000_000) + _str(0x4D80, "bench"))
    tracks = _el(
        0x1654AE6B,
        b"".join(
            _el(
                0xAE,
                _uint(0xD7, number)
                + _uint(0x73C5, number)
                + _uint(0x83, 2)
                + _str(0x536E, name)
                + _str(0x86, codec_id)
                + _el(0xE1, _el(0xB5, struct.pack(">d", 8000.0)) + _uint(0x9F, 1) + _uint(0x6264, 16)),
            )
            for number, name in ((1, "AUDIO_FROM_CUSTOMER"), (2, "AUDIO_TO_CUSTOMER"))
        ),
    )
    samples = BLOCK_BYTES // 2
    total_blocks = seconds * 8000 // samples
    start_ms = 1_700_000_000_000
    parts: list[bytes] = []
    block_ends: list[int] = []
    written = 0
    for first in range(0, total_blocks, FRAGMENT_BLOCKS):
        cluster_ms = start_ms + first * 64
        producer = _tags(
            {
                "ContactId": "4a573372-1f28-4e26-b97b-0ea7a4c8e1f0",
                "InstanceId": "c8c0e68d-1f28-4e26-b97b-0ea7a4c8e1f0",
                "MimeType": "audio/L16;rate=8000;channels=1;",
                "AUDIO_FROM_CUSTOMER": "1",
                "AUDIO_TO_CUSTOMER": "2",
            }
        )
        prefix = header + b"\x18\x53\x80\x67\x01\xff\xff\xff\xff\xff\xff\xff" + info + tracks + producer
        cluster_head = b"\x1f\x43\xb6\x75\x01\xff\xff\xff\xff\xff\xff\xff" + _uint(0xE7, cluster_ms)
        blocks: list[bytes] = []
        offset = written + len(prefix) + len(cluster_head)
        for k in range(first, min(first + FRAGMENT_BLOCKS, total_blocks)):
            for track in (1, 2):
                payload = bytes([0x80 | track]) + struct.pack(">hB", (k - first) * 64, 0x80)
                block = _el(0xA3, payload + _pcm(samples, k * samples, 37 * track))
                blocks.append(block)
                offset += len(block)
                block_ends.append(offset)
        index = first // FRAGMENT_BLOCKS
        trailing = _tags(
            {
                "AWS_KINESISVIDEO_FRAGMENT_NUMBER": f"91343852333181452199722691208580038832{index:010d}",
                "AWS_KINESISVIDEO_SERVER_TIMESTAMP": f"{(cluster_ms + 40) / 1000:.3f}",
                "AWS_KINESISVIDEO_PRODUCER_TIMESTAMP": f"{cluster_ms / 1000:.3f}",
                "AWS_KINESISVIDEO_MILLIS_BEHIND_NOW": "120",
                "AWS_KINESISVIDEO_CONTINUATION_TOKEN": f"91343852333181452199722691208580038832{index:010d}",
            }
        )
        fragment = prefix + cluster_head + b"".join(blocks) + trailing
        parts.append(fragment)
        written += len(fragment)
    return b"".join(parts), block_ends


def parse_voicebridge(data: bytes) -> int:
    reader = MatroskaReader()
    payload = 0
    for at in range(0, len(data), CHUNK):
        for event in reader.feed(data[at : at + CHUNK]):
            if isinstance(event, AudioFrame):
                payload += len(event.pcm)
    for event in reader.close():
        if isinstance(event, AudioFrame):
            payload += len(event.pcm)
    return payload


def parse_ebmlite(data: bytes) -> int:
    import ebmlite

    schema = ebmlite.loadSchema("matroska.xml")
    payload = 0

    def walk(elements: Iterable[Any]) -> None:
        nonlocal payload
        for el in elements:
            if isinstance(el, ebmlite.MasterElement):
                walk(el)
            elif el.name in ("SimpleBlock", "Block"):
                # A block payload is its track-number VINT, 2-byte timecode and flags, then the frame.
                payload += len(el.value) - 4
            else:
                _ = el.value

    walk(schema.loads(data))
    return payload


def parse_pyav(data: bytes) -> int:
    import av

    payload = 0
    with av.open(io.BytesIO(data), mode="r", format="matroska") as container:
        for packet in container.demux():
            if packet.size:
                payload += len(bytes(packet))
    return payload


def _best_times(contenders: dict[str, Callable[[bytes], int]], data: bytes, expected: int) -> dict[str, float]:
    """Best CPU time of each contender over REPEAT rounds, run in turns so a busy machine slows all alike."""
    best = dict.fromkeys(contenders, float("inf"))
    for _ in range(REPEAT):
        for name, parse in contenders.items():
            started = time.process_time()
            payload = parse(data)
            best[name] = min(best[name], time.process_time() - started)
            if payload != expected:
                raise RuntimeError(f"{name} read {payload} payload bytes, expected {expected}")
    return best


def first_frame_latency(data: bytes, block_ends: list[int], samples: int = 2000) -> float:
    """Median seconds from the last byte of a SimpleBlock being fed to its AudioFrame being returned."""
    reader = MatroskaReader()
    fed = 0
    step = max(1, len(block_ends) // samples)
    latencies: list[float] = []
    for end in block_ends[::step]:
        for _ in reader.feed(data[fed : end - 1]):
            pass
        last = data[end - 1 : end]
        started = time.perf_counter()
        frame = next(e for e in reader.feed(last) if isinstance(e, AudioFrame))
        latencies.append(time.perf_counter() - started)
        if not frame.pcm:
            raise RuntimeError("empty frame")
        fed = end
    return statistics.median(latencies)


def _child_cpu_seconds(command: list[str], env: dict[str, str]) -> float:
    """CPU time (user + system) of ``command`` run to its exit with its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, env=env, stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def whole_process(seconds: int = WHOLE_PROCESS_SECONDS) -> dict[str, Any]:
    """``voicebridge mkv dump`` against a PyAV demuxing process over a ``seconds``-long stream in a file."""
    data, block_ends = connect_stream(seconds)
    figures: dict[str, Any] = {"stream_seconds": seconds, "stream_mb": round(len(data) / 1e6, 2)}
    if importlib.util.find_spec("av") is None:
        figures["pyav"] = {"available": False}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "getmedia.mkv"
        path.write_bytes(data)
        del data
        # Bytecode caches in the temporary folder for both, whatever PYTHONDONTWRITEBYTECODE says here.
        env = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(folder) / "pycache")
        # The CLI's main() as the console script calls it, started by this interpreter whatever PATH holds.
        commands = {
            "voicebridge": [sys.executable, "-m", "voicebridge_dev.cli", "mkv", "dump", str(path), "--track", TRACK]
        }
        if "pyav" not in figures:
            commands["pyav"] = [sys.executable, "-c", _PYAV_DUMP, str(path), TRACK]
        expected = len(block_ends) // 2 * BLOCK_BYTES
        outputs = {
            name: subprocess.run(command, env=env, capture_output=True, check=True).stdout
            for name, command in commands.items()
        }
        for name, output in outputs.items():
            if len(output) != expected:
                raise RuntimeError(f"{name} wrote {len(output)} bytes of {TRACK}, expected {expected}")
            if output != outputs["voicebridge"]:
                raise RuntimeError(f"{name} wrote other bytes of {TRACK} than voicebridge mkv dump")
        del outputs
        best = dict.fromkeys(commands, float("inf"))
        for _ in range(WHOLE_PROCESS_REPEAT):
            for name, command in commands.items():
                best[name] = min(best[name], _child_cpu_seconds(command, env))
    for name, cpu in best.items():
        figures[name] = {"seconds": round(cpu, 3), "x_realtime": round(seconds / cpu)}
    if "seconds" in figures.get("pyav", {}):
        figures["pyav"]["voicebridge_speedup"] = round(best["pyav"] / best["voicebridge"], 2)
    return figures


def run() -> dict[str, Any]:
    data, block_ends = connect_stream()
    megabytes = len(data) / 1e6
    expected = len(block_ends) * BLOCK_BYTES
    figures: dict[str, Any] = {"stream_seconds": SECONDS, "stream_mb": round(megabytes, 2)}
    contenders: dict[str, Callable[[bytes], int]] = {"voicebridge": parse_voicebridge}
    for name, module, parse in (("ebmlite", "ebmlite", parse_ebmlite), ("pyav", "av", parse_pyav)):
        if importlib.util.find_spec(module) is None:
            figures[name] = {"available": False}
        else:
            contenders[name] = parse
    for name, seconds in _best_times(contenders, data, expected).items():
        figures[name] = {
            "seconds": round(seconds, 4),
            "mb_per_s": round(megabytes / seconds, 1),
            "x_realtime": round(SECONDS / seconds),
        }
    ours = figures["voicebridge"]["seconds"]
    for peer in ("ebmlite", "pyav"):
        if "seconds" in figures[peer]:
            figures[peer]["voicebridge_speedup"] = round(figures[peer]["seconds"] / ours, 2)
    figures["first_frame_latency_us"] = round(first_frame_latency(data, block_ends) * 1e6, 1)
    figures["whole_process"] = whole_process()
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"Connect-shaped stream: {figures['stream_seconds']} s, {figures['stream_mb']} MB",
        f"{'reader':<12} {'seconds':>9} {'MB/s':>8} {'x realtime':>11} {'voicebridge is':>15}",
    ]
    for name in ("voicebridge", "ebmlite", "pyav"):
        row = figures[name]
        if "seconds" not in row:
            lines.append(f"{name:<12} {'not installed':>9}")
            continue
        ratio = f"{row['voicebridge_speedup']:.2f}x faster" if "voicebridge_speedup" in row else ""
        lines.append(f"{name:<12} {row['seconds']:>9.4f} {row['mb_per_s']:>8.1f} {row['x_realtime']:>11} {ratio:>15}")
    lines.append(f"first-frame latency (median): {figures['first_frame_latency_us']} us after the block's last byte")
    whole = figures["whole_process"]
    lines.append(
        f"whole process, {whole['stream_seconds']} s stream ({whole['stream_mb']} MB) in a file, CPU seconds "
        "from start to exit:"
    )
    for name, label in (("voicebridge", "voicebridge mkv dump"), ("pyav", "PyAV demux")):
        row = whole[name]
        if "seconds" not in row:
            lines.append(f"  {label:<22} not installed")
            continue
        ratio = f"  voicebridge is {row['voicebridge_speedup']:.2f}x faster" if "voicebridge_speedup" in row else ""
        lines.append(f"  {label:<22} {row['seconds']:>7.3f} s {row['x_realtime']:>7}x realtime{ratio}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))
