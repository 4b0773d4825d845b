"""SimpleBlock and Block payloads: ``track-number VINT | int16 timecode relative to the cluster | flags |
[lacing header] frame data``; lacing is none, Xiph, EBML or fixed-size (RFC 9559, Matroska).

Amazon Connect labels its tracks ``A_AAC`` although the frames carry 16-bit little-endian PCM, so frame data
is handed over untouched.
"""

from __future__ import annotations

import struct

from voicebridge.kvs.mkv.elements import SIMPLEBLOCK, VINT_LEN, VINT_MASK
from voicebridge.kvs.mkv.errors import BadBlockError, Fault
from voicebridge.kvs.mkv.events import (
    AudioFrame,
    Event,
    TrackInfo,
    frame,
    new,
    set_offset,
    set_pcm,
    set_timecode_ms,
    set_track_name,
    set_track_number,
)

__all__ = ["connect_blocks", "read_block"]

_LACING_XIPH = 0x02
_LACING_EBML = 0x06
_RESERVED_FLAGS_SIMPLEBLOCK = 0x70
"""Flag bits that Matroska reserves (set to 0) in a SimpleBlock."""
_RESERVED_FLAGS_BLOCK = 0xF0
"""Flag bits that Matroska reserves (set to 0) in a Block."""
_BLOCK_HEAD = struct.Struct(">HBhB").unpack_from
"""A Connect block after its ID: 2-byte size VINT, 1-byte track-number VINT, relative timecode, flags."""


def connect_blocks(
    buf: bytes, pos: int, bound: int, base: int, by_byte: list[TrackInfo | None], cluster_tc: int, out: list[Event]
) -> tuple[int, int, int]:
    """Read the run of Connect blocks at ``buf[pos]`` that ends by index ``bound``.

    Connect's every block is an unlaced SimpleBlock (A3) with a 2-byte size and the one-byte track number of a
    known track, so its frame is read inline: the time of reading a stream goes here. Anything else ends the
    run, for the element-wise path to read (and judge). Timecodes are ``cluster_tc`` plus the block's, as
    milliseconds: the caller runs this only at the default TimecodeScale. Returns the index after the run and
    the starts of its last two blocks (-1 for none).

        pos, last, before = connect_blocks(buf, pos, min(len(buf), limit - base), base, by_byte, tc, out)
    """
    append = out.append
    new_frame = new
    head = _BLOCK_HEAD
    track_name = set_track_name
    track_number = set_track_number
    timecode_ms = set_timecode_ms
    pcm = set_pcm
    offset = set_offset
    last = before = -1
    # The 7 bytes of a block's header must have arrived; its frame must end by the bound.
    while pos + 7 <= bound and buf[pos] == 0xA3:
        word, track, relative, flags = head(buf, pos + 1)
        # A 2-byte size VINT (01xx xxxx xxxx xxxx), not "unknown", that holds at least the block's header.
        stop = pos + word - 0x3FFD
        info = by_byte[track]
        if not 0x4004 <= word < 0x7FFF or info is None or stop > bound or flags & 0x76:
            break
        built = new_frame(AudioFrame)
        track_name(built, info.name)
        track_number(built, info.number)
        timecode_ms(built, cluster_tc + relative)
        pcm(built, buf[pos + 7 : stop])
        offset(built, base + pos + 7)
        append(built)
        before = last
        last = pos
        pos = stop
    return pos, last, before


def read_block(
    eid: int,
    src: bytes,
    a: int,
    b: int,
    src_base: int,
    tracks: dict[int, TrackInfo],
    cluster_tc: int,
    scale: int,
    out: list[Event],
) -> Fault | None:
    """Read the (Simple)Block ``src[a:b]`` (``src[0]`` is at stream offset ``src_base``); say why it is invalid.

    ``scale`` is the TimecodeScale in ns per tick, by which block and cluster timecodes become milliseconds.
    """
    if a >= b:
        return BadBlockError, "empty block"
    first = src[a]
    track_len = VINT_LEN[first]
    if track_len > 8:
        return BadBlockError, "invalid track number in block"
    head = a + track_len
    if head + 3 > b:
        return BadBlockError, "block shorter than its header"
    track = first & 0x7F if track_len == 1 else int.from_bytes(src[a:head], "big") & VINT_MASK[track_len]
    info = tracks.get(track)
    if info is None:
        return BadBlockError, f"block for unknown track {track}"
    flags = src[head + 2]
    if flags & (_RESERVED_FLAGS_SIMPLEBLOCK if eid == SIMPLEBLOCK else _RESERVED_FLAGS_BLOCK):
        return BadBlockError, f"block with reserved flag bits set (0x{flags:02x})"
    relative = (src[head] << 8) | src[head + 1]
    if relative & 0x8000:
        relative -= 0x10000
    ms = (cluster_tc + relative) * scale // 1_000_000
    lacing = flags & 0x06
    data = head + 3
    if not lacing:
        out.append(frame(info.name, track, ms, src[data:b], src_base + data))
        return None
    return _laced(src, data, b, lacing, info, ms, src_base, out)


def _laced(
    src: bytes, p: int, b: int, lacing: int, info: TrackInfo, ms: int, src_base: int, out: list[Event]
) -> Fault | None:
    """Split the laced frames of ``src[p:b]``, the block's data after its flags; say why they cannot be."""
    if p >= b:
        return BadBlockError, "laced block without a frame count"
    count = src[p] + 1
    p += 1
    sizes: list[int] = []
    if lacing == _LACING_XIPH:
        for _ in range(count - 1):
            size = 0
            while True:
                if p >= b:
                    return BadBlockError, "Xiph lacing header overruns the block"
                byte = src[p]
                p += 1
                size += byte
                if byte != 255:
                    break
            sizes.append(size)
    elif lacing == _LACING_EBML:
        size = 0
        for i in range(count - 1):
            if p >= b:
                return BadBlockError, "EBML lacing header overruns the block"
            n = VINT_LEN[src[p]]
            if n > 8 or p + n > b:
                return BadBlockError, "invalid EBML lace size"
            raw = int.from_bytes(src[p : p + n], "big") & VINT_MASK[n]
            p += n
            # Sizes after the first are signed differences, stored with a bias of 2^(7n-1) - 1.
            size = raw if i == 0 else size + raw - ((1 << (7 * n - 1)) - 1)
            if size < 0:
                return BadBlockError, "negative EBML lace size"
            sizes.append(size)
    else:  # fixed-size lacing, 0x04
        total = b - p
        if total % count:
            return BadBlockError, f"fixed-size lacing of {total} bytes into {count} frames"
        sizes = [total // count] * (count - 1)
    last = b - p - sum(sizes)
    if last < 0:
        return BadBlockError, "lace sizes exceed the block"
    sizes.append(last)
    bytes_per_second = info.sampling_rate * info.channels * ((info.bit_depth or 16) // 8)
    before = 0
    for size in sizes:
        at = ms + int(before * 1000 / bytes_per_second) if bytes_per_second > 0 else ms
        out.append(frame(info.name, info.number, at, src[p : p + size], src_base + p))
        p += size
        before += size
    return None
