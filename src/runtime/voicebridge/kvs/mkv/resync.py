"""Resynchronisation once damage shows: the scan for the next EBML header, and the report of the damage.

An EBML header is the magic ``1A 45 DF A3``, a size VINT, then one of the header's own 0x42xx children
(RFC 8794: EBMLVersion, EBMLReadVersion, ..., DocTypeReadVersion).
"""

from __future__ import annotations

from typing import TypeAlias

from voicebridge.kvs.mkv.elements import EBML, EBML_HEADER_CHILDREN, EBML_MAGIC, VINT_LEN, name
from voicebridge.kvs.mkv.errors import Corrupt, TruncatedInputError
from voicebridge.kvs.mkv.events import MalformedInput

__all__ = ["Damage", "Whole", "scan"]

Whole: TypeAlias = tuple[int, int, int]
"""An element read whole: its start and end stream offsets, and its ID."""


class Damage:
    """Malformed input found, reported once the scan knows where the next EBML header is (if anywhere)."""

    __slots__ = ("at", "eid", "end", "exclude", "kind", "offset", "reason", "wholes")

    def __init__(self, corrupt: Corrupt, offset: int, at: int, wholes: tuple[Whole, Whole]) -> None:
        self.offset = offset
        self.kind = corrupt.kind
        self.reason = corrupt.reason
        self.at = at
        self.end = corrupt.end
        self.eid = corrupt.eid
        # A damaged EBML header is no place to resume.
        self.exclude = at if corrupt.eid == EBML else -1
        self.wholes = wholes

    def report(self, header: int | None) -> MalformedInput:
        """The event for this damage, given the stream offset of the EBML header the reader resumes at."""
        if header is not None and header < self.at:
            # The header lies in bytes read before the damage showed: an element they hold was cut short.
            for start, end, eid in self.wholes:
                if start < header < end and header + len(EBML_MAGIC) <= end:
                    return MalformedInput(start, f"{name(eid)} runs into an EBML header", TruncatedInputError)
            return MalformedInput(header, "EBML header begins inside the element before it", TruncatedInputError)
        if header is not None and self.end is not None and header < self.end:
            return MalformedInput(self.offset, f"{name(self.eid)} runs into an EBML header", TruncatedInputError)
        return MalformedInput(self.offset, self.reason, self.kind)


def scan(buf: bytes, pos: int, base: int, damage: Damage, closed: bool) -> tuple[int, bool]:
    """Scan ``buf`` (``buf[0]`` at stream offset ``base``) from ``pos`` for the next EBML header: a magic that
    the bytes after it confirm.

    Returns the header's index and True; -1 and True if there is none and the input has ended; or the index to
    wait at for more bytes and False.
    """
    end = len(buf)
    i = buf.find(EBML_MAGIC, pos)
    while i >= 0:
        if base + i != damage.exclude:
            verdict = _header_at(buf, i, end)
            if verdict > 0:
                return i, True
            # At the end of input no more bytes will tell, and a header that cannot be read is none.
            if verdict < 0 and not closed:
                return i, False
        i = buf.find(EBML_MAGIC, i + 1)
    if not closed:
        # The last bytes may begin a magic that the next ones complete.
        return max(pos, end - len(EBML_MAGIC) + 1), False
    return -1, True


def _header_at(data: bytes, i: int, stop: int) -> int:
    """Whether the EBML magic at ``data[i]`` starts a real EBML header: 1 yes, 0 no, -1 unknown by ``stop``.

    A header is the magic, a size VINT, then one of the header's own 0x42xx children, which random bytes
    (PCM that happens to hold the magic) almost never imitate.
    """
    if i + 5 > stop:
        return -1
    size_len = VINT_LEN[data[i + 4]]
    if size_len > 8:
        return 0
    child = i + 4 + size_len
    if child + 2 > stop:
        return -1
    return 1 if data[child] == 0x42 and data[child + 1] in EBML_HEADER_CHILDREN else 0
