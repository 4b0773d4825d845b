"""The failures the Ink emulator injects into its WebSocket sessions.

Faults are one-shot: the first session to reach a fault's trigger consumes it (a reject strikes ``connections``
handshakes). From Python, ``ink.inject(DropFault(after_audio_ms=1000))``; over HTTP::

    POST   /_emulator/faults       {"kind": "drop" | "error" | "reject" | "stall", ...}  arm a fault
    DELETE /_emulator/faults                                                   disarm all faults
"""

from __future__ import annotations

from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from voicebridge_dev.local.service import FaultSpecError


class _FaultBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    @property
    def uses(self) -> int:
        return 1

    def with_uses(self, uses: int) -> Self:
        return self


class DropFault(_FaultBase):
    """Close the socket abruptly (no close frame, the client sees 1006) after ``after_audio_ms`` of received
    audio or right after the session's ``after_turn_end``-th turn.end."""

    kind: Literal["drop"] = "drop"
    after_audio_ms: float | None = Field(default=None, ge=0)
    after_turn_end: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_trigger(self) -> Self:
        if (self.after_audio_ms is None) == (self.after_turn_end is None):
            raise ValueError("a drop needs exactly one of after_audio_ms and after_turn_end")
        return self


class ErrorFault(_FaultBase):
    """Send an ``error`` event, then close with ``close_code``, after ``after_audio_ms`` of audio."""

    kind: Literal["error"] = "error"
    after_audio_ms: float = Field(default=0.0, ge=0)
    message: str = "Internal server error (injected by the Ink emulator)"
    status_code: int = 500
    title: str = "Internal Server Error"
    error_code: str | None = "internal_error"
    close_code: int = 1011


class RejectFault(_FaultBase):
    """Refuse the next ``connections`` WebSocket handshakes with ``status_code`` (429: past the plan's
    concurrency)."""

    kind: Literal["reject"] = "reject"
    connections: int = Field(default=1, ge=1)
    status_code: int = Field(default=429, ge=400, le=599)

    @property
    def uses(self) -> int:
        return self.connections

    def with_uses(self, uses: int) -> Self:
        return self.model_copy(update={"connections": uses})


class StallFault(_FaultBase):
    """Hold every event for ``seconds`` once ``after_audio_ms`` of audio has arrived, then deliver them."""

    kind: Literal["stall"] = "stall"
    seconds: float = Field(gt=0)
    after_audio_ms: float = Field(default=0.0, ge=0)


Fault = Annotated[DropFault | ErrorFault | RejectFault | StallFault, Field(discriminator="kind")]
_FAULT_ADAPTER: TypeAdapter[DropFault | ErrorFault | RejectFault | StallFault] = TypeAdapter(Fault)


def fault_from_json(body: bytes) -> Fault:
    """A fault from its JSON form (the ``POST /_emulator/faults`` body)."""
    try:
        return _FAULT_ADAPTER.validate_json(body)
    except ValidationError as exc:
        raise FaultSpecError(str(exc)) from exc
