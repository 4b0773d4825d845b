"""The Sonic emulator's HTTP/1.1 server: routing, the two transports' invocations and their error answers, and
the paced generation loop both share.

**SageMaker runtime** ``InvokeEndpointWithResponseStream`` (rest-json protocol)::

    POST /endpoints/{EndpointName}/invocations-response-stream      body: a Sonic request (JSON, no model_id)
         Content-Type: <ContentType>   X-Amzn-SageMaker-Accept: <Accept>

    200  an event stream (:mod:`voicebridge_dev.local.sonic.stream`)
    424  x-amzn-ErrorType: ModelError   {"OriginalStatusCode": 422 | 429 | 500, "OriginalMessage": …, …}
    400  x-amzn-ErrorType: ValidationError   (an endpoint name other than the configured one, or an Accept or
         ContentType longer than 1024 characters or not ASCII)

botocore's ``sagemaker-runtime`` model puts the ``Accept`` parameter on the wire as ``X-Amzn-SageMaker-Accept``, not
``Accept``, and declares it, like ``ContentType``, a ``Header`` of at most 1024 ASCII characters; botocore itself
checks only minimum lengths, so the service is the one to refuse a longer value, with its ValidationError. What the
Sonic container does with the value it is handed is undocumented (the notebooks send ``text/event-stream``), so the
emulated model takes any. Requests are not authenticated: SigV4 headers are accepted and ignored.

**Sonic container**, SageMaker's container contract ("Containers need to implement a web server that responds to
``/invocations`` and ``/ping`` on port 8080", AWS, "Use Your Own Inference Code with Hosting Services"), for a client
that speaks to the container directly, as SageMaker does::

    POST /invocations   Content-Type: application/json   Accept: <any>   body: the same Sonic request
    200  the same JSON lines, chunked (:mod:`voicebridge_dev.local.sonic.stream`)
    422  text/plain: the model's reason (what SageMaker relays as ModelError's OriginalMessage)
    429  text/plain: no capacity; 500 the speech engine failed before any audio; 503 the model is not ready
    GET  /ping           200, empty, once the model is ready; 503 before (``{"ready": false}`` below)

What the container answers beyond the statuses SageMaker relays (``OriginalStatusCode`` 422 and 429) is
undocumented: the bodies here are the reason as plain text, what the endpoint's ``OriginalMessage`` carries.

**Cartesia API** ``POST /tts/sse``, as the official ``cartesia`` SDK's ``client.tts.generate_sse`` calls it::

    POST /tts/sse   Authorization: Bearer <key>   Cartesia-Version: <date>
                    body: {"model_id", "transcript", "voice": "<uuid>" | {"id": …}, "output_format", …}

    200  server-sent events (:mod:`voicebridge_dev.local.sonic.stream`)
    4xx/5xx  {"error_code": …, "title": …, "message": …, "request_id": …}  — 401 wrong or missing key (checked
         only when the emulator has an ``api_key``), 400 no Cartesia-Version or a body that is not JSON,
         422 a request the model rejects, 429 throttled, 500 the speech engine failed before any audio.

Audio is paced: the first chunk leaves after ``time_to_first_byte_ms`` (or once the first sentence is
synthesised, if that takes longer), the rest at ``realtime_factor`` seconds of audio per wall second, each
flushed when "generated".

The control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/faults   {"kind": "stall", "count": 1, "after_chunks": 3, "seconds": 2.0}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
    GET    /_emulator/stats    one record per invocation (times on the time.perf_counter() clock)
    POST   /_emulator/config   {"accepted_encodings": ["pcm_s16le", …], "model": "sonic-3" | "sonic-3.5" | "sonic-3.6",
                                "ready": true | false}
    GET    /_emulator/config   the current configuration
"""

from __future__ import annotations

