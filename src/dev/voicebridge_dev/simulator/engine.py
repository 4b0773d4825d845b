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
- ``ConnectParticipantWithAgenticCX`` — a stand-in of the Agentic CX application that takes the caller's script to
  its ``Escalation`` condition or its default branch (:mod:`~.actions.participants`).
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

This module keeps the call's loop (:class:`FlowSimulator`) and the one dispatch table that registers each action
type's handler; the call's state and the helpers the actions share are :class:`~.call.Call`, below both this module
and the families of actions (:mod:`~voicebridge_dev.simulator.actions`), which never import the engine.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypedDict

import boto3
import numpy as np
import numpy.typing as npt
from botocore.config import Config

from voicebridge_dev.flows import (
    ACTION_TYPES,
    Action,
    Flow,
    InvalidFlowError,
    UnresolvedPlaceholderError,
    action_from_json,
    parse_flow,
    placeholder_key,
    render,
    template_functions,
    validate,
)
from voicebridge_dev.flows.rules import FLOW_FAMILIES, PLACEHOLDER
from voicebridge_dev.flows.validate import flow_family
from voicebridge_dev.local.kvs import StreamHost
from voicebridge_dev.local.speech_engine import SpeechEngine
from voicebridge_dev.simulator.actions import attributes, flows, lambda_, participants, prompts, queues, recorded
from voicebridge_dev.simulator.actions.lambda_ import CHAIN_BUDGET_S
from voicebridge_dev.simulator.call import AgentHandoff, Call, Handler
from voicebridge_dev.simulator.caller import SimulatedCaller
from voicebridge_dev.simulator.clock import Clock, RealClock
from voicebridge_dev.simulator.contact import Contact, local_queue_arn
from voicebridge_dev.simulator.events import (
    ActionRun,
    CallEnded,
    CallEvent,
    CallLog,
    EndReason,
    LambdaCall,
    Segment,
)
from voicebridge_dev.simulator.lexbot import LexBotRef
from voicebridge_dev.simulator.library import FlowLibrary
from voicebridge_dev.simulator.loaded import LoadedFlow
from voicebridge_dev.simulator.media import SAMPLE_RATE
from voicebridge_dev.simulator.outcomes import (
    ActionFailed,
    Branch,
    CallOver,
    FlowRuntimeError,
    SimulatorError,
    UnsupportedActionError,
)
from voicebridge_dev.simulator.records import CallRecords, next_sentence_stored, read_records
from voicebridge_dev.simulator.standins import ENDS, RECORDED, UNAVAILABLE, LocalContactCentre
from voicebridge_dev.template import Resolver, load_template, local_physical_id

if TYPE_CHECKING:
    # typing has Unpack from Python 3.12 on; only the type checker reads it here.
    from typing_extensions import Unpack

