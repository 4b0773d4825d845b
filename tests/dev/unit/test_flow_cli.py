"""The ``voicebridge flows`` commands: ``validate`` prints ``file: action: reason``, ``render`` fills a flow from a
stack's outputs."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from tests.fixtures.flows import (
    CORPUS,
    FLOW_PARAMETERS,
    FUNCTIONS,
    LISTEN_ONLY,
    SHIPPED_FLOWS,
    STACK_OUTPUTS,
    VOICE_AGENT,
    action,
    flow_document,
)
from voicebridge_dev.flows import FLOW, StackOutputsError
from voicebridge_dev.flows.cli import cli_render, cli_validate


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project tree: a template declaring the functions and the queue, and the shipped flows."""
    functions = "".join(f"  {name}:\n    Type: AWS::Serverless::Function\n" for name in sorted(FUNCTIONS))
    parameters = "".join(f"  {name}:\n    Type: String\n" for name in sorted(FLOW_PARAMETERS))
    (tmp_path / "template.yaml").write_text(f"Parameters:\n{parameters}Resources:\n{functions}")
    (tmp_path / "contact_flows").mkdir()
    for path in SHIPPED_FLOWS:
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
    action(document, "Play line")["Parameters"]["Media"]["SourceType"] = "HTTP"
    broken.write_text(json.dumps(document))
    status = cli_validate(
        [str(broken), str(project / "contact_flows" / "voice-agent.json")],
        template=str(project / "template.yaml"),
    )
    assert status == 1
    assert capsys.readouterr().out.splitlines() == [f"{broken}: Play line: Media.SourceType must be S3, not 'HTTP'"]


def test_cli_validate_checks_lambda_placeholders_against_the_template(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = project / "template.yaml"
    template.write_text(template.read_text().replace("ConverseFunction", "ReplyFunction"))
    assert cli_validate([], template=str(template)) == 1
    out = capsys.readouterr().out
    assert "voice-agent.json: Converse: LambdaFunctionARN names ConverseFunction" in out


def test_cli_validate_reports_an_unreadable_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = project / "contact_flows" / "missing.json"
    assert cli_validate([str(missing)], template=str(project / "template.yaml")) == 1
    assert capsys.readouterr().out.startswith(f"{missing}: {FLOW}: cannot read")


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
    assert action(rendered, "Converse")["Parameters"]["LambdaFunctionARN"] == STACK_OUTPUTS["ConverseFunctionArn"]


def test_cli_validate_prints_warnings_with_their_prefix_and_still_exits_0(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    orphaned = project / "contact_flows" / "orphaned.json"
    document = flow_document()
    document["Actions"].append(
        {"Identifier": "Orphan", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}}
    )
    orphaned.write_text(json.dumps(document))
    assert cli_validate([str(orphaned)], template=str(project / "template.yaml")) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{orphaned}: warning: Orphan: unreachable from StartAction (Connect keeps it; nothing runs it)"
    ]


def test_cli_validate_takes_a_folder_with_its_subfolders(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nested = project / "exports" / "team" / "inbound"
    nested.mkdir(parents=True)
    broken = flow_document()
    broken["Version"] = "1"
    (nested / "broken.json").write_text(json.dumps(broken))
    assert cli_validate([str(project / "exports")], template=str(project / "template.yaml")) == 1
    assert capsys.readouterr().out.startswith(f"{nested / 'broken.json'}: {FLOW}: Version must be")


def test_cli_validate_checks_the_corpus_as_templates(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_validate([str(CORPUS)], template=str(project / "template.yaml"), templated=True) == 0
    assert "warning: " in capsys.readouterr().out
