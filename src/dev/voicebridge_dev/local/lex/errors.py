"""The Lex emulator's errors: what the runtime answers instead of a turn, and what it refuses from Python or over its
control plane."""

from __future__ import annotations

from voicebridge_dev.local.service import FaultSpecError

__all__ = ["ApiError", "BotDefinitionError", "FaultSpecError", "validation_error"]


class ApiError(Exception):
    """An error Lex V2 runtime answers with: its HTTP status, ``x-amzn-ErrorType`` and message."""

    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type

    @property
    def message(self) -> str:
        return str(self)


def validation_error(message: str) -> ApiError:
    """A ``ValidationException`` (400): a request the runtime will not act on."""
    return ApiError(400, "ValidationException", message)


class BotDefinitionError(ValueError):
    """A bot file (from Python or ``POST /_emulator/bot``) is malformed."""