__all__ = [
    "CHAIN_BUDGET_S",
    "Call",
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


# --- loading -----------------------------------------------------------------------------------------------


class _LoadOptions(TypedDict, total=False):
    """How :func:`load_flow_for_simulation` fills and checks a flow, besides its template."""

    region: str
    parameters: Mapping[str, str] | None
    placeholders: Mapping[str, str] | None
    templated: bool


def load_flow_for_simulation(
    flow_path: str | Path,
    template_path: str | Path,
    *,
    region: str = "us-east-1",
    parameters: Mapping[str, str] | None = None,
    placeholders: Mapping[str, str] | None = None,
    templated: bool = False,
    flow_type: str | None = None,
) -> LoadedFlow:
    """Read a flow, fill its ``${X.Arn}``/``${X}`` placeholders for the local cloud, and check it (as a template whose
    tokens are filled before import, when ``templated``: see :func:`~voicebridge_dev.flows.validate`).

    ``parameters`` are template parameter values (else their defaults); a blank ``AgentQueueArn`` is the local
    instance's queue. ``placeholders`` adds or replaces values (``{"AgentQueueArn": "arn:…"}``). ``flow_type`` (a
    CreateContactFlow type, ``CUSTOMER_HOLD``) is the type of a flow that does not say its own. Actions of a type
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
    except UnresolvedPlaceholderError as exc:
        if templated:
            # A template's own tokens are filled before import: they stay as they are, references to nothing here.
            rendered = text
        elif set(exc.names) & _placeholders_outside_text(text):
            raise
        else:
            # Metadata and description text are text to Connect (and to the validator): a ${X} there stays as written.
            rendered = render(text, {**values, **{placeholder_key(name): "${" + name + "}" for name in exc.names}})
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
    family = flow_family(document) or FLOW_FAMILIES.get(flow_type or "")
    return LoadedFlow(flow, functions, family, templated)


_TEXT_KEYS = frozenset({"Metadata", "Name", "Description"})
"""Where a flow holds text rather than references: the designer's metadata, and names and descriptions."""


def _placeholders_outside_text(text: str) -> set[str]:
    """The ``${X}`` names a flow's JSON text holds outside its metadata and description text (all of them when the
    text is not JSON, so that the render's error stands)."""
    try:
        document = json.loads(text)
    except ValueError:
        return {match.group(1) for match in PLACEHOLDER.finditer(text)}
    found: set[str] = set()
    pending: list[Any] = [document]
    while pending:
        value = pending.pop()
        if isinstance(value, str) and value.lstrip().startswith("{"):
            # A DescribeContactFlow answer or a CreateContactFlow request holds the flow as its Content string.
            found |= _placeholders_outside_text(value)
        elif isinstance(value, str):
            found |= {match.group(1) for match in PLACEHOLDER.finditer(value)}
        elif isinstance(value, dict):
            pending += [item for key, item in value.items() if key not in _TEXT_KEYS]
        elif isinstance(value, list):
            pending += value
    return found


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


_HANDLERS: Final[Mapping[str, Handler]] = {
    "InvokeLambdaFunction": lambda_.invoke_lambda,
    "MessageParticipant": prompts.message,
    "GetParticipantInput": participants.get_input,
    "UpdateContactMediaStreamingBehavior": prompts.media_streaming,
    "UpdateContactAttributes": attributes.update_attributes,
    "Compare": attributes.compare,
    "Loop": attributes.loop,
    "UpdateFlowLoggingBehavior": attributes.next_action,
    "UpdateFlowAttributes": attributes.update_flow_attributes,
    "UpdateContactTargetQueue": queues.target_queue,
    "TransferContactToQueue": queues.transfer,
    "DisconnectParticipant": queues.disconnect,
    "CheckHoursOfOperation": queues.hours,
    "CheckMetricData": queues.check_metric,
    "GetMetricData": queues.get_metrics,
    "DistributeByPercentage": queues.distribute,
    "MessageParticipantIteratively": queues.queue_messages,
    "Wait": recorded.wait,
    **{kind: recorded.recorded for kind in RECORDED},
    **{kind: recorded.ends for kind in ENDS},
    **{kind: recorded.unavailable for kind in UNAVAILABLE},
    "ConnectParticipantWithLexBot": participants.lex_bot,
    "ConnectParticipantWithAgenticCX": participants.agentic_cx,
    "ShowView": participants.view,
    "TransferToFlow": flows.transfer_to_flow,
    "InvokeFlowModule": flows.invoke_module,
    "EndFlowModuleExecution": flows.end_module,
}
"""The simulator's registry: each action type it runs, and the handler of its family that runs it."""


class FlowSimulator(Call):
    """Runs one call through a flow on the local cloud (the module docstring lists what it supports)."""

    def run(self) -> CallResult:
        """Run the call to its end and return what happened."""
        self.media.start()
        reason: EndReason
        try:
            self._run_flow()
        except CallOver as over:
            reason, detail = over.reason, over.detail
        except SimulatorError as exc:
            reason, detail = "error", str(exc)
        else:
            reason, detail = "error", f"the flow ran {self.max_actions} actions without ending"
        end = self.clock.now()
        try:
            if self.media.streaming:
                self.stop_streaming(at=end)
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
            longest_lambda_chain=self.longest_chain,
        )

    def _run_flow(self) -> None:
        identifier = self.flow.start_action
        for _ in range(self.max_actions):
            now = self.clock.now()
            if self.caller.hung_up(now):
                raise CallOver("caller hung up")
            if now > self.max_call_s:
                raise FlowRuntimeError(f"the call ran longer than {self.max_call_s:.0f} s")
            action, where = self.flow.actions[identifier], self.flow_name
            handler = _HANDLERS.get(action.type)
            if handler is None:
                raise UnsupportedActionError(action)
            try:
                try:
                    branch = handler(self, action)
                except ActionFailed as failure:
                    branch = self._error(action, failure.error_type, str(failure))
                except CallOver as over:
                    self.log.record(ActionRun(now, action.identifier, action.type, over.reason, None, where))
                    raise
                self.log.record(
                    ActionRun(now, action.identifier, action.type, branch.outcome, branch.target, where, branch.why)
                )
                if branch.target is None:
                    raise FlowRuntimeError(f"action {action.identifier!r} took {branch.outcome}, which leads nowhere")
            except FlowRuntimeError as exc:
                # A module that fails returns to the flow that invoked it, by its Invoke module block's error branch.
                if not self.callers:
                    raise
                invoke = flows.return_from_module(self)
                branch = self._error(invoke, "NoMatchingError", f"the module failed: {exc}")
                at = self.clock.now()
                self.log.record(
                    ActionRun(
                        at, invoke.identifier, invoke.type, branch.outcome, branch.target, self.flow_name, branch.why
                    )
                )
            identifier = str(branch.target)

    def _error(self, action: Action, error_type: str, reason: str) -> Branch:
        target = action.error_target(error_type)
        if target is None:
            raise FlowRuntimeError(
                f"action {action.identifier!r} ({action.type}) failed: {reason}; it has no {error_type} branch"
            )
        logger.info("flow simulator: %s took %s: %s", action.identifier, error_type, reason)
        return Branch(error_type, target, reason)


