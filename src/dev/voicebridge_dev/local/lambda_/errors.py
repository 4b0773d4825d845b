"""The Lambda emulator's errors: how an invocation ends when the emulator stops. What the Lambda API answers instead
of running a function is the shared :class:`~voicebridge_dev.local.service.ApiError`."""

from __future__ import annotations

from voicebridge_dev.local.service import FaultSpecError

__all__ = ["EmulatorStopping", "FaultSpecError"]


class EmulatorStopping(Exception):
    """The emulator is stopping: no new container, no new invocation."""
