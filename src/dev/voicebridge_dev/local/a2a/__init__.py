"""Amazon Connect's side of an external AI agent voice session (A2A v1.0 + Connect's extension), for the local cloud.

A strict EMULATOR of Connect's A2A client in "talk to the customer" mode with audio streaming: it opens the
WebSocket as Connect does, negotiates the session, sends READY, streams a simulated caller's audio in real time,
plays the agent's audio into a recording at 1× (flushed on the agent's INTERRUPTION), sends DTMF, the silence marker,
interruptions, errors, FRAGMENTs and malformed frames on a script, and checks every frame the agent sends against the
contract (:class:`Rule`). Its beliefs and their sources are docs/protocols.md, *Amazon Connect external AI agents
(A2A voice streaming)*; what the sources leave open is chosen there and is a :class:`ConnectSettings` field here.
It shares no code with the agent server it tests.

Usage::

    settings = ConnectSettings(api_key="local-key", input_rate=16000, output_rate=24000)
    result = asyncio.run(run_session("ws://127.0.0.1:8080/", settings, caller_audio=pcm_8khz,
                                     script=[Dtmf(at_s=6.0, digits="1234#")]))
    result.finish            # Finished(type="ESCALATE", reason="…", task_id="…")
    result.flow_tool         # "Escalate": what $.Lex.SessionAttributes.Tool holds after the hand-back
    stop = result.recording.audio_stopped_after(2.0)   # agent audio stopped at the caller (session seconds)
    result.timeline.of("interruption")

A dropped socket dialled again with the history so far (:mod:`~.redial`, its choices in its docstring)::

    redial = asyncio.run(run_redialled(url, replace(settings, contact_arn=arn, context_id=ctx),
                                       caller_audio=pcm_8khz, drop_at_s=12.0))
    redial.first.outcome, redial.second.finish, redial.history

In strict mode (the default) a fatal violation ends the session as Connect would (an informational ERROR, then
close) and :func:`run_session` raises :class:`ContractViolation` (its ``result`` holds the rest); a wrong key raises
:class:`UpgradeRejected` with the HTTP status.
"""

from voicebridge_dev.local.a2a.audio import CALL_RATE, PlayedBlock, Recording
from voicebridge_dev.local.a2a.checker import AgentFrameChecker
from voicebridge_dev.local.a2a.events import (
    AgentEvent,
    AgentInterrupted,
    AudioChunk,
    Finished,
    InitAccepted,
    InitFailed,
    InitRefused,
    ProbeAnswered,
    RequestFailed,
    TextChunk,
    TraceReceived,
    TurnEnded,
)
from voicebridge_dev.local.a2a.redial import RedialResult, history_from_traces, run_redialled
from voicebridge_dev.local.a2a.rules import (
    ConnectEmulatorError,
    ContractViolation,
    Rule,
    UpgradeRejected,
    Violation,
)
from voicebridge_dev.local.a2a.script import (
    Action,
    Dtmf,
    Fragmented,
    HangUp,
    InformationalError,
    Interrupt,
    Probe,
    ProbeKind,
    SilenceMarker,
)
from voicebridge_dev.local.a2a.session import (
    CallerSource,
    ConnectSettings,
    FixedCaller,
    Outcome,
    SessionResult,
    run_session,
)
from voicebridge_dev.local.a2a.timeline import Timeline, TimelineEvent
from voicebridge_dev.local.a2a.wire import (
    EVENT_TYPE_KEY,
    EXTENSION,
    FINISH_TYPES,
    FRAME_BUDGET_BYTES,
    SAMPLE_RATES,
    AudioConfig,
)

__all__ = [
    "CALL_RATE",
    "EVENT_TYPE_KEY",
    "EXTENSION",
    "FINISH_TYPES",
    "FRAME_BUDGET_BYTES",
    "SAMPLE_RATES",
    "Action",
    "AgentEvent",
    "AgentFrameChecker",
    "AgentInterrupted",
    "AudioChunk",
    "AudioConfig",
    "CallerSource",
    "ConnectEmulatorError",
    "ConnectSettings",
    "ContractViolation",
    "Dtmf",
    "Finished",
    "FixedCaller",
    "Fragmented",
    "HangUp",
    "InformationalError",
    "InitAccepted",
    "InitFailed",
    "InitRefused",
    "Interrupt",
    "Outcome",
    "PlayedBlock",
    "Probe",
    "ProbeAnswered",
    "ProbeKind",
    "Recording",
    "RedialResult",
    "RequestFailed",
    "Rule",
    "SessionResult",
    "SilenceMarker",
    "TextChunk",
    "Timeline",
    "TimelineEvent",
    "TraceReceived",
    "TurnEnded",
    "UpgradeRejected",
    "Violation",
    "history_from_traces",
    "run_redialled",
    "run_session",
]
