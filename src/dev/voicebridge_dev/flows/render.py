"""Filling a flow file's placeholders with a deployment's values, for a console import.

The files under ``contact_flows/`` hold CloudFormation ``Fn::Sub`` placeholders where a deployment supplies a
value: ``${SynthesizeFunction.Arn}`` for a function of the template, ``${AgentQueueArn}`` for a template
parameter, ``${!X}`` for a literal ``${X}``. Connect's own references (``$.External.PromptUri``) carry no
braces and pass through ``Fn::Sub`` untouched.

:func:`render` takes values keyed as a stack's outputs are::

    ${X.Attr}  <-  values["XAttr"]   e.g. ${SynthesizeFunction.Arn} <- "SynthesizeFunctionArn"
    ${X}       <-  values["X"]       e.g. ${AgentQueueArn} <- "AgentQueueArn", ${AWS::Region} <- "AWS::Region"

    >>> render('{"LambdaFunctionARN": "${SynthesizeFunction.Arn}"}',
    ...        {"SynthesizeFunctionArn": "arn:aws:lambda:us-east-1:111111111111:function:synth"})
    '{"LambdaFunctionARN": "arn:aws:lambda:us-east-1:111111111111:function:synth"}'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from voicebridge_dev.flows.errors import UnresolvedPlaceholderError
from voicebridge_dev.flows.rules import PLACEHOLDER


def placeholder_key(name: str) -> str:
    """The stack-output key that fills ``${name}``: ``SynthesizeFunction.Arn`` → ``SynthesizeFunctionArn``."""
    return name.replace(".", "")


def render(flow_text: str, values: Mapping[str, str]) -> str:
    """``flow_text`` with each ``${X.Attr}``/``${X}`` filled from ``values`` (see :func:`placeholder_key`).

    A value keyed by the placeholder as written (``"SynthesizeFunction.Arn"``) is taken too. Values are
    JSON-escaped, since every placeholder sits inside a JSON string; ``${!X}`` becomes a literal ``${X}`` as
    in ``Fn::Sub``. Raises :class:`UnresolvedPlaceholderError` naming every placeholder left
    without a value.
    """
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("!"):
            return "${" + name[1:] + "}"
        value = values.get(placeholder_key(name), values.get(name))
        if value is None:
            missing.append(name)
            return match.group(0)
        return json.dumps(value)[1:-1]

    rendered = PLACEHOLDER.sub(fill, flow_text)
    if missing:
        raise UnresolvedPlaceholderError(list(dict.fromkeys(missing)))
    return rendered
