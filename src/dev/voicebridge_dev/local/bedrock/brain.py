"""The emulated model's scripted brain: rules that map what the caller said to a reply and, optionally, a tool call.

A brain is a JSON document (``BedrockEmulator(brain=…)``, or ``POST /_emulator/brain`` with the document)::

    {"rules": [
        {"match": ["goodbye", "that's all"], "reply": "Thank you for calling. Goodbye.",
         "tool": {"name": "end_call", "input": {"reason": "the caller said goodbye"}}},
        {"match": ["yes", "go ahead"], "after": ["pay it"], "reply": "Done, it is paid."},
        {"match": "(?i)\\\\bbalance\\\\b", "reply": "Your balance is two hundred dollars."}],
     "fallback": {"reply": "Sorry, could you say that another way?"},
     "after_tool_result": {"reply": "Is there anything else I can help you with?"}}

- ``match`` is a regular expression, or a list of words and phrases any of which matches (case-insensitive, whole
  words, any run of spaces between a phrase's words). It is tried on the text of the conversation's last user message.
- ``after`` (optional, the same form) must match the assistant message just before it, so a rule can answer a
  "yes" to its own question.
- ``tool`` (optional) follows the reply with a ``toolUse`` block — only when the request's ``toolConfig`` declares a
  tool of that name, as a model can call no other; otherwise the reply is the text alone.
- ``languages`` (optional) holds a brain per language, by its primary code (``{"es": {"rules": …}}``): a request
  whose prompt names the caller's language (``ConverseRequest.language``) is answered by that language's brain.
- The first rule that applies answers; ``fallback`` answers when none does, and ``after_tool_result`` when the last
  user message carries tool results and no text. Both are rules without ``match``, and may carry a ``tool``.

:data:`BANK_AGENT` is the default brain: a small bank's agent (a balance, paying a bill, how to dispute a card charge
in five sentences, a person on request through ``transfer_to_agent``, goodbye through ``end_call``, a payment by
card through ``collect_card_by_keypad``), with the same agent in Spanish (:data:`BANK_AGENT_ES`) for a prompt that
asks for Spanish.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Self

from voicebridge_dev.local.bedrock.errors import BrainError
from voicebridge_dev.local.service import Definition, unknown_names

_TOOL_NAME: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_RULE_FIELDS: Final = frozenset({"match", "after", "reply", "tool"})
_BRAIN_FIELDS: Final = frozenset({"rules", "fallback", "after_tool_result", "languages"})
_LANGUAGE: Final = re.compile(r"[a-z]{2,3}")
# Speech-to-text and keyboards write apostrophes either way; the rules are written with the straight one.
_APOSTROPHES: Final = str.maketrans({"\u2019": "'", "\u2018": "'"})


@dataclass(frozen=True)
class ToolCall:
    """A tool the rule asks the caller's side to run: its name and its input (a JSON object)."""

    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Rule:
    """One pattern and what it answers."""

    reply: str
    match: re.Pattern[str] | None = None
    after: re.Pattern[str] | None = None
    tool: ToolCall | None = None

    def applies(self, said: str, previous: str | None) -> bool:
        """Whether the rule answers ``said``, the assistant having said ``previous`` just before (None: nothing)."""
        if self.match is None or not self.match.search(said.translate(_APOSTROPHES)):
            return False
        return self.after is None or (previous is not None and bool(self.after.search(previous)))


@dataclass(frozen=True)
class Brain(Definition):
    """The rules of a brain file, in order, with its fallbacks; ``document`` is the file itself."""

    rules: tuple[Rule, ...]
    fallback: Rule
    after_tool_result: Rule
    languages: Mapping[str, Brain] = field(default_factory=dict)
    """The brain answering a prompt that asks for another language (``es``), by its primary language."""

    @classmethod
    def from_json(cls, document: Any) -> Self:
        """The brain a document describes; :class:`BrainError` saying what is wrong with it."""
        if not isinstance(document, dict):
            raise BrainError("a brain is a JSON object with a 'rules' list")
        if unknown := unknown_names(document, _BRAIN_FIELDS):
            raise BrainError(f"unknown brain fields: {unknown}")
        rules = document.get("rules", [])
        if not isinstance(rules, list):
            raise BrainError("'rules' is a list of rules")
        languages = document.get("languages", {})
        if not isinstance(languages, dict) or not all(_LANGUAGE.fullmatch(str(code)) for code in languages):
            raise BrainError("'languages' is an object of brains by language code ('es')")
        return cls(
            rules=tuple(_rule(raw, f"rules[{index}]", matched=True) for index, raw in enumerate(rules)),
            fallback=_rule(document.get("fallback", _FALLBACK), "fallback", matched=False),
            after_tool_result=_rule(document.get("after_tool_result", _AFTER_TOOL_RESULT), "after_tool_result"),
            languages={code: cls.from_json(brain) for code, brain in languages.items()},
            document=copy.deepcopy(document),
        )

    def speaking(self, language: str | None) -> Brain:
        """The brain that answers in ``language`` (a primary language code; None: the prompt asked for none): its
        own brain when the document has one, else this one, as a model that knows no better answers in English."""
        return self.languages.get(language or "", self)

    def answer(self, said: str | None, previous: str | None) -> Rule:
        """The rule answering the last user message's text (None: it carried only tool results), after ``previous``,
        the text of the assistant message before it."""
        if said is None:
            return self.after_tool_result
        return next((rule for rule in self.rules if rule.applies(said, previous)), self.fallback)


