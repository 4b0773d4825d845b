"""A bot the Lex emulator serves: its intents, slots and slot types per locale, read from a small JSON file, and how
it recognises an intent and a slot value in what the user said.

A bot file (``LexEmulator(bot=…)``, or ``POST /_emulator/bot``) names things as Lex's model-building API does::

    {"botId": "LOCALBANK1", "botName": "LocalBankBot", "botAliasIds": ["TSTALIASID"],
     "idleSessionTTLInSeconds": 300,
     "locales": {"en_US": {
         "nluIntentConfidenceThreshold": 0.5,
         "slotTypes": [{"name": "AccountType", "values": {"checking": ["current"], "savings": []}}],
         "intents": [
             {"name": "PayBill", "sampleUtterances": ["pay my bill", "pay {Amount} dollars"],
              "slots": [{"name": "Amount", "slotType": "AMAZON.Number", "prompt": "How much would you like to pay?"}],
              "confirmationPrompt": "Pay {Amount} dollars?", "declinationResponse": "Okay, I won't.",
              "closingResponse": "Done, {Amount} dollars paid.", "sessionAttributes": {"LastPayment": "{Amount}"}},
             {"name": "FallbackIntent", "closingResponse": "Sorry?", "dialogAction": "ElicitIntent",
              "state": "Failed"}]}}}

- ``botId`` is ten letters or digits, as Lex's are; ``botAliasIds`` the aliases served (``TSTALIASID`` is the draft
  alias every Lex bot has); each key of ``locales`` a locale id.
- An intent's ``sampleUtterances`` are phrases it answers; ``{Slot}`` in one lets the slot be filled from the same
  utterance. ``slots`` are elicited in order with their ``prompt`` while ``required`` (the default) and empty, each
  re-prompted up to ``maxRetries`` (2) times before FallbackIntent answers. With a ``confirmationPrompt`` the intent is
  confirmed (yes or no) before it closes; a no answers ``declinationResponse`` and fails the intent.
- Once filled (and confirmed) the intent answers ``closingResponse``, sets ``sessionAttributes`` and ends with
  ``dialogAction`` (``Close``, the default, or ``ElicitIntent``) in ``state`` (``Fulfilled``, the default,
  ``ReadyForFulfillment`` or ``Failed``).
- ``FallbackIntent`` (every locale has one; a plain one is added when the file has none) answers what no intent
  matches with a confidence of at least ``nluIntentConfidenceThreshold`` (0.5).
- Messages may name a slot's value as ``{Slot}`` and a session attribute as ``((attribute))``; one starting with
  ``<speak>`` is SSML, the others plain text.
- Slot types: ``AMAZON.Number`` (digits, or numbers in words up to the millions), ``AMAZON.FreeFormInput`` (whatever
  was said, when elicited), or a custom type of the file's ``slotTypes``: each value with its synonyms, matched as
  whole words.

Recognition is an emulator's, not Lex's model: an intent's confidence is the share of a sample utterance's words
(bar a few common ones, and the slots) found in what was said, the best of its utterances.

:data:`BANK_BOT` is the default: a small bank's bot with CheckBalance, PayBill (an Amount elicited, then confirmed),
TransferToAgent, Goodbye and FallbackIntent.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Self

from voicebridge_dev.local.lex.errors import BotDefinitionError
from voicebridge_dev.local.service import Definition, finite_number, unknown_names

FALLBACK_INTENT: Final = "FallbackIntent"
BUILTIN_SLOT_TYPES: Final = ("AMAZON.Number", "AMAZON.FreeFormInput")
_BOT_ID: Final = re.compile(r"[0-9a-zA-Z]{10}")
_NAME: Final = re.compile(r"([0-9a-zA-Z][_-]?){1,100}")
SLOT_REFERENCE: Final = re.compile(r"\{(\w+)\}")
"""``{Slot}``: a slot named in a sample utterance or a message."""
_DIALOG_ACTIONS: Final = ("Close", "ElicitIntent")
_END_STATES: Final = ("Fulfilled", "ReadyForFulfillment", "Failed")


def _listed(words: str) -> tuple[str, ...]:
    """The words of a space-separated list, in order."""
    return tuple(words.split())


# Words that say little about what the user wants; an utterance's confidence counts the others. Words are compared
# with their apostrophes dropped ("what's" is "whats").
_COMMON_WORDS: Final = frozenset(
    _listed(
        "a an the i id im me my to of for on in at it is are am be can could would will you your please like want "
        "need do does what whats how some just"
    )
)
_YES: Final = frozenset(_listed("yes yeah yep yup sure ok okay correct right confirm affirmative"))
_YES_PHRASES: Final = ("go ahead", "please do", "do it", "sounds good", "that's right")
_NO: Final = frozenset(_listed("no nope nah don't dont not cancel stop negative"))


@dataclass(frozen=True)
class SlotValue:
    """A slot's value: what was said, and what it was resolved to."""

    original: str
    interpreted: str

    def to_json(self) -> dict[str, Any]:
        value = {
            "originalValue": self.original,
            "interpretedValue": self.interpreted,
            "resolvedValues": [self.interpreted],
        }
        return {"value": value}


