"""The Bedrock emulator's bank agent answers in the language the responder's prompt names."""

from __future__ import annotations

from typing import Any

from voicebridge_dev.local.bedrock.brain import BANK_AGENT, Brain
from voicebridge_dev.local.bedrock.requests import parse_converse_request

MODEL = "amazon.nova-lite-v1:0"
SPANISH = "Be brief.\n\nThe caller speaks the language with the BCP-47 tag es-US: always answer in that language."


def body(said: str, system: str | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {"messages": [{"role": "user", "content": [{"text": said}]}]}
    if system is not None:
        request["system"] = [{"text": system}]
    return request


def test_a_prompt_naming_the_callers_language_is_read_as_its_primary_language() -> None:
    assert parse_converse_request(MODEL, body("hola", SPANISH)).language == "es"
    assert parse_converse_request(MODEL, body("hello", "Be brief.")).language is None


def test_the_bank_agent_answers_a_spanish_prompt_in_spanish() -> None:
    brain = Brain.from_json(BANK_AGENT)
    request = parse_converse_request(MODEL, body("Quiero saber el saldo de mi cuenta.", SPANISH))
    rule = brain.speaking(request.language).answer(request.said, request.previous_reply)
    assert rule.reply.startswith("El saldo de su cuenta corriente es de dos mil cuatrocientos doce dólares")


def test_the_bank_agent_answers_in_english_when_the_prompt_names_no_language() -> None:
    brain = Brain.from_json(BANK_AGENT)
    assert brain.speaking(None).answer("what is my balance", None).reply.startswith("Your checking account balance")


def test_a_language_the_brain_has_no_rules_for_is_answered_by_its_own_rules() -> None:
    brain = Brain.from_json(BANK_AGENT)
    assert brain.speaking("de") is brain
