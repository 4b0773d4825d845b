"""EMULATOR of a SageMaker real-time endpoint serving Cartesia Sonic — a local stand-in, not the model.

It speaks the SageMaker runtime's ``InvokeEndpointWithResponseStream`` (rest-json protocol) over loopback
HTTP/1.1, so an unmodified botocore client decodes its answers itself::

    POST /endpoints/{EndpointName}/invocations-response-stream      body: a Sonic request (JSON)

    200  Content-Type: application/vnd.amazon.eventstream, Transfer-Encoding: chunked
         event-stream messages with headers :message-type=event, :event-type=PayloadPart and
         :content-type=application/octet-stream,
         whose concatenated payloads are Sonic's newline-terminated JSON objects:
             {"type":"chunk","context_id":…,"status_code":206,"done":false,"data":"<base64, ≤ 20 ms>",…}\\n
             {"type":"timestamps",…}\\n            (only with "add_timestamps": true)
             {"type":"done","context_id":…,"status_code":200,"done":true}\\n
         Lines are split across PayloadParts and several lines share one part, deterministically per
         ``context_id``, so a client has to buffer bytes and split on newlines, as with the real one.
    424  x-amzn-ErrorType: ModelError   {"OriginalStatusCode": 422 | 429 | 500, "OriginalMessage": …, …}
    400  x-amzn-ErrorType: ValidationError   (an endpoint name other than the configured one)

In-stream failures are event-stream ``exception`` messages (``ModelStreamError`` {Message, ErrorCode},
``InternalStreamFailure`` {Message}), which botocore raises as ``EventStreamError`` while iterating.

Audio comes from a :class:`~voicebridge.local.speech_engine.SpeechEngine` (piper when installed, else a
deterministic stand-in), synthesised sentence by sentence, and is paced: the first chunk leaves after
``time_to_first_byte_ms`` (or once the first sentence is synthesised, if that takes longer), the rest at
``realtime_factor`` seconds of audio per wall second, each flushed when "generated".

Faults are queued from Python (``emu.faults.push(Fault(FaultKind.THROTTLE, count=2))``) or over HTTP by
another process, next to per-request statistics::

    POST   /_emulator/faults   {"kind": "stall", "count": 1, "after_chunks": 3, "seconds": 2.0}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
    GET    /_emulator/stats    one record per invocation (times on the time.perf_counter() clock)

Requests are not authenticated: SigV4 headers are accepted and ignored.

>>> with SonicEmulator(endpoint_name="sonic") as emu:  # doctest: +SKIP
...     client = boto3.client("sagemaker-runtime", endpoint_url=emu.url, region_name="us-east-1")
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import itertools
import json
import logging
import math
import random
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Self, cast
from urllib.parse import unquote, urlsplit

import numpy as np
import numpy.typing as npt

from voicebridge.local.eventstream_encoder import encode_event, encode_exception
from voicebridge.local.speech_engine import SpeechEngine, SpeechEngineError, load_engine

__all__ = [
    "ENCODINGS",
    "Fault",
    "FaultKind",
    "FaultQueue",
    "FaultSpecError",
    "InvalidSonicRequest",
    "InvocationRecord",
    "SonicEmulator",
    "SonicRequest",
    "parse_sonic_request",
]

logger = logging.getLogger(__name__)

ENCODINGS: Final = ("pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")
MIN_SAMPLE_RATE: Final = 8000
MAX_SAMPLE_RATE: Final = 48000
SPEED_RANGE: Final = (0.6, 1.5)
VOLUME_RANGE: Final = (0.5, 2.0)
CHUNK_SECONDS: Final = 0.020
# What the emulated container declares for its stream; clients must not depend on it.
MODEL_CONTENT_TYPE: Final = "application/jsonlines"
ACCOUNT_ID: Final = "123456789012"
REGION: Final = "us-east-1"
_INVOKE_PATH = re.compile(r"^/endpoints/(?P<name>[^/]+)/invocations-response-stream$")
_INLINE_TAG = re.compile(r"<[^<>]*>")
_CONTEXT_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_LANGUAGE = re.compile(r"^[a-z]{2}$")
_LABEL = "sonic endpoint emulator (not the model)"


# --- Requests ----------------------------------------------------------------------------------------


class InvalidSonicRequest(ValueError):
    """The request body is not one the Sonic model accepts; the model would answer 422."""


@dataclass(frozen=True)
class SonicRequest:
    """A validated Sonic request, transcript already stripped of inline tags."""

    context_id: str
    transcript: str
    voice_id: str
    encoding: str
    sample_rate: int
    language: str | None = None
    speed: float = 1.0
    volume: float = 1.0
    emotion: str | None = None
    add_timestamps: bool = False


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _within(config: Mapping[str, Any], key: str, bounds: tuple[float, float]) -> float:
    value = config.get(key, 1.0)
    low, high = bounds
    if not _number(value) or not low <= value <= high:
        raise InvalidSonicRequest(f"generation_config.{key} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def _output_format(value: Any) -> tuple[str, int]:
    if not isinstance(value, dict):
        raise InvalidSonicRequest("output_format must be an object")
    if value.get("container") != "raw":
        raise InvalidSonicRequest(f"output_format.container must be 'raw', got {value.get('container')!r}")
    encoding = value.get("encoding")
    if encoding not in ENCODINGS:
        choices = ", ".join(ENCODINGS)
        raise InvalidSonicRequest(f"output_format.encoding must be one of {choices}, got {encoding!r}")
    rate = value.get("sample_rate")
    if not isinstance(rate, int) or isinstance(rate, bool) or not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise InvalidSonicRequest(
            f"output_format.sample_rate must be an integer in [{MIN_SAMPLE_RATE}, {MAX_SAMPLE_RATE}], got {rate!r}"
        )
    return str(encoding), rate


def parse_sonic_request(body: Any) -> SonicRequest:
    """Validate a decoded request body as the Sonic model package does.

    Raises :class:`InvalidSonicRequest` with the reason the model gives in its 422 answer.
    """
    if not isinstance(body, dict):
        raise InvalidSonicRequest("request body must be a JSON object")
    if "model_id" in body:
        raise InvalidSonicRequest("model_id is not accepted: this endpoint serves a single model")
    for required in ("context_id", "transcript", "voice", "output_format"):
        if required not in body:
            raise InvalidSonicRequest(f"missing required field: {required}")

    context_id = body["context_id"]
    if not isinstance(context_id, str) or not _CONTEXT_ID.match(context_id):
        raise InvalidSonicRequest("context_id must be a non-empty string of letters, digits, '_' and '-'")
    transcript = body["transcript"]
    if not isinstance(transcript, str):
        raise InvalidSonicRequest("transcript must be a string")
    spoken = " ".join(_INLINE_TAG.sub(" ", transcript).split())
    if not spoken:
        raise InvalidSonicRequest("transcript has no text to speak")

    voice = body["voice"]
    if not isinstance(voice, dict) or voice.get("mode") != "id":
        raise InvalidSonicRequest('voice must be {"mode": "id", "id": "<voice uuid>"}')
    try:
        voice_id = str(uuid.UUID(str(voice.get("id"))))
    except ValueError as exc:
        raise InvalidSonicRequest(f"voice.id must be a UUID, got {voice.get('id')!r}") from exc

    encoding, sample_rate = _output_format(body["output_format"])

    language = body.get("language")
    if language is not None and (not isinstance(language, str) or not _LANGUAGE.match(language)):
        raise InvalidSonicRequest(f"language must be a two-letter code such as 'en', got {language!r}")

    config = body.get("generation_config", {})
    if not isinstance(config, dict):
        raise InvalidSonicRequest("generation_config must be an object")
    emotion = config.get("emotion")
    if emotion is not None and not isinstance(emotion, str):
        raise InvalidSonicRequest("generation_config.emotion must be a string")
    add_timestamps = body.get("add_timestamps", False)
    if not isinstance(add_timestamps, bool):
        raise InvalidSonicRequest("add_timestamps must be a boolean")

    return SonicRequest(
        context_id=context_id,
        transcript=spoken,
        voice_id=voice_id,
        encoding=encoding,
        sample_rate=sample_rate,
        language=language,
        speed=_within(config, "speed", SPEED_RANGE),
        volume=_within(config, "volume", VOLUME_RANGE),
        emotion=emotion,
        add_timestamps=add_timestamps,
    )


# --- Faults ------------------------------------------------------------------------------------------


class FaultKind(StrEnum):
    THROTTLE = "throttle"
    """ModelError with OriginalStatusCode 429: no capacity."""
    ERROR_BEFORE_AUDIO = "error_before_audio"
    """HTTP 200, then a ModelStreamError as the very first message."""
    ERROR_MID_STREAM = "error_mid_stream"
    """A ModelStreamError after ``after_chunks`` audio chunks."""
    ERROR_EVENT = "error_event"
    """A Sonic ``{"type": "error"}`` line after ``after_chunks`` chunks; the stream ends without ``done``."""
    STALL = "stall"
    """Nothing sent for ``seconds`` after ``after_chunks`` chunks, then the stream resumes."""
    INTERNAL_FAILURE = "internal_failure"
    """An InternalStreamFailure after ``after_chunks`` chunks."""


class FaultSpecError(ValueError):
    """A fault description is malformed."""


_FAULT_FIELDS: Final = frozenset({"kind", "count", "after_chunks", "seconds", "message", "error_code"})


@dataclass(frozen=True)
class Fault:
    """A failure to inject into the next ``count`` invocations that reach the model."""

    kind: FaultKind
    count: int = 1
    after_chunks: int = 3
    seconds: float = 1.0
    message: str | None = None
    error_code: str = "ModelInvocationTimeExceeded"

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", FaultKind(self.kind))
        except ValueError as exc:
            kinds = ", ".join(kind.value for kind in FaultKind)
            raise FaultSpecError(f"unknown fault kind {self.kind!r}; one of {kinds}") from exc
        if not isinstance(self.count, int) or self.count < 1:
            raise FaultSpecError(f"count must be a positive integer, got {self.count!r}")
        if not isinstance(self.after_chunks, int) or self.after_chunks < 0:
            raise FaultSpecError(f"after_chunks must be a non-negative integer, got {self.after_chunks!r}")
        if not _number(self.seconds) or self.seconds < 0:
            raise FaultSpecError(f"seconds must be a non-negative number, got {self.seconds!r}")

    @classmethod
    def from_json(cls, data: Any) -> Fault:
        """A fault from its JSON form (the ``POST /_emulator/faults`` body)."""
        if not isinstance(data, dict) or "kind" not in data:
            raise FaultSpecError("a fault is an object with at least a 'kind'")
        unknown = set(data) - _FAULT_FIELDS
        if unknown:
            raise FaultSpecError(f"unknown fault fields: {', '.join(sorted(unknown))}")
        try:
            return cls(**data)
        except TypeError as exc:
            raise FaultSpecError(str(exc)) from exc

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        """The text carried by the injected error."""
        if self.message is not None:
            return self.message
        return f"injected {self.kind.value} fault (emulator)"


@dataclass
class _PendingFault:
    fault: Fault
    left: int


class FaultQueue:
    """Pending faults, applied in order; each invocation that reaches the model takes one count of the head.

    Requests the model rejects (422) or the endpoint refuses (unknown name) take no count.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[_PendingFault] = []

    def push(self, fault: Fault) -> None:
        with self._lock:
            self._pending.append(_PendingFault(fault, fault.count))

    def clear(self) -> int:
        """Drop every pending fault; returns how many invocations they would still have hit."""
        with self._lock:
            remaining = sum(entry.left for entry in self._pending)
            self._pending.clear()
            return remaining

    def pending(self) -> list[Fault]:
        """Snapshot of the queue, each fault with the count it has left."""
        with self._lock:
            return [dataclasses.replace(entry.fault, count=entry.left) for entry in self._pending]

    def take(self) -> Fault | None:
        with self._lock:
            if not self._pending:
                return None
            head = self._pending[0]
            head.left -= 1
            if head.left == 0:
                self._pending.pop(0)
            return head.fault

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)


