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

Every element is ``ID VINT | size VINT | payload`` (RFC 8794). A (Simple)Block payload is ``track-number
VINT | int16 timecode relative to the cluster | flags | [lacing header] frame data``; lacing is none, Xiph,
EBML or fixed-size (RFC 9559, Matroska). Void (EC) and CRC-32 (BF) may appear inside any master. Amazon
Connect labels its tracks ``A_AAC`` although the frames carry 16-bit little-endian PCM, so frame data is
handed over untouched.

:class:`MatroskaReader` is sans-I/O: ``feed(bytes)`` returns the events completed by those bytes,
``close()`` the ones completed by the end of input. It descends into master elements and buffers only the
leaf being read (and keeps the two elements read before it, see below), so memory stays bounded by a few
elements whatever the chunking, and each event leaves the reader as soon as the last byte of its element
arrives. An unknown-size master ends when an element arrives that the Matroska hierarchy does not allow
inside it (a new EBML header, a Cluster or Tags at segment level).

Sizes are trusted: while the input reads as well-formed, no byte is searched for the next EBML header.
Damage shows as an invalid ID or size VINT; an element that the open master cannot hold (Matroska lists
every child of a Segment, a Cluster and a BlockGroup, and a Segment holds one Info and one Tracks, a Cluster
one Timecode); a Segment without its EBML header; a size that overruns the parent or exceeds
:data:`MAX_ELEMENT_SIZE`; a block for an unknown track or with reserved flag bits set; input that ends
inside an element. It yields :class:`MalformedInput`, and only then does the reader search for the next EBML
header, from the start of the older of the last two elements it read whole. So damage the reader sees
where it is costs at most its fragment. So does a fragment cut short inside an element, whose trusted size
then runs over the next document's header, as long as the damage shows within the next element or two, as
bytes read from the wrong place almost always make it: the reader resumes at that header. A frame already
out stays out, though, and the block cut short may have carried the next document's first bytes; a size
that ends exactly on an element boundary of the next document reads as well-formed, and costs that one too.

    reader = MatroskaReader()
    for chunk in chunks:
        for event in reader.feed(chunk):
            if isinstance(event, AudioFrame) and event.track_name == "AUDIO_FROM_CUSTOMER":
                send(event.pcm)
    for event in reader.close():
        ...
