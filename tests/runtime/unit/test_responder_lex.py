"""The Lex responder: a RecognizeText answer, as botocore parses it, becomes the words spoken, an action and attributes.

The response dicts follow botocore's ``lexv2-runtime`` model: ``messages`` of PlainText, SSML, ImageResponseCard or
CustomPayload, and ``sessionState`` with the dialog action, the intent and the session attributes.
"""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from voicebridge.conversation import Action
from voicebridge.converse.responder import ResponderError, TurnRequest
from voicebridge.converse.responders.lex import LexResponder, reply_of, session_id, spoken

ACTIONS = {"TransferToAgent": Action.TRANSFER, "Goodbye": Action.HANGUP}
LATER = float("inf")


def state(
    dialog: str = "ElicitIntent", intent: str | None = None, intent_state: str = "InProgress", **attributes: str
) -> dict[str, Any]:
    session: dict[str, Any] = {"dialogAction": {"type": dialog}, "sessionAttributes": attributes}
    if intent is not None:
        session["intent"] = {"name": intent, "slots": {}, "state": intent_state, "confirmationState": "None"}
    return session


def response(*messages: dict[str, Any], session: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "ResponseMetadata": {"HTTPStatusCode": 200},
        "messages": list(messages),
        "sessionState": session or state(),
        "interpretations": [{"intent": {"name": "FallbackIntent", "slots": {}}}],
        "sessionId": "c1",
    }


def plain(content: str) -> dict[str, Any]:
    return {"content": content, "contentType": "PlainText"}


