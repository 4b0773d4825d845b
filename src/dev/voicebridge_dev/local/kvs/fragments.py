"""A stream's fragments, and where a GetMedia payload starts among them (the ``StartSelector``).

What each selector does, and where the behaviour comes from. "The reference" is AWS's StartSelector page
(https://docs.aws.amazon.com/kinesisvideostreams/latest/dg/API_dataplane_StartSelector.html), whose text is
botocore's ``kinesis-video-media`` model (``StartSelector``) word for word.

- ``FRAGMENT_NUMBER`` — "Start with the chunk *after* a specific fragment" (the reference): **exclusive**, the
  default. AWS's parser library agrees: ``ContinuousGetMediaWorker`` resumes with the last fragment it processed
  as ``AfterFragmentNumber`` and asserts every later number is greater. The member's own text is looser ("the
  fragment number from where you want the GetMedia API to start returning the fragments"), and in 2018 an AWS
  engineer quoted an older wording, "Start with the chunk containing the specific fragment"
  (amazon-kinesis-video-streams-parser-library issue #26). Because the sources once disagreed, the other reading
  is a switch: ``fragment_number_selector="inclusive"`` starts *at* that fragment, so a consumer can be run
  under both. Connect's ``StartFragmentNumber`` is "the fragment in which the customer audio stream started"
  (Connect admin guide, media-streaming-attributes), so the exclusive reading skips a contact's first fragment
  when a consumer passes it as ``AfterFragmentNumber``.
- An ``AfterFragmentNumber`` (or continuation token) the stream does not hold: the response is 200 and its
  payload is the error tags ``AWS_KINESISVIDEO_ERROR_ID`` 4000, "Requested fragment is not found" — the one
  error of GetMedia's documented list that names a missing fragment (botocore, ``GetMediaOutput.Payload``).
  ResourceNotFoundException is documented as "The stream with the given name does not exist" and
  InvalidArgumentException as an invalid parameter value, so neither fits a well-formed number; no source
  shows the service's answer itself. A number that is not ``^[0-9]+$`` of 1–128 digits (the member's pattern)
  is an InvalidArgumentException.
- ``PRODUCER_TIMESTAMP`` / ``SERVER_TIMESTAMP`` — "Start with the chunk containing a fragment with the specified
  producer or server timestamp" (the reference): the fragment whose span holds ``StartTimestamp`` is sent
  whole, **inclusive**. Sources are silent on a timestamp no fragment holds; the emulator starts with the first
  fragment after it — the first of the stream for a time before it, the next contact's first across the gap
  between two contacts — and, past the last fragment, with the next fragment to be produced, as ``NOW`` does:
  GetMedia is a long-lived connection whose payload only ends once no fragment has arrived for a while
  (:mod:`~voicebridge_dev.local.kvs.streams`).
- ``CONTINUATION_TOKEN`` — "Read using the specified continuation token"; the token lets a client "get the next
  chunk where the last request terminated" (botocore, ``GetMediaOutput.Payload``). The emulator's token is the
  number of the fragment whose trailing GetMedia tags carried it, and reading resumes with the fragment *after*
  it. The token's form is not documented (the public dump's value is redacted); clients treat it as opaque.
- ``NOW`` — "Start with the latest chunk on the stream": the next fragment to begin (or one begun without audio
  yet), so the rest of an ongoing fragment is not sent.
- ``EARLIEST`` — "Start with earliest available chunk": the oldest fragment held (the emulator keeps every one).
"""

from __future__ import annotations

import bisect
import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from voicebridge_dev.local.kvs.matroska import FragmentInfo, FragmentWriter
from voicebridge_dev.local.service import ApiError

FragmentNumberSelector = Literal["exclusive", "inclusive"]
FRAGMENT_NUMBER_SELECTORS: tuple[FragmentNumberSelector, ...] = get_args(FragmentNumberSelector)

# Real fragment numbers are 47-digit decimals; this prefix keeps ours the same length and shape.
_FRAGMENT_PREFIX = 91343852333 * 10**36
# The FragmentNumberString and ContinuationToken shapes of botocore's model.
_FRAGMENT_NUMBER = re.compile(r"[0-9]{1,128}")
_CONTINUATION_TOKEN = re.compile(r"[a-zA-Z0-9_\.\-]{1,128}")


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


def start_index(
    fragments: Sequence[Fragment],
    producing: Fragment | None,
    selector: Mapping[str, Any],
    fragment_number_selector: FragmentNumberSelector = "exclusive",
) -> int | None:
    """Index of the first fragment to send, or None when the requested fragment does not exist.

    ``producing`` is the fragment the live contact is filling, if any; ``fragment_number_selector`` is the
    reading of ``FRAGMENT_NUMBER`` (see the module's docstring).
    """
    kind = selector.get("StartSelectorType")
    if kind == "EARLIEST":
        return 0
    if kind == "NOW":
        if producing is not None and not producing.pieces[1:]:
            return len(fragments) - 1
        return len(fragments)
    if kind == "FRAGMENT_NUMBER":
        index = _index_of(fragments, int(_valid(selector, "AfterFragmentNumber", _FRAGMENT_NUMBER)))
        if index is None or fragment_number_selector == "inclusive":
            return index
        return index + 1
    if kind == "CONTINUATION_TOKEN":
        # The emulator's tokens are fragment numbers; any other well-formed token names no fragment.
        token = _valid(selector, "ContinuationToken", _CONTINUATION_TOKEN)
        index = _index_of(fragments, int(token)) if token.isdecimal() else None
        return None if index is None else index + 1
    if kind in ("PRODUCER_TIMESTAMP", "SERVER_TIMESTAMP"):
        return _index_at(fragments, _timestamp_ms(selector), producer=kind == "PRODUCER_TIMESTAMP")
    raise ApiError(400, "InvalidArgumentException", f"StartSelectorType {kind!r} is not valid")


def _index_at(fragments: Sequence[Fragment], at_ms: int, producer: bool) -> int:
    """The fragment whose time span holds ``at_ms``, else the first one after it (``len`` past the last)."""

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


def _valid(selector: Mapping[str, Any], key: str, shape: re.Pattern[str]) -> str:
    """``selector[key]``, which must have the shape botocore's model gives it."""
    value = selector.get(key)
    if not isinstance(value, str) or not shape.fullmatch(value):
        raise ApiError(400, "InvalidArgumentException", f"{key} must match {shape.pattern}, got {value!r}")
    return value


def _timestamp_ms(selector: Mapping[str, Any]) -> int:
    value = selector.get("StartTimestamp")
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ApiError(
            400, "InvalidArgumentException", f"StartTimestamp must be epoch seconds, got {value!r}"
        ) from None
    if not math.isfinite(seconds) or seconds < 0:
        raise ApiError(400, "InvalidArgumentException", f"StartTimestamp {value!r} is out of range")
    return round(seconds * 1000)
