"""Validation of the flow language (2019-10-30): each rule :func:`validate` enforces, one test a rule.

The rules are tried on the echo flow (``contact_flows/echo.json``), which uses every kind of action a rule is about.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures.flows import (
    ACCOUNT,
    ECHO,
    LISTEN_ONLY,
    action,
    flow_document,
    minimal_flow,
    problems,
    reasons_for,
    say,
    warnings_for,
)
from voicebridge_dev.flows import FLOW, MAX_ACTIONS, Problem


def test_a_problem_reads_as_action_colon_reason() -> None:
    assert str(Problem("Play greeting", "Media.SourceType must be S3")) == "Play greeting: Media.SourceType must be S3"


def test_validate_accepts_the_flow_as_json_text_or_as_a_parsed_document() -> None:
    assert problems(flow_document(ECHO)) == problems(ECHO.read_text(encoding="utf-8")) == []


def test_text_that_is_not_json_is_reported() -> None:
    assert [p.action for p in problems("{not json")] == [FLOW]


def test_version_must_be_2019_10_30() -> None:
    document = flow_document(ECHO)
    document["Version"] = "2019-10-31"
    assert any("Version" in r for r in reasons_for(document, FLOW))


def test_legacy_modules_export_is_rejected_with_one_clear_reason() -> None:
    legacy = {
        "modules": [{"id": "1", "type": "PlayPrompt", "branches": [], "parameters": []}],
        "version": "1",
        "start": "1",
        "metadata": {},
    }
    (problem,) = problems(legacy)
    assert problem.action == FLOW
    assert "legacy" in problem.reason and '"modules"' in problem.reason and "2019-10-30" in problem.reason


def test_legacy_block_type_is_rejected_naming_its_replacement() -> None:
    document = minimal_flow(
        {
            "Identifier": "Play",
            "Type": "StartMediaStreaming",
            "Parameters": {},
            "Transitions": {"NextAction": "Bye"},
        }
    )
    (problem,) = problems(document)
    assert "StartMediaStreaming" in problem.reason and "UpdateContactMediaStreamingBehavior" in problem.reason


def test_start_action_must_name_an_action() -> None:
    document = flow_document(ECHO)
    document["StartAction"] = "Nowhere"
    assert any("StartAction" in r for r in reasons_for(document, FLOW))


def test_unknown_action_type_is_rejected() -> None:
    document = minimal_flow(
        {"Identifier": "Hop", "Type": "Teleport", "Parameters": {}, "Transitions": {"NextAction": "Bye"}}
    )
    assert reasons_for(document, "Hop") == ["unknown action Type 'Teleport'"]


def test_a_misspelt_parameter_is_a_warning_and_the_missing_one_an_error() -> None:
    """Was: an unknown parameter is rejected. The reference lists parameters only in part and exports carry
    undocumented ones, so an unknown parameter is a warning now; the required one it misspells is still an error."""
    document = flow_document(ECHO)
    params = action(document, "Await caller turn")["Parameters"]
    params["InvocationTimeLimit"] = params.pop("InvocationTimeLimitSeconds")
    assert reasons_for(document, "Await caller turn") == [
        "InvocationTimeLimitSeconds must be set: InvokeLambdaFunction requires it"
    ]
    assert any(
        w.startswith("InvokeLambdaFunction takes no parameter InvocationTimeLimit")
        for w in warnings_for(document, "Await caller turn")
    )


@pytest.mark.parametrize("limit", ["0", "9", "eight", 8, "", "8.0"])
def test_invocation_time_limit_must_be_a_string_from_1_to_8(limit: Any) -> None:
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Parameters"]["InvocationTimeLimitSeconds"] = limit
    assert any(r.startswith("InvocationTimeLimitSeconds must be") for r in reasons_for(document, "Await caller turn"))


def test_asynchronous_invocation_may_wait_up_to_sixty_seconds() -> None:
    document = flow_document(ECHO)
    params = action(document, "Start listening")["Parameters"]
    params.update(InvocationType="ASYNCHRONOUS", InvocationTimeLimitSeconds="60")
    assert reasons_for(document, "Start listening") == []


def test_lambda_arn_placeholder_must_name_a_function_of_the_template() -> None:
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = "${AwaitFunction.Arn}"
    (reason,) = reasons_for(document, "Await caller turn")
    assert "AwaitFunction" in reason and "not a function of the template" in reason


def test_a_concrete_lambda_arn_is_accepted() -> None:
    document = flow_document(ECHO)
    arn = f"arn:aws:lambda:eu-west-2:{ACCOUNT}:function:await-turn:live"
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = arn
    assert reasons_for(document, "Await caller turn") == []


@pytest.mark.parametrize("arn", ["$.Attributes.Function", "$.FlowAttributes.LambdaArn", "$.External.Next"])
def test_a_lambda_arn_given_dynamically_is_accepted(arn: str) -> None:
    """Was rejected; the reference says the ARN "may be defined statically or dynamically"."""
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = arn
    assert reasons_for(document, "Await caller turn") == []


@pytest.mark.parametrize("arn", ["arn:aws:s3:::bucket", "AwaitTurnFunction", "", "Hello $.Attributes.Name"])
def test_anything_else_as_lambda_arn_is_rejected(arn: str) -> None:
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = arn
    assert any("LambdaFunctionARN" in r for r in reasons_for(document, "Await caller turn"))


def test_lambda_invocation_attributes_must_be_a_flat_string_map() -> None:
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Parameters"]["LambdaInvocationAttributes"]["MaxWaitMs"] = 7000
    assert reasons_for(document, "Await caller turn") == [
        "LambdaInvocationAttributes.MaxWaitMs must be a string (flat string map)"
    ]


def test_invoke_lambda_supports_no_conditions() -> None:
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Transitions"]["Conditions"] = [
        {"NextAction": "Check turn result", "Condition": {"Operator": "Equals", "Operands": ["OK"]}}
    ]
    assert reasons_for(document, "Await caller turn") == ["InvokeLambdaFunction supports no Conditions"]


def test_an_error_type_the_action_cannot_raise_is_rejected() -> None:
    document = flow_document(ECHO)
    action(document, "Await caller turn")["Transitions"]["Errors"][0]["ErrorType"] = "QueueAtCapacity"
    assert any("no error 'QueueAtCapacity'" in r for r in reasons_for(document, "Await caller turn"))


@pytest.mark.parametrize("count", ["-1", 3, "three"])
def test_loop_count_must_be_a_whole_number(count: Any) -> None:
    document = flow_document(ECHO)
    action(document, "Count rounds")["Parameters"]["LoopCount"] = count
    assert any(r.startswith("LoopCount must be") for r in reasons_for(document, "Count rounds"))


def test_a_loop_count_past_100_is_a_warning_since_no_source_gives_that_bound() -> None:
    document = flow_document(ECHO)
    action(document, "Count rounds")["Parameters"]["LoopCount"] = "101"
    assert reasons_for(document, "Count rounds") == []
    assert any("no AWS source" in w for w in warnings_for(document, "Count rounds"))


@pytest.mark.parametrize("missing", ["ContinueLooping", "DoneLooping"])
def test_loop_needs_both_its_conditions(missing: str) -> None:
    document = flow_document(ECHO)
    transitions = action(document, "Count rounds")["Transitions"]
    transitions["Conditions"] = [c for c in transitions["Conditions"] if c["Condition"]["Operands"] != [missing]]
    assert f"Loop needs a condition Equals {missing}" in reasons_for(document, "Count rounds")


def test_loop_allows_no_other_condition() -> None:
    document = flow_document(ECHO)
    action(document, "Count rounds")["Transitions"]["Conditions"].append(
        {"NextAction": "Synthesize reply", "Condition": {"Operator": "Equals", "Operands": ["NotDone"]}}
    )
    assert any("only one ContinueLooping and one DoneLooping" in r for r in reasons_for(document, "Count rounds"))


def test_message_participant_takes_exactly_one_prompt() -> None:
    document = flow_document(ECHO)
    action(document, "Play greeting")["Parameters"]["Text"] = "Hello"
    assert reasons_for(document, "Play greeting") == [
        "exactly one of Text, SSML, PromptId, Media is allowed, found Text, Media"
    ]
    action(document, "Play greeting")["Parameters"] = {}
    assert reasons_for(document, "Play greeting") == ["exactly one of Text, SSML, PromptId, Media is required"]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("SourceType", "URL", "Media.SourceType must be S3, not 'URL'"),
        ("MediaType", "Video", "Media.MediaType must be Audio, not 'Video'"),
        ("Uri", "", "Media.Uri must be a non-empty string"),
    ],
)
def test_media_prompt_is_audio_from_s3(field: str, value: str, expected: str) -> None:
    document = flow_document(ECHO)
    action(document, "Play greeting")["Parameters"]["Media"][field] = value
    assert reasons_for(document, "Play greeting") == [expected]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"MediaStreamingState": "On"}, "MediaStreamingState must be Enabled or Disabled"),
        ({"MediaStreamType": "Video"}, "MediaStreamType must be Audio"),
        (
            {"Participants": [{"ParticipantType": "Agent", "MediaDirections": ["From"]}]},
            "ParticipantType Customer",
        ),
        ({"Participants": [{"ParticipantType": "Customer", "MediaDirections": ["Up"]}]}, "From/To"),
        ({"Participants": []}, "Participants must be a non-empty list"),
    ],
)
def test_media_streaming_parameters_are_checked(change: dict[str, Any], expected: str) -> None:
    document = flow_document(ECHO)
    action(document, "Start media streaming")["Parameters"].update(change)
    assert any(expected in r for r in reasons_for(document, "Start media streaming"))


def test_compare_value_must_be_a_single_jsonpath() -> None:
    document = flow_document(ECHO)
    action(document, "Check turn result")["Parameters"]["ComparisonValue"] = "Result"
    assert any("ComparisonValue" in r for r in reasons_for(document, "Check turn result"))


def test_contact_attributes_are_a_flat_string_map() -> None:
    document = flow_document(ECHO)
    action(document, "Remember turn")["Parameters"]["Attributes"]["LastTurn"] = -1
    assert reasons_for(document, "Remember turn") == ["Attributes.LastTurn must be a string (flat string map)"]


def test_target_queue_needs_a_queue_reference() -> None:
    document = flow_document(LISTEN_ONLY)
    action(document, "Set working queue")["Parameters"] = {"QueueId": "support"}
    assert any("QueueId must be" in r for r in reasons_for(document, "Set working queue"))


def test_placeholder_must_name_a_template_parameter_or_resource() -> None:
    document = flow_document(LISTEN_ONLY)
    action(document, "Set working queue")["Parameters"]["QueueId"] = "${SupportQueueArn}"
    assert reasons_for(document, "Set working queue") == [
        "placeholder ${SupportQueueArn} names nothing the template declares"
    ]


@pytest.mark.parametrize("text", ["${Agent Queue}", "${AgentQueueArn", "${}"])
def test_placeholders_follow_fn_sub_syntax(text: str) -> None:
    document = flow_document(ECHO)
    action(document, "Say technical goodbye")["Parameters"]["Text"] = text
    assert any("placeholder" in r for r in reasons_for(document, "Say technical goodbye"))


def test_every_action_but_the_last_needs_a_next_action() -> None:
    document = flow_document(ECHO)
    del action(document, "Play greeting")["Transitions"]["NextAction"]
    assert reasons_for(document, "Play greeting") == ["Transitions.NextAction is required"]


def test_every_transition_target_must_exist() -> None:
    document = flow_document(ECHO)
    action(document, "Play reply")["Transitions"]["NextAction"] = "Await turn"
    assert reasons_for(document, "Play reply") == ["transition to 'Await turn', which is not an action"]


def test_an_unreachable_action_is_a_warning_not_an_error() -> None:
    """Was an error; Connect stores blocks nothing leads to, so it is a warning for a person to look at."""
    document = flow_document(ECHO)
    document["Actions"].append(say("Orphan prompt", "Nobody hears this", "Disconnect"))
    assert reasons_for(document, "Orphan prompt") == []
    assert warnings_for(document, "Orphan prompt") == [
        "unreachable from StartAction (Connect keeps it; nothing runs it)"
    ]


def test_disconnect_must_have_empty_transitions() -> None:
    document = flow_document(ECHO)
    action(document, "Disconnect")["Transitions"] = {"NextAction": "Disconnect"}
    assert reasons_for(document, "Disconnect") == [
        "DisconnectParticipant ends the flow: its Transitions must be empty ({})"
    ]


@pytest.mark.parametrize("char", list("%:(\\/)=$,;[]{}"))
def test_identifier_may_not_contain_reserved_characters(char: str) -> None:
    identifier = f"Say hi{char}"
    document = minimal_flow(say(identifier, "Hi"))
    assert any("forbidden character" in r for r in reasons_for(document, identifier))


def test_identifier_is_at_most_fifty_characters() -> None:
    assert reasons_for(minimal_flow(say("x" * 50, "Hi")), "x" * 50) == []
    assert reasons_for(minimal_flow(say("x" * 51, "Hi")), "x" * 51) == ["Identifier is longer than 50 characters"]


def test_identifier_may_not_be_a_reserved_word() -> None:
    assert reasons_for(minimal_flow(say("constructor", "Hi")), "constructor") == ["Identifier is a reserved word"]


def test_identifiers_are_unique() -> None:
    document = minimal_flow(say("Hello", "Hi", "Hello"), say("Hello", "Hi again"))
    assert any("more than one action" in r for r in reasons_for(document, "Hello"))


def test_a_flow_has_at_most_250_actions() -> None:
    def chain(total: int) -> dict[str, Any]:
        prompts = [say(f"Prompt {i}", "Hi", f"Prompt {i + 1}") for i in range(total - 1)]
        prompts[-1]["Transitions"]["NextAction"] = "Bye"
        return minimal_flow(*prompts)

    assert problems(chain(MAX_ACTIONS)) == []
    assert reasons_for(chain(MAX_ACTIONS + 1), FLOW) == ["251 actions, more than the 250 allowed"]


def test_content_longer_than_256000_characters_is_rejected() -> None:
    document = minimal_flow(say("Long", "a" * 256_000))
    assert any("more than the 256000 allowed" in r for r in reasons_for(document, FLOW))


def test_metadata_describing_a_missing_action_is_a_warning() -> None:
    """Was an error; the reference lets Metadata "be filled in with data as desired", so Connect stores it."""
    document = flow_document(ECHO)
    document["Metadata"]["ActionMetadata"]["Removed block"] = {"position": {"x": 0, "y": 0}}
    assert reasons_for(document, FLOW) == []
    assert any("'Removed block'" in w for w in warnings_for(document, FLOW))
