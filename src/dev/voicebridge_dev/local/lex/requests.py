"""A RecognizeText request as the Lex V2 runtime reads it, validated as the runtime validates it.

The shapes are botocore's ``lexv2-runtime`` service model (``botocore/data/lexv2-runtime/2020-08-07/service-2.json``):
``RecognizeTextRequest`` is ``botId`` (ten letters or digits), ``botAliasId``, ``localeId`` and ``sessionId`` (2 to
100 of ``[0-9a-zA-Z._:-]``) in the URI, and a JSON body of ``text`` (1 to 1024 characters), ``sessionState?``
(``dialogAction {type: Close|ConfirmIntent|Delegate|ElicitIntent|ElicitSlot|None, slotToElicit?}``, ``intent {name,
slots?, state?, confirmationState?}``, ``sessionAttributes?``, ``activeContexts?``, ``runtimeHints?``) and
``requestAttributes?`` (string maps). botocore checks types, required members and minimum lengths before sending;
maximum lengths and patterns are the runtime's to refuse, with a ValidationException worded as AWS's validation layer
words them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from voicebridge_dev.local.lex.bot import SlotValue
from voicebridge_dev.local.service import ApiError, validation_error

DIALOG_ACTION_TYPES: Final = ("Close", "ConfirmIntent", "Delegate", "ElicitIntent", "ElicitSlot", "None")
_INTENT_STATES: Final = ("Failed", "Fulfilled", "InProgress", "ReadyForFulfillment", "Waiting", "FulfillmentInProgress")
_CONFIRMATION_STATES: Final = ("Confirmed", "Denied", "None")
_BOT_ID: Final = re.compile(r"^[0-9a-zA-Z]+$")
_SESSION_ID: Final = re.compile(r"[0-9a-zA-Z._:-]+")
_MAX_TEXT: Final = 1024


@dataclass(frozen=True)
class RequestedIntent:
    """The intent a request's ``sessionState`` sets."""

    name: str
    slots: Mapping[str, SlotValue | None]
    state: str | None = None
    confirmation_state: str | None = None


@dataclass(frozen=True)
class RequestedState:
    """What a request's ``sessionState`` sets; None where it says nothing."""

    dialog_action: str | None = None
    slot_to_elicit: str | None = None
    intent: RequestedIntent | None = None
    session_attributes: Mapping[str, str] | None = None


@dataclass(frozen=True)
class RecognizeTextRequest:
    bot_id: str
    bot_alias_id: str
    locale_id: str
    session_id: str
    text: str
    session_state: RequestedState | None = None
    request_attributes: Mapping[str, str] | None = None


def _constraint(path: str, value: Any, constraint: str) -> ApiError:
    shown = "null" if value is None else f"'{value}'" if isinstance(value, str | int | float) else type(value).__name__
    return validation_error(
        f"1 validation error detected: Value {shown} at '{path}' failed to satisfy constraint: {constraint}"
    )


def parse_recognize_text(
    bot_id: str, bot_alias_id: str, locale_id: str, session_id: str, body: Any
) -> RecognizeTextRequest:
    """The request the URI's members and ``body`` (decoded JSON) make; :class:`ApiError` (ValidationException)
    otherwise."""
    if len(bot_id) != 10:
        relation = "less" if len(bot_id) > 10 else "greater"
        raise _constraint("botId", bot_id, f"Member must have length {relation} than or equal to 10")
    if not _BOT_ID.match(bot_id):
        raise _constraint("botId", bot_id, "Member must satisfy regular expression pattern: ^[0-9a-zA-Z]+$")
    if not 2 <= len(session_id) <= 100:
        raise _constraint("sessionId", session_id, "Member must have length between 2 and 100")
    if not _SESSION_ID.fullmatch(session_id):
        raise _constraint("sessionId", session_id, "Member must satisfy regular expression pattern: [0-9a-zA-Z._:-]+")
    if not locale_id:
        raise _constraint("localeId", locale_id, "Member must have length greater than or equal to 1")
    if not isinstance(body, dict):
        raise validation_error("The request body must be a JSON object.")
    text = body.get("text")
    if not isinstance(text, str):
        raise _constraint("text", text, "Member must not be null")
    if not 1 <= len(text) <= _MAX_TEXT:
        # The model marks the text sensitive: the refusal does not repeat it.
        raise validation_error(
            f"1 validation error detected: Value at 'text' failed to satisfy constraint: Member must have length "
            f"between 1 and {_MAX_TEXT}"
        )
    return RecognizeTextRequest(
        bot_id=bot_id,
        bot_alias_id=bot_alias_id,
        locale_id=locale_id,
        session_id=session_id,
        text=text,
        session_state=_session_state(body.get("sessionState")),
        request_attributes=_string_map(body.get("requestAttributes"), "requestAttributes"),
    )