@dataclass(frozen=True)
class SlotType:
    """A custom slot type: each resolved value with the phrases that say it (itself included)."""

    name: str
    values: Mapping[str, tuple[str, ...]]

    def resolve(self, text: str) -> SlotValue | None:
        """The value whose phrase comes first in ``text``, as whole words; None when none is said."""
        found = []
        for value, phrases in self.values.items():
            for phrase in phrases:
                match = re.search(rf"(?<!\w){_phrase(phrase)}(?!\w)", text, re.IGNORECASE)
                if match:
                    found.append((match.start(), SlotValue(match.group(), value)))
        return min(found, key=lambda item: item[0])[1] if found else None


@dataclass(frozen=True)
class Slot:
    name: str
    slot_type: str
    prompt: str
    required: bool = True
    max_retries: int = 2


@dataclass(frozen=True)
class Intent:
    name: str
    sample_utterances: tuple[str, ...] = ()
    slots: tuple[Slot, ...] = ()
    confirmation_prompt: str | None = None
    declination_response: str = "Okay."
    closing_response: str = ""
    dialog_action: str = "Close"
    state: str = "Fulfilled"
    session_attributes: Mapping[str, str] = field(default_factory=dict)

    def slot(self, name: str) -> Slot | None:
        return next((slot for slot in self.slots if slot.name == name), None)

    @property
    def slots_in_utterances(self) -> frozenset[str]:
        """The slots a sample utterance names, which the utterance that starts the intent may fill."""
        return frozenset(name for utterance in self.sample_utterances for name in SLOT_REFERENCE.findall(utterance))

    def confidence(self, said: str) -> float:
        """How well ``said`` matches the best of the sample utterances, from 0 to 1."""
        words = set(_words(said))
        best = 0.0
        for utterance in self.sample_utterances:
            spoken = _words(SLOT_REFERENCE.sub(" ", utterance))
            telling = [word for word in spoken if word not in _COMMON_WORDS] or spoken
            if telling:
                best = max(best, sum(word in words for word in telling) / len(telling))
        return round(best, 2)


@dataclass(frozen=True)
class Locale:
    locale_id: str
    intents: tuple[Intent, ...]
    slot_types: Mapping[str, SlotType]
    confidence_threshold: float = 0.5

    def intent(self, name: str) -> Intent | None:
        return next((intent for intent in self.intents if intent.name == name), None)

    @property
    def fallback(self) -> Intent:
        fallback = self.intent(FALLBACK_INTENT)
        assert fallback is not None, "every locale is given a FallbackIntent when it is read"
        return fallback

    def ranked(self, said: str) -> list[tuple[Intent, float]]:
        """The intents other than FallbackIntent that ``said`` matches at all, best first."""
        scored = [(intent, intent.confidence(said)) for intent in self.intents if intent.name != FALLBACK_INTENT]
        return sorted((item for item in scored if item[1] > 0), key=lambda item: -item[1])

    def recognise(self, said: str) -> tuple[Intent, float] | None:
        """The intent ``said`` asks for with enough confidence, and that confidence; None: FallbackIntent's turn."""
        ranked = self.ranked(said)
        return ranked[0] if ranked and ranked[0][1] >= self.confidence_threshold else None

    def resolve(self, slot: Slot, said: str, *, elicited: bool) -> SlotValue | None:
        """The value of ``slot`` in ``said``; ``elicited`` when the slot was just asked for."""
        if slot.slot_type == "AMAZON.Number":
            return parse_number(said)
        if slot.slot_type == "AMAZON.FreeFormInput":
            return SlotValue(said.strip(), said.strip()) if elicited and said.strip() else None
        return self.slot_types[slot.slot_type].resolve(said)


