"""What the Lex emulator keeps of each RecognizeText call, and how it names itself.

Records are served over HTTP::

    GET  /_emulator/invocations   one record per call, oldest first (times on the time.perf_counter() clock)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from voicebridge_dev.local.service import AnswerRecord, AnswerState

LABEL: Final = "Lex V2 runtime emulator (a scripted bot, not Amazon Lex)"


@dataclass(frozen=True, kw_only=True)
class InvocationRecord(AnswerRecord):
    """One RecognizeText call: what was asked (``body`` as it arrived) and answered (``answer``, None for an
    error); ``outcome`` is ``ok``, ``error`` (``error_type`` saying which), ``fault_<kind>`` or
    ``client_disconnected``."""

    bot_id: str
    bot_alias_id: str
    locale_id: str
    session_id: str

    @property
    def intent(self) -> str | None:
        """The intent the answer names, if any."""
        state = (self.answer or {}).get("sessionState", {})
        return (state.get("intent") or {}).get("name")


@dataclass(kw_only=True)
class Turn(AnswerState):
    """Mutable bookkeeping of one call while it runs."""

    bot_id: str
    bot_alias_id: str
    locale_id: str
    session_id: str
