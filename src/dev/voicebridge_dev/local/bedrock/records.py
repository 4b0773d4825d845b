"""What the Bedrock emulator keeps of each ConverseStream call: its bookkeeping while it runs, its record once done.

Records are served over HTTP::

    GET  /_emulator/invocations   one record per call, oldest first (times on the time.perf_counter() clock)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from voicebridge_dev.local.service import CallRecord, CallState

LABEL: Final = "Bedrock Runtime emulator (scripted, not a model)"


@dataclass(frozen=True, kw_only=True)
class InvocationRecord(CallRecord):
    """One ConverseStream call as the emulator saw it; times are ``time.perf_counter()`` seconds.

    ``body`` is the request's JSON as it arrived; ``first_token_at`` is when the first ``contentBlockDelta`` was
    written (None when none was); ``finished`` is taken just before the response's last bytes. ``outcome`` is
    ``ok``, ``error`` (an HTTP error answer, ``error_type`` saying which), ``fault_<kind>``, ``client_disconnected``
    or ``emulator_stopped``; a stall or a forced stop still streams to the end, so its outcome is ``ok`` and
    ``fault`` names it. ``text`` is the text streamed, ``tool`` the name of the tool called (if any),
    ``stop_reason`` the ``messageStop``'s.
    """

    model_id: str
    first_token_at: float | None
    text: str
    tool: str | None
    stop_reason: str | None
    deltas: int
    error_type: str | None
    error_message: str | None


@dataclass(kw_only=True)
class Invocation(CallState):
    """Mutable bookkeeping of one call while it runs."""

    model_id: str
    first_token_at: float | None = None
    text: str = ""
    tool: str | None = None
    stop_reason: str | None = None
    deltas: int = 0
    error_type: str | None = None
    error_message: str | None = None
