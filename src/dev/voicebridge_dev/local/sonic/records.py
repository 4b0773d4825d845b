"""What the Sonic emulator keeps of each invocation: its bookkeeping while it runs, its record once done.

Records are served next to the engine's name::

    GET    /_emulator/stats    one record per invocation (times on the time.perf_counter() clock)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from voicebridge_dev.local.service import CallRecord, CallState

LABEL: Final = "sonic endpoint emulator (not the model)"

Transport = Literal["sagemaker", "container", "cartesia-api"]


@dataclass(frozen=True, kw_only=True)
class InvocationRecord(CallRecord):
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
    header, and the container receives as ``Accept`` (None when absent, and on the Cartesia API). ``context_id`` is
    the request's, once it was read.
    """

    transport: Transport
    endpoint_name: str | None
    first_byte_at: float | None
    generation_seconds: float
    audio_seconds: float
    chunks: int
    payload_parts: int
    cartesia_version: str | None
    accept: str | None
    context_id: str | None


@dataclass(kw_only=True)
class Invocation(CallState):
    """Mutable bookkeeping of one invocation while it runs."""

    transport: Transport
    endpoint_name: str | None = None
    cartesia_version: str | None = None
    accept: str | None = None
    first_byte_at: float | None = None
    generation_seconds: float = 0.0
    audio_seconds: float = 0.0
    chunks: int = 0
    payload_parts: int = 0
    context_id: str | None = None
