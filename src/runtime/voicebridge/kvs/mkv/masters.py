"""The open master elements, and the Matroska hierarchy's rules for them (RFC 9559, Matroska; an unknown-size
master, RFC 8794 section 6.2, ends when an element arrives that it cannot hold)."""

from __future__ import annotations

from typing import TypeAlias

from voicebridge.kvs.mkv.content import Content
from voicebridge.kvs.mkv.elements import (
    CLOSED,
    CRC32,
    EBML,
    END_HOOKS,
    GROUPED,
    MAX_DEPTH,
    NO_LIMIT,
    ONCE_BITS,
    ROOT,
    SEGMENT,
    SKIP,
    VOID,
    Spec,
    name,
)
from voicebridge.kvs.mkv.errors import (
    Corrupt,
    OverrunError,
    TruncatedInputError,
    UnexpectedElementError,
)
from voicebridge.kvs.mkv.events import Event, MalformedInput
from voicebridge.kvs.mkv.resync import Whole

__all__ = ["NOTHING", "Masters", "Open"]

Open: TypeAlias = tuple[int, int, int | None, int]
"""An open master: ID, start offset, end offset (None when unknown), the offset its children must end by."""
NOTHING: Whole = (-1, -1, 0)


class Masters:
    """The stack of open masters, and the last two elements read whole (see the package docstring).

    ``parent`` is the innermost open master's ID and ``limit`` the stream offset its children must end by, kept
    with the stack for the reader's every step. ``inside`` counts the open GROUPED masters, whose children
    are not read whole on their own. ``doc_open`` says that the current document's Segment is still to come,
    ``once`` which ONCE_BITS of its Segment's children have been read.
    """

    __slots__ = ("content", "doc_open", "inside", "limit", "once", "parent", "stack", "whole1", "whole2")

    def __init__(self, content: Content) -> None:
        self.content = content
        self.stack: list[Open] = []
        self.parent = ROOT
        self.limit = NO_LIMIT
        self.inside = 0
        self.whole1 = NOTHING
        self.whole2 = NOTHING
        self.doc_open = False
        self.once = 0

    def read_whole(self, start: int, end: int, eid: int) -> None:
        """Note the element ``eid`` at stream offsets ``start`` to ``end`` as read whole."""
        if not self.inside:
            self.whole2 = self.whole1
            self.whole1 = (start, end, eid)

    def refresh(self) -> None:
        """Take ``parent`` and ``limit`` from the innermost open master."""
        if self.stack:
            self.parent, _, _, self.limit = self.stack[-1]
        else:
            self.parent, self.limit = ROOT, NO_LIMIT

    def clear(self) -> None:
        """Drop the open masters, unread: the input is damaged, or a new document starts."""
        self.stack.clear()
        self.content.tags.stack.clear()
        self.inside = 0
        self.parent, self.limit = ROOT, NO_LIMIT

    def open(self, eid: int, start: int, end: int | None) -> None:
        """Open the master ``eid`` at stream offset ``start`` that ends at ``end`` (None when unknown)."""
        stack = self.stack
        if len(stack) >= MAX_DEPTH:
            raise Corrupt(UnexpectedElementError, "elements nested too deeply")
        if end is None:
            limit = self.limit
            stack.append((eid, start, None, limit))
        else:
            limit = end
            if limit > self.limit:
                raise Corrupt(OverrunError, f"{name(eid)} overruns its parent", eid=eid)
            stack.append((eid, start, limit, limit))
        self.parent = eid
        self.limit = limit

    def count_once(self, eid: int, end: int | None) -> None:
        """An Info or Tracks, which ends at stream offset ``end``, opens: Matroska allows one in a Segment."""
        once = ONCE_BITS[eid]
        if self.once & once:
            raise Corrupt(UnexpectedElementError, f"second {name(eid)} in a Segment", end=end, eid=eid)
        self.once |= once

    def close_innermost(self, at: int, out: list[Event]) -> None:
        """Close the innermost master, whose children end at stream offset ``at``."""
        eid, start, _, limit = self.stack.pop()
        self.refresh()
        if at > limit:
            raise Corrupt(OverrunError, f"{name(eid)} overruns its size", start)
        if eid in END_HOOKS:
            fault = self.content.end_master(eid, start, out)
            if fault is not None:
                raise Corrupt(*fault, start)
        if eid in GROUPED:
            self.inside -= 1
            self.read_whole(start, at, eid)

    def place(self, eid: int, spec: Spec | None, start: int, end: int | None, out: list[Event]) -> int:
        """What to do with ``eid`` at stream offset ``start``, which ``spec`` does not place in the open master:
        unlisted, or it ends masters (see :meth:`enter`)."""
        if spec is None:
            parent = self.parent
            if eid in (VOID, CRC32) or parent not in CLOSED:
                return SKIP
            if parent == ROOT:
                reason = f"unexpected element 0x{eid:x} outside a document"
            else:
                reason = f"{name(eid)} cannot appear inside {name(parent)}"
            raise Corrupt(UnexpectedElementError, reason, end=end, eid=eid)
        parents, kind = spec
        self.enter(eid, parents, start, end, out)
        return kind

    def enter(self, eid: int, parents: frozenset[int], start: int, end: int | None, out: list[Event]) -> None:
        """End unknown-size masters until one can hold ``eid``, at stream offset ``start``; raise
        :class:`Corrupt` if none can."""
        stack = self.stack
        found_in = self.parent
        while stack and stack[-1][2] is None:
            top, top_start, _, _ = stack.pop()
            fault = self.content.end_master(top, top_start, out) if top in END_HOOKS else None
            if fault is not None:
                raise Corrupt(*fault, top_start, start)
            if top in GROUPED:
                self.inside -= 1
                self.read_whole(top_start, start, top)
            if (stack[-1][0] if stack else ROOT) in parents:
                self.refresh()
                return
        if eid == EBML and stack:
            # The previous document stops short; report it and read the new one from its header.
            reason = f"document ends inside {name(stack[-1][0])}"
            out.append(MalformedInput(stack[0][1], reason, TruncatedInputError))
            self.clear()
            return
        raise Corrupt(UnexpectedElementError, f"{name(eid)} cannot appear inside {name(found_in)}", end=end, eid=eid)

    def truncation(self, end: int) -> Corrupt | None:
        """Input that ends at stream offset ``end`` ends inside the outermost open known-size master, if any."""
        for eid, start, stop, _ in self.stack:
            if stop is not None:
                reason = f"input ends inside {name(eid)} of {stop - start} bytes"
                return Corrupt(TruncatedInputError, reason, start, end)
        return None

    def end_all(self, out: list[Event]) -> None:
        """End of input: end the open masters, which are all of unknown size."""
        stack = self.stack
        while stack:
            eid, start, _, _ = stack.pop()
            fault = self.content.end_master(eid, start, out) if eid in END_HOOKS else None
            if fault is not None:
                out.append(MalformedInput(start, fault[1], fault[0]))
                break

    def segment(self, size_end: int | None) -> None:
        """A Segment opens, which only an EBML header may come before."""
        if not self.doc_open:
            raise Corrupt(UnexpectedElementError, "Segment without an EBML header", end=size_end, eid=SEGMENT)
        self.doc_open = False
        self.once = 0