def _rule(raw: Any, where: str, *, matched: bool = False) -> Rule:
    if not isinstance(raw, dict):
        raise BrainError(f"{where} is an object")
    if unknown := unknown_names(raw, _RULE_FIELDS if matched else {"reply", "tool"}):
        raise BrainError(f"{where}: unknown fields {unknown}")
    reply = raw.get("reply", "")
    if not isinstance(reply, str):
        raise BrainError(f"{where}.reply is text")
    tool = _tool(raw["tool"], f"{where}.tool") if "tool" in raw else None
    if not reply.strip() and tool is None:
        raise BrainError(f"{where} needs a reply, a tool, or both")
    if matched and "match" not in raw:
        raise BrainError(f"{where} needs a 'match'")
    return Rule(
        reply=reply,
        match=_pattern(raw["match"], f"{where}.match") if matched else None,
        after=_pattern(raw["after"], f"{where}.after") if "after" in raw else None,
        tool=tool,
    )


def _pattern(raw: Any, where: str) -> re.Pattern[str]:
    if isinstance(raw, str):
        try:
            return re.compile(raw)
        except re.error as exc:
            raise BrainError(f"{where}: not a regular expression ({exc})") from None
    if not isinstance(raw, list) or not raw or not all(isinstance(p, str) and p.strip() for p in raw):
        raise BrainError(f"{where} is a regular expression or a non-empty list of phrases")
    phrases = "|".join(r"\s+".join(map(re.escape, phrase.split())) for phrase in raw)
    return re.compile(rf"(?<!\w)(?:{phrases})(?!\w)", re.IGNORECASE)


def _tool(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, dict) or set(raw) - {"name", "input"}:
        raise BrainError(f"{where} is an object with a 'name' and an 'input'")
    name, tool_input = raw.get("name"), raw.get("input", {})
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise BrainError(f"{where}.name must be 1 to 64 of [a-zA-Z0-9_-], got {name!r}")
    if not isinstance(tool_input, dict):
        raise BrainError(f"{where}.input is a JSON object")
    return ToolCall(name, copy.deepcopy(tool_input))


_FALLBACK: Final = {"reply": "Sorry, I didn't catch that. Could you say it another way?"}
_AFTER_TOOL_RESULT: Final = {"reply": "Is there anything else I can help you with?"}
_ANYTHING_ELSE: Final = "Is there anything else I can help you with?"
_BILL_QUESTION: Final = "pay it"

# The tools the bank's agent calls, whichever language it speaks.
_GOODBYE_TOOL: Final = {"name": "end_call", "input": {"reason": "the caller said goodbye"}}
_PERSON_TOOL: Final = {"name": "transfer_to_agent", "input": {"reason": "the caller asked for a person"}}
_CARD_TOOL: Final = {"name": "collect_card_by_keypad", "input": {"reason": "the caller wants to pay by card"}}

_ANYTHING_ELSE_ES: Final = "¿Hay algo más en lo que pueda ayudarle?"
_BILL_QUESTION_ES: Final = "la pague"

