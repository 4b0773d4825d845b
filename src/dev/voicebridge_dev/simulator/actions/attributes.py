"""The contact data and attributes family of the flow simulator: ``UpdateContactAttributes``,
``UpdateFlowAttributes``, ``Compare``, ``Loop`` and ``UpdateFlowLoggingBehavior``.

Contact attributes may not grow past Connect's 32 KB (:data:`~voicebridge_dev.simulator.contact.MAX_ATTRIBUTES_BYTES`);
those set on a ``Related`` contact are recorded, as the related contact is not simulated
(:mod:`voicebridge_dev.simulator.standins`). Flow attributes (``$.FlowAttributes``) live for the flow's run;
``Compare`` takes the first condition met (Equals, Number…, Text…); ``Loop`` keeps a counter per action, reset after
``DoneLooping`` (docs/flows.md; the action pages of Connect's flow language reference,
https://docs.aws.amazon.com/connect/latest/APIReference/flow-control-actions-compare.html and
https://docs.aws.amazon.com/connect/latest/APIReference/flow-control-actions-loop.html).
"""

from __future__ import annotations

from collections.abc import Callable

from voicebridge_dev.flows import Action
from voicebridge_dev.simulator.actions.recorded import recorded
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.contact import MAX_ATTRIBUTES_BYTES
from voicebridge_dev.simulator.outcomes import ActionFailed, Branch, FlowRuntimeError

__all__ = ["compare", "first_condition", "loop", "next_action", "update_attributes", "update_flow_attributes"]


def next_action(call: Call, action: Action) -> Branch:
    return Branch("next", action.next_action)


def update_attributes(call: Call, action: Action) -> Branch:
    params = action.parameters
    if params.get("TargetContact", "Current") == "Related":
        # The related contact (a step-by-step guide's flow runs beside the call it guides) is not simulated:
        # what is set on it is recorded, and the call's own attributes stay as they are.
        return recorded(call, action)
    updated = {**call.contact.attributes}
    updated.update({name: call.contact.value(str(value)) for name, value in params["Attributes"].items()})
    size = sum(len(k.encode()) + len(v.encode()) for k, v in updated.items())
    if size > MAX_ATTRIBUTES_BYTES:
        raise ActionFailed(f"contact attributes would take {size} bytes, over Connect's {MAX_ATTRIBUTES_BYTES}")
    call.contact.attributes = updated
    return Branch("next", action.next_action)


def update_flow_attributes(call: Call, action: Action) -> Branch:
    """Flow attributes (``$.FlowAttributes``) live for the flow's run and never reach the contact's attributes."""
    for name, attribute in action.parameters["FlowAttributes"].items():
        call.contact.flow_attributes[name] = call.contact.value(str(attribute["Value"]))
    return Branch("next", action.next_action)


def compare(call: Call, action: Action) -> Branch:
    value = call.contact.value(str(action.parameters["ComparisonValue"]))
    return first_condition(action, value)


def first_condition(action: Action, value: str) -> Branch:
    """The first of ``action``'s conditions that ``value`` meets; else NoMatchingCondition (or NextAction)."""
    for condition in action.conditions:
        if _matches(condition.operator, value, condition.operands[0]):
            return Branch(f"{condition.operator} {condition.operands[0]}", condition.next_action)
    target = action.error_target("NoMatchingCondition")
    return Branch("NoMatchingCondition", target if target is not None else action.next_action)


def loop(call: Call, action: Action) -> Branch:
    raw = call.contact.value(str(action.parameters["LoopCount"]))
    try:
        count = int(raw)
    except ValueError:
        raise FlowRuntimeError(f"action {action.identifier!r}: LoopCount {raw!r} is not a number") from None
    done = call.loops.get(action.identifier, 0)
    if done < count:
        call.loops[action.identifier] = done + 1
        return Branch("ContinueLooping", action.condition_target("ContinueLooping"))
    call.loops[action.identifier] = 0
    return Branch("DoneLooping", action.condition_target("DoneLooping"))


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
