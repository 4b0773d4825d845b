"""Redaction of what callers say, wherever their words come to rest (``RedactTranscripts``).

Three redactors share one face, :class:`Redactor`: ``off`` (:class:`NoRedaction`), ``builtin``
(:class:`~.builtin.BuiltinRedactor`, the default: card data, SSNs, e-mail addresses and phone numbers, written or
spoken) and ``comprehend`` (:class:`~.comprehend.ComprehendRedactor`: Amazon Comprehend's DetectPiiEntities)::

    >>> from voicebridge.redaction import BuiltinRedactor
    >>> BuiltinRedactor().redact("it's four one one one one one one one one one one one one one one one").text
    "it's [CARD]"

Where it applies, and where not (docs/redaction.md): the live text a flow branches on and a responder reads is the
caller's words as heard; everything kept beyond the live turn — the turn table's items once read, the call record,
logs and the demo's outputs — is redacted.
"""

from __future__ import annotations

from typing import Protocol

from voicebridge.redaction.builtin import KINDS, BuiltinRedactor, Entity, Redaction, luhn_valid

__all__ = ["KINDS", "BuiltinRedactor", "Entity", "NoRedaction", "Redaction", "Redactor", "luhn_valid"]


class Redactor(Protocol):
    """Replaces what must not be kept with its type; ``before``/``after`` are the words said around ``text``."""

    name: str

    def redact(self, text: str, *, before: str = "", after: str = "") -> Redaction: ...


class NoRedaction:
    """``RedactTranscripts=off``: text is kept as heard."""

    name = "off"

    def redact(self, text: str, *, before: str = "", after: str = "") -> Redaction:
        return Redaction(text)
