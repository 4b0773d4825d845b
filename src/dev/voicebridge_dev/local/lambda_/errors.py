"""The Lambda emulator's errors: what the Lambda API answers instead of running a function."""

from __future__ import annotations

from collections.abc import Mapping

from voicebridge_dev.local.service import FaultSpecError

__all__ = ["ApiError", "EmulatorStopping", "FaultSpecError"]


class EmulatorStopping(Exception):
    """The emulator is stopping: no new container, no new invocation."""


class ApiError(Exception):
    """An error the Lambda API answers with instead of running the function."""

    def __init__(self, status: int, error_type: str, message: str, extra: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.extra = dict(extra or {})

    def body(self) -> dict[str, str]:
        key = "Message" if self.error_type in ("ResourceNotFoundException", "ServiceException") else "message"
        return {"Type": "User" if self.status < 500 else "Service", key: str(self), **self.extra}
