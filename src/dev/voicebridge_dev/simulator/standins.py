"""What the flow simulator answers for the parts of a contact centre the local cloud does not have.

Each action type of Connect's flow language (its reference, *Flow language actions*; the validator's
:data:`~voicebridge_dev.flows.rules.CANONICAL_TYPES`) either runs with Connect's semantics in the simulator or is
answered here, by a documented stand-in:

- **recorded** (:data:`RECORDED`): actions whose effect a simulated caller cannot hear — attributes set on a related
  contact (``UpdateContactAttributes`` with ``TargetContact`` ``Related``), recording and analytics,
  event hooks, the text-to-speech voice (the local voice stays the same), contact data and tags, routing priority and
  criteria, callbacks and tasks created, profiles, cases and data-table rows written (``UpsertDataTableValues``: the
  values it would write, references resolved, are in the report). The call goes on by ``NextAction``; the report
  lists each as run with the outcome ``recorded``.
- **ends the run** (:data:`ENDS`): ``EndFlowExecution`` ends it as ``ended``; ``TransferContactToAgent``,
  ``DequeueContactAndTransferToQueue`` and ``TransferParticipantToThirdParty`` (unless ``ContinueFlowExecution``)
  end it as ``transferred``.
- **a queue's wait** (:class:`LocalContactCentre` ``agent_free_after_s``): ``MessageParticipantIteratively`` loops
  its messages in a customer queue or hold flow until the agent is free (``transferred``; a hold flow: the agent
  takes the call off hold, ``ended``), until its ``InterruptFrequencySeconds`` elapse, or until the caller presses
  keys between two messages: then it takes its ``MessagesInterrupted`` branch (the callback offer), the keys kept
  for the block that listens next. In a flow of another type it takes its error branch (the reference: "supported
  in Customer Queue, Customer Hold, and Agent Hold flows").
- **other flows** (:data:`OTHER_FLOWS`, with a folder of flows, :mod:`~.library`): ``TransferToFlow`` goes on in the
  flow it names (without a folder it ends the run as ``transferred``; a flow not in the folder takes the error
  branch); ``InvokeFlowModule`` runs the module and comes back by its ``NextAction`` — or the condition the
  module's ``EndFlowModuleExecution`` ``Result`` equals — or its error branch when the module fails or is not in the
  folder; ``EndFlowModuleExecution`` outside a module ends the run as ``ended``. A module has flow attributes of its
  own: the reference is silent on whether the invoking flow's are visible in it, and here they are not.
- **the caller and the agent** (:data:`PARTICIPANTS`, from the caller script, :mod:`~.caller`):
  ``ConnectParticipantWithLexBot`` talks to the Lex emulator (:mod:`~.lexbot`); ``ConnectParticipantWithAgenticCX``
  hands the caller's script to a stand-in of the Agentic CX application (a turn asking for a person takes the
  ``Escalation`` condition, a conversation that ends otherwise the default branch); ``ShowView`` records the view and
  its data and takes the result the script chooses for it, else waits out ``InvocationTimeLimitSeconds`` and takes
  ``TimeLimitExceeded`` (nobody is at the agent's workspace). ``GetParticipantInput`` takes the caller's keys
  (:mod:`~.keypad`).
- **the contact centre's state** (:class:`LocalContactCentre`): hours of operation (open by default), queue metrics
  (one agent available, nobody waiting), and a fixed draw for ``DistributeByPercentage``. ``Wait`` lets its time
  limit pass, then takes ``WaitCompleted``: nothing the flow could wait for (a chat message, a task) arrives on a
  simulated voice call. The reference is silent on what a voice contact does at ``Wait``, ``ShowView`` and in
  ``MessageParticipantIteratively`` with no agent to answer: those stand-ins are choices.
- **not here** (:data:`UNAVAILABLE`): what needs a service the local cloud does not run — Voice ID, Customer
  Profiles lookups and segments, Cases lookups, data-table reads (``EvaluateDataTableValues``,
  ``ListDataTableValues``: no table's rows are here), outbound campaigns — takes the most specific error
  branch the action has (``NoneFoundError`` before ``NoMatchingError``), as a lookup that finds nothing would; a
  persistent chat association takes it too, as the admin guide's block page says a voice contact does. Voice ID's
  support ended on 2026-05-20 (the admin guide's end-of-support page: its resources can no longer be reached), so
  ``CheckVoiceId``, and the older ``SetSecurityBehavior`` and ``CheckSecurityStatus``, take their error branch and
  say why (``StartVoiceIdStream`` is recorded, as before).
- The email and message-template actions (``StartOutboundEmailContact``, ``CreateContact``,
  ``RenderMessageTemplate``) are recorded: nothing of them reaches a caller on the line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = [
    "ENDS",
    "OTHER_FLOWS",
    "PARTICIPANTS",
    "RECORDED",
    "UNAVAILABLE",
    "VOICE_ID",
    "LocalContactCentre",
    "LocalQueue",
    "percentage_draw",
    "unavailable_error",
]

RECORDED: Final = frozenset(
    {
        "AssociateContactToCustomerProfile",
        "CreateCallbackContact",
        "CreateCase",
        "CreateContact",
        "CreateCustomerProfile",
        "CreateTask",
        "CreateWisdomSession",
        "StartVoiceIdStream",
        "RenderMessageTemplate",
        "StartOutboundEmailContact",
        "TagContact",
        "UntagContact",
        "UpdateCase",
        "UpdateContactCallbackNumber",
        "UpdateContactData",
        "UpdateContactEventHooks",
        "UpdateContactMediaProcessing",
        "UpdateContactRecordingAndAnalyticsBehavior",
        "UpdateContactRecordingBehavior",
        "UpdateContactRoutingBehavior",
        "UpdateContactRoutingCriteria",
        "UpdateContactTextToSpeechVoice",
        "UpdateCustomerProfile",
        "UpdatePreviousContactParticipantState",
        "UpsertDataTableValues",
    }
)
ENDS: Final = frozenset(
    {
        "DequeueContactAndTransferToQueue",
        "EndFlowExecution",
        "TransferContactToAgent",
        "TransferParticipantToThirdParty",
    }
)
OTHER_FLOWS: Final = frozenset({"TransferToFlow", "InvokeFlowModule", "EndFlowModuleExecution"})
PARTICIPANTS: Final = frozenset({"ConnectParticipantWithLexBot", "ConnectParticipantWithAgenticCX", "ShowView"})
UNAVAILABLE: Final = frozenset(
    {
        "CheckOutboundCallStatus",
        "CheckSecurityStatus",
        "CheckSegmentMembershipForCustomerProfile",
        "CheckVoiceId",
        "CompleteOutboundCall",
        "CreatePersistentContactAssociation",
        "EvaluateDataTableValues",
        "GetCalculatedAttributesForCustomerProfile",
        "GetCase",
        "GetCustomerProfile",
        "GetCustomerProfileObject",
        "ListDataTableValues",
        "ResumeContact",
        "SetSecurityBehavior",
        "StartOutboundChatContact",
    }
)
VOICE_ID: Final = frozenset({"CheckSecurityStatus", "CheckVoiceId", "SetSecurityBehavior", "StartVoiceIdStream"})
"""The Voice ID blocks, whose service's support ended on 2026-05-20 (docs/flows.md, *Voice ID*)."""
_PREFERRED_ERRORS: Final = ("NoneFoundError", "NoneFound", "NoMatchingError")


