"""Sessions and the dialog: what one RecognizeText turn does to a session, and what it answers.

A session is keyed by bot, alias, locale and ``sessionId``; it keeps the session attributes and, while an intent is
open, its slots, the dialog step (eliciting a slot, confirming the intent) and the retries spent. It is forgotten
after the bot's ``idleSessionTTLInSeconds`` without a turn, as Lex forgets it.

A turn, after the request's ``sessionState`` is applied (its ``sessionAttributes`` replace the session's; its
``intent`` and ``dialogAction`` set the dialog, as a client steering the bot does):

- eliciting a slot: what was said fills it (then the next slot, the confirmation, or the close); another intent said
  with confidence switches to it; otherwise the slot is asked again, and after its retries FallbackIntent answers;
- confirming: a yes closes the intent (``confirmationState`` Confirmed), a no declines it (``Denied``, state Failed,
  ``Close``), anything else asks again;
- ``Delegate`` (from the request): slots are filled from what was said, then the bot takes the next step;
- otherwise the intent is recognised (:meth:`~.bot.Locale.recognise`), its slots filled from the utterance where a
  sample utterance names them, and the dialog goes on; FallbackIntent answers when no intent is recognised.

The answer is ``RecognizeTextResponse`` of botocore's ``lexv2-runtime`` model: ``messages [{content, contentType}]``,
``sessionState {dialogAction {type, slotToElicit?}, intent {name, slots, state, confirmationState},
sessionAttributes, originatingRequestId}``, ``interpretations`` (the intent chosen first, with its
``nluConfidence``, then the other candidates, FallbackIntent without a score), ``requestAttributes`` (as sent) and
``sessionId``. An empty slot is ``null``, a filled one ``{"value": {originalValue, interpretedValue,
resolvedValues}}``.
"""

from __future__ import annotations

import copy
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Final

from voicebridge_dev.local.lex.bot import FALLBACK_INTENT, SLOT_REFERENCE, Intent, Locale, SlotValue, yes_or_no
from voicebridge_dev.local.lex.requests import RecognizeTextRequest, RequestedState
from voicebridge_dev.local.service import unknown_names, validation_error

SessionKey = tuple[str, str, str, str]
"""Bot id, alias id, locale id and session id."""

_ATTRIBUTE: Final = re.compile(r"\(\((\w+)\)\)")
_INTERPRETATIONS: Final = 5


@dataclass
class Session:
    """One conversation with the bot."""

    key: SessionKey
    last_used: float
    attributes: dict[str, str] = field(default_factory=dict)
    intent: str | None = None
    slots: dict[str, SlotValue | None] = field(default_factory=dict)
    step: str | None = None
    """While an intent is open: ``ElicitSlot``, ``ConfirmIntent`` or ``Delegate``."""
    slot_to_elicit: str | None = None
    confirmation: str = "None"
    retries: int = 0
    turns: int = 0

    def to_json(self) -> dict[str, Any]:
        bot_id, alias_id, locale_id, session_id = self.key
        return {
            "botId": bot_id,
            "botAliasId": alias_id,
            "localeId": locale_id,
            "sessionId": session_id,
            "sessionAttributes": dict(self.attributes),
            "intent": self.intent,
            "slots": {name: value.to_json() if value else None for name, value in self.slots.items()},
            "step": self.step,
            "slotToElicit": self.slot_to_elicit,
            "turns": self.turns,
        }

    def close(self) -> None:
        self.intent, self.slots, self.step, self.slot_to_elicit = None, {}, None, None
        self.confirmation, self.retries = "None", 0


class Sessions:
    """The sessions alive, each forgotten after ``ttl_s`` idle.

    A turn works on a copy (:meth:`get`) and stores it once answered (:meth:`put`), so a turn refused half-way, or
    struck by a fault, leaves the session as it was.
    """

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._sessions: dict[SessionKey, Session] = {}

    def get(self, key: SessionKey) -> Session:
        """A copy of the session of ``key``; a new session when it has none or it expired."""
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(key)
            if session is None or now - session.last_used > self.ttl_s:
                return Session(key, now)
            return copy.deepcopy(session)

    def put(self, session: Session) -> None:
        """Keep ``session`` as a turn leaves it."""
        session.last_used = time.monotonic()
        with self._lock:
            self._sessions[session.key] = session

    def snapshot(self) -> list[dict[str, Any]]:
        now = time.monotonic()
        with self._lock:
            return [s.to_json() for s in self._sessions.values() if now - s.last_used <= self.ttl_s]

    def clear(self) -> int:
        with self._lock:
            count = len(self._sessions)
            self._sessions.clear()
            return count


