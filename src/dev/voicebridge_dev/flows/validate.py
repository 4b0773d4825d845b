"""Validation of a flow document: every rule it breaks, each as a :class:`Problem`.

A problem is an *error* when Connect would reject the flow, a *warning* when Connect stores it but a person should
look (an unreachable block, a parameter the reference does not document, a template token in a prompt's text, a
value past a bound no AWS text gives); each warning says why it is one.
:func:`validate` returns the errors, and the warnings too when asked; it reports every problem it finds rather than
stopping at the first.

It takes a flow as exported (``{"Version", "StartAction", "Metadata", "Actions"}``, a flow module adding
``Settings``) or as Connect's API hands it over, the flow being the ``Content`` string of a DescribeContactFlow
answer (``{"ContactFlow": {"Type", "Content"}}``), of a DescribeContactFlowModule one, or of a CreateContactFlow
request (``{"Name", "Type", "Content"}``). It checks the document (its version, the legacy export format, its size),
then each action (its identifier; its type's parameters, error types and conditions as
:mod:`voicebridge_dev.flows.rules` gives them; the template tokens it holds; its transitions), then the graph (every
target exists, every action is reachable from StartAction) and the designer's metadata.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from voicebridge_dev.flows.rules import (
    ACTION_TYPES,
    CATCH_ALL_ERROR,
    COMPARE_OPERATORS,
    FLOW_FAMILIES,
    FLOW_LANGUAGE_VERSION,
    FORBIDDEN_IDENTIFIER_CHARS,
    FUNCTION_ARN_PLACEHOLDER,
    LEGACY_TYPES,
    MAX_ACTIONS,
    MAX_CONTENT_CHARS,
    MAX_IDENTIFIER_CHARS,
    MODULE,
    PLACEHOLDER,
    RESERVED_IDENTIFIERS,
    TEMPLATE_TOKEN,
    ActionSpec,
    CheckContext,
    intrinsic,
)

# Parentheses are forbidden in identifiers, so this label can never collide with a real action.
FLOW = "(flow)"

_SUB_NAME = re.compile(r"[A-Za-z0-9_]+(::[A-Za-z0-9_]+)?(\.[A-Za-z0-9_.]+)?")
# A value under one of these keys is the caller's own data or words: a template token there is Connect's business
# only as text, so it is a warning; anywhere else (an ARN, an ID, a number) it is a value Connect cannot resolve.
_FREE_TEXT_KEYS = frozenset({"Text", "SSML", "Name", "Description", "InitialMessage"})
_USER_DATA_KEYS = frozenset(
    {
        "Attributes",
        "LambdaInvocationAttributes",
        "LexSessionAttributes",
        "ViewData",
        "FlowAttributes",
        "Input",
        "ResultData",
        "Tags",
        "CaseRequestFields",
        "CaseResponseFields",
        "ProfileRequestData",
        "ProfileResponseData",
        "References",
    }
)

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One broken rule: ``action`` is the action's Identifier (or ``(flow)`` for the document itself); a
    ``warning`` is something Connect accepts but a person should look at."""

    action: str
    reason: str
    warning: bool = False

    def __str__(self) -> str:
        return f"{self.action}: {self.reason}"


@dataclass(frozen=True)
class FlowContent:
    """The flow-language document inside what was given, and the flow type it was given with, if any."""

    document: JsonObject
    flow_type: str | None
    content_chars: int


def validate(
    flow: Mapping[str, Any] | str,
    *,
    known_functions: set[str] | None = None,
    known_names: set[str] | None = None,
    templated: bool = False,
    warnings: bool = False,
) -> list[Problem]:
    """Every rule of the flow language that ``flow`` (a parsed document or its JSON text) breaks.

    ``known_functions`` are the template's function logical IDs that ``${X.Arn}`` may name; ``known_names``
    are the parameters and resources that a bare ``${X}`` may name. ``None`` skips the corresponding check
    (the placeholder's form is still checked). ``templated`` says ``flow`` is a template whose tokens
    (:data:`~voicebridge_dev.flows.rules.TEMPLATE_TOKEN`: ``${x}``, ``{{x}}``, ``%x%``, ``%%X%%``, ``__X__``,
    ``<<x>>``, ``REPLACE_WITH_…``, and ``Fn::GetAtt`` objects) a templating system fills before import: they are
    accepted, and the values holding them left unchecked. The errors come back, and with ``warnings`` the warnings
    after them; no error means the flow is valid.

        >>> validate({"Version": "2019-10-30", "StartAction": "Bye", "Actions": [
        ...     {"Identifier": "Bye", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}}]})
        []
    """
    found = _problems(flow, CheckContext(known_functions, known_names, templated))
    errors = [p for p in found if not p.warning]
    return [*errors, *(p for p in found if p.warning)] if warnings else errors


