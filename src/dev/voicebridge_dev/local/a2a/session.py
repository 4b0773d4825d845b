"""One voice contact handed to an external AI agent, run from Connect's side over a real WebSocket.

Sequence (docs/protocols.md, *Amazon Connect external AI agents (A2A voice streaming)*): the upgrade with
``Authorization: Bearer``, ``A2A-Extensions``, ``traceparent`` and ``tracestate`` (the 101 must echo
``A2A-Extensions``); INIT_SESSION and its direct reply; CHANNEL_STATE READY after ``ready_delay_s``; then, until
FINISH, the caller's audio in real-time slices, the agent's audio played at 1×, and the script's actions. Every frame
the agent sends goes through :class:`~.checker.AgentFrameChecker`. A strict session that sees a fatal violation does
what Connect does for a protocol violation (an informational ERROR, 400 BAD_REQUEST, then close) and
:func:`run_session` raises :class:`~.rules.ContractViolation` at the end if any violation was seen.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import time
import uuid
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from voicebridge_dev.local.a2a import events
from voicebridge_dev.local.a2a import script as actions
from voicebridge_dev.local.a2a.audio import CALL_RATE, Playout, Recording, StreamResampler
from voicebridge_dev.local.a2a.checker import AgentFrameChecker
from voicebridge_dev.local.a2a.rules import ContractViolation, Rule, UpgradeRejected, Violation
from voicebridge_dev.local.a2a.timeline import Timeline
from voicebridge_dev.local.a2a.wire import (
    EMPTY_USER_INPUT,
    EXTENSION,
    FINISH_TYPES,
    FRAME_BUDGET_BYTES,
    SAMPLE_RATES,
    AudioConfig,
    ConnectFrames,
)

Outcome = Literal[
    "finished",
    "violation",
    "failed",
    "init_refused",
    "init_failed",
    "agent_closed",
    "hung_up",
    "idle_timeout",
    "timeout",
]
FLOW_TOOL = {"COMPLETE": "Complete", "ESCALATE": "Escalate"}
"""The FINISH types the flow can branch on, as ``$.Lex.SessionAttributes.Tool`` holds them."""


@dataclass(frozen=True)
class ConnectSettings:
    """Connect's side of one session. Times in seconds; the defaults are choices where AWS publishes no figure."""

    api_key: str
    input_rate: int = 8000
    output_rate: int = 16000
    finish_types: tuple[str, ...] = FINISH_TYPES
    subscribe_traces: bool = True
    instance_arn: str = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000"
    contact_arn: str = ""
    context_id: str = ""
    """The session's ``contextId``; a fresh one when empty (a redial keeps the first socket's, :mod:`~.redial`)."""
    history: tuple[dict[str, Any], ...] = ()
    """Earlier turns as A2A messages; empty for an immediate handoff's first turn."""
    ready_delay_s: float = 0.0
    slice_ms: int = 20
    """The caller's audio per frame: Connect's real slice length is unpublished."""
    block_ms: int = 20
    frame_budget: int = FRAME_BUDGET_BYTES
    strict: bool = True
    open_timeout_s: float = 20.0
    init_timeout_s: float = 10.0
    max_duration_s: float = 300.0
    finish_linger_s: float = 0.5
    """How long the socket stays open after FINISH, to catch frames the agent must not send."""
    drain_on_finish: bool = True
    """Play the audio already buffered before handing back (unstated in the contract)."""
    idle_timeout_s: float | None = None
    """Connect's idle window (unpublished); ``None`` turns the check off."""
    silence_marker_after_s: float | None = None
    """Connect's extended-silence threshold (unpublished): after this long with neither the caller nor the agent
    heard, Connect sends ``<EMPTY_USER_INPUT>``; ``None`` (the default) never sends it unscripted."""

    def __post_init__(self) -> None:
        if self.input_rate not in SAMPLE_RATES or self.output_rate not in SAMPLE_RATES:
            raise ValueError(f"rates must be one of {SAMPLE_RATES}")
        if self.slice_ms <= 0 or self.block_ms <= 0 or CALL_RATE * self.slice_ms % 1000:
            raise ValueError("slice_ms and block_ms must be positive whole numbers of 8 kHz samples")


