"""The Amazon Connect flow simulator: runs an exported flow (flow language 2019-10-30) for one inbound call.

This is an emulator of Connect's flow engine for local runs, not Amazon Connect. It executes a flow's actions
against the local cloud (docs/protocols.md, *Amazon Connect → Lambda* to *Kinesis Video Streams*):

- ``InvokeLambdaFunction`` — boto3 ``lambda.invoke`` against ``AWS_ENDPOINT_URL_LAMBDA`` with the Connect
  event (:class:`~voicebridge_dev.simulator.contact.Contact`); the function is the block's
  ``LambdaFunctionARN`` once the template's placeholders are filled with the local ARNs. The answer becomes
  ``$.External`` when it is a flat string map (``STRING_MAP``) or a JSON object (``JSON``); a function error,
  an invalid answer, or no answer within ``InvocationTimeLimitSeconds`` takes ``NoMatchingError``. Throttling
  and 5xx are retried inside that limit, as Connect does (the pauses between attempts are real time on either
  clock: what frees a container runs outside the simulator). Lambda blocks chained without a prompt between them
  share a 20 s budget: each call gets what is left of it, and the longest chain is reported. While a function
  runs, the call's time passes at its real pace on either clock: what the caller does meanwhile happens as it
  would.
- ``MessageParticipant`` — ``Media`` is fetched from S3 and must be an 8 kHz mono µ-law WAV; ``Text`` and
  ``SSML`` are spoken by a local speech engine standing in for Connect's own voice (``<break time=…/>`` is
  silence).
- ``GetParticipantInput`` — plays its prompt, then waits ``InputTimeLimitSeconds`` for the keys the simulated
  caller presses (:mod:`~.keypad`: a menu's key and its condition, or keys stored in ``$.StoredCustomerInput``); none
  in time takes its ``InputTimeLimitExceeded`` branch, else ``NoMatchingError`` (the branch for any error no other
  matches, GetParticipantInput's page of Connect's flow language reference); with an SSML break as its prompt it
  holds the call.
- ``ConnectParticipantWithLexBot`` — the Lex emulator's bot, sent what the caller says (:mod:`~.lexbot`).
- ``TransferToFlow``, ``InvokeFlowModule`` — across a folder of flows (:mod:`~.library`); ``ShowView`` — recorded,
  answered by the caller script's choice or left to its time limit.
- ``UpdateContactMediaStreamingBehavior`` — starts or stops streaming both tracks into the KVS emulator
  (one stream per call, ``connect-local-contact-<ContactId>``); ``MediaStreams`` in the event follows.
- ``UpdateContactAttributes``, ``UpdateFlowAttributes`` (``$.FlowAttributes``, for the flow's run), ``Compare``
  (Equals, Number…, Text…), ``Loop`` (a counter per action, reset after ``DoneLooping``), ``UpdateFlowLoggingBehavior``,
  ``UpdateContactTargetQueue`` (an empty queue takes ``NoMatchingError``, as Connect refuses it).
- ``DisconnectParticipant`` ends the call; ``TransferContactToQueue`` ends it as transferred to the working queue.

A flow's ``${AgentQueueArn}`` left blank by the template is the local instance's queue
(:func:`~voicebridge_dev.simulator.contact.local_queue_arn`), so a transfer can be simulated. Once the call is
over, :func:`simulate_call` reads back what the product recorded of it in the turn table — each caller turn's end
and each reply segment with its timings (:mod:`voicebridge_dev.simulator.records`) — for the report.

Every other action type of the flow language is answered by a stand-in (:mod:`~.standins`: recorded, ending the
run, the contact centre's state from a :class:`~.standins.LocalContactCentre`, or the error branch of a service the
local cloud does not run); a ``PromptId`` prompt plays from the local prompt library, else is its name spoken. A
type the validator does not know, or a parameter choice such as an ``ASYNCHRONOUS`` Lambda, stops the call with an
:class:`UnsupportedActionError` naming it. The simulated caller (:mod:`voicebridge_dev.simulator.caller`) may hang
up at any moment; the flow then stops, as Connect stops it.
"""

from __future__ import annotations

import functools
import html
import json
import logging
import re
import struct
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import numpy as np
import numpy.typing as npt
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.audio.wav import read_wav
from voicebridge.errors import AudioFormatError
from voicebridge_dev.flows import (
    ACTION_TYPES,
    Action,
    Flow,
    InvalidFlowError,
    UnresolvedPlaceholderError,
    action_from_json,
    parse_flow,
    render,
    template_functions,
    validate,
)
from voicebridge_dev.flows.errors import FlowError
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID, EmulatedStream, KvsEmulator, KvsEmulatorError
from voicebridge_dev.local.speech_engine import SpeechEngine, SpeechEngineError
from voicebridge_dev.simulator.caller import Press, Say, SimulatedCaller
from voicebridge_dev.simulator.clock import Clock, RealClock
from voicebridge_dev.simulator.contact import MAX_ATTRIBUTES_BYTES, Contact, local_queue_arn
from voicebridge_dev.simulator.events import (
    BOT,
    ActionRun,
    CallEnded,
    CallEvent,
    CallLog,
    EndReason,
    LambdaCall,
    LambdaOutcome,
    Noted,
    Segment,
    SegmentKind,
    StreamingChanged,
)
from voicebridge_dev.simulator.keypad import menu_key, stored_input
from voicebridge_dev.simulator.lexbot import (
    LexBotRef,
    bot_of,
    closed,
    lex_attributes,
    message_text,
    start_timeout_s,
)
from voicebridge_dev.simulator.library import FlowLibrary, display_names
from voicebridge_dev.simulator.media import SAMPLE_RATE, MediaPlane, read_call_audio
from voicebridge_dev.simulator.records import CallRecords, read_records
from voicebridge_dev.simulator.standins import (
    ENDS,
    RECORDED,
    UNAVAILABLE,
    LocalContactCentre,
    percentage_draw,
    unavailable_error,
)
from voicebridge_dev.template import Resolver, load_template, local_physical_id

__all__ = [
    "CHAIN_BUDGET_S",
    "CallResult",
    "FlowRuntimeError",
    "FlowSimulator",
    "LoadedFlow",
    "SimulatorError",
    "UnsupportedActionError",
    "flow_library",
    "load_flow_for_simulation",
    "simulate_call",
]

logger = logging.getLogger(__name__)

CHAIN_BUDGET_S = 20.0
"""Connect's limit for Lambda blocks chained without a prompt between them."""
MAX_RESPONSE_BYTES = 32 * 1024
_RETRY_BASE_S = 0.1
_WAIT_SLICE_S = 0.05
_STREAM_DRAIN_S = 5.0
_DEFAULT_BREAK_S = 0.5
_WAVE_FORMAT_MULAW = 7
_RETRYABLE_CODES = frozenset({"TooManyRequestsException", "ServiceException", "ThrottlingException"})


class SimulatorError(Exception):
    """Base class of the flow simulator's errors."""


