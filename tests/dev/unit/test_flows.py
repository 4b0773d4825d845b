"""Contact flows in the flow language (2019-10-30): the shipped flows, the validator's rules, rendering.

The behaviour tests at the end run the shipped flows through a small interpreter of the actions they use
(Loop counts per action and resets after DoneLooping, as Connect documents), with scripted Lambda results.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from tests.fixtures import ROOT
from voicebridge_dev.flows import (
    ACTION_TYPES,
    FLOW,
    MAX_ACTIONS,
    Action,
    Flow,
    InvalidFlowError,
    Problem,
    StackOutputsError,
    TemplateError,
    UnresolvedPlaceholderError,
    cli_render,
    cli_validate,
    load_flow,
    parse_flow,
    render,
    template_functions,
    template_names,
    validate,
)

FLOWS = ROOT / "contact_flows"
VOICE_AGENT = FLOWS / "voice-agent.json"
LISTEN_ONLY = FLOWS / "listen-only.json"
FUNCTIONS = {"SynthesizeFunction", "StartListeningFunction", "AwaitTurnFunction", "TranscribeStreamFunction"}
NAMES = FUNCTIONS | {"AgentQueueArn"}
ACCOUNT = "111111111111"
STACK_OUTPUTS = {
    "SynthesizeFunctionArn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:vb-synthesize",
    "StartListeningFunctionArn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:vb-start-listening",
    "AwaitTurnFunctionArn": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:vb-await-turn",
    "AgentQueueArn": f"arn:aws:connect:us-east-1:{ACCOUNT}:instance/c8c0e68d-0000-4000-8000-000000000000"
    "/queue/0a1b2c3d-0000-4000-8000-000000000000",
}


def flow_document(path: Path = VOICE_AGENT) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return document


def action(document: dict[str, Any], identifier: str) -> dict[str, Any]:
    return next(a for a in document["Actions"] if a["Identifier"] == identifier)


def problems(document: dict[str, Any] | str) -> list[Problem]:
    return validate(document, known_functions=FUNCTIONS, known_names=NAMES)


def reasons_for(document: dict[str, Any] | str, identifier: str) -> list[str]:
    return [p.reason for p in problems(document) if p.action == identifier]


def minimal_flow(*actions: dict[str, Any]) -> dict[str, Any]:
    bye = {"Identifier": "Bye", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}}
    return {
        "Version": "2019-10-30",
        "StartAction": actions[0]["Identifier"] if actions else "Bye",
        "Actions": [*actions, bye],
    }


def say(identifier: str, text: str, next_action: str = "Bye") -> dict[str, Any]:
    return {
        "Identifier": identifier,
        "Type": "MessageParticipant",
        "Parameters": {"Text": text},
        "Transitions": {"NextAction": next_action},
    }


# --- the shipped flows --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_is_valid(path: Path) -> None:
    assert problems(path.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_places_every_action_on_the_designer_canvas(path: Path) -> None:
    document = flow_document(path)
    positions = document["Metadata"]["ActionMetadata"]
    assert set(positions) == {a["Identifier"] for a in document["Actions"]}
    points = [(p["position"]["x"], p["position"]["y"]) for p in positions.values()]
    assert len(set(points)) == len(points)


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_passes_through_fn_sub_with_only_template_placeholders(path: Path) -> None:
    placeholders = set(re.findall(r"\$\{([^}]*)\}", path.read_text(encoding="utf-8")))
    assert placeholders <= {f"{name}.Arn" for name in FUNCTIONS} | {"AgentQueueArn"}


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_shipped_flow_renders_to_a_valid_flow_with_concrete_arns(path: Path) -> None:
    rendered = render(path.read_text(encoding="utf-8"), STACK_OUTPUTS)
    assert "${" not in rendered
    assert validate(rendered) == []


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_every_action_that_can_fail_has_an_error_branch(path: Path) -> None:
    flow = load_flow(path)
    assert [a.identifier for a in flow.actions.values() if ACTION_TYPES[a.type].errors and not a.errors] == []


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_every_lambda_invocation_has_an_error_branch(path: Path) -> None:
    flow = load_flow(path)
    lambdas = flow.of_type("InvokeLambdaFunction")
    assert lambdas
    assert all(a.error_target("NoMatchingError") for a in lambdas)


@pytest.mark.parametrize("path", [VOICE_AGENT, LISTEN_ONLY], ids=lambda p: p.name)
def test_media_streaming_is_stopped_on_every_way_to_the_hang_up(path: Path) -> None:
    flow = load_flow(path)
    (start,) = [
        a
        for a in flow.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Enabled"
    ]
    stops = {
        a.identifier
        for a in flow.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Disabled"
    }
    reached = reachable(flow, start.identifier, avoiding=stops)
    assert not any(flow[a].type == "DisconnectParticipant" for a in reached)


# --- the voice-agent conversation, by its graph -------------------------------------------------------------


def reachable(
    flow: Flow,
    start: str,
    *,
    avoiding: frozenset[str] | set[str] = frozenset(),
    through: Callable[[str], bool] | None = None,
) -> set[str]:
    """Actions reachable from ``start``'s targets without entering ``avoiding``; ``through`` limits which
    reached actions are walked past."""
    seen: set[str] = set()
    pending = [t for t in flow[start].targets() if t not in avoiding]
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        if through is None or through(current):
            pending += [t for t in flow[current].targets() if t not in avoiding]
    return seen


def lambda_name(flow: Flow, identifier: str) -> str:
    match = re.fullmatch(r"\$\{(\w+)\.Arn\}", flow[identifier].parameters["LambdaFunctionARN"])
    assert match
    return match.group(1)


def invokes(flow: Flow, function: str) -> list[str]:
    return [a.identifier for a in flow.of_type("InvokeLambdaFunction") if lambda_name(flow, a.identifier) == function]


def is_sonic_prompt(flow: Flow, identifier: str) -> bool:
    return flow[identifier].type == "MessageParticipant" and "Media" in flow[identifier].parameters


def next_lambdas(flow: Flow, start: str) -> set[str]:
    """Functions that can be the next one invoked after ``start``, whatever branches are taken."""
    reached = reachable(flow, start, through=lambda a: flow[a].type != "InvokeLambdaFunction")
    return {lambda_name(flow, a) for a in reached if flow[a].type == "InvokeLambdaFunction"}


@pytest.fixture(scope="module")
def voice_agent() -> Flow:
    return load_flow(VOICE_AGENT, known_functions=FUNCTIONS)


def test_every_sonic_prompt_is_followed_by_await_turn_or_by_the_end_of_the_call(voice_agent: Flow) -> None:
    prompts = [a for a in voice_agent.actions if is_sonic_prompt(voice_agent, a)]
    assert len(prompts) >= 4
    for prompt in prompts:
        assert next_lambdas(voice_agent, prompt) <= {"AwaitTurnFunction"}, prompt


def test_conversation_prompts_hand_over_straight_to_await_turn_with_no_hold(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    conversation = [
        a for a in voice_agent.actions if is_sonic_prompt(voice_agent, a) and voice_agent[a].next_action == await_turn
    ]
    assert {"Play greeting", "Play reply", "Play still-there prompt"} <= set(conversation)
    assert not voice_agent.of_type("GetParticipantInput")


def test_await_turn_fits_connects_eight_second_limit(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    params = voice_agent[await_turn].parameters
    assert params["InvocationTimeLimitSeconds"] == "8"
    assert 0 < int(params["LambdaInvocationAttributes"]["MaxWaitMs"]) < 8000


def test_await_turn_asks_for_the_turn_after_the_one_last_handled(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    assert voice_agent[await_turn].parameters["LambdaInvocationAttributes"]["AfterTurn"] == "$.Attributes.LastTurn"
    check = voice_agent[voice_agent[await_turn].next_action or ""]
    remember = voice_agent[check.condition_target("Turn") or ""]
    assert remember.type == "UpdateContactAttributes"
    assert remember.parameters["Attributes"]["LastTurn"] == "$.External.TurnIndex"


def test_the_reply_is_synthesized_from_the_callers_transcript(voice_agent: Flow) -> None:
    check = next(a for a in voice_agent.of_type("Compare") if a.condition_target("Turn"))
    after_turn = reachable(
        voice_agent,
        check.condition_target("Turn") or "",
        through=lambda a: voice_agent[a].type != "InvokeLambdaFunction",
    )
    replies = [
        a
        for a in after_turn
        if voice_agent[a].type == "InvokeLambdaFunction"
        and voice_agent[a].parameters["LambdaInvocationAttributes"].get("Text") == "$.External.Transcript"
    ]
    assert replies == ["Synthesize reply"]
    assert lambda_name(voice_agent, "Synthesize reply") == "SynthesizeFunction"
    assert voice_agent["Synthesize reply"].parameters["LambdaInvocationAttributes"]["Prefix"]


def test_timeout_path_plays_a_prompt_before_awaiting_again(voice_agent: Flow) -> None:
    (await_turn,) = invokes(voice_agent, "AwaitTurnFunction")
    check = voice_agent[voice_agent[await_turn].next_action or ""]
    timeout = check.condition_target("Timeout") or ""
    prompts = {a.identifier for a in voice_agent.of_type("MessageParticipant")}
    assert timeout and timeout not in prompts
    assert await_turn not in reachable(voice_agent, timeout, avoiding=prompts)


def test_no_prompt_free_chain_of_lambdas_exceeds_connects_twenty_second_budget(voice_agent: Flow) -> None:
    def longest(identifier: str, seen: frozenset[str]) -> int:
        current = voice_agent[identifier]
        if current.type == "MessageParticipant":
            return 0
        own = int(current.parameters["InvocationTimeLimitSeconds"]) if current.type == "InvokeLambdaFunction" else 0
        return own + max((longest(t, seen | {t}) for t in current.targets() if t not in seen), default=0)

    for start in voice_agent.of_type("InvokeLambdaFunction"):
        assert longest(start.identifier, frozenset({start.identifier})) <= 20, start.identifier


def test_the_conversation_loop_counts_timeouts_and_rounds_with_loops(voice_agent: Flow) -> None:
    loops = {a.identifier: a for a in voice_agent.of_type("Loop")}
    assert {"Count silence", "Count rounds"} <= set(loops)
    for loop in loops.values():
        assert loop.condition_target("ContinueLooping") and loop.condition_target("DoneLooping")


# --- validation rules ---------------------------------------------------------------------------------------


def test_a_problem_reads_as_action_colon_reason() -> None:
    assert str(Problem("Play greeting", "Media.SourceType must be S3")) == "Play greeting: Media.SourceType must be S3"


def test_validate_accepts_the_flow_as_json_text_or_as_a_parsed_document() -> None:
    assert problems(flow_document()) == problems(VOICE_AGENT.read_text(encoding="utf-8")) == []


def test_text_that_is_not_json_is_reported() -> None:
    assert [p.action for p in problems("{not json")] == [FLOW]


def test_version_must_be_2019_10_30() -> None:
    document = flow_document()
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
    document = flow_document()
    document["StartAction"] = "Nowhere"
    assert any("StartAction" in r for r in reasons_for(document, FLOW))


def test_unknown_action_type_is_rejected() -> None:
    document = minimal_flow(
        {"Identifier": "Hop", "Type": "Teleport", "Parameters": {}, "Transitions": {"NextAction": "Bye"}}
    )
    assert reasons_for(document, "Hop") == ["unknown action Type 'Teleport'"]


def test_unknown_parameter_is_rejected() -> None:
    document = flow_document()
    params = action(document, "Await caller turn")["Parameters"]
    params["InvocationTimeLimit"] = params.pop("InvocationTimeLimitSeconds")
    reasons = reasons_for(document, "Await caller turn")
    assert "InvokeLambdaFunction takes no parameter InvocationTimeLimit" in reasons
    assert any(r.startswith("InvocationTimeLimitSeconds must be") for r in reasons)


@pytest.mark.parametrize("limit", ["0", "9", "eight", 8, "", "8.0"])
def test_invocation_time_limit_must_be_a_string_from_1_to_8(limit: Any) -> None:
    document = flow_document()
    action(document, "Await caller turn")["Parameters"]["InvocationTimeLimitSeconds"] = limit
    assert any(r.startswith("InvocationTimeLimitSeconds must be") for r in reasons_for(document, "Await caller turn"))


def test_asynchronous_invocation_may_wait_up_to_sixty_seconds() -> None:
    document = flow_document()
    params = action(document, "Start listening")["Parameters"]
    params.update(InvocationType="ASYNCHRONOUS", InvocationTimeLimitSeconds="60")
    assert reasons_for(document, "Start listening") == []


def test_lambda_arn_placeholder_must_name_a_function_of_the_template() -> None:
    document = flow_document()
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = "${AwaitFunction.Arn}"
    (reason,) = reasons_for(document, "Await caller turn")
    assert "AwaitFunction" in reason and "not a function of the template" in reason


def test_a_concrete_lambda_arn_is_accepted() -> None:
    document = flow_document()
    arn = f"arn:aws:lambda:eu-west-2:{ACCOUNT}:function:await-turn:live"
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = arn
    assert reasons_for(document, "Await caller turn") == []


@pytest.mark.parametrize("arn", ["$.Attributes.Function", "arn:aws:s3:::bucket", "AwaitTurnFunction", ""])
def test_anything_else_as_lambda_arn_is_rejected(arn: str) -> None:
    document = flow_document()
    action(document, "Await caller turn")["Parameters"]["LambdaFunctionARN"] = arn
    assert any("LambdaFunctionARN" in r for r in reasons_for(document, "Await caller turn"))


def test_lambda_invocation_attributes_must_be_a_flat_string_map() -> None:
    document = flow_document()
    action(document, "Await caller turn")["Parameters"]["LambdaInvocationAttributes"]["MaxWaitMs"] = 7000
    assert reasons_for(document, "Await caller turn") == [
        "LambdaInvocationAttributes.MaxWaitMs must be a string (flat string map)"
    ]


def test_invoke_lambda_supports_no_conditions() -> None:
    document = flow_document()
    action(document, "Await caller turn")["Transitions"]["Conditions"] = [
        {"NextAction": "Check turn result", "Condition": {"Operator": "Equals", "Operands": ["OK"]}}
    ]
    assert reasons_for(document, "Await caller turn") == ["InvokeLambdaFunction supports no Conditions"]


def test_an_error_type_the_action_cannot_raise_is_rejected() -> None:
    document = flow_document()
    action(document, "Await caller turn")["Transitions"]["Errors"][0]["ErrorType"] = "QueueAtCapacity"
    assert any("no error 'QueueAtCapacity'" in r for r in reasons_for(document, "Await caller turn"))


@pytest.mark.parametrize("count", ["101", "-1", 3, "three"])
def test_loop_count_must_be_from_0_to_100(count: Any) -> None:
    document = flow_document()
    action(document, "Count rounds")["Parameters"]["LoopCount"] = count
    assert any(r.startswith("LoopCount must be") for r in reasons_for(document, "Count rounds"))


@pytest.mark.parametrize("missing", ["ContinueLooping", "DoneLooping"])
def test_loop_needs_both_its_conditions(missing: str) -> None:
    document = flow_document()
    transitions = action(document, "Count rounds")["Transitions"]
    transitions["Conditions"] = [c for c in transitions["Conditions"] if c["Condition"]["Operands"] != [missing]]
    assert f"Loop needs a condition Equals {missing}" in reasons_for(document, "Count rounds")


def test_loop_allows_no_other_condition() -> None:
    document = flow_document()
    action(document, "Count rounds")["Transitions"]["Conditions"].append(
        {"NextAction": "Synthesize reply", "Condition": {"Operator": "Equals", "Operands": ["NotDone"]}}
    )
    assert any("only one ContinueLooping and one DoneLooping" in r for r in reasons_for(document, "Count rounds"))


def test_message_participant_takes_exactly_one_prompt() -> None:
    document = flow_document()
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
    document = flow_document()
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
    document = flow_document()
    action(document, "Start media streaming")["Parameters"].update(change)
    assert any(expected in r for r in reasons_for(document, "Start media streaming"))


def test_compare_value_must_be_a_single_jsonpath() -> None:
    document = flow_document()
    action(document, "Check turn result")["Parameters"]["ComparisonValue"] = "Result"
    assert any("ComparisonValue" in r for r in reasons_for(document, "Check turn result"))


def test_contact_attributes_are_a_flat_string_map() -> None:
    document = flow_document()
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
    document = flow_document()
    action(document, "Say technical goodbye")["Parameters"]["Text"] = text
    assert any("placeholder" in r for r in reasons_for(document, "Say technical goodbye"))


def test_every_action_but_the_last_needs_a_next_action() -> None:
    document = flow_document()
    del action(document, "Play greeting")["Transitions"]["NextAction"]
    assert reasons_for(document, "Play greeting") == ["Transitions.NextAction is required"]


def test_every_transition_target_must_exist() -> None:
    document = flow_document()
    action(document, "Play reply")["Transitions"]["NextAction"] = "Await turn"
    assert reasons_for(document, "Play reply") == ["transition to 'Await turn', which is not an action"]


def test_an_unreachable_action_is_reported() -> None:
    document = flow_document()
    document["Actions"].append(say("Orphan prompt", "Nobody hears this", "Disconnect"))
    assert reasons_for(document, "Orphan prompt") == ["unreachable from StartAction"]


def test_disconnect_must_have_empty_transitions() -> None:
    document = flow_document()
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


def test_metadata_may_not_describe_missing_actions() -> None:
    document = flow_document()
    document["Metadata"]["ActionMetadata"]["Removed block"] = {"position": {"x": 0, "y": 0}}
    assert any("'Removed block'" in r for r in reasons_for(document, FLOW))


# --- models -------------------------------------------------------------------------------------------------


def test_parse_flow_models_actions_and_their_branches() -> None:
    flow = parse_flow(flow_document())
    check = flow["Check turn result"]
    assert flow.start_action == "Enable flow logging"
    assert (check.condition_target("Turn"), check.condition_target("Timeout")) == (
        "Remember turn",
        "Mark silence",
    )
    assert check.error_target("NoMatchingCondition") == "Count failures"
    assert set(check.targets()) == {"Remember turn", "Mark silence", "Count failures"}


def test_parse_flow_raises_with_every_problem() -> None:
    document = flow_document()
    document["Version"] = "1"
    action(document, "Play reply")["Transitions"]["NextAction"] = "Nowhere"
    with pytest.raises(InvalidFlowError) as raised:
        parse_flow(document)
    assert {p.action for p in raised.value.problems} == {FLOW, "Play reply"}


# --- rendering ----------------------------------------------------------------------------------------------


def test_render_fills_function_arns_from_stack_output_keys() -> None:
    text = '{"A": "${SynthesizeFunction.Arn}", "B": "$.External.PromptUri"}'
    assert json.loads(render(text, STACK_OUTPUTS)) == {
        "A": STACK_OUTPUTS["SynthesizeFunctionArn"],
        "B": "$.External.PromptUri",
    }


def test_render_fills_bare_names_and_pseudo_parameters() -> None:
    assert render("${AgentQueueArn} ${AWS::Region}", {"AgentQueueArn": "q", "AWS::Region": "eu-west-2"}) == (
        "q eu-west-2"
    )


def test_render_turns_an_escaped_placeholder_into_a_literal() -> None:
    assert render("${!Literal}", {}) == "${Literal}"


def test_render_escapes_values_for_json() -> None:
    assert json.loads(render('{"A": "${Name}"}', {"Name": 'say "hi"\\'}))["A"] == 'say "hi"\\'


def test_render_names_every_unresolved_placeholder() -> None:
    with pytest.raises(UnresolvedPlaceholderError) as raised:
        render(
            "${SynthesizeFunction.Arn} ${AwaitTurnFunction.Arn} ${AwaitTurnFunction.Arn}",
            {"SynthesizeFunctionArn": "arn"},
        )
    assert raised.value.names == ["AwaitTurnFunction.Arn"]
    assert "${AwaitTurnFunction.Arn}" in str(raised.value)


def test_cli_render_takes_outputs_and_overrides() -> None:
    outputs = {k: v for k, v in STACK_OUTPUTS.items() if k != "AgentQueueArn"}
    rendered = cli_render(LISTEN_ONLY, outputs, overrides={"AgentQueueArn": STACK_OUTPUTS["AgentQueueArn"]})
    assert action(json.loads(rendered), "Set working queue")["Parameters"]["QueueId"] == STACK_OUTPUTS["AgentQueueArn"]


def test_cli_render_reads_the_outputs_of_a_deployed_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    for variable in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_CLOUDFORMATION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {key: {"Value": value} for key, value in STACK_OUTPUTS.items()},
    }
    with mock_aws():
        boto3.client("cloudformation").create_stack(StackName="voicebridge", TemplateBody=json.dumps(template))
        rendered = json.loads(cli_render(VOICE_AGENT, "voicebridge"))
        with pytest.raises(StackOutputsError):
            cli_render(VOICE_AGENT, "no-such-stack")
    assert (
        action(rendered, "Await caller turn")["Parameters"]["LambdaFunctionARN"]
        == (STACK_OUTPUTS["AwaitTurnFunctionArn"])
    )


# --- the template -------------------------------------------------------------------------------------------

TEMPLATE = """\
AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  AgentQueueArn:
    Type: String