# --- Statistics --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InvocationRecord:
    """One invocation as the emulator saw it; times are ``time.perf_counter()`` seconds.

    ``first_byte_at`` is when the stream's first bytes (headers and first message) were written, None for an
    error answer; ``finished`` is taken just before the response's last bytes are written.

    ``generation_seconds`` is the wall time the emulator spent producing audio on purpose (synthesis, the
    time-to-first-byte wait, pacing, stalls) and excludes time spent writing to the socket, so a benchmark
    can subtract it from a client's wall time to isolate the client's own overhead.
    """

    endpoint_name: str
    body: Any
    http_status: int
    outcome: str
    started: float
    first_byte_at: float | None
    finished: float
    generation_seconds: float
    audio_seconds: float
    chunks: int = 0
    payload_parts: int = 0
    fault: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# --- Audio encodings ---------------------------------------------------------------------------------

_ULAW_SEGMENT_ENDS: Final = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])
_ALAW_SEGMENT_ENDS: Final = np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF])


def _mulaw(samples: npt.NDArray[np.int16]) -> bytes:
    """ITU-T G.711 µ-law of 16-bit linear samples (on their top 14 bits, as the standard defines)."""
    value = samples.astype(np.int32) >> 2
    mask = np.where(value < 0, 0x7F, 0xFF)
    magnitude = np.minimum(np.abs(value), 8159) + 0x21
    segment = np.searchsorted(_ULAW_SEGMENT_ENDS, magnitude)
    code = np.where(segment >= 8, 0x7F, (segment << 4) | ((magnitude >> (segment + 1)) & 0x0F))
    return (code ^ mask).astype(np.uint8).tobytes()


