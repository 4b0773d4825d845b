"""The queues and transfers family of the flow simulator: ``UpdateContactTargetQueue``, ``TransferContactToQueue``,
``DisconnectParticipant``, a queue's wait (``MessageParticipantIteratively``), and the contact centre's state a flow
routes by — ``CheckHoursOfOperation``, ``CheckMetricData``, ``GetMetricData`` and ``DistributeByPercentage``.

``MessageParticipantIteratively`` plays its messages in turn, over and over, while the contact waits: "Loops a
sequence of prompts while a customer or agent is on hold or in queue ... an interruption timeout when in a Queue
flow that interrupts the message loop to run other flow logic"; when ``InterruptFrequencySeconds`` elapse "the
action completes with the result as MessagesInterrupted"; it "is supported in Customer Queue, Customer Hold, and
Agent Hold flows" (its page of the reference,
https://docs.aws.amazon.com/connect/latest/APIReference/participant-actions-messageparticipantiteratively.html).
Where the reference is silent the simulator chooses: the interruption is seen between two messages, not within one;
keys the caller presses between two messages interrupt the loop too (a queue's "press 1 at any time for a
callback"), and are kept for the block that listens next; the wait ends when the centre's agent is free
(:attr:`~voicebridge_dev.simulator.standins.LocalContactCentre.agent_free_after_s` into the call): a queue's contact
is then transferred to the agent, a hold's taken off hold (``ended``).

An empty working queue takes ``NoMatchingError``, as Connect refuses it; a transfer ends the call as transferred to
the working queue, or takes ``QueueAtCapacity`` when that queue is full. Hours, metrics and the percentage draw come
from the :class:`~voicebridge_dev.simulator.standins.LocalContactCentre` (the action pages of Connect's flow
language reference, https://docs.aws.amazon.com/connect/latest/APIReference/contact-actions-transfercontacttoqueue.html,
https://docs.aws.amazon.com/connect/latest/APIReference/contact-actions-updatecontacttargetqueue.html and
https://docs.aws.amazon.com/connect/latest/APIReference/flow-control-actions-checkhoursofoperation.html).
"""

from __future__ import annotations

from voicebridge_dev.flows import Action
from voicebridge_dev.simulator.actions.attributes import first_condition
from voicebridge_dev.simulator.actions.prompts import play, prompt_of
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.caller import PAUSE_S, Press
from voicebridge_dev.simulator.outcomes import ActionFailed, Branch, CallOver, FlowRuntimeError, error_type
from voicebridge_dev.simulator.standins import percentage_draw

__all__ = [
    "check_metric",
    "disconnect",
    "distribute",
    "get_metrics",
    "hours",
    "queue_messages",
    "target_queue",
    "transfer",
]

_WAITING_FAMILIES = (None, "customer queue", "hold", "module")
"""The flow types a queue's message loop runs in (None: a flow that does not say its type)."""


def target_queue(call: Call, action: Action) -> Branch:
    params = action.parameters
    given = str(params.get("QueueId", params.get("AgentId", "")))
    queue = call.contact.value(given).strip()
    if not queue:
        raise ActionFailed(
            f"{'QueueId' if 'QueueId' in params else 'AgentId'} {given!r} names no queue here (it is empty)"
        )
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


def queue_messages(call: Call, action: Action) -> Branch:
    """``MessageParticipantIteratively``: the messages in a loop until interrupted, or until the agent is free."""
    if call.family not in _WAITING_FAMILIES:
        raise ActionFailed(f"MessageParticipantIteratively does not run in {call.family} flows")
    params = action.parameters
    messages = [message for message in params.get("Messages") or [] if isinstance(message, dict)]
    interrupted = action.condition_target("MessagesInterrupted")
    started = call.clock.now()
    every = call.seconds(action, "InterruptFrequencySeconds") if "InterruptFrequencySeconds" in params else None
    interrupt_at = None if every is None or interrupted is None else started + every
    free_at = call.centre.agent_free_after_s
    while True:
        round_began = call.clock.now()
        for message in messages:
            _agent_free(call, free_at)
            played = prompt_of(call, message)
            if played is not None:
                play(call, action, played)
            if interrupted is None:
                continue
            keys = _keys_between_messages(call)
            if keys is not None or (interrupt_at is not None and call.clock.now() >= interrupt_at):
                call.key_buffer = keys
                return Branch("MessagesInterrupted", interrupted)
        if call.clock.now() <= round_began:
            # Messages that take no time (none, or empty prompts): the wait goes on in silence.
            call.pass_time(min(free_at, interrupt_at if interrupt_at is not None else free_at))
            if interrupt_at is not None and call.clock.now() >= interrupt_at and call.clock.now() < free_at:
                return Branch("MessagesInterrupted", str(interrupted))
        _agent_free(call, free_at)
        if call.clock.now() > call.max_call_s:
            raise FlowRuntimeError(f"the call ran longer than {call.max_call_s:.0f} s")


def _agent_free(call: Call, free_at: float) -> None:
    if call.clock.now() < free_at:
        return
    if call.family == "hold":
        raise CallOver("ended", "the agent took the call off hold")
    raise CallOver("transferred", "an agent was free for the contact waiting in queue")


def _keys_between_messages(call: Call) -> str | None:
    """The keys the caller presses in the pause after a message, if their turn is to press keys."""
    answer = call.caller.respond(Press, before=call.clock.now() + PAUSE_S)
    if answer is None:
        return None
    step, _, end = answer
    call.pass_time(end)
    return step.digits if isinstance(step, Press) else None
