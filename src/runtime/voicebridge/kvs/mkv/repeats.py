"""What GetMedia repeats in every fragment, taken whole instead of element by element: the document's head
(EBML header, Segment, Info, Tracks), and Info, Tracks and Tags payloads read before."""

from __future__ import annotations

from voicebridge.kvs.mkv.content import Content
from voicebridge.kvs.mkv.elements import (
    DEFAULT_TIMECODE_SCALE,
    EBML,
    INFO,
    NO_LIMIT,
    ONCE_BITS,
    SEGMENT,
    TAGS,
    TRACKS,
    UNKNOWN,
    element_header,
)
from voicebridge.kvs.mkv.events import DocumentStart, Event, Tags, TrackInfo
from voicebridge.kvs.mkv.masters import Masters
from voicebridge.kvs.mkv.tags import RECOGNISED_MAX

__all__ = ["Repeats"]


class Repeats:
    """The Info, Tracks and Tags taken whole, and the head of the last document as bytes.

    ``head`` is that head, ``at`` where its Segment, Info and Tracks start and where Info ends, and
    ``info_raw``, ``tracks_raw``, ``scale`` and ``tracks`` what reading it set.
    """

    __slots__ = ("at", "content", "head", "info_raw", "masters", "scale", "tracks", "tracks_raw")

    def __init__(self, masters: Masters, content: Content) -> None:
        self.masters = masters
        self.content = content
        self.head = b""
        self.at = (0, 0, 0, 0)
        self.info_raw = b""
        self.tracks_raw = b""
        self.scale = DEFAULT_TIMECODE_SCALE
        self.tracks: dict[int, TrackInfo] = {}

    def grouped(
        self, buf: bytes, base: int, pos: int, eid: int, size: int, data_at: int, doc_at: int, out: list[Event]
    ) -> int | None:
        """The Info, Tracks or Tags at ``buf[pos]`` (``buf[0]`` at stream offset ``base``): the index after it
        if it is taken whole, else None (to open it).

        A Tags whole in the buffer is read in one pass, and an Info or Tracks byte for byte the one last read
        (GetMedia repeats both in every fragment) stands for what that one held. ``doc_at`` is where the
        current document's EBML header starts.
        """
        masters = self.masters
        content = self.content
        stop = data_at + size
        end = None if size == UNKNOWN else base + stop
        if eid != TAGS:
            # Only Info and Tracks are allowed once: the call is saved for Tags, two in every fragment.
            masters.count_once(eid, end)
        # Whole: all arrived, and inside its parent.
        whole = end is not None and stop <= len(buf) and end <= masters.limit
        if eid == TAGS:
            tags = content.tags.whole(buf, data_at, stop, len(masters.stack) + 1) if whole else None
            if tags is not None:
                out.append(Tags(tags, base + pos))
                masters.read_whole(base + pos, base + stop, eid)
                return stop
        elif content.recognise(eid, buf[data_at:stop] if whole and size <= RECOGNISED_MAX else b""):
            masters.read_whole(base + pos, base + stop, eid)
            if eid == TRACKS:
                self._note(buf, base, base + stop, doc_at)
            return stop
        # Opened by the caller, unless it finds the element malformed (which clears this count).
        masters.inside += 1
        return None

    def _note(self, buf: bytes, base: int, end: int, doc_at: int) -> None:
        """Tracks recognised at stream offset ``end``: keep the document's head if it is what :meth:`replay`
        reads.

        That is an EBML header, an unknown-size Segment, then Info and Tracks, both taken whole, nothing else
        between them, and all of it in ``buf``.
        """
        masters = self.masters
        info = masters.whole2
        tracks = masters.whole1
        stack = masters.stack
        if len(stack) != 1 or stack[0][2] is not None or doc_at < base or info[2] != INFO:
            return
        segment = stack[0][1] - doc_at
        head = buf[doc_at - base : end - base]
        if head == self.head or info[1] != tracks[0]:
            return
        ebml = element_header(head, 0)
        if ebml is None or ebml[0] != EBML or ebml[1] == UNKNOWN or ebml[2] + ebml[1] != segment:
            return
        opened = element_header(head, segment)
        if opened is None or opened[0] != SEGMENT or opened[1] != UNKNOWN or doc_at + opened[2] != info[0]:
            return
        content = self.content
        self.head = head
        self.at = (segment, info[0] - doc_at, info[1] - doc_at, tracks[0] - doc_at)
        self.info_raw = content.info_raw
        self.tracks_raw = content.tracks_raw
        self.scale = content.scale
        self.tracks = content.tracks

    def replay(self, start: int, out: list[Event]) -> int:
        """The document at stream offset ``start`` starts with the last one's head, byte for byte, and its
        tracks are in force: take the head as reading it element by element would; return its length."""
        masters = self.masters
        segment, info_start, info_end, tracks_start = self.at
        out.append(DocumentStart(start))
        masters.doc_open = False
        masters.once = ONCE_BITS[INFO] | ONCE_BITS[TRACKS]
        # The content's state as reading the head sets it, written here: this runs for every fragment.
        content = self.content
        content.scale = content.info_scale = self.scale
        content.cluster_tc = 0
        content.timed = False
        content.info_raw = self.info_raw
        content.tracks_raw = self.tracks_raw
        masters.stack.append((SEGMENT, start + segment, None, NO_LIMIT))
        masters.parent = SEGMENT
        masters.limit = NO_LIMIT
        end = len(self.head)
        masters.whole2 = (start + info_start, start + info_end, INFO)
        masters.whole1 = (start + tracks_start, start + end, TRACKS)
        return end