def _alaw(samples: npt.NDArray[np.int16]) -> bytes:
    """ITU-T G.711 A-law of 16-bit linear samples (on their top 13 bits, as the standard defines)."""
    value = samples.astype(np.int32) >> 3
    mask = np.where(value >= 0, 0xD5, 0x55)
    magnitude = np.where(value >= 0, value, -value - 1)
    segment = np.searchsorted(_ALAW_SEGMENT_ENDS, magnitude)
    mantissa = np.where(segment < 2, magnitude >> 1, magnitude >> np.maximum(segment, 1)) & 0x0F
    code = np.where(segment >= 8, 0x7F, (segment << 4) | mantissa)
    return (code ^ mask).astype(np.uint8).tobytes()


def _encode_audio(samples: npt.NDArray[np.int16], encoding: str) -> bytes:
    if encoding == "pcm_s16le":
        return samples.astype("<i2").tobytes()
    if encoding == "pcm_f32le":
        return (samples.astype(np.float32) / 32768.0).astype("<f4").tobytes()
    if encoding == "pcm_mulaw":
        return _mulaw(samples)
    return _alaw(samples)


# --- Stream shaping ----------------------------------------------------------------------------------


class _PartPacker:
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


_SENTENCE = re.compile(r".*?[.!?]+(?:\s+|$)|.+$", re.DOTALL)