def _queue(key: str, raw: Any) -> LocalQueue:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise ValueError(f'queue {key}: expected {{"name": …}} with optional outbound_caller_id, at_capacity')
    unknown = set(raw) - {"name", "outbound_caller_id", "at_capacity"}
    if unknown:
        raise ValueError(f"queue {key}: unknown settings {', '.join(sorted(unknown))}")
    caller_id = raw.get("outbound_caller_id")
    if caller_id is not None and not isinstance(caller_id, str):
        raise ValueError(f"queue {key}: outbound_caller_id must be a phone number")
    if not isinstance(raw.get("at_capacity", False), bool):
        raise ValueError(f"queue {key}: at_capacity must be true or false")
    return LocalQueue(raw["name"], caller_id, raw.get("at_capacity", False))


def unavailable_error(errors: Mapping[str, str]) -> str | None:
    """The error type a lookup that finds nothing takes, of the branches ``errors`` (type → target) has."""
    for error in _PREFERRED_ERRORS:
        if error in errors:
            return error
    return next(iter(errors), None)


def percentage_draw(contact_id: str) -> int:
    """A number from 1 to 100, fixed for a contact: what ``DistributeByPercentage`` compares its conditions with."""
    return int.from_bytes(hashlib.sha256(contact_id.encode()).digest()[:4], "big") % 100 + 1


