"""The Ink emulator's errors: what it refuses from Python, and how a session or a handshake ends early."""

from __future__ import annotations

from voicebridge_dev.local.service import ApiError


class InkEmulatorError(Exception):
    """Base class of the Ink emulator's errors."""


class EmulatorNotRunningError(InkEmulatorError):
    """The emulator was asked for its address before start() or after stop()."""


class RecogniserUnavailableError(InkEmulatorError):
    """The requested embedded recogniser is not installed (it comes with the ``speech`` extra)."""


class RecogniserFailedError(InkEmulatorError):
    """The embedded recogniser's decoder process failed, died or did not answer in time."""


class InvalidClipError(InkEmulatorError, ValueError):
    """A clip offered for registration holds no voiced audio to recognise it by."""


class InvalidTurnSettingsError(InkEmulatorError, ValueError):
    """Turn-detection settings outside the ranges the service accepts."""


class EndSession(Exception):
    """The session is over; ``reason`` is what its record's ``ended_by`` says."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class HandshakeRejected(ApiError):
    """A WebSocket handshake refused with ``status`` and ``message``; the body it is answered with names no error
    type."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, "", message)
