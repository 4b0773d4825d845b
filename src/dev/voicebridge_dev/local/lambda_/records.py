"""What the Lambda emulator keeps of each finished invocation, and how it names itself.

Records are served over HTTP::

    GET  /_emulator/invocations      one record per finished invocation (:class:`InvocationRecord`)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from voicebridge_dev.local.service import Record

LABEL: Final = "lambda emulator (not AWS Lambda)"


class InvocationType(StrEnum):
    REQUEST_RESPONSE = "RequestResponse"
    EVENT = "Event"
    DRY_RUN = "DryRun"


class InvocationStatus(StrEnum):
    OK = "ok"
    """The handler returned a JSON-serialisable result."""
    ERROR = "error"
    """The handler raised, its module failed to import, or its result could not be serialised."""
    TIMEOUT = "timeout"
    """The function's timeout (or the init limit) ran out; the container was killed."""
    CRASHED = "crashed"
    """The container's process exited in the middle of the invocation."""
    CANCELLED = "cancelled"
    """The emulator stopped before the invocation finished (or, for an Event, before it started)."""


@dataclass(frozen=True)
class InvocationRecord(Record):
    """One finished invocation.

    ``started``/``finished`` are epoch seconds, ``duration_ms`` is measured on a monotonic clock (a cold
    start included), ``init_duration_ms`` is set on a cold start, and ``container`` numbers the emulator's
    containers from 1 (None when the invocation never reached one).
    """

    request_id: str
    function: str
    invocation_type: InvocationType
    started: float
    finished: float
    duration_ms: float
    status: InvocationStatus
    error: dict[str, Any] | None
    logs: str
    container: int | None
    init_duration_ms: float | None = None
    max_memory_mb: int | None = None
    """The container's peak resident memory so far, as Lambda's ``Max Memory Used``."""
    cpu_ms: float | None = None
    """CPU time the container's process used during the invocation (the emulator's own figure)."""
