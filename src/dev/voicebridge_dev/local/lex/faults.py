"""The failures the Lex emulator injects into RecognizeText, told as the Lex V2 runtime tells them.

Each RecognizeText call the runtime would answer takes one count of the oldest fault (the kit's
:class:`~voicebridge_dev.local.service.RequestFault`); requests it refuses anyway (a ValidationException, an unknown
bot, alias or locale) take no count. ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``, or over HTTP
``POST /_emulator/faults {"kind": "stall", "seconds": 2.0}``.
"""

from __future__ import annotations

from voicebridge_dev.local.service import CUT, ApiError, FaultKinds, RequestFault


class FaultKind(FaultKinds):
    THROTTLE = "throttle", ApiError(429, "ThrottlingException", "Rate exceeded")
    """HTTP 429 ThrottlingException (boto3 retries it)."""
    INTERNAL_ERROR = "internal_error", ApiError(500, "InternalServerException", "An internal error occurred")
    """HTTP 500 InternalServerException (boto3 retries it)."""
    DEPENDENCY_FAILED = "dependency_failed", ApiError(424, "DependencyFailedException", "The bot's code hook failed")
    """HTTP 424 DependencyFailedException, as when the bot's code hook fails."""
    STALL = "stall"
    """The answer held back for ``seconds``, then given."""
    DROP = "drop", CUT
    """The connection cut with no answer."""


class Fault(RequestFault[FaultKind]):
    """A failure to inject into the next ``count`` RecognizeText calls the runtime answers; a stall or a drop is no
    :meth:`refusal`."""

    kinds = FaultKind
    injected_by = "the Lex emulator"
