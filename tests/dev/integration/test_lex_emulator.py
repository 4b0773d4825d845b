"""The Lex V2 runtime RecognizeText emulator, driven by an unmodified boto3 ``lexv2-runtime`` client over loopback
HTTP: botocore serialises the requests and parses the answers and errors, so every assertion is about what a real
client sees.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ConnectionClosedError

from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.lex import BANK_BOT, FALLBACK_INTENT, LABEL, Fault, FaultKind, LexEmulator

pytestmark = pytest.mark.timeout(30)

REGION = "us-east-1"
CAFE_BOT: dict[str, Any] = {
    "botId": "CAFEBOT123",
    "botAliasIds": ["LIVEALIAS1", "TSTALIASID"],
    "locales": {
        "en_GB": {
            "slotTypes": [
                {"name": "Drink", "values": {"tea": ["cuppa", "earl grey"], "coffee": ["latte", "flat white"]}}
            ],
            "intents": [
                {
                    "name": "Order",
                    "sampleUtterances": ["I'd like a {Drink}", "order a drink"],
                    "slots": [
                        {"name": "Drink", "slotType": "Drink", "prompt": "Tea or coffee?"},
                        {"name": "Note", "slotType": "AMAZON.FreeFormInput", "prompt": "Anything to add?"},
                    ],
                    "closingResponse": "<speak>One {Drink} for ((Name)), noted: {Note}.</speak>",
                    "sessionAttributes": {"Ordered": "{Drink}"},
                }
            ],
        }
    },
}


# --- clients and calls --------------------------------------------------------------------------------


@pytest.fixture
def emulator() -> Iterator[LexEmulator]:
    with LexEmulator() as emu:
        yield emu
        emu.stopping.set()
        assert emu.wait_idle(5)


def lex(emulator: LexEmulator, **config: Any) -> Any:
    return boto3.client(
        "lexv2-runtime",
        endpoint_url=emulator.url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(**{"retries": {"total_max_attempts": 1}, "read_timeout": 10, **config}),
    )


def say(emulator: LexEmulator, text: str, session_id: str = "contact-1", client: Any = None, **request: Any) -> Any:
    """The RecognizeTextResponse botocore parses for one turn of the default bot (or of ``request``'s ids)."""
    ids = {"botId": emulator.bot_id, "botAliasId": emulator.bot_alias_id, "localeId": emulator.locale_id}
    answer = (client or lex(emulator)).recognize_text(**{**ids, **request}, sessionId=session_id, text=text)
    answer.pop("ResponseMetadata")
    return answer


def spoken(answer: Any) -> list[str]:
    return [message["content"] for message in answer.get("messages", [])]


def dialog(answer: Any) -> tuple[str, str | None, str | None]:
    """(dialog action, intent, intent state) of an answer."""
    state = answer["sessionState"]
    intent = state.get("intent") or {}
    return state["dialogAction"]["type"], intent.get("name"), intent.get("state")


def refusal(emulator: LexEmulator, text: str = "hello", client: Any = None, **request: Any) -> dict[str, str]:
    with pytest.raises(ClientError) as caught:
        say(emulator, text, client=client, **request)
    return cast("dict[str, str]", caught.value.response["Error"]).copy()


def control(emulator: LexEmulator, method: str, route: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{emulator.url}/_emulator/{route}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


# --- intents ------------------------------------------------------------------------------------------


def test_an_intent_without_slots_closes_fulfilled_with_its_message(emulator: LexEmulator) -> None:
    answer = say(emulator, "What's my balance?")
    assert dialog(answer) == ("Close", "CheckBalance", "Fulfilled")
    assert spoken(answer) == [
        "Your checking account balance is two thousand four hundred and twelve dollars and fifty cents."
    ]
    assert answer["messages"][0]["contentType"] == "PlainText"
    assert answer["sessionId"] == "contact-1"


def test_a_request_for_a_person_and_a_goodbye_close_fulfilled(emulator: LexEmulator) -> None:
    assert dialog(say(emulator, "Let me talk to a person")) == ("Close", "TransferToAgent", "Fulfilled")
    assert dialog(say(emulator, "That's all, goodbye")) == ("Close", "Goodbye", "Fulfilled")


def test_what_no_intent_matches_is_the_fallback_intent_asking_again(emulator: LexEmulator) -> None:
    answer = say(emulator, "Tell me a joke")
    assert dialog(answer) == ("ElicitIntent", FALLBACK_INTENT, "Failed")
    assert spoken(answer)[0].startswith("Sorry, I can help you check your balance")
    assert [i["intent"]["name"] for i in answer["interpretations"]] == [FALLBACK_INTENT]


def test_interpretations_put_the_chosen_intent_first_with_its_confidence(emulator: LexEmulator) -> None:
    answer = say(emulator, "I want to pay my bill from my account")
    names = [i["intent"]["name"] for i in answer["interpretations"]]
    assert names[0] == "PayBill" and names[-1] == FALLBACK_INTENT and "CheckBalance" in names
    assert answer["interpretations"][0]["nluConfidence"]["score"] == 1.0
    assert "nluConfidence" not in answer["interpretations"][-1]
    assert all(i["interpretationSource"] == "Lex" for i in answer["interpretations"])


# --- slots and confirmation ---------------------------------------------------------------------------


def test_pay_bill_elicits_the_amount_then_confirms_it_then_closes(emulator: LexEmulator) -> None:
    asked = say(emulator, "I'd like to pay my bill")
    assert dialog(asked) == ("ElicitSlot", "PayBill", "InProgress")
    assert asked["sessionState"]["dialogAction"]["slotToElicit"] == "Amount"
    assert asked["sessionState"]["intent"]["slots"] == {"Amount": None}
    assert spoken(asked) == ["How much would you like to pay?"]

    confirming = say(emulator, "one hundred and twenty five")
    assert dialog(confirming) == ("ConfirmIntent", "PayBill", "InProgress")
    amount = {"originalValue": "one hundred and twenty five", "interpretedValue": "125", "resolvedValues": ["125"]}
    assert confirming["sessionState"]["intent"]["slots"] == {"Amount": {"value": amount}}
    assert spoken(confirming) == ["You'd like to pay 125 dollars from your checking account. Shall I go ahead?"]

    done = say(emulator, "yes please")
    assert dialog(done) == ("Close", "PayBill", "Fulfilled")
    assert done["sessionState"]["intent"]["confirmationState"] == "Confirmed"
    assert spoken(done) == ["Done. I've paid 125 dollars from your checking account."]
    assert done["sessionState"]["sessionAttributes"] == {"LastPayment": "125"}


def test_an_amount_said_with_the_request_fills_the_slot_at_once(emulator: LexEmulator) -> None:
    answer = say(emulator, "Pay $1,250.50 please")
    assert dialog(answer) == ("ConfirmIntent", "PayBill", "InProgress")
    assert answer["sessionState"]["intent"]["slots"]["Amount"]["value"]["interpretedValue"] == "1250.5"


def test_a_no_to_the_confirmation_fails_the_intent(emulator: LexEmulator) -> None:
    say(emulator, "pay 40 dollars")
    answer = say(emulator, "no, don't")
    assert dialog(answer) == ("Close", "PayBill", "Failed")
    assert answer["sessionState"]["intent"]["confirmationState"] == "Denied"
    assert spoken(answer) == ["Okay, I haven't made the payment."]
    assert answer["sessionState"].get("sessionAttributes", {}) == {}


def test_an_answer_that_is_no_amount_is_asked_again_then_falls_back(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill")
    for _ in range(2):
        again = say(emulator, "hmm, let me think")
        assert dialog(again) == ("ElicitSlot", "PayBill", "InProgress")
        assert spoken(again) == ["How much would you like to pay?"]
    assert dialog(say(emulator, "hmm, let me think")) == ("ElicitIntent", FALLBACK_INTENT, "Failed")


def test_another_intent_said_while_a_slot_is_elicited_switches_to_it(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill")
    assert dialog(say(emulator, "actually, let me talk to a person")) == ("Close", "TransferToAgent", "Fulfilled")
    assert dialog(say(emulator, "what's my balance")) == ("Close", "CheckBalance", "Fulfilled")


def test_a_custom_slot_type_resolves_synonyms_and_free_form_input_takes_what_was_said(emulator: LexEmulator) -> None:
    assert control(emulator, "POST", "bot", CAFE_BOT)[0] == 200
    ids = {"botId": "CAFEBOT123", "botAliasId": "LIVEALIAS1", "localeId": "en_GB"}
    attributes = {"sessionAttributes": {"Name": "Sam"}}
    first = say(emulator, "I'd like a flat white", sessionState=attributes, **ids)
    assert first["sessionState"]["intent"]["slots"]["Drink"]["value"]["interpretedValue"] == "coffee"
    assert first["sessionState"]["dialogAction"] == {"type": "ElicitSlot", "slotToElicit": "Note"}
    done = say(emulator, "extra hot, no sugar", **ids)
    assert done["messages"] == [
        {"content": "<speak>One coffee for Sam, noted: extra hot, no sugar.</speak>", "contentType": "SSML"}
    ]
    assert done["sessionState"]["sessionAttributes"] == {"Name": "Sam", "Ordered": "coffee"}


# --- sessions -----------------------------------------------------------------------------------------


def test_session_attributes_last_across_turns_until_the_client_replaces_them(emulator: LexEmulator) -> None:
    first = say(emulator, "hello", sessionState={"sessionAttributes": {"ContactId": "c-1", "Tier": "gold"}})
    assert first["sessionState"]["sessionAttributes"] == {"ContactId": "c-1", "Tier": "gold"}
    assert say(emulator, "what's my balance")["sessionState"]["sessionAttributes"] == {
        "ContactId": "c-1",
        "Tier": "gold",
    }
    replaced = say(emulator, "what's my balance", sessionState={"sessionAttributes": {"ContactId": "c-1"}})
    assert replaced["sessionState"]["sessionAttributes"] == {"ContactId": "c-1"}


def test_sessions_are_kept_apart_by_session_id(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill", session_id="caller-a")
    other = say(emulator, "fifty", session_id="caller-b")
    assert dialog(other) == ("ElicitIntent", FALLBACK_INTENT, "Failed")
    assert dialog(say(emulator, "fifty", session_id="caller-a")) == ("ConfirmIntent", "PayBill", "InProgress")


def test_an_idle_session_is_forgotten(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill", sessionState={"sessionAttributes": {"ContactId": "c-1"}})
    emulator.sessions.ttl_s = 0.2
    time.sleep(0.3)
    answer = say(emulator, "fifty")
    assert dialog(answer) == ("ElicitIntent", FALLBACK_INTENT, "Failed")
    assert answer["sessionState"].get("sessionAttributes", {}) == {}


def test_request_attributes_are_answered_back_and_not_kept(emulator: LexEmulator) -> None:
    assert say(emulator, "hello", requestAttributes={"channel": "voice"})["requestAttributes"] == {"channel": "voice"}
    assert "requestAttributes" not in say(emulator, "hello")


def test_a_client_can_steer_the_dialog_through_the_session_state(emulator: LexEmulator) -> None:
    eliciting = {"dialogAction": {"type": "ElicitSlot", "slotToElicit": "Amount"}, "intent": {"name": "PayBill"}}
    assert dialog(say(emulator, "thirty", sessionState=eliciting)) == ("ConfirmIntent", "PayBill", "InProgress")
    amount = {"value": {"interpretedValue": "75", "originalValue": "75"}}
    delegated = {"dialogAction": {"type": "Delegate"}, "intent": {"name": "PayBill", "slots": {"Amount": amount}}}
    answer = say(emulator, "go on", session_id="contact-2", sessionState=delegated)
    assert dialog(answer) == ("ConfirmIntent", "PayBill", "InProgress")
    assert spoken(answer) == ["You'd like to pay 75 dollars from your checking account. Shall I go ahead?"]


def test_the_sessions_are_listed_and_forgotten_over_http(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill", sessionState={"sessionAttributes": {"ContactId": "c-1"}})
    status, answer = control(emulator, "GET", "sessions")
    (session,) = answer["sessions"]
    assert status == 200
    assert (session["sessionId"], session["intent"], session["slotToElicit"]) == ("contact-1", "PayBill", "Amount")
    assert session["sessionAttributes"] == {"ContactId": "c-1"}
    assert control(emulator, "DELETE", "sessions") == (200, {"cleared": 1})
    assert dialog(say(emulator, "fifty")) == ("ElicitIntent", FALLBACK_INTENT, "Failed")


# --- errors -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        ({"botId": "NOSUCHBOT1"}, "NOSUCHBOT1/TSTALIASID is not a valid BotId/BotAliasId combination."),
        ({"botAliasId": "OTHERALIAS"}, "LOCALBANK1/OTHERALIAS is not a valid BotId/BotAliasId combination."),
        ({"localeId": "fr_FR"}, "The locale fr_FR is not available"),
    ],
)
def test_a_bot_alias_or_locale_it_does_not_serve_is_not_found(
    emulator: LexEmulator, ids: dict[str, str], message: str
) -> None:
    error = refusal(emulator, **ids)
    assert error["Code"] == "ResourceNotFoundException"
    assert error["Message"].startswith(message)


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"session_id": "has space"}, "at 'sessionId' failed to satisfy constraint"),
        ({"session_id": "x" * 101}, "at 'sessionId' failed to satisfy constraint"),
        ({"botId": "LOCALBANK12"}, "at 'botId' failed to satisfy constraint"),
        ({"text": "x" * 1025}, "at 'text' failed to satisfy constraint"),
        ({"sessionState": {"dialogAction": {"type": "Shout"}}}, "sessionState.dialogAction.type"),
        ({"sessionState": {"intent": {"name": "OrderPizza"}}}, "The intent OrderPizza is not defined"),
        (
            {
                "sessionState": {
                    "dialogAction": {"type": "ElicitSlot", "slotToElicit": "Tip"},
                    "intent": {"name": "PayBill"},
                }
            },
            "has no slot Tip",
        ),
        ({"sessionState": {"dialogAction": {"type": "ConfirmIntent"}}}, "needs an intent"),
    ],
)
def test_a_request_the_runtime_would_refuse_is_a_validation_exception(
    emulator: LexEmulator, request_fields: dict[str, Any], message: str
) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    fields = dict(request_fields)
    session_id, text = fields.pop("session_id", "contact-1"), fields.pop("text", "hello")
    client = lex(emulator, parameter_validation=False)
    with pytest.raises(ClientError) as caught:
        say(emulator, text, session_id, client=client, **fields)
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert message in caught.value.response["Error"]["Message"]
    assert len(emulator.pending_faults) == 1, "a refused request takes no fault"


# --- faults -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "code"),
    [
        (FaultKind.THROTTLE, "ThrottlingException"),
        (FaultKind.INTERNAL_ERROR, "InternalServerException"),
        (FaultKind.DEPENDENCY_FAILED, "DependencyFailedException"),
    ],
)
def test_an_injected_error_is_answered_as_the_runtime_answers_it(
    emulator: LexEmulator, kind: FaultKind, code: str
) -> None:
    emulator.inject(Fault(kind))
    assert refusal(emulator)["Code"] == code
    assert dialog(say(emulator, "what's my balance")) == ("Close", "CheckBalance", "Fulfilled")
    assert [r.outcome for r in emulator.invocations] == [f"fault_{kind.value}", "ok"]


