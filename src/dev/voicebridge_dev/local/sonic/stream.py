"""How a generation goes on the wire: the one part of the Sonic emulator that differs between its transports.

**SageMaker runtime** ``InvokeEndpointWithResponseStream`` (rest-json protocol), so an unmodified botocore
client decodes the answer itself::

    200  Content-Type: application/vnd.amazon.eventstream, Transfer-Encoding: chunked
         event-stream messages with headers :message-type=event, :event-type=PayloadPart and
         :content-type=application/octet-stream,
         whose concatenated payloads are Sonic's newline-terminated JSON objects:
             {"type":"chunk","context_id":…,"status_code":206,"done":false,"data":"<base64, ≤ 20 ms>",…}\\n
             {"type":"timestamps",…}\\n            (only with "add_timestamps": true)
             {"type":"done","context_id":…,"status_code":200,"done":true}\\n
         or, for an injected ``error_event`` fault, a last
             {"type":"error","context_id":…,"status_code":500,"done":true,"data":"<message>"}\\n
         Lines are split across PayloadParts and several lines share one part, deterministically per
         ``context_id``, so a client has to buffer bytes and split on newlines, as with the real one.

The ``error`` object carries its message in ``data``, where Cartesia's notebooks read it
(``cartesia-ai/cartesia-aws``, ``Sonic-3-5-Jumpstart.ipynb`` cell 12: ``print(f"[ERROR] {chunk['data']}")``); its
other fields are undocumented and follow the chunk's. Other in-stream failures are event-stream ``exception``
messages (``ModelStreamError`` {Message, ErrorCode}, ``InternalStreamFailure`` {Message}), which botocore raises as
``EventStreamError`` while iterating.

**Sonic container** ``POST /invocations`` (SageMaker's container contract, the bytes SageMaker reframes as
PayloadParts), for a client that speaks to the container directly::

    200  Content-Type: application/jsonlines, Transfer-Encoding: chunked
         the same newline-terminated JSON objects as inside the PayloadParts above, cut across HTTP chunks and merged
         within them the same deterministic way; an injected ``error_event`` is the same last ``error`` line.
         Every other failure after the headers is the stream cut short: the connection closes before the
         zero-length chunk that ends a chunked body, which is how a broken stream reaches SageMaker (and becomes
         its ``ModelStreamError``): HTTP/1.1 has no other in-stream channel.

**Cartesia API** ``POST /tts/sse``, as the official ``cartesia`` SDK's ``client.tts.generate_sse`` reads it::

    200  Content-Type: text/event-stream, Transfer-Encoding: chunked, one event per generated message:
             event: chunk\\ndata: {"type":"chunk","data":…,"done":false,"status_code":206,"step_time":…,
                                   "context_id":…}\\n\\n
             event: timestamps\\ndata: {…}\\n\\n      (only with "add_timestamps": true)
             event: done\\ndata: {"type":"done","done":true,"status_code":200,"context_id":…}\\n\\n
         or, when generation fails after the headers, a last
             event: error\\ndata: {"type":"error","done":true,"status_code":…,"title":…,"message":…,
                                   "request_id":…,"error_code":…}\\n\\n

The event-stream framing itself is :mod:`voicebridge_dev.local.eventstream_encoder`'s.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Protocol

from voicebridge_dev.local.eventstream_encoder import encode_event, encode_exception
from voicebridge_dev.local.sonic.faults import Fault, FaultKind
from voicebridge_dev.local.sonic.records import Invocation
from voicebridge_dev.local.sonic.requests import SonicRequest


class Responder(Protocol):
    """What a framing writes through: the server's request handler (:class:`~.server.Handler`)."""

    close_connection: bool

    def send_head(self, status: int, headers: Mapping[str, str]) -> None: ...
    def write_chunk(self, data: bytes) -> None: ...
    def end_chunks(self) -> None: ...
    def complete(self, state: Invocation) -> None: ...
    def model_error(self, state: Invocation, original_status: int, reason: str) -> None: ...
    def container_error(self, state: Invocation, status: int, reason: str) -> None: ...
    def api_error(self, state: Invocation, status: int, title: str, message: str, error_code: str) -> None: ...


# What the emulated container declares for its stream; clients must not depend on it.
MODEL_CONTENT_TYPE: Final = "application/jsonlines"