@dataclass
class _Turn:
    messages: list[str]
    dialog_action: dict[str, str]
    intent: dict[str, Any]
    interpretations: list[dict[str, Any]]


class Dialog:
    """One RecognizeText turn of ``session`` with ``locale``'s intents."""

    def __init__(self, locale: Locale, session: Session) -> None:
        self.locale = locale
        self.session = session

    def answer(self, request: RecognizeTextRequest, request_id: str) -> dict[str, Any]:
        """The RecognizeTextResponse to ``request``; the session is left as the turn leaves it."""
        if request.session_state is not None:
            self._steer(request.session_state)
        self.session.turns += 1
        turn = self._turn(request.text)
        answer: dict[str, Any] = {
            "messages": [_message(text) for text in turn.messages],
            "sessionState": {
                "dialogAction": turn.dialog_action,
                "intent": turn.intent,
                "sessionAttributes": dict(self.session.attributes),
                "originatingRequestId": request_id,
            },
            "interpretations": turn.interpretations,
            "sessionId": request.session_id,
        }
        if request.request_attributes is not None:
            answer["requestAttributes"] = dict(request.request_attributes)
        return answer

    # -- the request's sessionState

    def _steer(self, requested: RequestedState) -> None:
        session = self.session
        if requested.session_attributes is not None:
            session.attributes = dict(requested.session_attributes)
        if requested.intent is not None:
            intent = self._known_intent(requested.intent.name)
            if unknown := unknown_names(requested.intent.slots, (slot.name for slot in intent.slots)):
                raise validation_error(f"The intent {intent.name} has no slot {unknown}.")
            session.close()
            session.intent = intent.name
            session.slots = {slot.name: requested.intent.slots.get(slot.name) for slot in intent.slots}
            session.confirmation = requested.intent.confirmation_state or "None"
            session.step = "Delegate"
        action = requested.dialog_action
        if action in ("Close", "ElicitIntent", "None"):
            session.close()
        elif action is not None:
            if session.intent is None:
                raise validation_error(f"The dialog action {action} needs an intent in the session state.")
            session.step = action
            if action == "ElicitSlot":
                intent = self._known_intent(session.intent)
                if intent.slot(str(requested.slot_to_elicit)) is None:
                    raise validation_error(f"The intent {intent.name} has no slot {requested.slot_to_elicit}.")
                session.slot_to_elicit = requested.slot_to_elicit

    def _known_intent(self, name: str) -> Intent:
        intent = self.locale.intent(name)
        if intent is None:
            raise validation_error(f"The intent {name} is not defined for the locale {self.locale.locale_id}.")
        return intent

    # -- the turn

    def _turn(self, said: str) -> _Turn:
        session = self.session
        intent = self.locale.intent(session.intent) if session.intent else None
        if intent is None or intent.name == FALLBACK_INTENT:
            recognised = self.locale.recognise(said)
            return self._fallback(said) if recognised is None else self._start(*recognised, said)
        if session.step == "ElicitSlot":
            return self._slot_answer(intent, said)
        if session.step == "ConfirmIntent":
            return self._confirmation_answer(intent, said)
        self._fill(intent, said, every_slot=True)
        return self._proceed(intent, said, 1.0)

    def _start(self, intent: Intent, score: float, said: str) -> _Turn:
        self.session.close()
        self.session.intent = intent.name
        self.session.slots = {slot.name: None for slot in intent.slots}
        self._fill(intent, said, every_slot=False)
        return self._proceed(intent, said, score)

    def _fill(self, intent: Intent, said: str, *, every_slot: bool) -> None:
        """Fill the empty slots ``said`` gives a value for: those a sample utterance names, or all of them."""
        named = intent.slots_in_utterances
        for slot in intent.slots:
            if self.session.slots.get(slot.name) is None and (every_slot or slot.name in named):
                self.session.slots[slot.name] = self.locale.resolve(slot, said, elicited=False)

    def _proceed(self, intent: Intent, said: str, score: float) -> _Turn:
        """The intent's next step: elicit the first empty required slot, confirm, or close."""
        session = self.session
        missing = next((s for s in intent.slots if s.required and session.slots.get(s.name) is None), None)
        if missing is not None:
            session.step, session.slot_to_elicit = "ElicitSlot", missing.name
            action = {"type": "ElicitSlot", "slotToElicit": missing.name}
            return self._open(intent, self._render(missing.prompt), action, said, score)
        if intent.confirmation_prompt is not None and session.confirmation == "None":
            session.step, session.slot_to_elicit = "ConfirmIntent", None
            return self._open(intent, self._render(intent.confirmation_prompt), {"type": "ConfirmIntent"}, said, score)
        return self._close(intent, self._render(intent.closing_response), intent.state, said, score)

    def _slot_answer(self, intent: Intent, said: str) -> _Turn:
        session = self.session
        slot = intent.slot(str(session.slot_to_elicit))
        assert slot is not None, "a session elicits only a slot of its intent"
        value = self.locale.resolve(slot, said, elicited=True)
        if value is not None:
            session.slots[slot.name], session.retries = value, 0
            return self._proceed(intent, said, 1.0)
        return self._not_answered(intent, said, slot.max_retries)

    def _confirmation_answer(self, intent: Intent, said: str) -> _Turn:
        answer = yes_or_no(said)
        if answer is True:
            self.session.confirmation = "Confirmed"
            return self._close(intent, self._render(intent.closing_response), intent.state, said, 1.0)
        if answer is False:
            self.session.confirmation = "Denied"
            return self._close(intent, self._render(intent.declination_response), "Failed", said, 1.0, declined=True)
        return self._not_answered(intent, said, 2)

    def _not_answered(self, intent: Intent, said: str, max_retries: int) -> _Turn:
        """What was said neither answers the question nor names another intent: ask again, or give up."""
        switched = self.locale.recognise(said)
        if switched is not None and switched[0].name != intent.name:
            return self._start(*switched, said)
        self.session.retries += 1
        if self.session.retries > max_retries:
            return self._fallback(said)
        return self._proceed(intent, said, 1.0)

    def _open(self, intent: Intent, message: str, action: dict[str, str], said: str, score: float) -> _Turn:
        chosen = self._intent_json(intent, "InProgress")
        return _Turn([message], action, chosen, self._interpretations(chosen, said, score))

    def _close(
        self, intent: Intent, message: str, state: str, said: str, score: float, *, declined: bool = False
    ) -> _Turn:
        session = self.session
        if not declined:
            session.attributes.update({name: self._render(value) for name, value in intent.session_attributes.items()})
        chosen = self._intent_json(intent, state)
        turn = _Turn(
            [message] if message else [],
            {"type": intent.dialog_action if not declined else "Close"},
            chosen,
            self._interpretations(chosen, said, score),
        )
        session.close()
        return turn

    def _fallback(self, said: str) -> _Turn:
        fallback = self.locale.fallback
        self.session.close()
        chosen = self._intent_json(fallback, fallback.state)
        message = self._render(fallback.closing_response)
        action = {"type": fallback.dialog_action}
        return _Turn([message] if message else [], action, chosen, self._interpretations(chosen, said, None))

    # -- the answer's parts

    def _intent_json(self, intent: Intent, state: str) -> dict[str, Any]:
        slots = {slot.name: self.session.slots.get(slot.name) for slot in intent.slots}
        return {
            "name": intent.name,
            "slots": {name: value.to_json() if value else None for name, value in slots.items()},
            "state": state,
            "confirmationState": self.session.confirmation,
        }

    def _interpretations(self, chosen: dict[str, Any], said: str, score: float | None) -> list[dict[str, Any]]:
        """The chosen intent first, then the other candidates best first, FallbackIntent last (unless chosen)."""
        first: dict[str, Any] = {"intent": chosen, "interpretationSource": "Lex"}
        if score is not None:
            first["nluConfidence"] = {"score": score}
        others = [
            {
                "intent": {"name": intent.name, "slots": {slot.name: None for slot in intent.slots}},
                "nluConfidence": {"score": confidence},
                "interpretationSource": "Lex",
            }
            for intent, confidence in self.locale.ranked(said)
            if intent.name != chosen["name"]
        ]
        if chosen["name"] == FALLBACK_INTENT:
            return [first, *others][:_INTERPRETATIONS]
        fallback = {"intent": {"name": FALLBACK_INTENT, "slots": {}}, "interpretationSource": "Lex"}
        return [first, *others[: _INTERPRETATIONS - 2], fallback]

    def _render(self, template: str) -> str:
        """A message with ``{Slot}`` and ``((attribute))`` filled in."""
        slots = self.session.slots

        def slot_value(match: re.Match[str]) -> str:
            value = slots.get(match.group(1))
            return value.interpreted if value else ""

        with_slots = SLOT_REFERENCE.sub(slot_value, template)
        return _ATTRIBUTE.sub(lambda m: self.session.attributes.get(m.group(1), ""), with_slots)


def _message(text: str) -> dict[str, str]:
    return {"content": text, "contentType": "SSML" if text.lstrip().startswith("<speak>") else "PlainText"}