def test_boto3_retries_a_throttled_turn(emulator: LexEmulator) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    client = lex(emulator, retries={"max_attempts": 3, "mode": "standard"})
    assert dialog(say(emulator, "what's my balance", client=client))[1] == "CheckBalance"


def test_a_stall_holds_the_answer_back(emulator: LexEmulator) -> None:
    emulator.inject(Fault(FaultKind.STALL, seconds=0.5))
    began = time.perf_counter()
    assert dialog(say(emulator, "what's my balance"))[1] == "CheckBalance"
    assert time.perf_counter() - began >= 0.5


def test_a_dropped_connection_gets_no_answer_and_leaves_the_session_as_it_was(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill")
    emulator.inject(Fault(FaultKind.DROP))
    with pytest.raises(ConnectionClosedError):
        say(emulator, "fifty")
    assert dialog(say(emulator, "fifty")) == ("ConfirmIntent", "PayBill", "InProgress")


def test_faults_are_injected_listed_and_cleared_over_http(emulator: LexEmulator) -> None:
    status, answer = control(emulator, "POST", "faults", [{"kind": "throttle", "count": 2}, {"kind": "stall"}])
    assert status == 201 and [f["kind"] for f in answer["pending"]] == ["throttle", "stall"]
    assert refusal(emulator)["Code"] == "ThrottlingException"
    assert control(emulator, "DELETE", "faults") == (200, {"cleared": 2})
    assert control(emulator, "POST", "faults", {"kind": "meltdown"})[0] == 400


# --- the bot, records and the control plane -----------------------------------------------------------


def test_a_bot_given_over_http_is_served_and_the_old_sessions_forgotten(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill")
    status, answer = control(emulator, "POST", "bot", CAFE_BOT)
    assert (status, answer["botId"], answer["locales"]) == (200, "CAFEBOT123", ["en_GB"])
    assert control(emulator, "GET", "bot") == (200, CAFE_BOT)
    bank = {"botId": "LOCALBANK1", "botAliasId": "TSTALIASID", "localeId": "en_US"}
    assert refusal(emulator, **bank)["Code"] == "ResourceNotFoundException"
    ids = {"botId": "CAFEBOT123", "botAliasId": "TSTALIASID", "localeId": "en_GB"}
    assert dialog(say(emulator, "blah", **ids)) == ("ElicitIntent", FALLBACK_INTENT, "Failed")


@pytest.mark.parametrize(
    "bot",
    [
        {**BANK_BOT, "botId": "short"},
        {**BANK_BOT, "locales": {"en_US": {"intents": [{"name": "Empty"}]}}},
        {**BANK_BOT, "locales": {"en_US": {"intents": [{"name": "A", "sampleUtterances": ["pay {Tip}"]}]}}},
        {
            **BANK_BOT,
            "locales": {
                "en_US": {
                    "intents": [{"name": "A", "sampleUtterances": ["a"], "slots": [{"name": "S", "slotType": "X"}]}]
                }
            },
        },
    ],
)
def test_a_malformed_bot_is_refused_and_the_old_one_kept(emulator: LexEmulator, bot: dict[str, Any]) -> None:
    assert control(emulator, "POST", "bot", bot)[0] == 400
    assert control(emulator, "GET", "bot") == (200, BANK_BOT)


def test_a_bot_given_to_the_constructor_is_served() -> None:
    with LexEmulator(bot=CAFE_BOT) as emu:
        assert (emu.bot_id, emu.bot_alias_id, emu.locale_id) == ("CAFEBOT123", "LIVEALIAS1", "en_GB")
        assert dialog(say(emu, "order a drink"))[:2] == ("ElicitSlot", "Order")


def test_each_call_is_recorded_with_what_was_asked_and_answered(emulator: LexEmulator) -> None:
    say(emulator, "pay my bill")
    status, answer = control(emulator, "GET", "invocations")
    assert status == 200 and answer["emulator"] == LABEL
    (record,) = answer["invocations"]
    assert (record["bot_id"], record["session_id"], record["body"]) == (
        "LOCALBANK1",
        "contact-1",
        {"text": "pay my bill"},
    )
    assert record["answer"]["sessionState"]["dialogAction"]["slotToElicit"] == "Amount"
    assert emulator.invocations[0].intent == "PayBill"


def test_the_local_cloud_exports_reach_it_with_a_plain_client(cloud_env: LocalCloud) -> None:
    client = boto3.client("lexv2-runtime", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    answer = client.recognize_text(
        botId=os.environ["LEX_BOT_ID"],
        botAliasId=os.environ["LEX_BOT_ALIAS_ID"],
        localeId=os.environ["LEX_LOCALE_ID"],
        sessionId=f"exports-{time.monotonic_ns()}",
        text="what's my balance",
    )
    assert answer["sessionState"]["intent"]["name"] == "CheckBalance"
