"""The reader: buffering, the element-by-element state machine, and the fast path for Connect's blocks.

See the package docstring for what it reads and how it treats damage.
"""

from __future__ import annotations

from collections.abc import Iterator

from voicebridge.kvs.mkv.blocks import connect_blocks
from voicebridge.kvs.mkv.content import Content
from voicebridge.kvs.mkv.elements import (
    CLUSTER,
    CRC32,
    DEFAULT_TIMECODE_SCALE,
    DESCEND,
    EBML,
    GROUPED,
    HEADER,
    HOOKED,
    LEAF,
    MAX_ELEMENT_SIZE,
    SEGMENT,
    SIMPLEBLOCK,
    SKIP,
    SPEC,
    UNKNOWN,
    element_header,
    name,
)
from voicebridge.kvs.mkv.errors import (
    Corrupt,
    InvalidSizeError,
    OverrunError,
    ReaderClosedError,
    TruncatedInputError,
)
from voicebridge.kvs.mkv.events import DocumentStart, Event
from voicebridge.kvs.mkv.masters import Masters
from voicebridge.kvs.mkv.repeats import Repeats
from voicebridge.kvs.mkv.resync import Damage, scan

__all__ = ["MatroskaReader"]


class _Pending:
    """An element whose bytes straddle feeds, collected whole.

    The parts start at stream offset ``parts_at``, before the element: they hold the bytes a scan after damage
    may need too. ``need`` is how many bytes are still to come, ``collected`` how many of the element's data
    the parts hold; ``start``, ``data`` and ``end`` are the stream offsets of the element, its data and its
    end.
    """

    __slots__ = ("collected", "data", "eid", "end", "kind", "need", "parts", "parts_at", "start")

    def __init__(self) -> None:
        self.need = 0
        self.parts: list[bytes] = []
        self.parts_at = 0
        self.collected = 0
        self.eid = 0
        self.kind = SKIP
        self.start = 0
        self.data = 0
        self.end = 0

    def begin(
        self, first: bytes, parts_at: int, need: int, eid: int, kind: int, start: int, data: int, end: int
    ) -> None:
        """Collect the element ``eid`` of kind ``kind``, whose bytes up to the buffer's end are ``first``, from
        stream offset ``parts_at``; ``need`` bytes are to come."""
        self.parts = [first]
        self.parts_at = parts_at
        self.need = need
        self.collected = end - data - need
        self.eid = eid
        self.kind = kind
        self.start = start
        self.data = data
        self.end = end

    def collect(self, chunk: bytes) -> bool:
        """Take ``chunk``, all of which belongs to the element unless it completes it; say whether it does."""
        need = self.need
        if len(chunk) < need:
            self.parts.append(chunk)
            self.need = need - len(chunk)
            self.collected += len(chunk)
            return False
        self.parts.append(chunk[:need])
        return True

    def truncation(self) -> Corrupt:
        """The input ends inside this element."""
        reason = f"input ends inside {name(self.eid)}"
        return Corrupt(TruncatedInputError, reason, self.start, self.start, self.end, self.eid)

    def drop(self) -> bytes:
        """Stop collecting: the bytes collected so far."""
        joined = b"".join(self.parts)
        self.parts = []
        self.need = self.collected = 0
        return joined


