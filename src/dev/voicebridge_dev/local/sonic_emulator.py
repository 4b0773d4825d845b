"""EMULATOR of Cartesia Sonic on a SageMaker endpoint and on the Cartesia API — a stand-in, not the model.

One loopback HTTP/1.1 server speaks two transports; both share the synthesis, pacing, faults and statistics,
and differ only in how a generation is framed on the wire.

**SageMaker runtime** ``InvokeEndpointWithResponseStream`` (rest-json protocol), so an unmodified botocore
client decodes its answers itself::

    POST /endpoints/{EndpointName}/invocations-response-stream      body: a Sonic request (JSON, no model_id)

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
Requests are not authenticated: SigV4 headers are accepted and ignored.

**Cartesia API** ``POST /tts/sse``, as the official ``cartesia`` SDK's ``client.tts.generate_sse`` calls it::

    POST /tts/sse   Authorization: Bearer <key>   Cartesia-Version: <date>
                    body: {"model_id", "transcript", "voice": "<uuid>" | {"id": …}, "output_format", …}

    200  Content-Type: text/event-stream, Transfer-Encoding: chunked, one event per generated message:
             event: chunk\\ndata: {"type":"chunk","data":…,"done":false,"status_code":206,"step_time":…,
                                   "context_id":…}\\n\\n
             event: timestamps\\ndata: {…}\\n\\n      (only with "add_timestamps": true)
             event: done\\ndata: {"type":"done","done":true,"status_code":200,"context_id":…}\\n\\n
         or, when generation fails after the headers, a last
             event: error\\ndata: {"type":"error","done":true,"status_code":…,"title":…,"message":…,
                                   "request_id":…,"error_code":…}\\n\\n
    4xx/5xx  {"error_code": …, "title": …, "message": …, "request_id": …}  — 401 wrong or missing key (checked
         only when the emulator has an ``api_key``), 400 no Cartesia-Version or a body that is not JSON,
         422 a request the model rejects, 429 throttled, 500 the speech engine failed before any audio.

Audio comes from a :class:`~voicebridge_dev.local.speech_engine.SpeechEngine` (piper when installed, else a
deterministic stand-in), synthesised sentence by sentence, and is paced: the first chunk leaves after
``time_to_first_byte_ms`` (or once the first sentence is synthesised, if that takes longer), the rest at
``realtime_factor`` seconds of audio per wall second, each flushed when "generated".

Faults are queued from Python (``emu.faults.push(Fault(FaultKind.THROTTLE, count=2))``) or over HTTP by
another process, next to per-request statistics and the model's accepted encodings (whether the Sonic
Marketplace package accepts ``pcm_mulaw`` is undocumented, so tests can make it refuse)::

    POST   /_emulator/faults   {"kind": "stall", "count": 1, "after_chunks": 3, "seconds": 2.0}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
    GET    /_emulator/stats    one record per invocation (times on the time.perf_counter() clock)
    POST   /_emulator/config   {"accepted_encodings": ["pcm_s16le", …]}
    GET    /_emulator/config   the current configuration

>>> with SonicEmulator(endpoint_name="sonic", api_key="local") as emu:  # doctest: +SKIP
...     runtime = boto3.client("sagemaker-runtime", endpoint_url=emu.url, region_name="us-east-1")
...     api = cartesia.Cartesia(api_key="local", base_url=emu.url)
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
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
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final, Literal, Self, cast
from urllib.parse import unquote, urlsplit

import numpy as np
import numpy.typing as npt

from voicebridge_dev.local.eventstream_encoder import encode_event, encode_exception
from voicebridge_dev.local.service import LocalService, TrackedHandler, TrackingHTTPServer
from voicebridge_dev.local.speech_engine import SpeechEngine, SpeechEngineError, load_engine

__all__ = [
    "API_SAMPLE_RATES",
    "ENCODINGS",
    "EmulatorConfigError",
    "Fault",
    "FaultKind",
    "FaultQueue",
    "FaultSpecError",
    "InvalidSonicRequest",
    "InvocationRecord",
    "SonicEmulator",
    "SonicRequest",
    "Transport",
    "parse_cartesia_request",
    "parse_sonic_request",
]

logger = logging.getLogger(__name__)

ENCODINGS: Final = ("pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")
Transport = Literal["sagemaker", "cartesia-api"]
MIN_SAMPLE_RATE: Final = 8000
MAX_SAMPLE_RATE: Final = 48000
API_SAMPLE_RATES: Final = frozenset({8000, 16000, 22050, 24000, 44100, 48000})
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
_LOCALE = re.compile(r"^[a-z]{2}(-[A-Z]{2})?$")
_LABEL = "sonic endpoint emulator (not the model)"


# --- Requests ----------------------------------------------------------------------------------------


class InvalidSonicRequest(ValueError):
    """The request body is not one the Sonic model accepts; the model would answer 422."""


@dataclass(frozen=True)
class SonicRequest:
    """A validated Sonic request, transcript already stripped of inline tags.

    ``context_id`` is None only on the Cartesia API, where it is optional and echoed back only when given.
    """

    context_id: str | None
    transcript: str
    voice_id: str
    encoding: str
    sample_rate: int
    language: str | None = None
    speed: float = 1.0
    volume: float = 1.0
    emotion: str | None = None
    add_timestamps: bool = False
    model_id: str | None = None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _within(config: Mapping[str, Any], key: str, bounds: tuple[float, float]) -> float:
    value = config.get(key, 1.0)
    low, high = bounds
    if not _number(value) or not low <= value <= high:
        raise InvalidSonicRequest(f"generation_config.{key} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def _output_format(value: Any, accepted_encodings: Collection[str], rates: Collection[int] | None) -> tuple[str, int]:
    if not isinstance(value, dict):
        raise InvalidSonicRequest("output_format must be an object")
    if value.get("container") != "raw":
        raise InvalidSonicRequest(f"output_format.container must be 'raw', got {value.get('container')!r}")
    encoding = value.get("encoding")
    if encoding not in ENCODINGS:
        choices = ", ".join(ENCODINGS)
        raise InvalidSonicRequest(f"output_format.encoding must be one of {choices}, got {encoding!r}")
    if encoding not in accepted_encodings:
        supported = ", ".join(name for name in ENCODINGS if name in accepted_encodings)
        raise InvalidSonicRequest(
            f"output_format.encoding {encoding!r} is not supported by this model; use one of {supported}"
        )
    rate = value.get("sample_rate")
    if not isinstance(rate, int) or isinstance(rate, bool) or not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise InvalidSonicRequest(
            f"output_format.sample_rate must be an integer in [{MIN_SAMPLE_RATE}, {MAX_SAMPLE_RATE}], got {rate!r}"
        )
    if rates is not None and rate not in rates:
        choices = ", ".join(map(str, sorted(rates)))
        raise InvalidSonicRequest(f"output_format.sample_rate must be one of {choices}, got {rate}")
    return str(encoding), rate


def _voice_uuid(value: Any, field: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError as exc:
        raise InvalidSonicRequest(f"{field} must be a UUID, got {value!r}") from exc


def _spoken(transcript: Any) -> str:
    if not isinstance(transcript, str):
        raise InvalidSonicRequest("transcript must be a string")
    spoken = " ".join(_INLINE_TAG.sub(" ", transcript).split())
    if not spoken:
        raise InvalidSonicRequest("transcript has no text to speak")
    return spoken


def _context_id(value: Any) -> str:
    if not isinstance(value, str) or not _CONTEXT_ID.match(value):
        raise InvalidSonicRequest("context_id must be a non-empty string of letters, digits, '_' and '-'")
    return value


def _language(value: Any, field: str, pattern: re.Pattern[str], example: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not pattern.match(value)):
        raise InvalidSonicRequest(f"{field} must be a code such as {example!r}, got {value!r}")
    return value


def _generation(
    body: Mapping[str, Any],
    *,
    context_id: str | None,
    voice_id: str,
    language: str | None,
    accepted_encodings: Collection[str],
    rates: Collection[int] | None = None,
    model_id: str | None = None,
) -> SonicRequest:
    """The fields both transports validate alike: transcript, output format, generation config, timestamps."""
    spoken = _spoken(body["transcript"])
    encoding, sample_rate = _output_format(body["output_format"], accepted_encodings, rates)
    config = body.get("generation_config", {})
    if not isinstance(config, dict):
        raise InvalidSonicRequest("generation_config must be an object")
    emotion = config.get("emotion")
    if emotion is not None and not isinstance(emotion, str):
        raise InvalidSonicRequest("generation_config.emotion must be a string")
    add_timestamps = body.get("add_timestamps", False)
    if add_timestamps is None:
        # The API declares it Optional[bool]: null means the default.
        add_timestamps = False
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
        model_id=model_id,
    )


def parse_sonic_request(body: Any, *, accepted_encodings: Collection[str] = ENCODINGS) -> SonicRequest:
    """Validate a decoded request body as the Sonic model package on SageMaker does.

    Raises :class:`InvalidSonicRequest` with the reason the model gives in its 422 answer.
    """
    if not isinstance(body, dict):
        raise InvalidSonicRequest("request body must be a JSON object")
    if "model_id" in body:
        raise InvalidSonicRequest("model_id is not accepted: this endpoint serves a single model")
    for required in ("context_id", "transcript", "voice", "output_format"):
        if required not in body:
            raise InvalidSonicRequest(f"missing required field: {required}")

    context_id = _context_id(body["context_id"])
    voice = body["voice"]
    if not isinstance(voice, dict) or voice.get("mode") != "id":
        raise InvalidSonicRequest('voice must be {"mode": "id", "id": "<voice uuid>"}')
    voice_id = _voice_uuid(voice.get("id"), "voice.id")
    language = _language(body.get("language"), "language", _LANGUAGE, "en")
    return _generation(
        body,
        context_id=context_id,
        voice_id=voice_id,
        language=language,
        accepted_encodings=accepted_encodings,
    )


def parse_cartesia_request(body: Any, *, accepted_encodings: Collection[str] = ENCODINGS) -> SonicRequest:
    """Validate a decoded ``POST /tts/sse`` body as the Cartesia API does.

    Unlike the SageMaker package the API serves many models, so ``model_id`` is required; ``voice`` is a voice
    id or an object with an ``id``; ``context_id`` is optional; ``language`` and ``locale`` exclude each
    other.
    Raises :class:`InvalidSonicRequest` with the reason the API gives in its 422 answer.
    """
    if not isinstance(body, dict):
        raise InvalidSonicRequest("request body must be a JSON object")
    for required in ("model_id", "transcript", "voice", "output_format"):
        if required not in body:
            raise InvalidSonicRequest(f"missing required field: {required}")

    model_id = body["model_id"]
    if not isinstance(model_id, str) or not model_id.strip():
        raise InvalidSonicRequest("model_id must be a non-empty string such as 'sonic-3'")
    voice = body["voice"]
    if isinstance(voice, dict):
        if voice.get("mode", "id") != "id" or "id" not in voice:
            raise InvalidSonicRequest('voice must be a voice id, or {"id": "<voice uuid>"}')
        voice_id = _voice_uuid(voice["id"], "voice.id")
    elif isinstance(voice, str):
        voice_id = _voice_uuid(voice, "voice")
    else:
        raise InvalidSonicRequest('voice must be a voice id, or {"id": "<voice uuid>"}')
    context_id = body.get("context_id")
    if context_id is not None:
        context_id = _context_id(context_id)
    language = _language(body.get("language"), "language", _LANGUAGE, "en")
    locale = _language(body.get("locale"), "locale", _LOCALE, "en-GB")
    if language is not None and locale is not None:
        raise InvalidSonicRequest("a request may set language or locale, never both")
    return _generation(
        body,
        context_id=context_id,
        voice_id=voice_id,
        language=language or locale,
        accepted_encodings=accepted_encodings,
        rates=API_SAMPLE_RATES,
        model_id=model_id,
    )


# --- Faults ------------------------------------------------------------------------------------------


class FaultKind(StrEnum):
    """A failure, as each transport tells it: SageMaker's event stream, or the Cartesia API's SSE.

    On the Cartesia API every failure after the response headers is a last ``error`` event, then the end of
    the stream: the API has no other in-stream channel.
    """

    THROTTLE = "throttle"
    """No capacity: ModelError with OriginalStatusCode 429; HTTP 429 on the Cartesia API."""
    ERROR_BEFORE_AUDIO = "error_before_audio"
    """HTTP 200, then a ModelStreamError (an SSE ``error`` event) as the very first message."""
    ERROR_MID_STREAM = "error_mid_stream"
    """A ModelStreamError (an SSE ``error`` event) after ``after_chunks`` audio chunks."""
    ERROR_EVENT = "error_event"
    """A Sonic ``{"type": "error"}`` message after ``after_chunks`` chunks, and no ``done``."""
    STALL = "stall"
    """Nothing sent for ``seconds`` after ``after_chunks`` chunks, then the stream resumes."""
    INTERNAL_FAILURE = "internal_failure"
    """An InternalStreamFailure (an SSE ``error`` event, status 500) after ``after_chunks`` chunks."""


class FaultSpecError(ValueError):
    """A fault description is malformed."""


class EmulatorConfigError(ValueError):
    """An emulator setting (from Python or ``POST /_emulator/config``) is malformed."""


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

    ``transport`` is ``"sagemaker"`` or ``"cartesia-api"``; ``endpoint_name`` is None on the Cartesia API, and
    ``cartesia_version`` the ``Cartesia-Version`` header it was called with. ``payload_parts`` counts
    event-stream PayloadParts on SageMaker and server-sent events on the Cartesia API.
    """

    endpoint_name: str | None
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
    transport: Transport = "sagemaker"
    cartesia_version: str | None = None

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

    def timestamp_messages(self, spoken_seconds: float) -> list[dict[str, Any]]:
        """``timestamps`` messages of the words whose audio has all been sent, each once."""
        messages = []
        while self._words and self._words[0][0] <= spoken_seconds + 1e-6:
            _, words = self._words.popleft()
            messages.append(
                {
                    "type": "timestamps",
                    "context_id": self._request.context_id,
                    "status_code": 206,
                    "done": False,
                    "word_timestamps": words,
                }
            )
        return messages