class PartPacker:
    """Decides PayloadPart boundaries: some lines are held back and merged with the next, some are cut.

    Seeded by the context id, so the same request is always framed the same way. The first line is never
    held back, so the emulated time to first byte is not inflated by merging.
    """

    _MAX_HELD_LINES = 2

    def __init__(self, context_id: str) -> None:
        seed = int.from_bytes(hashlib.sha256(context_id.encode("utf-8")).digest()[:8], "big")
        self._rng = random.Random(seed)
        self._held = b""
        self._held_lines = 0
        self._first = True

    def add(self, line: bytes) -> list[bytes]:
        data = self._held + line
        roll = self._rng.random()
        if not self._first and self._held_lines < self._MAX_HELD_LINES and roll < 0.3:
            self._held, self._held_lines = data, self._held_lines + 1
            return []
        self._held, self._held_lines, self._first = b"", 0, False
        if roll < 0.6 or len(data) < 3:
            return [data]
        cuts = sorted(self._rng.sample(range(1, len(data)), k=min(len(data) - 1, self._rng.choice((1, 2)))))
        return [data[start:end] for start, end in zip([0, *cuts], [*cuts, len(data)], strict=True)]

    def flush(self) -> list[bytes]:
        held, self._held, self._held_lines = self._held, b"", 0
        return [held] if held else []