class _Window:
    """The bytes the reader holds: the buffer being read, and the bytes kept before it.

    ``buf[pos:]`` is unread, and ``buf[0]`` is at stream offset ``base``. ``old``, from stream offset
    ``old_at``, holds the bytes from the start of the older of the last two elements read whole up to the
    buffer, kept so that the scan after damage can start there (see the package docstring).
    """

    __slots__ = ("base", "buf", "old", "old_at", "pos")

    def __init__(self) -> None:
        self.buf = b""
        self.pos = 0
        self.base = 0
        self.old = b""
        self.old_at = 0

    def append(self, chunk: bytes) -> None:
        """Add ``chunk`` to the buffer."""
        if self.buf:
            # The first bytes of an element header (or, while scanning, of a magic): rare, and short.
            self.buf = self.buf[self.pos :] + chunk
            self.base += self.pos
            self.pos = 0
        else:
            self.buf = chunk

    def bytes_from(self, start: int, end: int) -> bytes:
        """The stream's bytes from offset ``start`` (or the first one kept) to ``end``, which is in the buffer."""
        base = self.base
        if start >= base:
            return self.buf[start - base : end - base]
        old_at = self.old_at
        old_end = old_at + len(self.old)
        return self.old[max(0, start - old_at) :] + self.buf[old_end - base : end - base]

    def restart(self, start: int) -> None:
        """Make the bytes from stream offset ``start`` (or the first one kept) to the buffer's end the buffer,
        to be read again, with nothing kept before it."""
        end = self.base + len(self.buf)
        region = self.bytes_from(start, end)
        self.buf = region
        self.base = self.old_at = end - len(region)
        self.old = b""
        self.pos = 0

    def truncation(self) -> Corrupt | None:
        """The input ends inside the element header that the buffer's unread bytes begin, if they begin one."""
        if self.pos < len(self.buf):
            at = self.base + self.pos
            return Corrupt(TruncatedInputError, "input ends inside an element header", at, at)
        return None

    def keep(self, buf: bytes, pos: int, anchor: int | None) -> None:
        """Keep what a later step may need of ``buf``, the buffer read up to ``pos``: its unread bytes, and
        those from stream offset ``anchor`` on (unless None: the kept ones stay as they are)."""
        base = self.base
        if anchor is not None:
            if anchor < base + pos:
                self.old = self.bytes_from(anchor, base + pos)
                self.old_at = base + pos - len(self.old)
            else:
                self.old = b""
                self.old_at = base + pos
        self.buf = buf[pos:] if pos < len(buf) else b""
        self.base = base + pos
        self.pos = 0