# --- HTTP --------------------------------------------------------------------------------------------


class _ClientGone(Exception):
    """The client closed the connection while the response was being written."""


class _Stopping(Exception):
    """The emulator is shutting down."""


@dataclass
class _Invocation:
    """Mutable bookkeeping of one invocation while it runs."""

    transport: Transport
    started: float
    endpoint_name: str | None = None
    request_id: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))
    cartesia_version: str | None = None
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


class _Server(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], emulator: SonicEmulator) -> None:
        self.emulator = emulator
        super().__init__(address, _Handler)


# -- framing: the only part of a generation that differs between the transports


class _Framing(ABC):
    """Puts one generation's messages on the wire as a chunked HTTP response.

    The response headers go out with the first bytes, when the model starts answering, so a client's time to
    first byte is the model's. Subclasses decide how messages are framed and how a failure is told.
    """

    content_type: ClassVar[str]

    def __init__(self, handler: _Handler, state: _Invocation, request: SonicRequest) -> None:
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

    def write(self, data: bytes) -> None:
        """One HTTP chunk, preceded by the response headers the first time."""
        handler, state = self.handler, self.state
        try:
            if state.first_byte_at is None:
                handler.send_response(200)
                handler.send_header("Content-Type", self.content_type)
                handler.send_header("Transfer-Encoding", "chunked")
                for name, value in self.headers().items():
                    handler.send_header(name, value)
                handler.end_headers()
                state.first_byte_at = time.perf_counter()
            handler.wfile.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")
        except OSError as exc:
            raise _ClientGone from exc

    def end(self) -> None:
        self.handler._complete(self.state)
        try:
            self.handler.wfile.write(b"0\r\n\r\n")
        except OSError as exc:
            raise _ClientGone from exc


