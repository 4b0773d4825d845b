"""The failures the Bedrock emulator injects into ConverseStream, told as Bedrock Runtime tells them.

Faults wait in the emulator's queue in the order they were injected; each ConverseStream call the service would run
takes one count of the oldest. Requests it refuses anyway (an unknown model, a ValidationException) take no count.
From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

    POST   /_emulator/faults   {"kind": "stream_error", "after_tokens": 3}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault

A "token" is one ``contentBlockDelta``: a word of the reply's text, or a piece of a tool call's input.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Self

from voicebridge_dev.local.bedrock.errors import ApiError, FaultSpecError

__all__ = ["STREAM_EXCEPTIONS", "Fault", "FaultKind"]


class FaultKind(StrEnum):
    THROTTLE = "throttle"
    """HTTP 429 ThrottlingException before the stream (boto3 retries it)."""
    UNAVAILABLE = "unavailable"
    """HTTP 503 ServiceUnavailableException before the stream (boto3 retries it)."""
    STREAM_ERROR = "stream_error"
    """An exception event (``exception``: a modelStreamErrorException by default) after ``after_tokens`` deltas,
    then the end of the stream."""
    STALL = "stall"
    """Nothing sent for ``seconds`` after ``after_tokens`` deltas, then the stream goes on."""
    DROP = "drop"
    """The connection cut after ``after_tokens`` deltas, mid-stream, with no end to the HTTP body."""


STREAM_EXCEPTIONS: Final = (
    "modelStreamErrorException",
    "throttlingException",
    "internalServerException",
    "serviceUnavailableException",
    "validationException",
)
"""The exception events ConverseStreamOutput declares (botocore's ``bedrock-runtime`` model)."""

_FAULT_FIELDS: Final = frozenset({"kind", "count", "after_tokens", "seconds", "exception", "message"})
_REFUSALS: Final = {
    FaultKind.THROTTLE: (429, "ThrottlingException", "Too many requests, please wait before trying again."),
    FaultKind.UNAVAILABLE: (503, "ServiceUnavailableException", "The service is unavailable. Try again later."),
}


@dataclass(frozen=True)
class Fault:
    """A failure to inject into the next ``count`` ConverseStream calls the service runs."""

    kind: FaultKind
    count: int = 1
    after_tokens: int = 3
    seconds: float = 1.0
    exception: str = "modelStreamErrorException"
    message: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "kind", FaultKind(self.kind))
        except ValueError as exc:
            kinds = ", ".join(kind.value for kind in FaultKind)
            raise FaultSpecError(f"unknown fault kind {self.kind!r}; one of {kinds}") from exc
        if not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 1:
            raise FaultSpecError(f"count must be a positive integer, got {self.count!r}")
        if not isinstance(self.after_tokens, int) or isinstance(self.after_tokens, bool) or self.after_tokens < 0:
            raise FaultSpecError(f"after_tokens must be a non-negative integer, got {self.after_tokens!r}")
        seconds = self.seconds
        if (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or not math.isfinite(seconds)
            or seconds < 0
        ):
            raise FaultSpecError(f"seconds must be a non-negative number, got {self.seconds!r}")
        if self.exception not in STREAM_EXCEPTIONS:
            raise FaultSpecError(f"unknown exception {self.exception!r}; one of {', '.join(STREAM_EXCEPTIONS)}")
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

    @property
    def before_stream(self) -> bool:
        """Whether the fault is an HTTP error instead of a stream."""
        return self.kind in _REFUSALS

    def refusal(self) -> ApiError:
        """The HTTP error a fault before the stream answers with."""
        status, error_type, message = _REFUSALS[self.kind]
        return ApiError(status, error_type, self.message or f"{message} (injected by the Bedrock emulator)")

    def describe(self) -> str:
        """The text an injected exception event carries."""
        return self.message or f"injected {self.exception} (Bedrock emulator)"
