"""What a deployment supplies to a flow: a stack's outputs, and the names its SAM template declares.

:func:`stack_outputs` gives the values :func:`~voicebridge_dev.flows.render.render` fills placeholders with;
:func:`template_functions` and :func:`template_names` give what ``${X.Arn}`` and ``${X}`` may name, for
:func:`~voicebridge_dev.flows.validate.validate`::

    >>> sorted(template_functions("template.yaml"))
    ['AwaitTurnFunction', 'StartListeningFunction', 'SynthesizeFunction', 'TranscribeStreamFunction']
    >>> stack_outputs("voicebridge")["SynthesizeFunctionArn"]  # doctest: +SKIP
    'arn:aws:lambda:us-east-1:111111111111:function:voicebridge-SynthesizeFunction-…'
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import boto3
import yaml
from botocore.exceptions import BotoCoreError, ClientError

from voicebridge_dev.flows.errors import StackOutputsError
from voicebridge_dev.template import TemplateError, load_template


def stack_outputs(stack_name: str, client: Any = None) -> dict[str, str]:
    """The outputs of a deployed stack keyed by OutputKey, its parameters' values by ParameterKey, plus the
    ``AWS::Region``/``AWS::AccountId``/``AWS::StackName`` pseudo parameters read from its StackId."""
    cloudformation = client if client is not None else boto3.client("cloudformation")
    try:
        stacks = cloudformation.describe_stacks(StackName=stack_name)["Stacks"]
    except (BotoCoreError, ClientError) as exc:
        raise StackOutputsError(f"cannot read stack {stack_name}: {exc}") from exc
    if not stacks:
        raise StackOutputsError(f"stack {stack_name} not found")
    stack = stacks[0]
    values = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    # The stack's parameters fill the flows' ${Parameter} placeholders as Fn::Sub fills them (AgentQueueArn…).
    for parameter in stack.get("Parameters", []):
        values.setdefault(
            parameter["ParameterKey"], parameter.get("ResolvedValue", parameter.get("ParameterValue", ""))
        )
    # arn:aws:cloudformation:<region>:<account>:stack/<name>/<uuid>
    arn_parts = stack["StackId"].split(":")
    values.setdefault("AWS::Region", arn_parts[3])
    values.setdefault("AWS::AccountId", arn_parts[4])
    values.setdefault("AWS::StackName", stack["StackName"])
    return values


def _template_resources(template_path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        document = load_template(template_path)
    except (yaml.YAMLError, TemplateError) as exc:
        raise TemplateError(f"{template_path}: not a CloudFormation template: {exc}") from exc
    resources = document.get("Resources") or {}
    parameters = document.get("Parameters") or {}
    if not isinstance(resources, dict) or not isinstance(parameters, dict):
        raise TemplateError(f"{template_path}: Resources and Parameters must be mappings")
    return resources, parameters


def template_functions(template_path: str | Path) -> set[str]:
    """Logical IDs of the template's ``AWS::Serverless::Function`` and ``AWS::Lambda::Function`` resources."""
    resources, _ = _template_resources(template_path)
    return {
        name
        for name, resource in resources.items()
        if isinstance(resource, dict) and resource.get("Type") in ("AWS::Serverless::Function", "AWS::Lambda::Function")
    }


def template_names(template_path: str | Path) -> set[str]:
    """Everything a bare ``${X}`` may name in the template's ``Fn::Sub``: its parameters and resources."""
    resources, parameters = _template_resources(template_path)
    return set(resources) | set(parameters)
