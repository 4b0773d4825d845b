"""What the Connect emulator keeps of each call, and how it names itself.

Records are served over HTTP::

    GET  /_emulator/invocations   one record per call, oldest first (times on the time.perf_counter() clock)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from voicebridge_dev.local.service import AnswerRecord, AnswerState

LABEL: Final = "Connect contact attributes emulator (UpdateContactAttributes, GetContactAttributes; not Amazon Connect)"


@dataclass(frozen=True, kw_only=True)
class InvocationRecord(AnswerRecord):
    """One call: its ``operation``, the instance and contact it named (None when the request did not say), what was
    answered (``answer``, None for an error); ``outcome`` is ``ok``, ``error`` (``error_type`` saying which),
    ``fault_<kind>`` or ``client_disconnected``."""

    operation: str
    instance_id: str | None
    contact_id: str | None


@dataclass(kw_only=True)
class Call(AnswerState):
    """Mutable bookkeeping of one call while it runs."""

    operation: str
    instance_id: str | None = None
    contact_id: str | None = None
