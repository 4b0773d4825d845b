"""The events :class:`~.reader.MatroskaReader` yields, in stream order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from voicebridge.kvs.mkv.errors import MatroskaError

__all__ = [
    "AudioFrame",
    "ClusterStart",
    "DocumentStart",
    "Event",
    "MalformedInput",
    "Tags",
    "TrackInfo",
    "TracksChanged",
]


@dataclass(frozen=True, slots=True)
class TrackInfo:
    """One TrackEntry of the current document."""

    number: int
    name: str
    codec_id: str
    uid: int
    sampling_rate: float
    channels: int
    bit_depth: int | None


@dataclass(frozen=True, slots=True)
class DocumentStart:
    """An EBML header began at ``offset``: a new fragment."""

    offset: int


@dataclass(frozen=True, slots=True)
class TracksChanged:
    """A Tracks element completed with a number → track mapping different from the one in force."""

    tracks: dict[int, TrackInfo]


@dataclass(frozen=True, slots=True)
class Tags:
    """A Tags element completed: each SimpleTag's TagName → TagString, in order (a later duplicate wins)."""

    tags: dict[str, str]
    offset: int


@dataclass(frozen=True, slots=True)
class ClusterStart:
    """A Cluster's Timecode arrived, converted to milliseconds."""

    timecode_ms: int


@dataclass(frozen=True, slots=True)
class AudioFrame:
    """One frame of a (Simple)Block.

    ``timecode_ms`` is (cluster timecode + block timecode) × TimecodeScale in ms; frames after the first
    of a laced block add the duration of the PCM before them. ``offset`` is the stream offset of the first
    byte of ``pcm``.
    """

    track_name: str
    track_number: int
    timecode_ms: int
    pcm: bytes
    offset: int


@dataclass(frozen=True, slots=True)
class MalformedInput:
    """The element at ``offset`` is corrupt or truncated, or an EBML header there begins inside the element
    before it; the reader resumes at the next EBML header.

    ``kind`` is the :class:`MatroskaError` subclass for the damage; it follows from ``reason``, so events
    compare by offset and reason alone.
    """

    offset: int
    reason: str
    kind: type[MatroskaError] = field(default=MatroskaError, compare=False)

    def error(self) -> MatroskaError:
        """The exception to raise for a caller that treats malformed input as fatal."""
        return self.kind(self.offset, self.reason)


Event: TypeAlias = DocumentStart | TracksChanged | Tags | ClusterStart | AudioFrame | MalformedInput

# Frames are built by writing AudioFrame's slots directly: a frozen dataclass's __init__ goes through
# object.__setattr__ once per field, which made it the largest single cost of reading a block. The
# instances are the same either way.
new = object.__new__
set_track_name = AudioFrame.__dict__["track_name"].__set__
set_track_number = AudioFrame.__dict__["track_number"].__set__
set_timecode_ms = AudioFrame.__dict__["timecode_ms"].__set__
set_pcm = AudioFrame.__dict__["pcm"].__set__
set_offset = AudioFrame.__dict__["offset"].__set__


def frame(track_name: str, track_number: int, timecode_ms: int, pcm: bytes, offset: int) -> AudioFrame:
    """An :class:`AudioFrame`, built as above."""
    built: AudioFrame = new(AudioFrame)
    set_track_name(built, track_name)
    set_track_number(built, track_number)
    set_timecode_ms(built, timecode_ms)
    set_pcm(built, pcm)
    set_offset(built, offset)
    return built
