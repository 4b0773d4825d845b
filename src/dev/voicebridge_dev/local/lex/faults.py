"""The failures the Lex emulator injects into RecognizeText, told as the Lex V2 runtime tells them.

Faults wait in the emulator's queue in the order they were injected; each RecognizeText call the runtime would
answer takes one count of the oldest. Requests it refuses anyway (a ValidationException, an unknown bot, alias or
locale) take no count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

    POST   /_emulator/faults   {"kind": "stall", "seconds": 2.0}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Self

from voicebridge_dev.local.lex.errors import ApiError, FaultSpecError

__all__ = ["Fault", "FaultKind"]


class FaultKind(StrEnum):
    THROTTLE = "throttle"
    """HTTP 429 ThrottlingException (boto3 retries it)."""
    INTERNAL_ERROR = "internal_error"
    """HTTP 500 InternalServerException (boto3 retries it)."""
    DEPENDENCY_FAILED = "dependency_failed"
    """HTTP 424 DependencyFailedException, as when the bot's code hook fails."""
    STALL = "stall"
    """The answer held back for ``seconds``, then given."""
    DROP = "drop"
    """The connection cut with no answer."""


_FAULT_FIELDS: Final = frozenset({"kind", "count", "seconds", "message"})
_REFUSALS: Final = {
    FaultKind.THROTTLE: (429, "ThrottlingException", "Rate exceeded"),
    FaultKind.INTERNAL_ERROR: (500, "InternalServerException", "An internal error occurred"),
    FaultKind.DEPENDENCY_FAILED: (424, "DependencyFailedException", "The bot's code hook failed"),
}


@dataclass(frozen=True)
class Fault:
    """A failure to inject into the next ``count`` RecognizeText calls the runtime answers."""

    kind: FaultKind
    count: int = 1
    seconds: float = 1.0
    message: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", FaultKind(self.kind))
        except ValueError as exc:
            kinds = ", ".join(kind.value for kind in FaultKind)
            raise FaultSpecError(f"unknown fault kind {self.kind!r}; one of {kinds}") from exc
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 1:
            raise FaultSpecError(f"count must be a positive integer, got {self.count!r}")
        seconds = self.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise FaultSpecError(f"seconds must be a non-negative number, got {self.seconds!r}")
        if self.message is not None and not isinstance(self.message, str):
            raise FaultSpecError(f"message must be a string, got {self.message!r}")

    @classmethod
    def from_json(cls, data: Any) -> Fault:
        """A fault from its JSON form (the ``POST /_emulator/faults`` body)."""
        if not isinstance(data, dict) or "kind" not in data:
            raise FaultSpecError("a fault is an object with at least a 'kind'")
        unknown = set(data) - _FAULT_FIELDS
        if unknown:
            raise FaultSpecError(f"unknown fault fields: {', '.join(sorted(unknown))}")
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def uses(self) -> int:
        return self.count

    def with_uses(self, uses: int) -> Self:
        return dataclasses.replace(self, count=uses)

    def refusal(self) -> ApiError | None:
        """The error the struck call is answered with; None for a stall or a drop."""
        if self.kind not in _REFUSALS:
            return None
        status, error_type, message = _REFUSALS[self.kind]
        return ApiError(status, error_type, self.message or f"{message} (injected by the Lex emulator)")