Resources:
  SynthesizeFunction:
    Type: AWS::Serverless::Function
    Properties:
      Environment:
        Variables:
          BUCKET: !Ref PromptBucket
          TABLE: !Sub "${AWS::StackName}-turns"
          ROLE: !GetAtt PromptBucket.Arn
          LIST: !Split [",", "a,b"]
  AwaitTurnFunction:
    Type: AWS::Serverless::Function
  PromptBucket:
    Type: AWS::S3::Bucket
  VoiceAgentFlow:
    Type: AWS::Connect::ContactFlow
    Properties:
      Content: !Sub
        - "${Body}"
        - Body: !Ref AgentQueueArn
"""


def test_template_functions_lists_the_serverless_functions_whatever_the_tags(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    assert template_functions(tmp_path / "template.yaml") == {"SynthesizeFunction", "AwaitTurnFunction"}


def test_template_names_lists_parameters_and_resources(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text(TEMPLATE)
    assert template_names(tmp_path / "template.yaml") == {
        "AgentQueueArn",
        "SynthesizeFunction",
        "AwaitTurnFunction",
        "PromptBucket",
        "VoiceAgentFlow",
    }


def test_a_template_that_is_not_yaml_is_a_template_error(tmp_path: Path) -> None:
    (tmp_path / "template.yaml").write_text("Resources: [unclosed")
    with pytest.raises(TemplateError):
        template_functions(tmp_path / "template.yaml")


# --- command line -------------------------------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project tree: a template declaring the four functions and the queue, and the shipped flows."""
    functions = "".join(f"  {name}:\n    Type: AWS::Serverless::Function\n" for name in sorted(FUNCTIONS))
    (tmp_path / "template.yaml").write_text(f"Parameters:\n  AgentQueueArn:\n    Type: String\nResources:\n{functions}")
    (tmp_path / "contact_flows").mkdir()
    for path in (VOICE_AGENT, LISTEN_ONLY):
        (tmp_path / "contact_flows" / path.name).write_text(path.read_text(encoding="utf-8"))
    return tmp_path


