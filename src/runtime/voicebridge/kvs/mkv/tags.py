"""Tags: each Tag's SimpleTag{TagName, TagString} (RFC 9559, Matroska), the producer's (ContactId, MimeType,
...) and the ones GetMedia appends to every fragment (AWS_KINESISVIDEO_FRAGMENT_NUMBER,
..._CONTINUATION_TOKEN, ..._ERROR_CODE).

A Tags element whole in the buffer is read in one pass (:func:`read_tags`), or recognised from a past
fragment: Connect repeats its producer Tags in every fragment, and GetMedia's differ only in their values
(:class:`TagsShape`). One that straddles feeds is read element by element, as :class:`TagsReader` collects.
"""

from __future__ import annotations

from typing import TypeAlias

from voicebridge.kvs.mkv.elements import (
    DESCEND,
    MAX_DEPTH,
    SIMPLETAG,
    SPEC,
    TAG,
    TAGNAME,
    TAGS,
    TAGSTRING,
    VINT_LEN,
    VINT_MASK,
)
from voicebridge.kvs.mkv.events import Tags

__all__ = ["TagsReader", "TagsShape", "read_tags", "text"]

_Value: TypeAlias = tuple[str, int, int]
"""A tag as a Tags payload holds it: TagName, and where its TagString lies in the payload."""

_TAGS_REMEMBERED = 8
"""Distinct Tags payloads remembered, and Tags shapes: Connect repeats its producer Tags in every fragment,
and GetMedia's differ only in their values."""
RECOGNISED_MAX = 4096
"""Largest Tags or Tracks payload kept to recognise a repeat in a later fragment (for Tags, also one that
differs in its values only)."""

_OPEN_CHILD = 0
_TAG_NAME = 1
_TAG_STRING = 2
_IGNORE = 3


def text(src: bytes, a: int, b: int) -> str:
    """The string element ``src[a:b]``."""
    # Matroska strings may be zero-padded to their element size.
    return src[a:b].rstrip(b"\x00").decode("utf-8", "replace")


def _tags_tree() -> dict[int, dict[int, int]]:
    """For Tags, Tag and SimpleTag: what :func:`read_tags` does with each child SPEC allows there."""
    tree: dict[int, dict[int, int]] = {}
    for parent in (TAGS, TAG, SIMPLETAG):
        children = tree[parent] = {}
        for eid, (parents, kind) in SPEC.items():
            if parent in parents:
                children[eid] = {TAGNAME: _TAG_NAME, TAGSTRING: _TAG_STRING}.get(
                    eid, _OPEN_CHILD if kind in DESCEND else _IGNORE
                )
    return tree


_TAGS_TREE = _tags_tree()


def read_tags(buf: bytes, a: int, b: int, depth: int) -> tuple[dict[str, str], list[_Value]] | None:
    """Read a Tags payload that is whole in ``buf[a:b]`` in one pass: its tags, and where their values lie.

    Returns None on anything unusual (a malformed or misplaced element, too deep a nesting), for the
    element-wise path to read and judge. ``depth`` is the nesting level of the Tags element itself.
    """
    tags: dict[str, str] = {}
    values: list[_Value] = []
    vlen = VINT_LEN
    tree = _TAGS_TREE
    # The open Tag and SimpleTag elements above the current one: their end, children, TagName and where their
    # TagString lies.
    above: list[tuple[int, dict[int, int], str | None, int, int]] = []
    end = b
    children = tree[TAGS]
    name: str | None = None
    value_at = value_end = -1
    p = a
    while True:
        if p == end:
            if not above:
                return tags, values
            if name is not None and value_at >= 0:
                tags[name] = text(buf, value_at, value_end)
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
            size = int.from_bytes(buf[size_at:data_at], "big") & VINT_MASK[size_len]
            unknown = size == VINT_MASK[size_len]
        stop = data_at + size
        if unknown or stop > end:
            return None
        action = children.get(eid)
        if action is None:
            if eid in SPEC:
                return None
        elif action == _TAG_STRING:
            value_at, value_end = data_at, stop
        elif action == _TAG_NAME:
            name = text(buf, data_at, stop)
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


class TagsShape:
    """A Tags payload read before, as every byte of it but its TagString values.

    GetMedia's Tags differ from one fragment to the next in their values alone (fragment number, timestamps,
    continuation token), mostly of the same lengths. A payload whose other bytes are the same reads as this
    one did, element by element, only with its own values.

        tags = TagsShape(raw, values).read(buf, data_at)  # None unless buf[data_at:] has the shape
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
        # text, inline: this runs for GetMedia's Tags in every fragment.
        return {
            name: buf[a + start : a + stop].rstrip(b"\x00").decode("utf-8", "replace")
            for name, start, stop in self.values
        }


class TagsReader:
    """The Tags of a stream: whole ones read or recognised, and the one being read element by element.

    ``stack`` holds the TagName and TagString of each open SimpleTag (SimpleTags nest), ``tags`` what the open
    Tags element has collected so far.
    """

    __slots__ = ("seen", "shapes", "stack", "tags")

    def __init__(self) -> None:
        self.tags: dict[str, str] = {}
        self.stack: list[list[str | None]] = []
        # Payloads of recent Tags elements and what they held, and their shapes by length.
        self.seen: dict[bytes, dict[str, str]] = {}
        self.shapes: dict[int, TagsShape] = {}

    def whole(self, buf: bytes, data_at: int, stop: int, depth: int) -> dict[str, str] | None:
        """The tags of the Tags payload ``buf[data_at:stop]``, whole in the buffer, at nesting level ``depth``;
        None for the element-wise path to read (and judge) it."""
        raw = buf[data_at:stop]
        tags = self.seen.pop(raw, None)
        if tags is not None:
            self.seen[raw] = tags
            # The event gets its own dict: the remembered one is handed out again for the next repeat.
            return dict(tags)
        shape = self.shapes.get(stop - data_at)
        tags = shape.read(buf, data_at) if shape is not None else None
        if tags is not None:
            return tags
        read = read_tags(buf, data_at, stop, depth)
        if read is None:
            return None
        tags, values = read
        self._remember(raw, tags, values)
        return dict(tags)

    def _remember(self, raw: bytes, tags: dict[str, str], values: list[_Value]) -> None:
        if len(raw) > RECOGNISED_MAX:
            return
        seen = self.seen
        if len(seen) >= _TAGS_REMEMBERED:
            del seen[next(iter(seen))]
        seen[raw] = tags
        shapes = self.shapes
        if len(raw) not in shapes and len(shapes) >= _TAGS_REMEMBERED:
            del shapes[next(iter(shapes))]
        shapes[len(raw)] = TagsShape(raw, values)

    def begin(self) -> None:
        """A Tags element opens, to be read element by element."""
        self.tags = {}

    def end(self, start: int) -> Tags:
        """The Tags element opened at stream offset ``start`` ends: its event."""
        event = Tags(self.tags, start)
        self.tags = {}
        return event

    def end_simple_tag(self) -> None:
        """A SimpleTag ends: its tag counts if it had both a TagName and a TagString."""
        name, value = self.stack.pop()
        if name is not None and value is not None:
            self.tags[name] = value
