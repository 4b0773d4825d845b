"""Amazon Connect flow language, version 2019-10-30: models, validation and rendering (PROTOCOLS.md §2).

A flow is one JSON document::

    {"Version": "2019-10-30", "StartAction": "<id>", "Metadata": {...},
     "Actions": [{"Identifier": "<id>", "Type": "<ActionType>", "Parameters": {...},
                  "Transitions": {"NextAction": "<id>",
                                  "Errors": [{"NextAction": "<id>", "ErrorType": "NoMatchingError"}],
                                  "Conditions": [{"NextAction": "<id>", "Condition":
                                                  {"Operator": "Equals", "Operands": ["OK"]}}]}}]}

The files under ``contact_flows/`` hold CloudFormation ``Fn::Sub`` placeholders where a deployment supplies a
value: ``${SynthesizeFunction.Arn}`` for a function of the template, ``${AgentQueueArn}`` for a template
parameter, ``${!X}`` for a literal ``${X}``. Connect's own references (``$.External.PromptUri``) carry no
braces and pass through ``Fn::Sub`` untouched.

:func:`validate` reports every problem it finds as a :class:`Problem`; :func:`parse_flow` turns a valid flow
into :class:`Flow`/:class:`Action` models. :func:`render` fills the placeholders for a console import, taking
values keyed as a stack's outputs are::

    ${X.Attr}  <-  values["XAttr"]   e.g. ${SynthesizeFunction.Arn} <- "SynthesizeFunctionArn"
    ${X}       <-  values["X"]       e.g. ${AgentQueueArn} <- "AgentQueueArn", ${AWS::Region} <- "AWS::Region"

    >>> render('{"LambdaFunctionARN": "${SynthesizeFunction.Arn}"}',
    ...        {"SynthesizeFunctionArn": "arn:aws:lambda:us-east-1:111111111111:function:synth"})
    '{"LambdaFunctionARN": "arn:aws:lambda:us-east-1:111111111111:function:synth"}'
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.exceptions import BotoCoreError, ClientError

from voicebridge_dev.template import TemplateError as LocalTemplateError
from voicebridge_dev.template import load_template

FLOW_LANGUAGE_VERSION = "2019-10-30"
MAX_ACTIONS = 250
MAX_CONTENT_CHARS = 256_000
MAX_IDENTIFIER_CHARS = 50
FORBIDDEN_IDENTIFIER_CHARS = frozenset("%:(\\/)=$,;[]{}")
RESERVED_IDENTIFIERS = frozenset(
    {
        "__proto__",
        "constructor",
        "__defineGetter__",
        "__defineSetter__",
        "toString",
        "hasOwnProperty",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toLocaleString",
        "valueOf",
    }
)
# Parentheses are forbidden in identifiers, so this label can never collide with a real action.
FLOW = "(flow)"

# Legacy export blocks and the flow-language action that replaced each.
_LEGACY_TYPES = {
    "PlayPrompt": "MessageParticipant",
    "InvokeExternalResource": "InvokeLambdaFunction",
    "StartMediaStreaming": "UpdateContactMediaStreamingBehavior",
    "StopMediaStreaming": "UpdateContactMediaStreamingBehavior",
    "SetAttributes": "UpdateContactAttributes",
    "CheckAttribute": "Compare",
    "GetUserInput": "GetParticipantInput",
    "SetQueue": "UpdateContactTargetQueue",
    "Transfer": "TransferContactToQueue",
    "SetLoggingBehavior": "UpdateFlowLoggingBehavior",
    "Disconnect": "DisconnectParticipant",
}

_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_SUB_NAME = re.compile(r"[A-Za-z0-9_]+(::[A-Za-z0-9_]+)?(\.[A-Za-z0-9_.]+)?")
_FUNCTION_ARN_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}")
_LAMBDA_ARN = re.compile(r"arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]+)?")
_QUEUE_ARN = re.compile(r"arn:aws[a-z-]*:connect:[a-z0-9-]+:\d{12}:instance/[0-9a-f-]+/(queue|agent)/[0-9a-f-]+")
_RESOURCE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_JSONPATH = re.compile(r"\$\.[A-Za-z0-9_.\[\]'\"-]+")
_PLACEHOLDER_ONLY = re.compile(r"\$\{[A-Za-z0-9_:.]+\}")

JsonObject = dict[str, Any]


class FlowError(Exception):
    """Base of the errors raised while reading, checking or rendering a flow."""


class InvalidFlowError(FlowError):
    """A flow failed validation; ``problems`` lists why."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = problems