def test_cli_validate_exits_0_silently_when_every_flow_is_valid(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli_validate([], template=str(project / "template.yaml")) == 0
    assert capsys.readouterr().out == ""


def test_cli_validate_prints_file_action_reason_and_exits_1(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = project / "contact_flows" / "broken.json"
    document = flow_document()
    action(document, "Play greeting")["Parameters"]["Media"]["SourceType"] = "HTTP"
    broken.write_text(json.dumps(document))
    status = cli_validate(
        [str(broken), str(project / "contact_flows" / "voice-agent.json")],
        template=str(project / "template.yaml"),
    )
    assert status == 1
    assert capsys.readouterr().out.splitlines() == [f"{broken}: Play greeting: Media.SourceType must be S3, not 'HTTP'"]


def test_cli_validate_checks_lambda_placeholders_against_the_template(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = project / "template.yaml"
    template.write_text(template.read_text().replace("AwaitTurnFunction", "WaitForTurnFunction"))
    assert cli_validate([], template=str(template)) == 1
    out = capsys.readouterr().out
    assert "voice-agent.json: Await caller turn: LambdaFunctionARN names AwaitTurnFunction" in out


def test_cli_validate_reports_an_unreadable_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = project / "contact_flows" / "missing.json"
    assert cli_validate([str(missing)], template=str(project / "template.yaml")) == 1
    assert capsys.readouterr().out.startswith(f"{missing}: {FLOW}: cannot read")


# --- behaviour: the flows run against scripted Lambda results -----------------------------------------------

Responder = Callable[[str, dict[str, str]], dict[str, str]]
_REFERENCE = re.compile(r"\$\.(External|Attributes)\.(\w+)")


@dataclass
class Call:
    """One simulated contact: what the caller heard and what the flow did, in order."""

    flow: Flow
    respond: Responder
    attributes: dict[str, str] = field(default_factory=dict)
    external: dict[str, str] = field(default_factory=dict)
    loops: dict[str, int] = field(default_factory=dict)
    events: list[tuple[str, str]] = field(default_factory=list)

    def resolve(self, text: str) -> str:
        namespaces = {"External": self.external, "Attributes": self.attributes}
        return _REFERENCE.sub(lambda m: namespaces[m.group(1)].get(m.group(2), ""), text)

    def run(self, max_steps: int = 5000) -> list[tuple[str, str]]:
        current: str | None = self.flow.start_action
        for _ in range(max_steps):
            if current is None:
                return self.events
            current = self.step(self.flow[current])
        raise AssertionError("the flow did not end")

    def step(self, act: Action) -> str | None:
        params = act.parameters
        if act.type == "InvokeLambdaFunction":
            function = re.sub(r"\$\{(\w+)\.Arn\}", r"\1", params["LambdaFunctionARN"])
            resolved = {k: self.resolve(v) for k, v in params.get("LambdaInvocationAttributes", {}).items()}
            self.events.append(("invoke", function))
            try:
                self.external = self.respond(function, resolved)
            except RuntimeError:
                return act.error_target("NoMatchingError")
            return act.next_action
        if act.type == "Compare":
            value = self.resolve(params["ComparisonValue"])
            return act.condition_target(value) or act.error_target("NoMatchingCondition")
        if act.type == "Loop":
            self.loops[act.identifier] = self.loops.get(act.identifier, 0) + 1
            if self.loops[act.identifier] <= int(params["LoopCount"]):
                return act.condition_target("ContinueLooping")
            self.loops[act.identifier] = 0
            return act.condition_target("DoneLooping")
        if act.type == "UpdateContactAttributes":
            self.attributes.update({k: self.resolve(v) for k, v in params["Attributes"].items()})
        elif act.type == "MessageParticipant":
            media = params.get("Media")
            self.events.append(
                ("sonic", self.resolve(media["Uri"])) if media else ("connect", self.resolve(params["Text"]))
            )
        elif act.type == "UpdateContactMediaStreamingBehavior":
            self.events.append(("streaming", params["MediaStreamingState"]))
        elif act.type == "UpdateContactTargetQueue":
            self.events.append(("queue", params["QueueId"]))
        elif act.type == "TransferContactToQueue":
            failure = self.respond("TransferContactToQueue", {}).get("Error")
            if failure:
                return act.error_target(failure)
            self.events.append(("queued", ""))
            return None
        elif act.type == "DisconnectParticipant":
            self.events.append(("disconnect", ""))
            return None
        return act.next_action


def scripted(
    turns: list[str],
    *,
    synthesize: Callable[[dict[str, str]], dict[str, str]] | None = None,
    start_listening: dict[str, str] | None = None,
    transfer: dict[str, str] | None = None,
) -> Responder:
    """Lambda results: AwaitTurn answers each entry of ``turns`` ("" = a timeout), then times out forever."""
    pending: Iterator[str] = iter(turns)
    index = -1

    def synthesize_ok(params: dict[str, str]) -> dict[str, str]:
        return {"Result": "OK", "PromptUri": "s3://" + params.get("Prefix", "") + params["Text"]}

    def respond(function: str, params: dict[str, str]) -> dict[str, str]:
        nonlocal index
        if function == "SynthesizeFunction":
            return (synthesize or synthesize_ok)(params)
        if function == "StartListeningFunction":
            return start_listening or {"Result": "OK"}
        if function == "TransferContactToQueue":
            return transfer or {}
        assert function == "AwaitTurnFunction"
        assert int(params["AfterTurn"]) == index
        transcript = next(pending, "")
        if not transcript:
            return {"Result": "Timeout"}
        index += 1
        return {"Result": "Turn", "Transcript": transcript, "TurnIndex": str(index)}

    return respond


def heard(events: list[tuple[str, str]]) -> list[str]:
    return [what for kind, what in events if kind in ("sonic", "connect")]


def test_a_call_greets_replies_to_each_turn_and_hangs_up_after_three_silences(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted(["hello", "what time is it"])).run()
    assert heard(events) == [
        "s3://Hello! Thanks for calling. How can I help you today?",
        "s3://You said: hello",
        "s3://You said: what time is it",
        "s3://Are you still there? I'm listening.",
        "s3://Are you still there? I'm listening.",
        "s3://I haven't heard anything for a while, so I'll hang up now. Goodbye!",
    ]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_media_streaming_and_listening_start_before_the_greeting(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted([])).run()
    assert events[:3] == [
        ("streaming", "Enabled"),
        ("invoke", "StartListeningFunction"),
        ("invoke", "SynthesizeFunction"),
    ]


def test_a_turn_resets_the_count_of_consecutive_silences(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted(["one", "", "", "two", "", "", "three"])).run()
    assert heard(events).count("s3://Are you still there? I'm listening.") == 6
    assert [h for h in heard(events) if "You said" in h] == [
        "s3://You said: one",
        "s3://You said: two",
        "s3://You said: three",
    ]


def test_the_conversation_ends_politely_after_twenty_rounds(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted([f"turn {i}" for i in range(30)])).run()
    assert sum("You said" in h for h in heard(events)) == 20
    assert heard(events)[-1] == "s3://Thanks for talking with me. That's all we have time for today. Goodbye!"
    assert events[-1] == ("disconnect", "")


def test_a_synthesis_fallback_is_spoken_with_connects_own_voice(voice_agent: Flow) -> None:
    def fallback(params: dict[str, str]) -> dict[str, str]:
        return {"Result": "Fallback", "Text": params.get("Prefix", "") + params["Text"]}

    events = Call(voice_agent, scripted(["hello"], synthesize=fallback)).run()
    assert heard(events)[:2] == ["Hello! Thanks for calling. How can I help you today?", "You said: hello"]
    assert not any(kind == "sonic" for kind, _ in events)


def test_a_synthesis_error_is_answered_with_connects_own_voice(voice_agent: Flow) -> None:
    def broken(params: dict[str, str]) -> dict[str, str]:
        raise RuntimeError("Lambda failed")

    events = Call(voice_agent, scripted(["hello"], synthesize=broken)).run()
    assert heard(events)[:2] == ["Hello! Thanks for calling. How can I help you today?", "You said: hello"]


def test_a_call_that_cannot_be_transcribed_ends_with_an_apology(voice_agent: Flow) -> None:
    events = Call(voice_agent, scripted([], start_listening={"Result": "Error", "ErrorCode": "NoMediaStream"})).run()
    assert heard(events) == ["Sorry, we're having technical difficulties. Please call again later. Goodbye."]
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]


def test_repeated_await_turn_failures_end_the_call(voice_agent: Flow) -> None:
    def failing(function: str, params: dict[str, str]) -> dict[str, str]:
        if function == "AwaitTurnFunction":
            return {"Result": "Error", "ErrorCode": "StorageError"}
        return scripted([])(function, params)

    events = Call(voice_agent, failing).run()
    assert heard(events)[1:] == ["Sorry, I missed that. Could you say it again?"] * 2 + [
        "Sorry, we're having technical difficulties. Please call again later. Goodbye."
    ]


@pytest.fixture(scope="module")
def listen_only() -> Flow:
    return load_flow(LISTEN_ONLY, known_functions=FUNCTIONS)


def test_listen_only_streams_both_directions_and_transfers_to_the_queue(listen_only: Flow) -> None:
    events = Call(listen_only, scripted([])).run()
    assert events == [
        ("streaming", "Enabled"),
        ("invoke", "StartListeningFunction"),
        ("connect", "Thanks for calling. Connecting you with an agent now."),
        ("queue", "${AgentQueueArn}"),
        ("queued", ""),
    ]
    (start_listening,) = invokes(listen_only, "StartListeningFunction")
    assert listen_only[start_listening].parameters["LambdaInvocationAttributes"] == {"Tracks": "both"}
    (start,) = [
        a
        for a in listen_only.of_type("UpdateContactMediaStreamingBehavior")
        if a.parameters["MediaStreamingState"] == "Enabled"
    ]
    assert start.parameters["Participants"] == [{"ParticipantType": "Customer", "MediaDirections": ["From", "To"]}]


def test_listen_only_still_reaches_an_agent_when_listening_fails(listen_only: Flow) -> None:
    events = Call(listen_only, scripted([], start_listening={"Result": "Error"})).run()
    assert ("streaming", "Disabled") in events
    assert events[-1] == ("queued", "")


def test_listen_only_says_goodbye_when_the_queue_is_full(listen_only: Flow) -> None:
    events = Call(listen_only, scripted([], transfer={"Error": "QueueAtCapacity"})).run()
    assert heard(events)[-1] == "All of our agents are busy right now. Please call again later. Goodbye."
    assert events[-2:] == [("streaming", "Disabled"), ("disconnect", "")]
