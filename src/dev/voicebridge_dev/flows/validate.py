"""Validation of a flow document: every rule it breaks, each as a :class:`Problem`.

:func:`validate` checks the document (its version, the legacy export format, its size), then each action (its
identifier; its type's parameters, error types and conditions as :mod:`voicebridge_dev.flows.rules` gives them;
the placeholders it holds; its transitions), then the graph (every target exists, every action is reachable from
StartAction) and the designer's metadata. It reports every problem it finds rather than stopping at the first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from voicebridge_dev.flows.rules import (
    ACTION_TYPES,
    COMPARE_OPERATORS,
    FLOW_LANGUAGE_VERSION,
    FORBIDDEN_IDENTIFIER_CHARS,
    LEGACY_TYPES,
    MAX_ACTIONS,
    MAX_CONTENT_CHARS,
    MAX_IDENTIFIER_CHARS,
    PLACEHOLDER,
    RESERVED_IDENTIFIERS,
    ActionSpec,
    CheckContext,
    check_loop_conditions,
)

# Parentheses are forbidden in identifiers, so this label can never collide with a real action.
FLOW = "(flow)"

_SUB_NAME = re.compile(r"[A-Za-z0-9_]+(::[A-Za-z0-9_]+)?(\.[A-Za-z0-9_.]+)?")

JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Problem:
    """One broken rule: ``action`` is the action's Identifier (or ``(flow)`` for the document itself)."""

    action: str
    reason: str

    def __str__(self) -> str:
        return f"{self.action}: {self.reason}"


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

    ctx = CheckContext(known_functions, known_names)
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
            if isinstance(kind, str) and kind in LEGACY_TYPES:
                return (
                    f"legacy block type {kind} is obsolete: the flow language uses {LEGACY_TYPES[kind]} "
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


def _check_action(raw: JsonObject, ctx: CheckContext) -> list[str]:
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


def _check_transitions(kind: str, spec: ActionSpec, transitions: Any) -> list[str]:
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
        if condition.get("Operator") not in COMPARE_OPERATORS:
            reasons.append(f"unknown condition Operator {condition.get('Operator')!r}")
        operands.append(condition["Operands"][0])
    if kind == "Loop":
        reasons += check_loop_conditions(operands)
    return reasons


def _check_placeholders(value: Any, ctx: CheckContext) -> list[str]:
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