@dataclass(frozen=True)
class Bot(Definition):
    """A bot definition: where it is served, and its locales; ``document`` is the bot file itself."""

    bot_id: str
    bot_name: str
    alias_ids: tuple[str, ...]
    locales: Mapping[str, Locale]
    idle_session_ttl_s: float

    @classmethod
    def from_json(cls, document: Any) -> Self:
        """The bot a file describes; :class:`BotDefinitionError` saying what is wrong with it."""
        if not isinstance(document, dict):
            raise BotDefinitionError("a bot is a JSON object")
        _known(document, {"botId", "botName", "botAliasIds", "idleSessionTTLInSeconds", "locales"}, "the bot")
        bot_id = document.get("botId")
        if not isinstance(bot_id, str) or not _BOT_ID.fullmatch(bot_id):
            raise BotDefinitionError(f"botId must be ten letters or digits, got {bot_id!r}")
        aliases = document.get("botAliasIds", ["TSTALIASID"])
        if not isinstance(aliases, list) or not aliases or not all(isinstance(a, str) and a for a in aliases):
            raise BotDefinitionError("botAliasIds is a non-empty list of alias ids")
        ttl = document.get("idleSessionTTLInSeconds", 300)
        if not finite_number(ttl) or not 60 <= ttl <= 86400:
            raise BotDefinitionError(f"idleSessionTTLInSeconds must be 60 to 86400, got {ttl!r}")
        locales = document.get("locales")
        if not isinstance(locales, dict) or not locales:
            raise BotDefinitionError("locales maps at least one locale id to its intents")
        return cls(
            bot_id=bot_id,
            bot_name=str(document.get("botName", bot_id)),
            alias_ids=tuple(aliases),
            locales={locale_id: _locale(locale_id, raw) for locale_id, raw in locales.items()},
            idle_session_ttl_s=float(ttl),
            document=copy.deepcopy(document),
        )

    @property
    def alias_id(self) -> str:
        """The first alias: the one ``voicebridge local up`` exports as ``LEX_BOT_ALIAS_ID``."""
        return self.alias_ids[0]

    @property
    def locale_id(self) -> str:
        """The first locale: the one ``voicebridge local up`` exports as ``LEX_LOCALE_ID``."""
        return next(iter(self.locales))


def _known(raw: Mapping[str, Any], fields: set[str], where: str) -> None:
    if unknown := unknown_names(raw, fields):
        raise BotDefinitionError(f"{where}: unknown fields {unknown}")


def _text(raw: Mapping[str, Any], name: str, where: str, default: str | None = None) -> str:
    value = raw.get(name, default)
    if not isinstance(value, str):
        raise BotDefinitionError(f"{where}.{name} is text")
    return value


def _locale(locale_id: str, raw: Any) -> Locale:
    where = f"locales.{locale_id}"
    if not isinstance(raw, dict):
        raise BotDefinitionError(f"{where} is an object with 'intents'")
    _known(raw, {"intents", "slotTypes", "nluIntentConfidenceThreshold"}, where)
    slot_types = {slot_type.name: slot_type for slot_type in map(_slot_type, raw.get("slotTypes", []))}
    threshold = raw.get("nluIntentConfidenceThreshold", 0.5)
    if not finite_number(threshold) or not 0 <= threshold <= 1:
        raise BotDefinitionError(f"{where}.nluIntentConfidenceThreshold must be 0 to 1, got {threshold!r}")
    intents_raw = raw.get("intents")
    if not isinstance(intents_raw, list):
        raise BotDefinitionError(f"{where}.intents is a list of intents")
    intents = [_intent(item, f"{where}.intents[{index}]", slot_types) for index, item in enumerate(intents_raw)]
    names = [intent.name for intent in intents]
    if len(set(names)) != len(names):
        raise BotDefinitionError(f"{where}: intent names must be unique")
    if FALLBACK_INTENT not in names:
        intents.append(_PLAIN_FALLBACK)
    return Locale(locale_id, tuple(intents), slot_types, float(threshold))


def _slot_type(raw: Any) -> SlotType:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str) or not isinstance(raw.get("values"), dict):
        raise BotDefinitionError("a slot type is an object with a 'name' and 'values' (value: [synonyms])")
    values: dict[str, tuple[str, ...]] = {}
    for value, synonyms in raw["values"].items():
        if not isinstance(synonyms, list) or not all(isinstance(s, str) and s.strip() for s in synonyms):
            raise BotDefinitionError(f"slot type {raw['name']}: the synonyms of {value!r} are a list of phrases")
        values[value] = (value, *synonyms)
    return SlotType(raw["name"], values)


