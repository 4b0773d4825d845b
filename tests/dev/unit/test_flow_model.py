"""The flow models: :func:`parse_flow` turns a valid flow into actions and their branches."""

from __future__ import annotations

import pytest

from tests.fixtures.flows import ECHO, action, flow_document
from voicebridge_dev.flows import FLOW, InvalidFlowError, parse_flow


def test_parse_flow_models_actions_and_their_branches() -> None:
    flow = parse_flow(flow_document(ECHO))
    check = flow["Check turn result"]
    assert flow.start_action == "Enable flow logging"
    assert (check.condition_target("Turn"), check.condition_target("Timeout")) == (
        "Remember turn",
        "Mark silence",
    )
    assert check.error_target("NoMatchingCondition") == "Count failures"
    assert check.condition_target("Listening") == "Play silent prompt"
    assert set(check.targets()) == {"Remember turn", "Mark silence", "Play silent prompt", "Count failures"}


def test_parse_flow_raises_with_every_problem() -> None:
    document = flow_document(ECHO)
    document["Version"] = "1"
    action(document, "Play reply")["Transitions"]["NextAction"] = "Nowhere"
    with pytest.raises(InvalidFlowError) as raised:
        parse_flow(document)
    assert {p.action for p in raised.value.problems} == {FLOW, "Play reply"}