class Lex:
    """A ``lexv2-runtime`` client that answers RecognizeText with one response, or fails."""

    def __init__(self, answer: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.answer = answer or response(plain("Hello."))
        self.error = error
        self.requests: list[dict[str, Any]] = []

    def recognize_text(self, **parameters: Any) -> dict[str, Any]:
        self.requests.append(parameters)
        if self.error is not None:
            raise self.error
        return self.answer


def responder(client: Lex) -> LexResponder:
    return LexResponder(
        client, bot_id="ABCDEFGHIJ", bot_alias_id="TSTALIASID", locale_id="en_GB", intent_actions=ACTIONS
    )


def answer(lex_response: dict[str, Any]) -> tuple[str, Action, dict[str, str]]:
    reply = responder(Lex(lex_response)).respond(TurnRequest("c1", 0, "hello"), deadline=LATER)
    return "".join(reply.text()), reply.action, dict(reply.attributes)


# --- what is spoken ---------------------------------------------------------------------------------------


def test_plain_text_messages_are_spoken_in_order() -> None:
    assert spoken([plain("Sure."), plain("Which account?")]) == "Sure. Which account?"


def test_ssml_is_spoken_as_its_text() -> None:
    ssml = '<speak>Your balance is <say-as interpret-as="cardinal">200</say-as> dollars.<break time="1s"/>Anything'
    assert spoken([{"content": ssml + " else &amp; more?</speak>", "contentType": "SSML"}]) == (
        "Your balance is 200 dollars. Anything else & more?"
    )


def test_a_response_card_is_spoken_as_its_title_subtitle_and_buttons() -> None:
    card = {
        "title": "Which account",
        "subtitle": "Pick one",
        "buttons": [{"text": "Checking", "value": "checking"}, {"text": "Savings", "value": "savings"}],
    }
    message = {"contentType": "ImageResponseCard", "imageResponseCard": card}
    assert spoken([message]) == "Which account. Pick one. Checking, Savings."


def test_a_custom_payload_is_not_spoken() -> None:
    assert spoken([{"content": '{"screen": 2}', "contentType": "CustomPayload"}, plain("Done.")]) == "Done."


# --- the action -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("intent_state", ["Fulfilled", "Failed"])
def test_a_closed_intent_takes_the_action_it_is_mapped_to(intent_state: str) -> None:
    assert answer(response(plain("Transferring you."), session=state("Close", "TransferToAgent", intent_state)))[1] is (
        Action.TRANSFER
    )


def test_a_closed_intent_that_is_not_mapped_continues() -> None:
    assert answer(response(plain("Done."), session=state("Close", "CheckBalance", "Fulfilled")))[1] is Action.CONTINUE


def test_an_intent_still_in_progress_continues_even_when_mapped() -> None:
    session = state("ElicitSlot", "Goodbye", "InProgress")
    assert answer(response(plain("Anything else?"), session=session))[1] is Action.CONTINUE


def test_the_action_attribute_the_bot_sets_wins() -> None:
    session = state("Close", "Goodbye", "Fulfilled", voicebridge_action="transfer")
    assert answer(response(plain("One moment."), session=session))[1] is Action.TRANSFER


def test_an_unknown_action_attribute_is_ignored() -> None:
    session = state("Close", "Goodbye", "Fulfilled", voicebridge_action="dance")
    assert answer(response(plain("Bye."), session=session))[1] is Action.HANGUP


# --- attributes -------------------------------------------------------------------------------------------


def test_session_attributes_and_the_intent_reach_the_flow() -> None:
    session = state("Close", "CheckBalance", "Fulfilled", AccountType="savings")
    assert answer(response(plain("Done."), session=session))[2] == {
        "AccountType": "savings",
        "LexIntent": "CheckBalance",
        "LexIntentState": "Fulfilled",
    }


def test_a_response_without_session_state_continues_with_no_attributes() -> None:
    reply = reply_of({"messages": [plain("Hi.")]}, ACTIONS)
    assert (reply.spoken, reply.action, dict(reply.attributes)) == ("Hi.", Action.CONTINUE, {})


# --- the request ------------------------------------------------------------------------------------------


def test_the_contact_is_the_session_and_its_attributes_go_as_request_attributes() -> None:
    client = Lex()
    request = TurnRequest("c1", 0, " talk to an agent ", attributes={"Tier": "gold", "x-amz-lex:channel": "x"})
    responder(client).respond(request, deadline=LATER)
    assert client.requests == [
        {
            "botId": "ABCDEFGHIJ",
            "botAliasId": "TSTALIASID",
            "localeId": "en_GB",
            "sessionId": "c1",
            "text": "talk to an agent",
            "requestAttributes": {"Tier": "gold"},
        }
    ]


@pytest.mark.parametrize(
    ("contact_id", "session"),
    [
        ("3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f", "3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f"),
        ("a/b c", "a-b-c"),
        ("x", "x-"),
        ("9" * 120, "9" * 100),
    ],
)
def test_a_session_id_keeps_to_the_characters_and_length_lex_allows(contact_id: str, session: str) -> None:
    assert session_id(contact_id) == session


def test_a_long_turn_is_cut_to_the_length_lex_accepts() -> None:
    client = Lex()
    responder(client).respond(TurnRequest("c1", 0, "word " * 400), deadline=LATER)
    assert len(client.requests[0]["text"]) == 1024


def test_an_empty_turn_is_not_sent() -> None:
    client = Lex()
    with pytest.raises(ResponderError, match="no words"):
        responder(client).respond(TurnRequest("c1", 0, " "), deadline=LATER)
    assert client.requests == []


# --- failures ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            ClientError({"Error": {"Code": "DependencyFailedException", "Message": "hook: hello"}}, "RecognizeText"),
            "Lex refused the request (DependencyFailedException)",
        ),
        (
            ClientError({"Error": {"Code": "ResourceNotFoundException", "Message": "No bot"}}, "RecognizeText"),
            "Lex refused the request (ResourceNotFoundException: No bot)",
        ),
        (ReadTimeoutError(endpoint_url="http://lex"), "Lex unreachable (ReadTimeoutError)"),
    ],
)
def test_a_failed_call_fails_with_a_short_safe_reason(error: Exception, reason: str) -> None:
    with pytest.raises(ResponderError) as failure:
        responder(Lex(error=error)).respond(TurnRequest("c1", 0, "hello"), deadline=LATER)
    assert failure.value.safe_message == reason


@pytest.mark.parametrize(
    ("language", "locale"),
    [
        ("es-US", "es_US"),
        ("es-419", "es_419"),
        ("es-MX", "es_US"),
        ("es", "es_US"),
        ("en-US", "en_GB"),
        ("fr", "en_GB"),
    ],
)
def test_a_contact_is_answered_in_the_bot_locale_of_its_language_where_the_bot_has_one(
    language: str, locale: str
) -> None:
    client = Lex()
    bot = LexResponder(client, bot_id="ABCDEFGHIJ", bot_alias_id="TSTALIASID", locale_id="en_GB",
                       locale_ids=("es_US", "es_419"))  # fmt: skip
    bot.respond(TurnRequest("c1", 0, "hola", language=language), deadline=LATER)
    assert client.requests[0]["localeId"] == locale
