"""What the Comprehend emulator keeps of each call, and how it names itself.

A record keeps the text as it arrived, so a test can check what a client sends to be inspected (and that it sends
nothing more); the emulator's log lines give only its size and the entity types found. Records are served over
HTTP::

    GET  /_emulator/invocations   one record per call, oldest first (times on the time.perf_counter() clock)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from voicebridge_dev.local.service import AnswerRecord, AnswerState

LABEL: Final = "Comprehend emulator (rule-based PII detection, not Amazon Comprehend's model)"


@dataclass(frozen=True, kw_only=True)
class InvocationRecord(AnswerRecord):
    """One call: the ``operation`` its ``X-Amz-Target`` named, the ``text`` and ``language_code`` it sent (None when
    the body had none), what was answered (``answer``, None for an error); ``outcome`` is ``ok``, ``error``
    (``error_type`` saying which), ``throttled`` (beyond the quota), ``fault_<kind>`` or ``client_disconnected``."""

    operation: str
    text: str | None
    language_code: str | None

    @property
    def entity_types(self) -> list[str]:
        """The types the answer names, in its order: DetectPiiEntities' entities, ContainsPiiEntities' labels."""
        answer = self.answer or {}
        return [entity["Type"] for entity in answer.get("Entities", [])] + [
            label["Name"] for label in answer.get("Labels", [])
        ]


@dataclass(kw_only=True)
class Call(AnswerState):
    """Mutable bookkeeping of one call while it runs."""

    operation: str
    text: str | None = None
    language_code: str | None = None