_CLIENTS_LOCK = threading.Lock()
"""boto3's default session is not safe to make clients from on several threads (calls placed at once)."""


_ENDPOINT_VARIABLES = {"lexv2-runtime": "AWS_ENDPOINT_URL_LEX_RUNTIME_V2"}
"""botocore's names for the endpoint variables of services whose ID is not their name."""


def _client(service: str, env: Mapping[str, str], **config: Any) -> Any:
    variable = _ENDPOINT_VARIABLES.get(service, f"AWS_ENDPOINT_URL_{service.upper().replace('-', '_')}")
    endpoint = env.get(variable) or env.get("AWS_ENDPOINT_URL")
    if not endpoint:
        raise SimulatorError(f"{variable} is not set: the simulator runs on the local cloud")
    # The service is named at run time, and boto3's typed overloads know services only by literal name.
    make_client: Callable[..., Any] = boto3.client
    with _CLIENTS_LOCK:
        return make_client(
            service,
            endpoint_url=endpoint,
            region_name=env.get("AWS_DEFAULT_REGION", "us-east-1"),
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID", "testing"),
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY", "testing"),
            config=Config(**config),
        )


def flow_library(
    folders: Sequence[str | Path], template_path: str | Path, **options: Unpack[_LoadOptions]
) -> FlowLibrary:
    """The flows of ``folders``, each loaded for simulation (:func:`load_flow_for_simulation`, with ``options``)
    when first reached."""
    return FlowLibrary(folders, functools.partial(load_flow_for_simulation, template_path=template_path, **options))


