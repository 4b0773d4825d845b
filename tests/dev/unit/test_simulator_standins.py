"""The flow simulator's stand-ins for what the local cloud has no service for."""

from __future__ import annotations

import pytest

from voicebridge_dev.flows.rules import CANONICAL_TYPES
from voicebridge_dev.simulator.standins import (
    ENDS,
    OTHER_FLOWS,
    PARTICIPANTS,
    RECORDED,
    UNAVAILABLE,
    VOICE_ID,
    LocalContactCentre,
    percentage_draw,
    unavailable_error,
)

RUN_BY_THE_ENGINE = {
    "InvokeLambdaFunction",
    "MessageParticipant",
    "GetParticipantInput",
    "UpdateContactMediaStreamingBehavior",
    "UpdateContactAttributes",
    "UpdateFlowAttributes",
    "Compare",
    "Loop",
    "UpdateFlowLoggingBehavior",
    "UpdateContactTargetQueue",
    "TransferContactToQueue",
    "DisconnectParticipant",
    "CheckHoursOfOperation",
    "CheckMetricData",
    "GetMetricData",
    "DistributeByPercentage",
    "Wait",
    "MessageParticipantIteratively",
}


def test_every_action_type_the_validator_knows_is_run_or_stood_in_for_once() -> None:
    groups = [RUN_BY_THE_ENGINE, RECORDED, ENDS, OTHER_FLOWS, PARTICIPANTS, UNAVAILABLE]
    assert set().union(*groups) == set(CANONICAL_TYPES)
    assert sum(len(group) for group in groups) == len(CANONICAL_TYPES)


def test_a_lookup_that_finds_nothing_takes_the_most_specific_branch_there_is() -> None:
    assert unavailable_error({"NoMatchingError": "a", "NoneFoundError": "b"}) == "NoneFoundError"
    assert unavailable_error({"NoMatchingError": "a"}) == "NoMatchingError"
    assert unavailable_error({"ContactNotLinked": "a"}) == "ContactNotLinked"
    assert unavailable_error({}) is None


def test_the_percentage_draw_is_fixed_for_a_contact_and_within_1_to_100() -> None:
    draws = [percentage_draw(f"contact-{n}") for n in range(500)]
    assert all(1 <= draw <= 100 for draw in draws)
    assert percentage_draw("contact-7") == draws[7]
    assert len(set(draws)) > 50


def test_the_contact_centre_is_open_with_an_agent_free_unless_told_otherwise() -> None:
    default = LocalContactCentre()
    assert default.hours_open
    assert (default.metric("AGENTS_AVAILABLE"), default.metric("CONTACTS_IN_QUEUE"), default.metric("NOPE")) == (
        "1",
        "0",
        "0",
    )
    closed = LocalContactCentre.from_json({"hours_open": False, "metrics": {"CONTACTS_IN_QUEUE": 12, "X": 1.5}})
    assert not closed.hours_open
    assert closed.queue_metrics()["Queue"]["Size"] == "12"
    assert closed.metric("X") == "1.5"


@pytest.mark.parametrize(
    "data",
    [
        {"hours": True},
        {"hours_open": "yes"},
        {"metrics": {"AGENTS_AVAILABLE": "two"}},
        {"metrics": {"A": True}},
        {"agent_free_after_s": -1},
        {"agent_free_after_s": "soon"},
    ],
)
def test_a_contact_centre_file_that_says_something_else_is_refused(data: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        LocalContactCentre.from_json(data)


def test_queues_of_the_centre_file_have_names_and_may_be_full() -> None:
    centre = LocalContactCentre.from_json(
        {"queues": {"q-1": {"name": "Billing", "outbound_caller_id": "+15555550123", "at_capacity": True}}}
    )
    queue = centre.queue("arn:aws:connect:us-east-1:123456789012:instance/i/queue/q-1")

    assert queue is not None and (queue.name, queue.outbound_caller_id, queue.at_capacity) == (
        "Billing",
        "+15555550123",
        True,
    )
    assert centre.queue("q-2") is None
    with pytest.raises(ValueError, match="queue q-1"):
        LocalContactCentre.from_json({"queues": {"q-1": {"name": "Billing", "full": True}}})


def test_the_agent_is_free_a_minute_into_the_call_unless_the_centre_file_says_when() -> None:
    assert LocalContactCentre().agent_free_after_s == 60
    assert LocalContactCentre.from_json({"agent_free_after_s": 300}).agent_free_after_s == 300


def test_every_voice_id_block_is_stood_in_for_by_its_error_branch_or_recorded() -> None:
    assert {"CheckVoiceId", "CheckSecurityStatus", "SetSecurityBehavior"} <= UNAVAILABLE
    assert VOICE_ID <= UNAVAILABLE | RECORDED
