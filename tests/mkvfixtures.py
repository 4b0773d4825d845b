"""Connect-shaped Matroska for the tests: a tiny EBML writer that shares no code with ``voicebridge.kvs``.

It writes what Amazon Connect puts into Kinesis Video Streams (EBML header, Segment of unknown size, Info,
Tracks with AUDIO_FROM_CUSTOMER / AUDIO_TO_CUSTOMER, Tags, one Cluster, the Tags GetMedia appends) and every
variant a robust reader must accept: Xiph / EBML / fixed-size lacing, BlockGroup, Void and CRC-32, known and
unknown sizes, over-long VINTs, multi-byte track numbers and tracks renumbered between fragments.
"""

from __future__ import annotations

import itertools
import random
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

EBML = 0x1A45DFA3
SEGMENT = 0x18538067
INFO = 0x1549A966
TIMECODE_SCALE = 0x2AD7B1
MUXING_APP = 0x4D80
TRACKS = 0x1654AE6B
TRACK_ENTRY = 0xAE
TRACK_NUMBER = 0xD7
TRACK_UID = 0x73C5
TRACK_TYPE = 0x83
NAME = 0x536E
CODEC_ID = 0x86
AUDIO = 0xE1
SAMPLING_FREQUENCY = 0xB5
CHANNELS = 0x9F
BIT_DEPTH = 0x6264
TAGS = 0x1254C367
TAG = 0x7373
TARGETS = 0x63C0
SIMPLE_TAG = 0x67C8
TAG_NAME = 0x45A3
TAG_STRING = 0x4487
CLUSTER = 0x1F43B675
TIMECODE = 0xE7
SIMPLE_BLOCK = 0xA3
BLOCK_GROUP = 0xA0
BLOCK = 0xA1
BLOCK_DURATION = 0x9B
VOID = 0xEC
CRC32 = 0xBF

CUSTOMER = "AUDIO_FROM_CUSTOMER"
AGENT = "AUDIO_TO_CUSTOMER"

FRAGMENT_BASE = "9134385233318145219972269120858003883230"

Lacing = Literal["none", "xiph", "ebml", "fixed"]
LACINGS: tuple[Lacing, ...] = ("none", "xiph", "ebml", "fixed")


def size_vint(value: int, length: int | None = None) -> bytes:
    """An element size (or track number) as a VINT, minimal unless ``length`` forces a longer one."""
    n = length or next(n for n in range(1, 9) if value < (1 << (7 * n)) - 1)
    if value >= (1 << (7 * n)) - 1:
        raise ValueError(f"{value} does not fit a {n}-byte VINT")
    return ((1 << (7 * n)) | value).to_bytes(n, "big")


def unknown_size(length: int = 8) -> bytes:
    return ((1 << (8 * length - length + 1)) - 1).to_bytes(length, "big")


def element(eid: int, payload: bytes, *, size_length: int | None = None, unknown: bool = False) -> bytes:
    head = eid.to_bytes((eid.bit_length() + 7) // 8, "big")
    size = unknown_size() if unknown else size_vint(len(payload), size_length)
    return head + size + payload


def master(eid: int, children: Iterable[bytes], *, unknown: bool = False, crc: bool = False) -> bytes:
    body = b"".join(children)
    if crc:
        body = element(CRC32, zlib.crc32(body).to_bytes(4, "little")) + body
    return element(eid, body, unknown=unknown)


def uint(eid: int, value: int) -> bytes:
    return element(eid, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))


def text(eid: int, value: str) -> bytes:
    return element(eid, value.encode())


def void(n: int = 3) -> bytes:
    return element(VOID, b"\x00" * n)


def ebml_header(doc_type: str = "matroska") -> bytes:
    return master(
        EBML,
        [
            uint(0x4286, 1),
            uint(0x42F7, 1),
            uint(0x42F2, 4),
            uint(0x42F3, 8),
            text(0x4282, doc_type),
            uint(0x4287, 4),
            uint(0x4285, 2),
        ],
    )


@dataclass(frozen=True)
class Track:
    number: int
    name: str
    uid: int
    codec_id: str = "A_AAC"
    sampling_rate: float = 8000.0
    channels: int = 1
    bit_depth: int | None = 16


CONNECT_TRACKS = (Track(1, CUSTOMER, 1), Track(2, AGENT, 2))


