"""The responders as the container builds them, on real boto3 clients, against the emulators over loopback HTTP.

Bedrock ``ConverseStream`` is the Bedrock Runtime emulator (botocore decodes its event stream), Lex ``RecognizeText``
the Lex V2 runtime emulator serving a small bot, and the customer's function is
``tests.fixtures.lambda_handlers.answer_turn`` run by the Lambda emulator. Each test sets the
environment a container would get and asks :func:`voicebridge.container.responder` for the responder.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.fixtures import ROOT
from voicebridge import container
from voicebridge.conversation import Action, Exchange
from voicebridge.converse.responder import Reply, Responder, ResponderError, TurnRequest
from voicebridge_dev.local.bedrock import BedrockEmulator
from voicebridge_dev.local.bedrock import Fault as BedrockFault
from voicebridge_dev.local.bedrock import FaultKind as BedrockFaultKind
from voicebridge_dev.local.lambda_ import LambdaEmulator
from voicebridge_dev.local.lex import Fault as LexFault
from voicebridge_dev.local.lex import FaultKind as LexFaultKind
from voicebridge_dev.local.lex import LexEmulator

pytestmark = pytest.mark.timeout(60)

CONTACT = "3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f"
LONG = 30.0
BRAIN = {
    "rules": [
        {"match": ["balance"], "reply": "Your balance is two hundred dollars. Anything else?"},
        {
            "match": ["person", "agent"],
            "reply": "Of course, one moment.",
            "tool": {"name": "transfer_to_agent", "input": {"reason": "the caller asked for a person"}},
        },
        {"match": ["goodbye"], "reply": "", "tool": {"name": "end_call", "input": {}}},
    ],
    "fallback": {"reply": "Sorry, could you say that another way?"},
}

BOT = {
    "botId": "VOICEBOT01",
    "botName": "ResponderTestBot",
    "botAliasIds": ["TSTALIASID"],
    "locales": {
        "en_GB": {
            "intents": [
                {
                    "name": "CheckBalance",
                    "sampleUtterances": ["what is my balance"],
                    "closingResponse": '<speak>Your balance is <say-as interpret-as="cardinal">200</say-as> dollars.'
                    '<break time="300ms"/>Anything else?</speak>',
                },
                {
                    "name": "PayBill",
                    "sampleUtterances": ["pay my bill", "pay {Amount} dollars"],
                    "slots": [{"name": "Amount", "slotType": "AMAZON.Number", "prompt": "How much?"}],
                    "closingResponse": "Done, {Amount} dollars paid.",
                    "sessionAttributes": {"LastPayment": "{Amount}"},
                },
                {
                    "name": "TransferToAgent",
                    "sampleUtterances": ["talk to an agent"],
                    "closingResponse": "Let me connect you.",
                },
                {
                    "name": "Complaint",
                    "sampleUtterances": ["I want to complain"],
                    "closingResponse": "I am sorry to hear that. Let me find someone.",
                    "sessionAttributes": {"voicebridge_action": "Transfer"},
                    "dialogAction": "ElicitIntent",
                },
                {
                    "name": "FallbackIntent",
                    "closingResponse": "Sorry?",
                    "dialogAction": "ElicitIntent",
                    "state": "Failed",
                },
            ]
        }
    },
}


# --- the container --------------------------------------------------------------------------------------

Build = Callable[..., Responder]


@pytest.fixture
def build(monkeypatch: pytest.MonkeyPatch) -> Iterator[Build]:
    """A fresh container's responder, built from the responder settings given (and only those)."""

    def responder(**env: str) -> Responder:
        for name in list(os.environ):
            if name.startswith(("RESPONDER", "BEDROCK_", "LEX_", "HISTORY_", "APOLOGY_")):
                monkeypatch.delenv(name)
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", **env}.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        container.reset()
        return container.responder()

    yield responder
    container.reset()


def turn(transcript: str, **fields: Any) -> TurnRequest:
    return TurnRequest(CONTACT, 2, transcript, **fields)


def heard(reply: Reply) -> tuple[list[str], Action, dict[str, str]]:
    deltas = list(reply.text())
    return deltas, reply.action, dict(reply.attributes)


# --- bedrock ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bedrock_emulator() -> Iterator[BedrockEmulator]:
    with BedrockEmulator(brain=BRAIN, time_to_first_token_ms=10, tokens_per_second=400) as emulator:
        yield emulator


