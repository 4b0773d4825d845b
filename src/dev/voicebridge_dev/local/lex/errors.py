"""The Lex emulator's errors: what it refuses from Python or over its control plane. What the runtime answers
instead of a turn is the shared :class:`~voicebridge_dev.local.service.ApiError`."""

from __future__ import annotations

from voicebridge_dev.local.service import FaultSpecError

__all__ = ["BotDefinitionError", "FaultSpecError"]


class BotDefinitionError(ValueError):
    """A bot file (from Python or ``POST /_emulator/bot``) is malformed."""
