"""The failures the Comprehend emulator injects into DetectPiiEntities and ContainsPiiEntities, told as Comprehend
tells them (botocore's ``comprehend`` model: shapes ``TooManyRequestsException`` 429, ``InternalServerException``
500).

Each call the service would answer takes one count of the oldest fault (the kit's
:class:`~voicebridge_dev.local.service.RequestFault`); requests it refuses anyway (a ValidationException, a text over
the size limit, a call beyond the quota) take no count. ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``, or over
HTTP ``POST /_emulator/faults {"kind": "stall", "seconds": 2.0}``.
"""

from __future__ import annotations

from voicebridge_dev.local.service import CUT, ApiError, FaultKinds, RequestFault


class FaultKind(FaultKinds):
    THROTTLE = (
        "throttle",
        ApiError(
            429, "TooManyRequestsException", "The number of requests exceeds the limit. Resubmit your request later."
        ),
    )
    """HTTP 429 TooManyRequestsException (boto3 retries it)."""
    INTERNAL_ERROR = "internal_error", ApiError(500, "InternalServerException", "An internal server error occurred.")
    """HTTP 500 InternalServerException (boto3 retries it)."""
    STALL = "stall"
    """The answer held back for ``seconds``, then given."""
    DROP = "drop", CUT
    """The connection cut with no answer."""


class Fault(RequestFault[FaultKind]):
    """A failure to inject into the next ``count`` calls the service answers; a stall or a drop is no
    :meth:`refusal`."""

    kinds = FaultKind
    injected_by = "the Comprehend emulator"
