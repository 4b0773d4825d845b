"""``voicebridge flows simulate`` on what late-2026 console exports hold (issue 29): the Agentic CX block taken to an
outcome by the caller's script, data-table writes and lists, a templated prompt URL, Voice ID after its end of
support, and why each error branch was taken."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.dev.integration.test_flows_simulate import BYE, equals, flow, say, script, simulate
from tests.fixtures import ROOT
from tests.fixtures.flows import step
from voicebridge_dev.cli import main

TEMPLATE = ROOT / "template.yaml"
NO_MATCH = [{"NextAction": "Bye", "ErrorType": "NoMatchingError"}]
PHONE = "$.CustomerEndpoint.Address"


def agentic(tmp_path: Path) -> Path:
    configuration = {"WorkspaceId": "w", "ApplicationId": "a", "Alias": "p", "ContextVariables": {"phone": PHONE}}
    block = step(
        "Agent",
        "ConnectParticipantWithAgenticCX",
        {"AgentConfiguration": configuration},
        NextAction="Done",
        Conditions=[equals("Human", "Escalation")],
        Errors=[*NO_MATCH, {"NextAction": "Idle", "ErrorType": "InputTimeLimitExceeded"}],
    )
    return flow(tmp_path, "agentic", [block, say("Done", "Goodbye."), say("Human", "An agent."), say("Idle", "?"), BYE])


def path_of(run: dict[str, Any]) -> list[tuple[str, str]]:
    return [(action["identifier"], action["outcome"]) for action in run["actions"]]


def test_an_agentic_cx_block_escalates_when_the_caller_asks_for_a_person(tmp_path: Path) -> None:
    caller = script(tmp_path, [{"say": "I want to talk to an agent please."}])
    status, run = simulate(agentic(tmp_path), "--caller", caller, "--template", TEMPLATE)
    assert status == 0
    assert path_of(run)[0] == ("Agent", "Equals Escalation")
    assert run["said"][-1] == "An agent."


def test_an_agentic_cx_conversation_that_ends_takes_the_default_branch(tmp_path: Path) -> None:
    caller = script(tmp_path, [{"say": "What are your opening hours?"}, "silence"])
    status, run = simulate(agentic(tmp_path), "--caller", caller, "--template", TEMPLATE)
    assert status == 0
    assert path_of(run)[0] == ("Agent", "conversation ended")


def test_an_agentic_cx_block_with_a_silent_caller_takes_its_idle_timeout(tmp_path: Path) -> None:
    status, run = simulate(agentic(tmp_path), "--template", TEMPLATE)
    assert status == 0
    assert path_of(run)[0] == ("Agent", "InputTimeLimitExceeded")


def test_a_data_table_write_is_recorded_and_a_list_takes_its_error_branch_with_the_reason(tmp_path: Path) -> None:
    table = {"DataTableId": "$.Attributes.table"}
    write = step("Write", "UpsertDataTableValues", {**table, "LockVersion": "1"}, NextAction="List", Errors=NO_MATCH)
    listed = step("List", "ListDataTableValues", table, NextAction="Bye", Errors=NO_MATCH)
    status, run = simulate(flow(tmp_path, "tables", [write, listed, BYE]), "--template", TEMPLATE)
    assert status == 0
    assert path_of(run)[:2] == [("Write", "recorded"), ("List", "NoMatchingError")]
    assert "ListDataTableValues needs a service the local cloud does not run" in run["actions"][1]["why"]


def test_a_templated_prompt_url_plays_a_stand_in(tmp_path: Path) -> None:
    media = {"Uri": "${Site.WebsiteURL}/customerprompts/hold.wav", "SourceType": "S3", "MediaType": "Audio"}
    hold = step("Music", "MessageParticipant", {"Media": media}, NextAction="Bye", Errors=NO_MATCH)
    status, run = simulate(flow(tmp_path, "hold", [hold, BYE]), "--templated", "--template", TEMPLATE)
    assert status == 0
    assert path_of(run)[0] == ("Music", "next")
    assert run["outcome"] == "disconnected"


def test_a_voice_id_check_takes_its_error_branch_and_says_its_support_ended(tmp_path: Path) -> None:
    check = step(
        "Voice",
        "CheckVoiceId",
        {"CheckVoiceIdOption": "enrollmentStatus"},
        NextAction="Bye",
        Conditions=[equals("Bye", "Enrolled")],
        Errors=NO_MATCH,
    )
    _, run = simulate(flow(tmp_path, "voice", [check, BYE]), "--template", TEMPLATE)
    assert run["actions"][0]["why"] == "CheckVoiceId needs Voice ID, whose support ended on 2026-05-20"


def test_a_module_that_fails_to_load_says_why_on_the_invoking_block(tmp_path: Path) -> None:
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "broken.json").write_text('{"Version": "2019-10-30", "StartAction": "x", "Actions": []}', "utf-8")
    invoke = step("Module", "InvokeFlowModule", {"FlowModuleId": "broken"}, NextAction="Bye", Errors=NO_MATCH)
    status, run = simulate(flow(tmp_path, "main", [invoke, BYE]), "--flows", folder, "--template", TEMPLATE)
    assert status == 0
    assert run["actions"][0]["outcome"] == "NoMatchingError"
    assert "'broken' names cannot run" in run["actions"][0]["why"]


def test_an_error_with_no_branch_names_the_action_its_type_and_the_reason(tmp_path: Path) -> None:
    listed = step("List", "ListDataTableValues", {})
    status, run = simulate(flow(tmp_path, "bare", [listed, BYE]), "--template", TEMPLATE)
    assert status == 1
    assert run["error"] == (
        "action 'List': ListDataTableValues needs a service the local cloud does not run, and it has no error branch"
    )


def hold_loop(tmp_path: Path) -> Path:
    messages = {"Messages": [{"Text": "Please hold."}]}
    loop = step("Music", "MessageParticipantIteratively", messages, NextAction="Bye", Errors=NO_MATCH)
    return flow(tmp_path, "hold", [loop, BYE])


def test_a_flow_that_does_not_say_its_type_runs_as_the_hold_flow_type_says(tmp_path: Path) -> None:
    status, run = simulate(hold_loop(tmp_path), "--type", "CUSTOMER_HOLD", "--template", TEMPLATE)
    assert status == 0
    assert (run["outcome"], run["detail"]) == ("ended", "the agent took the call off hold")


def test_an_unknown_flow_type_is_refused(tmp_path: Path) -> None:
    status = main(["flows", "simulate", str(hold_loop(tmp_path)), "--type", "HOLD", "--template", str(TEMPLATE)])
    assert status == 2


def test_an_empty_working_queue_names_the_reference_that_was_empty(tmp_path: Path) -> None:
    queue = {"QueueId": "$.Attributes.queue"}
    target = step("Queue", "UpdateContactTargetQueue", queue, NextAction="Bye", Errors=NO_MATCH)
    _, run = simulate(flow(tmp_path, "queue", [target, BYE]), "--template", TEMPLATE)
    assert run["actions"][0]["why"] == "QueueId '$.Attributes.queue' names no queue here (it is empty)"


def test_a_lambda_answer_the_flow_refuses_names_the_function(tmp_path: Path) -> None:
    arn = "arn:aws:lambda:eu-west-1:123456789012:function:crm-lookup"
    answer = tmp_path / "answer.json"
    answer.write_text('{"balance": 12}', encoding="utf-8")
    lookup = step(
        "Lookup",
        "InvokeLambdaFunction",
        {
            "LambdaFunctionARN": arn,
            "InvocationTimeLimitSeconds": "3",
            "ResponseValidation": {"ResponseType": "STRING_MAP"},
        },
        NextAction="Bye",
        Errors=NO_MATCH,
    )
    _, run = simulate(flow(tmp_path, "lookup", [lookup, BYE]), "--lambda", f"{arn}={answer}", "--template", TEMPLATE)
    assert run["actions"][0]["why"] == f"the function {arn}: response is not a flat map of strings (STRING_MAP)"


def test_a_templated_bot_alias_is_the_bot_the_lex_emulator_serves(tmp_path: Path) -> None:
    bot = {"Text": "How can I help?", "LexV2Bot": {"AliasArn": "{{BotAliasArn}}"}}
    errors = [*NO_MATCH, {"NextAction": "Bye", "ErrorType": "InputTimeLimitExceeded"}]
    lex = step("Bot", "ConnectParticipantWithLexBot", bot, NextAction="Bye", Errors=errors)
    _, run = simulate(flow(tmp_path, "bot", [lex, BYE]), "--templated", "--template", TEMPLATE)
    assert {"identifier": "Bot", "type": "ConnectParticipantWithLexBot", "stand-in bot": "LOCALBANK1"} in [
        {key: value for key, value in note.items() if key != "at"} for note in run["noted"]
    ]
    assert path_of(run)[0] == ("Bot", "InputTimeLimitExceeded")


def test_the_shipped_streaming_flow_hands_the_call_to_voicebridges_agent_and_routes_its_escalation(
    tmp_path: Path,
) -> None:
    shipped = tmp_path / "voice-agent-streaming.json"
    shipped.write_text((ROOT / "contact_flows" / "voice-agent-streaming.json").read_text("utf-8"), "utf-8")
    caller = script(
        tmp_path, [{"say": "I would like to check my account balance."}, {"say": "Let me talk to a person."}]
    )

    status, run = simulate(shipped, "--templated", "--agent", "--caller", caller, "--template", TEMPLATE)

    assert status == 0 and run["outcome"] == "transferred"
    # The agent's session answered both lines; its outcome reached the flow as $.Lex.SessionAttributes.Tool.
    assert ("Route the agent's outcome", "Equals Escalate") in path_of(run)
    assert run["heard"] == ["I would like to check my account balance.", "Let me talk to a person."]