class _EventStreamFraming(_Framing):
    """SageMaker: Sonic's JSON lines, cut into PayloadPart events; failures are event-stream exceptions."""

    content_type = "application/vnd.amazon.eventstream"

    def __init__(self, handler: _Handler, state: _Invocation, request: SonicRequest) -> None:
        super().__init__(handler, state, request)
        self._packer = _PartPacker(request.context_id or "")

    def headers(self) -> dict[str, str]:
        return {
            "X-Amzn-SageMaker-Content-Type": MODEL_CONTENT_TYPE,
            "x-Amzn-Invoked-Production-Variant": "AllTraffic",
            "x-amzn-RequestId": self.state.request_id,
        }

    def send(self, messages: list[dict[str, Any]], *, last: bool = False) -> None:
        parts = [part for message in messages for part in self._packer.add(_json_line(self._sonic(message)))]
        self._send_parts(parts + self._packer.flush() if last else parts)

    def flush(self) -> None:
        self._send_parts(self._packer.flush())

    def fail(self, fault: Fault, outcome: str | None = None) -> None:
        self.state.outcome = outcome or f"fault_{fault.kind.value}"
        message = fault.describe()
        if fault.kind is FaultKind.ERROR_EVENT:
            error = {
                "type": "error",
                "context_id": self.request.context_id,
                "status_code": 500,
                "done": True,
                "error": message,
            }
            self.send([error], last=True)
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
        self.handler._model_error(self.state, status, reason)

    def _sonic(self, message: dict[str, Any]) -> dict[str, Any]:
        # The package's chunks also name their rate; the API's do not.
        if message["type"] == "chunk":
            return {**message, "sampling_rate": self.request.sample_rate}
        return message

    def _send_parts(self, parts: list[bytes]) -> None:
        if parts:
            self.state.payload_parts += len(parts)
            self.write(b"".join(encode_event("PayloadPart", part) for part in parts))