@pytest.fixture
def bedrock(bedrock_emulator: BedrockEmulator, build: Build) -> Iterator[Build]:
    bedrock_emulator.clear_faults()

    def responder(**env: str) -> Responder:
        defaults = {"RESPONDER": "bedrock", "BEDROCK_MODEL_ID": bedrock_emulator.model_id}
        return build(**{**defaults, "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock_emulator.url, **env})

    yield responder
    bedrock_emulator.clear_faults()
    bedrock_emulator.wait_idle(10)


def test_bedrock_streams_the_reply_word_by_word(bedrock: Build) -> None:
    deltas, action, attributes = heard(bedrock().respond(turn("what is my balance"), deadline=_in(LONG)))
    assert "".join(deltas) == "Your balance is two hundred dollars. Anything else?"
    assert len(deltas) > 1
    assert (action, attributes) == (Action.CONTINUE, {})


def test_bedrock_is_sent_the_prompt_history_tools_and_inference_settings(
    bedrock: Build, bedrock_emulator: BedrockEmulator
) -> None:
    responder = bedrock(BEDROCK_SYSTEM_PROMPT="Be brief.", BEDROCK_MAX_TOKENS="50", BEDROCK_TEMPERATURE="0.2")
    history = [Exchange("hello", "Hello! How can I help?")]
    heard(responder.respond(turn("what is my balance", history=history), deadline=_in(LONG)))
    body = bedrock_emulator.invocations[-1].body
    assert body["system"] == [{"text": "Be brief."}]
    assert [(m["role"], m["content"][0]["text"]) for m in body["messages"]] == [
        ("user", "hello"),
        ("assistant", "Hello! How can I help?"),
        ("user", "what is my balance"),
    ]
    assert body["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.2}
    assert [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]] == [
        "transfer_to_agent",
        "end_call",
        "collect_card_by_keypad",
    ]


def test_bedrock_asking_for_a_person_transfers_with_its_reason(bedrock: Build) -> None:
    deltas, action, attributes = heard(bedrock().respond(turn("a person please"), deadline=_in(LONG)))
    assert ("".join(deltas), action, attributes) == (
        "Of course, one moment.",
        Action.TRANSFER,
        {"ActionReason": "the caller asked for a person"},
    )


def test_bedrock_ending_the_call_without_a_word_speaks_the_configured_line(bedrock: Build) -> None:
    responder = bedrock(BEDROCK_HANGUP_TEXT="Goodbye for now.")
    assert heard(responder.respond(turn("goodbye"), deadline=_in(LONG)))[:2] == (["Goodbye for now."], Action.HANGUP)


def test_bedrock_continues_a_reply_already_begun_without_repeating_it(bedrock: Build) -> None:
    reply = bedrock().respond(turn("my balance", spoken_prefix="Your balance is "), deadline=_in(LONG))
    assert "".join(heard(reply)[0]) == " two hundred dollars. Anything else?"


def test_bedrock_failing_mid_stream_fails_the_reply_after_what_was_said(
    bedrock: Build, bedrock_emulator: BedrockEmulator
) -> None:
    bedrock_emulator.inject(BedrockFault(BedrockFaultKind.STREAM_ERROR, after_tokens=2))
    deltas = bedrock().respond(turn("what is my balance"), deadline=_in(LONG)).text()
    said = [next(deltas), next(deltas)]
    with pytest.raises(ResponderError) as failure:
        next(deltas)
    assert "".join(said) == "Your balance"
    assert failure.value.safe_message == "the model stream failed (modelStreamErrorException)"


def test_bedrock_throttling_past_its_retries_fails_the_turn(bedrock: Build, bedrock_emulator: BedrockEmulator) -> None:
    calls = len(bedrock_emulator.invocations)
    bedrock_emulator.inject(BedrockFault(BedrockFaultKind.THROTTLE, count=5))
    with pytest.raises(ResponderError) as failure:
        bedrock().respond(turn("what is my balance"), deadline=_in(LONG))
    assert failure.value.safe_message == "Bedrock refused the request (ThrottlingException)"
    # Three calls, all made by the responder: the container's client retries nothing by itself.
    assert [r.outcome for r in bedrock_emulator.invocations[calls:]] == ["fault_throttle"] * 3


def test_bedrock_stalling_past_the_read_timeout_fails_the_reply(
    bedrock: Build, bedrock_emulator: BedrockEmulator
) -> None:
    bedrock_emulator.inject(BedrockFault(BedrockFaultKind.STALL, after_tokens=1, seconds=2.0))
    deltas = bedrock(RESPONDER_TIMEOUT_MS="500").respond(turn("what is my balance"), deadline=_in(LONG)).text()
    assert next(deltas) == "Your"
    with pytest.raises(ResponderError, match=r"the model stream was interrupted \(ReadTimeoutError\)"):
        next(deltas)


def test_bedrock_dropping_the_connection_fails_the_reply(bedrock: Build, bedrock_emulator: BedrockEmulator) -> None:
    bedrock_emulator.inject(BedrockFault(BedrockFaultKind.DROP, after_tokens=1))
    with pytest.raises(ResponderError, match="interrupted"):
        heard(bedrock().respond(turn("what is my balance"), deadline=_in(LONG)))


def test_bedrock_refusing_an_unknown_model_says_so(bedrock: Build) -> None:
    with pytest.raises(ResponderError, match=r"ValidationException: .+"):
        bedrock(BEDROCK_MODEL_ID="no.such-model-v9").respond(turn("hello"), deadline=_in(LONG))


# --- lex -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lex_emulator() -> Iterator[LexEmulator]:
    with LexEmulator(bot=BOT) as emulator:
        yield emulator


@pytest.fixture
def lex(lex_emulator: LexEmulator, build: Build) -> Iterator[Build]:
    lex_emulator.clear_faults()

    def responder(**env: str) -> Responder:
        defaults = {
            "RESPONDER": "lex",
            "LEX_BOT_ID": lex_emulator.bot_id,
            "LEX_BOT_ALIAS_ID": lex_emulator.bot_alias_id,
            "LEX_LOCALE_ID": lex_emulator.locale_id,
            "LEX_INTENT_ACTIONS": "TransferToAgent=Transfer",
        }
        return build(**{**defaults, "AWS_ENDPOINT_URL_LEX_RUNTIME_V2": lex_emulator.url, **env})

    yield responder
    lex_emulator.clear_faults()
    lex_emulator.wait_idle(10)


def test_lex_speaks_an_ssml_answer_as_its_text_and_names_the_intent(lex: Build) -> None:
    assert heard(lex().respond(TurnRequest("lex-balance", 0, "what is my balance"), deadline=_in(LONG))) == (
        ["Your balance is 200 dollars. Anything else?"],
        Action.CONTINUE,
        {"LexIntent": "CheckBalance", "LexIntentState": "Fulfilled"},
    )


def test_lex_keeps_the_dialog_of_a_contact_across_its_turns(lex: Build) -> None:
    responder = lex()
    first = heard(responder.respond(TurnRequest("lex-bill", 0, "pay my bill"), deadline=_in(LONG)))
    second = heard(responder.respond(TurnRequest("lex-bill", 1, "fifty"), deadline=_in(LONG)))
    assert first == (["How much?"], Action.CONTINUE, {"LexIntent": "PayBill", "LexIntentState": "InProgress"})
    assert second == (
        ["Done, 50 dollars paid."],
        Action.CONTINUE,
        {"LastPayment": "50", "LexIntent": "PayBill", "LexIntentState": "Fulfilled"},
    )


def test_lex_closing_a_mapped_intent_takes_its_action(lex: Build) -> None:
    reply = lex().respond(TurnRequest("lex-agent", 0, "talk to an agent"), deadline=_in(LONG))
    assert heard(reply)[:2] == (["Let me connect you."], Action.TRANSFER)


def test_lex_setting_the_action_attribute_chooses_the_action(lex: Build) -> None:
    reply = lex().respond(TurnRequest("lex-complaint", 0, "I want to complain"), deadline=_in(LONG))
    assert heard(reply)[1] is Action.TRANSFER


def test_lex_is_called_with_the_contact_as_its_session_and_the_attributes(
    lex: Build, lex_emulator: LexEmulator
) -> None:
    request = TurnRequest("contact/7 b", 0, "what is my balance", attributes={"Tier": "gold"})
    heard(lex().respond(request, deadline=_in(LONG)))
    record = lex_emulator.invocations[-1]
    assert (record.session_id, record.body["requestAttributes"]) == ("contact-7-b", {"Tier": "gold"})


def test_lex_throttling_fails_the_turn_without_a_retry(lex: Build, lex_emulator: LexEmulator) -> None:
    calls = len(lex_emulator.invocations)
    lex_emulator.inject(LexFault(LexFaultKind.THROTTLE, count=2))
    with pytest.raises(ResponderError) as failure:
        lex().respond(TurnRequest("lex-throttled", 0, "what is my balance"), deadline=_in(LONG))
    assert failure.value.safe_message == "Lex refused the request (ThrottlingException)"
    assert [r.outcome for r in lex_emulator.invocations[calls:]] == ["fault_throttle"]


def test_lex_answering_later_than_the_timeout_fails_the_turn(lex: Build, lex_emulator: LexEmulator) -> None:
    lex_emulator.inject(LexFault(LexFaultKind.STALL, seconds=1.5))
    with pytest.raises(ResponderError, match=r"Lex unreachable \(ReadTimeoutError\)"):
        lex(RESPONDER_TIMEOUT_MS="500").respond(TurnRequest("lex-slow", 0, "what is my balance"), deadline=_in(LONG))


def test_lex_refusing_an_unknown_bot_says_so(lex: Build) -> None:
    with pytest.raises(ResponderError, match=r"ResourceNotFoundException: .+"):
        lex(LEX_BOT_ID="NOSUCHBOT1").respond(TurnRequest("lex-none", 0, "hello"), deadline=_in(LONG))


# --- the customer's function ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def lambda_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LambdaEmulator]:
    # A template whose code root is the repository, so its container imports tests.fixtures.lambda_handlers.
    template = {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Transform": "AWS::Serverless-2016-10-31",
        "Globals": {"Function": {"Runtime": "python3.13", "CodeUri": str(ROOT), "Timeout": 5, "MemorySize": 256}},
        "Resources": {
            "AnswerTurnFunction": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"Handler": "tests.fixtures.lambda_handlers.answer_turn"},
            }
        },
    }
    path = Path(tmp_path_factory.mktemp("responder-function")) / "template.yaml"
    path.write_text(yaml.safe_dump(template), encoding="utf-8")
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    with LambdaEmulator(path, env=env, concurrency=2) as emulator:
        yield emulator


