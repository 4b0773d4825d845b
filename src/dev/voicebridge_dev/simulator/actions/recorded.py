"""The recorded stand-ins of the flow simulator: the action types the local cloud answers by a documented
stand-in (:mod:`voicebridge_dev.simulator.standins`, which lists them and why) rather than by Connect's semantics.

Those in :data:`~voicebridge_dev.simulator.standins.RECORDED` are recorded and the call goes on by ``NextAction``;
those in :data:`~voicebridge_dev.simulator.standins.ENDS` end the run, as ``ended`` or ``transferred``; those in
:data:`~voicebridge_dev.simulator.standins.UNAVAILABLE` take the most specific error branch the action has; ``Wait``
lets its time limit pass (the action pages of Connect's flow language reference,
https://docs.aws.amazon.com/connect/latest/APIReference/flow-language-actions.html).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from voicebridge_dev.flows import Action
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.events import Noted
from voicebridge_dev.simulator.outcomes import ActionFailed, Branch, CallOver, FlowRuntimeError
from voicebridge_dev.simulator.standins import VOICE_ID, unavailable_error

__all__ = ["ends", "recorded", "resolved", "unavailable", "wait"]


def recorded(call: Call, action: Action) -> Branch:
    parameters = resolved(action.parameters, call.contact.interpolate)
    call.log.record(Noted(call.clock.now(), action.identifier, action.type, {"parameters": parameters}))
    return Branch("recorded", action.next_action)


def ends(call: Call, action: Action) -> Branch:
    params = action.parameters
    if action.type == "EndFlowExecution":
        raise CallOver("ended", action.type)
    if action.type == "TransferParticipantToThirdParty":
        if str(params.get("ContinueFlowExecution", "")).lower() == "true":
            return Branch("recorded", action.next_action)
        raise CallOver("transferred", call.contact.value(str(params.get("ThirdPartyPhoneNumber", "a third party"))))
    target = params.get("QueueId") or params.get("AgentId") or call.contact.queue or "an agent"
    raise CallOver("transferred", call.contact.value(str(target)))


def unavailable(call: Call, action: Action) -> Branch:
    errors = {branch.error_type: branch.next_action for branch in action.errors}
    error = unavailable_error(errors)
    why = (
        f"{action.type} needs Voice ID, whose support ended on 2026-05-20"
        if action.type in VOICE_ID
        else f"{action.type} needs a service the local cloud does not run"
    )
    if error is None:
        raise FlowRuntimeError(f"action {action.identifier!r}: {why}, and it has no error branch")
    raise ActionFailed(why, error)


def wait(call: Call, action: Action) -> Branch:
    name = "TimeLimitSeconds" if "TimeLimitSeconds" in action.parameters else "TimeoutSeconds"
    call.pass_time(call.clock.now() + call.seconds(action, name, "0"))
    return Branch("WaitCompleted", action.condition_target("WaitCompleted") or action.next_action)


def resolved(value: Any, resolve: Callable[[str], str]) -> Any:
    """``value`` with the references in each of its strings replaced by their values (what the report shows)."""
    if isinstance(value, str):
        return resolve(value)
    if isinstance(value, Mapping):
        return {key: resolved(item, resolve) for key, item in value.items()}
    if isinstance(value, list):
        return [resolved(item, resolve) for item in value]
    return value
