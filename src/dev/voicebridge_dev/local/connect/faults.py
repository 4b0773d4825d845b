"""The failures the Connect emulator injects into its operations, told as Amazon Connect tells them.

Faults wait in the emulator's queue in the order they were injected; each call the service would answer takes one
count of the oldest. Requests it refuses anyway (an invalid parameter, an unknown instance or contact) take no
count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

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
    """HTTP 429 ThrottlingException (boto3 retries it); nothing is written."""
    INTERNAL_ERROR = "internal_error"
    """HTTP 500 InternalServiceException (boto3 retries it); nothing is written."""
    STALL = "stall"
    """The attributes written, the answer held back for ``seconds``, then given."""
    DROP = "drop"
    """The connection cut with no answer; nothing is written."""


@dataclass(frozen=True)
class Fault(CountedFault):
    """A failure to inject into the next ``count`` calls the service answers; a stall or a drop is no
    :meth:`refusal`."""

    kinds = FaultKind
    refusals: ClassVar = {
        FaultKind.THROTTLE: ApiError(429, "ThrottlingException", "Rate exceeded"),
        FaultKind.INTERNAL_ERROR: ApiError(500, "InternalServiceException", "An internal error occurred"),
    }
    injected_by = "the Connect emulator"

    kind: FaultKind
    count: int = 1
    seconds: float = 1.0
    message: str | None = None
