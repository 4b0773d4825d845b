"""The KVS emulator's errors: what it refuses from Python, and the error ids GetMedia's error tags carry. What it
answers a client with is the shared :class:`~voicebridge_dev.local.service.ApiError`."""

from __future__ import annotations

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


class ConnectionLost(Exception):
    """The client went away (or a cut fault closed the connection)."""