@dataclass
class SessionResult:
    """What Connect saw of the session; times are on the :class:`~.timeline.Timeline`'s clock (READY = 0)."""

    outcome: Outcome
    context_id: str
    finish: events.Finished | None = None
    audio_input: AudioConfig | None = None
    audio_output: AudioConfig | None = None
    violations: list[Violation] = field(default_factory=list)
    timeline: Timeline = field(default_factory=Timeline)
    recording: Recording = field(default_factory=Recording)
    turns: list[events.TurnEnded] = field(default_factory=list)
    traces: list[events.TraceReceived] = field(default_factory=list)
    probes: list[events.ProbeAnswered] = field(default_factory=list)
    close_code: int | None = None
    init_status: str | None = None

    @property
    def errors(self) -> list[Violation]:
        """The violations, without the warnings."""
        return [v for v in self.violations if not v.is_warning]

    @property
    def flow_tool(self) -> str | None:
        """``$.Lex.SessionAttributes.Tool`` after the hand-back (``None``: the flow takes its Error/No Match path)."""
        return FLOW_TOOL.get(self.finish.type) if self.finish else None


class CallerSource(Protocol):
    """A caller who listens: asked for each slice of their audio as its time comes, told whether the agent's voice is
    playing to them then (so a scripted caller can wait for the agent to finish, or talk over it on purpose)."""

    def next_slice(self, at_s: float, size: int, *, agent_heard: bool) -> bytes:
        """The caller's 8 kHz PCM (``size`` bytes, silence where they say nothing) that ends at session time
        ``at_s``; a source with a true ``hung_up`` attribute ends the call instead (the socket drops)."""
        ...


@dataclass
class FixedCaller:
    """A caller whose audio is fixed in advance (silence after its end)."""

    audio: bytes
    offset: int = 0

    def next_slice(self, at_s: float, size: int, *, agent_heard: bool) -> bytes:
        chunk = self.audio[self.offset : self.offset + size]
        self.offset += size
        return chunk + bytes(size - len(chunk))


async def run_session(
    url: str,
    settings: ConnectSettings,
    *,
    caller_audio: bytes | CallerSource = b"",
    script: Sequence[actions.Action] = (),
) -> SessionResult:
    """Runs one contact against the agent at ``url`` (``ws://`` or ``wss://``).

    ``caller_audio`` is 8 kHz 16-bit little-endian PCM starting at READY (silence after its end), or a
    :class:`CallerSource` that decides as the call goes. Raises
    :class:`~.rules.UpgradeRejected` when the upgrade is refused (401 for a wrong key), and, in strict mode,
    :class:`~.rules.ContractViolation` (holding the result) when the agent broke the contract.
    """
    session = _Session(url, settings, caller_audio, sorted(script, key=lambda a: a.at_s))
    result = await session.run()
    if settings.strict and result.errors:
        raise ContractViolation(result.errors, result)
    return result


