"""The KVS emulator's errors: what it refuses from Python, what it answers a client with, and the error ids
GetMedia's error tags carry."""

from __future__ import annotations

from http import HTTPStatus

from voicebridge_dev.local.service import FaultSpecError

__all__ = [
    "ERROR_FRAGMENT_NOT_FOUND",
    "ERROR_INTERNAL",
    "ApiError",
    "ConnectionLost",
    "ContactStateError",
    "FaultSpecError",
    "KvsEmulatorError",
    "StreamExistsError",
    "StreamNotFoundError",
    "UnplayableAudioError",
]

ERROR_FRAGMENT_NOT_FOUND = 4000
ERROR_INTERNAL = 5000


class KvsEmulatorError(Exception):
    """Base class of the KVS emulator's errors."""


class StreamNotFoundError(KvsEmulatorError):
    """No stream has that name or ARN."""


class StreamExistsError(KvsEmulatorError):
    """A stream of that name already exists."""


class ContactStateError(KvsEmulatorError):
    """The call does not fit the stream's contact: none is live, or one is still producing."""


class UnplayableAudioError(KvsEmulatorError):
    """Audio handed to the emulator cannot be played on a stream: not 16-bit PCM for a known track (or a WAV
    file it can turn into 8 kHz mono)."""


class ApiError(Exception):
    """An error answered to a client in the service's own shape."""

    def __init__(self, code: str, message: str, status: int = HTTPStatus.BAD_REQUEST) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


class ConnectionLost(Exception):
    """The client went away (or a cut fault closed the connection)."""