def _scaled(samples: npt.NDArray[np.int16], volume: float) -> npt.NDArray[np.int16]:
    if volume == 1.0:
        return samples
    return np.clip(np.round(samples.astype(np.float64) * volume), -32768, 32767).astype(np.int16)


class _Synthesis:
    """A request's audio made sentence by sentence, as a streaming model makes it, cut into ≤ 20 ms chunks.

    Only the first sentence has to be synthesised before the first chunk can leave. Word timings are spread
    over each sentence's audio in proportion to character positions: plausible, not aligned.
    """

    def __init__(self, engine: SpeechEngine, request: SonicRequest) -> None:
        self._engine = engine
        self._request = request
        self.per_chunk = max(1, round(request.sample_rate * CHUNK_SECONDS))
        self._words: deque[tuple[float, dict[str, Any]]] = deque()

    def chunks(self) -> Iterator[npt.NDArray[np.int16]]:
        request = self._request
        pending = np.zeros(0, dtype=np.int16)
        produced = 0
        for sentence in _SENTENCE.findall(request.transcript):
            samples = self._engine.synthesize(sentence, request.sample_rate, request.speed)
            if request.add_timestamps:
                self._time_words(sentence, produced, len(samples))
            produced += len(samples)
            pending = np.concatenate([pending, _scaled(samples, request.volume)])
            whole = len(pending) - len(pending) % self.per_chunk
            for start in range(0, whole, self.per_chunk):
                yield pending[start : start + self.per_chunk]
            pending = pending[whole:]
        if len(pending):
            yield pending

    def _time_words(self, sentence: str, offset_samples: int, samples: int) -> None:
        rate = self._request.sample_rate
        seconds_per_char = samples / rate / len(sentence)
        for match in re.finditer(r"\S+", sentence):
            start = offset_samples / rate + match.start() * seconds_per_char
            end = offset_samples / rate + match.end() * seconds_per_char
            words = {"words": [match.group()], "start": [round(start, 3)], "end": [round(end, 3)]}
            self._words.append((end, words))

    def timestamp_lines(self, spoken_seconds: float) -> list[bytes]:
        """``timestamps`` lines of the words whose audio has all been sent, each once."""
        lines = []
        while self._words and self._words[0][0] <= spoken_seconds + 1e-6:
            _, words = self._words.popleft()
            message = {
                "type": "timestamps",
                "context_id": self._request.context_id,
                "status_code": 206,
                "done": False,
                "word_timestamps": words,
            }
            lines.append(_json_line(message))
        return lines