def simulate_call(
    flow_path: str | Path,
    *,
    template_path: str | Path,
    env: Mapping[str, str],
    kvs: StreamHost,
    voice: SpeechEngine,
    caller: SimulatedCaller,
    clock: Clock | None = None,
    log: CallLog | None = None,
    parameters: Mapping[str, str] | None = None,
    placeholders: Mapping[str, str] | None = None,
    centre: LocalContactCentre | None = None,
    local_answers: Mapping[str, Mapping[str, Any]] | None = None,
    max_actions: int = 1000,
    max_call_s: float = 1800.0,
    templated: bool = False,
    flows: Sequence[str | Path] | FlowLibrary = (),
    views: Mapping[str, str] | None = None,
    prompts: str | Path | None = None,
    flow_type: str | None = None,
    lex_standin: LexBotRef | None = None,
    agent: AgentHandoff | None = None,
    attributes: Mapping[str, str] | None = None,
) -> CallResult:
    """One inbound call through ``flow_path`` on the local cloud whose endpoints ``env`` holds.

    ``max_call_s`` ends a call still going after that long on its clock as an error (Connect's own limit is far off).
    ``attributes`` are the contact's attributes as the call arrives (set by a flow before this one, such as a language
    menu's ``Language``).

    ``centre`` is the contact centre's state the flow may ask about (hours, queue metrics); with ``local_answers``,
    a Lambda function that is not the template's answers from it, by ARN or name, or with ``{}``. ``flows`` are
    folders of flows the call may be transferred to or invoke as modules (:mod:`~.library`), or a library made
    once for many calls (:func:`flow_library`); ``views`` the result
    each view gives (by action identifier or view ID); ``prompts`` a folder of prompt WAVs named by prompt ID;
    ``flow_type`` the type (``CUSTOMER_HOLD``…) of a flow that does not say its own; ``lex_standin`` the bot the Lex
    emulator serves, which a templated flow's bot alias token stands for; ``agent`` the external AI agent a Lex block
    hands the call to when its session attributes name an AI agent (``x-amz-lex:q-in-connect:ai-agent-arn``).
    Lex V2 bots are asked at ``AWS_ENDPOINT_URL_LEX_RUNTIME_V2`` when ``env`` has it.

    ``env`` is :meth:`LocalCloud.env` plus ``AWS_ENDPOINT_URL_LAMBDA`` (the Lambda emulator); ``kvs`` is the
    local cloud's KVS emulator, fed in-process. Once the call is over, what the product recorded of it in the
    template's turn table (``TurnTable``, when it declares one) is read back into :attr:`CallResult.records`.
    """
    region = env.get("AWS_DEFAULT_REGION", "us-east-1")
    options: _LoadOptions = {
        "region": region,
        "parameters": parameters,
        "placeholders": placeholders,
        "templated": templated,
    }
    # The type given is the flow's own; the flows it moves to say theirs, or are the library's to find.
    loaded = load_flow_for_simulation(flow_path, template_path, **options, flow_type=flow_type)
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
        flows if isinstance(flows, FlowLibrary) else flow_library(flows, template_path, **options) if flows else None
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
    table = "TurnTable" in (load_template(template_path).get("Resources") or {})
    dynamodb = _client("dynamodb", env, retries={"total_max_attempts": 3}) if table else None
    simulator = FlowSimulator(
        loaded,
        lambda_client=lambda_client,
        s3_client=s3,
        kvs=kvs,
        voice=voice,
        caller=caller,
        clock=chosen_clock,
        contact=Contact(region=region, attributes=dict(attributes or {})),
        log=log,
        centre=centre,
        local_answers=local_answers,
        max_actions=max_actions,
        max_call_s=max_call_s,
        lex_client=lex,
        lex_standin=lex_standin,
        agent=agent,
        library=library,
        views=views,
        prompts=None if prompts is None else {p.stem: p for p in sorted(Path(prompts).glob("*.wav"))},
        made_ahead=None if dynamodb is None else next_sentence_stored(dynamodb, local_physical_id("TurnTable")),
    )
    result = simulator.run()
    if dynamodb is None:
        return result
    records = read_records(dynamodb, local_physical_id("TurnTable"), result.contact_id, chosen_clock)
    return replace(result, records=records)
