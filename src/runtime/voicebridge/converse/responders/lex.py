"""The ``lex`` responder: an existing Amazon Lex V2 bot answers each turn through ``RecognizeText``.

The call, per botocore's ``lexv2-runtime`` model (2020-08-07; HTTP ``POST
/bots/{botId}/botAliases/{botAliasId}/botLocales/{localeId}/sessions/{sessionId}/text``)::

    recognize_text(botId, botAliasId, localeId, sessionId, text (1-1024 characters), requestAttributes?)
    -> {messages: [{contentType: PlainText | SSML | ImageResponseCard | CustomPayload, content?,
                    imageResponseCard?: {title, subtitle?, imageUrl?, buttons?: [{text, value}]}}, ...],
        sessionState: {dialogAction: {type: Close | ConfirmIntent | Delegate | ElicitIntent | ElicitSlot | None},
                       intent: {name, state: Fulfilled | Failed | InProgress | ReadyForFulfillment | Waiting |
                                FulfillmentInProgress, slots},
                       sessionAttributes: {name: text}},
        interpretations, sessionId}

Lex keeps each dialog's state itself, per session; a contact is one session (``sessionId`` is the ContactId, with
anything outside the model's ``[0-9a-zA-Z._:-]`` replaced and the length kept to 2-100). The contact's attributes
go with each turn as request attributes, so the bot's code hooks see them without Lex's session state being
overwritten.

What the bot answers is spoken: PlainText as it is, SSML as its text without the tags, an ImageResponseCard as
its title, subtitle and buttons; CustomPayload is for screens, not voices, and is left out. The bot's session
attributes reach the flow as attributes, with ``LexIntent`` and ``LexIntentState``. The action: a session attribute
``voicebridge_action`` the bot sets (``Transfer``, ``Hangup``, ``Continue``) wins; otherwise a Close dialog action
whose intent is Fulfilled or Failed takes the action ``LEX_INTENT_ACTIONS`` maps that intent to; anything else
continues the conversation.

A contact is answered in the bot locale of its language (``TurnRequest.language``) where the bot has one: among
``locale_id`` and ``locale_ids`` (``LEX_LOCALE_ID``, ``LEX_LOCALE_IDS``), the locale of the contact's own tag
(``es-US`` → ``es_US``), else the first of its language (``es-MX`` → ``es_US``), else ``locale_id``::

    responder = LexResponder(container.client("lexv2-runtime"), bot_id="ABCDEFGHIJ", bot_alias_id="TSTALIASID",
                             locale_id="en_US", intent_actions={"TransferToAgent": Action.TRANSFER})
    reply = responder.respond(TurnRequest("c1", 0, "talk to an agent"), deadline=time.monotonic() + 8)
    "".join(reply.text()), reply.action, reply.attributes["LexIntent"]
    # ("Transferring you now.", Action.TRANSFER, "TransferToAgent")
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import HTTPError as Urllib3Error

from voicebridge.conversation import Action
from voicebridge.converse.responder import FixedReply, ResponderError, TurnRequest
from voicebridge.converse.responders.refusals import refusal
from voicebridge.telemetry import logger

ACTION_ATTRIBUTE = "voicebridge_action"
"""The session attribute a bot sets to choose the reply's action itself."""
INTENT_ATTRIBUTE = "LexIntent"
INTENT_STATE_ATTRIBUTE = "LexIntentState"
MAX_TEXT_CHARS = 1024
"""RecognizeText's longest ``text``."""
CLOSED_STATES = frozenset({"Fulfilled", "Failed"})
_RESERVED_ATTRIBUTE_PREFIX = "x-amz-lex:"
_SESSION_ID_REFUSED = re.compile(r"[^0-9a-zA-Z._:-]")
_SSML_BREAKS = re.compile(r"<\s*/?\s*(?:break|p|s|speak)\b[^>]*>", re.IGNORECASE)
_SSML_TAG = re.compile(r"<[^>]*>")
_SPACES = re.compile(r"\s+")
_EXPLAINED_REFUSALS = frozenset({"AccessDeniedException", "ResourceNotFoundException"})
"""Refusals naming what is wrong with the deployment (bot, alias, locale, access): their message is reported."""


def session_id(contact_id: str) -> str:
    """The Lex session of a contact: its id, in the characters and length ``sessionId`` allows."""
    return _SESSION_ID_REFUSED.sub("-", contact_id)[:100].ljust(2, "-")


def spoken(messages: list[Mapping[str, Any]]) -> str:
    """What the caller hears of a bot's ``messages``."""
    said = []
    for message in messages:
        kind = message.get("contentType")
        if kind == "PlainText":
            said.append(_SPACES.sub(" ", message.get("content") or "").strip())
        elif kind == "SSML":
            said.append(_ssml_text(message.get("content") or ""))
        elif kind == "ImageResponseCard":
            said.append(_card_text(message.get("imageResponseCard") or {}))
    return " ".join(text for text in said if text)


