"""The failures the Comprehend emulator injects into DetectPiiEntities and ContainsPiiEntities, told as Comprehend
tells them (botocore's ``comprehend`` model: shapes ``TooManyRequestsException`` 429, ``InternalServerException``
500).

Faults wait in the emulator's queue in the order they were injected; each call the service would answer takes one
count of the oldest. Requests it refuses anyway (a ValidationException, a text over the size limit, a call beyond the
quota) take no count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

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
    """HTTP 429 TooManyRequestsException (boto3 retries it)."""
    INTERNAL_ERROR = "internal_error"
    """HTTP 500 InternalServerException (boto3 retries it)."""
    STALL = "stall"
    """The answer held back for ``seconds``, then given."""
    DROP = "drop"
    """The connection cut with no answer."""


@dataclass(frozen=True)
class Fault(CountedFault):
    """A failure to inject into the next ``count`` calls the service answers; a stall or a drop is no
    :meth:`refusal`."""

    kinds = FaultKind
    refusals: ClassVar = {
        FaultKind.THROTTLE: ApiError(
            429, "TooManyRequestsException", "The number of requests exceeds the limit. Resubmit your request later."
        ),
        FaultKind.INTERNAL_ERROR: ApiError(500, "InternalServerException", "An internal server error occurred."),
    }
    injected_by = "the Comprehend emulator"

    kind: FaultKind
    count: int = 1
    seconds: float = 1.0
    message: str | None = None
