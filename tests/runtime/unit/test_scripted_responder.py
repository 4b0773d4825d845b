"""The scripted responder: the first matching rule answers, with its action and attributes; a bad file says why."""

from __future__ import annotations

import json

import pytest

from voicebridge.conversation import Action
from voicebridge.converse.responder import TurnRequest
from voicebridge.converse.responders.scripted import ScriptedResponder
from voicebridge.errors import ConfigurationError

RULES = {
    "rules": [
        {
            "match": ["balance", "how much"],
            "reply": "Your balance is two hundred dollars.",
            "attributes": {"Intent": "Balance"},
        },
        {"match": r"(?i)\b(person|agent|human)\b", "reply": "Let me connect you.", "action": "transfer"},
        {"match": ["goodbye"], "reply": "Goodbye!", "action": "Hangup"},
    ],
    "fallback": {"reply": "You said: {transcript}"},
}


def answer(transcript: str) -> tuple[str, Action, dict[str, str]]:
    reply = ScriptedResponder.from_json(json.dumps(RULES)).respond(TurnRequest("c1", 0, transcript), deadline=0)
    return "".join(reply.text()), reply.action, dict(reply.attributes)


def test_the_first_matching_rule_answers_with_its_attributes() -> None:
    assert answer("What is my Balance please") == (
        "Your balance is two hundred dollars.",
        Action.CONTINUE,
        {"Intent": "Balance"},
    )


def test_an_action_is_read_in_any_case() -> None:
    assert answer("let me talk to a person")[1] is Action.TRANSFER


def test_words_match_whole_words_only() -> None:
    assert answer("imbalance")[0] == "You said: imbalance"


def test_the_fallback_can_echo_the_caller() -> None:
    assert answer("pay my bill") == ("You said: pay my bill", Action.CONTINUE, {})


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("not json", "not JSON"),
        ('{"rules": [{"match": "(", "reply": "x"}]}', "valid regular expression"),
        ('{"rules": [{"match": ["x"], "reply": "x", "action": "Dance"}]}', "unknown action"),
        ('{"rules": [{"match": 3, "reply": "x"}]}', r"rules\[0\]\.match"),
    ],
)
def test_a_bad_rules_file_is_refused_saying_why(document: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=reason):
        ScriptedResponder.from_json(document)