def action_of(state: Mapping[str, Any], intent_actions: Mapping[str, Action]) -> Action:
    """The action a bot's ``sessionState`` asks of the flow."""
    explicit = (state.get("sessionAttributes") or {}).get(ACTION_ATTRIBUTE)
    if explicit:
        try:
            return Action.parse(explicit)
        except ValueError:
            logger.warning("the bot set an unknown action; continuing", attribute=ACTION_ATTRIBUTE, value=explicit[:40])
    intent = state.get("intent") or {}
    if (state.get("dialogAction") or {}).get("type") == "Close" and intent.get("state") in CLOSED_STATES:
        return intent_actions.get(intent.get("name", ""), Action.CONTINUE)
    return Action.CONTINUE


def reply_of(response: Mapping[str, Any], intent_actions: Mapping[str, Action]) -> FixedReply:
    """The reply a ``RecognizeText`` response makes: its messages, action and attributes."""
    state = response.get("sessionState") or {}
    intent = state.get("intent") or {}
    attributes = {str(name): str(value) for name, value in (state.get("sessionAttributes") or {}).items()}
    if intent.get("name"):
        attributes[INTENT_ATTRIBUTE] = intent["name"]
        if intent.get("state"):
            attributes[INTENT_STATE_ATTRIBUTE] = intent["state"]
    return FixedReply(spoken(response.get("messages") or []), action_of(state, intent_actions), attributes)


class LexResponder:
    """Answers with an Amazon Lex V2 bot, one ``RecognizeText`` per turn."""

    name = "lex"
    speculative_safe = False
    """RecognizeText advances the bot's dialog state: it is asked only once the caller's turn has ended."""

    def __init__(
        self,
        client: Any,
        *,
        bot_id: str,
        bot_alias_id: str,
        locale_id: str = "en_US",
        locale_ids: Sequence[str] = (),
        intent_actions: Mapping[str, Action] | None = None,
    ) -> None:
        """``client`` is a ``lexv2-runtime`` client whose read timeout bounds the call."""
        self._client = client
        self.bot_id = bot_id
        self.bot_alias_id = bot_alias_id
        self.locale_id = locale_id
        self.locale_ids = (locale_id, *(locale for locale in locale_ids if locale != locale_id))
        self.intent_actions = dict(intent_actions or {})

    def locale_for(self, language: str) -> str:
        """The bot locale a contact speaking ``language`` (a BCP-47 tag) is answered in."""
        wanted = language.replace("-", "_")
        if wanted in self.locale_ids:
            return wanted
        base = wanted.split("_", 1)[0].lower()
        return next((locale for locale in self.locale_ids if locale.split("_", 1)[0] == base), self.locale_id)

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        text = request.transcript.strip()
        if not text:
            raise ResponderError("the turn has no words to send to the bot")
        if time.monotonic() >= deadline:
            raise ResponderError("no time left to ask the bot")
        if len(text) > MAX_TEXT_CHARS:
            logger.warning("turn cut to the length Lex accepts", chars=len(text), kept=MAX_TEXT_CHARS)
            text = text[:MAX_TEXT_CHARS]
        parameters: dict[str, Any] = {
            "botId": self.bot_id,
            "botAliasId": self.bot_alias_id,
            "localeId": self.locale_for(request.language),
            "sessionId": session_id(request.contact_id),
            "text": text,
        }
        attributes = {k: v for k, v in request.attributes.items() if not k.startswith(_RESERVED_ATTRIBUTE_PREFIX)}
        if attributes:
            parameters["requestAttributes"] = attributes
        try:
            response = self._client.recognize_text(**parameters)
        except ClientError as exc:
            raise ResponderError(refusal("Lex", exc, _EXPLAINED_REFUSALS)) from None
        except (BotoCoreError, Urllib3Error) as exc:
            raise ResponderError(f"Lex unreachable ({type(exc).__name__})") from None
        reply = reply_of(response, self.intent_actions)
        intent = (response.get("sessionState") or {}).get("intent") or {}
        logger.info(
            "lex reply",
            turn=request.turn_index,
            intent=intent.get("name"),
            intent_state=intent.get("state"),
            action=reply.action.value,
            messages=len(response.get("messages") or []),
            text_chars=len(reply.spoken),
        )
        return reply


def _ssml_text(ssml: str) -> str:
    # A break, paragraph or sentence separates words; any other tag sits inside them.
    text = _SSML_TAG.sub("", _SSML_BREAKS.sub(" ", ssml))
    return _SPACES.sub(" ", html.unescape(text)).strip()


def _card_text(card: Mapping[str, Any]) -> str:
    buttons = ", ".join(str(b.get("text", "")).strip() for b in card.get("buttons") or [] if b.get("text"))
    parts = [str(card.get("title") or "").strip(), str(card.get("subtitle") or "").strip(), buttons]
    # Each part ends as a sentence, so the reply is cut into sentences where the card's lines end.
    return " ".join(part if part[-1] in ".!?…" else part + "." for part in parts if part)
