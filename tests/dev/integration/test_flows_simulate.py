"""``voicebridge flows simulate``: exported flows run on the local cloud, each to an outcome, with the path it took."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.fixtures import ROOT
from tests.fixtures.flows import CORPUS_FILES, CORPUS_FN_SUB, CORPUS_TEMPLATES, corpus_project
from voicebridge.audio.wav import pcm16_wav_bytes
from voicebridge_dev.cli import main
from voicebridge_dev.simulator.flowcheck import OUTCOMES, FlowRun, Setting, simulate_flows

TEMPLATE = ROOT / "template.yaml"
FOREIGN = "arn:aws:lambda:eu-west-1:123456789012:function:crm-lookup"


def flow(folder: Path, name: str, actions: list[dict[str, Any]]) -> Path:
    path = folder / f"{name}.json"
    path.write_text(
        json.dumps({"Version": "2019-10-30", "StartAction": actions[0]["Identifier"], "Actions": actions}),
        encoding="utf-8",
    )
    return path


def say(identifier: str, text: str, then: str = "Bye") -> dict[str, Any]:
    return {
        "Identifier": identifier,
        "Type": "MessageParticipant",
        "Parameters": {"Text": text},
        "Transitions": {"NextAction": then, "Errors": [{"NextAction": then, "ErrorType": "NoMatchingError"}]},
    }


BYE = {"Identifier": "Bye", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}}


@pytest.fixture(scope="module")
def corpus() -> list[FlowRun]:
    templated = set(CORPUS_TEMPLATES) | set(CORPUS_FN_SUB)
    plain = [p for p in CORPUS_FILES if corpus_project(p) not in templated]
    templates = [p for p in CORPUS_FILES if corpus_project(p) in templated]
    return simulate_flows(plain, template=TEMPLATE) + simulate_flows(
        templates, template=TEMPLATE, setting=Setting(templated=True)
    )


def test_at_least_nine_in_ten_public_flows_run_to_an_outcome_other_than_error(corpus: list[FlowRun]) -> None:
    outcomes = Counter(run.outcome for run in corpus)

    assert len(corpus) == len(CORPUS_FILES)
    assert set(outcomes) <= set(OUTCOMES)
    assert outcomes["error"] + outcomes["limit"] <= len(corpus) / 10, outcomes
    assert all(run.actions for run in corpus if run.outcome != "error")


def test_a_foreign_function_answers_what_it_was_given_and_the_flow_branches_on_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = tmp_path / "crm-answer.json"
    answer.write_text(json.dumps({"Tier": "gold"}), encoding="utf-8")
    path = flow(
        tmp_path,
        "crm",
        [
            {
                "Identifier": "Look up",
                "Type": "InvokeLambdaFunction",
                "Parameters": {"LambdaFunctionARN": FOREIGN, "InvocationTimeLimitSeconds": "3"},
                "Transitions": {
                    "NextAction": "Tier?",
                    "Errors": [{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
                },
            },
            {
                "Identifier": "Tier?",
                "Type": "Compare",
                "Parameters": {"ComparisonValue": "$.External.Tier"},
                "Transitions": {
                    "NextAction": "Bye",
                    "Conditions": [{"NextAction": "Gold", "Condition": {"Operator": "Equals", "Operands": ["gold"]}}],
                    "Errors": [{"NextAction": "Bye", "ErrorType": "NoMatchingCondition"}],
                },
            },
            say("Gold", "Welcome back, gold member."),
            BYE,
        ],
    )
    report = tmp_path / "report.json"

    status = main(["flows", "simulate", str(path), "--lambda", f"crm-lookup={answer}", "--report", str(report)])

    (run,) = json.loads(report.read_text(encoding="utf-8"))
    assert status == 0
    assert (run["outcome"], run["said"]) == ("disconnected", ["Welcome back, gold member."])
    assert [a["outcome"] for a in run["actions"]] == ["next", "Equals gold", "next", "disconnected"]
    assert "Tier? [Compare] -> Equals gold" in capsys.readouterr().out


def test_closed_hours_from_the_centre_file_take_the_false_branch_and_a_view_its_error(tmp_path: Path) -> None:
    centre = tmp_path / "centre.json"
    centre.write_text(json.dumps({"hours_open": False}), encoding="utf-8")
    path = flow(
        tmp_path,
        "hours",
        [
            {
                "Identifier": "Open?",
                "Type": "CheckHoursOfOperation",
                "Parameters": {},
                "Transitions": {
                    "NextAction": "Bye",
                    "Conditions": [
                        {"NextAction": "Bye", "Condition": {"Operator": "Equals", "Operands": ["True"]}},
                        {"NextAction": "Guide", "Condition": {"Operator": "Equals", "Operands": ["False"]}},
                    ],
                    "Errors": [{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
                },
            },
            {
                "Identifier": "Guide",
                "Type": "ShowView",
                "Parameters": {"ViewResource": {"Id": "arn:aws:connect:us-east-1:123456789012:instance/i/view/v"}},
                "Transitions": {
                    "NextAction": "Bye",
                    "Errors": [{"NextAction": "Closed", "ErrorType": "NoMatchingError"}],
                },
            },
            say("Closed", "We are closed.", then="End"),
            {"Identifier": "End", "Type": "EndFlowExecution", "Parameters": {}, "Transitions": {}},
            BYE,
        ],
    )
    report = tmp_path / "report.json"

    status = main(["flows", "simulate", str(path), "--centre", str(centre), "--report", str(report)])

    (run,) = json.loads(report.read_text(encoding="utf-8"))
    assert status == 0
    assert [a["outcome"] for a in run["actions"]] == ["Equals False", "NoMatchingError", "next", "ended"]
    assert (run["outcome"], run["said"]) == ("ended", ["We are closed."])


def test_an_invalid_flow_is_an_error_and_the_exit_status_says_so(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"Version": "2019-10-30", "StartAction": "Nowhere", "Actions": []}), encoding="utf-8")
    report = tmp_path / "report.json"

    assert main(["flows", "simulate", str(path), "--report", str(report)]) == 1
    (run,) = json.loads(report.read_text(encoding="utf-8"))
    assert run["outcome"] == "error" and run["error"].startswith("invalid flow")


def test_a_bad_lambda_answer_file_is_refused_before_anything_runs(tmp_path: Path) -> None:
    answer = tmp_path / "list.json"
    answer.write_text("[1, 2]", encoding="utf-8")

    assert main(["flows", "simulate", str(tmp_path), "--lambda", f"{FOREIGN}={answer}"]) == 2


LEX_BANK = "arn:aws:lex:us-east-1:123456789012:bot-alias/LOCALBANK1/TSTALIASID"


def errors(target: str, *types: str) -> list[dict[str, str]]:
    return [{"NextAction": target, "ErrorType": kind} for kind in (*types, "NoMatchingError")]


def equals(target: str, value: str) -> dict[str, Any]:
    return {"NextAction": target, "Condition": {"Operator": "Equals", "Operands": [value]}}


def script(folder: Path, steps: list[Any], views: dict[str, str] | None = None) -> Path:
    path = folder / "caller.json"
    path.write_text(json.dumps({"steps": steps, "views": views or {}}), encoding="utf-8")
    return path


def simulate(*arguments: str | Path) -> tuple[int, dict[str, Any]]:
    report = Path(arguments[0]).parent / "report.json"
    status = main(["flows", "simulate", *map(str, arguments), "--report", str(report)])
    (run,) = json.loads(report.read_text(encoding="utf-8"))
    return status, run


def test_keys_pressed_choose_a_menu_branch_and_are_stored_until_the_terminator(tmp_path: Path) -> None:
    path = flow(
        tmp_path,
        "menu",
        [
            {
                "Identifier": "Menu",
                "Type": "GetParticipantInput",
                "Parameters": {"Text": "Press 1 for sales, 2 for billing.", "InputTimeLimitSeconds": "5"},
                "Transitions": {
                    "NextAction": "Bye",
                    "Conditions": [equals("Bye", "1"), equals("Account", "2")],
                    "Errors": errors("Bye", "InputTimeLimitExceeded", "NoMatchingCondition"),
                },
            },
            {
                "Identifier": "Account",
                "Type": "GetParticipantInput",
                "Parameters": {
                    "Text": "Enter your account number, then hash.",
                    "StoreInput": "True",
                    "InputTimeLimitSeconds": "10",
                    "DTMFConfiguration": {"InputTerminationSequence": "#"},
                    "InputValidation": {"CustomValidation": {"MaximumLength": "8"}},
                },
                "Transitions": {"NextAction": "Echo", "Errors": errors("Bye")},
            },
            say("Echo", "You entered $.StoredCustomerInput."),
            BYE,
        ],
    )

    status, run = simulate(path, "--caller", script(tmp_path, [{"press": "2"}, {"press": "4711#"}]))

    assert status == 0
    assert [a["outcome"] for a in run["actions"]] == ["Equals 2", "stored", "next", "disconnected"]
    assert run["said"][-1] == "You entered 4711."
    assert run["heard"] == ["pressed 2", "pressed 4711#"]


def test_a_lex_bot_is_asked_turn_by_turn_until_it_closes_an_intent(tmp_path: Path) -> None:
    path = flow(
        tmp_path,
        "lex",
        [
            {
                "Identifier": "Bot",
                "Type": "ConnectParticipantWithLexBot",
                "Parameters": {
                    "Text": "How can I help?",
                    "LexV2Bot": {"AliasArn": LEX_BANK},
                    "LexSessionAttributes": {"Channel": "phone", "x-amz-lex:audio:start-timeout-ms:*:*": "2000"},
                },
                "Transitions": {
                    "NextAction": "Bye",
                    "Conditions": [equals("Paid", "PayBill"), equals("Bye", "TransferToAgent")],
                    "Errors": errors("Nobody", "InputTimeLimitExceeded", "NoMatchingCondition"),
                },
            },
            say("Paid", "Paid $.Lex.Slots.Amount dollars by $.Lex.SessionAttributes.Channel."),
            say("Nobody", "Nobody there."),
            BYE,
        ],
    )
    caller = script(tmp_path, [{"clip": "pay-bill"}, {"clip": "amount"}, {"clip": "yes-please"}])

    status, run = simulate(path, "--caller", caller)

    assert status == 0
    assert [a["outcome"] for a in run["actions"]] == ["Equals PayBill", "next", "disconnected"]
    assert run["said"][0] == "How can I help?"
    assert run["said"][1] == "How much would you like to pay?"
    assert run["said"][-1] == "Paid 84 dollars by phone."
    turns = [n for n in run["noted"] if n["type"] == "ConnectParticipantWithLexBot"]
    assert [t["dialog_action"] for t in turns] == ["ElicitSlot", "ConfirmIntent", "Close"]
    assert turns[0]["said"] == "I want to pay my bill today."

    status, run = simulate(path, "--caller", script(tmp_path, ["silence"]))
    assert run["actions"][0]["outcome"] == "InputTimeLimitExceeded"
    assert run["said"][-1] == "Nobody there."


def test_a_module_runs_with_its_own_flow_attributes_and_a_transfer_goes_on_in_the_other_flow(tmp_path: Path) -> None:
    library = tmp_path / "library"
    library.mkdir()
    module_arn = "arn:aws:connect:us-east-1:123456789012:instance/i/flow-module/0f0e0d0c-0000-4000-8000-000000000001"
    main_flow = flow(
        tmp_path,
        "main",
        [
            {
                "Identifier": "Mark",
                "Type": "UpdateFlowAttributes",
                "Parameters": {"FlowAttributes": {"Where": {"Value": "main"}}},
                "Transitions": {"NextAction": "Module", "Errors": errors("Bye")},
            },
            {
                "Identifier": "Module",
                "Type": "InvokeFlowModule",
                "Parameters": {"FlowModuleId": module_arn},
                "Transitions": {"NextAction": "Back", "Errors": errors("Bye")},
            },
            say("Back", "Back, $.Attributes.FromModule, $.FlowAttributes.Where.", then="Billing"),
            {
                "Identifier": "Billing",
                "Type": "TransferToFlow",
                "Parameters": {"ContactFlowId": "arn:aws:connect:us-east-1:123456789012:instance/i/contact-flow/x"},
                "Transitions": {"NextAction": "Bye", "Errors": errors("Bye")},
            },
            BYE,
        ],
    )
    document = json.loads(main_flow.read_text(encoding="utf-8"))
    document["Metadata"] = {"ActionMetadata": {"Billing": {"ContactFlow": {"id": "", "text": "Billing"}}}}
    main_flow.write_text(json.dumps(document), encoding="utf-8")
    module = flow(
        library,
        "0f0e0d0c-0000-4000-8000-000000000001",
        [
            say("Hello", "Module sees [$.FlowAttributes.Where].", then="Set"),
            {
                "Identifier": "Set",
                "Type": "UpdateContactAttributes",
                "Parameters": {"Attributes": {"FromModule": "yes"}},
                "Transitions": {"NextAction": "Return", "Errors": errors("Return")},
            },
            {"Identifier": "Return", "Type": "EndFlowModuleExecution", "Parameters": {}, "Transitions": {}},
        ],
    )
    billing = flow(library, "billing-flow", [say("Here", "Billing here, [$.FlowAttributes.Where].", then="Bye"), BYE])
    named = json.loads(billing.read_text(encoding="utf-8"))
    named["Metadata"] = {"name": "Billing"}
    billing.write_text(json.dumps(named), encoding="utf-8")
    assert module.exists()

    status, run = simulate(main_flow, "--flows", library)

    assert status == 0
    assert run["said"] == ["Module sees [].", "Back, yes, main.", "Billing here, []."]
    assert run["outcome"] == "disconnected"
    assert [n.get("invoked module", n.get("transferred to")) for n in run["noted"]] == [module.stem, "Billing"]

    # Without the folder the module takes its error branch and the transfer ends the run.
    status, run = simulate(main_flow)
    assert [a["outcome"] for a in run["actions"]][1] == "NoMatchingError"
    assert run["outcome"] == "disconnected"


def test_a_view_is_recorded_with_its_data_and_takes_the_result_the_script_gives(tmp_path: Path) -> None:
    path = flow(
        tmp_path,
        "view",
        [
            {
                "Identifier": "Record",
                "Type": "UpdateContactRecordingBehavior",
                "Parameters": {"RecordingBehavior": {"RecordedParticipants": ["Agent", "Customer"]}},
                "Transitions": {"NextAction": "Guide"},
            },
            {
                "Identifier": "Guide",
                "Type": "ShowView",
                "Parameters": {
                    "ViewResource": {"Id": "confirmation", "Version": "Latest"},
                    "InvocationTimeLimitSeconds": "30",
                    "ViewData": {"Heading": "Caller $.CustomerEndpoint.Address"},
                },
                "Transitions": {
                    "NextAction": "Bye",
                    "Conditions": [equals("Thanks", "Next")],
                    "Errors": errors("Late", "TimeLimitExceeded", "NoMatchingCondition"),
                },
            },
            say("Thanks", "Thank you."),
            say("Late", "Nobody answered the view."),
            BYE,
        ],
    )

    status, run = simulate(path, "--caller", script(tmp_path, [], views={"Guide": "Next"}))

    assert status == 0
    assert run["said"] == ["Thank you."]
    recorded, view = run["noted"]
    assert recorded["parameters"] == {"RecordingBehavior": {"RecordedParticipants": ["Agent", "Customer"]}}
    assert (view["view"], view["result"], view["data"]) == ("confirmation", "Next", {"Heading": "Caller +15555550100"})

    status, run = simulate(path)
    assert [a["outcome"] for a in run["actions"]][:2] == ["recorded", "TimeLimitExceeded"]
    assert run["said"] == ["Nobody answered the view."]


def test_a_prompt_from_the_library_plays_its_recording_and_another_is_its_name_spoken(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "welcome-0001.wav").write_bytes(pcm16_wav_bytes(np.full(4000, 1000, np.int16), 8000))
    instance = "arn:aws:connect:us-east-1:123456789012:instance/i/prompt/"
    path = flow(
        tmp_path,
        "prompts",
        [
            {
                "Identifier": "Welcome",
                "Type": "MessageParticipant",
                "Parameters": {"PromptId": f"{instance}welcome-0001"},
                "Transitions": {"NextAction": "Other", "Errors": errors("Bye")},
            },
            {
                "Identifier": "Other",
                "Type": "MessageParticipant",
                "Parameters": {"PromptId": f"{instance}closing-0002"},
                "Transitions": {"NextAction": "Bye", "Errors": errors("Bye")},
            },
            BYE,
        ],
    )

    status, run = simulate(path, "--prompts", prompts)

    assert status == 0
    assert run["said"] == ["prompt closing-0002"]
    assert [a["outcome"] for a in run["actions"]] == ["next", "next", "disconnected"]


def test_a_public_flow_moves_across_its_projects_folder_by_the_names_its_console_kept(tmp_path: Path) -> None:
    rules_engine = ROOT / "tests/data/flows/amazon-connect-rules-engine"
    bootstrap = tmp_path / "RulesEngineBootstrap.json"
    bootstrap.write_bytes((rules_engine / "RulesEngineBootstrap.json").read_bytes())

    status, run = simulate(bootstrap, "--flows", rules_engine, "--templated")

    # Bootstrap → Main, whose rules function answers {} here, so Main's dynamic transfer finds no flow and takes its
    # error branch → Error, which apologises and disconnects.
    assert status == 0
    entered = [n["transferred to"] for n in run["noted"] if "transferred to" in n]
    assert entered == ["RulesEngineMain", "RulesEngineError"]
    assert "NoMatchingError" in [a["outcome"] for a in run["actions"] if a["type"] == "TransferToFlow"]
    flows = [a["flow"] for a in run["actions"]]
    assert [flow for i, flow in enumerate(flows) if i == 0 or flows[i - 1] != flow][1:] == entered
    assert run["outcome"] == "disconnected"


def test_the_working_queue_takes_its_name_from_the_centre_file_and_a_full_one_refuses_the_transfer(
    tmp_path: Path,
) -> None:
    queue_id = "5b7e3a1c-0000-4000-8000-00000000000b"
    queue = f"arn:aws:connect:us-east-1:123456789012:instance/0a1b2c3d-0000-4000-8000-00000000000a/queue/{queue_id}"
    path = flow(
        tmp_path,
        "queue",
        [
            {
                "Identifier": "Set queue",
                "Type": "UpdateContactTargetQueue",
                "Parameters": {"QueueId": queue},
                "Transitions": {"NextAction": "Name", "Errors": errors("Bye")},
            },
            say("Name", "Connecting you to $.Queue.Name.", then="Transfer"),
            {
                "Identifier": "Transfer",
                "Type": "TransferContactToQueue",
                "Parameters": {},
                "Transitions": {"NextAction": "Bye", "Errors": errors("Full", "QueueAtCapacity")},
            },
            say("Full", "All our agents are busy."),
            BYE,
        ],
    )
    centre = tmp_path / "centre.json"
    centre.write_text(json.dumps({"queues": {queue_id: {"name": "Billing", "at_capacity": True}}}), "utf-8")

    status, run = simulate(path, "--centre", centre)

    assert status == 0
    assert run["said"] == ["Connecting you to Billing.", "All our agents are busy."]
    assert [a["outcome"] for a in run["actions"]][2] == "QueueAtCapacity"


def test_a_public_guide_runs_to_its_end_when_the_script_answers_its_views(tmp_path: Path) -> None:
    guide = (
        ROOT / "tests/data/flows/amazon-connect-step-by-step-guides-module-library/DispositionCodes_contactFlow.json"
    )
    views = {
        "arn:aws:connect:us-east-1:aws:view/form:1": "Next",
        "arn:aws:connect:us-east-1:aws:view/confirmation:1": "Next",
    }
    caller = script(tmp_path, [], views=views)
    copy = tmp_path / guide.name
    copy.write_bytes(guide.read_bytes())

    status, run = simulate(copy, "--caller", caller)

    # The disposition form, the attributes it sets on the related contact (recorded), the confirmation, the end.
    assert status == 0
    assert [a["outcome"] for a in run["actions"]][1:] == ["Equals Next", "recorded", "Equals Next", "disconnected"]
    assert [n["type"] for n in run["noted"]] == ["ShowView", "UpdateContactAttributes", "ShowView"]


@pytest.mark.parametrize(
    ("option", "content"),
    [("--caller", '{"steps": [{"press": "1x"}]}'), ("--lex", '{"botId": "short"}'), ("--centre", '{"queues": 1}')],
)
def test_a_bad_caller_script_bot_or_centre_file_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, content: str
) -> None:
    given = tmp_path / "given.json"
    given.write_text(content, encoding="utf-8")
    path = flow(tmp_path, "bye", [BYE])

    assert main(["flows", "simulate", str(path), option, str(given)]) == 2
    assert "voicebridge flows simulate:" in capsys.readouterr().err


def test_a_time_limit_that_is_not_a_number_of_seconds_ends_the_run_in_error_saying_which(tmp_path: Path) -> None:
    path = flow(
        tmp_path,
        "wait",
        [
            {
                "Identifier": "Pause",
                "Type": "Wait",
                "Parameters": {"TimeLimitSeconds": "$.Attributes.Pause"},
                "Transitions": {
                    "NextAction": "Bye",
                    "Conditions": [equals("Bye", "WaitCompleted")],
                    "Errors": errors("Bye"),
                },
            },
            BYE,
        ],
    )

    status, run = simulate(path)

    assert status == 1
    assert run["outcome"] == "error" and "TimeLimitSeconds '' is not a number of seconds" in run["error"]


def queue_flow(folder: Path) -> Path:
    """A customer queue flow as the console builds one: its messages loop, and every 20 s it offers a callback."""
    path = flow(
        folder,
        "queue",
        [
            {
                "Identifier": "Music",
                "Type": "MessageParticipantIteratively",
                "Parameters": {"Messages": [{"Text": "Thanks for waiting."}], "InterruptFrequencySeconds": "20"},
                "Transitions": {"Conditions": [equals("Offer", "MessagesInterrupted")], "Errors": errors("Bye")},
            },
            {
                "Identifier": "Offer",
                "Type": "GetParticipantInput",
                "Parameters": {"Text": "Press 1 for a callback.", "InputTimeLimitSeconds": "5"},
                "Transitions": {
                    "NextAction": "Music",
                    "Conditions": [equals("Number", "1")],
                    "Errors": errors("Music", "InputTimeLimitExceeded", "NoMatchingCondition"),
                },
            },
            {
                "Identifier": "Number",
                "Type": "UpdateContactCallbackNumber",
                "Parameters": {"CallbackNumber": "$.CustomerEndpoint.Address"},
                "Transitions": {
                    "NextAction": "Callback",
                    "Errors": [
                        {"NextAction": "Bye", "ErrorType": "InvalidCallbackNumber"},
                        {"NextAction": "Bye", "ErrorType": "CallbackNumberNotDialable"},
                    ],
                },
            },
            {
                "Identifier": "Callback",
                "Type": "CreateCallbackContact",
                "Parameters": {"InitialCallDelaySeconds": "5", "MaximumConnectionAttempts": "1"},
                "Transitions": {"NextAction": "Bye", "Errors": errors("Bye")},
            },
            BYE,
        ],
    )
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**document, "Metadata": {"type": "customerQueue"}}), encoding="utf-8")
    return path


def test_a_key_pressed_while_a_queue_flow_loops_runs_its_callback_offer(tmp_path: Path) -> None:
    status, run = simulate(queue_flow(tmp_path), "--caller", script(tmp_path, [{"press": "1"}]))

    assert status == 0
    assert run["outcome"] == "disconnected"
    assert [a["outcome"] for a in run["actions"]] == [
        "MessagesInterrupted",
        "Equals 1",
        "recorded",
        "recorded",
        "disconnected",
    ]
    assert "Press 1 for a callback." in run["said"]


def test_a_silent_caller_waits_in_queue_through_its_offers_until_the_agent_is_free(tmp_path: Path) -> None:
    centre = tmp_path / "centre.json"
    centre.write_text(json.dumps({"agent_free_after_s": 45}), encoding="utf-8")

    status, run = simulate(queue_flow(tmp_path), "--centre", centre)

    assert status == 0
    assert run["outcome"] == "transferred"
    assert [a["identifier"] for a in run["actions"]] == ["Music", "Offer", "Music"]


def test_a_public_customer_queue_flow_runs_its_callback_offer_with_a_key_pressing_caller(tmp_path: Path) -> None:
    public = next(p for p in CORPUS_FILES if p.name == "Sample interruptible queue flow with callback-2.json")
    queue = tmp_path / public.name
    queue.write_bytes(public.read_bytes())
    caller = script(tmp_path, [{"press": "1"}, {"press": "2065550123#"}])

    status, run = simulate(queue, "--caller", caller)

    assert status == 0
    assert run["outcome"] == "disconnected"
    assert [a["type"] for a in run["actions"]][:3] == [
        "MessageParticipantIteratively",
        "GetParticipantInput",
        "GetParticipantInput",
    ]
    assert [a["outcome"] for a in run["actions"]][:3] == ["MessagesInterrupted", "Equals 1", "stored"]
    assert "CreateCallbackContact" in [a["type"] for a in run["actions"]]
    assert "You will be called back when the next agent is available." in run["said"]
