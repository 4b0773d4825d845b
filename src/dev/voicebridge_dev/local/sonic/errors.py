"""The Sonic emulator's errors: what it refuses from Python or over HTTP."""

from __future__ import annotations

from voicebridge_dev.local.service import EmulatorConfigError, FaultSpecError

__all__ = ["EmulatorConfigError", "FaultSpecError", "InvalidSonicRequest"]


class InvalidSonicRequest(ValueError):
    """The request body is not one the Sonic model accepts; the model would answer 422."""