class UnsupportedActionError(SimulatorError):
    """The flow reached an action (or a parameter choice) the simulator does not implement."""

    def __init__(self, action: Action, detail: str | None = None) -> None:
        what = f"action {action.identifier!r} ({action.type}"
        what += f", {detail})" if detail else ")"
        super().__init__(f"{what} is not supported by the flow simulator")
        self.identifier = action.identifier
        self.type = action.type


class FlowRuntimeError(SimulatorError):
    """The flow cannot go on: a failed action without an error branch, a runaway loop, a call too long."""


# --- loading -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedFlow:
    """A flow ready to run, its placeholders filled with local ARNs; ``functions`` maps ARN to logical ID."""

    flow: Flow
    functions: Mapping[str, str]


def load_flow_for_simulation(
    flow_path: str | Path,
    template_path: str | Path,
    *,
    region: str = "us-east-1",
    parameters: Mapping[str, str] | None = None,
    placeholders: Mapping[str, str] | None = None,
    templated: bool = False,
) -> LoadedFlow:
    """Read a flow, fill its ``${X.Arn}``/``${X}`` placeholders for the local cloud, and check it (as a template whose
    tokens are filled before import, when ``templated``: see :func:`~voicebridge_dev.flows.validate`).

    ``parameters`` are template parameter values (else their defaults); a blank ``AgentQueueArn`` is the local
    instance's queue. ``placeholders`` adds or replaces values (``{"AgentQueueArn": "arn:…"}``). Actions of a type
    the validator does not know are kept, so the call stops when it reaches one; every other problem raises
    :class:`InvalidFlowError`.
    """
    template = load_template(template_path)
    resolver = Resolver(template, region=region, parameters=dict(parameters or {}))
    pseudo = ("AWS::Region", "AWS::AccountId", "AWS::StackName", "AWS::Partition")
    values = {name: resolver.ref(name) for name in (*pseudo, *(template.get("Parameters") or {}))}
    for name in template["Resources"]:
        values[name] = resolver.ref(name)
        values[f"{name}Arn"] = resolver.arn(name)
    if not values.get("AgentQueueArn"):
        values["AgentQueueArn"] = local_queue_arn(region)
    values.update(placeholders or {})
    text = Path(flow_path).read_text(encoding="utf-8")
    try:
        rendered = render(text, values)
    except UnresolvedPlaceholderError:
        if not templated:
            raise
        # A template's own tokens are filled before import: they stay as they are, references to nothing here.
        rendered = text
    try:
        document = json.loads(rendered)
    except ValueError:
        raise InvalidFlowError(validate(rendered)) from None
    raw_actions = document.get("Actions") if isinstance(document, dict) else None
    unknown = {
        raw.get("Identifier")
        for raw in raw_actions or []
        if isinstance(raw, dict) and raw.get("Type") not in ACTION_TYPES
    }
    problems = [problem for problem in validate(document, templated=templated) if problem.action not in unknown]
    if problems:
        raise InvalidFlowError(problems)
    flow = parse_flow(document, templated=templated) if not unknown else _flow_with_unknown_actions(document, unknown)
    functions = {resolver.arn(name): name for name in template_functions(template_path)}
    return LoadedFlow(flow, functions)


def _flow_with_unknown_actions(document: Mapping[str, Any], unknown: set[Any]) -> Flow:
    """The models of a flow whose other actions are valid; an unknown action keeps no transitions."""
    actions: dict[str, Action] = {}
    for raw in document["Actions"]:
        identifier = raw["Identifier"]
        if identifier in unknown:
            actions[identifier] = Action(identifier, raw["Type"], raw.get("Parameters") or {}, None)
        else:
            actions[identifier] = action_from_json(raw)
    return Flow(start_action=document["StartAction"], actions=actions, metadata=document.get("Metadata", {}))


# --- the result --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CallResult:
    """A finished call: how it ended, everything that happened, and its recording (caller left, bot right)."""

    contact_id: str
    ended_by: EndReason
    detail: str | None
    duration: float
    events: list[CallEvent]
    segments: list[Segment]
    recording: npt.NDArray[np.int16]
    virtual_clock: bool
    longest_lambda_chain: float
    sample_rate: int = SAMPLE_RATE
    records: CallRecords = field(default_factory=CallRecords)
    """What the product recorded of the call (its turns and reply segments), on the call's time."""

    @property
    def error(self) -> str | None:
        return self.detail if self.ended_by == "error" else None

    @property
    def actions(self) -> list[ActionRun]:
        return [event for event in self.events if isinstance(event, ActionRun)]

    @property
    def lambda_calls(self) -> list[LambdaCall]:
        return [event for event in self.events if isinstance(event, LambdaCall)]


# --- the interpreter ---------------------------------------------------------------------------------------


class _CallOver(Exception):
    """The call ends here (the flow disconnected or transferred it, or the caller hung up)."""

    def __init__(self, reason: EndReason, detail: str | None = None) -> None:
        super().__init__(reason)
        self.reason: EndReason = reason
        self.detail = detail


class _ActionFailed(Exception):
    """The action failed in a way the flow handles with an error branch."""

    def __init__(self, reason: str, error_type: str = "NoMatchingError") -> None:
        super().__init__(reason)
        self.error_type = error_type


@dataclass
class _Branch:
    outcome: str
    target: str | None


class _Attempt:
    """One ``lambda.invoke`` running in a thread of its own, so the flow can give up on it."""

    def __init__(self, client: Any, function: str, payload: bytes) -> None:
        self.done = threading.Event()
        self.payload: bytes | None = None
        self.function_error: str | None = None
        self.error: BotoCoreError | ClientError | None = None
        threading.Thread(
            target=self._run, args=(client, function, payload), name="connect-sim-invoke", daemon=True
        ).start()

    def _run(self, client: Any, function: str, payload: bytes) -> None:
        try:
            answer = client.invoke(FunctionName=function, InvocationType="RequestResponse", Payload=payload)
            self.payload = answer["Payload"].read()
            self.function_error = answer.get("FunctionError")
        except (BotoCoreError, ClientError) as exc:
            self.error = exc
        finally:
            self.done.set()

    @property
    def retryable(self) -> bool:
        if not isinstance(self.error, ClientError):
            return False
        code = self.error.response.get("Error", {}).get("Code", "")
        status = self.error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _RETRYABLE_CODES or status >= 500


@dataclass
class _Prompt:
    samples: npt.NDArray[np.int16]
    kind: SegmentKind
    text: str | None = None
    uri: str | None = None