def _intent(raw: Any, where: str, slot_types: Mapping[str, SlotType]) -> Intent:
    if not isinstance(raw, dict):
        raise BotDefinitionError(f"{where} is an object")
    fields = {
        "name",
        "sampleUtterances",
        "slots",
        "confirmationPrompt",
        "declinationResponse",
        "closingResponse",
        "dialogAction",
        "state",
        "sessionAttributes",
    }
    _known(raw, fields, where)
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BotDefinitionError(f"{where}.name must be letters, digits, _ or -, got {name!r}")
    utterances = raw.get("sampleUtterances", [])
    if not isinstance(utterances, list) or not all(isinstance(u, str) and u.strip() for u in utterances):
        raise BotDefinitionError(f"{where}.sampleUtterances is a list of phrases")
    if not utterances and name != FALLBACK_INTENT:
        raise BotDefinitionError(f"{where}: an intent other than FallbackIntent needs sample utterances")
    slots = tuple(_slot(item, f"{where}.slots[{index}]", slot_types) for index, item in enumerate(raw.get("slots", [])))
    unknown = {n for u in utterances for n in SLOT_REFERENCE.findall(u)} - {slot.name for slot in slots}
    if unknown:
        raise BotDefinitionError(f"{where}: sample utterances name slots it has not: {', '.join(sorted(unknown))}")
    dialog_action, state = raw.get("dialogAction", "Close"), raw.get("state", "Fulfilled")
    if dialog_action not in _DIALOG_ACTIONS:
        raise BotDefinitionError(f"{where}.dialogAction is one of {', '.join(_DIALOG_ACTIONS)}")
    if state not in _END_STATES:
        raise BotDefinitionError(f"{where}.state is one of {', '.join(_END_STATES)}")
    attributes = raw.get("sessionAttributes", {})
    if not isinstance(attributes, dict) or not all(isinstance(v, str) for v in attributes.values()):
        raise BotDefinitionError(f"{where}.sessionAttributes maps names to text")
    confirmation = raw.get("confirmationPrompt")
    if confirmation is not None and not isinstance(confirmation, str):
        raise BotDefinitionError(f"{where}.confirmationPrompt is text")
    return Intent(
        name=name,
        sample_utterances=tuple(utterances),
        slots=slots,
        confirmation_prompt=confirmation,
        declination_response=_text(raw, "declinationResponse", where, "Okay."),
        closing_response=_text(raw, "closingResponse", where, ""),
        dialog_action=dialog_action,
        state=state,
        session_attributes=dict(attributes),
    )


def _slot(raw: Any, where: str, slot_types: Mapping[str, SlotType]) -> Slot:
    if not isinstance(raw, dict):
        raise BotDefinitionError(f"{where} is an object")
    _known(raw, {"name", "slotType", "prompt", "required", "maxRetries"}, where)
    name, slot_type = raw.get("name"), raw.get("slotType")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BotDefinitionError(f"{where}.name must be letters, digits, _ or -, got {name!r}")
    if slot_type not in BUILTIN_SLOT_TYPES and slot_type not in slot_types:
        known = ", ".join([*BUILTIN_SLOT_TYPES, *slot_types])
        raise BotDefinitionError(f"{where}.slotType {slot_type!r} is not one of {known}")
    required, retries = raw.get("required", True), raw.get("maxRetries", 2)
    if not isinstance(required, bool):
        raise BotDefinitionError(f"{where}.required is true or false")
    if isinstance(retries, bool) or not isinstance(retries, int) or not 0 <= retries <= 5:
        raise BotDefinitionError(f"{where}.maxRetries is 0 to 5")
    return Slot(name, str(slot_type), _text(raw, "prompt", where), required, retries)


def _words(text: str) -> list[str]:
    """Lower-case words, apostrophes dropped and a plural's s too, so "bills" says "bill" and "what's" "whats"."""
    words = re.findall(r"[a-z0-9]+", text.lower().replace("'", "").replace("\u2019", ""))
    return [word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word for word in words]


def _phrase(phrase: str) -> str:
    return r"\s+".join(map(re.escape, phrase.split()))


def yes_or_no(said: str) -> bool | None:
    """True for a yes, False for a no (a no wins when both are said), None for neither."""
    lowered = said.lower().replace("\u2019", "'")
    words = set(re.findall(r"[a-z']+", lowered))
    if words & _NO:
        return False
    if words & _YES or any(re.search(rf"(?<!\w){_phrase(p)}(?!\w)", lowered) for p in _YES_PHRASES):
        return True
    return None


_UNITS: Final = {
    word: value
    for value, word in enumerate(
        _listed(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
            "seventeen eighteen nineteen"
        )
    )
}
_TENS: Final = {
    word: 10 * (index + 2)
    for index, word in enumerate(_listed("twenty thirty forty fifty sixty seventy eighty ninety"))
}
_SCALES: Final = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_DIGITS: Final = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_NUMBER_WORD: Final = re.compile(r"[a-z]+")


