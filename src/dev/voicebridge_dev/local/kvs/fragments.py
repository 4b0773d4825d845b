"""A stream's fragments, and where a GetMedia payload starts among them.

StartSelector choices, where the documentation leaves room:

- ``FRAGMENT_NUMBER`` starts *at* ``AfterFragmentNumber`` (inclusive; consumers de-duplicate by number). A
  number the stream does not hold ends the payload with the error tags of code 4000 (fragment not found).
- ``CONTINUATION_TOKEN`` resumes *after* the fragment whose trailing tags carried the token.
- ``NOW`` starts with the next fragment to begin (or one begun without audio yet), so the rest of an ongoing
  fragment is not sent.
- ``EARLIEST`` starts with the oldest fragment held (the emulator keeps every fragment).
- ``PRODUCER_TIMESTAMP`` / ``SERVER_TIMESTAMP`` start with the fragment containing ``StartTimestamp``, or
  the first one after it.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from voicebridge_dev.local.kvs.errors import ApiError
from voicebridge_dev.local.kvs.matroska import FragmentInfo, FragmentWriter

__all__ = ["Fragment", "FragmentNumbers", "start_index"]

# Real fragment numbers are 47-digit decimals; this prefix keeps ours the same length and shape.
_FRAGMENT_PREFIX = 91343852333 * 10**36


class FragmentNumbers:
    """Strictly increasing fragment numbers, shared by all streams of one emulator."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self, epoch_ms: int) -> int:
        with self._lock:
            self._last = max(self._last + 1, _FRAGMENT_PREFIX + epoch_ms * 10**20)
            return self._last


@dataclass
class Fragment:
    """One fragment: its Matroska pieces as they were produced, and how far its audio reaches."""

    number: int
    info: FragmentInfo
    writer: FragmentWriter
    pieces: list[bytes]
    end_ms: int
    complete: bool = False

    @property
    def server_end_ms(self) -> int:
        return self.info.server_ms + self.end_ms - self.info.producer_ms


def start_index(fragments: Sequence[Fragment], producing: Fragment | None, selector: Mapping[str, Any]) -> int | None:
    """Index of the first fragment to send, or None when the requested fragment does not exist.

    ``producing`` is the fragment the live contact is filling, if any.
    """
    kind = selector.get("StartSelectorType")
    if kind == "EARLIEST":
        return 0
    if kind == "NOW":
        if producing is not None and not producing.pieces[1:]:
            return len(fragments) - 1
        return len(fragments)
    if kind == "FRAGMENT_NUMBER":
        return _index_of(fragments, _fragment_number(selector, "AfterFragmentNumber"))
    if kind == "CONTINUATION_TOKEN":
        index = _index_of(fragments, _fragment_number(selector, "ContinuationToken"))
        return None if index is None else index + 1
    if kind in ("PRODUCER_TIMESTAMP", "SERVER_TIMESTAMP"):
        return _index_at(fragments, _timestamp_ms(selector), producer=kind == "PRODUCER_TIMESTAMP")
    raise ApiError("InvalidArgumentException", f"StartSelectorType {kind!r} is not valid")


def _index_at(fragments: Sequence[Fragment], at_ms: int, producer: bool) -> int:
    """The fragment whose time span holds ``at_ms``, else the first one after it."""

    def start(fragment: Fragment) -> int:
        return fragment.info.producer_ms if producer else fragment.info.server_ms

    index = bisect.bisect_right(fragments, at_ms, key=start) - 1
    if index < 0:
        return 0
    # Fragments ingested faster than real time share a server timestamp: take the first of them.
    while index > 0 and start(fragments[index - 1]) == start(fragments[index]):
        index -= 1
    fragment = fragments[index]
    end = fragment.end_ms if producer else fragment.server_end_ms
    return index + 1 if fragment.complete and end <= at_ms else index


def _index_of(fragments: Sequence[Fragment], number: int) -> int | None:
    index = bisect.bisect_left(fragments, number, key=lambda fragment: fragment.number)
    if index < len(fragments) and fragments[index].number == number:
        return index
    return None


def _fragment_number(selector: Mapping[str, Any], key: str) -> int:
    value = selector.get(key)
    if not isinstance(value, str) or not value.isdigit():
        raise ApiError("InvalidArgumentException", f"{key} must be a fragment number, got {value!r}")
    return int(value)


def _timestamp_ms(selector: Mapping[str, Any]) -> int:
    value = selector.get("StartTimestamp")
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ApiError("InvalidArgumentException", f"StartTimestamp must be epoch seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ApiError("InvalidArgumentException", f"StartTimestamp {value!r} is out of range")
    return round(seconds * 1000)