import base64
import functools
import hmac
import itertools
import json
import math
import re
import time
from collections.abc import Callable
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from voicebridge_dev.local.service import CallHandler, Serving, Stopping
from voicebridge_dev.local.sonic.errors import InvalidSonicRequest
from voicebridge_dev.local.sonic.faults import Fault, FaultKind
from voicebridge_dev.local.sonic.records import LABEL, Invocation
from voicebridge_dev.local.sonic.requests import SonicRequest, parse_cartesia_request, parse_sonic_request
from voicebridge_dev.local.sonic.stream import ContainerFraming, EventStreamFraming, Framing, SseFraming
from voicebridge_dev.local.sonic.synthesis import Synthesis, encode_audio
from voicebridge_dev.local.speech_engine import SpeechEngine, SpeechEngineError

ACCOUNT_ID: Final = "123456789012"
REGION: Final = "us-east-1"
_INVOKE_PATH = re.compile(r"^/endpoints/(?P<name>[^/]+)/invocations-response-stream$")
_VALIDATION_ERROR: Final = "ValidationError:http://internal.amazon.com/coral/com.amazon.coral.validate/"
_MAX_HEADER_CHARS: Final = 1024
_MEDIA_TYPE_HEADERS: Final = {"accept": "X-Amzn-SageMaker-Accept", "contentType": "Content-Type"}
_CARTESIA_REFUSALS: Final = {
    422: ("Invalid request", "invalid_request"),
    429: ("Too many concurrent requests", "concurrency_limited"),
}


def _decoded(raw: bytes) -> tuple[Any, bool]:
    """A request's body as JSON, or as text when it is not JSON; and whether it was."""
    try:
        return json.loads(raw), True
    except ValueError:
        return raw.decode("utf-8", errors="replace"), False


def _header_constraint(value: str | None) -> str | None:
    """How a media-type header breaks its ``Header`` shape, in the words of AWS's validation errors; None if not."""
    if value is None:
        return None
    if len(value) > _MAX_HEADER_CHARS:
        return f"failed to satisfy constraint: Member must have length less than or equal to {_MAX_HEADER_CHARS}"
    if not value.isascii():
        return "failed to satisfy constraint: Member must satisfy regular expression pattern: \\p{ASCII}*"
    return None