# --- HTTP --------------------------------------------------------------------------------------------


class _ClientGone(Exception):
    """The client closed the connection while the response was being written."""


class _Stopping(Exception):
    """The emulator is shutting down."""


@dataclass
class _Invocation:
    """Mutable bookkeeping of one invocation while it runs."""

    endpoint_name: str
    started: float
    body: Any = None
    first_byte_at: float | None = None
    generation_seconds: float = 0.0
    audio_seconds: float = 0.0
    chunks: int = 0
    payload_parts: int = 0
    fault: str | None = None
    outcome: str = "ok"
    http_status: int = 200
    context_id: str | None = None
    recorded: bool = False


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], emulator: SonicEmulator) -> None:
        self.emulator = emulator
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "SonicEndpointEmulator/1.0"
    # Idle keep-alive connections from botocore's pool are dropped after this many seconds.
    timeout = 60

    @property
    def emulator(self) -> SonicEmulator:
        return cast(_Server, self.server).emulator

    def setup(self) -> None:
        super().setup()
        # Each flush is a small write; Nagle's algorithm would hold it back for the client's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server = cast(_Server, self.server)
        with server.connections_lock:
            server.connections.add(self.connection)

    def finish(self) -> None:
        server = cast(_Server, self.server)
        with server.connections_lock:
            server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except _ClientGone:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s: " + format, _LABEL, *args)

    # -- plain responses

    def _send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        try:
            self.end_headers()
            self.wfile.write(body)
        except OSError as exc:
            raise _ClientGone from exc

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return b""
        return self.rfile.read(int(length))

    # -- routing

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        match = _INVOKE_PATH.match(path)
        if match:
            self._invoke(unquote(match.group("name")))
        elif path == "/_emulator/faults":
            self._post_faults()
        else:
            self._unknown_operation()

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path == "/_emulator/faults":
            self._send_json(200, {"pending": [fault.to_json() for fault in self.emulator.faults.pending()]})
        elif path == "/_emulator/stats":
            emulator = self.emulator
            self._send_json(
                200,
                {
                    "emulator": _LABEL,
                    "engine": emulator.engine.name,
                    "invocations": [record.to_json() for record in emulator.stats],
                },
            )
        else:
            self._unknown_operation()

    def do_DELETE(self) -> None:
        if urlsplit(self.path).path == "/_emulator/faults":
            self._send_json(200, {"cleared": self.emulator.faults.clear()})
        else:
            self._unknown_operation()

    def _unknown_operation(self) -> None:
        self._read_body()
        self._send_json(
            404,
            {"message": f"{self.command} {self.path} is not an operation of this emulator"},
            {"x-amzn-ErrorType": "UnknownOperationException"},
        )

    def _post_faults(self) -> None:
        try:
            decoded = json.loads(self._read_body() or b"null")
            items = decoded if isinstance(decoded, list) else [decoded]
            faults = [Fault.from_json(item) for item in items]
        except (ValueError, FaultSpecError) as exc:
            self._send_json(400, {"message": str(exc)})
            return
        for fault in faults:
            self.emulator.faults.push(fault)
        logger.info("%s: fault(s) queued over HTTP: %s", _LABEL, ", ".join(f.kind.value for f in faults))
        self._send_json(201, {"pending": [fault.to_json() for fault in self.emulator.faults.pending()]})

    # -- InvokeEndpointWithResponseStream

    def _invoke(self, endpoint_name: str) -> None:
        state = _Invocation(endpoint_name=endpoint_name, started=time.perf_counter())
        raw = self._read_body()
        try:
            self._serve_invocation(state, raw)
        except _ClientGone:
            state.outcome = "client_disconnected"
            self.close_connection = True
        except _Stopping:
            state.outcome = "emulator_stopped"
            self.close_connection = True
        finally:
            self._complete(state)

    def _complete(self, state: _Invocation) -> None:
        """Records the invocation once, just before its last byte goes out.

        Recording first means the record exists by the time a client has read the whole response.
        """
        if not state.recorded:
            state.recorded = True
            self.emulator._record(state)

    def _serve_invocation(self, state: _Invocation, raw: bytes) -> None:
        emulator = self.emulator
        if emulator.endpoint_name is not None and state.endpoint_name != emulator.endpoint_name:
            state.http_status, state.outcome = 400, "validation_error"
            self._complete(state)
            self._send_json(
                400,
                {"message": f"Endpoint {state.endpoint_name} of account {ACCOUNT_ID} not found."},
                {"x-amzn-ErrorType": "ValidationError:http://internal.amazon.com/coral/com.amazon.coral.validate/"},
            )
            return
        try:
            state.body = json.loads(raw)
        except ValueError:
            state.body = raw.decode("utf-8", errors="replace")
        try:
            request = parse_sonic_request(state.body)
        except InvalidSonicRequest as exc:
            self._model_error(state, 422, str(exc))
            return
        state.context_id = request.context_id

        fault = emulator.faults.take()
        state.fault = fault.kind.value if fault else None
        if fault is not None and fault.kind is FaultKind.THROTTLE:
            self._model_error(state, 429, fault.message or "model is at capacity; retry later (emulator)")
            return
        self._stream(state, request, fault)

    def _model_error(self, state: _Invocation, original_status: int, reason: str) -> None:
        state.http_status, state.outcome = 424, f"model_error_{original_status}"
        log_group = f"/aws/sagemaker/Endpoints/{state.endpoint_name}"
        kind = "client" if original_status < 500 else "server"
        self._complete(state)
        self._send_json(
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

    # -- the event stream

    def _write(self, state: _Invocation, frames: bytes) -> None:
        """One HTTP chunk; the response headers go out with the first one, when the model starts answering."""
        try:
            if state.first_byte_at is None:
                self.send_response(200)
                self.send_header("Content-Type", "application/vnd.amazon.eventstream")
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("X-Amzn-SageMaker-Content-Type", MODEL_CONTENT_TYPE)
                self.send_header("x-Amzn-Invoked-Production-Variant", "AllTraffic")
                self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
                self.end_headers()
                state.first_byte_at = time.perf_counter()
            self.wfile.write(f"{len(frames):x}\r\n".encode("ascii") + frames + b"\r\n")
        except OSError as exc:
            raise _ClientGone from exc

    def _send_parts(self, state: _Invocation, parts: list[bytes]) -> None:
        if parts:
            state.payload_parts += len(parts)
            self._write(state, b"".join(encode_event("PayloadPart", part) for part in parts))

    def _end_stream(self, state: _Invocation) -> None:
        self._complete(state)
        try:
            self.wfile.write(b"0\r\n\r\n")
        except OSError as exc:
            raise _ClientGone from exc

    def _wait_until(self, state: _Invocation, due: float) -> None:
        delay = due - time.perf_counter()
        if delay > 0:
            self._pause(state, delay)

    def _pause(self, state: _Invocation, seconds: float) -> None:
        began = time.perf_counter()
        stopped = self.emulator._stopping.wait(seconds)
        state.generation_seconds += time.perf_counter() - began
        if stopped:
            raise _Stopping

    def _stream(self, state: _Invocation, request: SonicRequest, fault: Fault | None) -> None:
        emulator = self.emulator
        synthesis = _Synthesis(emulator.engine, request)
        chunk_wall = synthesis.per_chunk / request.sample_rate / emulator.realtime_factor
        first_due = state.started + emulator.time_to_first_byte_ms / 1000.0
        packer = _PartPacker(request.context_id)
        if fault is not None and fault.kind is FaultKind.ERROR_BEFORE_AUDIO:
            self._wait_until(state, first_due)
            self._fail(state, packer, fault)
            return

        chunks = synthesis.chunks()
        for index in itertools.count():
            # Pulling a chunk may synthesise the next sentence: generation time, spent in the pacing slack.
            began = time.perf_counter()
            try:
                piece = next(chunks, None)
            except SpeechEngineError as exc:
                self._engine_failed(state, packer, exc)
                return
            finally:
                state.generation_seconds += time.perf_counter() - began
            # A fault due after more chunks than the audio has strikes at the end, before "done".
            if fault is not None and (index == fault.after_chunks or piece is None):
                if fault.kind is not FaultKind.STALL:
                    self._wait_until(state, first_due + index * chunk_wall)
                    self._fail(state, packer, fault)
                    return
                self._send_parts(state, packer.flush())
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
                "data": base64.b64encode(_encode_audio(piece, request.encoding)).decode("ascii"),
                "step_time": round(chunk_wall * 1000.0, 3),
                "sampling_rate": request.sample_rate,
            }
            state.chunks += 1
            state.audio_seconds += len(piece) / request.sample_rate
            lines = [_json_line(chunk), *synthesis.timestamp_lines(state.audio_seconds)]
            self._send_parts(state, [part for line in lines for part in packer.add(line)])

        done = {"type": "done", "context_id": request.context_id, "status_code": 200, "done": True}
        lines = [*synthesis.timestamp_lines(math.inf), _json_line(done)]
        self._send_parts(state, [part for line in lines for part in packer.add(line)] + packer.flush())
        self._end_stream(state)

    def _engine_failed(self, state: _Invocation, packer: _PartPacker, error: SpeechEngineError) -> None:
        """A broken engine is a model failure: a 500 ModelError before audio, a ModelStreamError after."""
        message = f"synthesis failed: {error}"
        if state.first_byte_at is None:
            self._model_error(state, 500, message)
        else:
            failure = Fault(FaultKind.ERROR_MID_STREAM, message=message, error_code="ModelError")
            self._fail(state, packer, failure, outcome="engine_error")

    def _fail(self, state: _Invocation, packer: _PartPacker, fault: Fault, outcome: str | None = None) -> None:
        """Ends the stream the way ``fault`` says, after delivering what was already generated."""
        state.outcome = outcome or f"fault_{fault.kind.value}"
        message = fault.describe()
        if fault.kind is FaultKind.ERROR_EVENT:
            error = {
                "type": "error",
                "context_id": state.context_id,
                "status_code": 500,
                "done": True,
                "error": message,
            }
            self._send_parts(state, packer.add(_json_line(error)) + packer.flush())
        else:
            self._send_parts(state, packer.flush())
            if fault.kind is FaultKind.INTERNAL_FAILURE:
                frame = encode_exception("InternalStreamFailure", json.dumps({"Message": message}).encode())
            else:
                payload = {"Message": message, "ErrorCode": fault.error_code}
                frame = encode_exception("ModelStreamError", json.dumps(payload).encode())
            self._write(state, frame)
        self._end_stream(state)