@dataclass(frozen=True)
class LocalQueue:
    """A queue of the contact centre: what ``$.Queue`` shows of it, and whether it takes more contacts."""

    name: str
    outbound_caller_id: str | None = None
    at_capacity: bool = False


@dataclass
class LocalContactCentre:
    """The state of the contact centre a flow asks about, as a small JSON object can give it.

    ``{"hours_open": true, "agent_free_after_s": 60, "metrics": {"AGENTS_AVAILABLE": 1, ...},
    "queues": {"<queue id>": {"name": "Billing",
    "outbound_caller_id": "+15555550123", "at_capacity": false}}}``. Metric names are those of ``CheckMetricData``
    and ``GetMetricData`` (``AGENTS_AVAILABLE``, ``AGENTS_ONLINE``, ``AGENTS_STAFFED``, ``CONTACTS_IN_QUEUE``,
    ``OLDEST_CONTACT_AGE``…); one not given is 0. A queue is named by its ID (or its whole ARN); once it is the
    working queue, ``$.Queue.Name`` and ``$.Queue.OutboundCallerId.Address`` are its, and a transfer to a queue
    ``at_capacity`` takes ``QueueAtCapacity``. A queue not listed has no name and room for everyone.
    """

    hours_open: bool = True
    agent_free_after_s: float = 60.0
    """How long a contact waits in queue (or on hold) before its agent is free: a choice, Connect's is the centre's."""
    metrics: dict[str, float] = field(
        default_factory=lambda: {
            "AGENTS_AVAILABLE": 1,
            "AGENTS_ONLINE": 1,
            "AGENTS_STAFFED": 1,
            "AGENTS_ON_CONTACT": 0,
            "CONTACTS_IN_QUEUE": 0,
            "OLDEST_CONTACT_AGE": 0,
        }
    )

    queues: dict[str, LocalQueue] = field(default_factory=dict)

    def queue(self, arn: str) -> LocalQueue | None:
        """The queue ``arn`` (or an ID) names, if the config lists it."""
        return self.queues.get(arn) or self.queues.get(arn.rsplit("/", 1)[-1])

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LocalContactCentre:
        unknown = set(data) - {"hours_open", "agent_free_after_s", "metrics", "queues"}
        if unknown:
            raise ValueError(f"unknown contact-centre settings: {', '.join(sorted(unknown))}")
        centre = cls()
        if "hours_open" in data:
            if not isinstance(data["hours_open"], bool):
                raise ValueError("hours_open must be true or false")
            centre.hours_open = data["hours_open"]
        if "agent_free_after_s" in data:
            seconds = data["agent_free_after_s"]
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
                raise ValueError("agent_free_after_s must be a number of seconds, 0 or more")
            centre.agent_free_after_s = float(seconds)
        for name, value in dict(data.get("metrics") or {}).items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"metric {name} must be a number")
            centre.metrics[str(name)] = float(value)
        queues = data.get("queues") or {}
        if not isinstance(queues, Mapping):
            raise ValueError("queues must map a queue ID to {name, outbound_caller_id, at_capacity}")
        for key, raw in queues.items():
            centre.queues[str(key)] = _queue(str(key), raw)
        return centre

    def metric(self, name: str) -> str:
        """A metric's value as a flow compares it (a number's text)."""
        value = float(self.metrics.get(name, 0))
        return str(int(value)) if value.is_integer() else str(value)

    def queue_metrics(self) -> dict[str, Any]:
        """What ``GetMetricData`` leaves under ``$.Metrics``, named as Connect's list of contact attributes names
        them (``$.Metrics.Queue.Size``, ``$.Metrics.Agents.Available.Count``…)."""
        counts = {
            "Online": "AGENTS_ONLINE",
            "Available": "AGENTS_AVAILABLE",
            "Staffed": "AGENTS_STAFFED",
            "Busy": "AGENTS_ON_CONTACT",
        }
        return {
            "Queue": {
                "Name": "local queue",
                "Size": self.metric("CONTACTS_IN_QUEUE"),
                "OldestContactAge": self.metric("OLDEST_CONTACT_AGE"),
            },
            "Agents": {state: {"Count": self.metric(name)} for state, name in counts.items()},
        }
