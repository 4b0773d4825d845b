"""What the emulator makes of the agent's frames: typed events, produced by :class:`~.checker.AgentFrameChecker`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voicebridge_dev.local.a2a.rules import Violation
from voicebridge_dev.local.a2a.wire import AudioConfig


@dataclass(frozen=True, slots=True)
class InitAccepted:
    """INIT_SESSION_RESPONSE with ``statusCode "200"``: the audio configurations now fixed for the session."""

    audio_input: AudioConfig
    audio_output: AudioConfig


@dataclass(frozen=True, slots=True)
class InitRefused:
    """INIT_SESSION_RESPONSE with a status other than ``"200"`` (undocumented: the handoff fails)."""

    status_code: str


@dataclass(frozen=True, slots=True)
class InitFailed:
    """A JSON-RPC error in reply to INIT_SESSION."""

    code: int
    message: str


@dataclass(frozen=True, slots=True)
class AudioChunk:
    """One AUDIO_RESPONSE_CHUNK; ``playable`` is false for audio of an artifact already interrupted."""

    task_id: str
    artifact_id: str
    pcm: bytes
    first: bool
    last: bool
    playable: bool


@dataclass(frozen=True, slots=True)
class TextChunk:
    task_id: str
    artifact_id: str
    text: str
    last: bool


@dataclass(frozen=True, slots=True)
class AgentInterrupted:
    """The agent's INTERRUPTION: Connect flushes the audio it holds for playback."""

    kind: str
    reason: str


@dataclass(frozen=True, slots=True)
class TraceReceived:
    """The turn's TRACING_SPAN; ``otlp`` is the payload as sent (read only when ``problems`` is empty)."""

    task_id: str
    otlp: Any
    problems: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """A terminal statusUpdate; ``error`` is the FAILED turn's ``{errorCode, errorReason, errorCategory}``."""

    task_id: str
    state: str
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Finished:
    """FINISH: the agent's participation is over; ``task_id`` is ``None`` when it came as a standalone message."""

    type: str
    reason: str
    task_id: str | None


@dataclass(frozen=True, slots=True)
class ProbeAnswered:
    """The JSON-RPC error a robustness probe drew."""

    probe: str
    request_id: str | None
    code: int


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A JSON-RPC error in reply to one of Connect's genuine requests: Connect treats it as a failure."""

    request_id: str
    code: int
    message: str


AgentEvent = (
    InitAccepted
    | InitRefused
    | InitFailed
    | AudioChunk
    | TextChunk
    | AgentInterrupted
    | TraceReceived
    | TurnEnded
    | Finished
    | ProbeAnswered
    | RequestFailed
    | Violation
)
