"""The Bedrock emulator's errors: what it refuses from Python or over its control plane. What the service answers
instead of a stream is the shared :class:`~voicebridge_dev.local.service.ApiError`."""

from __future__ import annotations

from voicebridge_dev.local.service import EmulatorConfigError, FaultSpecError

__all__ = ["BrainError", "EmulatorConfigError", "FaultSpecError"]


class BrainError(ValueError):
    """A brain file (from Python or ``POST /_emulator/brain``) is malformed."""
