"""What a document's elements set as they are read: its tracks, its TimecodeScale, the Cluster's Timecode,
its Tags (RFC 9559, Matroska: Info, Tracks/TrackEntry/Audio, Cluster/Timecode, Tags)."""

from __future__ import annotations

import struct

from voicebridge.kvs.mkv.blocks import read_block
from voicebridge.kvs.mkv.elements import (
    BITDEPTH,
    BLOCK,
    CHANNELS,
    CLUSTER,
    CODECID,
    DEFAULT_TIMECODE_SCALE,
    INFO,
    NAME,
    SAMPLINGFREQUENCY,
    SEGMENT,
    SIMPLEBLOCK,
    SIMPLETAG,
    TAGNAME,
    TAGS,
    TAGSTRING,
    TIMECODE,
    TIMECODESCALE,
    TRACKENTRY,
    TRACKNUMBER,
    TRACKS,
    TRACKUID,
)
from voicebridge.kvs.mkv.errors import Fault, InvalidSizeError, InvalidValueError, UnexpectedElementError
from voicebridge.kvs.mkv.events import ClusterStart, Event, TrackInfo, TracksChanged
from voicebridge.kvs.mkv.tags import TagsReader, text

__all__ = ["Content"]

_BLOCKS = frozenset({SIMPLEBLOCK, BLOCK})


class _TrackEntry:
    __slots__ = ("bit_depth", "channels", "codec_id", "name", "number", "sampling_rate", "uid")

    def __init__(self) -> None:
        self.number = 0
        self.uid = 0
        self.name = ""
        self.codec_id = ""
        # Matroska's defaults for an Audio element that leaves these out.
        self.sampling_rate = 8000.0
        self.channels = 1
        self.bit_depth: int | None = None


class Content:
    """The state the elements of the stream set, read from their payloads and changed at their starts and ends.

    ``by_byte`` holds the tracks again, indexed by the one-byte track-number VINT that starts a block (the hot
    path's lookup). ``info_raw`` and ``tracks_raw`` are the payloads behind the TimecodeScale and the tracks
    in force, to recognise a repeat in a later fragment; the ``pending`` ones belong to the Info or Tracks
    being read.
    """

    __slots__ = (
        "by_byte",
        "cluster_tc",
        "entry",
        "info_pending_raw",
        "info_raw",
        "info_scale",
        "new_tracks",
        "scale",
        "tags",
        "timed",
        "tracks",
        "tracks_pending_raw",
        "tracks_raw",
    )

    def __init__(self) -> None:
        self.scale = DEFAULT_TIMECODE_SCALE
        self.cluster_tc = 0
        self.timed = False  # the Cluster's Timecode has been read
        self.tracks: dict[int, TrackInfo] = {}
        self.by_byte: list[TrackInfo | None] = [None] * 256
        self.new_tracks: dict[int, TrackInfo] = {}
        self.entry = _TrackEntry()
        self.tags = TagsReader()
        self.tracks_raw = b""
        self.tracks_pending_raw = b""
        # The raw Info last read, and the TimecodeScale it set.
        self.info_raw = b""
        self.info_pending_raw = b""
        self.info_scale = DEFAULT_TIMECODE_SCALE

    def recognise(self, eid: int, raw: bytes) -> bool:
        """Whether the Info or Tracks payload ``raw`` (empty when not whole or too large to keep) is the one
        last read, which it then stands for; if not, it is kept for when the element ends."""
        if eid == TRACKS:
            if raw and raw == self.tracks_raw:
                return True
            self.tracks_pending_raw = raw
        elif raw and raw == self.info_raw:
            self.scale = self.info_scale
            return True
        else:
            self.info_pending_raw = raw
        return False

    def begin_master(self, eid: int) -> None:
        """The master ``eid`` opens."""
        if eid == CLUSTER:
            self.cluster_tc = 0
            self.timed = False
        elif eid == SEGMENT:
            self.scale = DEFAULT_TIMECODE_SCALE
            self.cluster_tc = 0
            self.timed = False
        elif eid == SIMPLETAG:
            self.tags.stack.append([None, None])
        elif eid == TRACKENTRY:
            self.entry = _TrackEntry()
        elif eid == TAGS:
            self.tags.begin()
        elif eid == TRACKS:
            self.new_tracks = {}

    def end_master(self, eid: int, start: int, out: list[Event]) -> Fault | None:
        """The master ``eid``, opened at stream offset ``start``, ends; say why what it held is invalid."""
        if eid == SIMPLETAG:
            self.tags.end_simple_tag()
        elif eid == TAGS:
            out.append(self.tags.end(start))
        elif eid == TRACKENTRY:
            e = self.entry
            if e.number == 0:
                return InvalidValueError, "TrackEntry without a TrackNumber"
            if e.number in self.new_tracks:
                return InvalidValueError, f"two TrackEntry elements numbered {e.number}"
            self.new_tracks[e.number] = TrackInfo(
                e.number, e.name, e.codec_id, e.uid, e.sampling_rate, e.channels, e.bit_depth
            )
        elif eid == INFO:
            self.info_raw = self.info_pending_raw
            self.info_scale = self.scale
        elif eid == TRACKS:
            tracks = self.new_tracks
            self.new_tracks = {}
            self.tracks_raw = self.tracks_pending_raw
            if tracks != self.tracks:
                self.tracks = tracks
                self.by_byte = [None] * 256
                for number, info in tracks.items():
                    if number < 0x7F:
                        self.by_byte[0x80 | number] = info
                out.append(TracksChanged(dict(tracks)))
        return None

    def leaf(self, eid: int, src: bytes, a: int, b: int, src_base: int, out: list[Event]) -> Fault | None:
        """Read the leaf ``src[a:b]`` (``src[0]`` is at stream offset ``src_base``); say why it is invalid."""
        if eid in _BLOCKS:
            return read_block(eid, src, a, b, src_base, self.tracks, self.cluster_tc, self.scale, out)
        if eid == TAGNAME:
            self.tags.stack[-1][0] = text(src, a, b)
            return None
        if eid == TAGSTRING:
            self.tags.stack[-1][1] = text(src, a, b)
            return None
        if eid == NAME:
            self.entry.name = text(src, a, b)
            return None
        if eid == CODECID:
            self.entry.codec_id = text(src, a, b)
            return None
        if eid == SAMPLINGFREQUENCY:
            if b - a not in (4, 8):
                return InvalidSizeError, f"SamplingFrequency of {b - a} bytes"
            rate: float = struct.unpack_from(">f" if b - a == 4 else ">d", src, a)[0]
            # Also rules out NaN and infinity, which would make frame durations meaningless.
            if not 1.0 <= rate <= 1e9:
                return InvalidValueError, f"SamplingFrequency of {rate} Hz"
            self.entry.sampling_rate = rate
            return None
        if b - a > 8:
            return InvalidSizeError, f"unsigned integer element 0x{eid:x} of {b - a} bytes"
        value = int.from_bytes(src[a:b], "big")
        if eid == TIMECODE:
            if self.timed:
                return UnexpectedElementError, "second Timecode in a Cluster"
            self.timed = True
            self.cluster_tc = value
            out.append(ClusterStart(value * self.scale // 1_000_000))
        elif eid == TRACKNUMBER:
            self.entry.number = value
        elif eid == TRACKUID:
            self.entry.uid = value
        elif eid == CHANNELS:
            self.entry.channels = value
        elif eid == BITDEPTH:
            self.entry.bit_depth = value
        elif eid == TIMECODESCALE:
            if value == 0:
                return InvalidValueError, "TimecodeScale of 0"
            self.scale = value
        return None
