"""Connect's external-AI-agent contract on the wire (A2A v1.0, JSON-RPC binding, Connect's extension), sans I/O.

Every fact here is in docs/protocols.md, *Amazon Connect external AI agents (A2A voice streaming)*, with its
source. Connect speaks first and only in JSON-RPC requests (``method: SendMessage``); the agent answers
``INIT_SESSION`` directly (echoing its ``id``) and streams everything else as JSON-RPC results holding exactly one of
``message``, ``statusUpdate`` or ``artifactUpdate``::

    Connect → INIT_SESSION → agent ← INIT_SESSION_RESPONSE (same id)
    Connect → CHANNEL_STATE READY            (the agent may speak from here on)
    Connect → audio/lpcm slices …, DTMF_INPUT_COMPLETE, INTERRUPTION, "<EMPTY_USER_INPUT>", ERROR, FRAGMENT
    agent   → AUDIO_RESPONSE_CHUNK* (one artifactId per response) → TRACING_SPAN → statusUpdate [+ FINISH]
    agent   → INTERRUPTION (the caller talked over the agent: Connect flushes what it buffered)

:class:`Reader` is fed each text frame and returns typed events (or a :class:`Malformed` carrying the JSON-RPC error
to answer); it reassembles ``FRAGMENT``s. The ``*_frame`` functions build what the agent sends, as JSON text.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

EXTENSION = "https://docs.aws.amazon.com/connect/a2a/ext/v1"
EVENT_TYPE = f"{EXTENSION}/eventType"
RATES = (8000, 16000, 24000)
FINISH_TYPES = ("COMPLETE", "ESCALATE", "COMPLETE_WITH_ERROR", "OUT_OF_DOMAIN")
EMPTY_USER_INPUT = "<EMPTY_USER_INPUT>"
FRAME_BUDGET = 16_384
"""The largest text frame the agent sends (bytes of UTF-8 JSON): the project's choice, docs/protocols.md says why."""
MAX_INBOUND_FRAME = 1 << 20
"""Inbound frames above this are refused unread (a fragment's reassembled payload too)."""
MAX_FRAGMENTS = 64
"""Parts a fragmented frame may have, and fragmented frames that may be open at once."""
MAX_TEXT_CHARS = 2000
"""Text a caller's turn may hold (keys, the silence marker: text input is rare in a voice session); longer is
refused."""

# JSON-RPC 2.0 error codes, and A2A's reasons for them.
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
METHODS = ("SendMessage", "message/send", "message/stream")
"""``SendMessage`` is A2A v1.0's name; the v0 names are taken too, as the same request."""
CALLER_ROLES = ("ROLE_USER", "user")
AGENT_ROLES = ("ROLE_AGENT", "agent")
"""A history message's ``role``: A2A v1.0's names (the contract's samples), and v0's as the same."""


@dataclass(frozen=True, slots=True)
class AudioConfig:
    sample_rate: int

    def to_json(self) -> dict[str, Any]:
        return {"encoding": "LINEAR_PCM", "sampleRateHertz": self.sample_rate, "sampleSizeBits": 16, "channelCount": 1}


@dataclass(frozen=True, slots=True)
class InitSession:
    request_id: Any
    context_id: str
    instance_arn: str
    contact_arn: str
    finish_types: tuple[str, ...]
    tracing: bool
    audio_in: AudioConfig | None
    audio_out: AudioConfig | None
    history: tuple[tuple[str, str], ...] = ()
    """Earlier turns as (role, text), oldest first."""

    @property
    def contact_id(self) -> str:
        """The contact's id, the last part of its ARN (``…:instance/<id>/contact/<contact-id>``)."""
        return self.contact_arn.rsplit("/", 1)[-1]


@dataclass(frozen=True, slots=True)
class ChannelState:
    state: str


@dataclass(frozen=True, slots=True)
class AudioIn:
    pcm: bytes


@dataclass(frozen=True, slots=True)
class TextIn:
    text: str

    @property
    def silence(self) -> bool:
        """Connect's marker for a caller who has said nothing for a while."""
        return self.text.strip() == EMPTY_USER_INPUT


@dataclass(frozen=True, slots=True)
class DtmfComplete:
    digits: str
    reason: str


@dataclass(frozen=True, slots=True)
class Interruption:
    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class ConnectError:
    """Connect's informational ERROR: not a turn boundary; a fatal one precedes the socket's close."""

    code: int
    reason: str
    category: str


@dataclass(frozen=True, slots=True)
class Ignored:
    """A well-formed request with nothing for the agent to do (an unknown event type, a part of a fragment)."""

    why: str


@dataclass(frozen=True, slots=True)
class Malformed:
    """A frame the agent cannot dispatch: answered with this JSON-RPC error (``request_id`` None when unknown)."""

    request_id: Any
    code: int
    message: str
    reason: str

    def frame(self) -> str:
        return error_frame(self.request_id, self.code, self.message, self.reason)


