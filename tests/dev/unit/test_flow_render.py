"""Rendering: a flow's ``Fn::Sub`` placeholders filled from values keyed as a stack's outputs are."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.flows import STACK_OUTPUTS
from voicebridge_dev.flows import UnresolvedPlaceholderError, render


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
