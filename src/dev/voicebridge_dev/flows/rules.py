"""What Amazon Connect accepts in a flow (PROTOCOLS.md §2): limits, identifiers, and per action type its
parameters, error types and conditions.

:data:`ACTION_TYPES` maps each action type to its :class:`ActionSpec`; a spec's ``check`` returns why the
parameters are wrong, one reason a string, none when they are right::

    >>> ACTION_TYPES["Loop"].check({"LoopCount": "101"}, CheckContext(known_functions=None, known_names=None))
    ["LoopCount must be a string holding an integer 0–100 (or one JSONPath), not '101'"]

It also holds the ``Fn::Sub`` placeholder syntax (:data:`PLACEHOLDER`) that validation and rendering share.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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

# Legacy export blocks and the flow-language action that replaced each.
LEGACY_TYPES = {
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

PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")
_FUNCTION_ARN_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\.Arn\}")
_LAMBDA_ARN = re.compile(r"arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]+)?")
_QUEUE_ARN = re.compile(r"arn:aws[a-z-]*:connect:[a-z0-9-]+:\d{12}:instance/[0-9a-f-]+/(queue|agent)/[0-9a-f-]+")
_RESOURCE_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_JSONPATH = re.compile(r"\$\.[A-Za-z0-9_.\[\]'\"-]+")
_PLACEHOLDER_ONLY = re.compile(r"\$\{[A-Za-z0-9_:.]+\}")


@dataclass(frozen=True)
class CheckContext:
    """What the template declares: function logical IDs (``${X.Arn}``) and all names (``${X}``); ``None`` is
    unknown, and skips the check."""

    known_functions: set[str] | None
    known_names: set[str] | None


_Check = Callable[[Mapping[str, Any], CheckContext], list[str]]


@dataclass(frozen=True)
class ActionSpec:
    """One action type: the parameters it takes and their check, the error types it can branch on, whether it
    branches on conditions, and whether it ends the flow."""

    parameters: frozenset[str]
    check: _Check
    errors: frozenset[str]
    conditions: bool = False
    terminal: bool = False


# --- parameter checks ---------------------------------------------------------------------------------------


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


def _check_lambda(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
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


def _check_message(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    return _check_prompt_kinds(params, required=True)


def _check_get_input(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    reasons = _check_prompt_kinds(params, required=False)
    if params.get("StoreInput") not in ("True", "False"):
        reasons.append('StoreInput must be "True" or "False"')
    if not _is_int_string(params.get("InputTimeLimitSeconds"), 1, 180):
        reasons.append("InputTimeLimitSeconds must be a string holding an integer 1–180")
    return reasons


def _check_streaming(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
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


def _check_attributes(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    attributes = params.get("Attributes")
    reasons = _flat_string_map(attributes, "Attributes")
    if isinstance(attributes, dict) and not attributes:
        reasons.append("Attributes must set at least one attribute")
    if params.get("TargetContact", "Current") not in ("Current", "Related"):
        reasons.append("TargetContact must be Current or Related")
    return reasons


def _check_compare(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    if not _is_jsonpath(params.get("ComparisonValue")):
        return [f"ComparisonValue must be a single JSONPath ($.…), not {params.get('ComparisonValue')!r}"]
    return []


def _check_loop(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    count = params.get("LoopCount")
    if _is_jsonpath(count) or _is_int_string(count, 0, 100):
        return []
    return [f"LoopCount must be a string holding an integer 0–100 (or one JSONPath), not {count!r}"]


def _check_logging(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    if params.get("FlowLoggingBehavior") not in ("Enabled", "Disabled"):
        return ["FlowLoggingBehavior must be Enabled or Disabled"]
    return []


def _check_target_queue(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
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


def _check_nothing(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    return []


# --- action types -------------------------------------------------------------------------------------------

_NO_MATCH = frozenset({"NoMatchingError"})

ACTION_TYPES: Mapping[str, ActionSpec] = {
    "InvokeLambdaFunction": ActionSpec(
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
    "UpdateContactMediaStreamingBehavior": ActionSpec(
        frozenset({"MediaStreamingState", "MediaStreamType", "Participants"}), _check_streaming, _NO_MATCH
    ),
    "MessageParticipant": ActionSpec(frozenset(_PROMPT_KINDS), _check_message, _NO_MATCH),
    "UpdateContactAttributes": ActionSpec(frozenset({"Attributes", "TargetContact"}), _check_attributes, _NO_MATCH),
    "Compare": ActionSpec(
        frozenset({"ComparisonValue"}), _check_compare, frozenset({"NoMatchingCondition"}), conditions=True
    ),
    "Loop": ActionSpec(frozenset({"LoopCount"}), _check_loop, frozenset(), conditions=True),
    "GetParticipantInput": ActionSpec(
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
    "DisconnectParticipant": ActionSpec(frozenset(), _check_nothing, frozenset(), terminal=True),
    "UpdateFlowLoggingBehavior": ActionSpec(frozenset({"FlowLoggingBehavior"}), _check_logging, frozenset()),
    "UpdateContactTargetQueue": ActionSpec(frozenset({"QueueId", "AgentId"}), _check_target_queue, _NO_MATCH),
    "TransferContactToQueue": ActionSpec(
        frozenset(), _check_nothing, frozenset({"QueueAtCapacity", "NoMatchingError"})
    ),
}

_LOOP_RESULTS = ("ContinueLooping", "DoneLooping")
COMPARE_OPERATORS = frozenset(
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


def check_loop_conditions(operands: list[str]) -> list[str]:
    """Why the operands of a Loop's conditions are wrong: it takes one ContinueLooping and one DoneLooping."""
    reasons = [f"Loop needs a condition Equals {r}" for r in _LOOP_RESULTS if r not in operands]
    extra = [o for o in operands if o not in _LOOP_RESULTS]
    if extra or len(operands) != len(set(operands)):
        reasons.append("Loop allows only one ContinueLooping and one DoneLooping condition")
    return reasons