class _Session:
    def __init__(
        self, url: str, settings: ConnectSettings, caller_audio: bytes | CallerSource, script: list[actions.Action]
    ) -> None:
        self.url = url
        self.settings = settings
        self.caller: CallerSource = (
            FixedCaller(caller_audio[: len(caller_audio) // 2 * 2]) if isinstance(caller_audio, bytes) else caller_audio
        )
        self.script = script
        self.frames = ConnectFrames(context_id=settings.context_id) if settings.context_id else ConnectFrames()
        contact_arn = settings.contact_arn or f"{settings.instance_arn}/contact/{uuid.uuid4()}"
        self.proposed_input = AudioConfig(settings.input_rate)
        self.proposed_output = AudioConfig(settings.output_rate)
        self.init = self.frames.init_session(
            instance_arn=settings.instance_arn,
            contact_arn=contact_arn,
            finish_types=settings.finish_types,
            subscribe_traces=settings.subscribe_traces,
            audio_input=self.proposed_input,
            audio_output=self.proposed_output,
            history=list(settings.history),
        )
        self.checker = AgentFrameChecker(
            context_id=self.frames.context_id,
            init_request_id=self.init["id"],
            proposed_input=self.proposed_input,
            proposed_output=self.proposed_output,
            finish_types=settings.finish_types,
            subscribe_traces=settings.subscribe_traces,
            frame_budget=settings.frame_budget,
        )
        self.result = SessionResult(outcome="timeout", context_id=self.frames.context_id)
        self.timeline = self.result.timeline
        self.playout: Playout | None = None
        self.zero = 0.0
        self.last_agent_frame = 0.0
        self.ws: ClientConnection | None = None
        self.init_done: asyncio.Future[None] | None = None
        self.done = asyncio.Event()
        self.finishing = False
        self.rejection: Violation | None = None
        self.background: set[asyncio.Task[None]] = set()
        self.crash: BaseException | None = None

    def now(self) -> float:
        return time.monotonic() - self.zero

    async def run(self) -> SessionResult:
        self.zero = time.monotonic()
        try:
            self.ws = await connect(
                self.url,
                additional_headers=self._upgrade_headers(),
                open_timeout=self.settings.open_timeout_s,
                compression=None,
                proxy=None,
                max_size=8 * 1024 * 1024,
            )
        except InvalidStatus as refused:
            raise UpgradeRejected(refused.response.status_code) from refused
        try:
            await self._converse(self.ws)
        finally:
            for task in self.background:
                task.cancel()
            await asyncio.gather(*self.background, return_exceptions=True)
            if self.rejection is not None:
                # What Connect does on a protocol violation: an informational ERROR, then close.
                reason = f"Protocol violation ({self.rejection.rule}): {self.rejection.detail}"[:500]
                await self._send(self.frames.error(400, reason, "BAD_REQUEST"))
            await self.ws.close()
            self.result.close_code = self.result.close_code or self.ws.close_code
            for event in self.checker.close(self.now()):
                self._handle(event)
            self.timeline.add(self.now(), "closed", outcome=self.result.outcome, code=self.result.close_code)
        if self.crash is not None:
            raise self.crash
        return self.result

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """A task of the session's; if it fails, the session ends and ``run`` raises its error."""
        task = asyncio.get_running_loop().create_task(work)

        def check(done: asyncio.Task[None]) -> None:
            if not done.cancelled() and done.exception() is not None and self.crash is None:
                self.crash = done.exception()
                self._end("failed")

        task.add_done_callback(check)
        return task

    def _upgrade_headers(self) -> dict[str, str]:
        trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
        return {
            "Authorization": f"Bearer {self.settings.api_key}",
            "A2A-Extensions": EXTENSION,
            "traceparent": f"00-{trace_id}-{span_id}-01",
            "tracestate": f"connect=parentSpanId:{uuid.uuid4()}",
        }

    async def _converse(self, ws: ClientConnection) -> None:
        echoed = ws.response.headers.get("A2A-Extensions", "") if ws.response else ""
        if EXTENSION not in [e.strip() for e in echoed.split(",")]:
            self._handle(
                Violation(Rule.EXTENSION_NOT_ECHOED, f"the 101 answered A2A-Extensions {echoed!r}", self.now())
            )
        loop = asyncio.get_running_loop()
        self.init_done = loop.create_future()
        receiver = self._spawn(self._receive(ws))
        tasks = [receiver]
        try:
            await self._send(self.init)
            self.timeline.add(self.now(), "init_sent", id=self.init["id"])
            try:
                await asyncio.wait_for(asyncio.shield(self.init_done), self.settings.init_timeout_s)
            except TimeoutError:
                self._end("timeout")
            if self.done.is_set():
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.done.wait(), self.settings.ready_delay_s)
            if self.done.is_set():
                return
            ready = self.frames.channel_ready()
            self._rebase_clock()
            await self._send(ready)
            self.checker.ready_sent()
            self.timeline.add(0.0, "ready", id=ready["id"])
            tasks += [
                self._spawn(self._stream_caller()),
                self._spawn(self._play()),
                self._spawn(self._run_script()),
            ]
            if self.settings.idle_timeout_s is not None:
                tasks.append(self._spawn(self._watch_idle(self.settings.idle_timeout_s)))
            try:
                await asyncio.wait_for(self.done.wait(), self.settings.max_duration_s)
            except TimeoutError:
                self._end("timeout")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _rebase_clock(self) -> None:
        """READY becomes the session clock's zero: the caller's audio and the playout both start there."""
        shift = time.monotonic() - self.zero
        self.zero += shift
        self.timeline.started_at = time.time()
        self.timeline.events = [replace(e, at=e.at - shift) for e in self.timeline.events]
        self.result.violations = [replace(v, at=v.at - shift) for v in self.result.violations]
        self.last_agent_frame -= shift

    def _end(self, outcome: Outcome) -> None:
        if not self.done.is_set():
            self.result.outcome = outcome
            self.done.set()
        if self.init_done is not None and not self.init_done.done():
            self.init_done.set_result(None)

    async def _send(self, frame: dict[str, Any] | str | bytes) -> None:
        assert self.ws is not None
        if isinstance(frame, dict):
            self.checker.request_sent(frame["id"])
            frame = json.dumps(frame)
        try:
            await self.ws.send(frame)
        except ConnectionClosed as closed:
            self._agent_closed(closed)

    def _agent_closed(self, closed: ConnectionClosed) -> None:
        self.result.close_code = closed.rcvd.code if closed.rcvd else None
        self._end("agent_closed")

    async def _receive(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                self.last_agent_frame = self.now()
                for event in self.checker.feed(frame, self.now()):
                    self._handle(event)
        except ConnectionClosed as closed:
            self._agent_closed(closed)
            return
        if not self.done.is_set():
            self.result.close_code = ws.close_code
            self._end("agent_closed")

    def _handle(self, event: events.AgentEvent) -> None:
        at = self.now()
        if isinstance(event, Violation):
            self.result.violations.append(event)
            self.timeline.add(
                event.at, "violation", rule=str(event.rule), detail=event.detail, warning=event.is_warning
            )
            if self.settings.strict and event.is_fatal and not self.done.is_set():
                self.rejection = event
                self._end("violation")
        elif isinstance(event, events.InitAccepted):
            self.result.audio_input, self.result.audio_output = event.audio_input, event.audio_output
            self.result.init_status = "200"
            self.playout = Playout(
                event.audio_output.sample_rate, self.timeline, self.result.recording, self.settings.block_ms
            )
            self.timeline.add(
                at,
                "init_response",
                status="200",
                input=event.audio_input.sample_rate,
                output=event.audio_output.sample_rate,
            )
            if self.init_done is not None and not self.init_done.done():
                self.init_done.set_result(None)
        elif isinstance(event, events.InitRefused):
            self.result.init_status = event.status_code
            self.timeline.add(at, "init_response", status=event.status_code)
            self._end("init_refused")
        elif isinstance(event, events.InitFailed):
            self.timeline.add(at, "init_response", error=event.code, message=event.message)
            self._end("init_failed")
        elif isinstance(event, events.AudioChunk):
            self.timeline.add(
                at,
                "chunk_received",
                artifact=event.artifact_id,
                task=event.task_id,
                bytes=len(event.pcm),
                last=event.last,
                played=event.playable,
            )
            if event.playable and self.playout is not None:
                self.playout.add(event.artifact_id, event.pcm, last=event.last)
        elif isinstance(event, events.TextChunk):
            self.timeline.add(at, "text", artifact=event.artifact_id, task=event.task_id, text=event.text)
        elif isinstance(event, events.AgentInterrupted):
            self.timeline.add(at, "interruption", by="agent", type=event.kind, reason=event.reason)
            if self.playout is not None:
                self.playout.flush(at, "agent_interruption")
        elif isinstance(event, events.TraceReceived):
            self.result.traces.append(event)
            self.timeline.add(at, "trace", task=event.task_id, valid=not event.problems)
        elif isinstance(event, events.TurnEnded):
            self.result.turns.append(event)
            self.timeline.add(at, "status", task=event.task_id, state=event.state, error=event.error)
        elif isinstance(event, events.Finished):
            self.result.finish = event
            self.timeline.add(at, "finish", type=event.type, reason=event.reason, task=event.task_id)
            task = self._spawn(self._hand_back())
            self.background.add(task)
            task.add_done_callback(self.background.discard)
        elif isinstance(event, events.ProbeAnswered):
            self.result.probes.append(event)
            self.timeline.add(at, "probe_answered", probe=event.probe, code=event.code)
        elif isinstance(event, events.RequestFailed):
            self._end("failed")

    async def _hand_back(self) -> None:
        self.finishing = True
        await asyncio.sleep(self.settings.finish_linger_s)
        if self.settings.drain_on_finish and self.playout is not None:
            self.playout.finish()
            while self.playout.busy and not self.done.is_set():
                await asyncio.sleep(self.settings.block_ms / 1000)
        self._end("finished")

    async def _at(self, at_s: float) -> None:
        delay = at_s - self.now()
        if delay > 0:
            await asyncio.sleep(delay)

    async def _stream_caller(self) -> None:
        assert self.result.audio_input is not None
        resample = StreamResampler(CALL_RATE, self.result.audio_input.sample_rate)
        slice_bytes = CALL_RATE * self.settings.slice_ms // 1000 * 2
        index = 0
        quiet_since = 0.0
        # Each slice goes when the caller has finished saying it, as a phone leg captures it.
        while not self.finishing:
            at = (index + 1) * self.settings.slice_ms / 1000
            await self._at(at)
            heard = self.playout is not None and self.playout.busy
            chunk = self.caller.next_slice(at, slice_bytes, agent_heard=heard)
            if getattr(self.caller, "hung_up", False):
                await self._act(actions.HangUp(self.now()))
                return
            await self._send(self.frames.audio(resample(chunk)))
            index += 1
            if heard or any(chunk):
                quiet_since = at
            elif (
                self.settings.silence_marker_after_s is not None
                and at - quiet_since >= self.settings.silence_marker_after_s
            ):
                await self._act(actions.SilenceMarker(self.now()))
                quiet_since = at

    async def _play(self) -> None:
        assert self.playout is not None
        index = 0
        while not self.done.is_set():
            await self._at(index * self.settings.block_ms / 1000)
            self.playout.tick(index * self.settings.block_ms / 1000)
            index += 1

    async def _watch_idle(self, window: float) -> None:
        while not self.done.is_set():
            await asyncio.sleep(min(window, 0.05))
            if self.now() - self.last_agent_frame > window:
                await self._send(
                    self.frames.error(
                        408, "No frames received within the idle window; closing the connection", "TIMEOUT"
                    )
                )
                self._end("idle_timeout")

    def _output_in_flight(self) -> bool:
        return self.checker.output_in_flight or (self.playout is not None and self.playout.busy)

    async def _interrupt(self, kind: Any, reason: str) -> None:
        self.checker.connect_interrupted()
        if self.playout is not None:
            self.playout.flush(self.now(), "connect_interruption")
        self.timeline.add(self.now(), "interruption", by="connect", type=kind, reason=reason)
        await self._send(self.frames.interruption(kind, reason))

    async def _run_script(self) -> None:
        for action in self.script:
            await self._at(action.at_s)
            if self.finishing:
                return
            await self._act(action)

    async def _act(self, action: actions.Action) -> None:
        fragmented = isinstance(action, actions.Fragmented)
        inner = action.action if isinstance(action, actions.Fragmented) else action
        frame: dict[str, Any] | None = None
        if isinstance(inner, actions.Dtmf):
            if self._output_in_flight():
                await self._interrupt("DTMF_INPUT", "dtmf")
            frame = self.frames.dtmf_complete(inner.digits, inner.termination)
        elif isinstance(inner, actions.SilenceMarker):
            frame = self.frames.text(EMPTY_USER_INPUT)
        elif isinstance(inner, actions.InformationalError):
            frame = self.frames.error(inner.code, inner.reason, inner.category)
        elif isinstance(inner, actions.Interrupt):
            await self._interrupt(inner.kind, inner.reason)
        elif isinstance(inner, actions.Probe):
            await self._probe(inner)
        elif isinstance(inner, actions.HangUp):
            self.timeline.add(self.now(), "sent", what="hang_up")
            assert self.ws is not None
            self.ws.transport.abort()
            self._end("hung_up")
        if frame is None:
            return
        self.timeline.add(self.now(), "sent", what=type(inner).__name__, fragmented=fragmented, id=frame["id"])
        if not fragmented:
            await self._send(frame)
            return
        assert isinstance(action, actions.Fragmented)
        self.checker.request_sent(frame["id"])
        for piece in self.frames.fragments(frame, action.piece_chars):
            await self._send(piece)

    async def _probe(self, probe: actions.Probe) -> None:
        required = probe.kind in actions.PROBES_ANSWER_REQUIRED
        self.timeline.add(self.now(), "sent", what="probe", probe=probe.kind)
        if probe.kind == "malformed_json":
            self.checker.probe_sent(probe.kind, None, answer_required=required)
            await self._send('{"jsonrpc": "2.0", "method": "SendMessage", "id": ')
        elif probe.kind == "binary":
            self.checker.probe_sent(probe.kind, None, answer_required=required)
            await self._send(bytes(range(256)))
        else:
            frame: dict[str, Any]
            if probe.kind == "unknown_method":
                frame = {"jsonrpc": "2.0", "method": "ReticulateSplines", "id": self.frames.next_id(), "params": {}}
            elif probe.kind == "unknown_event_type":
                frame = self.frames.event({"mystery": {}}, "MYSTERY_EVENT")
            else:
                frame = self.frames.text("x" * self.settings.frame_budget * 4)
            self.checker.probe_sent(probe.kind, frame["id"], answer_required=required)
            await self._send(json.dumps(frame))