def flow_content(document: Mapping[str, Any]) -> FlowContent | str:
    """The flow inside ``document`` (itself, or the ``Content`` of an API answer or request), or why there is none."""
    wrapped = any(isinstance(document.get(key), dict) for key in ("ContactFlow", "ContactFlowModule"))
    if "Actions" in document or "modules" in document or not (wrapped or "Content" in document):
        chars = len(json.dumps(document, separators=(",", ":"), ensure_ascii=False))
        return FlowContent(dict(document), None, chars)
    wrapper: Any = document
    flow_type: Any = None
    for key in ("ContactFlow", "ContactFlowModule"):
        if isinstance(document.get(key), dict):
            wrapper = document[key]
            flow_type = MODULE if key == "ContactFlowModule" else None
    if not isinstance(wrapper.get("Content"), str):
        return "Content must be the flow as a JSON string (as DescribeContactFlow gives it)"
    text = wrapper["Content"]
    try:
        content = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"Content is not valid JSON: {exc}"
    if not isinstance(content, dict):
        return "Content must hold a JSON object"
    given_type = wrapper.get("Type")
    return FlowContent(content, flow_type or (given_type if isinstance(given_type, str) else None), len(text))


def _problems(flow: Mapping[str, Any] | str, ctx: CheckContext) -> list[Problem]:
    if isinstance(flow, str):
        try:
            given = json.loads(flow)
        except json.JSONDecodeError as exc:
            return [Problem(FLOW, f"not valid JSON: {exc}")]
    else:
        given = flow
    if not isinstance(given, dict):
        return [Problem(FLOW, "a flow must be a JSON object")]
    content = flow_content(given)
    if isinstance(content, str):
        return [Problem(FLOW, content)]
    document = content.document
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
    if content.content_chars > MAX_CONTENT_CHARS:
        problems.append(
            Problem(FLOW, f"Content is {content.content_chars} characters, more than the {MAX_CONTENT_CHARS} allowed")
        )

    family = _flow_family(document, content.flow_type)
    actions: dict[str, JsonObject] = {}
    for index, raw in enumerate(raw_actions):
        label, identifier_problems = _check_identifier(raw, index, actions)
        problems += identifier_problems
        if label in actions or not isinstance(raw, dict):
            continue
        actions[label] = raw
        problems += [Problem(label, reason) for reason in _check_action(raw, ctx)]
        problems += [Problem(label, reason, warning=True) for reason in _action_warnings(raw, ctx, family)]

    start = document.get("StartAction")
    if not isinstance(start, str) or start not in actions:
        problems.append(Problem(FLOW, f"StartAction {start!r} is not the Identifier of an action"))
    problems += _check_targets(actions)
    if isinstance(start, str) and start in actions:
        reachable = _reachable(start, actions)
        problems += [
            Problem(a, "unreachable from StartAction (Connect keeps it; nothing runs it)", warning=True)
            for a in actions
            if a not in reachable
        ]
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
            if isinstance(kind, str) and kind in LEGACY_TYPES:
                return (
                    f"legacy block type {kind} is obsolete: the flow language uses {LEGACY_TYPES[kind]} "
                    f"(Version {FLOW_LANGUAGE_VERSION})"
                )
    return None


def flow_family(given: Mapping[str, Any]) -> str | None:
    """The flow type's family (:data:`~voicebridge_dev.flows.rules.FLOW_FAMILIES`: ``inbound``, ``customer queue``,
    ``hold``, ``whisper``, ``transfer``, or ``module``) of a flow as given (an export or an API answer), when it says
    which it is."""
    content = flow_content(given)
    return None if isinstance(content, str) else _flow_family(content.document, content.flow_type)


def _flow_family(document: Mapping[str, Any], flow_type: str | None) -> str | None:
    if flow_type == MODULE or "Settings" in document:
        return MODULE
    metadata = document.get("Metadata")
    designer_type = metadata.get("type") if isinstance(metadata, dict) else None
    for given in (flow_type, designer_type):
        if isinstance(given, str) and given in FLOW_FAMILIES:
            return FLOW_FAMILIES[given]
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


def nearest_type(kind: str) -> str | None:
    """The known action type closest to an unknown ``kind`` (case ignored), or ``None`` when none is close."""
    by_lower = {name.lower(): name for name in ACTION_TYPES}
    close = difflib.get_close_matches(kind.lower(), list(by_lower), n=1, cutoff=0.6)
    return by_lower[close[0]] if close else None


