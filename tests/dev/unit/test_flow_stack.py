"""The SAM template's names: the functions ``${X.Arn}`` may name and everything a bare ``${X}`` may name."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicebridge_dev.flows import template_functions, template_names
from voicebridge_dev.template import TemplateError

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