class Backend(Serving[Fault], Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.SonicEmulator`)."""

    endpoint_name: str | None
    accepted_encodings: frozenset[str]
    model: str
    ready: bool
    api_key: str | None
    engine: SpeechEngine
    realtime_factor: float
    time_to_first_byte_ms: float

    def record(self, state: Invocation) -> None: ...


class Handler(CallHandler[Backend]):
    server_version = "SonicEndpointEmulator/1.0"
    label = LABEL

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        match = _INVOKE_PATH.match(path)
        if match:
            state = Invocation(
                transport="sagemaker", started=time.perf_counter(), endpoint_name=unquote(match.group("name"))
            )
            self._invoke(state, self._serve_sagemaker)
        elif path == "/invocations":
            self._invoke(Invocation(transport="container", started=time.perf_counter()), self._serve_container)
        elif path == "/tts/sse":
            self._invoke(Invocation(transport="cartesia-api", started=time.perf_counter()), self._serve_cartesia_api)
        else:
            self.serve_control(self.read_body())

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/ping":
            self._serve_ping()
        else:
            self.serve_control(self.read_body())

    # -- invocations, either transport

    def _invoke(self, state: Invocation, serve: Callable[[Invocation, bytes], None]) -> None:
        raw = self.read_body()
        self.serve_call(state, lambda: serve(state, raw))

    # -- SageMaker InvokeEndpointWithResponseStream

    def _serve_sagemaker(self, state: Invocation, raw: bytes) -> None:
        emulator = self.emulator
        state.accept = self.headers.get("X-Amzn-SageMaker-Accept")
        for member, header in _MEDIA_TYPE_HEADERS.items():
            broken = _header_constraint(self.headers.get(header))
            if broken is not None:
                self._validation_error(state, f"1 validation error detected: Value at '{member}' {broken}")
                return
        if emulator.endpoint_name is not None and state.endpoint_name != emulator.endpoint_name:
            self._validation_error(state, f"Endpoint {state.endpoint_name} of account {ACCOUNT_ID} not found.")
            return
        state.body, _ = _decoded(raw)
        self._speak(state, self.model_error, EventStreamFraming, self._sonic_request)

    def _sonic_request(self, body: Any) -> SonicRequest:
        emulator = self.emulator
        return parse_sonic_request(body, accepted_encodings=emulator.accepted_encodings, model=emulator.model)

    def _speak(
        self,
        state: Invocation,
        refuse: Callable[[Invocation, int, str], None],
        framing: Callable[[Any, Invocation, Any], Framing],
        parse: Callable[[Any], SonicRequest],
    ) -> None:
        """Read the request ``state.body`` carries with ``parse``, take the next fault, and stream the speech in
        ``framing``; ``refuse`` answers a request the model rejects (422) or a throttle (429), in the shape of the
        interface it came through."""
        try:
            request = parse(state.body)
        except InvalidSonicRequest as exc:
            refuse(state, 422, str(exc))
            return
        state.context_id = request.context_id

        fault = self.emulator.faults.take()
        state.fault = fault.kind.value if fault else None
        if fault is not None and fault.kind is FaultKind.THROTTLE:
            refuse(state, 429, fault.message or "model is at capacity; retry later (emulator)")
            return
        self._generate(framing(self, state, request), fault)

    def _validation_error(self, state: Invocation, message: str) -> None:
        state.http_status, state.outcome = 400, "validation_error"
        self.complete(state)
        self.send_json(400, {"message": message}, {"x-amzn-ErrorType": _VALIDATION_ERROR})

    def model_error(self, state: Invocation, original_status: int, reason: str) -> None:
        state.http_status, state.outcome = 424, f"model_error_{original_status}"
        log_group = f"/aws/sagemaker/Endpoints/{state.endpoint_name}"
        kind = "client" if original_status < 500 else "server"
        self.complete(state)
        self.send_json(
            424,
            {
                "ErrorCode": f"{kind.upper()}_ERROR_FROM_MODEL",
                "LogStreamArn": f"arn:aws:logs:{REGION}:{ACCOUNT_ID}:log-group:{log_group}",
                "Message": (
                    f'Received {kind} error ({original_status}) from primary with message "{reason}". '
                    f"See the log group {log_group} in account {ACCOUNT_ID} for more information."
                ),
                "OriginalMessage": reason,
                "OriginalStatusCode": original_status,
            },
            {"x-amzn-ErrorType": "ModelError"},
        )

    # -- the Sonic container: POST /invocations, GET /ping

    def _serve_ping(self) -> None:
        self.send_head(200 if self.emulator.ready else 503, {"Content-Length": "0"})

    def _serve_container(self, state: Invocation, raw: bytes) -> None:
        emulator = self.emulator
        state.accept = self.headers.get("Accept")
        if not emulator.ready:
            self.container_error(state, 503, "the model is still loading (emulator)")
            return
        state.body, _ = _decoded(raw)
        self._speak(state, self.container_error, ContainerFraming, self._sonic_request)

    def container_error(self, state: Invocation, status: int, reason: str) -> None:
        """The container's refusal: its status, and its reason as the body."""
        state.http_status, state.outcome = status, f"container_error_{status}"
        body = reason.encode("utf-8")
        self.complete(state)
        self.send_head(status, {"Content-Type": "text/plain; charset=utf-8", "Content-Length": str(len(body))})
        self.write(body)

    # -- Cartesia API POST /tts/sse

    def _serve_cartesia_api(self, state: Invocation, raw: bytes) -> None:
        emulator = self.emulator
        state.cartesia_version = self.headers.get("Cartesia-Version")
        state.body, readable = _decoded(raw)
        if emulator.api_key is not None and not self._authorized(emulator.api_key):
            message = "the API key is missing or not valid; send it as 'Authorization: Bearer <key>'"
            self.api_error(state, 401, "Invalid API key", message, "unauthorized")
            return
        if not state.cartesia_version:
            message = "the Cartesia-Version header is required"
            self.api_error(state, 400, "Bad request", message, "bad_request")
            return
        if not readable:
            self.api_error(state, 400, "Bad request", "the request body is not valid JSON", "bad_request")
            return
        parse = functools.partial(parse_cartesia_request, accepted_encodings=emulator.accepted_encodings)
        self._speak(state, self._cartesia_refusal, SseFraming, parse)

    def _cartesia_refusal(self, state: Invocation, status: int, message: str) -> None:
        """A request the model rejects (422), or a throttle (429), as the Cartesia API answers them."""
        title, error_code = _CARTESIA_REFUSALS[status]
        self.api_error(state, status, title, message, error_code)

    def _authorized(self, api_key: str) -> bool:
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        presented = token.strip() if scheme.lower() == "bearer" else self.headers.get("X-API-Key", "")
        return hmac.compare_digest(presented.encode("utf-8"), api_key.encode("utf-8"))

    def api_error(self, state: Invocation, status: int, title: str, message: str, error_code: str) -> None:
        """The Cartesia API's structured error object; its SDK raises it as the status's exception class."""
        state.http_status, state.outcome = status, f"api_error_{status}"
        self.complete(state)
        self.send_json(
            status,
            {"error_code": error_code, "title": title, "message": message, "request_id": state.request_id},
            {"X-Request-Id": state.request_id},
        )

    # -- the generation loop, shared by both transports

    def _wait_until(self, state: Invocation, due: float) -> None:
        delay = due - time.perf_counter()
        if delay > 0:
            self._pause(state, delay)

    def _pause(self, state: Invocation, seconds: float) -> None:
        began = time.perf_counter()
        stopped = self.emulator.stopping.wait(seconds)
        state.generation_seconds += time.perf_counter() - began
        if stopped:
            raise Stopping

    def _generate(self, framing: Framing, fault: Fault | None) -> None:
        emulator, state, request = self.emulator, framing.state, framing.request
        synthesis = Synthesis(emulator.engine, request)
        chunk_wall = synthesis.per_chunk / request.sample_rate / emulator.realtime_factor
        first_due = state.started + emulator.time_to_first_byte_ms / 1000.0
        if fault is not None and fault.kind is FaultKind.ERROR_BEFORE_AUDIO:
            self._wait_until(state, first_due)
            framing.fail(fault)
            return

        chunks = synthesis.chunks()
        for index in itertools.count():
            # Pulling a chunk may synthesise the next sentence: generation time, spent in the pacing slack.
            began = time.perf_counter()
            try:
                piece = next(chunks, None)
            except SpeechEngineError as exc:
                self._engine_failed(framing, exc)
                return
            finally:
                state.generation_seconds += time.perf_counter() - began
            # A fault due after more chunks than the audio has strikes at the end, before "done".
            if fault is not None and (index == fault.after_chunks or piece is None):
                if fault.kind is not FaultKind.STALL:
                    self._wait_until(state, first_due + index * chunk_wall)
                    framing.fail(fault)
                    return
                framing.flush()
                self._pause(state, fault.seconds)
                # The stall pushes the rest of the schedule back, as a stuck model would.
                first_due += fault.seconds
                fault = None
            if piece is None:
                break
            self._wait_until(state, first_due + index * chunk_wall)
            chunk = {
                "type": "chunk",
                "context_id": request.context_id,
                "status_code": 206,
                "done": False,
                "data": base64.b64encode(encode_audio(piece, request.encoding)).decode("ascii"),
                "step_time": round(chunk_wall * 1000.0, 3),
            }
            state.chunks += 1
            state.audio_seconds += len(piece) / request.sample_rate
            framing.send([chunk, *synthesis.timestamp_messages(state.audio_seconds)])

        done = {"type": "done", "context_id": request.context_id, "status_code": 200, "done": True}
        framing.send([*synthesis.timestamp_messages(math.inf), done], last=True)
        framing.end()

    def _engine_failed(self, framing: Framing, error: SpeechEngineError) -> None:
        """A broken engine is a model failure: an error answer before audio, a stream failure after."""
        message = f"synthesis failed: {error}"
        if framing.state.first_byte_at is None:
            framing.reject(500, message)
        else:
            failure = Fault(FaultKind.ERROR_MID_STREAM, message=message, error_code="ModelError")
            framing.fail(failure, outcome="engine_error")
