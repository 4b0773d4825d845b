"""The failures the Lex emulator injects into RecognizeText, told as the Lex V2 runtime tells them.

Faults wait in the emulator's queue in the order they were injected; each RecognizeText call the runtime would
answer takes one count of the oldest. Requests it refuses anyway (a ValidationException, an unknown bot, alias or
locale) take no count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

    POST   /_emulator/faults   {"kind": "stall", "seconds": 2.0}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from voicebridge_dev.local.service import ApiError, CountedFault


class FaultKind(StrEnum):
    THROTTLE = "throttle"
    """HTTP 429 ThrottlingException (boto3 retries it)."""
    INTERNAL_ERROR = "internal_error"
    """HTTP 500 InternalServerException (boto3 retries it)."""
    DEPENDENCY_FAILED = "dependency_failed"
    """HTTP 424 DependencyFailedException, as when the bot's code hook fails."""
    STALL = "stall"
    """The answer held back for ``seconds``, then given."""
    DROP = "drop"
    """The connection cut with no answer."""


@dataclass(frozen=True)
class Fault(CountedFault):
    """A failure to inject into the next ``count`` RecognizeText calls the runtime answers; a stall or a drop is no
    :meth:`refusal`."""

    kinds = FaultKind
    refusals: ClassVar = {
        FaultKind.THROTTLE: ApiError(429, "ThrottlingException", "Rate exceeded"),
        FaultKind.INTERNAL_ERROR: ApiError(500, "InternalServerException", "An internal error occurred"),
        FaultKind.DEPENDENCY_FAILED: ApiError(424, "DependencyFailedException", "The bot's code hook failed"),
    }
    injected_by = "the Lex emulator"

    kind: FaultKind
    count: int = 1
    seconds: float = 1.0
    message: str | None = None
