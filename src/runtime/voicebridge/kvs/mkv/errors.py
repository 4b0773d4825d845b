"""The errors of Matroska input that cannot be read, one class per kind of damage.

Each carries the stream ``offset`` of the element it concerns and a ``reason``: a stable message built from
element names, sizes and numbers only, never from the payload's bytes, so it is safe to log.
"""

from __future__ import annotations

from typing import TypeAlias

__all__ = [
    "BadBlockError",
    "InvalidIdError",
    "InvalidSizeError",
    "InvalidValueError",
    "MatroskaError",
    "OverrunError",
    "ReaderClosedError",
    "TruncatedInputError",
    "UnexpectedElementError",
]


class MatroskaError(Exception):
    """Matroska input that cannot be read, or a reader used after :meth:`MatroskaReader.close`."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(f"offset {offset}: {reason}")
        self.offset = offset
        self.reason = reason


class InvalidIdError(MatroskaError):
    """A byte that cannot start an element ID VINT (RFC 8794: an ID is 1 to 4 bytes)."""


class InvalidSizeError(MatroskaError):
    """An element data size that cannot be read, is "unknown" where it must be known, or is too large."""


class OverrunError(MatroskaError):
    """An element whose size runs past the end of the master that holds it."""


class UnexpectedElementError(MatroskaError):
    """An element where the Matroska hierarchy does not allow it, more often than it allows, or too deep."""


class InvalidValueError(MatroskaError):
    """A leaf or master whose content Matroska does not allow (a TimecodeScale of 0, a TrackEntry without a
    TrackNumber, ...)."""


class BadBlockError(MatroskaError):
    """A SimpleBlock or Block that cannot be read: its header, its track, its flags or its lacing."""


class TruncatedInputError(MatroskaError):
    """Input, or a document, that ends inside an element, or an element cut short by the next EBML header."""


class ReaderClosedError(MatroskaError):
    """Bytes fed to a reader after :meth:`MatroskaReader.close`."""


Fault: TypeAlias = tuple[type[MatroskaError], str]
"""What a step of the reader found wrong: the kind of damage and its reason."""


class Corrupt(Exception):
    """A step of the reader found the input malformed.

    ``kind`` is the :class:`MatroskaError` it amounts to. ``offset`` is the stream offset to report (by
    default that of the element the step was reading), and ``at`` where the damage showed (by default the
    same); ``eid`` is the element's ID, where it is known. ``end``, where the element's size says it ends, is
    given when an EBML header inside it would explain the damage better: it is then reported as the element
    running into that header.
    """

    def __init__(
        self,
        kind: type[MatroskaError],
        reason: str,
        offset: int | None = None,
        at: int | None = None,
        end: int | None = None,
        eid: int = 0,
    ) -> None:
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.offset = offset
        self.at = at
        self.end = end
        self.eid = eid