def _string_map(raw: Any, path: str) -> dict[str, str] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(isinstance(k, str) and k and isinstance(v, str) for k, v in raw.items()):
        raise _constraint(path, raw, "Member must be a map of non-empty names to strings")
    return dict(raw)


def _session_state(raw: Any) -> RequestedState | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _constraint("sessionState", raw, "Member must be a SessionState object")
    dialog_action, slot_to_elicit = None, None
    action = raw.get("dialogAction")
    if action is not None:
        if not isinstance(action, dict) or action.get("type") not in DIALOG_ACTION_TYPES:
            shown = action.get("type") if isinstance(action, dict) else action
            raise _constraint(
                "sessionState.dialogAction.type",
                shown,
                f"Member must satisfy enum value set: [{', '.join(DIALOG_ACTION_TYPES)}]",
            )
        dialog_action = action["type"]
        slot_to_elicit = action.get("slotToElicit")
        if slot_to_elicit is not None and (not isinstance(slot_to_elicit, str) or not slot_to_elicit):
            raise _constraint(
                "sessionState.dialogAction.slotToElicit",
                slot_to_elicit,
                "Member must have length greater than or equal to 1",
            )
        if dialog_action == "ElicitSlot" and slot_to_elicit is None:
            raise validation_error("slotToElicit must be set when the dialog action is ElicitSlot.")
    return RequestedState(
        dialog_action=dialog_action,
        slot_to_elicit=slot_to_elicit,
        intent=_intent(raw.get("intent")),
        session_attributes=_string_map(raw.get("sessionAttributes"), "sessionState.sessionAttributes"),
    )


def _intent(raw: Any) -> RequestedIntent | None:
    if raw is None:
        return None
    path = "sessionState.intent"
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not raw["name"]:
        raise _constraint(f"{path}.name", None, "Member must not be null")
    state, confirmation = raw.get("state"), raw.get("confirmationState")
    if state is not None and state not in _INTENT_STATES:
        raise _constraint(f"{path}.state", state, f"Member must satisfy enum value set: [{', '.join(_INTENT_STATES)}]")
    if confirmation is not None and confirmation not in _CONFIRMATION_STATES:
        raise _constraint(
            f"{path}.confirmationState",
            confirmation,
            f"Member must satisfy enum value set: [{', '.join(_CONFIRMATION_STATES)}]",
        )
    slots = raw.get("slots") or {}
    if not isinstance(slots, dict):
        raise _constraint(f"{path}.slots", slots, "Member must be a map of slot names to slots")
    return RequestedIntent(
        raw["name"],
        {name: _slot_value(value, f"{path}.slots.{name}") for name, value in slots.items()},
        state,
        confirmation,
    )


def _slot_value(raw: Any, path: str) -> SlotValue | None:
    if raw is None:
        return None
    value = raw.get("value") if isinstance(raw, dict) else None
    if not isinstance(value, dict) or not isinstance(value.get("interpretedValue"), str):
        raise _constraint(f"{path}.value.interpretedValue", None, "Member must not be null")
    interpreted = value["interpretedValue"]
    original = value.get("originalValue")
    return SlotValue(original if isinstance(original, str) else interpreted, interpreted)
