"""``voicebridge flows simulate``: exported flows run on the local cloud, each to an outcome, with the path it took."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import ROOT
from tests.fixtures.flows import CORPUS_FILES, CORPUS_TEMPLATES, corpus_project
from voicebridge_dev.cli import main
from voicebridge_dev.simulator.flowcheck import OUTCOMES, FlowRun, simulate_flows

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
    plain = [p for p in CORPUS_FILES if corpus_project(p) not in CORPUS_TEMPLATES]
    templates = [p for p in CORPUS_FILES if corpus_project(p) in CORPUS_TEMPLATES]
    return simulate_flows(plain, template=TEMPLATE) + simulate_flows(templates, template=TEMPLATE, templated=True)


def test_at_least_four_in_five_public_flows_run_to_an_outcome_other_than_error(corpus: list[FlowRun]) -> None:
    outcomes = Counter(run.outcome for run in corpus)

    assert len(corpus) == len(CORPUS_FILES)
    assert set(outcomes) <= set(OUTCOMES)
    assert outcomes["error"] + outcomes["limit"] <= len(corpus) / 5, outcomes
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