Event = InitSession | ChannelState | AudioIn | TextIn | DtmfComplete | Interruption | ConnectError | Ignored | Malformed


@dataclass
class _Pieces:
    total: int
    parts: dict[int, str] = field(default_factory=dict)


class Reader:
    """Inbound frames to events; ``FRAGMENT``s are held by ``fragmentId`` until whole, then read as the frame they
    carry."""

    def __init__(self) -> None:
        self._fragments: dict[str, _Pieces] = {}

    def feed(self, frame: str | bytes) -> Event:
        if isinstance(frame, bytes):
            return Malformed(None, INVALID_REQUEST, "Invalid Request", "BINARY_FRAME")
        if len(frame) > MAX_INBOUND_FRAME:
            return Malformed(None, INVALID_REQUEST, "Invalid Request", "FRAME_TOO_LARGE")
        try:
            request = json.loads(frame)
        except (ValueError, RecursionError):
            # ValueError beyond JSONDecodeError: an integer too long for Python to convert.
            return Malformed(None, PARSE_ERROR, "Parse error", "INVALID_JSON")
        return self._request(request)

    def _request(self, request: Any) -> Event:
        if not isinstance(request, dict):
            return Malformed(None, INVALID_REQUEST, "Invalid Request", "NOT_AN_OBJECT")
        request_id = request.get("id")
        if request.get("jsonrpc") != "2.0" or not isinstance(request_id, str | int) or isinstance(request_id, bool):
            return Malformed(_id_or_none(request_id), INVALID_REQUEST, "Invalid Request", "NOT_JSON_RPC_2")
        if request.get("method") not in METHODS:
            return Malformed(request_id, METHOD_NOT_FOUND, "Method not found", "UNKNOWN_METHOD")
        params = request.get("params")
        message = params.get("message") if isinstance(params, dict) else None
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            return Malformed(request_id, INVALID_PARAMS, "Invalid params", "NO_MESSAGE")
        metadata = message.get("metadata")
        kind = str(metadata.get(EVENT_TYPE) or "") if isinstance(metadata, dict) else ""
        parts = [part for part in message["parts"] if isinstance(part, dict)]
        try:
            return self._event(request_id, kind, message, parts)
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            # OverflowError: JSON's Infinity where an integer belongs. ErrorInfo's reason is a constant
            # (UPPER_SNAKE_CASE, docs/protocols.md): what was wrong goes in the message.
            return Malformed(request_id, INVALID_PARAMS, f"Invalid params: {exc}"[:200], f"BAD_{kind or 'MESSAGE'}")

    def _event(
        self, request_id: Any, kind: str, message: Mapping[str, Any], parts: Sequence[Mapping[str, Any]]
    ) -> Event:
        data = next((part["data"] for part in parts if isinstance(part.get("data"), dict)), None)
        if kind == "INIT_SESSION":
            init = _field(data, "initSession")
            return InitSession(
                request_id=request_id,
                context_id=str(message.get("contextId") or ""),
                instance_arn=str(init.get("instanceArn") or ""),
                contact_arn=_text(init, "contactArn"),
                finish_types=tuple(str(t) for t in _list(init, "supportedFinishTypes")),
                tracing=bool(init.get("subscribeToTracingEvents", False)),
                audio_in=_audio(init.get("audioInputConfiguration")),
                audio_out=_audio(init.get("audioOutputConfiguration")),
                history=tuple(_history(init.get("history") or ())),
            )
        if kind == "CHANNEL_STATE":
            return ChannelState(_text(_field(data, "channelState"), "state"))
        if kind == "DTMF_INPUT_COMPLETE":
            dtmf = _field(data, "dtmfInputComplete")
            return DtmfComplete(str(dtmf.get("inputString") or ""), str(dtmf.get("terminationReason") or ""))
        if kind == "INTERRUPTION":
            interruption = _field(data, "interruption")
            return Interruption(str(interruption.get("type") or "SYSTEM"), str(interruption.get("reason") or ""))
        if kind == "ERROR":
            error = _field(data, "error")
            return ConnectError(
                int(error.get("errorCode") or 0),
                str(error.get("errorReason") or ""),
                str(error.get("errorCategory") or ""),
            )
        if kind == "FRAGMENT":
            return self._fragment(request_id, _field(data, "fragment"))
        # Caller audio is known by its part (raw, audio/lpcm), not by the absence of an eventType: an audio chunk that
        # came to carry one would otherwise be dropped, and the caller heard by no one (docs/protocols.md).
        if kind and not any(isinstance(part.get("raw"), str) for part in parts):
            return Ignored(f"event type {kind}")
        for part in parts:
            if isinstance(part.get("raw"), str):
                pcm = base64.b64decode(part["raw"], validate=True)
                if len(pcm) % 2:
                    raise ValueError("odd-length 16-bit PCM")
                return AudioIn(pcm)
            if isinstance(part.get("text"), str):
                if len(part["text"]) > MAX_TEXT_CHARS:
                    raise ValueError(f"text over {MAX_TEXT_CHARS} characters")
                return TextIn(part["text"])
        return Ignored("a message with no text and no audio")

    def _fragment(self, request_id: Any, fragment: Mapping[str, Any]) -> Event:
        fragment_id, number, total = (
            str(fragment["fragmentId"]),
            int(fragment["partNumber"]),
            int(fragment["totalParts"]),
        )
        payload = fragment["payload"]
        if not (0 < total <= MAX_FRAGMENTS and 0 <= number < total and isinstance(payload, str)):
            raise ValueError("fragment out of bounds")
        pieces = self._fragments.get(fragment_id)
        if pieces is None:
            if len(self._fragments) >= MAX_FRAGMENTS:
                # Fragments that never complete must not grow without bound: the oldest is given up.
                self._fragments.pop(next(iter(self._fragments)))
            pieces = self._fragments[fragment_id] = _Pieces(total)
        if pieces.total != total:
            raise ValueError("fragments disagree on totalParts")
        pieces.parts[number] = payload
        if sum(len(p) for p in pieces.parts.values()) > MAX_INBOUND_FRAME * 4 // 3 + 4:
            del self._fragments[fragment_id]
            return Malformed(request_id, INVALID_REQUEST, "Invalid Request", "FRAGMENTS_TOO_LARGE")
        if len(pieces.parts) < total:
            return Ignored("a fragment of a frame not yet whole")
        del self._fragments[fragment_id]
        try:
            whole = base64.b64decode("".join(pieces.parts[i] for i in range(total)), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return Malformed(request_id, INVALID_PARAMS, "Invalid params", "FRAGMENT_NOT_BASE64_UTF8")
        return self.feed(whole)


def _id_or_none(value: Any) -> Any:
    return value if isinstance(value, str | int) and not isinstance(value, bool) else None


def _field(data: Any, name: str) -> Mapping[str, Any]:
    if not isinstance(data, dict) or not isinstance(data.get(name), dict):
        raise KeyError(f"data.{name}")
    value: Mapping[str, Any] = data[name]
    return value


def _text(mapping: Mapping[str, Any], name: str) -> str:
    value = mapping.get(name)
    if not isinstance(value, str) or not value:
        raise KeyError(name)
    return value


def _list(mapping: Mapping[str, Any], name: str) -> list[Any]:
    value = mapping.get(name) or []
    if not isinstance(value, list):
        raise TypeError(f"{name} is not a list")
    return value


def _audio(config: Any) -> AudioConfig | None:
    if config is None:
        return None
    if not isinstance(config, dict):
        raise TypeError("audio configuration is not an object")
    rate = int(config.get("sampleRateHertz", 0))
    if (
        config.get("encoding") != "LINEAR_PCM"
        or rate not in RATES
        or int(config.get("sampleSizeBits", 16)) != 16
        or int(config.get("channelCount", 1)) != 1
    ):
        raise ValueError(f"unsupported audio configuration {config}")
    return AudioConfig(rate)


def _history(messages: Sequence[Any]) -> list[tuple[str, str]]:
    turns = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        text = " ".join(str(p["text"]) for p in message.get("parts") or () if isinstance(p, dict) and "text" in p)
        turns.append((str(message.get("role") or ""), text))
    return turns


# -- what the agent sends


def _result(result: Mapping[str, Any], request_id: Any = None) -> str:
    frame = {"jsonrpc": "2.0", "id": request_id if request_id is not None else uuid.uuid4().hex[:12], "result": result}
    return json.dumps(frame, separators=(",", ":"))


def _agent_message(context_id: str, kind: str, data: Mapping[str, Any], *, extension: bool = True) -> dict[str, Any]:
    message: dict[str, Any] = {"messageId": str(uuid.uuid4()), "contextId": context_id, "role": "ROLE_AGENT"}
    if extension:
        message["extensions"] = [EXTENSION]
    message["parts"] = [{"mediaType": "application/json", "data": dict(data)}]
    message["metadata"] = {EVENT_TYPE: kind}
    return message


def init_response_frame(init: InitSession, audio_in: AudioConfig | None, audio_out: AudioConfig | None) -> str:
    """The direct answer to ``INIT_SESSION``: accepted, with each audio configuration the agent counter-proposes
    declared in full; one equal to Connect's proposal is left out, which accepts it (docs/protocols.md, *The
    session*)."""
    response: dict[str, Any] = {"statusCode": "200"}
    if audio_in is not None and audio_in != init.audio_in:
        response["audioInputConfiguration"] = audio_in.to_json()
    if audio_out is not None and audio_out != init.audio_out:
        response["audioOutputConfiguration"] = audio_out.to_json()
    message = _agent_message(init.context_id, "INIT_SESSION_RESPONSE", {"initSessionResponse": response})
    return _result({"message": message}, init.request_id)


def audio_chunk_frame(context_id: str, task_id: str, artifact_id: str, pcm: bytes, *, append: bool, last: bool) -> str:
    artifact = {
        "artifactId": artifact_id,
        "parts": [{"raw": base64.b64encode(pcm).decode("ascii"), "mediaType": "audio/lpcm"}],
        "metadata": {EVENT_TYPE: "AUDIO_RESPONSE_CHUNK"},
    }
    update = {"taskId": task_id, "contextId": context_id, "artifact": artifact, "append": append, "lastChunk": last}
    return _result({"artifactUpdate": update})


def interruption_frame(context_id: str, kind: str = "USER_AUDIO_INPUT", reason: str = "user_speech") -> str:
    return _result(
        {"message": _agent_message(context_id, "INTERRUPTION", {"interruption": {"type": kind, "reason": reason}})}
    )


def tracing_frame(context_id: str, task_id: str, otlp: Mapping[str, Any]) -> str:
    artifact = {
        "artifactId": str(uuid.uuid4()),
        "parts": [{"mediaType": "application/json", "data": {"tracingSpan": {"otlp": dict(otlp)}}}],
        "metadata": {EVENT_TYPE: "TRACING_SPAN"},
    }
    update = {"taskId": task_id, "contextId": context_id, "artifact": artifact, "append": False, "lastChunk": True}
    return _result({"artifactUpdate": update})


def status_frame(
    context_id: str,
    task_id: str,
    *,
    finish: tuple[str, str] | None = None,
    error: tuple[int, str, str] | None = None,
    now: datetime | None = None,
) -> str:
    """The turn's terminal status: completed (with FINISH ``(type, reason)`` when the agent's part is over), or failed
    with ``error`` ``(code, reason, category)``."""
    status: dict[str, Any] = {
        "state": "TASK_STATE_FAILED" if error else "TASK_STATE_COMPLETED",
        "timestamp": (now or datetime.now(UTC)).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    if error is not None:
        code, reason, category = error
        body = {"error": {"errorCode": code, "errorReason": reason, "errorCategory": category}}
        status["message"] = _agent_message(context_id, "ERROR", body, extension=False)
    elif finish is not None:
        finished = {"finish": {"type": finish[0], "reason": finish[1]}}
        status["message"] = _agent_message(context_id, "FINISH", finished, extension=False)
    return _result({"statusUpdate": {"taskId": task_id, "contextId": context_id, "status": status}})


def error_frame(request_id: Any, code: int, message: str, reason: str) -> str:
    """A JSON-RPC error; its data is A2A's ``google.rpc.ErrorInfo``."""
    info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "a2a-protocol.org"}
    frame = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message, "data": [info]}}
    return json.dumps(frame, separators=(",", ":"))


