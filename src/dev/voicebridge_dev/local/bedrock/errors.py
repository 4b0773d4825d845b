"""The Bedrock emulator's errors: what the service answers instead of a stream, what it refuses from Python or over
its control plane, and how a stream ends early."""

from __future__ import annotations

from voicebridge_dev.local.service import FaultSpecError

__all__ = [
    "ApiError",
    "BrainError",
    "ClientGone",
    "EmulatorConfigError",
    "FaultSpecError",
    "Stopping",
    "validation_error",
]


class ApiError(Exception):
    """An error Bedrock Runtime answers before any event: its HTTP status, ``x-amzn-ErrorType`` and message."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type

    @property
    def message(self) -> str:
        return str(self)


def validation_error(message: str) -> ApiError:
    """A ``ValidationException`` (400), the service's answer to a request it will not run."""
    return ApiError(400, "ValidationException", message)


class BrainError(ValueError):
    """A brain file (from Python or ``POST /_emulator/brain``) is malformed."""


class EmulatorConfigError(ValueError):
    """An emulator setting (from Python or ``POST /_emulator/config``) is malformed."""


class ClientGone(Exception):
    """The client closed the connection while the stream was being written."""


class Stopping(Exception):
    """The emulator is shutting down."""