def parse_number(said: str) -> SlotValue | None:
    """The first number in ``said``, in digits (``1,250.50``) or in words (``two hundred and fifty``)."""
    digits = _DIGITS.search(said)
    words = _number_in_words(said)
    if digits is not None and (words is None or digits.start() <= words[0]):
        value = digits.group().replace(",", "")
        interpreted = value.rstrip("0").rstrip(".") if "." in value else str(int(value))
        return SlotValue(digits.group(), interpreted)
    if words is not None:
        return SlotValue(said[words[0] : words[1]], str(words[2]))
    return None


def _number_in_words(said: str) -> tuple[int, int, int] | None:
    """The first run of number words: where it starts and ends in ``said``, and its value."""
    tokens = [(m.start(), m.end(), m.group()) for m in _NUMBER_WORD.finditer(said.lower())]
    for first, (start, _, word) in enumerate(tokens):
        if word not in _UNITS and word not in _TENS and not (word == "a" and _scale_follows(tokens, first)):
            continue
        total = current = 0
        end = start
        for index in range(first, len(tokens)):
            _, token_end, token = tokens[index]
            if token in _UNITS:
                current += _UNITS[token]
            elif token in _TENS:
                current += _TENS[token]
            elif token in _SCALES:
                scale = _SCALES[token]
                if scale == 100:
                    current = max(current, 1) * 100
                else:
                    total, current = total + max(current, 1) * scale, 0
            elif token == "a" and _scale_follows(tokens, index):
                current += 1
            elif not (token == "and" and index + 1 < len(tokens) and _is_number_word(tokens[index + 1][2])):
                break
            if token != "and":
                end = token_end
        return start, end, total + current
    return None


def _scale_follows(tokens: Sequence[tuple[int, int, str]], index: int) -> bool:
    return index + 1 < len(tokens) and tokens[index + 1][2] in _SCALES


def _is_number_word(word: str) -> bool:
    return word in _UNITS or word in _TENS or word in _SCALES


_PLAIN_FALLBACK: Final = Intent(
    name=FALLBACK_INTENT,
    closing_response="Sorry, I didn't understand. What would you like to do?",
    dialog_action="ElicitIntent",
    state="Failed",
)

BANK_BOT: Final[Mapping[str, Any]] = {
    "botId": "LOCALBANK1",
    "botName": "LocalBankBot",
    "botAliasIds": ["TSTALIASID"],
    "idleSessionTTLInSeconds": 300,
    "locales": {
        "en_US": {
            "nluIntentConfidenceThreshold": 0.5,
            "intents": [
                {
                    "name": "CheckBalance",
                    "sampleUtterances": [
                        "what's my balance",
                        "check my balance",
                        "account balance",
                        "how much money do I have",
                    ],
                    "closingResponse": "Your checking account balance is two thousand four hundred and twelve "
                    "dollars and fifty cents.",
                },
                {
                    "name": "PayBill",
                    "sampleUtterances": [
                        "pay my bill",
                        "pay a bill",
                        "make a payment",
                        "pay {Amount} dollars",
                        "pay {Amount}",
                    ],
                    "slots": [
                        {"name": "Amount", "slotType": "AMAZON.Number", "prompt": "How much would you like to pay?"}
                    ],
                    "confirmationPrompt": "You'd like to pay {Amount} dollars from your checking account. Shall I go "
                    "ahead?",
                    "declinationResponse": "Okay, I haven't made the payment.",
                    "closingResponse": "Done. I've paid {Amount} dollars from your checking account.",
                    "sessionAttributes": {"LastPayment": "{Amount}"},
                },
                {
                    "name": "TransferToAgent",
                    "sampleUtterances": [
                        "talk to a person",
                        "speak to an agent",
                        "representative",
                        "a human",
                        "let me talk to someone",
                    ],
                    "closingResponse": "Let me connect you with one of my colleagues.",
                },
                {
                    "name": "Goodbye",
                    "sampleUtterances": ["goodbye", "bye", "that's all", "that's all thanks", "nothing else"],
                    "closingResponse": "Thank you for calling. Goodbye.",
                },
                {
                    "name": FALLBACK_INTENT,
                    "closingResponse": "Sorry, I can help you check your balance, pay a bill, or reach a person. "
                    "What would you like to do?",
                    "dialogAction": "ElicitIntent",
                    "state": "Failed",
                },
            ],
        }
    },
}
"""The default bot: a small bank's."""