def _json_line(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n"


class Framing(ABC):
    """Puts one generation's messages on the wire as a chunked HTTP response.

    The response headers go out with the first bytes, when the model starts answering, so a client's time to
    first byte is the model's. Subclasses decide how messages are framed and how a failure is told.
    """

    content_type: ClassVar[str]

    def __init__(self, handler: Responder, state: Invocation, request: SonicRequest) -> None:
        self.handler = handler
        self.state = state
        self.request = request

    @abstractmethod
    def headers(self) -> dict[str, str]:
        """Response headers besides Content-Type and Transfer-Encoding."""

    @abstractmethod
    def send(self, messages: list[dict[str, Any]], *, last: bool = False) -> None:
        """Deliver Sonic messages now; ``last`` also delivers anything held back."""

    @abstractmethod
    def flush(self) -> None:
        """Deliver anything held back, before the stream goes quiet."""

    @abstractmethod
    def fail(self, fault: Fault, outcome: str | None = None) -> None:
        """End the stream the way ``fault`` says, after delivering what was already generated."""

    @abstractmethod
    def reject(self, status: int, reason: str) -> None:
        """Answer an error instead of a stream: nothing has been sent yet."""

    def start(self) -> None:
        """The status line and the response headers, once: when the model starts answering."""
        handler, state = self.handler, self.state
        if state.first_byte_at is not None:
            return
        handler.send_head(200, {"Content-Type": self.content_type, "Transfer-Encoding": "chunked", **self.headers()})
        state.first_byte_at = time.perf_counter()

    def write(self, data: bytes) -> None:
        """One HTTP chunk, preceded by the response headers the first time."""
        self.start()
        self.handler.write_chunk(data)

    def end(self) -> None:
        self.handler.complete(self.state)
        self.handler.end_chunks()


class _JsonLinesFraming(Framing):
    """Sonic's own JSON lines, packed into parts as the model package writes them; how a part travels is the
    subclass's (:meth:`_send_parts`)."""

    def __init__(self, handler: Responder, state: Invocation, request: SonicRequest) -> None:
        super().__init__(handler, state, request)
        self._packer = PartPacker(request.context_id or "")

    def send(self, messages: list[dict[str, Any]], *, last: bool = False) -> None:
        parts = [part for message in messages for part in self._packer.add(_json_line(_with_rate(message, self)))]
        self._send_parts(parts + self._packer.flush() if last else parts)

    def flush(self) -> None:
        self._send_parts(self._packer.flush())

    def error_line(self, fault: Fault) -> dict[str, Any]:
        """Sonic's last line when generation fails inside the stream."""
        return {
            "type": "error",
            "context_id": self.request.context_id,
            "status_code": 500,
            "done": True,
            "data": fault.describe(),
        }

    @abstractmethod
    def _send_parts(self, parts: list[bytes]) -> None:
        """Send packed parts on the wire."""


class EventStreamFraming(_JsonLinesFraming):
    """SageMaker: Sonic's JSON lines, cut into PayloadPart events; failures are event-stream exceptions."""

    content_type = "application/vnd.amazon.eventstream"

    def headers(self) -> dict[str, str]:
        return {
            "X-Amzn-SageMaker-Content-Type": MODEL_CONTENT_TYPE,
            "x-Amzn-Invoked-Production-Variant": "AllTraffic",
            "x-amzn-RequestId": self.state.request_id,
        }

    def fail(self, fault: Fault, outcome: str | None = None) -> None:
        self.state.outcome = outcome or f"fault_{fault.kind.value}"
        message = fault.describe()
        if fault.kind is FaultKind.ERROR_EVENT:
            self.send([self.error_line(fault)], last=True)
        else:
            self.flush()
            if fault.kind is FaultKind.INTERNAL_FAILURE:
                frame = encode_exception("InternalStreamFailure", json.dumps({"Message": message}).encode())
            else:
                payload = {"Message": message, "ErrorCode": fault.error_code}
                frame = encode_exception("ModelStreamError", json.dumps(payload).encode())
            self.write(frame)
        self.end()

    def reject(self, status: int, reason: str) -> None:
        self.handler.model_error(self.state, status, reason)

    def _send_parts(self, parts: list[bytes]) -> None:
        if parts:
            self.state.payload_parts += len(parts)
            self.write(b"".join(encode_event("PayloadPart", part) for part in parts))


class ContainerFraming(_JsonLinesFraming):
    """The container itself: Sonic's JSON lines as HTTP chunks; a failure is a last ``error`` line or a cut."""

    content_type = MODEL_CONTENT_TYPE

    def headers(self) -> dict[str, str]:
        return {"X-Request-Id": self.state.request_id}

    def fail(self, fault: Fault, outcome: str | None = None) -> None:
        self.state.outcome = outcome or f"fault_{fault.kind.value}"
        if fault.kind is FaultKind.ERROR_EVENT:
            self.send([self.error_line(fault)], last=True)
            self.end()
            return
        self.flush()
        self.cut()

    def reject(self, status: int, reason: str) -> None:
        self.handler.container_error(self.state, status, reason)

    def cut(self) -> None:
        """End the response without its zero-length chunk: the client reads a body that stops short."""
        # With nothing sent yet the headers still go out first, so the cut falls inside the stream, not before it.
        self.start()
        self.handler.complete(self.state)
        self.handler.close_connection = True

    def _send_parts(self, parts: list[bytes]) -> None:
        for part in parts:
            self.state.payload_parts += 1
            self.write(part)


def _with_rate(message: dict[str, Any], framing: Framing) -> dict[str, Any]:
    # The package's chunks also name their rate; the API's do not.
    if message["type"] == "chunk":
        return {**message, "sampling_rate": framing.request.sample_rate}
    return message


_SSE_ERROR_TITLES: Final = {
    FaultKind.ERROR_BEFORE_AUDIO: "Model error",
    FaultKind.ERROR_MID_STREAM: "Model error",
    FaultKind.ERROR_EVENT: "Generation failed",
    FaultKind.INTERNAL_FAILURE: "Internal server error",
}


class SseFraming(Framing):
    """Cartesia API: one server-sent event per message, named by its type; a failure is a last ``error``."""

    content_type = "text/event-stream"

    def headers(self) -> dict[str, str]:
        return {"Cache-Control": "no-cache", "X-Request-Id": self.state.request_id}

    def send(self, messages: list[dict[str, Any]], *, last: bool = False) -> None:
        if messages:
            self.state.payload_parts += len(messages)
            self.write(b"".join(_sse_event(message) for message in messages))

    def flush(self) -> None:
        """Nothing is held back: every event leaves as soon as it is made."""

    def fail(self, fault: Fault, outcome: str | None = None) -> None:
        self.state.outcome = outcome or f"fault_{fault.kind.value}"
        error = {
            "type": "error",
            "done": True,
            "status_code": 500,
            "title": _SSE_ERROR_TITLES.get(fault.kind, "Model error"),
            "message": fault.describe(),
            "error_code": fault.error_code,
            "request_id": self.state.request_id,
            "context_id": self.request.context_id,
        }
        self.send([error], last=True)
        self.end()

    def reject(self, status: int, reason: str) -> None:
        self.handler.api_error(self.state, status, "Internal server error", reason, "internal_error")


def _sse_event(message: Mapping[str, Any]) -> bytes:
    data = json.dumps(message, separators=(",", ":"))
    return f"event: {message['type']}\ndata: {data}\n\n".encode()