class FlowSimulator:
    """Runs one call through a flow on the local cloud (the module docstring lists what it supports)."""

    def __init__(
        self,
        flow: LoadedFlow,
        *,
        lambda_client: Any,
        s3_client: Any,
        kvs: KvsEmulator,
        voice: SpeechEngine,
        caller: SimulatedCaller,
        clock: Clock | None = None,
        contact: Contact | None = None,
        log: CallLog | None = None,
        max_actions: int = 1000,
        max_call_s: float = 1800.0,
        centre: LocalContactCentre | None = None,
        local_answers: Mapping[str, Mapping[str, Any]] | None = None,
        lex_client: Any | None = None,
        library: FlowLibrary | None = None,
        views: Mapping[str, str] | None = None,
        prompts: Mapping[str, Path] | None = None,
    ) -> None:
        self.flow = flow.flow
        self.flow_name = str(flow.flow.metadata.get("name") or "")
        self.functions = flow.functions
        self.lambda_client = lambda_client
        self.s3 = s3_client
        self.kvs = kvs
        self.voice = voice
        self.caller = caller
        self.clock: Clock = clock if clock is not None else RealClock()
        self.contact = contact if contact is not None else Contact()
        self.log = log if log is not None else CallLog()
        self.media = MediaPlane(self.clock, self.log)
        self.max_actions = max_actions
        self.max_call_s = max_call_s
        self.centre = centre if centre is not None else LocalContactCentre()
        # With local answers, a function that is not the template's answers from them (by ARN or name), else {}.
        self.local_answers = None if local_answers is None else dict(local_answers)
        self.lex: Any = lex_client
        self.library = library
        self.views = dict(views or {})
        self.prompts = dict(prompts or {})
        # The flows a module was invoked from, innermost last: (flow, its name, the InvokeFlowModule action, the
        # flow's attributes and loop counters, which the module does not share).
        self._callers: list[tuple[Flow, str, Action, dict[str, str], dict[str, int]]] = []
        self._loops: dict[str, int] = {}
        self._chain = 0.0
        self._longest_chain = 0.0
        self._stream: EmulatedStream | None = None
        self._start_fragment: str | None = None
        self._epoch = time.time()
        self._handlers: dict[str, Callable[[Action], _Branch]] = {
            "InvokeLambdaFunction": self._invoke_lambda,
            "MessageParticipant": self._message,
            "GetParticipantInput": self._get_input,
            "UpdateContactMediaStreamingBehavior": self._media_streaming,
            "UpdateContactAttributes": self._update_attributes,
            "Compare": self._compare,
            "Loop": self._loop,
            "UpdateFlowLoggingBehavior": self._next,
            "UpdateFlowAttributes": self._update_flow_attributes,
            "UpdateContactTargetQueue": self._target_queue,
            "TransferContactToQueue": self._transfer,
            "DisconnectParticipant": self._disconnect,
            "CheckHoursOfOperation": self._hours,
            "CheckMetricData": self._check_metric,
            "GetMetricData": self._get_metrics,
            "DistributeByPercentage": self._distribute,
            "Wait": self._wait,
            **{kind: self._recorded for kind in RECORDED},
            **{kind: self._ends for kind in ENDS},
            **{kind: self._unavailable for kind in UNAVAILABLE},
            "ConnectParticipantWithLexBot": self._lex_bot,
            "ShowView": self._view,
            "TransferToFlow": self._transfer_to_flow,
            "InvokeFlowModule": self._invoke_module,
            "EndFlowModuleExecution": self._end_module,
        }

    def run(self) -> CallResult:
        """Run the call to its end and return what happened."""
        self.media.start()
        reason: EndReason
        try:
            self._run_flow()
        except _CallOver as over:
            reason, detail = over.reason, over.detail
        except SimulatorError as exc:
            reason, detail = "error", str(exc)
        else:
            reason, detail = "error", f"the flow ran {self.max_actions} actions without ending"
        end = self.clock.now()
        try:
            if self.media.streaming:
                self._stop_streaming(at=end)
        finally:
            self.media.stop()
        self.media.finish(end)
        self.log.record(CallEnded(end, reason, detail))
        return CallResult(
            contact_id=self.contact.contact_id,
            ended_by=reason,
            detail=detail,
            duration=end,
            events=self.log.events,
            segments=self.media.segments,
            recording=self.media.recording(end),
            virtual_clock=self.clock.virtual,
            longest_lambda_chain=self._longest_chain,
        )

    # -- the flow

    def _run_flow(self) -> None:
        identifier = self.flow.start_action
        for _ in range(self.max_actions):
            now = self.clock.now()
            if self.caller.hung_up(now):
                raise _CallOver("caller hung up")
            if now > self.max_call_s:
                raise FlowRuntimeError(f"the call ran longer than {self.max_call_s:.0f} s")
            action, where = self.flow.actions[identifier], self.flow_name
            handler = self._handlers.get(action.type)
            if handler is None:
                raise UnsupportedActionError(action)
            try:
                try:
                    branch = handler(action)
                except _ActionFailed as failure:
                    branch = self._error(action, failure.error_type, str(failure))
                except _CallOver as over:
                    self.log.record(ActionRun(now, action.identifier, action.type, over.reason, None, where))
                    raise
                self.log.record(ActionRun(now, action.identifier, action.type, branch.outcome, branch.target, where))
                if branch.target is None:
                    raise FlowRuntimeError(f"action {action.identifier!r} took {branch.outcome}, which leads nowhere")
            except FlowRuntimeError as exc:
                # A module that fails returns to the flow that invoked it, by its Invoke module block's error branch.
                if not self._callers:
                    raise
                invoke = self._return_from_module()
                branch = self._error(invoke, "NoMatchingError", f"module failed: {exc}")
                at = self.clock.now()
                self.log.record(
                    ActionRun(at, invoke.identifier, invoke.type, branch.outcome, branch.target, self.flow_name)
                )
            identifier = str(branch.target)

    def _error(self, action: Action, error_type: str, reason: str) -> _Branch:
        target = action.error_target(error_type)
        if target is None:
            raise FlowRuntimeError(f"action {action.identifier!r} failed ({reason}) and has no {error_type} branch")
        logger.info("flow simulator: %s took %s: %s", action.identifier, error_type, reason)
        return _Branch(error_type, target)

    def _seconds(self, action: Action, name: str, default: str | None = None) -> float:
        """A time parameter's seconds (given, or referenced: ``$.Attributes.Timeout``); FlowRuntimeError when the
        value is not a number of seconds."""
        raw = action.parameters.get(name, default)
        value = self.contact.value(str(raw)) if raw is not None else ""
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise FlowRuntimeError(f"action {action.identifier!r}: {name} {value!r} is not a number of seconds")
        return seconds

    def _next(self, action: Action) -> _Branch:
        return _Branch("next", action.next_action)

    # -- time passing

    def _pass_time(self, until: float) -> None:
        """Let the call go on until ``until``, unless the caller hangs up first.

        A virtual clock skips ahead, but never across the caller's speech, which Ink hears at its real pace. Time
        never passes beyond the call's limit (a view or a wait may ask for hours): the flow ends there.
        """
        until = min(until, self.max_call_s + _WAIT_SLICE_S)
        while True:
            now = self.clock.now()
            if self.caller.hung_up(now):
                raise _CallOver("caller hung up")
            if now >= until:
                return
            upcoming = self.caller.next_event(now)
            target = until if upcoming is None else min(until, upcoming)
            if self.clock.virtual and self.caller.speaking_until(now) is not None:
                time.sleep(min(target - now, _WAIT_SLICE_S))
            else:
                self.clock.sleep_until(target)
            self.media.pump()

    def _wait_for(self, attempt: _Attempt, deadline: float) -> bool:
        """Wait for ``attempt`` until ``deadline``; False when it did not answer in time.

        Nothing is skipped, on either clock: the function's work takes its real time, and what the caller does
        meanwhile — the pause after a prompt, in which the flow may play the next one, and the caller's speech,
        which reaches Ink at its own pace — happens as it would.
        """
        while not attempt.done.is_set():
            now = self.clock.now()
            if self.caller.hung_up(now):
                raise _CallOver("caller hung up")
            if now >= deadline:
                return False
            upcoming = self.caller.next_event(now)
            wake = deadline if upcoming is None else min(deadline, upcoming)
            attempt.done.wait(min(max(wake - now, 0.0), _WAIT_SLICE_S))
        return True

    def _wait_real(self, seconds: float) -> None:
        """Let ``seconds`` of real time pass (the call's time with it, on either clock), unless the caller hangs up."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.caller.hung_up(self.clock.now()):
                raise _CallOver("caller hung up")
            time.sleep(min(left, _WAIT_SLICE_S))

    # -- Lambda

    def _invoke_lambda(self, action: Action) -> _Branch:
        params = action.parameters
        if params.get("InvocationType", "SYNCHRONOUS") != "SYNCHRONOUS":
            raise UnsupportedActionError(action, f"InvocationType {params.get('InvocationType')}")
        arn = self.contact.value(str(params["LambdaFunctionARN"]))
        limit = self._seconds(action, "InvocationTimeLimitSeconds")
        response_type = (params.get("ResponseValidation") or {}).get("ResponseType", "STRING_MAP")
        inputs = {
            name: self.contact.value(str(value))
            for name, value in (params.get("LambdaInvocationAttributes") or {}).items()
        }
        start = self.clock.now()
        allowed = min(limit, CHAIN_BUDGET_S - self._chain)
        outcome: LambdaOutcome
        response: dict[str, Any] | None = None
        error: str | None = None
        if allowed <= 0:
            outcome, error = (
                "budget-exhausted",
                f"chained Lambda blocks used Connect's {CHAIN_BUDGET_S:.0f} s",
            )
        elif self.local_answers is not None and arn not in self.functions:
            outcome, response = "ok", self._local_answer(arn)
            if response_type == "STRING_MAP" and not all(isinstance(value, str) for value in response.values()):
                outcome, response, error = (
                    "invalid-response",
                    None,
                    "response is not a flat map of strings (STRING_MAP)",
                )
        else:
            payload = json.dumps(self.contact.event(inputs)).encode()
            try:
                outcome, response, error = self._call(arn, payload, start + allowed, response_type)
            except _CallOver as over:
                self._record_call(action, arn, start, inputs, "abandoned", None, f"the call ended: {over.reason}")
                raise
            if outcome == "timeout" and allowed < limit:
                outcome = "budget-exhausted"
        self._record_call(action, arn, start, inputs, outcome, response, error)
        self.contact.external = response if response is not None else {}
        if outcome != "ok":
            raise _ActionFailed(error or outcome)
        return _Branch("next", action.next_action)

    def _local_answer(self, arn: str) -> dict[str, Any]:
        """A function the simulation does not run answers what it was given to answer (by ARN or name), or ``{}``."""
        assert self.local_answers is not None
        name = arn.rsplit(":function:", 1)[-1].split(":", 1)[0]
        answer = self.local_answers.get(arn, self.local_answers.get(name, {}))
        return dict(answer)

    def _record_call(
        self,
        action: Action,
        arn: str,
        start: float,
        inputs: dict[str, str],
        outcome: LambdaOutcome,
        response: dict[str, Any] | None,
        error: str | None,
    ) -> None:
        end = self.clock.now()
        self._chain += end - start
        self._longest_chain = max(self._longest_chain, self._chain)
        self.log.record(
            LambdaCall(
                action=action.identifier,
                function=self.functions.get(arn, arn),
                start=start,
                end=end,
                parameters=inputs,
                outcome=outcome,
                response=response,
                error=error,
            )
        )

    def _call(
        self, function: str, payload: bytes, deadline: float, response_type: str
    ) -> tuple[LambdaOutcome, dict[str, Any] | None, str | None]:
        retries = 0
        while True:
            attempt = _Attempt(self.lambda_client, function, payload)
            if not self._wait_for(attempt, deadline):
                return "timeout", None, f"no answer within {deadline:.1f} s of the call"
            if attempt.error is None or not attempt.retryable:
                break
            pause = _RETRY_BASE_S * 2**retries
            if self.clock.now() + pause >= deadline:
                break
            retries += 1
            self._wait_real(pause)
        if attempt.error is not None:
            return "error", None, f"{type(attempt.error).__name__}: {attempt.error}"
        raw = attempt.payload or b""
        if attempt.function_error is not None:
            return (
                "error",
                None,
                f"function error ({attempt.function_error}): {raw[:300].decode(errors='replace')}",
            )
        if len(raw) > MAX_RESPONSE_BYTES:
            return "invalid-response", None, f"response of {len(raw)} bytes is over Connect's 32 KB"
        try:
            answer = json.loads(raw)
        except ValueError:
            return "invalid-response", None, "response is not JSON"
        if not isinstance(answer, dict):
            return "invalid-response", None, f"response is a JSON {type(answer).__name__}, not an object"
        if response_type == "STRING_MAP" and not all(isinstance(value, str) for value in answer.values()):
            return "invalid-response", None, "response is not a flat map of strings (STRING_MAP)"
        return "ok", answer, None

    # -- prompts

    def _message(self, action: Action) -> _Branch:
        prompt = self._prompt(action)
        if prompt is None:
            raise FlowRuntimeError(f"action {action.identifier!r} has no prompt")
        self._play(action, prompt)
        return _Branch("next", action.next_action)

    def _get_input(self, action: Action) -> _Branch:
        """DTMF from the scripted caller (:mod:`~.keypad`): a menu's key, or keys kept in ``$.StoredCustomerInput``."""
        params = action.parameters
        prompt = self._prompt(action)
        if prompt is not None:
            self._play(action, prompt)
        keys = self._listen(self._seconds(action, "InputTimeLimitSeconds"), Press)
        if str(params.get("StoreInput", "False")) == "True":
            entry = stored_input(keys, params)
            if entry.value is None:
                raise _ActionFailed(entry.reason or "invalid input", self._error_type(action, entry.error))
            self.contact.stored_input = entry.value
            return _Branch("stored" if keys is not None else "stored Timeout", action.next_action)
        if keys is None:
            # No key before InputTimeLimitSeconds. Without an InputTimeLimitExceeded branch it takes NoMatchingError,
            # the branch for any error no other matches (GetParticipantInput's page of Connect's flow language
            # reference).
            raise _ActionFailed(
                "no input before InputTimeLimitSeconds", self._error_type(action, "InputTimeLimitExceeded")
            )
        return self._branch_on(action, menu_key(keys))

    def _branch_on(self, action: Action, value: str) -> _Branch:
        """The condition ``value`` equals (a key, an intent, a view's result); else NoMatchingCondition, or the
        catch-all NoMatchingError when the action has no branch for it."""
        target = action.condition_target(value)
        if target is None:
            raise _ActionFailed(f"{value!r} matches no condition", self._error_type(action, "NoMatchingCondition"))
        return _Branch(f"Equals {value}", target)

    @staticmethod
    def _error_type(action: Action, error: str | None) -> str:
        """``error`` when the action has a branch for it, else the catch-all ``NoMatchingError``."""
        return error if error is not None and action.error_target(error) is not None else "NoMatchingError"

    def _listen(self, limit_s: float, kind: type[Press] | type[Say] | tuple[type, ...]) -> str | None:
        """Give the caller its turn and wait up to ``limit_s`` for it to press keys or speak (``kind``): the keys or
        the words, once made; None when nothing of the kind came in time."""
        self.caller.bot_stopped(self.clock.now(), self.media)
        deadline = self.clock.now() + limit_s
        answer = self.caller.respond(kind, before=deadline)
        if answer is None:
            self._pass_time(deadline)
            return None
        step, _, end = answer
        self._pass_time(end)
        return step.digits if isinstance(step, Press) else step.clip.transcript

    def _prompt(self, action: Action) -> _Prompt | None:
        return self._prompt_of(action, action.parameters)

    def _prompt_of(self, action: Action, params: Mapping[str, Any]) -> _Prompt | None:
        if "PromptId" in params:
            # The local prompt library (--prompts): a WAV named by the prompt's ID (or the last part of its ARN);
            # a prompt not in it is its name spoken.
            prompt_id = self.contact.value(str(params["PromptId"]))
            name = prompt_id.rsplit("/", 1)[-1]
            if name in self.prompts:
                return _Prompt(self._library_prompt(self.prompts[name]), "prompt", uri=prompt_id)
            return _Prompt(self._speak(f"Prompt {name}."), "prompt", text=f"prompt {name}", uri=prompt_id)
        if "Media" in params:
            uri = self.contact.value(str(params["Media"]["Uri"]))
            return _Prompt(self._fetch_prompt(uri), "prompt", uri=uri)
        if "Text" in params:
            text = " ".join(self.contact.interpolate(str(params["Text"])).split())
            return _Prompt(self._speak(text), "connect-voice", text=text)
        if "SSML" in params:
            return self._speak_ssml(self.contact.interpolate(str(params["SSML"])))
        return None

    def _play(self, action: Action, prompt: _Prompt) -> None:
        segment = self.media.play(
            BOT, prompt.samples, prompt.kind, text=prompt.text, uri=prompt.uri, action=action.identifier
        )
        if prompt.kind != "hold" and segment.samples.size:
            self.caller.bot_started(segment.start, self.media)
        self._chain = 0.0
        self.media.pump()
        try:
            self._pass_time(segment.end)
        except _CallOver:
            self.media.cut(segment, self.clock.now())
            raise
        if prompt.kind != "hold" and segment.samples.size:
            self.caller.bot_stopped(segment.end, self.media)

    def _fetch_prompt(self, uri: str) -> npt.NDArray[np.int16]:
        bucket, key = _s3_location(uri)
        try:
            data = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except (BotoCoreError, ClientError) as exc:
            raise _ActionFailed(f"cannot fetch {uri}: {exc}") from exc
        try:
            _check_playable(data)
            samples, _ = read_wav(data)
        except AudioFormatError as exc:
            raise _ActionFailed(f"{uri} will not play: {exc}") from exc
        return samples

    @staticmethod
    def _library_prompt(path: Path) -> npt.NDArray[np.int16]:
        """A prompt of the local library: a WAV of 8 kHz mono (µ-law, as Connect plays prompts, or 16-bit PCM)."""
        try:
            return read_call_audio(path.read_bytes())
        except (OSError, AudioFormatError) as exc:
            raise _ActionFailed(f"prompt {path.name} will not play: {exc}") from exc

    def _speak(self, text: str) -> npt.NDArray[np.int16]:
        try:
            return self.voice.synthesize(text, SAMPLE_RATE, 1.0) if text else np.zeros(0, np.int16)
        except SpeechEngineError as exc:
            raise _ActionFailed(f"Connect's voice (stand-in) failed: {exc}") from exc

    def _speak_ssml(self, ssml: str) -> _Prompt:
        pieces: list[npt.NDArray[np.int16]] = []
        words: list[str] = []
        position = 0
        for match in _BREAK.finditer(ssml):
            words.append(_ssml_text(ssml[position : match.start()]))
            pieces.append(self._speak(words[-1]))
            pieces.append(np.zeros(round(_break_seconds(match.group(1)) * SAMPLE_RATE), np.int16))
            position = match.end()
        words.append(_ssml_text(ssml[position:]))
        pieces.append(self._speak(words[-1]))
        text = " ".join(word for word in words if word)
        samples = np.concatenate(pieces) if pieces else np.zeros(0, np.int16)
        return _Prompt(samples, "connect-voice" if text else "hold", text=text or None)

    # -- media streaming

    def _media_streaming(self, action: Action) -> _Branch:
        params = action.parameters
        directions = {d for p in params["Participants"] for d in p.get("MediaDirections", [])}
        if params["MediaStreamingState"] == "Enabled":
            if not self.media.streaming:
                self._start_streaming(customer="From" in directions, agent="To" in directions)
        elif self.media.streaming:
            self._stop_streaming(at=self.clock.now())
        return _Branch("next", action.next_action)

    def _start_streaming(self, *, customer: bool, agent: bool) -> None:
        try:
            if self._stream is None:
                arn = self.kvs.create_stream(f"connect-local-contact-{self.contact.contact_id}")
                self._stream = self.kvs.stream(arn)
            start = self._stream.begin_contact(self.contact.contact_id, EMULATED_INSTANCE_ID)
        except (KvsEmulatorError, ValueError) as exc:
            raise _ActionFailed(f"media streaming could not start: {exc}") from exc
        now = self.clock.now()
        self.media.start_streaming(self._stream, customer=customer, agent=agent)
        self._start_fragment = start.fragment_number
        # Connect's StartTimestamp is when the stream's audio began, on the stream's own (producer) clock,
        # not the simulator's: a PRODUCER_TIMESTAMP selector from it must find the first fragment.
        self.contact.audio_stream = {
            "StreamARN": self._stream.arn,
            "StartFragmentNumber": start.fragment_number,
            "StartTimestamp": start.start_timestamp,
        }
        self.log.record(StreamingChanged(now, True, self._stream.arn, start.fragment_number))

    def _stop_streaming(self, *, at: float) -> None:
        stream = self.media.stop_streaming()
        if stream is None:
            return
        if not stream.wait_idle(_STREAM_DRAIN_S):
            logger.warning("flow simulator: the KVS emulator did not finish the contact's last fragment")
        numbers = stream.fragment_numbers
        stop = numbers[-1] if numbers else self._start_fragment or ""
        self.contact.audio_stream = {
            **(self.contact.audio_stream or {}),
            "StopFragmentNumber": stop,
            "StopTimestamp": str(self._epoch_ms(at)),
        }
        self.log.record(StreamingChanged(at, False, stream.arn, stop))

    def _epoch_ms(self, moment: float) -> int:
        return round((self._epoch + moment) * 1000)

    # -- contact data and branching

    def _update_attributes(self, action: Action) -> _Branch:
        params = action.parameters
        if params.get("TargetContact", "Current") == "Related":
            # The related contact (a step-by-step guide's flow runs beside the call it guides) is not simulated:
            # what is set on it is recorded, and the call's own attributes stay as they are.
            return self._recorded(action)
        updated = {**self.contact.attributes}
        updated.update({name: self.contact.value(str(value)) for name, value in params["Attributes"].items()})
        size = sum(len(k.encode()) + len(v.encode()) for k, v in updated.items())
        if size > MAX_ATTRIBUTES_BYTES:
            raise _ActionFailed(f"contact attributes would take {size} bytes, over Connect's {MAX_ATTRIBUTES_BYTES}")
        self.contact.attributes = updated
        return _Branch("next", action.next_action)

    def _update_flow_attributes(self, action: Action) -> _Branch:
        """Flow attributes (``$.FlowAttributes``) live for the flow's run and never reach the contact's attributes."""
        for name, attribute in action.parameters["FlowAttributes"].items():
            self.contact.flow_attributes[name] = self.contact.value(str(attribute["Value"]))
        return _Branch("next", action.next_action)

    def _compare(self, action: Action) -> _Branch:
        value = self.contact.value(str(action.parameters["ComparisonValue"]))
        return self._first_condition(action, value)

    @staticmethod
    def _first_condition(action: Action, value: str) -> _Branch:
        """The first of ``action``'s conditions that ``value`` meets; else NoMatchingCondition (or NextAction)."""
        for condition in action.conditions:
            if _matches(condition.operator, value, condition.operands[0]):
                return _Branch(f"{condition.operator} {condition.operands[0]}", condition.next_action)
        target = action.error_target("NoMatchingCondition")
        return _Branch("NoMatchingCondition", target if target is not None else action.next_action)

    def _loop(self, action: Action) -> _Branch:
        raw = self.contact.value(str(action.parameters["LoopCount"]))
        try:
            count = int(raw)
        except ValueError:
            raise FlowRuntimeError(f"action {action.identifier!r}: LoopCount {raw!r} is not a number") from None
        done = self._loops.get(action.identifier, 0)
        if done < count:
            self._loops[action.identifier] = done + 1
            return _Branch("ContinueLooping", action.condition_target("ContinueLooping"))
        self._loops[action.identifier] = 0
        return _Branch("DoneLooping", action.condition_target("DoneLooping"))

    def _target_queue(self, action: Action) -> _Branch:
        params = action.parameters
        queue = self.contact.value(str(params.get("QueueId", params.get("AgentId", "")))).strip()
        if not queue:
            raise _ActionFailed("the working queue is empty")
        known = self.centre.queue(queue)
        self.contact.queue = queue
        self.contact.queue_name = None if known is None else known.name
        self.contact.queue_caller_id = None if known is None else known.outbound_caller_id
        return _Branch("next", action.next_action)

    def _transfer(self, action: Action) -> _Branch:
        if not self.contact.queue:
            raise _ActionFailed("no working queue is set (UpdateContactTargetQueue)")
        known = self.centre.queue(self.contact.queue)
        if known is not None and known.at_capacity:
            raise _ActionFailed(f"queue {known.name} is at capacity", self._error_type(action, "QueueAtCapacity"))
        raise _CallOver("transferred", self.contact.queue)

    def _disconnect(self, action: Action) -> _Branch:
        raise _CallOver("disconnected")

    # -- the contact centre's stand-ins (:mod:`voicebridge_dev.simulator.standins`)

    def _recorded(self, action: Action) -> _Branch:
        parameters = _resolved(action.parameters, self.contact.interpolate)
        self.log.record(Noted(self.clock.now(), action.identifier, action.type, {"parameters": parameters}))
        return _Branch("recorded", action.next_action)

    def _view(self, action: Action) -> _Branch:
        """A view in the agent's workspace: shown (in the report), answered by the caller script's choice for it,
        else left unanswered until its time limit, when it takes ``TimeLimitExceeded``."""
        params = action.parameters
        view = str((params.get("ViewResource") or {}).get("Id", ""))
        result = self.views.get(action.identifier, self.views.get(view))
        detail: dict[str, Any] = {
            "view": view,
            "data": _resolved(params.get("ViewData") or {}, self.contact.interpolate),
        }
        self.log.record(Noted(self.clock.now(), action.identifier, action.type, {**detail, "result": result}))
        if result is None:
            self._pass_time(self.clock.now() + self._seconds(action, "InvocationTimeLimitSeconds", "0"))
            raise _ActionFailed(f"view {view} was not answered", self._error_type(action, "TimeLimitExceeded"))
        return self._branch_on(action, result)

    # -- other flows: TransferToFlow and flow modules (:mod:`~.library`)

    def _transfer_to_flow(self, action: Action) -> _Branch:
        reference = self.contact.value(str(action.parameters["ContactFlowId"]))
        if self.library is None:
            raise _CallOver("transferred", f"flow {reference}")
        name, flow = self._find_flow(action, reference)
        # The contact goes on in the other flow: its attributes stay, the flow's own attributes do not.
        self._callers.clear()
        self.contact.flow_attributes = {}
        self._loops = {}
        return self._enter(action, name, flow, "transferred to")

    def _invoke_module(self, action: Action) -> _Branch:
        reference = self.contact.value(str(action.parameters["FlowModuleId"]))
        if self.library is None:
            return self._unavailable(action)
        name, module = self._find_flow(action, reference)
        self._callers.append((self.flow, self.flow_name, action, self.contact.flow_attributes, self._loops))
        self.contact.flow_attributes, self._loops = {}, {}
        return self._enter(action, name, module, "invoked module")

    def _end_module(self, action: Action) -> _Branch:
        if not self._callers:
            raise _CallOver("ended", action.type)
        result = self.contact.value(str(action.parameters.get("Result", "")))
        invoke = self._return_from_module()
        target = invoke.condition_target(result)
        if target is None:
            return _Branch("returned", invoke.next_action)
        return _Branch(f"returned {result}", target)

    def _find_flow(self, action: Action, reference: str) -> tuple[str, LoadedFlow]:
        """The flow ``reference`` names in the library, with its name (exported, else its file's)."""
        assert self.library is not None
        try:
            found = self.library.find(reference, names=display_names(self.flow, action.identifier))
        except (InvalidFlowError, FlowError, OSError) as exc:
            raise _ActionFailed(f"the flow {reference!r} names cannot run: {exc}") from exc
        if found is None:
            raise _ActionFailed(f"no flow {reference!r} in the flows folder")
        path, loaded = found
        return str(loaded.flow.metadata.get("name") or path.stem), loaded

    def _enter(self, action: Action, name: str, flow: LoadedFlow, how: str) -> _Branch:
        self.flow, self.flow_name = flow.flow, name
        self.functions = {**self.functions, **flow.functions}
        self.log.record(Noted(self.clock.now(), action.identifier, action.type, {how: name}))
        return _Branch(f"{how} {name}", flow.flow.start_action)

    def _return_from_module(self) -> Action:
        """Back in the flow that invoked the running module; the Invoke module action it returns to."""
        flow, name, invoke, attributes, loops = self._callers.pop()
        self.flow, self.flow_name = flow, name
        self.contact.flow_attributes, self._loops = attributes, loops
        return invoke

    # -- a Lex V2 bot (:mod:`~.lexbot`)

    def _lex_bot(self, action: Action) -> _Branch:
        params = action.parameters
        prompt = self._prompt(action)
        if prompt is not None:
            self._play(action, prompt)
        if "LexV2Bot" not in params:
            raise _ActionFailed("a Lex V1 bot (LexBot) is not in the local cloud")
        alias_arn = self.contact.value(str(params["LexV2Bot"].get("AliasArn", "")))
        bot = bot_of(alias_arn)
        if bot is None:
            raise _ActionFailed(f"LexV2Bot.AliasArn {alias_arn!r} is not a Lex V2 bot alias ARN")
        if self.lex is None:
            raise _ActionFailed("no Lex runtime in this simulation")
        attributes = {k: self.contact.value(str(v)) for k, v in (params.get("LexSessionAttributes") or {}).items()}
        state: dict[str, Any] = {"sessionAttributes": attributes}
        for turn in range(_LEX_TURNS):
            dialog = state.get("dialogAction") or {}
            intent = (state.get("intent") or {}).get("name")
            timeout = start_timeout_s(state.get("sessionAttributes") or attributes, intent, dialog.get("slotToElicit"))
            said = self._listen(timeout, (Say, Press))
            if said is None:
                raise _ActionFailed("the caller said nothing", self._error_type(action, "InputTimeLimitExceeded"))
            # The flow's session attributes go with the first turn; the bot's session keeps them, and its dialog,
            # after that (sending a sessionState again would replace the dialog's).
            answer = self._recognize(bot, said, attributes if turn == 0 else {})
            state = answer.get("sessionState") or {}
            self.contact.lex = lex_attributes(answer)
            words = message_text(answer)
            self.log.record(
                Noted(
                    self.clock.now(),
                    action.identifier,
                    action.type,
                    {
                        "said": said,
                        "intent": self.contact.lex["IntentName"],
                        "answer": words,
                        "dialog_action": (state.get("dialogAction") or {}).get("type"),
                    },
                )
            )
            if words:
                self._play(action, _Prompt(self._speak(words), "connect-voice", text=words))
            if closed(answer):
                return self._branch_on(action, str(self.contact.lex["IntentName"] or ""))
        raise _ActionFailed(f"the bot did not close an intent in {_LEX_TURNS} turns")

    def _recognize(self, bot: LexBotRef, text: str, attributes: Mapping[str, str]) -> dict[str, Any]:
        request: dict[str, Any] = {
            "botId": bot.bot_id,
            "botAliasId": bot.alias_id,
            "localeId": self.contact.language.replace("-", "_"),
            "sessionId": self.contact.contact_id,
            "text": text,
        }
        if attributes:
            request["sessionState"] = {"sessionAttributes": dict(attributes)}
        try:
            answer: dict[str, Any] = self.lex.recognize_text(**request)
        except (BotoCoreError, ClientError) as exc:
            raise _ActionFailed(f"Lex: {exc}") from exc
        return answer

    def _ends(self, action: Action) -> _Branch:
        params = action.parameters
        if action.type == "EndFlowExecution":
            raise _CallOver("ended", action.type)
        if action.type == "TransferParticipantToThirdParty":
            if str(params.get("ContinueFlowExecution", "")).lower() == "true":
                return _Branch("recorded", action.next_action)
            raise _CallOver(
                "transferred", self.contact.value(str(params.get("ThirdPartyPhoneNumber", "a third party")))
            )
        if action.type == "MessageParticipantIteratively":
            for message in params.get("Messages") or []:
                prompt = self._prompt_of(action, message)
                if prompt is not None:
                    self._play(action, prompt)
            raise _CallOver("transferred", "waiting in queue for an agent")
        target = params.get("QueueId") or params.get("AgentId") or self.contact.queue or "an agent"
        raise _CallOver("transferred", self.contact.value(str(target)))

    def _unavailable(self, action: Action) -> _Branch:
        errors = {branch.error_type: branch.next_action for branch in action.errors}
        error = unavailable_error(errors)
        if error is None:
            raise FlowRuntimeError(
                f"action {action.identifier!r} ({action.type}) needs a service the local cloud does not run"
            )
        raise _ActionFailed(f"{action.type} needs a service the local cloud does not run", error)

    def _hours(self, action: Action) -> _Branch:
        operand = "True" if self.centre.hours_open else "False"
        return _Branch(f"Equals {operand}", action.condition_target(operand))

    def _get_metrics(self, action: Action) -> _Branch:
        self.contact.metrics = self.centre.queue_metrics()
        return _Branch("next", action.next_action)

    def _check_metric(self, action: Action) -> _Branch:
        value = self.centre.metric(str(action.parameters["MetricType"]))
        return self._first_condition(action, value)

    def _distribute(self, action: Action) -> _Branch:
        draw = str(percentage_draw(self.contact.contact_id))
        return self._first_condition(action, draw)

    def _wait(self, action: Action) -> _Branch:
        name = "TimeLimitSeconds" if "TimeLimitSeconds" in action.parameters else "TimeoutSeconds"
        self._pass_time(self.clock.now() + self._seconds(action, name, "0"))
        return _Branch("WaitCompleted", action.condition_target("WaitCompleted") or action.next_action)


