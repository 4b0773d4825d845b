"""What Connect puts on the wire: the constants of the contract and the requests Connect sends (sans-I/O).

Every shape here is docs/protocols.md, *Amazon Connect external AI agents (A2A voice streaming)*: JSON-RPC 2.0
requests, ``method: "SendMessage"``, ``params.message`` with ``role: "ROLE_USER"``, the event type in metadata under
``<EXT>/eventType`` (empty metadata for turn input), audio as one base64 ``raw`` part of ``audio/lpcm``.
"""

from __future__ import annotations

import base64
import itertools
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

EXTENSION = "https://docs.aws.amazon.com/connect/a2a/ext/v1"
EVENT_TYPE_KEY = f"{EXTENSION}/eventType"
METHOD = "SendMessage"

SAMPLE_RATES = (8000, 16000, 24000)
FINISH_TYPES = ("COMPLETE", "COMPLETE_WITH_ERROR", "ESCALATE")
FRAME_BUDGET_BYTES = 16_384
"""The project's frame budget (no figure is published; half AgentCore's 32 KB WebSocket frame limit)."""

UNSUPPORTED_TASK_STATES = frozenset(
    {
        "TASK_STATE_UNSPECIFIED",
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_AUTH_REQUIRED",
    }
)
TERMINAL_TASK_STATES = frozenset({"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"})
EMPTY_USER_INPUT = "<EMPTY_USER_INPUT>"

InterruptionType = Literal["USER_AUDIO_INPUT", "DTMF_INPUT", "SYSTEM"]
DtmfTermination = Literal["END_CHARACTER", "TIMEOUT", "MAX_LENGTH"]


@dataclass(frozen=True, slots=True)
class AudioConfig:
    """One direction's audio: LINEAR_PCM, 16-bit, mono, at 8, 16 or 24 kHz."""

    sample_rate: int

    def to_wire(self) -> dict[str, Any]:
        return {"encoding": "LINEAR_PCM", "sampleRateHertz": self.sample_rate, "sampleSizeBits": 16, "channelCount": 1}


def audio_config_from_wire(value: object) -> AudioConfig | None:
    """The configuration if ``value`` is a full, valid re-declaration; ``None`` if it is not."""
    if not isinstance(value, dict) or set(value) != {"encoding", "sampleRateHertz", "sampleSizeBits", "channelCount"}:
        return None
    rate = value["sampleRateHertz"]
    valid = (
        value["encoding"] == "LINEAR_PCM"
        and value["sampleSizeBits"] == 16
        and value["channelCount"] == 1
        and type(rate) is int
        and rate in SAMPLE_RATES
    )
    return AudioConfig(rate) if valid else None


@dataclass
class ConnectFrames:
    """Builds Connect's requests for one session: fresh ids, the session's ``contextId``."""

    context_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next_id(self) -> str:
        return f"c-{next(self._ids)}"

    def _request(
        self, parts: list[dict[str, Any]], event_type: str | None, *, extensions: bool = False
    ) -> dict[str, Any]:
        request_id = self.next_id()
        message: dict[str, Any] = {
            "messageId": f"m-{request_id}",
            "contextId": self.context_id,
            "role": "ROLE_USER",
            "parts": parts,
            "metadata": {EVENT_TYPE_KEY: event_type} if event_type else {},
        }
        if extensions:
            message["extensions"] = [EXTENSION]
        return {"jsonrpc": "2.0", "method": METHOD, "id": request_id, "params": {"message": message}}

    def event(self, data: dict[str, Any], event_type: str, *, extensions: bool = False) -> dict[str, Any]:
        """A request carrying one JSON data part and an eventType."""
        return self._request([{"data": data, "mediaType": "application/json"}], event_type, extensions=extensions)

    def init_session(
        self,
        *,
        instance_arn: str,
        contact_arn: str,
        finish_types: tuple[str, ...],
        subscribe_traces: bool,
        audio_input: AudioConfig,
        audio_output: AudioConfig,
        history: list[dict[str, Any]],
    ) -> dict[str, Any]:
        body = {
            "instanceArn": instance_arn,
            "contactArn": contact_arn,
            "supportedFinishTypes": list(finish_types),
            "subscribeToTracingEvents": subscribe_traces,
            "audioInputConfiguration": audio_input.to_wire(),
            "audioOutputConfiguration": audio_output.to_wire(),
            "history": history,
        }
        return self.event({"initSession": body}, "INIT_SESSION")

    def channel_ready(self) -> dict[str, Any]:
        return self.event({"channelState": {"state": "READY"}}, "CHANNEL_STATE")

    def audio(self, pcm: bytes) -> dict[str, Any]:
        return self._request([{"raw": base64.b64encode(pcm).decode("ascii"), "mediaType": "audio/lpcm"}], None)

    def text(self, text: str) -> dict[str, Any]:
        return self._request([{"text": text, "mediaType": "text/plain"}], None)

    def interruption(self, kind: InterruptionType, reason: str) -> dict[str, Any]:
        return self.event({"interruption": {"type": kind, "reason": reason}}, "INTERRUPTION")

    def dtmf_complete(self, digits: str, termination: DtmfTermination) -> dict[str, Any]:
        return self.event(
            {"dtmfInputComplete": {"inputString": digits, "terminationReason": termination}}, "DTMF_INPUT_COMPLETE"
        )

    def error(self, code: int, reason: str, category: str) -> dict[str, Any]:
        body = {"error": {"errorCode": code, "errorReason": reason, "errorCategory": category}}
        return self.event(body, "ERROR", extensions=True)

    def fragments(self, frame: dict[str, Any], piece_chars: int) -> list[dict[str, Any]]:
        """``frame`` split into FRAGMENT requests of ``piece_chars`` base64 characters each, as A.9 shows them."""
        encoded = base64.b64encode(json.dumps(frame).encode()).decode("ascii")
        pieces = [encoded[i : i + piece_chars] for i in range(0, len(encoded), piece_chars)]
        fragment_id = f"f-{uuid.uuid4().hex[:12]}"
        frames = []
        for number, payload in enumerate(pieces):
            body = {
                "fragmentId": fragment_id,
                "partNumber": number,
                "totalParts": len(pieces),
                "payload": payload,
                "encoding": "base64",
            }
            piece = self.event({"fragment": body}, "FRAGMENT")
            # As A.9's Connect-to-agent sample: the original id, role ROLE_AGENT and no contextId.
            piece["id"] = frame["id"]
            message = piece["params"]["message"]
            message["role"] = "ROLE_AGENT"
            del message["contextId"]
            frames.append(piece)
        return frames