_SSE_ERROR_TITLES: Final = {
    FaultKind.ERROR_BEFORE_AUDIO: "Model error",
    FaultKind.ERROR_MID_STREAM: "Model error",
    FaultKind.ERROR_EVENT: "Generation failed",
    FaultKind.INTERNAL_FAILURE: "Internal server error",
}


class _SseFraming(_Framing):
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
        self.handler._api_error(self.state, status, "Internal server error", reason, "internal_error")


def _sse_event(message: Mapping[str, Any]) -> bytes:
    data = json.dumps(message, separators=(",", ":"))
    return f"event: {message['type']}\ndata: {data}\n\n".encode()


# -- the server's request handler


class _Handler(TrackedHandler):
    server_version = "SonicEndpointEmulator/1.0"

    @property
    def emulator(self) -> SonicEmulator:
        return cast(_Server, self.server).emulator

    def setup(self) -> None:
        super().setup()
        # Each flush is a small write; Nagle's algorithm would hold it back for the client's delayed ACK.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

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
            state = _Invocation("sagemaker", time.perf_counter(), endpoint_name=unquote(match.group("name")))
            self._invoke(state, self._serve_sagemaker)
        elif path == "/tts/sse":
            self._invoke(_Invocation("cartesia-api", time.perf_counter()), self._serve_cartesia_api)
        elif path == "/_emulator/faults":
            self._post_faults()
        elif path == "/_emulator/config":
            self._post_config()
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
        elif path == "/_emulator/config":
            self._send_json(200, self.emulator.config())
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

    def _post_config(self) -> None:
        try:
            self.emulator.configure(json.loads(self._read_body() or b"null"))
        except (ValueError, EmulatorConfigError) as exc:
            self._send_json(400, {"message": str(exc)})
            return
        self._send_json(200, self.emulator.config())

    # -- invocations, either transport

    def _invoke(self, state: _Invocation, serve: Callable[[_Invocation, bytes], None]) -> None:
        raw = self._read_body()
        self.emulator._begin()
        try:
            serve(state, raw)
        except _ClientGone:
            state.outcome = "client_disconnected"
            self.close_connection = True
        except _Stopping:
            state.outcome = "emulator_stopped"
            self.close_connection = True
        finally:
            self._complete(state)
            self.emulator._end()

    def _complete(self, state: _Invocation) -> None:
        """Records the invocation once, just before its last byte goes out.

        Recording first means the record exists by the time a client has read the whole response.
        """
        if not state.recorded:
            state.recorded = True
            self.emulator._record(state)

    # -- SageMaker InvokeEndpointWithResponseStream

    def _serve_sagemaker(self, state: _Invocation, raw: bytes) -> None:
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
            request = parse_sonic_request(state.body, accepted_encodings=emulator.accepted_encodings)
        except InvalidSonicRequest as exc:
            self._model_error(state, 422, str(exc))
            return
        state.context_id = request.context_id

        fault = emulator.faults.take()
        state.fault = fault.kind.value if fault else None
        if fault is not None and fault.kind is FaultKind.THROTTLE:
            self._model_error(state, 429, fault.message or "model is at capacity; retry later (emulator)")
            return
        self._generate(_EventStreamFraming(self, state, request), fault)

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

    # -- Cartesia API POST /tts/sse

    def _serve_cartesia_api(self, state: _Invocation, raw: bytes) -> None:
        emulator = self.emulator
        state.cartesia_version = self.headers.get("Cartesia-Version")
        try:
            state.body = json.loads(raw)
            readable = True
        except ValueError:
            state.body, readable = raw.decode("utf-8", errors="replace"), False
        if emulator.api_key is not None and not self._authorized(emulator.api_key):
            message = "the API key is missing or not valid; send it as 'Authorization: Bearer <key>'"
            self._api_error(state, 401, "Invalid API key", message, "unauthorized")
            return
        if not state.cartesia_version:
            message = "the Cartesia-Version header is required"
            self._api_error(state, 400, "Bad request", message, "bad_request")
            return
        if not readable:
            self._api_error(state, 400, "Bad request", "the request body is not valid JSON", "bad_request")
            return
        try:
            request = parse_cartesia_request(state.body, accepted_encodings=emulator.accepted_encodings)
        except InvalidSonicRequest as exc:
            self._api_error(state, 422, "Invalid request", str(exc), "invalid_request")
            return
        state.context_id = request.context_id

        fault = emulator.faults.take()
        state.fault = fault.kind.value if fault else None
        if fault is not None and fault.kind is FaultKind.THROTTLE:
            message = fault.message or "model is at capacity; retry later (emulator)"
            self._api_error(state, 429, "Too many concurrent requests", message, "concurrency_limited")
            return
        self._generate(_SseFraming(self, state, request), fault)

    def _authorized(self, api_key: str) -> bool:
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        presented = token.strip() if scheme.lower() == "bearer" else self.headers.get("X-API-Key", "")
        return hmac.compare_digest(presented.encode("utf-8"), api_key.encode("utf-8"))

    def _api_error(self, state: _Invocation, status: int, title: str, message: str, error_code: str) -> None:
        """The Cartesia API's structured error object; its SDK raises it as the status's exception class."""
        state.http_status, state.outcome = status, f"api_error_{status}"
        self._complete(state)
        self._send_json(
            status,
            {"error_code": error_code, "title": title, "message": message, "request_id": state.request_id},
            {"X-Request-Id": state.request_id},
        )

    # -- the generation loop, shared by both transports

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

    def _generate(self, framing: _Framing, fault: Fault | None) -> None:
        emulator, state, request = self.emulator, framing.state, framing.request
        synthesis = _Synthesis(emulator.engine, request)
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
                "data": base64.b64encode(_encode_audio(piece, request.encoding)).decode("ascii"),
                "step_time": round(chunk_wall * 1000.0, 3),
            }
            state.chunks += 1
            state.audio_seconds += len(piece) / request.sample_rate
            framing.send([chunk, *synthesis.timestamp_messages(state.audio_seconds)])

        done = {"type": "done", "context_id": request.context_id, "status_code": 200, "done": True}
        framing.send([*synthesis.timestamp_messages(math.inf), done], last=True)
        framing.end()

    def _engine_failed(self, framing: _Framing, error: SpeechEngineError) -> None:
        """A broken engine is a model failure: an error answer before audio, a stream failure after."""
        message = f"synthesis failed: {error}"
        if framing.state.first_byte_at is None:
            framing.reject(500, message)
        else:
            failure = Fault(FaultKind.ERROR_MID_STREAM, message=message, error_code="ModelError")
            framing.fail(failure, outcome="engine_error")