def _check_action(raw: JsonObject, ctx: CheckContext) -> list[str]:
    kind = raw.get("Type")
    spec = ACTION_TYPES.get(kind) if isinstance(kind, str) else None
    reasons: list[str] = []
    if spec is None:
        nearest = nearest_type(kind) if isinstance(kind, str) else None
        reasons.append(f"unknown action Type {kind!r}" + (f" (did you mean {nearest}?)" if nearest else ""))
    params = raw.get("Parameters", {})
    if not isinstance(params, dict):
        return [*reasons, "Parameters must be an object"]
    if spec is not None:
        reasons += [f"{name} must be set: {kind} requires it" for name in sorted(spec.required) if name not in params]
        reasons += _check_exactly_one(spec, params)
        reasons += spec.check(params, ctx)
    reasons += _check_tokens(params, ctx)
    # The Lambda check already names an unknown ${X.Arn} function; checking the placeholder again would say it twice.
    arn = params.get("LambdaFunctionARN")
    whole_function = isinstance(arn, str) and FUNCTION_ARN_PLACEHOLDER.fullmatch(arn) is not None
    reasons += _check_placeholders(
        {k: v for k, v in params.items() if k != "LambdaFunctionARN" or not whole_function}, ctx
    )
    reasons += _check_transitions(str(kind), spec, raw.get("Transitions"), params)
    return reasons


def _check_exactly_one(spec: ActionSpec, params: Mapping[str, Any]) -> list[str]:
    reasons: list[str] = []
    for group in spec.exactly_one:
        given = [name for name in group if name in params]
        if not given:
            reasons.append(f"exactly one of {', '.join(group)} is required")
        elif len(given) > 1:
            reasons.append(f"exactly one of {', '.join(group)} is allowed, found {', '.join(given)}")
    return reasons


def _action_warnings(raw: JsonObject, ctx: CheckContext, family: str | None) -> list[str]:
    kind = raw.get("Type")
    spec = ACTION_TYPES.get(kind) if isinstance(kind, str) else None
    params = raw.get("Parameters", {})
    if spec is None or not isinstance(params, dict):
        return _token_warnings(params, ctx) if isinstance(params, dict) else []
    reasons = [
        f"{kind} takes no parameter {name} (the reference does not document it; Connect may reject it)"
        for name in params
        if name not in spec.parameters and not spec.open_parameters
    ]
    reasons += spec.advise(params, ctx)
    if family is not None and family in spec.unavailable_in:
        reasons.append(f"{kind} does not run in {family} flows, the reference says ({spec.source})")
    return reasons + _token_warnings(params, ctx)


class _Token(NamedTuple):
    """A string under the parameters (or an intrinsic function object, by its function's name), the key it sits
    under, and whether it is free text."""

    key: str
    text: str
    free: bool
    intrinsic: bool = False


def _token_places(value: Any, key: str = "", free: bool = False) -> Iterator[_Token]:
    """Every string under ``value`` and every intrinsic function object (``{"Fn::GetAtt": …}``)."""
    if isinstance(value, str):
        yield _Token(key, value, free or key in _FREE_TEXT_KEYS)
    elif intrinsic(value):
        yield _Token(key, next(iter(value)), free or key in _FREE_TEXT_KEYS, intrinsic=True)
    elif isinstance(value, dict):
        for name, item in value.items():
            inner = name if isinstance(name, str) else key
            yield from _token_places(item, inner, free or inner in _USER_DATA_KEYS)
    elif isinstance(value, list):
        for item in value:
            yield from _token_places(item, key, free)


def _other_tokens(params: Mapping[str, Any], ctx: CheckContext, *, free: bool) -> Iterator[tuple[str, str]]:
    """Each template token (:data:`~voicebridge_dev.flows.rules.TEMPLATE_TOKEN`, and an intrinsic function object)
    with its key, in free text or not (``${x}`` is ``Fn::Sub``'s, checked against the template); none in a template,
    whose tokens are all filled before import."""
    if ctx.templated:
        return
    for place in _token_places(params):
        if place.free != free:
            continue
        if place.intrinsic:
            yield place.key, f"{{{place.text!r}: …}}"
        else:
            yield from ((place.key, t) for t in TEMPLATE_TOKEN.findall(place.text) if not t.startswith("${"))