"""

from __future__ import annotations

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
_SILENTTRACKS = 0x5854
_POSITION = 0xA7
_PREVSIZE = 0xAB
_SIMPLEBLOCK = 0xA3
_BLOCKGROUP = 0xA0
_ENCRYPTEDBLOCK = 0xAF
_BLOCK = 0xA1
_BLOCKVIRTUAL = 0xA2
_BLOCKADDITIONS = 0x75A1
_BLOCKDURATION = 0x9B
_REFERENCEPRIORITY = 0xFA
_REFERENCEBLOCK = 0xFB
_REFERENCEVIRTUAL = 0xFD
_CODECSTATE = 0xA4
_DISCARDPADDING = 0x75A2
_SLICES = 0x8E
_REFERENCEFRAME = 0xC8
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
_END_HOOKS = frozenset({_SIMPLETAG, _TAGS, _TRACKENTRY, _TRACKS, _INFO})
_GROUPED = frozenset({_INFO, _TAGS, _TRACKS})
"""Masters that count as one element read whole (their children do not), whether they are taken whole from
the buffer (recognised, or read in one pass) or child by child, as they are when they straddle feeds."""


def _spec(parents: tuple[int, ...], kind: int, *eids: int) -> dict[int, tuple[frozenset[int], int]]:
    return dict.fromkeys(eids, (frozenset(parents), kind))


# Where each element may appear, and what to do with it. Void and CRC-32 belong to whichever master is
# open, and so do unlisted elements, except in the masters of _CLOSED; the listed ones are what lets an
# unknown-size master end.
_SPEC: dict[int, tuple[frozenset[int], int]] = {
    **_spec((_ROOT,), _HEADER, _EBML),
    **_spec((_ROOT,), _HOOKED, _SEGMENT),
    **_spec((_SEGMENT,), _SKIP, _SEEKHEAD, _CUES, _CHAPTERS, _ATTACHMENTS),
    **_spec((_SEGMENT,), _HOOKED, _INFO, _TRACKS, _TAGS, _CLUSTER),
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
    # Integers are read (and their size judged) although only Timecode's value is needed: where misread
    # bytes pass for an element, the damage then shows at once.
    **_spec((_CLUSTER,), _LEAF, _TIMECODE, _SIMPLEBLOCK, _POSITION, _PREVSIZE),
    **_spec((_CLUSTER,), _SKIP, _SILENTTRACKS, _ENCRYPTEDBLOCK),
    **_spec((_CLUSTER,), _MASTER, _BLOCKGROUP),
    **_spec((_BLOCKGROUP,), _LEAF, _BLOCK, _BLOCKDURATION, _REFERENCEPRIORITY, _REFERENCEBLOCK, _DISCARDPADDING),
    **_spec(
        (_BLOCKGROUP,),
        _SKIP,
        _BLOCKVIRTUAL,
        _BLOCKADDITIONS,
        _REFERENCEVIRTUAL,
        _CODECSTATE,
        _SLICES,
        _REFERENCEFRAME,
    ),
}

_CLOSED = frozenset({_ROOT, _SEGMENT, _CLUSTER, _BLOCKGROUP})
"""Masters whose every child Matroska lists (and _SPEC holds): anything else inside one is damage. Misread
bytes land in a Cluster most of all, and there they cannot pass for skippable unknown elements."""
_ONCE_BITS = {_INFO: 1, _TRACKS: 2}
"""Segment children that Matroska allows once per Segment, as bits of MatroskaReader._once."""

_VINT_LEN = bytes(9 - b.bit_length() for b in range(256))
"""Length of a VINT from its first byte; 9 marks the invalid first byte 0x00."""
_VINT_MASK = tuple((1 << (7 * n)) - 1 for n in range(9))
"""Value bits of an n-byte VINT; a size with all of them set means "unknown"."""
_NO_LIMIT = 1 << 63
_TAGS_REMEMBERED = 8
"""Distinct Tags payloads remembered, and Tags shapes: Connect repeats its producer Tags in every fragment,
and GetMedia's differ only in their values."""
_EBML_HEADER_CHILDREN = frozenset({0x86, 0xF7, 0xF2, 0xF3, 0x82, 0x87, 0x85})
"""Second bytes of the EBML header's children: EBMLVersion, EBMLReadVersion, EBMLMaxIDLength,
EBMLMaxSizeLength, DocType, DocTypeVersion, DocTypeReadVersion."""
_RECOGNISED_MAX = 4096
"""Largest Tags or Tracks payload kept to recognise a repeat in a later fragment (for Tags, also one that
differs in its values only)."""

_LACING_XIPH = 0x02
_LACING_EBML = 0x06
_RESERVED_FLAGS = {_SIMPLEBLOCK: 0x70, _BLOCK: 0xF0}
"""Flag bits that Matroska reserves (set to 0) in a SimpleBlock and in a Block."""
_BLOCK_HEAD = struct.Struct(">HBhB").unpack_from
"""A Connect block after its ID: 2-byte size VINT, 1-byte track-number VINT, relative timecode, flags."""


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
_Whole: TypeAlias = tuple[int, int, int]
"""An element read whole: its start and end stream offsets, and its ID."""

