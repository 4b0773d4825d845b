"""The failures the Bedrock emulator injects into ConverseStream, told as Bedrock Runtime tells them.

Faults wait in the emulator's queue in the order they were injected; each ConverseStream call the service would run
takes one count of the oldest, so ``count`` is how many calls in a row it strikes (``Fault(FaultKind.THROTTLE,
count=2)``: the first two calls are throttled, the third is answered). Requests it refuses anyway (an unknown
model, a ValidationException) take no count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over
HTTP::

    POST   /_emulator/faults   {"kind": "stream_error", "after_tokens": 3}  (or a list)
    POST   /_emulator/faults   {"kind": "stop", "stop_reason": "content_filtered", "after_tokens": 0}
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault

A "token" is one ``contentBlockDelta``: a word of the reply's text, or a piece of a tool call's input.

The errors before the stream are botocore's ``bedrock-runtime`` error shapes for ConverseStream, each
``{"message": …}`` with its name in ``x-amzn-ErrorType``: ThrottlingException (429), ModelNotReadyException (429),
ServiceUnavailableException (503). The product's client retries none of them itself (its botocore retries are off);
a client left to botocore's standard retry mode retries all three. Their messages are the emulator's own, marked as
injected: Bedrock's exact words for them were not found.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from voicebridge_dev.local.service import ApiError, CountedFault, FaultKinds, FaultSpecError, check_seconds, check_whole


class FaultKind(FaultKinds):
    THROTTLE = "throttle", ApiError(429, "ThrottlingException", "Too many requests, please wait before trying again.")
    """HTTP 429 ThrottlingException before the stream (the account's quota)."""
    MODEL_NOT_READY = (
        "model_not_ready",
        ApiError(429, "ModelNotReadyException", "The model is not ready to serve inference requests."),
    )
    """HTTP 429 ModelNotReadyException before the stream (the model cannot serve yet)."""
    UNAVAILABLE = (
        "unavailable",
        ApiError(503, "ServiceUnavailableException", "The service is unavailable. Try again later."),
    )
    """HTTP 503 ServiceUnavailableException before the stream."""
    STREAM_ERROR = "stream_error"
    """An exception event (``exception``: a modelStreamErrorException by default) after ``after_tokens`` deltas,
    then the end of the stream."""
    STALL = "stall"
    """Nothing sent for ``seconds`` after ``after_tokens`` deltas, then the stream goes on."""
    DROP = "drop"
    """The connection cut after ``after_tokens`` deltas, mid-stream, with no end to the HTTP body."""
    STOP = "stop"
    """The model stops with ``stop_reason`` after the first ``after_tokens`` words of its text (of ``message`` in
    place of the reply's, when given: a guardrail's own words, say), then ``messageStop`` and ``metadata`` as ever.
    The tool call is kept whole for ``tool_use``, kept with its input JSON cut short for ``malformed_tool_use``, and
    dropped for every other reason (:func:`~.stream.forced_stop`)."""


STREAM_EXCEPTIONS: Final = (
    "modelStreamErrorException",
    "throttlingException",
    "internalServerException",
    "serviceUnavailableException",
    "validationException",
)
"""The exception events ConverseStreamOutput declares (botocore's ``bedrock-runtime`` model)."""
STOP_REASONS: Final = (
    "end_turn",
    "tool_use",
    "max_tokens",
    "stop_sequence",
    "guardrail_intervened",
    "content_filtered",
    "malformed_model_output",
    "malformed_tool_use",
    "model_context_window_exceeded",
)
"""The values of ``messageStop.stopReason`` (botocore's ``bedrock-runtime`` model, shape ``StopReason``)."""


@dataclass(frozen=True)
class Fault(CountedFault[FaultKind]):
    """A failure to inject into the next ``count`` ConverseStream calls the service runs."""

    kinds = FaultKind
    injected_by = "the Bedrock emulator"

    after_tokens: int = 3
    seconds: float = 1.0
    exception: str = "modelStreamErrorException"
    stop_reason: str = "end_turn"
    first_turns: int | None = None
    """Strike only calls whose conversation has at most this many user messages: the conversation's first turns,
    however many calls each of them makes (retries, a reply started early and asked again)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seconds(self.seconds)
        check_whole("after_tokens", self.after_tokens)
        if self.exception not in STREAM_EXCEPTIONS:
            raise FaultSpecError(f"unknown exception {self.exception!r}; one of {', '.join(STREAM_EXCEPTIONS)}")
        if self.first_turns is not None:
            check_whole("first_turns", self.first_turns, positive=True)
        if self.stop_reason not in STOP_REASONS:
            raise FaultSpecError(f"unknown stop_reason {self.stop_reason!r}; one of {', '.join(STOP_REASONS)}")

    def strikes(self, user_messages: int) -> bool:
        """Whether this fault applies to a call whose conversation has ``user_messages`` user messages."""
        return self.first_turns is None or user_messages <= self.first_turns

    def describe(self) -> str:
        """The text an injected exception event carries."""
        return self.message or f"injected {self.exception} (Bedrock emulator)"
