"""What the Sonic emulator keeps of each invocation: its bookkeeping while it runs, its record once done.

Records are served next to the engine's name::

    GET    /_emulator/stats    one record per invocation (times on the time.perf_counter() clock)
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Any, Final, Literal

from voicebridge_dev.local.service import Record

__all__ = ["LABEL", "Invocation", "InvocationRecord", "Transport"]

LABEL: Final = "sonic endpoint emulator (not the model)"

Transport = Literal["sagemaker", "container", "cartesia-api"]


@dataclass(frozen=True)
class InvocationRecord(Record):
    """One invocation as the emulator saw it; times are ``time.perf_counter()`` seconds.

    ``first_byte_at`` is when the stream's first bytes (headers and first message) were written, None for an
    error answer; ``finished`` is taken just before the response's last bytes are written.

    ``generation_seconds`` is the wall time the emulator spent producing audio on purpose (synthesis, the
    time-to-first-byte wait, pacing, stalls) and excludes time spent writing to the socket, so a benchmark
    can subtract it from a client's wall time to isolate the client's own overhead.

    ``transport`` is ``"sagemaker"``, ``"container"`` (``POST /invocations``) or ``"cartesia-api"``;
    ``endpoint_name`` is None but on SageMaker, and
    ``cartesia_version`` the ``Cartesia-Version`` header it was called with. ``payload_parts`` counts
    event-stream PayloadParts on SageMaker, HTTP chunks from the container and server-sent events on the Cartesia
    API. ``accept`` is the invocation's ``Accept`` parameter, which botocore sends as the ``X-Amzn-SageMaker-Accept``
    header, and the container receives as ``Accept`` (None when absent, and on the Cartesia API).
    """

    endpoint_name: str | None
    body: Any
    http_status: int
    outcome: str
    started: float
    first_byte_at: float | None
    finished: float
    generation_seconds: float
    audio_seconds: float
    chunks: int = 0
    payload_parts: int = 0
    fault: str | None = None
    transport: Transport = "sagemaker"
    cartesia_version: str | None = None
    accept: str | None = None


@dataclass
class Invocation:
    """Mutable bookkeeping of one invocation while it runs."""

    transport: Transport
    started: float
    endpoint_name: str | None = None
    request_id: str = dataclasses.field(default_factory=lambda: str(uuid.uuid4()))
    cartesia_version: str | None = None
    accept: str | None = None
    body: Any = None
    first_byte_at: float | None = None
    generation_seconds: float = 0.0
    audio_seconds: float = 0.0
    chunks: int = 0
    payload_parts: int = 0
    fault: str | None = None
    outcome: str = "ok"
    http_status: int = 200
    context_id: str | None = None
    recorded: bool = False
