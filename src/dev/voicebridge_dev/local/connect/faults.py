"""The failures the Connect emulator injects into its operations, told as Amazon Connect tells them.

Each call the service would answer takes one count of the oldest fault (the kit's
:class:`~voicebridge_dev.local.service.RequestFault`); requests it refuses anyway (an invalid parameter, an unknown
instance or contact) take no count. ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``, or over HTTP
``POST /_emulator/faults {"kind": "stall", "seconds": 2.0}``.
"""

from __future__ import annotations

from voicebridge_dev.local.service import CUT, ApiError, FaultKinds, RequestFault


class FaultKind(FaultKinds):
    THROTTLE = "throttle", ApiError(429, "ThrottlingException", "Rate exceeded")
    """HTTP 429 ThrottlingException (boto3 retries it); nothing is written."""
    INTERNAL_ERROR = "internal_error", ApiError(500, "InternalServiceException", "An internal error occurred")
    """HTTP 500 InternalServiceException (boto3 retries it); nothing is written."""
    STALL = "stall"
    """The attributes written, the answer held back for ``seconds``, then given."""
    DROP = "drop", CUT
    """The connection cut with no answer; nothing is written."""


class Fault(RequestFault[FaultKind]):
    """A failure to inject into the next ``count`` calls the service answers; a stall or a drop is no
    :meth:`refusal`."""

    kinds = FaultKind
    injected_by = "the Connect emulator"