class UnresolvedPlaceholderError(FlowError):
    """:func:`render` found placeholders with no value; ``names`` lists them as written (``X.Arn``)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__("unresolved placeholder(s): " + ", ".join("${" + n + "}" for n in names))
        self.names = names


class TemplateError(FlowError):
    """The SAM template could not be read as CloudFormation YAML."""


class StackOutputsError(FlowError):
    """The outputs of a CloudFormation stack could not be read."""


@dataclass(frozen=True)
class Problem:
    """One broken rule: ``action`` is the action's Identifier (or ``(flow)`` for the document itself)."""

    action: str
    reason: str

    def __str__(self) -> str:
        return f"{self.action}: {self.reason}"


@dataclass(frozen=True)
class ErrorBranch:
    error_type: str
    next_action: str


@dataclass(frozen=True)
class Condition:
    operator: str
    operands: tuple[str, ...]
    next_action: str


@dataclass(frozen=True)
class Action:
    identifier: str
    type: str
    parameters: Mapping[str, Any]
    next_action: str | None
    errors: tuple[ErrorBranch, ...] = ()
    conditions: tuple[Condition, ...] = ()

    def targets(self) -> list[str]:
        """Every action this one can hand over to, conditions first, without repeats."""
        found = [c.next_action for c in self.conditions]
        if self.next_action is not None:
            found.append(self.next_action)
        found.extend(e.next_action for e in self.errors)
        return list(dict.fromkeys(found))

    def error_target(self, error_type: str) -> str | None:
        return next((e.next_action for e in self.errors if e.error_type == error_type), None)

    def condition_target(self, operand: str, operator: str = "Equals") -> str | None:
        return next(
            (c.next_action for c in self.conditions if c.operator == operator and c.operands == (operand,)),
            None,
        )


@dataclass(frozen=True)
class Flow:
    start_action: str
    actions: Mapping[str, Action]
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __getitem__(self, identifier: str) -> Action:
        return self.actions[identifier]

    def of_type(self, action_type: str) -> list[Action]:
        return [a for a in self.actions.values() if a.type == action_type]


# --- action types -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Context:
    known_functions: set[str] | None
    known_names: set[str] | None


_Check = Callable[[Mapping[str, Any], _Context], list[str]]


@dataclass(frozen=True)
class _ActionSpec:
    parameters: frozenset[str]
    check: _Check
    errors: frozenset[str]
    conditions: bool = False
    terminal: bool = False


def _is_int_string(value: Any, low: int, high: int) -> bool:
    return isinstance(value, str) and value.isdigit() and low <= int(value) <= high


def _is_jsonpath(value: Any) -> bool:
    return isinstance(value, str) and _JSONPATH.fullmatch(value) is not None


def _require_string(params: Mapping[str, Any], name: str) -> list[str]:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        return [f"{name} must be a non-empty string"]
    return []