# --- The emulator ------------------------------------------------------------------------------------


class SonicEmulator:
    """A local SageMaker runtime endpoint that answers like Cartesia Sonic (an emulator, not the model).

    ``endpoint_name`` — when set, other names get SageMaker's ValidationError; None serves every name.
    ``time_to_first_byte_ms`` — delay from request to the first audio chunk (synthesis counts towards it).
    ``realtime_factor`` — seconds of audio produced per wall-clock second after the first chunk.
    ``engine`` — the speech engine; by default piper when installed, else the deterministic stand-in.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        endpoint_name: str | None = None,
        time_to_first_byte_ms: float = 40.0,
        realtime_factor: float = 20.0,
        engine: SpeechEngine | None = None,
    ) -> None:
        if time_to_first_byte_ms < 0:
            raise ValueError(f"time_to_first_byte_ms must be >= 0, got {time_to_first_byte_ms}")
        if not realtime_factor > 0:
            raise ValueError(f"realtime_factor must be > 0, got {realtime_factor}")
        self.host = host
        self.port = port
        self.endpoint_name = endpoint_name
        self.time_to_first_byte_ms = time_to_first_byte_ms
        self.realtime_factor = realtime_factor
        self.engine: SpeechEngine = engine if engine is not None else load_engine("auto")
        self._faults = FaultQueue()
        self._records: list[InvocationRecord] = []
        self._records_lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server((self.host, self.port), self)
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="sonic-emulator",
            daemon=True,
        )
        self._thread.start()
        logger.info("%s listening on %s (engine: %s)", _LABEL, self.url, self.engine.name)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        # Pooled keep-alive connections would keep their handler threads reading: cut them.
        with server.connections_lock:
            open_connections = list(server.connections)
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        logger.info("%s stopped", _LABEL)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- state

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the Sonic emulator is not running; call start() first")
        return f"http://{self.host}:{self.port}"

    @property
    def faults(self) -> FaultQueue:
        return self._faults

    @property
    def stats(self) -> list[InvocationRecord]:
        """Invocations so far, oldest first (a copy)."""
        with self._records_lock:
            return list(self._records)

    def _record(self, state: _Invocation) -> None:
        record = InvocationRecord(
            endpoint_name=state.endpoint_name,
            body=state.body,
            http_status=state.http_status,
            outcome=state.outcome,
            started=state.started,
            first_byte_at=state.first_byte_at,
            finished=time.perf_counter(),
            generation_seconds=state.generation_seconds,
            audio_seconds=state.audio_seconds,
            chunks=state.chunks,
            payload_parts=state.payload_parts,
            fault=state.fault,
        )
        with self._records_lock:
            self._records.append(record)
        ttfb = f"{(record.first_byte_at - record.started) * 1000:.0f}ms" if record.first_byte_at else "-"
        logger.info(
            "%s: POST /endpoints/%s -> %d %s context_id=%s chunks=%d parts=%d audio=%.2fs ttfb=%s total=%.0fms",
            _LABEL,
            record.endpoint_name,
            record.http_status,
            record.outcome,
            state.context_id or "-",
            record.chunks,
            record.payload_parts,
            record.audio_seconds,
            ttfb,
            (record.finished - record.started) * 1000,
        )
