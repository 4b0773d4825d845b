"""The responder's settings refuse bad values and missing companions, and the container builds the one chosen."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from voicebridge import container
from voicebridge.config import Settings
from voicebridge.conversation import Action
from voicebridge.converse.documents import read_document
from voicebridge.converse.responder import TurnRequest
from voicebridge.converse.responders.bedrock import BedrockResponder
from voicebridge.converse.responders.function import FunctionResponder
from voicebridge.converse.responders.lex import LexResponder
from voicebridge.converse.responders.scripted import ScriptedResponder
from voicebridge.errors import ConfigurationError

RULES = {"rules": [{"match": ["agent"], "reply": "One moment.", "action": "Transfer"}]}
OBJECTS = {("config", "rules.json"): json.dumps(RULES).encode(), ("config", "prompt.txt"): b"Be brief.\n"}


# --- settings ---------------------------------------------------------------------------------------------


def test_the_scripted_responder_is_the_default_and_needs_nothing_to_read_the_settings() -> None:
    settings = Settings.from_env({})
    assert (settings.responder, settings.responder_timeout_ms, settings.history_turns) == ("scripted", 8000, 10)
    assert settings.apology_text == "Sorry, I am having trouble right now. Could you say that again?"


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"RESPONDER": "openai"}, "RESPONDER: must be 'scripted' or 'bedrock' or 'lex' or 'lambda'"),
        ({"RESPONDER": "bedrock"}, "BEDROCK_MODEL_ID: must be set when RESPONDER is bedrock"),
        ({"RESPONDER": "lex", "LEX_BOT_ID": "ABCDEFGHIJ"}, "LEX_BOT_ALIAS_ID: must be set when RESPONDER is lex"),
        ({"RESPONDER": "lambda"}, "RESPONDER_FUNCTION_ARN: must be set when RESPONDER is lambda"),
        ({"RESPONDER_TIMEOUT_MS": "100"}, "RESPONDER_TIMEOUT_MS: must be at least 500"),
        ({"HISTORY_TURNS": "51"}, "HISTORY_TURNS: must be at most 50"),
        ({"BEDROCK_TEMPERATURE": "1.5"}, "BEDROCK_TEMPERATURE: must be from 0 to 1"),
        ({"BEDROCK_TOP_P": "most"}, "BEDROCK_TOP_P: must be a number"),
        ({"BEDROCK_MAX_TOKENS": "0"}, "BEDROCK_MAX_TOKENS: must be at least 1"),
        ({"BEDROCK_GUARDRAIL_ID": "gr1abc"}, "BEDROCK_GUARDRAIL_ID, BEDROCK_GUARDRAIL_VERSION: must be set together"),
        (
            {"BEDROCK_GUARDRAIL_ID": "gr1", "BEDROCK_GUARDRAIL_VERSION": "v2"},
            "BEDROCK_GUARDRAIL_VERSION: must be DRAFT",
        ),
        ({"LEX_BOT_ID": "my-bot"}, "LEX_BOT_ID: must be a bot id"),
        ({"LEX_INTENT_ACTIONS": "Goodbye"}, "LEX_INTENT_ACTIONS: 'Goodbye' is not Intent=Action"),
        ({"LEX_INTENT_ACTIONS": "Goodbye=Leave"}, "LEX_INTENT_ACTIONS: unknown action 'Leave'"),
        ({"LEX_INTENT_ACTIONS": "A=Hangup,A=Transfer"}, "LEX_INTENT_ACTIONS: names A twice"),
    ],
)
def test_a_bad_responder_setting_is_refused_naming_it(env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env(env)
    assert problem in refused.value.safe_message


def test_the_responders_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "RESPONDER": "bedrock",
            "BEDROCK_MODEL_ID": "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-lite-v1:0",
            "BEDROCK_TEMPERATURE": "0.3",
            "BEDROCK_GUARDRAIL_ID": "gr1abc",
            "BEDROCK_GUARDRAIL_VERSION": "DRAFT",
            "LEX_INTENT_ACTIONS": " TransferToAgent = transfer , Goodbye=HANGUP,",
        }
    )
    assert (settings.bedrock_temperature, settings.bedrock_top_p, settings.bedrock_guardrail_version) == (
        0.3,
        None,
        "DRAFT",
    )
    assert dict(settings.lex_intent_actions) == {"TransferToAgent": Action.TRANSFER, "Goodbye": Action.HANGUP}


# --- documents --------------------------------------------------------------------------------------------


class S3:
    def __init__(self, objects: dict[tuple[str, str], bytes]) -> None:
        self.objects = objects
        self.reads: list[tuple[str, str]] = []

    def get_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
        self.reads.append((Bucket, Key))
        if (Bucket, Key) not in self.objects:
            raise ClientError({"Error": {"Code": "NoSuchKey", "Message": "gone"}}, "GetObject")
        return {"Body": io.BytesIO(self.objects[Bucket, Key])}


def test_a_document_setting_is_its_own_text_unless_it_names_an_s3_object() -> None:
    s3 = S3({("config", "prompts/agent.txt"): "Be brief. ☺".encode()})
    assert read_document("Be kind.", lambda: s3, setting="BEDROCK_SYSTEM_PROMPT") == "Be kind."
    assert s3.reads == []
    assert read_document("s3://config/prompts/agent.txt", lambda: s3, setting="X") == "Be brief. ☺"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("s3://config", "RESPONDER_RULES: 's3://config' is not s3://bucket/key"),
        ("s3://config/missing.json", "RESPONDER_RULES: s3://config/missing.json could not be read (NoSuchKey)"),
    ],
)
def test_an_unreadable_document_is_a_configuration_error(value: str, problem: str) -> None:
    with pytest.raises(ConfigurationError) as refused:
        read_document(value, lambda: S3({}), setting="RESPONDER_RULES")
    assert refused.value.safe_message == problem


# --- the container ----------------------------------------------------------------------------------------


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """The container with fresh settings, its clients replaced by recorders of how they were asked for."""
    asked: dict[str, Any] = {}

    def client(service: str, **options: Any) -> Any:
        asked[service] = options
        return S3(OBJECTS) if service == "s3" else object()

    for name in list(os.environ):
        if name.startswith(("RESPONDER", "BEDROCK_", "LEX_")):
            monkeypatch.delenv(name)
    monkeypatch.setattr(container, "client", client)
    container.reset()
    yield asked
    container.reset()


def test_the_container_builds_the_scripted_responder_from_rules_in_s3_once(
    clients: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESPONDER_RULES", "s3://config/rules.json")
    responder = container.responder()
    assert isinstance(responder, ScriptedResponder) and container.responder() is responder
    assert responder.respond(TurnRequest("c1", 0, "an agent please"), deadline=0).action is Action.TRANSFER


def test_the_scripted_responder_needs_its_rules(clients: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match="RESPONDER_RULES"):
        container.responder()


@pytest.mark.parametrize(
    ("env", "kind", "service"),
    [
        ({"RESPONDER": "bedrock", "BEDROCK_MODEL_ID": "amazon.nova-lite-v1:0"}, BedrockResponder, "bedrock-runtime"),
        (
            {"RESPONDER": "lex", "LEX_BOT_ID": "ABCDEFGHIJ", "LEX_BOT_ALIAS_ID": "TSTALIASID"},
            LexResponder,
            "lexv2-runtime",
        ),
        ({"RESPONDER": "lambda", "RESPONDER_FUNCTION_ARN": "answer-calls"}, FunctionResponder, "lambda"),
    ],
)
def test_the_container_builds_the_chosen_responder_on_a_client_that_never_retries(
    clients: dict[str, Any], monkeypatch: pytest.MonkeyPatch, env: dict[str, str], kind: type, service: str
) -> None:
    for name, value in {**env, "RESPONDER_TIMEOUT_MS": "5000"}.items():
        monkeypatch.setenv(name, value)
    assert isinstance(container.responder(), kind)
    assert clients[service] == {"read_timeout": 5.0, "retries": 0}


def test_the_bedrock_system_prompt_is_read_from_s3_when_named_so(
    clients: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "RESPONDER": "bedrock",
        "BEDROCK_MODEL_ID": "amazon.nova-lite-v1:0",
        "BEDROCK_SYSTEM_PROMPT": "s3://config/prompt.txt",
    }.items():
        monkeypatch.setenv(name, value)
    responder = container.responder()
    assert isinstance(responder, BedrockResponder) and responder.system_prompt == "Be brief."


def test_a_rules_file_whose_fallback_is_not_an_object_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="fallback must be an object"):
        ScriptedResponder.from_json('{"rules": [], "fallback": "Sorry?"}')
