"""Errors as types, each with the stable code a contact flow sees as ``ErrorCode``.

Handlers catch :class:`VoiceBridgeError` at the edge and map ``code`` and ``safe_message`` to the Connect
response; messages are short, safe to log, and never carry a secret.
"""

from __future__ import annotations


class VoiceBridgeError(Exception):
    """Base of every error the product reports to a contact flow."""

    code = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.safe_message = message[:240]


class InvalidInput(VoiceBridgeError):
    """The flow (or the model, with a 422) rejected what was asked: retrying cannot help."""

    code = "InvalidInput"


class ConfigurationError(VoiceBridgeError):
    """The deployment is missing or has a malformed setting."""

    code = "ConfigurationError"


class ModelUnavailable(VoiceBridgeError):
    """The model could not produce audio in time (throttled, stream failed, deadline passed)."""

    code = "ModelUnavailable"


class RetryableModelError(ModelUnavailable):
    """A model failure worth another try: 429, 5xx, or a stream error before any audio arrived."""


class StorageError(VoiceBridgeError):
    """The prompt bucket or the turn table could not be read or written."""

    code = "StorageError"