_UNKNOWN = -1
"""The data size :func:`_element_header` gives an element whose size VINT says "unknown"."""
_NOTHING: _Whole = (-1, -1, 0)


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

    ``offset`` is the stream offset to report (by default that of the element the step was reading), and
    ``at`` where the damage showed (by default the same); ``eid`` is the element's ID, where it is known.
    ``end``, where the element's size says it ends, is given when an EBML header inside it would explain the
    damage better: it is then reported as the element running into that header.
    """

    def __init__(
        self, reason: str, offset: int | None = None, at: int | None = None, end: int | None = None, eid: int = 0
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.offset = offset
        self.at = at
        self.end = end
        self.eid = eid


class _Damage:
    """Malformed input found, reported once the scan knows where the next EBML header is (if anywhere)."""

    __slots__ = ("at", "eid", "end", "exclude", "offset", "reason", "wholes")

    def __init__(self, corrupt: _Corrupt, offset: int, at: int, wholes: tuple[_Whole, _Whole]) -> None:
        self.offset = offset
        self.reason = corrupt.reason
        self.at = at
        self.end = corrupt.end
        self.eid = corrupt.eid
        # A damaged EBML header is no place to resume.
        self.exclude = at if corrupt.eid == _EBML else -1
        self.wholes = wholes

    def report(self, header: int | None) -> MalformedInput:
        """The event for this damage, given the stream offset of the EBML header the reader resumes at."""
        if header is not None and header < self.at:
            # The header lies in bytes read before the damage showed: an element they hold was cut short.
            for start, end, eid in self.wholes:
                if start < header < end and header + len(EBML_MAGIC) <= end:
                    return MalformedInput(start, f"{_name(eid)} runs into an EBML header")
            return MalformedInput(header, "EBML header begins inside the element before it")
        if header is not None and self.end is not None and header < self.end:
            return MalformedInput(self.offset, f"{_name(self.eid)} runs into an EBML header")
        return MalformedInput(self.offset, self.reason)


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
) -> tuple[int, int, int]:
    """Read the run of Connect blocks at ``buf[pos]`` that ends by index ``bound``.

    Connect's every block is an unlaced SimpleBlock (A3) with a 2-byte size and the one-byte track number of a
    known track, so its frame is read inline: the time of reading a stream goes here. Anything else ends the
    run, for the element-wise path to read (and judge). Timecodes are ``cluster_tc`` plus the block's, as
    milliseconds: the caller runs this only at the default TimecodeScale. Returns the index after the run and
    the starts of its last two blocks (-1 for none).

        pos, last, before = _connect_blocks(buf, pos, min(len(buf), limit - base), base, by_byte, tc, out)
    """
    append = out.append
    new = _new
    head = _BLOCK_HEAD
    set_track_name = _set_track_name
    set_track_number = _set_track_number
    set_timecode_ms = _set_timecode_ms
    set_pcm = _set_pcm
    set_offset = _set_offset
    last = before = -1
    # The 7 bytes of a block's header must have arrived; its frame must end by the bound.
    while pos + 7 <= bound and buf[pos] == 0xA3:
        word, track, relative, flags = head(buf, pos + 1)
        # A 2-byte size VINT (01xx xxxx xxxx xxxx), not "unknown", that holds at least the block's header.
        stop = pos + word - 0x3FFD
        info = by_byte[track]
        if not 0x4004 <= word < 0x7FFF or info is None or stop > bound or flags & 0x76:
            break
        frame = new(AudioFrame)
        set_track_name(frame, info.name)
        set_track_number(frame, info.number)
        set_timecode_ms(frame, cluster_tc + relative)
        set_pcm(frame, buf[pos + 7 : stop])
        set_offset(frame, base + pos + 7)
        append(frame)
        before = last
        last = pos
        pos = stop
    return pos, last, before


class MatroskaReader:
    """Sans-I/O incremental reader of concatenated Matroska documents (see the module docstring).

    A small state machine with three states: at an element boundary, where the innermost open master picks
    the next step (:meth:`_run`); inside an element that straddles feeds, collected as its bytes arrive
    (:meth:`_finish_pending`); scanning for the next EBML header once damage has shown (:meth:`_resynchronise`).
    """

    __slots__ = (
        "_base",
        "_buf",
        "_by_byte",
        "_closed",
        "_cluster_tc",
        "_collected",
        "_damage",
        "_doc_at",
        "_doc_open",
        "_entry",
        "_head",
        "_head_at",
        "_head_info",
        "_head_scale",
        "_head_tracks",
        "_head_tracks_raw",
        "_info_pending_raw",
        "_info_raw",
        "_info_scale",
        "_inside",
        "_limit",
        "_need",
        "_new_tracks",
        "_old",
        "_old_at",
        "_once",
        "_parent",
        "_parts",
        "_parts_at",
        "_pend_data",
        "_pend_eid",
        "_pend_end",
        "_pend_kind",
        "_pend_start",
        "_pos",
        "_resyncs",
        "_scale",
        "_scanning",
        "_stack",
        "_tag_stack",
        "_tags",
        "_tags_seen",
        "_tags_shapes",
        "_timed",
        "_tracks",
        "_tracks_pending_raw",
        "_tracks_raw",
        "_whole1",
        "_whole2",
    )

    def __init__(self) -> None:
        self._buf = b""
        self._pos = 0
        self._base = 0  # stream offset of self._buf[0]
        self._scanning = False
        self._closed = False
        self._resyncs = 0
        self._damage: _Damage | None = None
        # An element whose bytes straddle feeds, collected whole. The parts start at stream offset
        # self._parts_at, before the element: they hold the bytes a scan after damage may need too.
        self._need = 0
        self._parts: list[bytes] = []
        self._parts_at = 0
        self._collected = 0  # bytes of the element's data in self._parts
        self._pend_eid = 0
        self._pend_kind = _SKIP
        self._pend_start = 0
        self._pend_data = 0
        self._pend_end = 0
        # The last two elements read whole, and the bytes from the older one's start up to the buffer, kept
        # so that the scan after damage can start there (see the module docstring).
        self._whole1 = _NOTHING
        self._whole2 = _NOTHING
        self._inside = 0  # open _GROUPED masters
        self._old = b""
        self._old_at = 0
        # Where the current document's EBML header starts, and whether its Segment is still to come.
        self._doc_at = -1
        self._doc_open = False
        self._once = 0  # _ONCE_BITS of the Segment's children read so far
        self._timed = False  # the Cluster's Timecode has been read
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
        # The raw Info last read, and the TimecodeScale it set.
        self._info_raw = b""
        self._info_pending_raw = b""
        self._info_scale = DEFAULT_TIMECODE_SCALE
        # The head of the last document (EBML header, Segment, Info, Tracks) as bytes, where its Segment, Info
        # and Tracks start and where Info ends, and what reading it set (see _replay_head).
        self._head = b""
        self._head_at = (0, 0, 0, 0)
        self._head_info = b""
        self._head_tracks_raw = b""
        self._head_scale = DEFAULT_TIMECODE_SCALE
        self._head_tracks: dict[int, TrackInfo] = {}

    @property
    def buffered_bytes(self) -> int:
        """Bytes held while waiting for the rest of an element (never more than one element).

        Not counted: the bytes of the last two elements read, kept for a scan should damage show after them.
        """
        return len(self._buf) - self._pos + self._collected

    @property
    def resynchronisations(self) -> int:
        """How many times damage made the reader scan for the next EBML header (0 for well-formed input)."""
        return self._resyncs

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
        # A scan waiting on the bytes after a magic near the end now judges it by the bytes there are.
        self._take(b"", out)
        # Input that ends inside an element is damage like any other: the bytes kept may hold the next
        # document (an element cut short by it), and reading goes on from there.
        while (truncated := self._truncation()) is not None:
            self._corrupt(truncated, out)
            self._run(out)
        while self._stack:
            eid, start, _, _ = self._stack.pop()
            reason = self._end_master(eid, start, out) if eid in _END_HOOKS else None
            if reason is not None:
                out.append(MalformedInput(start, reason))
                break
        return iter(out)

    def _truncation(self) -> _Corrupt | None:
        """What the input ends inside, once every byte is read: a known-size master, an element, a header."""
        pending = self._need > 0
        if pending:
            # The element's bytes become the kept ones, for the scan to search.
            self._old = b"".join(self._parts)
            self._old_at = self._parts_at
            self._parts = []
            self._need = self._collected = 0
        end = self._base + len(self._buf)
        for eid, start, stop, _ in self._stack:
            if stop is not None:
                return _Corrupt(f"input ends inside {_name(eid)} of {stop - start} bytes", start, end)
        if pending:
            start = self._pend_start
            return _Corrupt(f"input ends inside {_name(self._pend_eid)}", start, start, self._pend_end, self._pend_eid)
        if self._pos < len(self._buf):
            at = self._base + self._pos
            return _Corrupt("input ends inside an element header", at, at)
        return None

    def _take(self, chunk: bytes, out: list[Event]) -> None:
        """Add ``chunk`` to what is buffered, or to the element that straddles feeds, and read on."""
        if self._need:
            try:
                if not self._finish_pending(chunk, out):
                    return
            except _Corrupt as corrupt:
                self._corrupt(corrupt, out)
        elif self._buf:
            # The first bytes of an element header (or, while scanning, of a magic): rare, and short.
            self._buf = self._buf[self._pos :] + chunk
            self._base += self._pos
            self._pos = 0
        else:
            self._buf = chunk
        # Even with no bytes left, the element just completed may have been the last one of its masters.
        self._run(out)

    def _finish_pending(self, chunk: bytes, out: list[Event]) -> bool:
        """Collect the element that straddles feeds; once it is whole, read it and buffer the rest of ``chunk``.

        Returns whether reading goes on from the buffer.
        """
        need = self._need
        if len(chunk) < need:
            self._parts.append(chunk)
            self._need = need - len(chunk)
            self._collected += len(chunk)
            self._base += len(chunk)
            return False
        self._parts.append(chunk[:need])
        joined = b"".join(self._parts)
        self._parts = []
        self._need = self._collected = 0
        self._old = joined
        self._old_at = at = self._parts_at
        self._buf = chunk
        self._pos = need
        start = self._pend_start
        eid = self._pend_eid
        if self._pend_kind == _LEAF:
            reason = self._leaf(eid, joined, self._pend_data - at, len(joined), at, out)
            if reason is not None:
                raise _Corrupt(reason, start, start, self._pend_end, eid)
        self._read_whole(start, self._pend_end, eid)
        return True

    def _read_whole(self, start: int, end: int, eid: int) -> None:
        """Note the element ``eid`` at stream offsets ``start`` to ``end`` as read whole."""
        if not self._inside:
            self._whole2 = self._whole1
            self._whole1 = (start, end, eid)

    def _bytes_from(self, start: int, end: int) -> bytes:
        """The stream's bytes from offset ``start`` (or the first one kept) to ``end``, which is in the buffer."""
        base = self._base
        if start >= base:
            return self._buf[start - base : end - base]
        old_at = self._old_at
        old_end = old_at + len(self._old)
        return self._old[max(0, start - old_at) :] + self._buf[old_end - base : end - base]

    def _anchor(self) -> int:
        """The stream offset from which a scan after damage may need bytes: the older of the last two elements
        read whole, or the current document's EBML header if that is later."""
        return max(self._whole2[0], self._doc_at)

    def _corrupt(self, corrupt: _Corrupt, out: list[Event], pos: int | None = None) -> None:
        """Note the damage a step at buffer index ``pos`` found, drop the open masters, and scan for the next
        EBML header from the byte after the anchor; the damage is reported once the scan has an answer."""
        at = corrupt.at if corrupt.at is not None else self._base + (self._pos if pos is None else pos)
        offset = corrupt.offset if corrupt.offset is not None else at
        self._damage = _Damage(corrupt, offset, at, (self._whole1, self._whole2))
        end = self._base + len(self._buf)
        region = self._bytes_from(self._anchor() + 1, end)
        self._buf = region
        self._base = self._old_at = end - len(region)
        self._old = b""
        self._pos = 0
        self._stack.clear()
        self._tag_stack.clear()
        self._inside = 0
        self._parts = []
        self._need = self._collected = 0
        self._parent, self._limit = _ROOT, _NO_LIMIT
        self._scanning = True
        self._resyncs += 1

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

        The reader's state picks each step: scanning for the next EBML header after damage, the end of the
        innermost master once its children are read, a run of Connect's blocks inside a Cluster, or the next
        element, read from its header as its kind asks. A step that finds the input malformed raises
        :class:`_Corrupt`; the reader notes it and scans.
        """
        buf = self._buf
        pos = self._pos
        while True:
            try:
                if self._scanning:
                    pos = self._resynchronise(buf, pos, out)
                    if self._scanning:
                        break
                    continue
                if self._base + pos >= self._limit:
                    pos = self._end_of_master(pos, out)
                    continue
                if (
                    pos < len(buf)
                    and buf[pos] == 0xA3
                    and self._parent == _CLUSTER
                    and self._scale == DEFAULT_TIMECODE_SCALE
                ):
                    after = self._blocks(buf, pos, out)
                    if after != pos:
                        pos = after
                        continue
                header = _element_header(buf, pos)
                if header is None:
                    break
                eid, size, data_at = header
                spec = _SPEC.get(eid)
                if spec is not None and self._parent in spec[0]:
                    kind = spec[1]
                else:
                    kind = self._place(eid, spec, pos, size, data_at, out)
                if kind in _DESCEND:
                    pos = self._master(buf, pos, eid, kind, size, data_at, out)
                    continue
                if (
                    kind == _HEADER
                    and self._head
                    and self._tracks is self._head_tracks
                    and buf.startswith(self._head, pos)
                ):
                    pos = self._replay_head(pos, out)
                    continue
                stop = self._content(buf, pos, eid, kind, size, data_at, out)
                if stop is None:
                    # The element straddles feeds: its bytes are collected as they arrive.
                    self._buf = b""
                    self._pos = 0
                    return
                pos = stop
            except _Corrupt as corrupt:
                self._corrupt(corrupt, out, pos)
                buf = self._buf
                pos = 0
        self._keep(buf, pos)

    def _keep(self, buf: bytes, pos: int) -> None:
        """Keep what a later step may need of ``buf``: its unread bytes, and those from the anchor on."""
        base = self._base
        if not self._scanning:
            anchor = self._anchor()
            if anchor < base + pos:
                self._old = self._bytes_from(anchor, base + pos)
                self._old_at = base + pos - len(self._old)
            else:
                self._old = b""
                self._old_at = base + pos
        self._buf = buf[pos:] if pos < len(buf) else b""
        self._base = base + pos
        self._pos = 0

    def _resynchronise(self, buf: bytes, pos: int, out: list[Event]) -> int:
        """Scan for the next EBML header: a magic that the bytes after it confirm. Wait where they have not come.

        Once the scan knows where reading resumes, or that it does not before the end of input, the damage is
        reported.
        """
        damage = self._damage
        assert damage is not None
        base = self._base
        end = len(buf)
        i = buf.find(EBML_MAGIC, pos)
        while i >= 0:
            if base + i != damage.exclude:
                verdict = _header_at(buf, i, end)
                if verdict > 0:
                    break
                # At the end of input no more bytes will tell, and a header that cannot be read is none.
                if verdict < 0 and not self._closed:
                    return i
            i = buf.find(EBML_MAGIC, i + 1)
        if i < 0 and not self._closed:
            # The last bytes may begin a magic that the next ones complete.
            return max(pos, end - len(EBML_MAGIC) + 1)
        header = base + i if i >= 0 else None
        out.append(damage.report(header))
        self._damage = None
        self._scanning = False
        if header is None:
            return end
        # Nothing before the header is read again: a later scan starts after it.
        self._whole1 = self._whole2 = (header, header, _EBML)
        self._old = b""
        self._old_at = header
        return i

    def _end_of_master(self, pos: int, out: list[Event]) -> int:
        """Close the innermost master, whose children end at ``pos``: a Tags or a Tracks completes here."""
        eid, start, _, limit = self._stack.pop()
        self._refresh_parent()
        if self._base + pos > limit:
            raise _Corrupt(f"{_name(eid)} overruns its size", start)
        if eid in _END_HOOKS:
            reason = self._end_master(eid, start, out)
            if reason is not None:
                raise _Corrupt(reason, start)
        if eid in _GROUPED:
            self._inside -= 1
            self._read_whole(start, self._base + pos, eid)
        return pos

    def _refresh_parent(self) -> None:
        if self._stack:
            self._parent, _, _, self._limit = self._stack[-1]
        else:
            self._parent, self._limit = _ROOT, _NO_LIMIT

    def _blocks(self, buf: bytes, pos: int, out: list[Event]) -> int:
        """Inside a Cluster at the default TimecodeScale: the run of Connect's blocks at ``pos``."""
        base = self._base
        bound = min(len(buf), self._limit - base)
        after, last, before = _connect_blocks(buf, pos, bound, base, self._by_byte, self._cluster_tc, out)
        if last >= 0:
            self._whole2 = (base + before, base + last, _SIMPLEBLOCK) if before >= 0 else self._whole1
            self._whole1 = (base + last, base + after, _SIMPLEBLOCK)
        return after

    def _place(
        self, eid: int, spec: tuple[frozenset[int], int] | None, pos: int, size: int, data_at: int, out: list[Event]
    ) -> int:
        """What to do with ``eid``, which ``spec`` does not place in the open master: unlisted, or it ends masters."""
        base = self._base
        end = None if size == _UNKNOWN else base + data_at + size
        if spec is None:
            if eid in (_VOID, _CRC32) or self._parent not in _CLOSED:
                return _SKIP
            if self._parent == _ROOT:
                raise _Corrupt(f"unexpected element 0x{eid:x} outside a document", end=end, eid=eid)
            raise _Corrupt(f"{_name(eid)} cannot appear inside {_name(self._parent)}", end=end, eid=eid)
        parents, kind = spec
        self._enter(eid, parents, base + pos, end, out)
        return kind

    def _enter(self, eid: int, parents: frozenset[int], start: int, end: int | None, out: list[Event]) -> None:
        """End unknown-size masters until one can hold ``eid``; raise :class:`_Corrupt` if none can."""
        stack = self._stack
        found_in = self._parent
        while stack and stack[-1][2] is None:
            top, top_start, _, _ = stack.pop()
            reason = self._end_master(top, top_start, out) if top in _END_HOOKS else None
            if reason is not None:
                raise _Corrupt(reason, top_start, start)
            if top in _GROUPED:
                self._inside -= 1
                self._read_whole(top_start, start, top)
            if (stack[-1][0] if stack else _ROOT) in parents:
                self._refresh_parent()
                return
        if eid == _EBML and stack:
            # The previous document stops short; report it and read the new one from its header.
            out.append(MalformedInput(stack[0][1], f"document ends inside {_name(stack[-1][0])}"))
            stack.clear()
            self._tag_stack.clear()
            self._inside = 0
            self._refresh_parent()
            return
        raise _Corrupt(f"{_name(eid)} cannot appear inside {_name(found_in)}", end=end, eid=eid)

    def _master(self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int, out: list[Event]) -> int:
        """Open the master at ``pos``, or take it whole (see :meth:`_grouped`)."""
        base = self._base
        if eid in _GROUPED:
            stop = self._grouped(buf, pos, eid, size, data_at, out)
            if stop is not None:
                return stop
        elif eid == _SEGMENT:
            if not self._doc_open:
                end = None if size == _UNKNOWN else base + data_at + size
                raise _Corrupt("Segment without an EBML header", end=end, eid=eid)
            self._doc_open = False
            self._once = 0
        stack = self._stack
        if len(stack) >= MAX_DEPTH:
            raise _Corrupt("elements nested too deeply")
        if size == _UNKNOWN:
            limit = self._limit
            stack.append((eid, base + pos, None, limit))
        else:
            limit = base + data_at + size
            if limit > self._limit:
                raise _Corrupt(f"{_name(eid)} overruns its parent", eid=eid)
            stack.append((eid, base + pos, limit, limit))
        self._parent = eid
        self._limit = limit
        if kind == _HOOKED:
            self._begin_master(eid)
        return data_at

    def _grouped(self, buf: bytes, pos: int, eid: int, size: int, data_at: int, out: list[Event]) -> int | None:
        """The Info, Tracks or Tags at ``pos``: the index after it if it is taken whole, else None (to open it).

        A Tags whole in the buffer is read in one pass, and an Info or Tracks byte for byte the one last read
        (GetMedia repeats both in every fragment) stands for what that one held.
        """
        base = self._base
        stop = data_at + size
        end = None if size == _UNKNOWN else base + stop
        once = _ONCE_BITS.get(eid, 0)
        if once:
            if self._once & once:
                raise _Corrupt(f"second {_name(eid)} in a Segment", end=end, eid=eid)
            self._once |= once
        # Whole: all arrived, and inside its parent.
        whole = end is not None and stop <= len(buf) and end <= self._limit
        if eid == _TAGS:
            if whole and self._whole_tags(buf, pos, data_at, stop, out):
                self._read_whole(base + pos, base + stop, eid)
                return stop
        else:
            raw = buf[data_at:stop] if whole and size <= _RECOGNISED_MAX else b""
            if eid == _TRACKS:
                if raw and raw == self._tracks_raw:
                    self._read_whole(base + pos, base + stop, eid)
                    self._note_head(buf, base + stop)
                    return stop
                self._tracks_pending_raw = raw
            elif raw and raw == self._info_raw:
                self._scale = self._info_scale
                self._read_whole(base + pos, base + stop, eid)
                return stop
            else:
                self._info_pending_raw = raw
        # Opened by the caller, unless it finds the element malformed (which clears this count).
        self._inside += 1
        return None

    def _note_head(self, buf: bytes, end: int) -> None:
        """Tracks recognised at stream offset ``end``: keep the document's head if it is what _replay_head reads.

        That is an EBML header, an unknown-size Segment, then Info and Tracks, both taken whole, nothing else
        between them, and all of it in ``buf``.
        """
        base = self._base
        start = self._doc_at
        info = self._whole2
        tracks = self._whole1
        if len(self._stack) != 1 or self._stack[0][2] is not None or start < base or info[2] != _INFO:
            return
        segment = self._stack[0][1] - start
        head = buf[start - base : end - base]
        if head == self._head or info[1] != tracks[0]:
            return
        ebml = _element_header(head, 0)
        if ebml is None or ebml[0] != _EBML or ebml[1] == _UNKNOWN or ebml[2] + ebml[1] != segment:
            return
        opened = _element_header(head, segment)
        if opened is None or opened[0] != _SEGMENT or opened[1] != _UNKNOWN or start + opened[2] != info[0]:
            return
        self._head = head
        self._head_at = (segment, info[0] - start, info[1] - start, tracks[0] - start)
        self._head_info = self._info_raw
        self._head_tracks_raw = self._tracks_raw
        self._head_scale = self._scale
        self._head_tracks = self._tracks

    def _replay_head(self, pos: int, out: list[Event]) -> int:
        """The document at ``pos`` starts with the last one's head, byte for byte, and its tracks are in force:
        take the head as reading it element by element would (GetMedia repeats it in every fragment)."""
        start = self._base + pos
        segment, info_start, info_end, tracks_start = self._head_at
        out.append(DocumentStart(start))
        self._doc_at = start
        self._doc_open = False
        self._once = _ONCE_BITS[_INFO] | _ONCE_BITS[_TRACKS]
        self._scale = self._info_scale = self._head_scale
        self._cluster_tc = 0
        self._timed = False
        self._info_raw = self._head_info
        self._tracks_raw = self._head_tracks_raw
        self._stack.append((_SEGMENT, start + segment, None, _NO_LIMIT))
        self._parent = _SEGMENT
        self._limit = _NO_LIMIT
        end = len(self._head)
        self._whole2 = (start + info_start, start + info_end, _INFO)
        self._whole1 = (start + tracks_start, start + end, _TRACKS)
        return pos + end

    def _whole_tags(self, buf: bytes, pos: int, data_at: int, stop: int, out: list[Event]) -> bool:
        """Read a Tags element whole in the buffer in one pass, or recognise it from a past fragment."""
        raw = buf[data_at:stop]
        tags = self._tags_seen.pop(raw, None)
        if tags is not None:
            self._tags_seen[raw] = tags
            # The event gets its own dict: the remembered one is handed out again for the next repeat.
            tags = dict(tags)
        else:
            shape = self._tags_shapes.get(stop - data_at)
            tags = shape.read(buf, data_at) if shape is not None else None
            if tags is None:
                read = _read_tags(buf, data_at, stop, len(self._stack) + 1)
                if read is None:
                    return False
                tags, values = read
                self._remember_tags(raw, tags, values)
                tags = dict(tags)
        out.append(Tags(tags, self._base + pos))
        return True

    def _content(
        self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int, out: list[Event]
    ) -> int | None:
        """Read or skip the element at ``pos`` (its children, if any, unread), or start collecting it."""
        base = self._base
        if size == _UNKNOWN:
            raise _Corrupt(f"{_name(eid)} of unknown size", eid=eid)
        if size > MAX_ELEMENT_SIZE:
            raise _Corrupt(f"{_name(eid)} of {size} bytes exceeds the size limit", eid=eid)
        stop = data_at + size
        if base + stop > self._limit:
            raise _Corrupt(f"{_name(eid)} overruns its parent", eid=eid)
        if eid == _CRC32 and size != 4:
            raise _Corrupt(f"CRC-32 of {size} bytes", eid=eid)
        if kind == _HEADER:
            out.append(DocumentStart(base + pos))
            self._doc_at = base + pos
            self._doc_open = True
        if stop > len(buf):
            self._begin_pending(buf, pos, eid, kind, size, data_at)
            return None
        if kind == _LEAF:
            reason = self._leaf(eid, buf, data_at, stop, base, out)
            if reason is not None:
                raise _Corrupt(reason, end=base + stop, eid=eid)
        self._read_whole(base + pos, base + stop, eid)
        return stop

    def _begin_pending(self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int) -> None:
        """The element at ``pos`` straddles feeds: the rest of the buffer is its first part."""
        base = self._base
        end = base + len(buf)
        anchor = self._anchor()
        first = self._bytes_from(anchor, end)
        self._parts = [first]
        self._parts_at = end - len(first)
        self._need = data_at + size - len(buf)
        self._collected = len(buf) - data_at
        self._pend_eid = eid
        self._pend_kind = kind
        self._pend_start = base + pos
        self._pend_data = base + data_at
        self._pend_end = base + data_at + size
        self._base = end

    def _begin_master(self, eid: int) -> None:
        if eid == _CLUSTER:
            self._cluster_tc = 0
            self._timed = False
        elif eid == _SEGMENT:
            self._scale = DEFAULT_TIMECODE_SCALE
            self._cluster_tc = 0
            self._timed = False
        elif eid == _SIMPLETAG:
            self._tag_stack.append([None, None])
        elif eid == _TRACKENTRY:
            self._entry = _TrackEntry()
        elif eid == _TAGS:
            self._tags = {}
        elif eid == _TRACKS:
            self._new_tracks = {}

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
        elif eid == _INFO:
            self._info_raw = self._info_pending_raw
            self._info_scale = self._scale
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
            return self._block(eid, src, a, b, src_base, out)
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
            if self._timed:
                return "second Timecode in a Cluster"
            self._timed = True
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

    def _block(self, eid: int, src: bytes, a: int, b: int, src_base: int, out: list[Event]) -> str | None:
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
        flags = src[head + 2]
        if flags & _RESERVED_FLAGS[eid]:
            return f"block with reserved flag bits set (0x{flags:02x})"
        relative = (src[head] << 8) | src[head + 1]
        if relative & 0x8000:
            relative -= 0x10000
        ms = (self._cluster_tc + relative) * self._scale // 1_000_000
        lacing = flags & 0x06
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
        # _text, inline: this runs for GetMedia's Tags in every fragment.
        return {
            name: buf[a + start : a + stop].rstrip(b"\x00").decode("utf-8", "replace")
            for name, start, stop in self.values
        }


def _name(eid: int) -> str:
    return _NAMES.get(eid, f"element 0x{eid:x}")