@pytest.fixture
def function(lambda_emulator: LambdaEmulator, build: Build) -> Build:
    def responder(name: str = "AnswerTurnFunction", **env: str) -> Responder:
        return build(
            RESPONDER="lambda", RESPONDER_FUNCTION_ARN=name, AWS_ENDPOINT_URL_LAMBDA=lambda_emulator.url, **env
        )

    return responder


def test_the_function_answers_from_the_event_it_gets(function: Build) -> None:
    request = turn(
        "what is my balance", history=[Exchange("hi", "Hello!"), Exchange("hm", "Yes?")], attributes={"Tier": "gold"}
    )
    assert heard(function().respond(request, deadline=_in(LONG))) == (
        ["You said: what is my balance"],
        Action.CONTINUE,
        {"Version": "1", "ContactId": CONTACT, "Index": "2", "Exchanges": "2", "Tier": "gold"},
    )


def test_the_function_transfers_the_caller(function: Build) -> None:
    assert heard(function().respond(turn("an agent please"), deadline=_in(LONG))) == (
        ["Let me connect you."],
        Action.TRANSFER,
        {"Reason": "asked"},
    )


def test_a_function_that_raises_fails_the_turn_naming_its_error_type(function: Build) -> None:
    with pytest.raises(ResponderError) as failure:
        function().respond(turn("raise for my balance"), deadline=_in(LONG))
    assert failure.value.safe_message == "the function failed (PaymentDeclined)"


def test_a_function_answering_something_other_than_an_object_fails_the_turn(function: Build) -> None:
    with pytest.raises(ResponderError, match="a JSON list, not an object"):
        function().respond(turn("list my bills"), deadline=_in(LONG))


def test_a_function_that_does_not_exist_fails_the_turn(function: Build) -> None:
    with pytest.raises(ResponderError, match=r"could not be invoked \(ResourceNotFoundException\)"):
        function("NoSuchFunction").respond(turn("hello"), deadline=_in(LONG))


def test_a_function_slower_than_the_timeout_fails_the_turn_and_is_not_invoked_again(
    function: Build, lambda_emulator: LambdaEmulator
) -> None:
    finished = len(lambda_emulator.invocations)
    request = turn("slowly now", attributes={"Seconds": "1.5"})
    with pytest.raises(ResponderError, match=r"the function did not answer \(ReadTimeoutError\)"):
        function(RESPONDER_TIMEOUT_MS="500").respond(request, deadline=_in(LONG))
    assert lambda_emulator.wait_for_idle(10)
    assert len(lambda_emulator.invocations) == finished + 1


def _in(seconds: float) -> float:
    return time.monotonic() + seconds