def track_entry(track: Track, *, noise: bool = False, crc: bool = False) -> bytes:
    audio = [
        element(SAMPLING_FREQUENCY, struct.pack(">d", track.sampling_rate)),
        uint(CHANNELS, track.channels),
    ]
    if track.bit_depth is not None:
        audio.append(uint(BIT_DEPTH, track.bit_depth))
    children = [
        uint(TRACK_NUMBER, track.number),
        uint(TRACK_UID, track.uid),
        uint(TRACK_TYPE, 2),
        text(NAME, track.name),
        text(CODEC_ID, track.codec_id),
        master(AUDIO, audio, crc=crc),
    ]
    if noise:
        children.insert(2, void(2))
    return master(TRACK_ENTRY, children, crc=crc)


def tags(values: dict[str, str], *, noise: bool = False, crc: bool = False) -> bytes:
    """One Tag per SimpleTag, as Kinesis Video Streams writes them."""
    items = []
    for name, value in values.items():
        simple = [text(TAG_NAME, name), text(TAG_STRING, value)]
        if noise:
            simple.insert(1, void(1))
        items.append(master(TAG, [master(TARGETS, [uint(0x68CA, 50)]), master(SIMPLE_TAG, simple)], crc=crc))
    return master(TAGS, items, crc=crc)


@dataclass(frozen=True)
class Block:
    """One (Simple)Block: its frames are laced together unless ``lacing`` is "none" (then one frame)."""

    track: int
    timecode: int
    frames: tuple[bytes, ...]
    lacing: Lacing = "none"
    group: bool = False
    track_vint_length: int | None = None


