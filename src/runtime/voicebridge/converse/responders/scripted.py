"""The ``scripted`` responder: a rules file of patterns and replies, for simple IVRs, tests and the demo.

A rules file is JSON (``RESPONDER_RULES``: an ``s3://bucket/key`` URI, or the JSON itself)::

    {"rules": [
        {"match": ["balance", "how much"], "reply": "Your balance is two hundred dollars.",
         "attributes": {"Intent": "Balance"}},
        {"match": "(?i)\\\\b(person|agent|human)\\\\b", "reply": "Let me connect you with a colleague.",
         "action": "Transfer"}],
     "fallback": {"reply": "Sorry, I can help with balances and bills."}}

``match`` is a regular expression, or a list of words and phrases any of which matches (case-insensitive, whole
words). The first rule that matches the caller's transcript answers; ``{transcript}`` in a reply is replaced by what
the caller said. ``action`` is ``Continue`` (the default), ``Transfer`` or ``Hangup``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicebridge.conversation import Action
from voicebridge.converse.responder import FixedReply, Reply, TurnRequest
from voicebridge.errors import ConfigurationError


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern and what it answers."""

    pattern: re.Pattern[str] | None
    reply: str
    action: Action = Action.CONTINUE
    attributes: Mapping[str, str] = field(default_factory=dict)

    def matches(self, transcript: str) -> bool:
        return self.pattern is None or self.pattern.search(transcript) is not None


class ScriptedResponder:
    """Answers from a rules file."""

    name = "scripted"
    speculative_safe = True

    def __init__(self, rules: list[Rule], fallback: Rule) -> None:
        self.rules = rules
        self.fallback = fallback

    @classmethod
    def from_json(cls, text: str) -> ScriptedResponder:
        """The responder a rules file describes; ConfigurationError saying what is wrong with it."""
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"the rules file is not JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(document, dict) or not isinstance(document.get("rules", []), list):
            raise ConfigurationError('the rules file must be an object with a "rules" list')
        rules = [_rule(raw, f"rules[{i}]") for i, raw in enumerate(document.get("rules", []))]
        fallback_raw = document.get("fallback", {"reply": "Sorry, I did not catch that. Could you say it again?"})
        if not isinstance(fallback_raw, dict):
            raise ConfigurationError("fallback must be an object")
        return cls(rules, _rule({**fallback_raw, "match": None}, "fallback"))

    def respond(self, request: TurnRequest, *, deadline: float) -> Reply:
        rule = next((r for r in self.rules if r.matches(request.transcript)), self.fallback)
        return FixedReply(rule.reply.replace("{transcript}", request.transcript), rule.action, dict(rule.attributes))


def _rule(raw: Any, where: str) -> Rule:
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{where} must be an object")
    reply = raw.get("reply", "")
    if not isinstance(reply, str):
        raise ConfigurationError(f"{where}.reply must be text")
    try:
        action = Action.parse(str(raw.get("action", "Continue")))
    except ValueError as exc:
        raise ConfigurationError(f"{where}.action: {exc}") from None
    attributes = raw.get("attributes", {})
    if not isinstance(attributes, dict) or not all(isinstance(v, str) for v in attributes.values()):
        raise ConfigurationError(f"{where}.attributes must map names to text")
    return Rule(_pattern(raw.get("match"), where), reply, action, {str(k): v for k, v in attributes.items()})


def _pattern(match: Any, where: str) -> re.Pattern[str] | None:
    if match is None:
        return None
    if isinstance(match, list) and match and all(isinstance(m, str) and m.strip() for m in match):
        words = "|".join(re.escape(m.strip()) for m in match)
        return re.compile(rf"(?i)\b(?:{words})\b")
    if isinstance(match, str) and match:
        try:
            return re.compile(match)
        except re.error as exc:
            raise ConfigurationError(f"{where}.match is not a valid regular expression ({exc})") from None
    raise ConfigurationError(f"{where}.match must be a regular expression or a list of words")