class MatroskaReader:
    """Sans-I/O incremental reader of concatenated Matroska documents (see the package docstring).

    A small state machine with three states: at an element boundary, where the innermost open master picks
    the next step (:meth:`_run`); inside an element that straddles feeds, collected as its bytes arrive
    (:meth:`_finish_pending`); scanning for the next EBML header once damage has shown (:meth:`_resynchronise`).
    """

    __slots__ = (
        "_closed",
        "_content",
        "_damage",
        "_doc_at",
        "_masters",
        "_pending",
        "_repeats",
        "_resyncs",
        "_scanning",
        "_window",
    )

    def __init__(self) -> None:
        self._window = _Window()
        self._scanning = False
        self._closed = False
        self._resyncs = 0
        self._damage: Damage | None = None
        self._pending = _Pending()
        self._doc_at = -1  # where the current document's EBML header starts
        self._content = Content()
        self._masters = Masters(self._content)
        self._repeats = Repeats(self._masters, self._content)

    @property
    def buffered_bytes(self) -> int:
        """Bytes held while waiting for the rest of an element (never more than one element).

        Not counted: the bytes of the last two elements read, kept for a scan should damage show after them.
        """
        window = self._window
        return len(window.buf) - window.pos + self._pending.collected

    @property
    def resynchronisations(self) -> int:
        """How many times damage made the reader scan for the next EBML header (0 for well-formed input)."""
        return self._resyncs

    def feed(self, data: bytes | bytearray | memoryview) -> Iterator[Event]:
        """Take the next bytes of the stream; return the events they complete, in stream order."""
        if self._closed:
            raise ReaderClosedError(self._window.base + len(self._window.buf), "reader is closed")
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
        self._masters.end_all(out)
        return iter(out)

    def _truncation(self) -> Corrupt | None:
        """What the input ends inside, once every byte is read: a known-size master, an element, a header."""
        window = self._window
        pending = self._pending
        waiting = pending.need > 0
        if waiting:
            # The element's bytes become the kept ones, for the scan to search.
            window.old_at = pending.parts_at
            window.old = pending.drop()
        truncated = self._masters.truncation(window.base + len(window.buf))
        if truncated is None and waiting:
            truncated = pending.truncation()
        return truncated if truncated is not None else window.truncation()

    def _take(self, chunk: bytes, out: list[Event]) -> None:
        """Add ``chunk`` to what is buffered, or to the element that straddles feeds, and read on."""
        if self._pending.need:
            try:
                if not self._finish_pending(chunk, out):
                    return
            except Corrupt as corrupt:
                self._corrupt(corrupt, out)
        else:
            self._window.append(chunk)
        # Even with no bytes left, the element just completed may have been the last one of its masters.
        self._run(out)

    def _finish_pending(self, chunk: bytes, out: list[Event]) -> bool:
        """Collect the element that straddles feeds; once it is whole, read it and buffer the rest of ``chunk``.

        Returns whether reading goes on from the buffer.
        """
        window = self._window
        pending = self._pending
        need = pending.need
        if not pending.collect(chunk):
            window.base += len(chunk)
            return False
        joined = pending.drop()
        window.old = joined
        window.old_at = at = pending.parts_at
        window.buf = chunk
        window.pos = need
        start = pending.start
        eid = pending.eid
        if pending.kind == LEAF:
            fault = self._content.leaf(eid, joined, pending.data - at, len(joined), at, out)
            if fault is not None:
                raise Corrupt(*fault, start, start, pending.end, eid)
        self._masters.read_whole(start, pending.end, eid)
        return True

    def _anchor(self) -> int:
        """The stream offset from which a scan after damage may need bytes: the older of the last two elements
        read whole, or the current document's EBML header if that is later."""
        return max(self._masters.whole2[0], self._doc_at)

    def _corrupt(self, corrupt: Corrupt, out: list[Event], pos: int | None = None) -> None:
        """Note the damage a step at buffer index ``pos`` found, drop the open masters, and scan for the next
        EBML header from the byte after the anchor; the damage is reported once the scan has an answer."""
        window = self._window
        masters = self._masters
        at = corrupt.at if corrupt.at is not None else window.base + (window.pos if pos is None else pos)
        offset = corrupt.offset if corrupt.offset is not None else at
        self._damage = Damage(corrupt, offset, at, (masters.whole1, masters.whole2))
        window.restart(self._anchor() + 1)
        masters.clear()
        self._pending.drop()
        self._scanning = True
        self._resyncs += 1

    def _run(self, out: list[Event]) -> None:
        """Take steps through the buffer until one waits for bytes that have not arrived.

        The reader's state picks each step: scanning for the next EBML header after damage, the end of the
        innermost master once its children are read, a run of Connect's blocks inside a Cluster, or the next
        element, read from its header as its kind asks. A step that finds the input malformed raises
        :class:`~.errors.Corrupt`; the reader notes it and scans.
        """
        # These are changed in place, never replaced: the hot loop reads them through locals.
        window = self._window
        masters = self._masters
        content = self._content
        repeats = self._repeats
        buf = window.buf
        pos = window.pos
        while True:
            try:
                if self._scanning:
                    pos = self._resynchronise(buf, pos, out)
                    if self._scanning:
                        break
                    continue
                if window.base + pos >= masters.limit:
                    masters.close_innermost(window.base + pos, out)
                    continue
                if (
                    pos < len(buf)
                    and buf[pos] == 0xA3
                    and masters.parent == CLUSTER
                    and content.scale == DEFAULT_TIMECODE_SCALE
                ):
                    after = self._blocks(buf, pos, out)
                    if after != pos:
                        pos = after
                        continue
                header = element_header(buf, pos)
                if header is None:
                    break
                eid, size, data_at = header
                spec = SPEC.get(eid)
                if spec is not None and masters.parent in spec[0]:
                    kind = spec[1]
                else:
                    end = None if size == UNKNOWN else window.base + data_at + size
                    kind = masters.place(eid, spec, window.base + pos, end, out)
                if kind in DESCEND:
                    pos = self._master(buf, pos, eid, kind, size, data_at, out)
                    continue
                if (
                    kind == HEADER
                    and repeats.head
                    and content.tracks is repeats.tracks
                    and buf.startswith(repeats.head, pos)
                ):
                    self._doc_at = window.base + pos
                    pos += repeats.replay(self._doc_at, out)
                    continue
                stop = self._element(buf, pos, eid, kind, size, data_at, out)
                if stop is None:
                    # The element straddles feeds: its bytes are collected as they arrive.
                    window.buf = b""
                    window.pos = 0
                    return
                pos = stop
            except Corrupt as corrupt:
                self._corrupt(corrupt, out, pos)
                buf = window.buf
                pos = 0
        window.keep(buf, pos, None if self._scanning else self._anchor())

    def _resynchronise(self, buf: bytes, pos: int, out: list[Event]) -> int:
        """Scan for the next EBML header (see :func:`~.resync.scan`); wait where the bytes have not come.

        Once the scan knows where reading resumes, or that it does not before the end of input, the damage is
        reported.
        """
        damage = self._damage
        assert damage is not None
        window = self._window
        i, done = scan(buf, pos, window.base, damage, self._closed)
        if not done:
            return i
        header = window.base + i if i >= 0 else None
        out.append(damage.report(header))
        self._damage = None
        self._scanning = False
        if header is None:
            return len(buf)
        # Nothing before the header is read again: a later scan starts after it.
        masters = self._masters
        masters.whole1 = masters.whole2 = (header, header, EBML)
        window.old = b""
        window.old_at = header
        return i

    def _blocks(self, buf: bytes, pos: int, out: list[Event]) -> int:
        """Inside a Cluster at the default TimecodeScale: the run of Connect's blocks at ``pos``."""
        base = self._window.base
        masters = self._masters
        content = self._content
        bound = min(len(buf), masters.limit - base)
        after, last, before = connect_blocks(buf, pos, bound, base, content.by_byte, content.cluster_tc, out)
        if last >= 0:
            masters.whole2 = (base + before, base + last, SIMPLEBLOCK) if before >= 0 else masters.whole1
            masters.whole1 = (base + last, base + after, SIMPLEBLOCK)
        return after

    def _master(self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int, out: list[Event]) -> int:
        """Open the master at ``pos``, or take it whole (see :meth:`~.repeats.Repeats.grouped`)."""
        base = self._window.base
        masters = self._masters
        end = None if size == UNKNOWN else base + data_at + size
        if eid in GROUPED:
            stop = self._repeats.grouped(buf, base, pos, eid, size, data_at, self._doc_at, out)
            if stop is not None:
                return stop
        elif eid == SEGMENT:
            masters.segment(end)
        masters.open(eid, base + pos, end)
        if kind == HOOKED:
            self._content.begin_master(eid)
        return data_at

    def _element(
        self, buf: bytes, pos: int, eid: int, kind: int, size: int, data_at: int, out: list[Event]
    ) -> int | None:
        """Read or skip the element at ``pos`` (its children, if any, unread), or start collecting it."""
        base = self._window.base
        masters = self._masters
        if size == UNKNOWN:
            raise Corrupt(InvalidSizeError, f"{name(eid)} of unknown size", eid=eid)
        if size > MAX_ELEMENT_SIZE:
            raise Corrupt(InvalidSizeError, f"{name(eid)} of {size} bytes exceeds the size limit", eid=eid)
        stop = data_at + size
        if base + stop > masters.limit:
            raise Corrupt(OverrunError, f"{name(eid)} overruns its parent", eid=eid)
        if eid == CRC32 and size != 4:
            raise Corrupt(InvalidSizeError, f"CRC-32 of {size} bytes", eid=eid)
        if kind == HEADER:
            out.append(DocumentStart(base + pos))
            self._doc_at = base + pos
            masters.doc_open = True
        if stop > len(buf):
            # The element straddles feeds: the rest of the buffer is its first part.
            end = base + len(buf)
            first = self._window.bytes_from(self._anchor(), end)
            need = stop - len(buf)
            self._pending.begin(first, end - len(first), need, eid, kind, base + pos, base + data_at, base + stop)
            self._window.base = end
            return None
        if kind == LEAF:
            fault = self._content.leaf(eid, buf, data_at, stop, base, out)
            if fault is not None:
                raise Corrupt(*fault, end=base + stop, eid=eid)
        masters.read_whole(base + pos, base + stop, eid)
        return stop
