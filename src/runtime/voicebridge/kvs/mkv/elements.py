"""The element table: Matroska's IDs, what the reader does with each, and which master may hold which child.

Every element is ``ID VINT | size VINT | payload``, as RFC 8794 (EBML) defines them, with the EBML header's
own elements; the IDs of Matroska's elements, their types and their parents are those of the IETF Matroska
specification, RFC 9559. Void (EC) and CRC-32 (BF) may appear inside any master.
"""

from __future__ import annotations

from typing import TypeAlias

from voicebridge.kvs.mkv.errors import Corrupt, InvalidIdError, InvalidSizeError

__all__ = [
    "DEFAULT_TIMECODE_SCALE",
    "EBML_MAGIC",
    "MAX_DEPTH",
    "MAX_ELEMENT_SIZE",
    "element_header",
    "name",
]

MAX_ELEMENT_SIZE = 16 * 1024 * 1024
"""Largest element the reader buffers or skips; anything larger is treated as corruption."""
MAX_DEPTH = 32
"""Deepest nesting of master elements (Connect's is 4); deeper is treated as corruption."""
DEFAULT_TIMECODE_SCALE = 1_000_000
EBML_MAGIC = b"\x1a\x45\xdf\xa3"

# Element IDs as they appear on the wire (VINT marker bits included).
EBML = 0x1A45DFA3
SEGMENT = 0x18538067
SEEKHEAD = 0x114D9B74
INFO = 0x1549A966
TIMECODESCALE = 0x2AD7B1
TRACKS = 0x1654AE6B
TRACKENTRY = 0xAE
TRACKNUMBER = 0xD7
TRACKUID = 0x73C5
TRACKTYPE = 0x83
NAME = 0x536E
CODECID = 0x86
CODECPRIVATE = 0x63A2
AUDIO = 0xE1
VIDEO = 0xE0
SAMPLINGFREQUENCY = 0xB5
CHANNELS = 0x9F
BITDEPTH = 0x6264
TAGS = 0x1254C367
TAG = 0x7373
TARGETS = 0x63C0
SIMPLETAG = 0x67C8
TAGNAME = 0x45A3
TAGSTRING = 0x4487
TAGBINARY = 0x4485
TAGLANGUAGE = 0x447A
TAGDEFAULT = 0x4484
CLUSTER = 0x1F43B675
TIMECODE = 0xE7
SILENTTRACKS = 0x5854
POSITION = 0xA7
PREVSIZE = 0xAB
SIMPLEBLOCK = 0xA3
BLOCKGROUP = 0xA0
ENCRYPTEDBLOCK = 0xAF
BLOCK = 0xA1
BLOCKVIRTUAL = 0xA2
BLOCKADDITIONS = 0x75A1
BLOCKDURATION = 0x9B
REFERENCEPRIORITY = 0xFA
REFERENCEBLOCK = 0xFB
REFERENCEVIRTUAL = 0xFD
CODECSTATE = 0xA4
DISCARDPADDING = 0x75A2
SLICES = 0x8E
REFERENCEFRAME = 0xC8
CUES = 0x1C53BB6B
CHAPTERS = 0x1043A770
ATTACHMENTS = 0x1941A469
VOID = 0xEC
CRC32 = 0xBF

ROOT = -1
"""Pseudo-ID of the stream level, the parent of EBML headers and Segments."""

_NAMES = {
    EBML: "EBML header",
    SEGMENT: "Segment",
    INFO: "Info",
    TRACKS: "Tracks",
    TRACKENTRY: "TrackEntry",
    AUDIO: "Audio",
    TAGS: "Tags",
    TAG: "Tag",
    SIMPLETAG: "SimpleTag",
    CLUSTER: "Cluster",
    BLOCKGROUP: "BlockGroup",
    SIMPLEBLOCK: "SimpleBlock",
    BLOCK: "Block",
    ROOT: "stream",
}

# What the reader does with an element.
SKIP = 0  # discard its bytes unread
MASTER = 1  # descend into it
HOOKED = 2  # descend into it; its start and end change the reader's state
LEAF = 3  # read its payload
HEADER = 4  # an EBML header: a document starts; its content is not needed

DESCEND = frozenset({MASTER, HOOKED})
END_HOOKS = frozenset({SIMPLETAG, TAGS, TRACKENTRY, TRACKS, INFO})
GROUPED = frozenset({INFO, TAGS, TRACKS})
"""Masters that count as one element read whole (their children do not), whether they are taken whole from
the buffer (recognised, or read in one pass) or child by child, as they are when they straddle feeds."""

Spec: TypeAlias = tuple[frozenset[int], int]
"""Where an element may appear (the IDs of its parents), and what the reader does with it."""


def _spec(parents: tuple[int, ...], kind: int, *eids: int) -> dict[int, Spec]:
    return dict.fromkeys(eids, (frozenset(parents), kind))


