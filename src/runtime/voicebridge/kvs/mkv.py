"""Incremental Matroska reader for Kinesis Video Streams GetMedia payloads.

Format: GetMedia returns a concatenation of Matroska (EBML) documents, one per fragment::

    EBML header (1A 45 DF A3)
    Segment (18 53 80 67), size usually "unknown" (all VINT value bits set)
      Info      TimecodeScale (ns per timecode tick, default 1 000 000)
      Tracks    TrackEntry*: TrackNumber, TrackUID, Name, CodecID,
                             Audio{SamplingFrequency, Channels, BitDepth}
      Tags      Tag*: SimpleTag{TagName, TagString} (producer tags: ContactId, MimeType, ...)
      Cluster   Timecode (ticks), SimpleBlock* | BlockGroup{Block}*, size may be unknown
      Tags      appended by GetMedia: AWS_KINESISVIDEO_FRAGMENT_NUMBER, ..._CONTINUATION_TOKEN,
                ..._ERROR_CODE

Every element is ``ID VINT | size VINT | payload``. A (Simple)Block payload is ``track-number VINT |
int16 timecode relative to the cluster | flags | [lacing header] frame data``; lacing is none, Xiph, EBML
or fixed-size. Void (EC) and CRC-32 (BF) may appear inside any master. Amazon Connect labels its tracks
``A_AAC`` although the frames carry 16-bit little-endian PCM, so frame data is handed over untouched.

:class:`MatroskaReader` is sans-I/O: ``feed(bytes)`` returns the events completed by those bytes,
``close()`` the ones completed by the end of input. It descends into master elements and buffers only the
leaf being read, so memory stays bounded by one element whatever the chunking, and each event leaves the
reader as soon as the last byte of its element arrives. An unknown-size master ends when an element
arrives that the Matroska hierarchy does not allow inside it (a new EBML header, a Cluster or Tags at
segment level).

Malformed input yields :class:`MalformedInput`, and the reader resumes at the next EBML header wherever it
starts: every byte is searched for one, and no element is read across one (an element that an EBML header
begins inside had a corrupt size, or its document was cut short). A damaged fragment so costs at most
itself, and no frame holds the next document's header; the last one may end in the first bytes of its
magic, which no reader can tell from audio before the bytes after them arrive.

    reader = MatroskaReader()
    for chunk in chunks:
        for event in reader.feed(chunk):
            if isinstance(event, AudioFrame) and event.track_name == "AUDIO_FROM_CUSTOMER":
                send(event.pcm)
    for event in reader.close():
        ...
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "DEFAULT_TIMECODE_SCALE",
    "EBML_MAGIC",
    "MAX_ELEMENT_SIZE",
    "AudioFrame",
    "ClusterStart",
    "DocumentStart",
    "Event",
    "MalformedInput",
    "MatroskaError",
    "MatroskaReader",
    "Tags",
    "TrackInfo",
    "TracksChanged",
]

MAX_ELEMENT_SIZE = 16 * 1024 * 1024
"""Largest element the reader buffers or skips; anything larger is treated as corruption."""
MAX_DEPTH = 32
"""Deepest nesting of master elements (Connect's is 4); deeper is treated as corruption."""
DEFAULT_TIMECODE_SCALE = 1_000_000
EBML_MAGIC = b"\x1a\x45\xdf\xa3"

# Element IDs as they appear on the wire (VINT marker bits included).
_EBML = 0x1A45DFA3
_SEGMENT = 0x18538067
_SEEKHEAD = 0x114D9B74
_INFO = 0x1549A966
_TIMECODESCALE = 0x2AD7B1
_TRACKS = 0x1654AE6B
_TRACKENTRY = 0xAE
_TRACKNUMBER = 0xD7
_TRACKUID = 0x73C5
_TRACKTYPE = 0x83
_NAME = 0x536E
_CODECID = 0x86
_CODECPRIVATE = 0x63A2
_AUDIO = 0xE1
_VIDEO = 0xE0
_SAMPLINGFREQUENCY = 0xB5
_CHANNELS = 0x9F
_BITDEPTH = 0x6264
_TAGS = 0x1254C367
_TAG = 0x7373
_TARGETS = 0x63C0
_SIMPLETAG = 0x67C8
_TAGNAME = 0x45A3
_TAGSTRING = 0x4487
_TAGBINARY = 0x4485
_TAGLANGUAGE = 0x447A
_TAGDEFAULT = 0x4484
_CLUSTER = 0x1F43B675
_TIMECODE = 0xE7
_POSITION = 0xA7
_PREVSIZE = 0xAB
_SIMPLEBLOCK = 0xA3
_BLOCKGROUP = 0xA0
_BLOCK = 0xA1
_BLOCKDURATION = 0x9B
_REFERENCEBLOCK = 0xFB
_CUES = 0x1C53BB6B
_CHAPTERS = 0x1043A770
_ATTACHMENTS = 0x1941A469
_VOID = 0xEC
_CRC32 = 0xBF

_ROOT = -1
"""Pseudo-ID of the stream level, the parent of EBML headers and Segments."""

_NAMES = {
    _EBML: "EBML header",
    _SEGMENT: "Segment",
    _INFO: "Info",
    _TRACKS: "Tracks",
    _TRACKENTRY: "TrackEntry",
    _AUDIO: "Audio",
    _TAGS: "Tags",
    _TAG: "Tag",
    _SIMPLETAG: "SimpleTag",
    _CLUSTER: "Cluster",
    _BLOCKGROUP: "BlockGroup",
    _SIMPLEBLOCK: "SimpleBlock",
    _BLOCK: "Block",
    _ROOT: "stream",
}

# What the reader does with an element.
_SKIP = 0  # discard its bytes unread
_MASTER = 1  # descend into it
_HOOKED = 2  # descend into it; its start and end change the reader's state
_LEAF = 3  # read its payload
_HEADER = 4  # an EBML header: a document starts; its content is not needed

_DESCEND = frozenset({_MASTER, _HOOKED})
_END_HOOKS = frozenset({_SIMPLETAG, _TAGS, _TRACKENTRY, _TRACKS})


def _spec(parents: tuple[int, ...], kind: int, *eids: int) -> dict[int, tuple[frozenset[int], int]]:
    return dict.fromkeys(eids, (frozenset(parents), kind))


# Where each element may appear, and what to do with it. Unlisted elements (Void, CRC-32, anything
# unknown) belong to whichever master is open; the listed ones are what lets an unknown-size master end.
_SPEC: dict[int, tuple[frozenset[int], int]] = {
    **_spec((_ROOT,), _HEADER, _EBML),
    **_spec((_ROOT,), _HOOKED, _SEGMENT),
    **_spec((_SEGMENT,), _SKIP, _SEEKHEAD, _CUES, _CHAPTERS, _ATTACHMENTS),
    **_spec((_SEGMENT,), _MASTER, _INFO),
    **_spec((_SEGMENT,), _HOOKED, _TRACKS, _TAGS, _CLUSTER),
    **_spec((_INFO,), _LEAF, _TIMECODESCALE),
    **_spec((_TRACKS,), _HOOKED, _TRACKENTRY),
    **_spec((_TRACKENTRY,), _LEAF, _TRACKNUMBER, _TRACKUID, _NAME, _CODECID),
    **_spec((_TRACKENTRY,), _SKIP, _TRACKTYPE, _CODECPRIVATE, _VIDEO),
    **_spec((_TRACKENTRY,), _MASTER, _AUDIO),
    **_spec((_AUDIO,), _LEAF, _SAMPLINGFREQUENCY, _CHANNELS, _BITDEPTH),
    **_spec((_TAGS,), _MASTER, _TAG),
    **_spec((_TAG,), _SKIP, _TARGETS),
    **_spec((_TAG, _SIMPLETAG), _HOOKED, _SIMPLETAG),
    **_spec((_SIMPLETAG,), _LEAF, _TAGNAME, _TAGSTRING),
    **_spec((_SIMPLETAG,), _SKIP, _TAGBINARY, _TAGLANGUAGE, _TAGDEFAULT),
    **_spec((_CLUSTER,), _LEAF, _TIMECODE, _SIMPLEBLOCK),
    **_spec((_CLUSTER,), _SKIP, _POSITION, _PREVSIZE),
    **_spec((_CLUSTER,), _MASTER, _BLOCKGROUP),
    **_spec((_BLOCKGROUP,), _LEAF, _BLOCK),
    **_spec((_BLOCKGROUP,), _SKIP, _BLOCKDURATION, _REFERENCEBLOCK),
}

_VINT_LEN = bytes(9 - b.bit_length() for b in range(256))
"""Length of a VINT from its first byte; 9 marks the invalid first byte 0x00."""
_VINT_MASK = tuple((1 << (7 * n)) - 1 for n in range(9))
"""Value bits of an n-byte VINT; a size with all of them set means "unknown"."""
_NO_LIMIT = 1 << 63
_TAGS_REMEMBERED = 8
"""Distinct Tags payloads remembered, and Tags shapes: Connect repeats its producer Tags in every fragment,
and GetMedia's differ only in their values."""
_search_magic = re.compile(re.escape(EBML_MAGIC)).search
"""Where the next EBML magic starts; the stream's bytes go through here about once each. CPython's regex
engine scans for a literal about twice as fast as ``bytes.find`` does for a 4-byte needle."""
_HEADER_SIGNATURE = 14
"""Bytes that tell an EBML header from chance: magic (4), size VINT (up to 8), first child ID (2)."""
_EBML_HEADER_CHILDREN = frozenset({0x86, 0xF7, 0xF2, 0xF3, 0x82, 0x87, 0x85})
"""Second bytes of the EBML header's children: EBMLVersion, EBMLReadVersion, EBMLMaxIDLength,
EBMLMaxSizeLength, DocType, DocTypeVersion, DocTypeReadVersion."""
_RECOGNISED_MAX = 4096
"""Largest Tags or Tracks payload kept to recognise a repeat in a later fragment (for Tags, also one that
differs in its values only)."""

_LACING_XIPH = 0x02
_LACING_EBML = 0x06


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
    before it; the reader resumes at the next EBML header."""

    offset: int
    reason: str

    def error(self) -> MatroskaError:
        """The exception to raise for a caller that treats malformed input as fatal."""
        return MatroskaError(self.offset, self.reason)


# Frames are built by writing AudioFrame's slots directly: a frozen dataclass's __init__ goes through
# object.__setattr__ once per field, which made it the largest single cost of reading a block. The
# instances are the same either way.
_new = object.__new__
_set_track_name = AudioFrame.__dict__["track_name"].__set__
_set_track_number = AudioFrame.__dict__["track_number"].__set__
_set_timecode_ms = AudioFrame.__dict__["timecode_ms"].__set__
_set_pcm = AudioFrame.__dict__["pcm"].__set__
_set_offset = AudioFrame.__dict__["offset"].__set__


def _frame(track_name: str, track_number: int, timecode_ms: int, pcm: bytes, offset: int) -> AudioFrame:
    frame: AudioFrame = _new(AudioFrame)
    _set_track_name(frame, track_name)
    _set_track_number(frame, track_number)
    _set_timecode_ms(frame, timecode_ms)
    _set_pcm(frame, pcm)
    _set_offset(frame, offset)
    return frame


Event: TypeAlias = DocumentStart | TracksChanged | Tags | ClusterStart | AudioFrame | MalformedInput


class MatroskaError(Exception):
    """Matroska input that cannot be read, or a reader used after :meth:`MatroskaReader.close`."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


_Value: TypeAlias = tuple[str, int, int]
"""A tag as a Tags payload holds it: TagName, and where its TagString lies in the payload."""
_Open: TypeAlias = tuple[int, int, int | None, int]
"""An open master: ID, start offset, end offset (None when unknown), the offset its children must end by."""

_UNKNOWN = -1
"""The data size :func:`_element_header` gives an element whose size VINT says "unknown"."""
_UNDECIDED = -2
"""What :meth:`MatroskaReader._header_inside` answers while the bytes that tell have not arrived."""


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


def _text(src: bytes, a: int, b: int) -> str:
    # Matroska strings may be zero-padded to their element size.
    return src[a:b].rstrip(b"\x00").decode("utf-8", "replace")


class _Corrupt(Exception):
    """A step of the reader found the input malformed.

    The reader reports ``offset`` (by default the stream offset of the element the step was reading) and
    scans for the next EBML header from buffer index ``resume`` (by default the byte after that element's
    first).
    """

    def __init__(self, reason: str, offset: int | None = None, resume: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset
        self.resume = resume


def _element_header(buf: bytes, pos: int) -> tuple[int, int, int] | None:
    """The ID, data size and data offset of the element at ``buf[pos]``; None until its header has arrived.

    The size is :data:`_UNKNOWN` when its VINT has all value bits set. Raises :class:`_Corrupt` on a byte
    that cannot start a VINT.

        >>> _element_header(bytes.fromhex("e7 81 05"), 0)  # Timecode, 1 byte of data at index 2
        (231, 1, 2)
    """
    end = len(buf)
    if end - pos < 2:
        return None
    first = buf[pos]
    id_len = _VINT_LEN[first]
    if id_len > 4:
        raise _Corrupt(f"invalid element ID byte 0x{first:02x}")
    size_at = pos + id_len
    if size_at >= end:
        return None
    size_first = buf[size_at]
    size_len = _VINT_LEN[size_first]
    if size_len > 8:
        raise _Corrupt("invalid element size")
    data_at = size_at + size_len
    if data_at > end:
        return None
    if id_len == 1:
        eid = first
    elif id_len == 2:
        eid = (first << 8) | buf[pos + 1]
    else:
        eid = int.from_bytes(buf[pos:size_at], "big")
    if size_len == 1:
        size = size_first & 0x7F
    elif size_len == 2:
        size = ((size_first & 0x3F) << 8) | buf[size_at + 1]
    else:
        size = int.from_bytes(buf[size_at:data_at], "big") & _VINT_MASK[size_len]
    return eid, _UNKNOWN if size == _VINT_MASK[size_len] else size, data_at


def _connect_blocks(
    buf: bytes, pos: int, bound: int, base: int, by_byte: list[TrackInfo | None], cluster_tc: int, out: list[Event]
) -> int:
    """Read the run of Connect blocks at ``buf[pos]`` that ends by index ``bound``; return the index after it.

    Connect's every block is an unlaced SimpleBlock (A3) with a 2-byte size and the one-byte track number of a
    known track, so its frame is read inline: the time of reading a stream goes here. Anything else ends the
    run, for the element-wise path to read, and so does a block that ends past ``bound``, which the caller
    puts at the next EBML magic too. Timecodes are ``cluster_tc`` plus the block's, as milliseconds: the
    caller runs this only at the default TimecodeScale.

        pos = _connect_blocks(buf, pos, min(len(buf), limit - base, magic - base), base, by_byte, cluster_tc, out)
    """
    append = out.append
    new = _new
    set_track_name = _set_track_name
    set_track_number = _set_track_number
    set_timecode_ms = _set_timecode_ms
    set_pcm = _set_pcm
    set_offset = _set_offset
    end = len(buf)
    while end - pos > 7 and buf[pos] == 0xA3:
        size_first = buf[pos + 1]
        if not 0x40 <= size_first < 0x80:
            break
        size = ((size_first & 0x3F) << 8) | buf[pos + 2]
        stop = pos + 3 + size
        info = by_byte[buf[pos + 3]]
        if info is None or stop > bound or size < 4 or size == 0x3FFF or buf[pos + 6] & 0x06:
            break
        relative = (buf[pos + 4] << 8) | buf[pos + 5]
        if relative > 0x7FFF:
            relative -= 0x10000
        frame = new(AudioFrame)
        set_track_name(frame, info.name)
        set_track_number(frame, info.number)
        set_timecode_ms(frame, cluster_tc + relative)
        set_pcm(frame, buf[pos + 7 : stop])
        set_offset(frame, base + pos + 7)
        append(frame)
        pos = stop
    return pos


class MatroskaReader:
    """Sans-I/O incremental reader of concatenated Matroska documents (see the module docstring).

    A small state machine with three states: at an element boundary, where the innermost open master picks
    the next step (:meth:`_run`); inside an element that straddles feeds, skipped or collected as its bytes
    arrive (:meth:`_finish_pending`); scanning for the next EBML header after malformed input
    (:meth:`_resynchronise`).
    """

    __slots__ = (
        "_base",
        "_buf",
        "_by_byte",
        "_closed",
        "_cluster_tc",
        "_collected",
        "_entry",
        "_held",
        "_limit",
        "_magic",
        "_need",
        "_new_tracks",
        "_parent",
        "_parts",
        "_pend_data",
        "_pend_eid",
        "_pend_start",
        "_pos",
        "_scale",
        "_scanning",
        "_search_at",
        "_skip",
        "_stack",
        "_tag_stack",
        "_tags",
        "_tags_seen",
        "_tags_shapes",
        "_tail",
        "_tracks",
        "_tracks_pending_raw",
        "_tracks_raw",
    )

    def __init__(self) -> None:
        self._buf = b""
        self._pos = 0
        self._base = 0  # stream offset of self._buf[0]
        self._scanning = False
        self._closed = False
        # An element whose bytes straddle feeds: either skipped or collected whole.
        self._skip = 0
        self._need = 0
        self._parts: list[bytes] = []
        self._collected = 0  # bytes in self._parts
        self._pend_eid = 0
        self._pend_start = 0
        self._pend_data = 0
        # A pending element is searched for an EBML header as it arrives; the tail carries its last bytes,
        # where a header may have begun.
        self._tail = b""
        # Bytes of the stream after a magic that the pending element may end inside, taken with the next feed.
        self._held = b""
        # The EBML magics in the stream, found as the bytes arrive: the stream offset of the first one the
        # reader has not read past (_NO_LIMIT while none is known), and where the search goes on. Bytes from
        # self._search_at on are kept, as they may begin the next document.
        self._magic = _NO_LIMIT
        self._search_at = 0
        self._stack: list[_Open] = []
        # The innermost open master's ID and the stream offset its children must end by, kept with the stack.
        self._parent = _ROOT
        self._limit = _NO_LIMIT
        self._scale = DEFAULT_TIMECODE_SCALE
        self._cluster_tc = 0
        self._tracks: dict[int, TrackInfo] = {}
        # The tracks again, indexed by the one-byte track-number VINT that starts a block (hot path lookup).
        self._by_byte: list[TrackInfo | None] = [None] * 256
        self._new_tracks: dict[int, TrackInfo] = {}
        self._entry = _TrackEntry()
        self._tags: dict[str, str] = {}
        self._tag_stack: list[list[str | None]] = []
        # Payloads of recent Tags elements and what they held, their shapes by length; the raw Tracks behind
        # the mapping in force.
        self._tags_seen: dict[bytes, dict[str, str]] = {}
        self._tags_shapes: dict[int, _TagsShape] = {}
        self._tracks_raw = b""
        self._tracks_pending_raw = b""

    @property
    def buffered_bytes(self) -> int:
        """Bytes held while waiting for the rest of an element (never more than one element)."""
        return len(self._buf) - self._kept() + self._collected + len(self._held)

    def _kept(self) -> int:
        """The index of the first buffered byte the reader still needs: where it reads, or an earlier magic."""
        return min(self._pos, self._search_at - self._base)

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[Event]:
        """Take the next bytes of the stream; return the events they complete, in stream order."""
        if self._closed:
            raise MatroskaError(self._base + len(self._buf), "reader is closed")
        out: list[Event] = []
        self._take(bytes(data), out)
        return iter(out)

    def close(self) -> Iterator[Event]:
        """End of input: finish unknown-size masters, or report the element the input ends inside."""
        if self._closed:
            return iter(())
        self._closed = True
        out: list[Event] = []
        # No more bytes will tell a magic near the end from chance: it is none, and reading goes on past it.
        self._take(b"", out)
        if self._scanning:
            return iter(out)
        truncated: MalformedInput | None = None
        for eid, start, stop, _ in self._stack:
            if stop is not None:
                truncated = MalformedInput(start, f"input ends inside {_name(eid)} of {stop - start} bytes")
                break
        if truncated is None and (self._skip or self._need):
            truncated = MalformedInput(self._pend_start, f"input ends inside {_name(self._pend_eid)}")
        if truncated is None and self._pos < len(self._buf):
            truncated = MalformedInput(self._base + self._pos, "input ends inside an element header")
        if truncated is not None:
            out.append(truncated)
            return iter(out)
        while self._stack:
            eid, start, _, _ = self._stack.pop()
            reason = self._end_master(eid, start, out) if eid in _END_HOOKS else None
            if reason is not None:
                out.append(MalformedInput(start, reason))
                break
        return iter(out)

    def _take(self, chunk: bytes, out: list[Event]) -> None:
        """Add ``chunk`` to what is buffered, or to the element that straddles feeds, and read on."""
        if self._held:
            chunk = self._held + chunk
            self._held = b""
        if self._skip or self._need:
            if not self._finish_pending(chunk, out):
                return
        elif (kept := self._kept()) < len(self._buf):
            self._base += kept
            self._buf = self._buf[kept:] + chunk
            self._pos -= kept
        else:
            self._base += len(self._buf)
            self._buf = chunk
            self._pos = 0
        # Even with no bytes left, the element just completed may have been the last one of its masters.
        self._run(out)

    def _finish_pending(self, chunk: bytes, out: list[Event]) -> bool:
        """Feed the element that straddles feeds; once it is done, make the rest of ``chunk`` the buffer.

        Returns whether reading goes on from the buffer: the element is done, or an EBML header begins inside.
        """
        # While an element is pending the buffer is empty and self._base is the offset of chunk[0].
        collecting = self._need > 0
        remaining = self._need if collecting else self._skip
        taken = min(remaining, len(chunk))
        tail = self._tail
        # The element's bytes in this chunk after the last ones already taken, where a magic may have begun,
        # and the first bytes after the element, which tell a magic near its end from chance.
        window = tail + chunk[: taken + _HEADER_SIGNATURE]
        found = _first_header(window, 0, len(tail) + taken, len(window), self._closed)
        if found >= 0:
            if _header_at(window, found, len(window)) > 0:
                self._malformed(out, self._pend_start, f"{_name(self._pend_eid)} runs into an EBML header")
                self._rebuffer(window[found:] + chunk[len(window) - len(tail) :], self._base - len(tail) + found)
                return True
            # The bytes after that magic have not all come: take the ones before it, the rest with the next.
            taken = max(0, found - len(tail))
            self._held = chunk[taken:]
        portion = chunk[:taken]
        if collecting:
            self._parts.append(portion)
            self._collected += taken
            self._need -= taken
        else:
            self._skip -= taken
        if taken < remaining:
            self._tail = (tail + portion[-3:])[-3:]
            self._base += taken
            self._search_at = self._base
            return False
        self._tail = b""
        # The element's last bytes may begin a magic that the next ones complete: they stay buffered.
        lead = _magic_prefix(window, len(tail) + taken)
        if lead > taken:
            self._rebuffer(
                window[len(tail) + taken - lead :] + chunk[len(window) - len(tail) :], self._base + taken - lead
            )
            self._pos = lead
        else:
            self._buf = chunk
            self._pos = taken
            self._search_at = self._base + taken - lead
        if not collecting:
            return True
        payload = b"".join(self._parts)
        self._parts = []
        self._collected = 0
        reason = self._leaf(self._pend_eid, payload, 0, len(payload), self._pend_data, out)
        if reason is not None:
            self._malformed(out, self._pend_start, reason)
            self._pos = self._kept()
        return True

    def _rebuffer(self, buf: bytes, base: int) -> None:
        """Read on from ``buf``, which starts at stream offset ``base``, searching it for magics afresh."""
        self._buf = buf
        self._base = base
        self._pos = 0
        self._magic = _NO_LIMIT
        self._search_at = base

    def _malformed(self, out: list[Event], offset: int, reason: str) -> None:
        out.append(MalformedInput(offset, reason))
        self._stack.clear()
        self._tag_stack.clear()
        self._parts = []
        self._collected = 0
        self._need = 0
        self._skip = 0
        self._tail = b""
        self._scanning = True
        self._parent, self._limit = _ROOT, _NO_LIMIT

    def _remember_tags(self, raw: bytes, tags: dict[str, str], values: list[_Value]) -> None:
        if len(raw) > _RECOGNISED_MAX:
            return
        seen = self._tags_seen
        if len(seen) >= _TAGS_REMEMBERED:
            del seen[next(iter(seen))]
        seen[raw] = tags
        shapes = self._tags_shapes
        if len(raw) not in shapes and len(shapes) >= _TAGS_REMEMBERED:
            del shapes[next(iter(shapes))]
        shapes[len(raw)] = _TagsShape(raw, values)

    def _run(self, out: list[Event]) -> None:
        """Take steps through the buffer until one waits for bytes that have not arrived.

        The reader's state picks each step: scanning for the next EBML header after malformed input, the end
        of the innermost master once its children are read, the check of a magic that the element before
        ended inside, a run of Connect's blocks inside a Cluster, or the next element, read from its header as
        its kind asks. A step that finds the input malformed raises :class:`_Corrupt`; the reader reports it
        and scans on.
        """
        buf = self._buf
        pos = self._pos
        # A magic needs four bytes: fewer new ones cannot hold one.
        if self._magic == _NO_LIMIT and len(buf) - (self._search_at - self._base) >= len(EBML_MAGIC):
            self._find_magic(buf, self._search_at - self._base)
        while True:
            try:
                if self._scanning:
                    pos = self._resynchronise(buf, pos)
                    if self._scanning:
                        break
                    continue
                if self._base + pos >= self._limit:
                    pos = self._end_of_master(pos, out)
                    continue
                if self._magic < self._base + pos:
                    after = self._straddled(buf, pos)
                    if after is None:
                        break
                    pos = after
                    continue
                if self._parent == _CLUSTER and self._scale == DEFAULT_TIMECODE_SCALE and buf.startswith(b"\xa3", pos):
                    after = self._blocks(buf, pos, out)
                    if after != pos:
                        pos = after
                        continue
                header = _element_header(buf, pos)
                if header is None:
                    break
                eid, size, data_at = header
                spec = _SPEC.get(eid)
                kind = spec[1] if spec is not None and self._parent in spec[0] else self._place(eid, spec, pos, out)
                if kind in _DESCEND:
                    after = self._master(buf, pos, eid, kind, size, data_at, out)
                else:
                    after = self._content(buf, pos, eid, kind, size, data_at, out)
                if after is None:
                    break
                pos = after
            except _Corrupt as corrupt:
                pos = self._corrupt(corrupt, pos, out)
        self._pos = pos
        if self._kept() >= len(buf):
            self._base += len(buf)
            self._buf = b""
            self._pos = 0

    def _find_magic(self, buf: bytes, start: int) -> None:
        """Note the first EBML magic at index ``start`` or later; if none, where to look once more bytes arrive."""
        match = _search_magic(buf, start)
        if match is not None:
            self._magic = self._search_at = self._base + match.start()
        else:
            self._magic = _NO_LIMIT
            self._search_at = self._base + max(start, len(buf) - _magic_prefix(buf, len(buf)))

    def _resynchronise(self, buf: bytes, pos: int) -> int:
        """Scan for the next EBML header: a magic that the bytes after it confirm. Wait where they have not come."""
        base = self._base
        if self._magic < base + pos:
            self._find_magic(buf, pos)
        while (magic := self._magic - base) < len(buf):
            verdict = self._verdict(buf, magic)
            if verdict:
                self._scanning = verdict < 0
                return magic
            self._find_magic(buf, magic + 1)
        return self._search_at - base

    def _verdict(self, buf: bytes, magic: int) -> int:
        """Whether the EBML magic at ``buf[magic]`` begins a header: 1 yes, 0 no, -1 not told by the bytes yet."""
        verdict = _header_at(buf, magic, len(buf))
        # At the end of input no more bytes will tell, and a header that cannot be read is none.
        return 0 if verdict < 0 and self._closed else verdict

    def _corrupt(self, corrupt: _Corrupt, pos: int, out: list[Event]) -> int:
        """Report what the step at ``pos`` found malformed; return where the scan for an EBML header starts."""
        self._malformed(out, self._base + pos if corrupt.offset is None else corrupt.offset, corrupt.reason)
        resume = pos + 1 if corrupt.resume is None else corrupt.resume
        if self._magic < self._base + pos:
            # A magic that the element before ``pos`` ended inside is still to be judged: the scan starts there.
            resume = min(resume, self._magic - self._base)
        return resume

    def _straddled(self, buf: bytes, pos: int) -> int | None:
        """The element before ``pos`` ended inside an EBML magic: if a header begins there, so does a document.

        That element was read on its own bytes, as it had to be: the bytes that finish the magic may come in
        the next feed, and its frame cannot wait for them.
        """
        magic = self._magic - self._base
        verdict = self._verdict(buf, magic)
        if verdict < 0:
            return None
        if verdict:
            raise _Corrupt("EBML header begins inside the element before it", self._base + magic, magic)
        self._find_magic(buf, magic + 1)
        return pos

    def _header_inside(self, buf: bytes, pos: int, stop: int) -> int:
        """The index of an EBML header whose magic lies whole inside the element ``buf[pos:stop]``, or -1.

        Each magic is judged by the bytes after it, the element's and the stream's; while they have not all
        come the answer is :data:`_UNDECIDED` (rare: audio holds the magic by chance about once in 4 GiB, and
        it must then lie among the last bytes received). A magic that goes on past the element's end is left
        to :meth:`_straddled`.

            found = self._header_inside(buf, pos, data_at + size)
        """
        base = self._base
        last = min(stop, len(buf)) - 4
        while True:
            magic = self._magic - base
            if magic == pos:
                # The element's own ID: it is an EBML header, and the magic is read past.
                self._find_magic(buf, pos + 1)
                continue
            if magic > last:
                return -1
            verdict = self._verdict(buf, magic)
            if verdict:
                return magic if verdict > 0 else _UNDECIDED
            self._find_magic(buf, magic + 1)

    def _end_of_master(self, pos: int, out: list[Event]) -> int:
        """Close the innermost master, whose children end at ``pos``: a Tags or a Tracks completes here."""
        eid, start, _, limit = self._stack.pop()
        self._refresh_parent()
        if self._base + pos > limit:
            raise _Corrupt(f"{_name(eid)} overruns its size", start, pos)
        if eid in _END_HOOKS:
            reason = self._end_master(eid, start, out)
            if reason is not None:
                raise _Corrupt(reason, start, pos)
        return pos

    def _refresh_parent(self) -> None:
        if self._stack:
            self._parent, _, _, self._limit = self._stack[-1]
        else:
            self._parent, self._limit = _ROOT, _NO_LIMIT

    def _blocks(self, buf: bytes, pos: int, out: list[Event]) -> int:
        """Inside a Cluster at the default TimecodeScale: the run of Connect's blocks at ``pos``."""
        base = self._base
        bound = min(len(buf), self._limit - base, self._magic - base)
        return _connect_blocks(buf, pos, bound, base, self._by_byte, self._cluster_tc, out)

    def _place(self, eid: int, spec: tuple[frozenset[int], int] | None, pos: int, out: list[Event]) -> int:
        """What to do with ``eid``, which ``spec`` does not place in the open master: unlisted, or it ends masters."""
        if spec is None:
            if self._parent == _ROOT and eid != _VOID and eid != _CRC32:
                raise _Corrupt(f"unexpected element 0x{eid:x} outside a document")
            return _SKIP
        parents, kind = spec
        self._enter(eid, parents, pos, out)
        return kind

    def _enter(self, eid: int, parents: frozenset[int], pos: int, out: list[Event]) -> None:
        """End unknown-size masters until one can hold ``eid``; raise :class:`_Corrupt` if none can."""
        stack = self._stack
        found_in = self._parent
        while stack and stack[-1][2] is None:
            top, start, _, _ = stack.pop()
            reason = self._end_master(top, start, out) if top in _END_HOOKS else None
            if reason is not None:
                raise _Corrupt(reason, start, pos)
            if (stack[-1][0] if stack else _ROOT) in parents:
                self._refresh_parent()
                return
        if eid == _EBML and stack:
            # The previous document stops short; report it and read the new one from its header.
            out.append(MalformedInput(stack[0][1], f"document ends inside {_name(stack[-1][0])}"))
            stack.clear()
            self._tag_stack.clear()
            self._refresh_parent()
            return
        raise _Corrupt(f"{_name(eid)} cannot appear inside {_name(found_in)}")

    def _master(
        self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int, out: list[Event]
    ) -> int | None:
        """Open the master at ``pos``, or take it whole: Tags read in one pass, Tracks recognised as a repeat."""
        base = self._base
        if self._magic - base < data_at:
            found = self._header_inside(buf, pos, data_at)
            if found == _UNDECIDED:
                return None
            if found >= 0:
                raise _Corrupt(f"{_name(eid)} runs into an EBML header", resume=found)
        stop = data_at + size
        # Whole: all arrived, inside its parent, and no magic inside for its children to be judged by.
        whole = size != _UNKNOWN and stop <= len(buf) and base + stop <= self._limit and base + stop <= self._magic
        if eid == _TAGS and whole:
            if self._whole_tags(buf, pos, data_at, stop, out):
                return stop
        elif eid == _TRACKS:
            # Connect repeats the same Tracks in every fragment: byte for byte the mapping in force.
            raw = buf[data_at:stop] if whole and size <= _RECOGNISED_MAX else b""
            if raw and raw == self._tracks_raw:
                return stop
            self._tracks_pending_raw = raw
        if len(self._stack) >= MAX_DEPTH:
            raise _Corrupt("elements nested too deeply")
        if size == _UNKNOWN:
            limit = self._limit
            self._stack.append((eid, base + pos, None, limit))
        elif base + stop > self._limit:
            raise _Corrupt(f"{_name(eid)} overruns its parent")
        else:
            limit = base + stop
            self._stack.append((eid, base + pos, limit, limit))
        self._parent = eid
        self._limit = limit
        if kind == _HOOKED:
            self._begin_master(eid)
        return data_at

    def _whole_tags(self, buf: bytes, pos: int, data_at: int, stop: int, out: list[Event]) -> bool:
        """Read a Tags element whole in the buffer in one pass, or recognise it from a past fragment."""
        raw = buf[data_at:stop]
        tags = self._tags_seen.pop(raw, None)
        if tags is not None:
            self._tags_seen[raw] = tags
        else:
            shape = self._tags_shapes.get(stop - data_at)
            tags = shape.read(buf, data_at) if shape is not None else None
            if tags is None:
                read = _read_tags(buf, data_at, stop, len(self._stack) + 1)
                if read is None:
                    return False
                tags, values = read
                self._remember_tags(raw, tags, values)
        out.append(Tags(dict(tags), self._base + pos))
        return True

    def _content(
        self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int, out: list[Event]
    ) -> int | None:
        """Read, skip or start collecting the element at ``pos``, whose children (if any) are not read."""
        base = self._base
        stop = data_at + size
        if size == _UNKNOWN:
            raise _Corrupt(f"{_name(eid)} of unknown size")
        if size > MAX_ELEMENT_SIZE:
            raise _Corrupt(f"{_name(eid)} of {size} bytes exceeds the size limit")
        if base + stop > self._limit:
            raise _Corrupt(f"{_name(eid)} overruns its parent")
        found = self._header_inside(buf, pos, stop) if self._magic - base < stop else -1
        if found == _UNDECIDED:
            return None
        if kind == _HEADER:
            out.append(DocumentStart(base + pos))
        if found >= 0:
            raise _Corrupt(f"{_name(eid)} runs into an EBML header", resume=found)
        end = len(buf)
        if stop > end:
            self._begin_pending(buf, pos, eid, kind, size, data_at)
            return end
        if kind == _LEAF:
            reason = self._leaf(eid, buf, data_at, stop, base, out)
            if reason is not None:
                raise _Corrupt(reason)
        return stop

    def _begin_pending(self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int) -> None:
        """The element at ``pos`` straddles feeds: the rest of the buffer is its first part, to skip or collect."""
        end = len(buf)
        if kind == _LEAF:
            self._need = data_at + size - end
            self._parts = [buf[data_at:]]
            self._collected = end - data_at
        else:
            self._skip = data_at + size - end
        # From here the element's own search takes over, from the bytes where a magic may still begin.
        self._tail = buf[max(pos + 1, end - 3) :]
        self._search_at = self._base + end
        self._pend_eid = eid
        self._pend_start = self._base + pos
        self._pend_data = self._base + data_at

    def _begin_master(self, eid: int) -> None:
        if eid == _SIMPLETAG:
            self._tag_stack.append([None, None])
        elif eid == _CLUSTER:
            self._cluster_tc = 0
        elif eid == _TRACKENTRY:
            self._entry = _TrackEntry()
        elif eid == _TAGS:
            self._tags = {}
        elif eid == _TRACKS:
            self._new_tracks = {}
        elif eid == _SEGMENT:
            self._scale = DEFAULT_TIMECODE_SCALE
            self._cluster_tc = 0

    def _end_master(self, eid: int, start: int, out: list[Event]) -> str | None:
        if eid == _SIMPLETAG:
            name, value = self._tag_stack.pop()
            if name is not None and value is not None:
                self._tags[name] = value
        elif eid == _TAGS:
            out.append(Tags(self._tags, start))
            self._tags = {}
        elif eid == _TRACKENTRY:
            e = self._entry
            if e.number == 0:
                return "TrackEntry without a TrackNumber"
            if e.number in self._new_tracks:
                return f"two TrackEntry elements numbered {e.number}"
            self._new_tracks[e.number] = TrackInfo(
                e.number, e.name, e.codec_id, e.uid, e.sampling_rate, e.channels, e.bit_depth
            )
        elif eid == _TRACKS:
            tracks = self._new_tracks
            self._new_tracks = {}
            self._tracks_raw = self._tracks_pending_raw
            if tracks != self._tracks:
                self._tracks = tracks
                self._by_byte = [None] * 256
                for number, info in tracks.items():
                    if number < 0x7F:
                        self._by_byte[0x80 | number] = info
                out.append(TracksChanged(dict(tracks)))
        return None

    def _leaf(self, eid: int, src: bytes, a: int, b: int, src_base: int, out: list[Event]) -> str | None:
        """Read the leaf ``src[a:b]`` (``src[0]`` is at stream offset ``src_base``); say why it is invalid."""
        if eid in (_SIMPLEBLOCK, _BLOCK):
            return self._block(src, a, b, src_base, out)
        if eid == _TAGNAME:
            self._tag_stack[-1][0] = _text(src, a, b)
            return None
        if eid == _TAGSTRING:
            self._tag_stack[-1][1] = _text(src, a, b)
            return None
        if eid == _NAME:
            self._entry.name = _text(src, a, b)
            return None
        if eid == _CODECID:
            self._entry.codec_id = _text(src, a, b)
            return None
        if eid == _SAMPLINGFREQUENCY:
            if b - a not in (4, 8):
                return f"SamplingFrequency of {b - a} bytes"
            rate: float = struct.unpack_from(">f" if b - a == 4 else ">d", src, a)[0]
            # Also rules out NaN and infinity, which would make frame durations meaningless.
            if not 1.0 <= rate <= 1e9:
                return f"SamplingFrequency of {rate} Hz"
            self._entry.sampling_rate = rate
            return None
        if b - a > 8:
            return f"unsigned integer element 0x{eid:x} of {b - a} bytes"
        value = int.from_bytes(src[a:b], "big")
        if eid == _TIMECODE:
            self._cluster_tc = value
            out.append(ClusterStart(value * self._scale // 1_000_000))
        elif eid == _TRACKNUMBER:
            self._entry.number = value
        elif eid == _TRACKUID:
            self._entry.uid = value
        elif eid == _CHANNELS:
            self._entry.channels = value
        elif eid == _BITDEPTH:
            self._entry.bit_depth = value
        elif eid == _TIMECODESCALE:
            if value == 0:
                return "TimecodeScale of 0"
            self._scale = value
        return None

    def _block(self, src: bytes, a: int, b: int, src_base: int, out: list[Event]) -> str | None:
        if a >= b:
            return "empty block"
        first = src[a]
        track_len = _VINT_LEN[first]
        if track_len > 8:
            return "invalid track number in block"
        head = a + track_len
        if head + 3 > b:
            return "block shorter than its header"
        track = first & 0x7F if track_len == 1 else int.from_bytes(src[a:head], "big") & _VINT_MASK[track_len]
        info = self._tracks.get(track)
        if info is None:
            return f"block for unknown track {track}"
        relative = (src[head] << 8) | src[head + 1]
        if relative & 0x8000:
            relative -= 0x10000
        ms = (self._cluster_tc + relative) * self._scale // 1_000_000
        lacing = src[head + 2] & 0x06
        data = head + 3
        if not lacing:
            out.append(_frame(info.name, track, ms, src[data:b], src_base + data))
            return None
        return self._laced(src, data, b, lacing, info, ms, src_base, out)

    def _laced(
        self,
        src: bytes,
        p: int,
        b: int,
        lacing: int,
        info: TrackInfo,
        ms: int,
        src_base: int,
        out: list[Event],
    ) -> str | None:
        if p >= b:
            return "laced block without a frame count"
        count = src[p] + 1
        p += 1
        sizes: list[int] = []
        if lacing == _LACING_XIPH:
            for _ in range(count - 1):
                size = 0
                while True:
                    if p >= b:
                        return "Xiph lacing header overruns the block"
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
                    return "EBML lacing header overruns the block"
                n = _VINT_LEN[src[p]]
                if n > 8 or p + n > b:
                    return "invalid EBML lace size"
                raw = int.from_bytes(src[p : p + n], "big") & _VINT_MASK[n]
                p += n
                # Sizes after the first are signed differences, stored with a bias of 2^(7n-1) - 1.
                size = raw if i == 0 else size + raw - ((1 << (7 * n - 1)) - 1)
                if size < 0:
                    return "negative EBML lace size"
                sizes.append(size)
        else:  # fixed-size lacing, 0x04
            total = b - p
            if total % count:
                return f"fixed-size lacing of {total} bytes into {count} frames"
            sizes = [total // count] * (count - 1)
        last = b - p - sum(sizes)
        if last < 0:
            return "lace sizes exceed the block"
        sizes.append(last)
        bytes_per_second = info.sampling_rate * info.channels * ((info.bit_depth or 16) // 8)
        before = 0
        for size in sizes:
            at = ms + int(before * 1000 / bytes_per_second) if bytes_per_second > 0 else ms
            out.append(_frame(info.name, info.number, at, src[p : p + size], src_base + p))
            p += size
            before += size
        return None


def _header_at(data: bytes, i: int, stop: int) -> int:
    """Whether the EBML magic at ``data[i]`` starts a real EBML header: 1 yes, 0 no, -1 unknown by ``stop``.

    A header is the magic, a size VINT, then one of the header's own 0x42xx children, which random bytes
    (PCM that happens to hold the magic) almost never imitate.
    """
    if i + 5 > stop:
        return -1
    size_len = _VINT_LEN[data[i + 4]]
    if size_len > 8:
        return 0
    child = i + 4 + size_len
    if child + 2 > stop:
        return -1
    return 1 if data[child] == 0x42 and data[child + 1] in _EBML_HEADER_CHILDREN else 0


def _magic_prefix(data: bytes, end: int) -> int:
    """How many of the bytes before ``data[end]`` (three at most) could be the first bytes of an EBML magic.

    >>> _magic_prefix(bytes.fromhex("00 1a 45 00"), 3)
    2
    """
    # The magic holds one 0x1A, its first byte: a prefix can only start at the last one.
    first = data.rfind(0x1A, max(0, end - 3), end)
    return end - first if first >= 0 and EBML_MAGIC.startswith(data[first:end]) else 0


def _first_header(data: bytes, start: int, stop: int, end: int, final: bool) -> int:
    """The index of the first EBML header whose magic lies whole in ``data[start:stop]``, or -1.

    Each magic is judged by ``data[:end]``. Unless ``final`` (no more bytes will come), a magic those bytes
    cannot yet tell from chance counts too, for the caller to judge again once more bytes arrive.

    >>> _first_header(EBML_MAGIC + bytes.fromhex("a3 42 86"), 0, 4, 7, final=True)
    0
    """
    i = data.find(EBML_MAGIC, start, stop)
    while i >= 0:
        verdict = _header_at(data, i, end)
        if verdict > 0 or (verdict < 0 and not final):
            return i
        i = data.find(EBML_MAGIC, i + 1, stop)
    return -1


_OPEN_CHILD = 0
_TAG_NAME = 1
_TAG_STRING = 2
_IGNORE = 3


def _tags_tree() -> dict[int, dict[int, int]]:
    """For Tags, Tag and SimpleTag: what :func:`_read_tags` does with each child _SPEC allows there."""
    tree: dict[int, dict[int, int]] = {}
    for parent in (_TAGS, _TAG, _SIMPLETAG):
        children = tree[parent] = {}
        for eid, (parents, kind) in _SPEC.items():
            if parent in parents:
                children[eid] = {_TAGNAME: _TAG_NAME, _TAGSTRING: _TAG_STRING}.get(
                    eid, _OPEN_CHILD if kind in _DESCEND else _IGNORE
                )
    return tree


_TAGS_TREE = _tags_tree()


def _read_tags(buf: bytes, a: int, b: int, depth: int) -> tuple[dict[str, str], list[_Value]] | None:
    """Read a Tags payload that is whole in ``buf[a:b]`` in one pass: its tags, and where their values lie.

    Returns None on anything unusual (a malformed or misplaced element, too deep a nesting), for the
    element-wise path to read and judge. ``depth`` is the nesting level of the Tags element itself.
    """
    tags: dict[str, str] = {}
    values: list[_Value] = []
    vlen = _VINT_LEN
    tree = _TAGS_TREE
    # The open Tag and SimpleTag elements above the current one: their end, children, TagName and where their
    # TagString lies.
    above: list[tuple[int, dict[int, int], str | None, int, int]] = []
    end = b
    children = tree[_TAGS]
    name: str | None = None
    value_at = value_end = -1
    p = a
    while True:
        if p == end:
            if not above:
                return tags, values
            if name is not None and value_at >= 0:
                tags[name] = _text(buf, value_at, value_end)
                values.append((name, value_at - a, value_end - a))
            end, children, name, value_at, value_end = above.pop()
            continue
        first = buf[p]
        if first & 0x40 and not first & 0x80:
            eid = (first << 8) | buf[p + 1] if p + 1 < end else -1
            size_at = p + 2
        elif first & 0x80:
            eid = first
            size_at = p + 1
        else:
            id_len = vlen[first]
            size_at = p + id_len
            if id_len > 4 or size_at > end:
                return None
            eid = int.from_bytes(buf[p:size_at], "big")
        if size_at >= end:
            return None
        size_first = buf[size_at]
        if size_first & 0x80:
            size = size_first & 0x7F
            data_at = size_at + 1
            unknown = size == 0x7F
        else:
            size_len = vlen[size_first]
            data_at = size_at + size_len
            if size_len > 8 or data_at > end:
                return None
            size = int.from_bytes(buf[size_at:data_at], "big") & _VINT_MASK[size_len]
            unknown = size == _VINT_MASK[size_len]
        stop = data_at + size
        if unknown or stop > end:
            return None
        action = children.get(eid)
        if action is None:
            if eid in _SPEC:
                return None
        elif action == _TAG_STRING:
            value_at, value_end = data_at, stop
        elif action == _TAG_NAME:
            name = _text(buf, data_at, stop)
        elif action == _OPEN_CHILD:
            if depth + len(above) >= MAX_DEPTH:
                return None
            above.append((end, children, name, value_at, value_end))
            end = stop
            children = tree[eid]
            name = None
            value_at = value_end = -1
            stop = data_at
        p = stop


class _TagsShape:
    """A Tags payload read before, as every byte of it but its TagString values.

    GetMedia's Tags differ from one fragment to the next in their values alone (fragment number, timestamps,
    continuation token), mostly of the same lengths. A payload whose other bytes are the same reads as this
    one did, element by element, only with its own values.

        tags = _TagsShape(raw, values).read(buf, data_at)  # None unless buf[data_at:] has the shape
    """

    __slots__ = ("fixed", "values")

    def __init__(self, raw: bytes, values: list[_Value]) -> None:
        self.values = values
        self.fixed: list[tuple[int, bytes]] = []
        at = 0
        for _, start, stop in sorted(values, key=lambda value: value[1]):
            self.fixed.append((at, raw[at:start]))
            at = stop
        self.fixed.append((at, raw[at:]))

    def read(self, buf: bytes, a: int) -> dict[str, str] | None:
        """The tags of the payload at ``buf[a:]``, as long as the shape's, or None if it has another shape."""
        for at, same in self.fixed:
            if not buf.startswith(same, a + at):
                return None
        return {name: _text(buf, a + start, a + stop) for name, start, stop in self.values}


def _name(eid: int) -> str:
    return _NAMES.get(eid, f"element 0x{eid:x}")