def _flat_string_map(value: Any, name: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{name} must be an object"]
    bad = [k for k, v in value.items() if not isinstance(v, str)]
    return [f"{name}.{k} must be a string (flat string map)" for k in bad]


def _check_lambda(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    reasons: list[str] = []
    arn = params.get("LambdaFunctionARN")
    match = _FUNCTION_ARN_PLACEHOLDER.fullmatch(arn) if isinstance(arn, str) else None
    if match is not None:
        name = match.group(1)
        if ctx.known_functions is not None and name not in ctx.known_functions:
            known = ", ".join(sorted(ctx.known_functions)) or "none"
            reasons.append(f"LambdaFunctionARN names {name}, not a function of the template (known: {known})")
    elif not (isinstance(arn, str) and _LAMBDA_ARN.fullmatch(arn)):
        reasons.append(
            f"LambdaFunctionARN {arn!r} is neither a ${{Function.Arn}} placeholder nor a Lambda function ARN"
        )
    invocation = params.get("InvocationType", "SYNCHRONOUS")
    if invocation not in ("SYNCHRONOUS", "ASYNCHRONOUS"):
        reasons.append(f"InvocationType must be SYNCHRONOUS or ASYNCHRONOUS, not {invocation!r}")
    # Connect waits at most 8 s for a synchronous call; an asynchronous one may run for up to 60 s.
    limit = 60 if invocation == "ASYNCHRONOUS" else 8
    if not _is_int_string(params.get("InvocationTimeLimitSeconds"), 1, limit):
        reasons.append(
            f"InvocationTimeLimitSeconds must be a string holding an integer 1–{limit}, "
            f"not {params.get('InvocationTimeLimitSeconds')!r}"
        )
    if "LambdaInvocationAttributes" in params:
        reasons += _flat_string_map(params["LambdaInvocationAttributes"], "LambdaInvocationAttributes")
    if "ResponseValidation" in params:
        validation = params["ResponseValidation"]
        if not isinstance(validation, dict) or validation.get("ResponseType") not in ("STRING_MAP", "JSON"):
            reasons.append("ResponseValidation.ResponseType must be STRING_MAP or JSON")
    return reasons


def _check_media(media: Any) -> list[str]:
    if not isinstance(media, dict):
        return ["Media must be an object {Uri, SourceType, MediaType}"]
    reasons = _require_string(media, "Uri")
    reasons = [f"Media.{r}" for r in reasons]
    if media.get("SourceType") != "S3":
        reasons.append(f"Media.SourceType must be S3, not {media.get('SourceType')!r}")
    if media.get("MediaType") != "Audio":
        reasons.append(f"Media.MediaType must be Audio, not {media.get('MediaType')!r}")
    return reasons


_PROMPT_KINDS = ("Text", "SSML", "PromptId", "Media")


def _check_prompt_kinds(params: Mapping[str, Any], *, required: bool) -> list[str]:
    given = [k for k in _PROMPT_KINDS if k in params]
    if len(given) > 1:
        return [f"exactly one of Text, SSML, PromptId, Media is allowed, found {', '.join(given)}"]
    if not given:
        return ["exactly one of Text, SSML, PromptId, Media is required"] if required else []
    kind = given[0]
    if kind == "Media":
        return _check_media(params["Media"])
    return _require_string(params, kind)


def _check_message(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    return _check_prompt_kinds(params, required=True)


def _check_get_input(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    reasons = _check_prompt_kinds(params, required=False)
    if params.get("StoreInput") not in ("True", "False"):
        reasons.append('StoreInput must be "True" or "False"')
    if not _is_int_string(params.get("InputTimeLimitSeconds"), 1, 180):
        reasons.append("InputTimeLimitSeconds must be a string holding an integer 1–180")
    return reasons


def _check_streaming(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    reasons: list[str] = []
    if params.get("MediaStreamingState") not in ("Enabled", "Disabled"):
        reasons.append(f"MediaStreamingState must be Enabled or Disabled, not {params.get('MediaStreamingState')!r}")
    if params.get("MediaStreamType") != "Audio":
        reasons.append(f"MediaStreamType must be Audio, not {params.get('MediaStreamType')!r}")
    participants = params.get("Participants")
    if not isinstance(participants, list) or not participants:
        return [*reasons, "Participants must be a non-empty list"]
    for participant in participants:
        if not isinstance(participant, dict) or participant.get("ParticipantType") != "Customer":
            reasons.append("each participant must have ParticipantType Customer")
            continue
        directions = participant.get("MediaDirections")
        if (
            not isinstance(directions, list)
            or not directions
            or not set(directions) <= {"From", "To"}
            or len(set(directions)) != len(directions)
        ):
            reasons.append("MediaDirections must be a non-empty list of distinct From/To")
    return reasons


def _check_attributes(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    attributes = params.get("Attributes")
    reasons = _flat_string_map(attributes, "Attributes")
    if isinstance(attributes, dict) and not attributes:
        reasons.append("Attributes must set at least one attribute")
    if params.get("TargetContact", "Current") not in ("Current", "Related"):
        reasons.append("TargetContact must be Current or Related")
    return reasons


def _check_compare(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    if not _is_jsonpath(params.get("ComparisonValue")):
        return [f"ComparisonValue must be a single JSONPath ($.…), not {params.get('ComparisonValue')!r}"]
    return []


def _check_loop(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    count = params.get("LoopCount")
    if _is_jsonpath(count) or _is_int_string(count, 0, 100):
        return []
    return [f"LoopCount must be a string holding an integer 0–100 (or one JSONPath), not {count!r}"]


def _check_logging(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    if params.get("FlowLoggingBehavior") not in ("Enabled", "Disabled"):
        return ["FlowLoggingBehavior must be Enabled or Disabled"]
    return []


def _check_target_queue(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    given = [k for k in ("QueueId", "AgentId") if k in params]
    if len(given) != 1:
        return ["exactly one of QueueId and AgentId is required"]
    value = params[given[0]]
    if not isinstance(value, str) or not (
        _PLACEHOLDER_ONLY.fullmatch(value)
        or _QUEUE_ARN.fullmatch(value)
        or _RESOURCE_ID.fullmatch(value)
        or _is_jsonpath(value)
    ):
        return [f"{given[0]} must be an ID, an ARN, a single JSONPath or a ${{Name}} placeholder, not {value!r}"]
    return []


def _check_nothing(params: Mapping[str, Any], ctx: _Context) -> list[str]:
    return []


_NO_MATCH = frozenset({"NoMatchingError"})

ACTION_TYPES: Mapping[str, _ActionSpec] = {
    "InvokeLambdaFunction": _ActionSpec(
        frozenset(
            {
                "LambdaFunctionARN",
                "InvocationTimeLimitSeconds",
                "InvocationType",
                "LambdaInvocationAttributes",
                "ResponseValidation",
            }
        ),
        _check_lambda,
        _NO_MATCH,
    ),
    "UpdateContactMediaStreamingBehavior": _ActionSpec(
        frozenset({"MediaStreamingState", "MediaStreamType", "Participants"}), _check_streaming, _NO_MATCH
    ),
    "MessageParticipant": _ActionSpec(frozenset(_PROMPT_KINDS), _check_message, _NO_MATCH),
    "UpdateContactAttributes": _ActionSpec(frozenset({"Attributes", "TargetContact"}), _check_attributes, _NO_MATCH),
    "Compare": _ActionSpec(
        frozenset({"ComparisonValue"}), _check_compare, frozenset({"NoMatchingCondition"}), conditions=True
    ),
    "Loop": _ActionSpec(frozenset({"LoopCount"}), _check_loop, frozenset(), conditions=True),
    "GetParticipantInput": _ActionSpec(
        frozenset(
            {
                *_PROMPT_KINDS,
                "StoreInput",
                "InputTimeLimitSeconds",
                "InputValidation",
                "InputEncryption",
                "DTMFConfiguration",
            }
        ),
        _check_get_input,
        frozenset({"InputTimeLimitExceeded", "NoMatchingCondition", "NoMatchingError", "InvalidPhoneNumber"}),
        conditions=True,
    ),
    "DisconnectParticipant": _ActionSpec(frozenset(), _check_nothing, frozenset(), terminal=True),
    "UpdateFlowLoggingBehavior": _ActionSpec(frozenset({"FlowLoggingBehavior"}), _check_logging, frozenset()),
    "UpdateContactTargetQueue": _ActionSpec(frozenset({"QueueId", "AgentId"}), _check_target_queue, _NO_MATCH),
    "TransferContactToQueue": _ActionSpec(
        frozenset(), _check_nothing, frozenset({"QueueAtCapacity", "NoMatchingError"})
    ),
}

_LOOP_RESULTS = ("ContinueLooping", "DoneLooping")
_COMPARE_OPERATORS = frozenset(
    {
        "Equals",
        "NumberGreaterThan",
        "NumberGreaterOrEqualTo",
        "NumberLessThan",
        "NumberLessOrEqualTo",
        "TextStartsWith",
        "TextEndsWith",
        "TextContains",
    }
)


# --- validation ---------------------------------------------------------------------------------------------


def validate(
    flow: Mapping[str, Any] | str,
    *,
    known_functions: set[str] | None = None,
    known_names: set[str] | None = None,
) -> list[Problem]:
    """Every rule of the flow language that ``flow`` (a parsed document or its JSON text) breaks.

    ``known_functions`` are the template's function logical IDs that ``${X.Arn}`` may name; ``known_names``
    are the parameters and resources that a bare ``${X}`` may name. ``None`` skips the corresponding check
    (the placeholder's form is still checked). An empty list means the flow is valid.

        >>> validate({"Version": "2019-10-30", "StartAction": "Bye", "Actions": [
        ...     {"Identifier": "Bye", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}}]})
        []
    """
    if isinstance(flow, str):
        try:
            document = json.loads(flow)
        except json.JSONDecodeError as exc:
            return [Problem(FLOW, f"not valid JSON: {exc}")]
    else:
        document = flow
    if not isinstance(document, dict):
        return [Problem(FLOW, "a flow must be a JSON object")]
    legacy = _legacy_reason(document)
    if legacy is not None:
        return [Problem(FLOW, legacy)]

    problems: list[Problem] = []
    if document.get("Version") != FLOW_LANGUAGE_VERSION:
        problems.append(Problem(FLOW, f"Version must be {FLOW_LANGUAGE_VERSION!r}, not {document.get('Version')!r}"))
    raw_actions = document.get("Actions")
    if not isinstance(raw_actions, list) or not raw_actions:
        return [*problems, Problem(FLOW, "Actions must be a non-empty list")]
    if len(raw_actions) > MAX_ACTIONS:
        problems.append(Problem(FLOW, f"{len(raw_actions)} actions, more than the {MAX_ACTIONS} allowed"))
    content_chars = len(json.dumps(document, separators=(",", ":"), ensure_ascii=False))
    if content_chars > MAX_CONTENT_CHARS:
        problems.append(
            Problem(FLOW, f"Content is {content_chars} characters, more than the {MAX_CONTENT_CHARS} allowed")
        )

    ctx = _Context(known_functions, known_names)
    actions: dict[str, JsonObject] = {}
    for index, raw in enumerate(raw_actions):
        label, identifier_problems = _check_identifier(raw, index, actions)
        problems += identifier_problems
        if label in actions or not isinstance(raw, dict):
            continue
        actions[label] = raw
        problems += [Problem(label, reason) for reason in _check_action(raw, ctx)]

    start = document.get("StartAction")
    if not isinstance(start, str) or start not in actions:
        problems.append(Problem(FLOW, f"StartAction {start!r} is not the Identifier of an action"))
    problems += _check_targets(actions)
    if isinstance(start, str) and start in actions:
        reachable = _reachable(start, actions)
        problems += [Problem(a, "unreachable from StartAction") for a in actions if a not in reachable]
    problems += _check_metadata(document.get("Metadata"), actions)
    return problems


def _legacy_reason(document: Mapping[str, Any]) -> str | None:
    if "modules" in document:
        return (
            'legacy export format ("modules") is obsolete: export the flow in the flow language '
            f"(Version {FLOW_LANGUAGE_VERSION}, StartAction, Actions)"
        )
    actions = document.get("Actions")
    if isinstance(actions, list):
        for raw in actions:
            kind = raw.get("Type") if isinstance(raw, dict) else None
            if isinstance(kind, str) and kind in _LEGACY_TYPES:
                return (
                    f"legacy block type {kind} is obsolete: the flow language uses {_LEGACY_TYPES[kind]} "
                    f"(Version {FLOW_LANGUAGE_VERSION})"
                )
    return None


def _check_identifier(raw: Any, index: int, seen: Mapping[str, Any]) -> tuple[str, list[Problem]]:
    where = f"Actions[{index}]"
    if not isinstance(raw, dict):
        return where, [Problem(where, "an action must be a JSON object")]
    identifier = raw.get("Identifier")
    if not isinstance(identifier, str) or not identifier:
        return where, [Problem(where, "Identifier must be a non-empty string")]
    problems: list[Problem] = []
    if len(identifier) > MAX_IDENTIFIER_CHARS:
        problems.append(Problem(identifier, f"Identifier is longer than {MAX_IDENTIFIER_CHARS} characters"))
    bad = sorted(set(identifier) & FORBIDDEN_IDENTIFIER_CHARS)
    if bad:
        problems.append(Problem(identifier, f"Identifier contains forbidden character(s) {' '.join(bad)}"))
    if identifier in RESERVED_IDENTIFIERS:
        problems.append(Problem(identifier, "Identifier is a reserved word"))
    if identifier in seen:
        problems.append(Problem(identifier, f"Identifier is used by more than one action ({where} repeats it)"))
    return identifier, problems


def _check_action(raw: JsonObject, ctx: _Context) -> list[str]:
    kind = raw.get("Type")
    if not isinstance(kind, str) or kind not in ACTION_TYPES:
        return [f"unknown action Type {kind!r}"]
    spec = ACTION_TYPES[kind]
    params = raw.get("Parameters", {})
    if not isinstance(params, dict):
        return ["Parameters must be an object"]
    reasons = [f"{kind} takes no parameter {name}" for name in params if name not in spec.parameters]
    reasons += spec.check(params, ctx)
    # The Lambda check already names an unknown function; checking the placeholder again would say it twice.
    reasons += _check_placeholders({k: v for k, v in params.items() if k != "LambdaFunctionARN"}, ctx)
    reasons += _check_transitions(kind, spec, raw.get("Transitions"))
    return reasons


def _check_transitions(kind: str, spec: _ActionSpec, transitions: Any) -> list[str]:
    if not isinstance(transitions, dict):
        return ["Transitions must be an object"]
    if spec.terminal:
        return [] if transitions == {} else [f"{kind} ends the flow: its Transitions must be empty ({{}})"]
    reasons: list[str] = []
    if not isinstance(transitions.get("NextAction"), str):
        reasons.append("Transitions.NextAction is required")
    errors = transitions.get("Errors", [])
    if not isinstance(errors, list):
        errors = []
        reasons.append("Transitions.Errors must be a list")
    seen_errors: set[str] = set()
    for branch in errors:
        error_type = branch.get("ErrorType") if isinstance(branch, dict) else None
        if not isinstance(branch, dict) or not isinstance(branch.get("NextAction"), str):
            reasons.append("each error branch needs ErrorType and NextAction")
        elif error_type not in spec.errors:
            allowed = ", ".join(sorted(spec.errors)) or "none"
            reasons.append(f"{kind} has no error {error_type!r} (allowed: {allowed})")
        elif error_type in seen_errors:
            reasons.append(f"error {error_type} is handled twice")
        if isinstance(error_type, str):
            seen_errors.add(error_type)
    conditions = transitions.get("Conditions", [])
    if not isinstance(conditions, list):
        return [*reasons, "Transitions.Conditions must be a list"]
    if conditions and not spec.conditions:
        reasons.append(f"{kind} supports no Conditions")
        return reasons
    operands: list[str] = []
    for branch in conditions:
        condition = branch.get("Condition") if isinstance(branch, dict) else None
        if (
            not isinstance(branch, dict)
            or not isinstance(branch.get("NextAction"), str)
            or not isinstance(condition, dict)
            or not isinstance(condition.get("Operands"), list)
            or len(condition["Operands"]) != 1
            or not isinstance(condition["Operands"][0], str)
        ):
            reasons.append("each condition needs NextAction and Condition {Operator, Operands: [one string]}")
            continue
        if condition.get("Operator") not in _COMPARE_OPERATORS:
            reasons.append(f"unknown condition Operator {condition.get('Operator')!r}")
        operands.append(condition["Operands"][0])
    if kind == "Loop":
        reasons += _check_loop_conditions(operands)
    return reasons


def _check_loop_conditions(operands: list[str]) -> list[str]:
    reasons = [f"Loop needs a condition Equals {r}" for r in _LOOP_RESULTS if r not in operands]
    extra = [o for o in operands if o not in _LOOP_RESULTS]
    if extra or len(operands) != len(set(operands)):
        reasons.append("Loop allows only one ContinueLooping and one DoneLooping condition")
    return reasons


def _check_placeholders(value: Any, ctx: _Context) -> list[str]:
    reasons: list[str] = []
    for text in _strings(value):
        for match in _PLACEHOLDER.finditer(text):
            name = match.group(1)
            if name.startswith("!"):
                continue
            if not _SUB_NAME.fullmatch(name):
                reasons.append(f"malformed placeholder ${{{name}}}")
                continue
            base, _, attribute = name.partition(".")
            if attribute == "Arn" and ctx.known_functions is not None and base in ctx.known_functions:
                continue
            if base.startswith("AWS::") or ctx.known_names is None or base in ctx.known_names:
                continue
            reasons.append(f"placeholder ${{{name}}} names nothing the template declares")
        unterminated = text.count("${") - len(_PLACEHOLDER.findall(text))
        if unterminated > 0:
            reasons.append(f"unterminated placeholder in {text!r}")
    return reasons


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _raw_targets(raw: JsonObject) -> list[str]:
    transitions = raw.get("Transitions")
    if not isinstance(transitions, dict):
        return []
    found: list[str] = []
    if isinstance(transitions.get("NextAction"), str):
        found.append(transitions["NextAction"])
    for key in ("Errors", "Conditions"):
        branches = transitions.get(key)
        if isinstance(branches, list):
            found += [b["NextAction"] for b in branches if isinstance(b, dict) and isinstance(b.get("NextAction"), str)]
    return found


def _check_targets(actions: Mapping[str, JsonObject]) -> list[Problem]:
    return [
        Problem(identifier, f"transition to {target!r}, which is not an action")
        for identifier, raw in actions.items()
        for target in dict.fromkeys(_raw_targets(raw))
        if target not in actions
    ]


def _reachable(start: str, actions: Mapping[str, JsonObject]) -> set[str]:
    seen = {start}
    pending = [start]
    while pending:
        for target in _raw_targets(actions[pending.pop()]):
            if target in actions and target not in seen:
                seen.add(target)
                pending.append(target)
    return seen


def _check_metadata(metadata: Any, actions: Mapping[str, JsonObject]) -> list[Problem]:
    if metadata is None:
        return []
    if not isinstance(metadata, dict):
        return [Problem(FLOW, "Metadata must be an object")]
    positions = metadata.get("ActionMetadata", {})
    if not isinstance(positions, dict):
        return [Problem(FLOW, "Metadata.ActionMetadata must be an object")]
    return [
        Problem(FLOW, f"Metadata.ActionMetadata describes {name!r}, which is not an action")
        for name in positions
        if name not in actions
    ]


# --- models -------------------------------------------------------------------------------------------------


def parse_flow(
    flow: Mapping[str, Any] | str,
    *,
    known_functions: set[str] | None = None,
    known_names: set[str] | None = None,
) -> Flow:
    """The :class:`Flow` model of a valid flow; raises :class:`InvalidFlowError` listing its problems."""
    problems = validate(flow, known_functions=known_functions, known_names=known_names)
    if problems:
        raise InvalidFlowError(problems)
    document = json.loads(flow) if isinstance(flow, str) else flow
    actions = {raw["Identifier"]: action_from_json(raw) for raw in document["Actions"]}
    return Flow(start_action=document["StartAction"], actions=actions, metadata=document.get("Metadata", {}))


def action_from_json(raw: Mapping[str, Any]) -> Action:
    """The model of one action of a validated flow."""
    transitions = raw["Transitions"]
    return Action(
        identifier=raw["Identifier"],
        type=raw["Type"],
        parameters=raw.get("Parameters", {}),
        next_action=transitions.get("NextAction"),
        errors=tuple(ErrorBranch(e["ErrorType"], e["NextAction"]) for e in transitions.get("Errors", [])),
        conditions=tuple(
            Condition(c["Condition"]["Operator"], tuple(c["Condition"]["Operands"]), c["NextAction"])
            for c in transitions.get("Conditions", [])
        ),
    )


def load_flow(
    path: str | Path,
    *,
    known_functions: set[str] | None = None,
    known_names: set[str] | None = None,
) -> Flow:
    """Read and parse a flow file (see :func:`parse_flow`)."""
    text = Path(path).read_text(encoding="utf-8")
    return parse_flow(text, known_functions=known_functions, known_names=known_names)


# --- rendering ----------------------------------------------------------------------------------------------


def placeholder_key(name: str) -> str:
    """The stack-output key that fills ``${name}``: ``SynthesizeFunction.Arn`` → ``SynthesizeFunctionArn``."""
    return name.replace(".", "")


def render(flow_text: str, values: Mapping[str, str]) -> str:
    """``flow_text`` with each ``${X.Attr}``/``${X}`` filled from ``values`` (see :func:`placeholder_key`).

    A value keyed by the placeholder as written (``"SynthesizeFunction.Arn"``) is taken too. Values are
    JSON-escaped, since every placeholder sits inside a JSON string; ``${!X}`` becomes a literal ``${X}`` as
    in ``Fn::Sub``. Raises :class:`UnresolvedPlaceholderError` naming every placeholder left
    without a value.
    """
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("!"):
            return "${" + name[1:] + "}"
        value = values.get(placeholder_key(name), values.get(name))
        if value is None:
            missing.append(name)
            return match.group(0)
        return json.dumps(value)[1:-1]

    rendered = _PLACEHOLDER.sub(fill, flow_text)
    if missing:
        raise UnresolvedPlaceholderError(list(dict.fromkeys(missing)))
    return rendered


def stack_outputs(stack_name: str, client: Any = None) -> dict[str, str]:
    """The outputs of a deployed stack keyed by OutputKey, plus the ``AWS::Region``/``AWS::AccountId``/
    ``AWS::StackName`` pseudo parameters read from its StackId."""
    cloudformation = client if client is not None else boto3.client("cloudformation")
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except (BotoCoreError, ClientError) as exc:
        raise StackOutputsError(f"cannot read stack {stack_name}: {exc}") from exc
    if not stacks:
        raise StackOutputsError(f"stack {stack_name} not found")
    stack = stacks[0]
    values = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    # arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid>
    arn_parts = stack["StackId"].split(":")
    values.setdefault("AWS::Region", arn_parts[3])
    values.setdefault("AWS::AccountId", arn_parts[4])
    values.setdefault("AWS::StackName", stack["StackName"])
    return values


# --- the SAM template ---------------------------------------------------------------------------------------


def _template_resources(template_path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        document = load_template(template_path)
    except (yaml.YAMLError, LocalTemplateError) as exc:
        raise TemplateError(f"{template_path}: not a CloudFormation template: {exc}") from exc
    resources = document.get("Resources") or {}
    parameters = document.get("Parameters") or {}
    if not isinstance(resources, dict) or not isinstance(parameters, dict):
        raise TemplateError(f"{template_path}: Resources and Parameters must be mappings")
    return resources, parameters


def template_functions(template_path: str | Path) -> set[str]:
    """Logical IDs of the template's ``AWS::Serverless::Function`` and ``AWS::Lambda::Function`` resources."""
    resources, _ = _template_resources(template_path)
    return {
        name
        for name, resource in resources.items()
        if isinstance(resource, dict) and resource.get("Type") in ("AWS::Serverless::Function", "AWS::Lambda::Function")
    }


def template_names(template_path: str | Path) -> set[str]:
    """Everything a bare ``${X}`` may name in the template's ``Fn::Sub``: its parameters and resources."""
    resources, parameters = _template_resources(template_path)
    return set(resources) | set(parameters)


# --- command line -------------------------------------------------------------------------------------------


def cli_validate(paths: list[str], template: str = "template.yaml") -> int:
    """``voicebridge flows validate [PATH…]``: print each problem as ``file: action: reason``.

    With no paths, validates ``contact_flows/*.json`` beside the template. Returns the exit status: 0 when
    every flow is valid, 1 otherwise.
    """
    template_path = Path(template)
    known_functions: set[str] | None = None
    known_names: set[str] | None = None
    if template_path.is_file():
        try:
            known_functions = template_functions(template_path)
            known_names = template_names(template_path)
        except TemplateError as exc:
            print(f"{template_path}: {exc}", file=sys.stderr)
            return 1
    else:
        print(f"{template_path}: not found; placeholders are checked for form only", file=sys.stderr)
    files = [Path(p) for p in paths] or sorted((template_path.parent / "contact_flows").glob("*.json"))
    if not files:
        print("no flow files to validate", file=sys.stderr)
        return 1
    failed = False
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            problems = [Problem(FLOW, f"cannot read: {exc.strerror or exc}")]
        else:
            problems = validate(text, known_functions=known_functions, known_names=known_names)
        for problem in problems:
            print(f"{path}: {problem}")
        failed = failed or bool(problems)
    return 1 if failed else 0


def cli_render(
    path: str | Path,
    outputs: Mapping[str, str] | str,
    *,
    overrides: Mapping[str, str] | None = None,
) -> str:
    """``voicebridge flows render PATH --stack NAME``: the flow, placeholders filled, for a console import.

    ``outputs`` is either a stack name (its outputs are read with :func:`stack_outputs`) or the values
    themselves; ``overrides`` adds or replaces values (e.g. ``{"AgentQueueArn": "arn:…"}``). Raises
    :class:`UnresolvedPlaceholderError` when a placeholder has no value and :class:`InvalidFlowError` when the
    rendered flow is not valid.
    """
    values = dict(stack_outputs(outputs) if isinstance(outputs, str) else outputs)
    values.update(overrides or {})
    rendered = render(Path(path).read_text(encoding="utf-8"), values)
    problems = validate(rendered)
    if problems:
        raise InvalidFlowError(problems)
    return rendered
