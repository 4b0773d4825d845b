"""The queues and transfers family of the flow simulator: ``UpdateContactTargetQueue``, ``TransferContactToQueue``,
``DisconnectParticipant``, and the contact centre's state a flow routes by — ``CheckHoursOfOperation``,
``CheckMetricData``, ``GetMetricData`` and ``DistributeByPercentage``.

An empty working queue takes ``NoMatchingError``, as Connect refuses it; a transfer ends the call as transferred to
the working queue, or takes ``QueueAtCapacity`` when that queue is full. Hours, metrics and the percentage draw come
from the :class:`~voicebridge_dev.simulator.standins.LocalContactCentre` (the action pages of Connect's flow
language reference, https://docs.aws.amazon.com/connect/latest/APIReference/contact-actions-transfercontacttoqueue.html,
https://docs.aws.amazon.com/connect/latest/APIReference/contact-actions-updatecontacttargetqueue.html and
https://docs.aws.amazon.com/connect/latest/APIReference/flow-control-actions-checkhoursofoperation.html).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from voicebridge_dev.flows import Action
from voicebridge_dev.simulator.actions.attributes import first_condition
from voicebridge_dev.simulator.actions.common import ActionFailed, Branch, CallOver, error_type
from voicebridge_dev.simulator.standins import percentage_draw

if TYPE_CHECKING:
    from voicebridge_dev.simulator.engine import Call

__all__ = ["check_metric", "disconnect", "distribute", "get_metrics", "hours", "target_queue", "transfer"]


def target_queue(call: Call, action: Action) -> Branch:
    params = action.parameters
    queue = call.contact.value(str(params.get("QueueId", params.get("AgentId", "")))).strip()
    if not queue:
        raise ActionFailed("the working queue is empty")
    known = call.centre.queue(queue)
    call.contact.queue = queue
    call.contact.queue_name = None if known is None else known.name
    call.contact.queue_caller_id = None if known is None else known.outbound_caller_id
    return Branch("next", action.next_action)


def transfer(call: Call, action: Action) -> Branch:
    if not call.contact.queue:
        raise ActionFailed("no working queue is set (UpdateContactTargetQueue)")
    known = call.centre.queue(call.contact.queue)
    if known is not None and known.at_capacity:
        raise ActionFailed(f"queue {known.name} is at capacity", error_type(action, "QueueAtCapacity"))
    raise CallOver("transferred", call.contact.queue)


def disconnect(call: Call, action: Action) -> Branch:
    raise CallOver("disconnected")


def hours(call: Call, action: Action) -> Branch:
    operand = "True" if call.centre.hours_open else "False"
    return Branch(f"Equals {operand}", action.condition_target(operand))


def get_metrics(call: Call, action: Action) -> Branch:
    call.contact.metrics = call.centre.queue_metrics()
    return Branch("next", action.next_action)


def check_metric(call: Call, action: Action) -> Branch:
    value = call.centre.metric(str(action.parameters["MetricType"]))
    return first_condition(action, value)


def distribute(call: Call, action: Action) -> Branch:
    draw = str(percentage_draw(call.contact.contact_id))
    return first_condition(action, draw)
