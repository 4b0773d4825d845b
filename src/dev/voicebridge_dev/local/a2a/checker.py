"""Connect's reading of the agent's frames, with every rule checked (sans-I/O).

:class:`AgentFrameChecker` is fed each WebSocket message the agent sends, as received (``str`` for a text frame,
``bytes`` for a binary one), and yields :mod:`~.events`; a broken rule is yielded as a
:class:`~.rules.Violation` beside whatever the frame still meant. The session tells it what Connect did in
between (``ready_sent``, ``connect_interrupted``, ``request_sent``, ``probe_sent``). The rules and their sources
are docs/protocols.md, *Amazon Connect external AI agents (A2A voice streaming)*; the choices where the sources are
silent are that section's table.

Order of the agent's side, as checked: INIT_SESSION_RESPONSE (a direct reply echoing INIT_SESSION's id), nothing
until READY, then per turn ``artifactUpdate``\\* (audio, one artifact at a time, ``append`` false then true, the last
with ``lastChunk``), at most one TRACING_SPAN, one terminal ``statusUpdate`` for the turn's task, and after FINISH
nothing at all.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from voicebridge_dev.local.a2a import events
from voicebridge_dev.local.a2a.otlp import trace_problems
from voicebridge_dev.local.a2a.rules import Rule, Violation
from voicebridge_dev.local.a2a.wire import (
    EVENT_TYPE_KEY,
    FRAME_BUDGET_BYTES,
    TERMINAL_TASK_STATES,
    UNSUPPORTED_TASK_STATES,
    AudioConfig,
    audio_config_from_wire,
)

_Violate = Callable[[Rule, str], None]
"""Records one broken rule at the frame's time."""

RESULT_KINDS = ("message", "task", "statusUpdate", "artifactUpdate")
INTERRUPTION_TYPES = frozenset({"USER_AUDIO_INPUT", "DTMF_INPUT", "SYSTEM"})
MAX_FRAGMENT_PARTS = 256
MAX_FRAGMENT_CHARS = 4 * 1024 * 1024
"""Bounds on one reassembly, so a runaway agent cannot make the emulator hold unbounded memory."""


class Phase(Enum):
    AWAITING_INIT = auto()
    AWAITING_READY = auto()
    READY = auto()
    FINISHED = auto()
    FAILED = auto()


class ArtifactState(Enum):
    OPEN = auto()
    COMPLETE = auto()
    INTERRUPTED_BY_AGENT = auto()
    INTERRUPTED_BY_CONNECT = auto()


@dataclass
class _Artifact:
    kind: str
    task_id: str
    state: ArtifactState = ArtifactState.OPEN


@dataclass
class _Task:
    chunks: int = 0
    traces: int = 0
    terminal: bool = False


@dataclass(frozen=True)
class _Update:
    """One artifactUpdate's chunk, its shape checked: what the checks of an audio, text or trace chunk read."""

    task_id: str
    task: _Task
    artifact_id: str
    parts: object
    append: bool
    last: bool


@dataclass
class _Fragments:
    total: int
    parts: dict[int, str] = field(default_factory=dict)