# --- helpers -----------------------------------------------------------------------------------------------

_LEX_TURNS = 20
"""Turns of one Lex conversation before the simulator gives up on the bot closing an intent."""


def _resolved(value: Any, resolve: Callable[[str], str]) -> Any:
    """``value`` with the references in each of its strings replaced by their values (what the report shows)."""
    if isinstance(value, str):
        return resolve(value)
    if isinstance(value, Mapping):
        return {key: _resolved(item, resolve) for key, item in value.items()}
    if isinstance(value, list):
        return [_resolved(item, resolve) for item in value]
    return value


_BREAK = re.compile(r"<break\b([^>]*?)/?>", re.IGNORECASE)
_BREAK_TIME = re.compile(r"""time\s*=\s*["']\s*([\d.]+)\s*(ms|s)\s*["']""", re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")


def _ssml_text(fragment: str) -> str:
    return " ".join(html.unescape(_TAG.sub(" ", fragment)).split())


def _break_seconds(attributes: str) -> float:
    match = _BREAK_TIME.search(attributes)
    if match is None:
        return _DEFAULT_BREAK_S
    value = float(match.group(1))
    return value / 1000 if match.group(2).lower() == "ms" else value


def _matches(operator: str, value: str, operand: str) -> bool:
    if operator == "Equals":
        return value == operand
    if operator == "TextStartsWith":
        return value.startswith(operand)
    if operator == "TextEndsWith":
        return value.endswith(operand)
    if operator == "TextContains":
        return operand in value
    try:
        left, right = float(value), float(operand)
    except ValueError:
        return False
    comparisons: dict[str, Callable[[float, float], bool]] = {
        "NumberGreaterThan": lambda a, b: a > b,
        "NumberGreaterOrEqualTo": lambda a, b: a >= b,
        "NumberLessThan": lambda a, b: a < b,
        "NumberLessOrEqualTo": lambda a, b: a <= b,
    }
    compare = comparisons.get(operator)
    return compare is not None and compare(left, right)


def _s3_location(uri: str) -> tuple[str, str]:
    """Bucket and key of a prompt URL, virtual-hosted (``https://b.s3.<region>.amazonaws.com/k``) or path."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    path = unquote(parts.path.lstrip("/"))
    if parts.scheme == "s3":
        return host, path
    if ".s3." in host or host.endswith(".s3.amazonaws.com"):
        return host.split(".s3.", 1)[0], path
    if host.startswith("s3.") or host == "s3.amazonaws.com":
        bucket, _, key = path.partition("/")
        return bucket, key
    raise _ActionFailed(f"{uri} is not an S3 object URL")


def _check_playable(data: bytes) -> None:
    """Connect plays 8 kHz mono µ-law WAVs only (docs/protocols.md, *Prompts played from S3*)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise AudioFormatError("not a RIFF/WAVE file")
    offset = 12
    while offset + 8 <= len(data):
        chunk, size = struct.unpack_from("<4sI", data, offset)
        if chunk == b"fmt " and offset + 16 <= len(data):
            tag, channels, rate = struct.unpack_from("<HHI", data, offset + 8)
            if (tag, channels, rate) != (_WAVE_FORMAT_MULAW, 1, SAMPLE_RATE):
                raise AudioFormatError(f"format {tag}, {channels} channel(s), {rate} Hz: not 8 kHz mono µ-law")
            return
        offset += 8 + size + (size & 1)
    raise AudioFormatError("no fmt chunk")


_CLIENTS_LOCK = threading.Lock()
"""boto3's default session is not safe to make clients from on several threads (calls placed at once)."""


_ENDPOINT_VARIABLES = {"lexv2-runtime": "AWS_ENDPOINT_URL_LEX_RUNTIME_V2"}
"""botocore's names for the endpoint variables of services whose ID is not their name."""


def _client(service: str, env: Mapping[str, str], **config: Any) -> Any:
    variable = _ENDPOINT_VARIABLES.get(service, f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_')}")
    endpoint = env.get(variable) or env.get("AWS_ENDPOINT_URL")
    if not endpoint:
        raise SimulatorError(f"{variable} is not set: the simulator runs on the local cloud")
    with _CLIENTS_LOCK:
        return boto3.client(
            service,
            endpoint_url=endpoint,
            region_name=env.get("AWS_DEFAULT_REGION", "us-east-1"),
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "testing"),
            config=Config(**config),
        )


def flow_library(
    folders: Sequence[str | Path],
    template_path: str | Path,
    *,
    region: str = "us-east-1",
    parameters: Mapping[str, str] | None = None,
    placeholders: Mapping[str, str] | None = None,
    templated: bool = False,
) -> FlowLibrary:
    """The flows of ``folders``, each loaded for simulation (:func:`load_flow_for_simulation`) when first reached."""
    load = functools.partial(
        load_flow_for_simulation,
        template_path=template_path,
        region=region,
        parameters=parameters,
        placeholders=placeholders,
        templated=templated,
    )
    return FlowLibrary(folders, load)


def simulate_call(
    flow_path: str | Path,
    *,
    template_path: str | Path,
    env: Mapping[str, str],
    kvs: KvsEmulator,
    voice: SpeechEngine,
    caller: SimulatedCaller,
    clock: Clock | None = None,
    log: CallLog | None = None,
    parameters: Mapping[str, str] | None = None,
    placeholders: Mapping[str, str] | None = None,
    centre: LocalContactCentre | None = None,
    local_answers: Mapping[str, Mapping[str, Any]] | None = None,
    max_actions: int = 1000,
    templated: bool = False,
    flows: Sequence[str | Path] | FlowLibrary = (),
    views: Mapping[str, str] | None = None,
    prompts: str | Path | None = None,
) -> CallResult:
    """One inbound call through ``flow_path`` on the local cloud whose endpoints ``env`` holds.

    ``centre`` is the contact centre's state the flow may ask about (hours, queue metrics); with ``local_answers``,
    a Lambda function that is not the template's answers from it, by ARN or name, or with ``{}``. ``flows`` are
    folders of flows the call may be transferred to or invoke as modules (:mod:`~.library`), or a library made
    once for many calls (:func:`flow_library`); ``views`` the result
    each view gives (by action identifier or view ID); ``prompts`` a folder of prompt WAVs named by prompt ID.
    Lex V2 bots are asked at ``AWS_ENDPOINT_URL_LEX_RUNTIME_V2`` when ``env`` has it.

    ``env`` is :meth:`LocalCloud.env` plus ``AWS_ENDPOINT_URL_LAMBDA`` (the Lambda emulator); ``kvs`` is the
    local cloud's KVS emulator, fed in-process. Once the call is over, what the product recorded of it in the
    template's turn table (``TurnTable``, when it declares one) is read back into :attr:`CallResult.records`.
    """
    region = env.get("AWS_DEFAULT_REGION", "us-east-1")
    loaded = load_flow_for_simulation(
        flow_path, template_path, region=region, parameters=parameters, placeholders=placeholders, templated=templated
    )
    # The flow enforces its own time limit; botocore must neither give up first nor retry behind its back.
    lambda_client = _client(
        "lambda",
        env,
        read_timeout=60,
        connect_timeout=5,
        retries={"total_max_attempts": 1},
        max_pool_connections=10,
    )
    s3 = _client("s3", env, retries={"total_max_attempts": 2})
    library = (
        flows
        if isinstance(flows, FlowLibrary)
        else flow_library(
            flows,
            template_path,
            region=region,
            parameters=parameters,
            placeholders=placeholders,
            templated=templated,
        )
        if flows
        else None
    )
    # A Lex client only where a Lex block may be reached: making one costs every call of a load run its time.
    may_meet_lex = library is not None or any(
        action.type == "ConnectParticipantWithLexBot" for action in loaded.flow.actions.values()
    )
    lex = (
        _client("lexv2-runtime", env, retries={"total_max_attempts": 2})
        if may_meet_lex and env.get("AWS_ENDPOINT_URL_LEX_RUNTIME_V2")
        else None
    )
    chosen_clock = clock if clock is not None else RealClock()
    simulator = FlowSimulator(
        loaded,
        lambda_client=lambda_client,
        s3_client=s3,
        kvs=kvs,
        voice=voice,
        caller=caller,
        clock=chosen_clock,
        contact=Contact(region=region),
        log=log,
        centre=centre,
        local_answers=local_answers,
        max_actions=max_actions,
        lex_client=lex,
        library=library,
        views=views,
        prompts=None if prompts is None else {p.stem: p for p in sorted(Path(prompts).glob("*.wav"))},
    )
    result = simulator.run()
    if "TurnTable" not in (load_template(template_path).get("Resources") or {}):
        return result
    dynamodb = _client("dynamodb", env, retries={"total_max_attempts": 3})
    records = read_records(dynamodb, local_physical_id("TurnTable"), result.contact_id, chosen_clock)
    return replace(result, records=records)