def audio_chunk_bytes(sample_rate: int, *, frame_budget: int = FRAME_BUDGET) -> int:
    """The most PCM one chunk may carry (a whole number of samples) so that its frame stays under the budget: base64
    grows it by a third, and the envelope takes the rest."""
    envelope = len(audio_chunk_frame("c" * 64, "t" * 36, "a" * 36, b"", append=True, last=False)) + 64
    room = (frame_budget - envelope) * 3 // 4
    return max(2, room - room % 2)


def fitted(frame: str, *, frame_budget: int = FRAME_BUDGET) -> list[str]:
    """``frame`` as it may go on the socket: itself when under the budget, else ``FRAGMENT`` events, each under it,
    carrying the frame's JSON-RPC ``id`` (never used for audio: a chunk is sized to fit)."""
    data = frame.encode("utf-8")
    if len(data) <= frame_budget:
        return [frame]
    payload = base64.b64encode(data).decode("ascii")
    request_id = json.loads(frame).get("id")
    fragment_id = str(uuid.uuid4())
    piece = frame_budget - 1024
    pieces = [payload[i : i + piece] for i in range(0, len(payload), piece)]
    out = []
    for number, chunk in enumerate(pieces):
        body = {
            "fragment": {
                "fragmentId": fragment_id,
                "partNumber": number,
                "totalParts": len(pieces),
                "payload": chunk,
                "encoding": "base64",
            }
        }
        message = {
            "messageId": str(uuid.uuid4()),
            "role": "ROLE_AGENT",
            "extensions": [EXTENSION],
            "parts": [{"mediaType": "application/json", "data": body}],
            "metadata": {EVENT_TYPE: "FRAGMENT"},
        }
        out.append(
            json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"message": message}}, separators=(",", ":"))
        )
    return out
