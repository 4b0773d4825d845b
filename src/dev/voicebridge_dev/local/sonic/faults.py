"""The failures the Sonic emulator injects, as each transport tells them.

Faults wait in the emulator's queue in the order they were injected; each invocation that reaches the model
takes one count of the oldest. Requests the model rejects (422) or the endpoint refuses (unknown name) take no
count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

    POST   /_emulator/faults   {"kind": "stall", "count": 1, "after_chunks": 3, "seconds": 2.0}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
"""

from __future__ import annotations

from dataclasses import dataclass

from voicebridge_dev.local.service import CountedFault, FaultKinds, check_seconds, check_whole


class FaultKind(FaultKinds):
    """A failure, as each transport tells it: SageMaker's event stream, or the Cartesia API's SSE.

    On the Cartesia API every failure after the response headers is a last ``error`` event, then the end of
    the stream: the API has no other in-stream channel.
    """

    THROTTLE = "throttle"
    """No capacity: ModelError with OriginalStatusCode 429; HTTP 429 on the Cartesia API."""
    ERROR_BEFORE_AUDIO = "error_before_audio"
    """HTTP 200, then a ModelStreamError (an SSE ``error`` event) as the very first message."""
    ERROR_MID_STREAM = "error_mid_stream"
    """A ModelStreamError (an SSE ``error`` event) after ``after_chunks`` audio chunks."""
    ERROR_EVENT = "error_event"
    """A Sonic ``{"type": "error", "data": message}`` line after ``after_chunks`` chunks, and no ``done``."""
    STALL = "stall"
    """Nothing sent for ``seconds`` after ``after_chunks`` chunks, then the stream resumes."""
    INTERNAL_FAILURE = "internal_failure"
    """An InternalStreamFailure (an SSE ``error`` event, status 500) after ``after_chunks`` chunks."""


@dataclass(frozen=True)
class Fault(CountedFault[FaultKind]):
    """A failure to inject into the next ``count`` invocations that reach the model."""

    kinds = FaultKind

    after_chunks: int = 3
    seconds: float = 1.0
    error_code: str = "ModelInvocationTimeExceeded"

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seconds(self.seconds)
        check_whole("after_chunks", self.after_chunks)

    def describe(self) -> str:
        """The text carried by the injected error."""
        if self.message is not None:
            return self.message
        return f"injected {self.kind.value} fault (emulator)"