def _check_tokens(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    return [
        f"leftover template token {token} in {key or 'Parameters'}: Connect cannot resolve it; fill it before importing"
        for key, token in _other_tokens(params, ctx, free=False)
    ]


def _token_warnings(params: Mapping[str, Any], ctx: CheckContext) -> list[str]:
    return [
        f"template token {token} in {key}: Connect says it as written unless it is filled before importing"
        for key, token in _other_tokens(params, ctx, free=True)
    ]


def _check_transitions(kind: str, spec: ActionSpec | None, transitions: Any, params: Mapping[str, Any]) -> list[str]:
    if not isinstance(transitions, dict):
        return ["Transitions must be an object"]
    if spec is not None and spec.terminal:
        return [] if transitions == {} else [f"{kind} ends the flow: its Transitions must be empty ({{}})"]
    reasons: list[str] = []
    if "NextAction" in transitions and not isinstance(transitions["NextAction"], str):
        reasons.append("Transitions.NextAction must be the Identifier of an action")
    elif "NextAction" not in transitions and spec is not None and not spec.next_action_optional:
        reasons.append("Transitions.NextAction is required")
    reasons += _check_errors(kind, spec, transitions.get("Errors", []))
    conditions = transitions.get("Conditions", [])
    if not isinstance(conditions, list):
        return [*reasons, "Transitions.Conditions must be a list"]
    if spec is None:
        return reasons
    if conditions and not spec.conditions:
        return [*reasons, f"{kind} supports no Conditions"]
    return reasons + _check_conditions(kind, spec, conditions, params)


def _check_errors(kind: str, spec: ActionSpec | None, errors: Any) -> list[str]:
    if not isinstance(errors, list):
        return ["Transitions.Errors must be a list"]
    reasons: list[str] = []
    seen: set[str] = set()
    for branch in errors:
        error_type = branch.get("ErrorType") if isinstance(branch, dict) else None
        if (
            not isinstance(branch, dict)
            or not isinstance(error_type, str)
            or not isinstance(branch.get("NextAction"), str)
        ):
            reasons.append("each error branch needs ErrorType and NextAction")
            continue
        if spec is not None and not spec.open_errors and error_type not in spec.errors | {CATCH_ALL_ERROR}:
            allowed = ", ".join(sorted(spec.errors | {CATCH_ALL_ERROR}))
            reasons.append(f"{kind} has no error {error_type!r} (allowed: {allowed})")
        elif error_type in seen:
            reasons.append(f"error {error_type} is handled twice")
        seen.add(error_type)
    return reasons


def _check_conditions(kind: str, spec: ActionSpec, conditions: list[Any], params: Mapping[str, Any]) -> list[str]:
    reasons: list[str] = []
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
        operator = condition.get("Operator")
        if operator not in COMPARE_OPERATORS:
            reasons.append(f"unknown condition Operator {operator!r}")
        elif spec.operators is not None and operator not in spec.operators:
            reasons.append(f"{kind} allows only the condition operator {' or '.join(sorted(spec.operators))}")
        operands.append(condition["Operands"][0])
    required = set(spec.required_operands)
    events = params.get("Events") if kind == "Wait" else None
    if isinstance(events, list):
        # Every event a Wait listens for needs its branch, as WaitCompleted does.
        required |= {e for e in events if isinstance(e, str)}
    reasons += [f"{kind} needs a condition Equals {operand}" for operand in sorted(required) if operand not in operands]
    if spec.operands is not None and (
        any(o not in spec.operands for o in operands) or len(operands) != len(set(operands))
    ):
        reasons.append(f"{kind} allows only one {' and one '.join(sorted(spec.operands))} condition")
    return reasons


def _check_placeholders(value: Any, ctx: CheckContext) -> list[str]:
    if ctx.templated:
        return []
    reasons: list[str] = []
    for text in _strings(value):
        for match in PLACEHOLDER.finditer(text):
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
        unterminated = text.count("${") - len(PLACEHOLDER.findall(text))
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
    """The designer's layout: Connect stores Metadata "filled in with data as desired", so only warnings."""
    if metadata is None:
        return []
    if not isinstance(metadata, dict):
        return [Problem(FLOW, "Metadata must be an object")]
    positions = metadata.get("ActionMetadata", {})
    if not isinstance(positions, dict):
        return [Problem(FLOW, "Metadata.ActionMetadata must be an object", warning=True)]
    return [
        Problem(
            FLOW,
            f"Metadata.ActionMetadata describes {name!r}, which is not an action (Connect keeps the designer's "
            "metadata as given)",
            warning=True,
        )
        for name in positions
        if name not in actions
    ]
