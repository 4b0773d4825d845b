"""What ``ConnectParticipantWithLexBot`` needs around a Lex V2 bot: which bot, how long to wait, what it leaves.

Connect streams the caller's audio to the bot; the simulator sends the words instead, with Lex V2's
``RecognizeText`` (botocore's ``lexv2-runtime`` model) to the Lex emulator — a clip's transcript, or the keys
pressed as text, as Lex takes DTMF. The bot is the block's ``LexV2Bot.AliasArn``
(``arn:aws:lex:<region>:<account>:bot-alias/<botId>/<botAliasId>``); the locale is the contact's language
(``en-US`` → ``en_US``); the session is the contact. ``LexSessionAttributes`` go with the first turn.

The conversation goes on while the bot elicits (``ElicitSlot``, ``ConfirmIntent``, ``ElicitIntent``): its
messages are played and the caller's next utterance is sent. It ends when the bot closes the intent: the block
branches on the intent's name (its conditions), else ``NoMatchingCondition``. No utterance within the start timeout
takes ``InputTimeLimitExceeded``. The start timeout is the session attribute
``x-amz-lex:audio:start-timeout-ms:<intent>:<slot>`` (``*`` for any), else 4,000 ms — the default of Lex V2's
*Configuring timeouts for capturing user input*; an AWS re:Post answer gives 3,000 ms with Connect, so sources
disagree. Lex V1 bots (``LexBot``) are not in the local cloud.

What the bot leaves is ``$.Lex`` (Connect's *List of available contact attributes*): ``IntentName``,
``IntentConfidence.Score``, ``Slots.<name>`` (interpreted values), ``SessionAttributes.<key>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "DEFAULT_START_TIMEOUT_S",
    "LexBotRef",
    "bot_of",
    "closed",
    "lex_attributes",
    "message_text",
    "start_timeout_s",
]

DEFAULT_START_TIMEOUT_S: Final = 4.0
_ALIAS_ARN: Final = re.compile(
    r"arn:aws[a-z-]*:lex:(?P<region>[a-z0-9-]+):\d{12}:bot-alias/(?P<bot>[0-9A-Za-z]{10})/(?P<alias>[0-9A-Za-z]{10})"
)
_START_TIMEOUT: Final = "x-amz-lex:audio:start-timeout-ms"
_TAG: Final = re.compile(r"<[^>]*>")


@dataclass(frozen=True)
class LexBotRef:
    bot_id: str
    alias_id: str
    region: str


def bot_of(alias_arn: str) -> LexBotRef | None:
    """The bot a ``LexV2Bot.AliasArn`` names; None when it is not a bot alias's ARN."""
    match = _ALIAS_ARN.fullmatch(alias_arn.strip())
    if match is None:
        return None
    return LexBotRef(match["bot"], match["alias"], match["region"])


def start_timeout_s(attributes: Mapping[str, str], intent: str | None = None, slot: str | None = None) -> float:
    """How long the bot waits for the caller to start speaking, from the session attributes (see the module)."""
    candidates = [f"{_START_TIMEOUT}:{intent}:{slot}", f"{_START_TIMEOUT}:{intent}:*", f"{_START_TIMEOUT}:*:*"]
    candidates += [f"{_START_TIMEOUT}:*", _START_TIMEOUT]
    for key in candidates:
        value = attributes.get(key)
        if value is not None:
            try:
                return max(int(value), 1) / 1000
            except ValueError:
                continue
    return DEFAULT_START_TIMEOUT_S


def closed(answer: Mapping[str, Any]) -> bool:
    """Whether the bot's answer ends the conversation (its dialog action is ``Close``)."""
    state = answer.get("sessionState") or {}
    return ((state.get("dialogAction") or {}).get("type")) == "Close"


def message_text(answer: Mapping[str, Any]) -> str:
    """The words the bot's messages say (SSML's tags dropped), spoken by Connect's voice."""
    texts = []
    for message in answer.get("messages") or []:
        content = str(message.get("content") or "")
        if message.get("contentType") == "SSML":
            content = _TAG.sub(" ", content)
        if content.strip():
            texts.append(" ".join(content.split()))
    return " ".join(texts)


def lex_attributes(answer: Mapping[str, Any]) -> dict[str, Any]:
    """``$.Lex`` after the bot's answer."""
    state = answer.get("sessionState") or {}
    intent = state.get("intent") or {}
    slots = {
        name: ((slot or {}).get("value") or {}).get("interpretedValue")
        for name, slot in (intent.get("slots") or {}).items()
    }
    score = None
    for interpretation in answer.get("interpretations") or []:
        if (interpretation.get("intent") or {}).get("name") == intent.get("name"):
            score = (interpretation.get("nluConfidence") or {}).get("score")
            break
    return {
        "IntentName": intent.get("name"),
        "IntentConfidence": {"Score": None if score is None else str(score)},
        "Slots": {name: value for name, value in slots.items() if value is not None},
        "SessionAttributes": dict(state.get("sessionAttributes") or {}),
    }
