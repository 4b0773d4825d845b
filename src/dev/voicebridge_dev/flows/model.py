"""The flow language's models: a :class:`Flow` of :class:`Action` with their error and condition branches.

A flow is one JSON document::

    {"Version": "2019-10-30", "StartAction": "<id>", "Metadata": {...},
     "Actions": [{"Identifier": "<id>", "Type": "<ActionType>", "Parameters": {...},
                  "Transitions": {"NextAction": "<id>",
                                  "Errors": [{"NextAction": "<id>", "ErrorType": "NoMatchingError"}],
                                  "Conditions": [{"NextAction": "<id>", "Condition":
                                                  {"Operator": "Equals", "Operands": ["OK"]}}]}}]}

:func:`parse_flow` validates a document and turns it into models; :func:`load_flow` reads it from a file::

    >>> flow = load_flow("contact_flows/voice-agent.json")
    >>> flow[flow.start_action].type
    'UpdateFlowLoggingBehavior'
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicebridge_dev.flows.errors import InvalidFlowError
from voicebridge_dev.flows.validate import FLOW, Problem, flow_content, validate


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


def parse_flow(
    flow: Mapping[str, Any] | str,
    *,
    known_functions: set[str] | None = None,
    known_names: set[str] | None = None,
    templated: bool = False,
) -> Flow:
    """The :class:`Flow` model of a valid flow (an export, or the ``Content`` of a DescribeContactFlow answer; a
    template whose tokens are filled before import, when ``templated``); raises :class:`InvalidFlowError` listing its
    errors."""
    problems = validate(flow, known_functions=known_functions, known_names=known_names, templated=templated)
    if problems:
        raise InvalidFlowError(problems)
    content = flow_content(json.loads(flow) if isinstance(flow, str) else flow)
    if isinstance(content, str):  # validate has said so already; this narrows the type
        raise InvalidFlowError([Problem(FLOW, content)])
    document = content.document
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