def block_payload(block: Block) -> bytes:
    # Only a SimpleBlock's flags carry the keyframe bit.
    flags = 0x00 if block.group else 0x80
    head = size_vint(block.track, block.track_vint_length) + struct.pack(">hB", block.timecode, flags)
    frames = block.frames
    if block.lacing == "none":
        if len(frames) != 1:
            raise ValueError("an unlaced block holds one frame")
        return head + frames[0]
    flag = {"xiph": 0x02, "fixed": 0x04, "ebml": 0x06}[block.lacing]
    head = head[:-1] + bytes([head[-1] | flag]) + bytes([len(frames) - 1])
    if block.lacing == "fixed":
        if len({len(f) for f in frames}) != 1:
            raise ValueError("fixed-size lacing needs frames of one size")
        sizes = b""
    elif block.lacing == "xiph":
        sizes = b"".join(b"\xff" * (len(f) // 255) + bytes([len(f) % 255]) for f in frames[:-1])
    elif len(frames) == 1:
        sizes = b""
    else:
        sizes = size_vint(len(frames[0]))
        for prev, cur in itertools.pairwise(frames[:-1]):
            delta = len(cur) - len(prev)
            n = next(n for n in range(1, 9) if abs(delta) < (1 << (7 * n - 1)) - 1)
            sizes += ((1 << (7 * n)) | (delta + (1 << (7 * n - 1)) - 1)).to_bytes(n, "big")
    return head + sizes + b"".join(frames)


def block_element(block: Block, *, noise: bool = False) -> bytes:
    payload = block_payload(block)
    if not block.group:
        return element(SIMPLE_BLOCK, payload)
    children = [element(BLOCK, payload), uint(BLOCK_DURATION, 64)]
    if noise:
        children.insert(0, void(4))
    return master(BLOCK_GROUP, children)


@dataclass
class Fragment:
    """One Connect fragment (one Matroska document) and the choices of how to write it."""

    blocks: list[Block]
    cluster_timecode: int = 0
    tracks: Sequence[Track] = CONNECT_TRACKS
    producer_tags: dict[str, str] = field(default_factory=dict)
    trailing_tags: dict[str, str] | None = field(default_factory=dict)
    timecode_scale: int = 1_000_000
    unknown_segment: bool = True
    unknown_cluster: bool = True
    noise: bool = False
    crc: bool = False

    def encode(self) -> bytes:
        info = master(INFO, [uint(TIMECODE_SCALE, self.timecode_scale), text(MUXING_APP, "fixture")], crc=self.crc)
        tracks = master(TRACKS, [track_entry(t, noise=self.noise, crc=self.crc) for t in self.tracks], crc=self.crc)
        cluster_children = [uint(TIMECODE, self.cluster_timecode)]
        for i, block in enumerate(self.blocks):
            if self.noise and i % 3 == 1:
                cluster_children.append(void(i % 5))
            cluster_children.append(block_element(block, noise=self.noise))
        cluster = master(CLUSTER, cluster_children, unknown=self.unknown_cluster, crc=self.crc)
        segment_children = [info, tracks]
        if self.noise:
            segment_children.insert(1, void(7))
        segment_children.append(tags(self.producer_tags, noise=self.noise, crc=self.crc))
        segment_children.append(cluster)
        if self.trailing_tags is not None:
            segment_children.append(tags(self.trailing_tags, noise=self.noise))
        # A CRC-32 cannot cover an unknown-size body that is still being written, so none on the Segment.
        segment = master(SEGMENT, segment_children, unknown=self.unknown_segment)
        return ebml_header() + (void(1) if self.noise else b"") + segment


def pcm_frame(seed: int, n_bytes: int = 1024) -> bytes:
    return random.Random(seed).randbytes(n_bytes)


@dataclass
class Stream:
    data: bytes
    fragments: list[Fragment]
    offsets: list[int]

    def pcm(self, name: str) -> bytes:
        out: list[bytes] = []
        for fragment in self.fragments:
            numbers = {t.number for t in fragment.tracks if t.name == name}
            out.extend(f for b in fragment.blocks if b.track in numbers for f in b.frames)
        return b"".join(out)


def connect_stream(
    n_fragments: int = 3,
    *,
    blocks_per_track: int = 4,
    frame_bytes: int = 1024,
    start_ms: int = 1_700_000_000_000,
    lacing: Lacing = "none",
    group: bool = False,
    noise: bool = False,
    crc: bool = False,
    unknown_sizes: bool = True,
    renumber: bool = False,
    track_vint_length: int | None = None,
    codec_id: str = "A_AAC",
) -> Stream:
    """Fragments of ``blocks_per_track`` blocks per track, 64 ms apart, interleaved like Connect writes them.

    With ``renumber`` every fragment uses different (sometimes multi-byte) track numbers for the same names.
    """
    fragments: list[Fragment] = []
    block_ms = frame_bytes // 16
    for index in range(n_fragments):
        numbers = [(1, 2), (200, 7), (3, 16384 + 5)][index % 3] if renumber else (1, 2)
        tracks = (
            Track(numbers[0], CUSTOMER, 1, codec_id),
            Track(numbers[1], AGENT, 2, codec_id),
        )
        blocks = []
        for k in range(blocks_per_track):
            for t, track in enumerate(tracks):
                seed = index * 10_000 + k * 10 + t
                if lacing == "none":
                    frames: tuple[bytes, ...] = (pcm_frame(seed, frame_bytes),)
                elif lacing == "fixed":
                    frames = tuple(pcm_frame(seed * 4 + j, frame_bytes // 4) for j in range(4))
                else:
                    cut = [0, frame_bytes // 2 + 2, min(frame_bytes, frame_bytes // 2 + 300), frame_bytes]
                    whole = pcm_frame(seed, frame_bytes)
                    frames = tuple(whole[cut[j] : cut[j + 1]] for j in range(3))
                blocks.append(
                    Block(track.number, k * block_ms, frames, lacing, group, track_vint_length=track_vint_length)
                )
        cluster_ms = start_ms + index * blocks_per_track * block_ms
        fragments.append(
            Fragment(
                blocks,
                cluster_timecode=cluster_ms,
                tracks=tracks,
                producer_tags={
                    "ContactId": "4a573372-1f28-4e26-b97b-0ea7a4c8e1f0",
                    "MimeType": "audio/L16;rate=8000;channels=1;",
                    "AUDIO_FROM_CUSTOMER": "1",
                    "AUDIO_TO_CUSTOMER": "2",
                },
                trailing_tags={
                    "AWS_KINESISVIDEO_FRAGMENT_NUMBER": f"{FRAGMENT_BASE}{index:04d}",
                    "AWS_KINESISVIDEO_SERVER_TIMESTAMP": f"{(cluster_ms + 40) / 1000:.3f}",
                    "AWS_KINESISVIDEO_PRODUCER_TIMESTAMP": f"{cluster_ms / 1000:.3f}",
                    "AWS_KINESISVIDEO_MILLIS_BEHIND_NOW": "120",
                    "AWS_KINESISVIDEO_CONTINUATION_TOKEN": f"{FRAGMENT_BASE}{index:04d}",
                },
                unknown_segment=unknown_sizes,
                unknown_cluster=unknown_sizes,
                noise=noise,
                crc=crc,
            )
        )
    encoded = [f.encode() for f in fragments]
    offsets = [sum(len(e) for e in encoded[:i]) for i in range(len(encoded))]
    return Stream(b"".join(encoded), fragments, offsets)