class AgentFrameChecker:
    def __init__(
        self,
        *,
        context_id: str,
        init_request_id: str,
        proposed_input: AudioConfig,
        proposed_output: AudioConfig,
        finish_types: tuple[str, ...],
        subscribe_traces: bool,
        frame_budget: int = FRAME_BUDGET_BYTES,
    ) -> None:
        self.context_id = context_id
        self.init_request_id = init_request_id
        self.proposed_input = proposed_input
        self.proposed_output = proposed_output
        self.finish_types = finish_types
        self.subscribe_traces = subscribe_traces
        self.frame_budget = frame_budget
        self.phase = Phase.AWAITING_INIT
        self._requests: set[str] = {init_request_id}
        self._probes: dict[str, tuple[str, bool]] = {}
        self._unparsed_probes: deque[tuple[str, bool]] = deque()
        self._answered_probes: set[str] = set()
        self._artifacts: dict[str, _Artifact] = {}
        self._open: dict[str, str] = {}  # kind → the artifact of that kind being streamed
        self._tasks: dict[str, _Task] = {}
        self._fragments: dict[str, _Fragments] = {}
        self._warned_text = False

    # What Connect did, told by the session.

    def request_sent(self, request_id: str) -> None:
        self._requests.add(request_id)

    def probe_sent(self, probe: str, request_id: str | None, *, answer_required: bool) -> None:
        """A deliberately bad frame; ``request_id`` is ``None`` when the frame has no id the agent could read."""
        if request_id is None:
            self._unparsed_probes.append((probe, answer_required))
        else:
            self._probes[request_id] = (probe, answer_required)

    def ready_sent(self) -> None:
        if self.phase is Phase.AWAITING_READY:
            self.phase = Phase.READY

    def connect_interrupted(self) -> None:
        """Connect sent an INTERRUPTION: what the agent was streaming is no longer played."""
        for artifact_id in self._open.values():
            self._artifacts[artifact_id].state = ArtifactState.INTERRUPTED_BY_CONNECT
        self._open.clear()

    @property
    def output_in_flight(self) -> bool:
        return bool(self._open)

    def close(self, now: float) -> list[events.AgentEvent]:
        """The checks that can only be made once the session is over."""
        out: list[events.AgentEvent] = []
        for fragment_id, buffer in self._fragments.items():
            detail = f"fragment {fragment_id!r} ended with {len(buffer.parts)} of {buffer.total} parts"
            out.append(Violation(Rule.FRAGMENT_INVALID, detail, now))
        self._fragments.clear()
        pending = [p for r, p in self._probes.items() if r not in self._answered_probes] + list(self._unparsed_probes)
        for probe, required in pending:
            if not required:
                continue
            out.append(Violation(Rule.PROBE_UNANSWERED, f"no JSON-RPC error answered the {probe} probe", now))
        self._probes.clear()
        self._unparsed_probes.clear()
        return out

    # The agent's frames.

    def feed(self, frame: str | bytes, now: float) -> list[events.AgentEvent]:
        out: list[events.AgentEvent] = []
        self._feed(frame, now, out, reassembled=False)
        return out

    def _feed(self, frame: str | bytes, now: float, out: list[events.AgentEvent], *, reassembled: bool) -> None:
        def violate(rule: Rule, detail: str) -> None:
            out.append(Violation(rule, detail, now))

        if self.phase in (Phase.FINISHED, Phase.FAILED):
            if self.phase is Phase.FINISHED:
                violate(Rule.SENT_AFTER_FINISH, f"a frame after FINISH: {_excerpt(frame)}")
            return
        if isinstance(frame, bytes):
            violate(Rule.BINARY_FRAME, f"a binary frame of {len(frame)} bytes (the contract has JSON text frames only)")
            return
        size = len(frame.encode())
        if not reassembled and size > self.frame_budget:
            violate(Rule.FRAME_OVER_BUDGET, f"a {size}-byte frame, over the {self.frame_budget}-byte budget")
        try:
            obj = json.loads(frame)
        except (ValueError, RecursionError):
            violate(Rule.MALFORMED_FRAME, f"not JSON: {_excerpt(frame)}")
            return
        if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
            violate(Rule.MALFORMED_FRAME, f"not a JSON-RPC 2.0 object: {_excerpt(frame)}")
            return
        if "method" in obj:
            violate(Rule.UNEXPECTED_REQUEST, f"the agent sent a request ({obj.get('method')!r}); Connect serves none")
            return
        if ("result" in obj) == ("error" in obj):
            violate(Rule.MALFORMED_FRAME, "a JSON-RPC response holds exactly one of result and error")
            return
        if "error" in obj:
            self._error(obj, violate, out)
            return
        if self.phase is Phase.AWAITING_INIT:
            self._init_response(obj, violate, out)
            return
        if self.phase is Phase.AWAITING_READY:
            violate(Rule.OUTPUT_BEFORE_READY, f"sent before CHANNEL_STATE READY: {_excerpt(frame)}")
            return
        result = obj["result"]
        kinds = [k for k in RESULT_KINDS if isinstance(result, dict) and k in result]
        if not isinstance(result, dict) or len(kinds) != 1 or len(result) != 1:
            found = sorted(result) if isinstance(result, dict) else type(result).__name__
            violate(Rule.RESULT_SHAPE, f"result holds {found}, not exactly one of {', '.join(RESULT_KINDS)}")
            return
        body = result[kinds[0]]
        if not isinstance(body, dict):
            violate(Rule.RESULT_SHAPE, f"result.{kinds[0]} is not an object")
            return
        if kinds[0] == "message":
            self._message(body, now, violate, out, reassembled=reassembled)
        elif kinds[0] == "artifactUpdate":
            self._artifact_update(body, violate, out, reassembled=reassembled)
        elif kinds[0] == "statusUpdate":
            self._status_update(body, violate, out)
        else:
            violate(Rule.UNEXPECTED_RESULT_KIND, "a task result; the contract's events never use one")

    def _error(self, obj: dict[str, Any], violate: _Violate, out: list[events.AgentEvent]) -> None:
        error, request_id = obj["error"], obj.get("id")
        if (
            not isinstance(error, dict)
            or type(error.get("code")) is not int
            or not isinstance(error.get("message"), str)
        ):
            violate(Rule.MALFORMED_FRAME, "a JSON-RPC error needs an integer code and a message")
            return
        code, message = error["code"], error["message"]
        if self.phase is Phase.AWAITING_INIT and request_id == self.init_request_id:
            self.phase = Phase.FAILED
            out.append(events.InitFailed(code, message))
        elif isinstance(request_id, str) and request_id in self._probes:
            self._answered_probes.add(request_id)
            out.append(events.ProbeAnswered(self._probes[request_id][0], request_id, code))
        elif request_id is None and self._unparsed_probes:
            out.append(events.ProbeAnswered(self._unparsed_probes.popleft()[0], None, code))
        elif isinstance(request_id, str) and request_id in self._requests:
            violate(Rule.JSONRPC_ERROR, f"JSON-RPC error {code} ({message}) for request {request_id!r}")
            out.append(events.RequestFailed(request_id, code, message))
        else:
            violate(Rule.REPLY_ID_MISMATCH, f"a JSON-RPC error for id {request_id!r}, which Connect never sent")

    def _init_response(self, obj: dict[str, Any], violate: _Violate, out: list[events.AgentEvent]) -> None:
        if obj.get("id") != self.init_request_id:
            violate(
                Rule.REPLY_ID_MISMATCH,
                f"the reply to INIT_SESSION has id {obj.get('id')!r}, not {self.init_request_id!r}",
            )
            return
        result = obj["result"]
        message = result.get("message") if isinstance(result, dict) and len(result) == 1 else None
        if not isinstance(message, dict):
            violate(Rule.INIT_RESPONSE_INVALID, "the reply to INIT_SESSION is not a result holding one message")
            return
        self._check_message_header(message, violate)
        if _event_type(message) != "INIT_SESSION_RESPONSE":
            violate(Rule.EVENT_TYPE, f"the reply to INIT_SESSION has eventType {_event_type(message)!r}")
        data = _single_data(message)
        response = data.get("initSessionResponse") if data else None
        if not isinstance(response, dict) or not isinstance(response.get("statusCode"), str):
            violate(Rule.INIT_RESPONSE_INVALID, "no initSessionResponse with a string statusCode")
            return
        if response["statusCode"] != "200":
            self.phase = Phase.FAILED
            out.append(events.InitRefused(response["statusCode"]))
            return
        configs = []
        for key, proposed in (
            ("audioInputConfiguration", self.proposed_input),
            ("audioOutputConfiguration", self.proposed_output),
        ):
            if key not in response:
                configs.append(proposed)
                continue
            config = audio_config_from_wire(response[key])
            if config is None:
                violate(
                    Rule.COUNTER_PROPOSAL_INVALID,
                    f"{key} {response[key]!r} is not a full LINEAR_PCM 16-bit mono 8/16/24 kHz re-declaration",
                )
                return
            configs.append(config)
        self.phase = Phase.AWAITING_READY
        out.append(events.InitAccepted(configs[0], configs[1]))

    def _check_message_header(self, message: dict[str, Any], violate: _Violate) -> None:
        if message.get("role") != "ROLE_AGENT":
            violate(Rule.WRONG_ROLE, f"a message from the agent with role {message.get('role')!r}")
        if "contextId" in message and message["contextId"] != self.context_id:
            violate(Rule.CONTEXT_MISMATCH, f"contextId {message['contextId']!r}, not the session's {self.context_id!r}")

    def _message(
        self, message: dict[str, Any], now: float, violate: _Violate, out: list[events.AgentEvent], *, reassembled: bool
    ) -> None:
        self._check_message_header(message, violate)
        event_type = _event_type(message)
        data = _single_data(message)
        if event_type == "FRAGMENT":
            self._fragment(data, message, now, violate, out, reassembled=reassembled)
        elif event_type == "INTERRUPTION" and data and isinstance(data.get("interruption"), dict):
            body = data["interruption"]
            if body.get("type") not in INTERRUPTION_TYPES or not isinstance(body.get("reason", ""), str):
                violate(Rule.EVENT_TYPE, f"an INTERRUPTION of type {body.get('type')!r}")
                return
            for artifact_id in self._open.values():
                self._artifacts[artifact_id].state = ArtifactState.INTERRUPTED_BY_AGENT
            self._open.clear()
            out.append(events.AgentInterrupted(body["type"], body.get("reason", "")))
        elif event_type == "FINISH" and data and "finish" in data:
            self._finish(data["finish"], None, violate, out)
        else:
            keys = sorted(data) if data else "no single data part"
            violate(Rule.EVENT_TYPE, f"a message with eventType {event_type!r} and {keys}")

    def _fragment(
        self,
        data: dict[str, Any] | None,
        message: dict[str, Any],
        now: float,
        violate: _Violate,
        out: list[events.AgentEvent],
        *,
        reassembled: bool,
    ) -> None:
        body = data.get("fragment") if data else None
        if reassembled or not isinstance(body, dict) or len(message.get("parts", [])) != 1:
            violate(Rule.FRAGMENT_INVALID, "a FRAGMENT carries exactly one data part, a fragment, and is not nested")
            return
        fragment_id, number, total = body.get("fragmentId"), body.get("partNumber"), body.get("totalParts")
        payload = body.get("payload")
        valid = (
            isinstance(fragment_id, str)
            and type(number) is int
            and type(total) is int
            and 0 <= number < total <= MAX_FRAGMENT_PARTS
            and isinstance(payload, str)
            and body.get("encoding") == "base64"
        )
        if not valid:
            violate(Rule.FRAGMENT_INVALID, f"fragment fields {_excerpt(json.dumps(body))}")
            return
        assert isinstance(fragment_id, str) and type(number) is int and type(total) is int and isinstance(payload, str)
        buffer = self._fragments.setdefault(fragment_id, _Fragments(total))
        if buffer.total != total or number in buffer.parts:
            violate(Rule.FRAGMENT_INVALID, f"fragment {fragment_id!r} part {number} repeats or changes totalParts")
            return
        buffer.parts[number] = payload
        if sum(len(p) for p in buffer.parts.values()) > MAX_FRAGMENT_CHARS:
            del self._fragments[fragment_id]
            violate(Rule.FRAGMENT_INVALID, f"fragment {fragment_id!r} exceeds {MAX_FRAGMENT_CHARS} characters")
            return
        if len(buffer.parts) < total:
            return
        del self._fragments[fragment_id]
        try:
            inner = base64.b64decode("".join(buffer.parts[i] for i in range(total)), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            violate(Rule.FRAGMENT_INVALID, f"fragment {fragment_id!r} does not decode to UTF-8 JSON text")
            return
        self._feed(inner, now, out, reassembled=True)

    def _task_id(self, frame: str, update: dict[str, Any], violate: _Violate) -> str | None:
        """The task an update (``frame``: ``artifactUpdate`` or ``statusUpdate``) is of; None, the update refused,
        without one. An update naming another context than the session's is a violation, and is read all the same."""
        task_id = update.get("taskId")
        if not isinstance(task_id, str) or not task_id:
            violate(Rule.MISSING_TASK_ID, f"{frame} without a taskId")
            return None
        if update.get("contextId") != self.context_id:
            violate(Rule.CONTEXT_MISMATCH, f"{frame} contextId {update.get('contextId')!r}, not {self.context_id!r}")
        return task_id

    def _artifact_update(
        self, update: dict[str, Any], violate: _Violate, out: list[events.AgentEvent], *, reassembled: bool
    ) -> None:
        task_id, artifact = self._task_id("artifactUpdate", update, violate), update.get("artifact")
        if task_id is None:
            return
        append, last = update.get("append", False), update.get("lastChunk", False)
        artifact_id = artifact.get("artifactId") if isinstance(artifact, dict) else None
        if not isinstance(artifact_id, str) or type(append) is not bool or type(last) is not bool:
            violate(
                Rule.RESULT_SHAPE, "an artifactUpdate needs an artifact with an artifactId and boolean append/lastChunk"
            )
            return
        assert isinstance(artifact, dict)
        parts = artifact.get("parts")
        event_type = _event_type(artifact)
        task = self._tasks.setdefault(task_id, _Task())
        chunk = _Update(task_id, task, artifact_id, parts, append, last)
        if event_type == "TRACING_SPAN":
            self._trace(chunk, violate, out)
            return
        if event_type not in ("AUDIO_RESPONSE_CHUNK", "TEXT_RESPONSE_CHUNK"):
            violate(Rule.EVENT_TYPE, f"an artifactUpdate with eventType {event_type!r}")
            return
        if task.terminal:
            violate(Rule.EVENT_AFTER_TERMINAL, f"a chunk of artifact {artifact_id!r} after task {task_id!r} ended")
            return
        if event_type == "AUDIO_RESPONSE_CHUNK":
            self._audio(chunk, violate, out, reassembled=reassembled)
        else:
            self._text(chunk, violate, out)

    def _audio(self, chunk: _Update, violate: _Violate, out: list[events.AgentEvent], *, reassembled: bool) -> None:
        task_id, task, artifact_id, parts = chunk.task_id, chunk.task, chunk.artifact_id, chunk.parts
        if reassembled:
            violate(
                Rule.FRAGMENTED_AUDIO, f"audio of artifact {artifact_id!r} came in FRAGMENTs; audio is never fragmented"
            )
            return
        part = parts[0] if isinstance(parts, list) and len(parts) == 1 else None
        if not isinstance(part, dict) or not isinstance(part.get("raw"), str) or part.get("mediaType") != "audio/lpcm":
            violate(Rule.AUDIO_PART_INVALID, f"artifact {artifact_id!r}: an audio chunk holds one raw audio/lpcm part")
            return
        try:
            pcm = base64.b64decode(part["raw"], validate=True)
        except binascii.Error:
            violate(Rule.AUDIO_NOT_BASE64, f"artifact {artifact_id!r}: raw is not base64")
            return
        if len(pcm) % 2:
            violate(Rule.AUDIO_ODD_LENGTH, f"artifact {artifact_id!r}: {len(pcm)} bytes is not whole 16-bit samples")
            return
        playable = self._advance("audio", chunk, violate)
        task.chunks += 1
        out.append(
            events.AudioChunk(task_id, artifact_id, pcm, first=not chunk.append, last=chunk.last, playable=playable)
        )

    def _text(self, chunk: _Update, violate: _Violate, out: list[events.AgentEvent]) -> None:
        task_id, task, artifact_id, parts = chunk.task_id, chunk.task, chunk.artifact_id, chunk.parts
        if not self._warned_text:
            self._warned_text = True
            violate(
                Rule.TEXT_IN_AUDIO_SESSION, "TEXT_RESPONSE_CHUNK in an audio session: Connect plays only audio here"
            )
        part = parts[0] if isinstance(parts, list) and len(parts) == 1 else None
        if not isinstance(part, dict) or not isinstance(part.get("text"), str):
            violate(Rule.EVENT_TYPE, f"artifact {artifact_id!r}: a TEXT_RESPONSE_CHUNK holds one text part")
            return
        self._advance("text", chunk, violate)
        task.chunks += 1
        out.append(events.TextChunk(task_id, artifact_id, part["text"], chunk.last))

    def _advance(self, kind: str, chunk: _Update, violate: _Violate) -> bool:
        """Moves the chunk's artifact on by one chunk and says whether its content is still to be played."""
        task_id, artifact_id, append, last = chunk.task_id, chunk.artifact_id, chunk.append, chunk.last
        artifact = self._artifacts.get(artifact_id)
        if artifact is None:
            if append:
                violate(Rule.FIRST_CHUNK_APPENDS, f"the first chunk of artifact {artifact_id!r} has append true")
            current = self._open.get(kind)
            if current is not None:
                violate(
                    Rule.OVERLAPPING_ARTIFACT, f"artifact {artifact_id!r} started while {current!r} was still streaming"
                )
                self._artifacts[current].state = ArtifactState.COMPLETE
            artifact = self._artifacts[artifact_id] = _Artifact(kind, task_id)
            self._open[kind] = artifact_id
        elif artifact.state is ArtifactState.OPEN:
            if not append:
                violate(Rule.CONTINUATION_NOT_APPENDED, f"a continuation of artifact {artifact_id!r} has append false")
            if artifact.task_id != task_id:
                violate(
                    Rule.TASK_MISMATCH, f"artifact {artifact_id!r} moved from task {artifact.task_id!r} to {task_id!r}"
                )
        elif artifact.state is ArtifactState.COMPLETE:
            rule = Rule.CHUNK_AFTER_LAST if append else Rule.ARTIFACT_REUSED
            violate(rule, f"a chunk of artifact {artifact_id!r} after its lastChunk")
            return False
        elif artifact.state is ArtifactState.INTERRUPTED_BY_AGENT:
            rule = Rule.CHUNK_AFTER_INTERRUPTION if append else Rule.INTERRUPTED_ARTIFACT_REUSED
            violate(rule, f"a chunk of artifact {artifact_id!r} after the agent interrupted it")
            return False
        else:
            rule = Rule.LATE_CHUNK_AFTER_CONNECT_INTERRUPTION if append else Rule.INTERRUPTED_ARTIFACT_REUSED
            violate(rule, f"a chunk of artifact {artifact_id!r} after Connect interrupted it (not played)")
            return False
        if last:
            artifact.state = ArtifactState.COMPLETE
            self._open.pop(kind, None)
        return True

    def _trace(self, chunk: _Update, violate: _Violate, out: list[events.AgentEvent]) -> None:
        task_id, task, parts = chunk.task_id, chunk.task, chunk.parts
        if not self.subscribe_traces:
            violate(
                Rule.TRACE_NOT_SUBSCRIBED, f"a TRACING_SPAN for task {task_id!r}, though INIT_SESSION did not subscribe"
            )
        if task.terminal:
            violate(Rule.TRACE_AFTER_TERMINAL, f"a TRACING_SPAN for task {task_id!r} after its terminal status")
            return
        task.traces += 1
        if task.traces > 1:
            violate(Rule.SECOND_TRACE, f"a second TRACING_SPAN for task {task_id!r}: Connect reads only the first")
            return
        part = parts[0] if isinstance(parts, list) and len(parts) == 1 else None
        data = part.get("data") if isinstance(part, dict) else None
        span = data.get("tracingSpan") if isinstance(data, dict) else None
        problems = [] if not chunk.append and chunk.last else ["a TRACING_SPAN has append false and lastChunk true"]
        if not isinstance(span, dict) or "otlp" not in span:
            problems.append("no single data part holding tracingSpan.otlp")
            otlp = None
        else:
            otlp = span["otlp"]
            problems += trace_problems(otlp)
        if problems:
            violate(Rule.TRACE_INCOMPLETE, f"task {task_id!r}: " + "; ".join(problems[:4]))
        out.append(events.TraceReceived(task_id, otlp, tuple(problems)))

    def _status_update(self, update: dict[str, Any], violate: _Violate, out: list[events.AgentEvent]) -> None:
        task_id, status = self._task_id("statusUpdate", update, violate), update.get("status")
        if task_id is None:
            return
        state = status.get("state") if isinstance(status, dict) else None
        if state in UNSUPPORTED_TASK_STATES or (state not in TERMINAL_TASK_STATES and state != "TASK_STATE_WORKING"):
            violate(Rule.UNSUPPORTED_TASK_STATE, f"task {task_id!r} in state {state!r}")
            return
        if state == "TASK_STATE_WORKING":
            violate(Rule.NON_TERMINAL_STATUS, f"task {task_id!r} reported TASK_STATE_WORKING (ignored)")
            return
        assert isinstance(status, dict) and isinstance(state, str)
        task = self._tasks.get(task_id)
        if task is not None and task.terminal:
            violate(Rule.EVENT_AFTER_TERMINAL, f"a second terminal status for task {task_id!r}")
            return
        streaming = [t for t, state_ in self._tasks.items() if state_.chunks and not state_.terminal]
        if task is None and streaming:
            violate(
                Rule.TASK_MISMATCH, f"a terminal status for task {task_id!r} while the turn's chunks are on {streaming}"
            )
        task = self._tasks.setdefault(task_id, _Task())
        message = status.get("message")
        finish: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        if message is not None:
            if not isinstance(message, dict):
                violate(Rule.RESULT_SHAPE, f"task {task_id!r}: status.message is not an object")
                return
            if message.get("role") != "ROLE_AGENT":
                violate(Rule.WRONG_ROLE, f"task {task_id!r}: status.message has role {message.get('role')!r}")
            data = _single_data(message) or {}
            expected = "FINISH" if "finish" in data else "ERROR" if "error" in data else None
            if expected is None or _event_type(message) != expected:
                violate(
                    Rule.EVENT_TYPE,
                    f"task {task_id!r}: status.message eventType {_event_type(message)!r} with {sorted(data)}",
                )
            finish, error = data.get("finish"), data.get("error")
        if state == "TASK_STATE_FAILED":
            valid_error = (
                isinstance(error, dict)
                and type(error.get("errorCode")) is int
                and isinstance(error.get("errorReason"), str)
                and isinstance(error.get("errorCategory"), str)
            )
            if not valid_error:
                violate(
                    Rule.FAILED_WITHOUT_ERROR,
                    f"task {task_id!r} FAILED without an error {{errorCode, errorReason, errorCategory}}",
                )
                error = None
            if finish is not None:
                violate(
                    Rule.FINISH_INVALID,
                    f"task {task_id!r}: FINISH rides on a TASK_STATE_COMPLETED terminal, not FAILED",
                )
                finish = None
        for kind, artifact_id in list(self._open.items()):
            if self._artifacts[artifact_id].task_id == task_id:
                violate(
                    Rule.ARTIFACT_LEFT_OPEN,
                    f"task {task_id!r} ended with artifact {artifact_id!r} never given lastChunk",
                )
                self._artifacts[artifact_id].state = ArtifactState.COMPLETE
                del self._open[kind]
        if self.subscribe_traces and task.traces == 0:
            violate(Rule.TRACE_MISSING, f"task {task_id!r} ended without a TRACING_SPAN")
        task.terminal = True
        out.append(events.TurnEnded(task_id, state, error))
        if finish is not None:
            self._finish(finish, task_id, violate, out)

    def _finish(self, body: object, task_id: str | None, violate: _Violate, out: list[events.AgentEvent]) -> None:
        if (
            not isinstance(body, dict)
            or not isinstance(body.get("type"), str)
            or not isinstance(body.get("reason", ""), str)
        ):
            violate(Rule.FINISH_INVALID, f"finish {body!r} needs a string type (and a string reason)")
            return
        if body["type"] not in self.finish_types:
            violate(
                Rule.FINISH_TYPE_NOT_OFFERED, f"FINISH {body['type']!r}; INIT_SESSION offered {list(self.finish_types)}"
            )
        self.phase = Phase.FINISHED
        out.append(events.Finished(body["type"], body.get("reason", ""), task_id))


def _event_type(obj: dict[str, Any]) -> object:
    metadata = obj.get("metadata")
    return metadata.get(EVENT_TYPE_KEY) if isinstance(metadata, dict) else None


def _single_data(message: dict[str, Any]) -> dict[str, Any] | None:
    parts = message.get("parts")
    if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
        return None
    data = parts[0].get("data")
    return data if isinstance(data, dict) else None


def _excerpt(frame: str | bytes, limit: int = 160) -> str:
    text = frame if isinstance(frame, str) else repr(frame[:limit])
    return text if len(text) <= limit else text[:limit] + "…"