# Where each element may appear, and what to do with it. Void and CRC-32 belong to whichever master is
# open, and so do unlisted elements, except in the masters of CLOSED; the listed ones are what lets an
# unknown-size master end.
SPEC: dict[int, Spec] = {
    **_spec((ROOT,), HEADER, EBML),
    **_spec((ROOT,), HOOKED, SEGMENT),
    **_spec((SEGMENT,), SKIP, SEEKHEAD, CUES, CHAPTERS, ATTACHMENTS),
    **_spec((SEGMENT,), HOOKED, INFO, TRACKS, TAGS, CLUSTER),
    **_spec((INFO,), LEAF, TIMECODESCALE),
    **_spec((TRACKS,), HOOKED, TRACKENTRY),
    **_spec((TRACKENTRY,), LEAF, TRACKNUMBER, TRACKUID, NAME, CODECID),
    **_spec((TRACKENTRY,), SKIP, TRACKTYPE, CODECPRIVATE, VIDEO),
    **_spec((TRACKENTRY,), MASTER, AUDIO),
    **_spec((AUDIO,), LEAF, SAMPLINGFREQUENCY, CHANNELS, BITDEPTH),
    **_spec((TAGS,), MASTER, TAG),
    **_spec((TAG,), SKIP, TARGETS),
    **_spec((TAG, SIMPLETAG), HOOKED, SIMPLETAG),
    **_spec((SIMPLETAG,), LEAF, TAGNAME, TAGSTRING),
    **_spec((SIMPLETAG,), SKIP, TAGBINARY, TAGLANGUAGE, TAGDEFAULT),
    # Integers are read (and their size judged) although only Timecode's value is needed: where misread
    # bytes pass for an element, the damage then shows at once.
    **_spec((CLUSTER,), LEAF, TIMECODE, SIMPLEBLOCK, POSITION, PREVSIZE),
    **_spec((CLUSTER,), SKIP, SILENTTRACKS, ENCRYPTEDBLOCK),
    **_spec((CLUSTER,), MASTER, BLOCKGROUP),
    **_spec((BLOCKGROUP,), LEAF, BLOCK, BLOCKDURATION, REFERENCEPRIORITY, REFERENCEBLOCK, DISCARDPADDING),
    **_spec(
        (BLOCKGROUP,),
        SKIP,
        BLOCKVIRTUAL,
        BLOCKADDITIONS,
        REFERENCEVIRTUAL,
        CODECSTATE,
        SLICES,
        REFERENCEFRAME,
    ),
}

CLOSED = frozenset({ROOT, SEGMENT, CLUSTER, BLOCKGROUP})
"""Masters whose every child Matroska lists (and SPEC holds): anything else inside one is damage. Misread
bytes land in a Cluster most of all, and there they cannot pass for skippable unknown elements."""
ONCE_BITS = {INFO: 1, TRACKS: 2}
"""Segment children that Matroska allows once per Segment, as bits of the open masters' ``once``."""

VINT_LEN = bytes(9 - b.bit_length() for b in range(256))
"""Length of a VINT from its first byte; 9 marks the invalid first byte 0x00."""
VINT_MASK = tuple((1 << (7 * n)) - 1 for n in range(9))
"""Value bits of an n-byte VINT; a size with all of them set means "unknown"."""
NO_LIMIT = 1 << 63
EBML_HEADER_CHILDREN = frozenset({0x86, 0xF7, 0xF2, 0xF3, 0x82, 0x87, 0x85})
"""Second bytes of the EBML header's children: EBMLVersion, EBMLReadVersion, EBMLMaxIDLength,
EBMLMaxSizeLength, DocType, DocTypeVersion, DocTypeReadVersion."""

UNKNOWN = -1
"""The data size :func:`element_header` gives an element whose size VINT says "unknown"."""


def element_header(buf: bytes, pos: int) -> tuple[int, int, int] | None:
    """The ID, data size and data offset of the element at ``buf[pos]``; None until its header has arrived.

    The size is :data:`UNKNOWN` when its VINT has all value bits set. Raises :class:`~.errors.Corrupt` on a
    byte that cannot start a VINT.

        >>> element_header(bytes.fromhex("e7 81 05"), 0)  # Timecode, 1 byte of data at index 2
        (231, 1, 2)
    """
    end = len(buf)
    if end - pos < 2:
        return None
    first = buf[pos]
    id_len = VINT_LEN[first]
    if id_len > 4:
        raise Corrupt(InvalidIdError, f"invalid element ID byte 0x{first:02x}")
    size_at = pos + id_len
    if size_at >= end:
        return None
    size_first = buf[size_at]
    size_len = VINT_LEN[size_first]
    if size_len > 8:
        raise Corrupt(InvalidSizeError, "invalid element size")
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
        size = int.from_bytes(buf[size_at:data_at], "big") & VINT_MASK[size_len]
    return eid, UNKNOWN if size == VINT_MASK[size_len] else size, data_at


def name(eid: int) -> str:
    """The element's name in the reader's messages."""
    return _NAMES.get(eid, f"element 0x{eid:x}")
