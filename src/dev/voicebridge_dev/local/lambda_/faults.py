"""The failures the Lambda emulator injects into Invoke calls, answered as the Lambda API answers them.

Faults wait in the order they were injected; each invocation that would run a function (RequestResponse or
Event, optionally only of ``function``, a logical ID or local name) takes one count of the oldest that strikes
it, and is refused instead of run. Requests the API refuses anyway (an unknown function, a bad header or body)
and DryRun take no count. From Python: ``emu.inject(Fault(FaultKind.THROTTLE, count=2))``; over HTTP::

    POST   /_emulator/faults   {"kind": "throttle", "count": 2, "function": "SynthesizeFunction"}  (or a list)
    GET    /_emulator/faults   pending faults
    DELETE /_emulator/faults   drop every pending fault
"""

from __future__ import annotations

from dataclasses import dataclass

from voicebridge_dev.local.service import ApiError, CountedFault, FaultKinds, FaultSpecError


class FaultKind(FaultKinds):
    THROTTLE = (
        "throttle",
        ApiError(429, "TooManyRequestsException", "Rate Exceeded.", {"Reason": "ConcurrentInvocationLimitExceeded"}),
    )
    """429 TooManyRequestsException (Reason ConcurrentInvocationLimitExceeded), as when the account's
    concurrency is used up; boto3 retries it."""
    SERVICE_ERROR = "service_error", ApiError(500, "ServiceException", "Lambda failed")
    """500 ServiceException: Lambda failed before running the function."""


@dataclass(frozen=True)
class Fault(CountedFault[FaultKind]):
    """A refusal to inject into the next ``count`` invocations (of ``function`` only, when given)."""

    kinds = FaultKind
    injected_by = "the Lambda emulator"

    function: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.function is not None and not isinstance(self.function, str):
            raise FaultSpecError(f"function must be a function's name, got {self.function!r}")

    def strikes(self, logical_id: str, physical_name: str) -> bool:
        """Whether the fault applies to an invocation of the function of that logical ID and local name."""
        return self.function in (None, logical_id, physical_name)