BANK_AGENT_ES: Final[Mapping[str, Any]] = {
    "rules": [
        {
            "match": ["adiós", "adios", "hasta luego", "eso es todo", "nada más", "nada mas"],
            "reply": "Gracias por llamar. Que tenga un buen día, adiós.",
            "tool": _GOODBYE_TOOL,
        },
        {
            "match": ["persona", "humano", "agente", "representante", "operador", "compañero"],
            "reply": "Por supuesto. Le paso con uno de mis compañeros.",
            "tool": _PERSON_TOOL,
        },
        {
            "match": ["con tarjeta", "con mi tarjeta", "con la tarjeta", "tarjeta de crédito", "tarjeta de débito"],
            "reply": (
                "Tomaré el número de su tarjeta por el teclado, para que nunca tenga que decirlo. Escríbalo ahora y "
                "pulse la tecla almohadilla."
            ),
            "tool": _CARD_TOOL,
        },
        {
            "match": ["disputa", "reclamar", "no reconozco", "no hice", "fraude", "cargo indebido"],
            "reply": (
                "Siento oír eso. Para reclamar un cargo, busque la operación en la aplicación o en la banca en línea "
                "y anote su fecha y su importe. Después elija la operación y pulse Reclamar, o dígamelo y la "
                "reclamo por usted. Puede que le demos un abono provisional mientras lo revisamos, lo que suele "
                "tardar hasta diez días hábiles. Si cree que alguien usó su tarjeta sin permiso, también la "
                "bloquearemos y le enviaremos una nueva."
            ),
        },
        {
            "match": ["sí", "si", "claro", "por supuesto", "adelante", "de acuerdo", "vale"],
            "after": [_BILL_QUESTION_ES],
            "reply": (
                "Hecho. He pagado su factura de la luz de ochenta y cuatro dólares con veinte desde su cuenta "
                f"corriente. {_ANYTHING_ELSE_ES}"
            ),
        },
        {
            "match": ["no", "ahora no"],
            "after": [_BILL_QUESTION_ES],
            "reply": f"De acuerdo, no la he pagado. {_ANYTHING_ELSE_ES}",
        },
        {
            "match": ["pagar", "factura", "facturas", "pago"],
            "reply": (
                "Su factura de la luz de ochenta y cuatro dólares con veinte vence el día quince. "
                f"¿Quiere que {_BILL_QUESTION_ES} desde su cuenta corriente?"
            ),
        },
        {
            "match": ["saldo", "cuánto dinero", "cuanto dinero", "cuánto tengo", "cuanto tengo"],
            "reply": (
                "El saldo de su cuenta corriente es de dos mil cuatrocientos doce dólares con cincuenta. "
                f"{_ANYTHING_ELSE_ES}"
            ),
        },
        {
            "match": ["hola", "buenos días", "buenas tardes", "buenas noches"],
            "reply": (
                "Hola, gracias por llamar. Puedo decirle su saldo, pagar una factura o responder preguntas sobre su "
                "tarjeta. ¿Qué puedo hacer por usted?"
            ),
        },
    ],
    "fallback": {
        "reply": (
            "Lo siento, puedo ayudarle con su saldo, el pago de una factura o preguntas sobre su tarjeta. "
            "¿Podría decirlo de otra manera?"
        )
    },
    "after_tool_result": {"reply": _ANYTHING_ELSE_ES},
}
"""The bank's agent in Spanish: what :data:`BANK_AGENT` answers a prompt that asks for Spanish."""

BANK_AGENT: Final[Mapping[str, Any]] = {
    "rules": [
        {
            "match": ["goodbye", "good bye", "bye", "that's all", "that is all", "nothing else"],
            "reply": "Thank you for calling. Have a good day, goodbye.",
            "tool": _GOODBYE_TOOL,
        },
        {
            "match": ["person", "human", "agent", "representative", "operator", "colleague"],
            "reply": "Of course. Let me connect you with one of my colleagues.",
            "tool": _PERSON_TOOL,
        },
        {
            # A card number is never said aloud: the flow takes it on the keypad, encrypted.
            "match": [
                "by card",
                "pay by card",
                "pay with my card",
                "pay with a card",
                "pay with card",
                "pay it by card",
                "by credit card",
                "by debit card",
                "card payment",
                "use my card",
            ],
            "reply": (
                "I'll take your card number on the keypad, so you never have to say it. Please type it now, then "
                "press the pound key."
            ),
            "tool": _CARD_TOOL,
        },
        {
            "match": [
                "dispute",
                "don't recognise",
                "don't recognize",
                "didn't make",
                "unauthorised",
                "unauthorized",
                "fraud",
                "chargeback",
                "wrong charge",
            ],
            "reply": (
                "I'm sorry to hear that. To dispute a card charge, first find the transaction in the app or online "
                "banking and note its date and amount. Then choose the transaction and select Dispute, or tell me "
                "and I can raise it for you. We may give you a temporary credit while we look into it, which "
                "usually takes up to ten business days. If you think someone used your card without your "
                "permission, we will also freeze it and send you a new one."
            ),
        },
        {
            "match": ["yes", "yeah", "yep", "sure", "please do", "go ahead", "okay"],
            "after": [_BILL_QUESTION],
            "reply": (
                "Done. I've paid your electricity bill of eighty-four dollars and twenty cents from your checking "
                f"account. {_ANYTHING_ELSE}"
            ),
        },
        {
            "match": ["no", "not now", "don't", "do not"],
            "after": [_BILL_QUESTION],
            "reply": f"No problem, I haven't paid it. {_ANYTHING_ELSE}",
        },
        {
            "match": ["pay", "bill", "bills", "payment"],
            "reply": (
                "Your electricity bill of eighty-four dollars and twenty cents is due on the fifteenth. "
                f"Would you like me to {_BILL_QUESTION} from your checking account?"
            ),
        },
        {
            "match": ["balance", "how much money", "how much do i have"],
            "reply": (
                "Your checking account balance is two thousand four hundred and twelve dollars and fifty cents. "
                f"{_ANYTHING_ELSE}"
            ),
        },
        {
            "match": ["hello", "hi", "hey", "good morning", "good afternoon", "good evening"],
            "reply": (
                "Hello, thanks for calling. I can tell you your balance, pay a bill, or answer questions about your "
                "card. What can I do for you?"
            ),
        },
    ],
    "fallback": {
        "reply": (
            "Sorry, I can help with your balance, paying a bill, or questions about your card. "
            "Could you say that another way?"
        )
    },
    "after_tool_result": {"reply": _ANYTHING_ELSE},
    "languages": {"es": BANK_AGENT_ES},
}
"""The default brain: a small bank's agent."""
