"""``voicebridge mkv dump``: decode a Kinesis Video Streams GetMedia payload.

Input is the raw GetMedia body (concatenated Matroska documents, one per fragment). Output is the named
track's frames as raw PCM, exactly as carried (Amazon Connect: s16le, 8 kHz, mono), and optionally one JSON
object per fragment with every tag of that fragment (the producer's Tags and the Tags GetMedia appends), one
per line.

A damaged region does not stop the dump. The reader resumes at the next fragment's EBML header, every frame
it can recover is written, each damaged region is reported as it is found (its byte offset and why), and the
exit code is 2 instead of 0 at the end, as FFmpeg does.

    with open("call.mkv", "rb") as source, open("customer.raw", "wb") as out:
        code = dump(source, out, "AUDIO_FROM_CUSTOMER", tags_out=None, report=print)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import BinaryIO, TextIO

from voicebridge.kvs.mkv import (
    AudioFrame,
    DocumentStart,
    Event,
    MalformedInput,
    MatroskaReader,
    Tags,
    TracksChanged,
)

__all__ = ["CHUNK_SIZE", "DAMAGED", "DumpError", "MalformedStreamError", "TrackNotFoundError", "dump"]

CHUNK_SIZE = 64 * 1024
DAMAGED = 2
"""The exit code of a dump that met malformed input, once it has written everything it could recover."""


class DumpError(Exception):
    """The payload cannot be dumped; ``str()`` is a one-line reason."""


class MalformedStreamError(DumpError):
    """The payload is not well-formed Matroska at ``offset``: one damaged region."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"malformed Matroska at byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


class TrackNotFoundError(DumpError):
    """No fragment of the payload has a track of the requested name."""

    def __init__(self, track: str, seen: Iterable[str]) -> None:
        names = ", ".join(repr(name) for name in sorted(seen)) or "none"
        super().__init__(f"no track named {track!r} (tracks in the stream: {names})")
        self.track = track


class _Dumper:
    def __init__(
        self, out: BinaryIO, track: str, tags_out: TextIO | None, report: Callable[[MalformedStreamError], None]
    ) -> None:
        self.out = out
        self.track = track
        self.tags_out = tags_out
        self.report = report
        self.names: set[str] = set()
        self.fragment_tags: dict[str, str] | None = None
        self.damaged = 0

    def handle(self, events: Iterable[Event]) -> None:
        for event in events:
            if isinstance(event, AudioFrame):
                if event.track_name == self.track:
                    self.out.write(event.pcm)
            elif isinstance(event, Tags):
                if self.fragment_tags is not None:
                    self.fragment_tags.update(event.tags)
            elif isinstance(event, DocumentStart):
                self.end_fragment()
                self.fragment_tags = {}
            elif isinstance(event, TracksChanged):
                self.names.update(info.name for info in event.tracks.values())
            elif isinstance(event, MalformedInput):
                self.damaged += 1
                self.report(MalformedStreamError(event.offset, event.reason))

    def end_fragment(self) -> None:
        if self.fragment_tags is not None and self.tags_out is not None:
            self.tags_out.write(json.dumps(self.fragment_tags, ensure_ascii=False) + "\n")
        self.fragment_tags = None


def dump(
    source: BinaryIO,
    out: BinaryIO,
    track: str,
    tags_out: TextIO | None,
    report: Callable[[MalformedStreamError], None],
) -> int:
    """Write the PCM of ``track`` to ``out`` and each fragment's tags to ``tags_out``; return the exit code.

    Each damaged region goes to ``report`` as a :class:`MalformedStreamError` as soon as it is found, and
    the dump goes on; the exit code is then :data:`DAMAGED`, else 0. Raises :class:`TrackNotFoundError`
    when the fragments read have no track of that name (a :class:`DumpError`, whose message is one line),
    unless the damage left no Tracks to read at all: the damage reported is then the reason.
    """
    reader = MatroskaReader()
    dumper = _Dumper(out, track, tags_out, report)
    while chunk := source.read(CHUNK_SIZE):
        dumper.handle(reader.feed(chunk))
    dumper.handle(reader.close())
    dumper.end_fragment()
    out.flush()
    if tags_out is not None:
        tags_out.flush()
    if track not in dumper.names and (dumper.names or not dumper.damaged):
        raise TrackNotFoundError(track, dumper.names)
    return DAMAGED if dumper.damaged else 0
