"""Redaction by Amazon Comprehend's ``DetectPiiEntities``, for the entity types a deployment chooses.

One request per piece of text (``Text``, ``LanguageCode``); the answer's ``Entities`` each have a ``Type``, a
``Score`` and character offsets (``BeginOffset``, ``EndOffset``, the end exclusive). docs/protocols.md "Amazon
Comprehend" gives the sources. Spoken numbers are sent written as digits (:func:`~.spoken.written_form`), so the
model sees "4111 1111…" where the caller said "four one one one…", and what it finds is mapped back to the words.

A failed request (throttled, the service unreachable, a language it does not take) never lets text through
unredacted: the built-in redactor does the piece instead, and ``RedactionFallbacks`` counts it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.redaction.builtin import CARD, CVV, EMAIL, EXPIRY, PHONE, SSN, BuiltinRedactor, Entity, Redaction
from voicebridge.redaction.builtin import redact_with as _redact_with
from voicebridge.redaction.spoken import written_form

if TYPE_CHECKING:
    from types_boto3_comprehend.client import ComprehendClient

LABELS = {
    "CREDIT_DEBIT_NUMBER": CARD,
    "CREDIT_DEBIT_CVV": CVV,
    "CREDIT_DEBIT_EXPIRY": EXPIRY,
    "SSN": SSN,
    "EMAIL": EMAIL,
    "PHONE": PHONE,
}
"""Comprehend's types that the built-in redactor also knows keep its labels; any other is labelled by its name."""
MAX_TEXT_BYTES = 100_000
"""DetectPiiEntities' ``Text``: "The maximum string size is 100 KB" (UTF-8)."""


class ComprehendRedactor:
    """Finds the chosen PII entity types with DetectPiiEntities; the built-in redactor when a request fails."""

    name = "comprehend"

    def __init__(
        self,
        client: ComprehendClient,
        *,
        language: str,
        entity_types: Collection[str],
        fallback: BuiltinRedactor | None = None,
        on_fallback: Callable[[str], None] | None = None,
    ) -> None:
        self._client = client
        self._language = language
        self._types = frozenset(entity_types)
        self._fallback = fallback or BuiltinRedactor()
        self._on_fallback = on_fallback

    def find(self, text: str) -> list[Entity]:
        if not text.strip():
            return []
        rewritten = written_form(text)
        if len(rewritten.text.encode("utf-8")) > MAX_TEXT_BYTES:
            return self._fall_back(text, "TextSizeLimitExceeded")
        try:
            answer = self._client.detect_pii_entities(Text=rewritten.text, LanguageCode=self._language)  # type: ignore[arg-type]
        except ClientError as exc:
            return self._fall_back(text, str(exc.response.get("Error", {}).get("Code", "ClientError")))
        except BotoCoreError as exc:
            return self._fall_back(text, type(exc).__name__)
        found = []
        for entity in answer.get("Entities", []):
            kind = str(entity.get("Type", ""))
            if "ALL" not in self._types and kind not in self._types:
                continue
            start, end = rewritten.original_span(int(entity["BeginOffset"]), int(entity["EndOffset"]))
            found.append(Entity(LABELS.get(kind, kind), start, end))
        return sorted(found, key=lambda e: e.start)

    def redact(self, text: str, *, before: str = "", after: str = "") -> Redaction:
        return _redact_with(self.find, text, before=before, after=after)

    def _fall_back(self, text: str, why: str) -> list[Entity]:
        if self._on_fallback is not None:
            self._on_fallback(why)
        return self._fallback.find(text)
