"""``contact_flows/voice-agent-streaming.json``: the streaming transport's flow. It opens the AI session, hands the call
to the Lex bot that carries it to the AI agent (and so to the A2A agent server), and routes on the outcome the agent
hands back in ``$.Lex.SessionAttributes.Tool`` (docs/protocols.md, "Registering an external AI agent with Amazon
Connect"): Escalate queues the caller, Complete hangs up, anything else apologises and hangs up."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tests.fixtures import ROOT
from voicebridge_dev.flows import ACTION_TYPES, Flow, parse_flow, render, template_functions, template_names, validate

PATH = ROOT / "contact_flows" / "voice-agent-streaming.json"
TEMPLATE = ROOT / "template.yaml"
ACCOUNT = "111111111111"
STREAMING_PARAMETERS = {"StreamingAssistantArn", "StreamingLexBotAliasArn", "StreamingAIAgentVersionArn"}
OUTPUTS = {
    "AgentQueueArn": f"arn:aws:connect:us-east-1:{ACCOUNT}:instance/c8c0e68d-0000-4000-8000-000000000000"
    "/queue/0a1b2c3d-0000-4000-8000-000000000000",
    "StreamingAssistantArn": f"arn:aws:wisdom:us-east-1:{ACCOUNT}:assistant/11111111-2222-4333-8444-555555555555",
    "StreamingLexBotAliasArn": f"arn:aws:lex:us-east-1:{ACCOUNT}:bot-alias/ABCDEFGHIJ/TSTALIASID",
    "StreamingAIAgentVersionArn": f"arn:aws:wisdom:us-east-1:{ACCOUNT}:ai-agent/11111111-2222-4333-8444-555555555555"
    "/44444444-5555-4666-8777-888888888888:1",
}
TECHNICAL_GOODBYE = "Say technical goodbye"


@pytest.fixture(scope="module")
def flow() -> Flow:
    return parse_flow(PATH.read_text(encoding="utf-8"), known_names=template_names(TEMPLATE))


def document() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(PATH.read_text(encoding="utf-8"))
    return loaded


def follow(flow: Flow, start: str, *, taking: str | None = None) -> list[str]:
    """The actions from ``start`` to the end, each one's NextAction (or the condition on ``taking``) after it."""
    path, current = [start], flow[start]
    while current.type != "DisconnectParticipant":
        target = (taking and current.condition_target(taking)) or current.next_action
        assert target is not None, current.identifier
        path.append(target)
        current = flow[target]
    return path


def test_the_flow_is_valid_with_the_templates_names() -> None:
    found = validate(
        PATH.read_text(encoding="utf-8"),
        known_functions=template_functions(TEMPLATE),
        known_names=template_names(TEMPLATE),
        warnings=True,
    )
    assert found == []


def test_its_placeholders_are_the_queue_and_the_streaming_parameters_only() -> None:
    placeholders = set(re.findall(r"\$\{([^}]*)\}", PATH.read_text(encoding="utf-8")))
    assert placeholders == {"AgentQueueArn"} | STREAMING_PARAMETERS


def test_it_renders_to_a_valid_flow_with_concrete_arns() -> None:
    rendered = render(PATH.read_text(encoding="utf-8"), OUTPUTS)
    assert "${" not in rendered
    assert validate(rendered) == []


def test_every_action_is_placed_on_the_designer_canvas_once() -> None:
    positions = document()["Metadata"]["ActionMetadata"]
    assert set(positions) == {action["Identifier"] for action in document()["Actions"]}
    points = [(p["position"]["x"], p["position"]["y"]) for p in positions.values()]
    assert len(set(points)) == len(points)


def test_every_action_that_can_fail_has_an_error_branch(flow: Flow) -> None:
    assert [a.identifier for a in flow.actions.values() if ACTION_TYPES[a.type].errors and not a.errors] == []


def test_it_logs_sets_a_voice_and_opens_the_ai_session_before_the_hand_off(flow: Flow) -> None:
    start = follow(flow, flow.start_action)[:4]

    assert [flow[identifier].type for identifier in start] == [
        "UpdateFlowLoggingBehavior",
        "UpdateContactTextToSpeechVoice",
        "CreateWisdomSession",
        "ConnectParticipantWithLexBot",
    ]
    assert flow[start[0]].parameters == {"FlowLoggingBehavior": "Enabled"}
    assert flow[start[2]].parameters == {"WisdomAssistantArn": "${StreamingAssistantArn}"}


def test_the_bot_is_told_the_versioned_ai_agent_and_prompts_with_a_single_space(flow: Flow) -> None:
    [lex] = flow.of_type("ConnectParticipantWithLexBot")

    assert lex.parameters["LexSessionAttributes"] == {
        "x-amz-lex:q-in-connect:ai-agent-arn": "${StreamingAIAgentVersionArn}"
    }
    assert lex.parameters["LexV2Bot"] == {"AliasArn": "${StreamingLexBotAliasArn}"}
    assert lex.parameters["Text"] == " "


def test_the_outcome_is_read_from_the_tool_session_attribute_on_every_way_out_of_the_bot(flow: Flow) -> None:
    [lex] = flow.of_type("ConnectParticipantWithLexBot")
    [route] = [a for a in flow.of_type("Compare") if a.parameters["ComparisonValue"] == "$.Lex.SessionAttributes.Tool"]

    # The Lex block's Default output is its NoMatchingCondition branch.
    assert lex.next_action == lex.error_target("NoMatchingCondition") == route.identifier
    assert lex.error_target("NoMatchingError") == lex.error_target("InputTimeLimitExceeded") == TECHNICAL_GOODBYE


def test_an_escalation_sets_the_agent_queue_and_transfers(flow: Flow) -> None:
    [route] = [a for a in flow.of_type("Compare") if a.parameters["ComparisonValue"] == "$.Lex.SessionAttributes.Tool"]
    path = follow(flow, route.identifier, taking="Escalate")

    assert [flow[identifier].type for identifier in path[1:3]] == ["UpdateContactTargetQueue", "TransferContactToQueue"]
    assert flow[path[1]].parameters == {"QueueId": "${AgentQueueArn}"}


def test_a_completion_hangs_up_with_no_word_of_its_own(flow: Flow) -> None:
    [route] = [a for a in flow.of_type("Compare") if a.parameters["ComparisonValue"] == "$.Lex.SessionAttributes.Tool"]

    assert flow[route.condition_target("Complete") or ""].type == "DisconnectParticipant"


@pytest.mark.parametrize("outcome", ["", "Transfer", "COMPLETE"])
def test_any_other_outcome_apologises_and_hangs_up(flow: Flow, outcome: str) -> None:
    [route] = [a for a in flow.of_type("Compare") if a.parameters["ComparisonValue"] == "$.Lex.SessionAttributes.Tool"]

    assert route.condition_target(outcome) is None
    assert route.next_action == route.error_target("NoMatchingCondition") == TECHNICAL_GOODBYE
    assert [flow[identifier].type for identifier in follow(flow, TECHNICAL_GOODBYE)] == [
        "MessageParticipant",
        "DisconnectParticipant",
    ]


def test_a_full_queue_or_a_failed_transfer_is_told_to_the_caller_before_the_call_ends(flow: Flow) -> None:
    [transfer] = flow.of_type("TransferContactToQueue")

    for error in ("QueueAtCapacity", "NoMatchingError"):
        said = flow[transfer.error_target(error) or ""]
        assert said.type == "MessageParticipant"
        assert flow[said.next_action or ""].type == "DisconnectParticipant"