# --- The emulator ------------------------------------------------------------------------------------


class SonicEmulator(LocalService):
    """A local Sonic, as a SageMaker runtime endpoint and as the Cartesia API (an emulator, not the model).

    ``endpoint_name`` — when set, other names get SageMaker's ValidationError; None serves every name.
    ``time_to_first_byte_ms`` — delay from request to the first audio chunk (synthesis counts towards it).
    ``realtime_factor`` — seconds of audio produced per wall-clock second after the first chunk.
    ``engine`` — the speech engine; by default piper when installed, else the deterministic stand-in.
    ``api_key`` — when set, ``POST /tts/sse`` answers 401 unless called with this key; None accepts any.
    ``accepted_encodings`` — the raw encodings the model produces; others get a 422 on either transport.
    Both ``api_key`` and ``accepted_encodings`` may be changed while the emulator runs.
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
        api_key: str | None = None,
        accepted_encodings: Iterable[str] = ENCODINGS,
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
        self.api_key = api_key
        self._accepted_encodings = _encodings(accepted_encodings)
        self._faults = FaultQueue()
        self._records: list[InvocationRecord] = []
        self._idle = threading.Condition()
        self._in_flight = 0
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
        server.close_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        logger.info("%s stopped", _LABEL)

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
    def accepted_encodings(self) -> frozenset[str]:
        """The raw encodings the emulated model produces (all four by default)."""
        return self._accepted_encodings

    @accepted_encodings.setter
    def accepted_encodings(self, encodings: Iterable[str]) -> None:
        self._accepted_encodings = _encodings(encodings)

    def config(self) -> dict[str, Any]:
        """The settings ``/_emulator/config`` reads and writes; the API key itself is never shown."""
        return {
            "accepted_encodings": [name for name in ENCODINGS if name in self._accepted_encodings],
            "api_key_required": self.api_key is not None,
        }

    def configure(self, changes: Any) -> None:
        """Apply a ``POST /_emulator/config`` body; a bad one raises :class:`EmulatorConfigError`."""
        if not isinstance(changes, dict):
            raise EmulatorConfigError("the configuration is a JSON object")
        unknown = set(changes) - {"accepted_encodings"}
        if unknown:
            raise EmulatorConfigError(f"unknown configuration fields: {', '.join(sorted(unknown))}")
        if "accepted_encodings" in changes:
            encodings = changes["accepted_encodings"]
            if not isinstance(encodings, list):
                raise EmulatorConfigError("accepted_encodings is a list of encoding names")
            self.accepted_encodings = encodings
            accepted = ", ".join(self.config()["accepted_encodings"])
            logger.info("%s: accepted encodings now %s", _LABEL, accepted)

    def _begin(self) -> None:
        with self._idle:
            self._in_flight += 1

    def _end(self) -> None:
        with self._idle:
            self._in_flight -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no invocation is being served (e.g. a stalled stream its client gave up on); False on timeout."""
        with self._idle:
            return self._idle.wait_for(lambda: self._in_flight == 0, timeout)

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
            transport=state.transport,
            cartesia_version=state.cartesia_version,
        )
        with self._records_lock:
            self._records.append(record)
        ttfb = f"{(record.first_byte_at - record.started) * 1000:.0f}ms" if record.first_byte_at else "-"
        target = "/tts/sse" if record.endpoint_name is None else f"/endpoints/{record.endpoint_name}"
        logger.info(
            "%s: POST %s -> %d %s context_id=%s chunks=%d parts=%d audio=%.2fs ttfb=%s total=%.0fms",
            _LABEL,
            target,
            record.http_status,
            record.outcome,
            state.context_id or "-",
            record.chunks,
            record.payload_parts,
            record.audio_seconds,
            ttfb,
            (record.finished - record.started) * 1000,
        )


def _encodings(names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise EmulatorConfigError("accepted encodings are a collection of names, not one string")
    listed = list(names)
    unknown = sorted({repr(name) for name in listed if not isinstance(name, str) or name not in ENCODINGS})
    if unknown:
        known = ", ".join(ENCODINGS)
        raise EmulatorConfigError(f"unknown encodings {', '.join(unknown)}; the model knows {known}")
    chosen = frozenset(listed)
    if not chosen:
        raise EmulatorConfigError("a model accepts at least one encoding")
    return chosen
