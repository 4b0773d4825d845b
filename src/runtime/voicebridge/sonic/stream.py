"""Sans-I/O decoder of Sonic's response stream.

Wire format (the bytes inside the SageMaker event stream's ``PayloadPart`` events): UTF-8 JSON objects, each
terminated by ``\\n``::

    {"type": "chunk", "context_id": "…", "status_code": 206, "done": false, "data": "<base64 audio>", …}\\n
    {"type": "timestamps", "context_id": "…", "word_timestamps": {…}}\\n
    {"type": "done", "context_id": "…", "status_code": 200, "done": true}\\n
    {"type": "error", "data": "<the model's message>", …}\\n

An ``error`` object carries its message in ``data``: Cartesia's notebooks read it there
(``cartesia-ai/cartesia-aws``, ``Sonic-3-5-Jumpstart.ipynb`` cell 12, ``print(f"[ERROR] {chunk['data']}")``; the
Sonic 3 notebook is the same). Its other fields are undocumented; a ``status_code`` is honoured when present, and the
Cartesia API's own error shapes (``message``/``title``, the legacy ``error``) are read when ``data`` is absent.

PayloadPart boundaries mean nothing: one object may be split across several parts, and one part may hold several
objects. :class:`SonicStreamDecoder` buffers bytes, splits on newlines and yields typed events; it does no I/O, so
the same code serves botocore's stream, the Cartesia API's SSE lines, a file, and a fuzzer.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_LINE_BYTES = 1 << 20
"""A chunk carries at most ~20 ms of audio (a few KiB of base64); a line past this is not Sonic's."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """Audio in the requested encoding."""

    audio: bytes
    context_id: str | None = None


@dataclass(frozen=True, slots=True)
class Timestamps:
    """Word or phoneme timestamps (passed through; the product does not use them yet)."""

    payload: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Done:
    """The generation finished."""

    context_id: str | None = None


@dataclass(frozen=True, slots=True)
class StreamError:
    """The model reported an error inside the stream."""

    message: str
    status_code: int | None = None


SonicEvent = Chunk | Timestamps | Done | StreamError


class SonicStreamError(ValueError):
    """The stream's bytes are not Sonic's line protocol (bad JSON, bad base64, unknown type, overlong line)."""


class SonicStreamDecoder:
    """Feed bytes as they arrive; get events as soon as their line is complete.

    >>> d = SonicStreamDecoder()
    >>> list(d.feed(b'{"type":"chunk","data":"AAA="}\\n{"type":"do'))
    [Chunk(audio=b'\\x00\\x00', context_id=None)]
    >>> list(d.feed(b'ne","done":true}\\n'))
    [Done(context_id=None)]
    """

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[SonicEvent]:
        """Consume ``data`` and yield every event whose terminating newline is now in."""
        if not self._buffer and data.endswith(b"\n"):
            # Fast path, the common case: the part holds whole lines only, so nothing needs copying.
            for line in data.split(b"\n")[:-1]:
                if line.strip():
                    yield _parse_line(line)
            return
        self._buffer += data
        end = self._buffer.rfind(b"\n")
        if end < 0:
            if len(self._buffer) > MAX_LINE_BYTES:
                raise SonicStreamError(f"line longer than {MAX_LINE_BYTES} bytes without a newline")
            return
        complete = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        for line in complete.split(b"\n"):
            if line.strip():
                yield _parse_line(line)

    def close(self) -> Iterator[SonicEvent]:
        """End of stream: a final object without its newline still counts; anything else left is an error."""
        rest = bytes(self._buffer).strip()
        self._buffer.clear()
        if rest:
            yield _parse_line(rest)


def _parse_line(line: bytes) -> SonicEvent:
    try:
        obj = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SonicStreamError(f"not a JSON line: {line[:80]!r}") from exc
    if not isinstance(obj, dict):
        raise SonicStreamError(f"not a JSON object: {line[:80]!r}")
    kind = obj.get("type")
    if kind == "chunk":
        data = obj.get("data")
        if not isinstance(data, str):
            raise SonicStreamError("chunk without base64 data")
        try:
            audio = base64.b64decode(data, validate=True)
        except binascii.Error as exc:
            raise SonicStreamError("chunk data is not valid base64") from exc
        return Chunk(audio, obj.get("context_id"))
    if kind == "done" or (kind is None and obj.get("done") is True):
        return Done(obj.get("context_id"))
    if kind == "error":
        status = obj.get("status_code")
        texts = (obj.get(field) for field in ("data", "message", "error", "title"))
        message = next((text if isinstance(text, str) else json.dumps(text) for text in texts if text), "model error")
        return StreamError(message, status if isinstance(status, int) else None)
    if kind in ("timestamps", "phoneme_timestamps"):
        return Timestamps(obj)
    raise SonicStreamError(f"unknown event type {kind!r}")
