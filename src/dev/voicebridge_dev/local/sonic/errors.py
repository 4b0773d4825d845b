"""The Sonic emulator's errors: what it refuses from Python or over HTTP, and how a response ends early."""

from __future__ import annotations

from voicebridge_dev.local.service import FaultSpecError

__all__ = ["ClientGone", "EmulatorConfigError", "FaultSpecError", "InvalidSonicRequest", "Stopping"]


class InvalidSonicRequest(ValueError):
    """The request body is not one the Sonic model accepts; the model would answer 422."""


class EmulatorConfigError(ValueError):
    """An emulator setting (from Python or ``POST /_emulator/config``) is malformed."""


class ClientGone(Exception):
    """The client closed the connection while the response was being written."""


class Stopping(Exception):
    """The emulator is shutting down."""
