"""The Comprehend emulator's errors: what it refuses from Python or over its control plane. What the service answers
instead of the operation is the shared :class:`~voicebridge_dev.local.service.ApiError`."""

from __future__ import annotations

from voicebridge_dev.local.service import EmulatorConfigError, FaultSpecError

__all__ = ["EmulatorConfigError", "FaultSpecError"]
