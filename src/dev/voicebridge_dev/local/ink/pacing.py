"""How fast an Ink session may receive audio: one second of audio per second of session, as the service says.

Cartesia's STT comparison page (https://docs.cartesia.ai/use-the-api/stt/compare-endpoints): "Batch STT accepts
the entire recording in a single request while realtime endpoints can only accept one second of audio data per
second, i.e. audio needs to be sent “in real time”." The official SDK's examples pace 100 ms chunks with
``asyncio.sleep(0.1)`` (cartesia-python ``examples/async_examples.py``). No source says what the server does
with audio that arrives faster: no window, tolerance, error event or close code is documented, and Cartesia's
own MCP server sends a whole file unpaced (cartesia-mcp ``server.py``), which suggests the service buffers
rather than refuses. So the emulator's answer is a setting, :data:`RealtimeMode`:

- ``"reject"`` (the default, so that a client that bursts fails its tests): a session's cumulative audio may
  not exceed the time since it connected plus ``tolerance_ms``. No source gives a tolerance; 500 ms by default
  leaves a client paced like the SDK's examples room for scheduling jitter and still fails any burst of a
  second or more. Past it the session gets an ``error`` event and is closed (1008). The event has the
  documented error shape (Cartesia's API-errors page, and the SDK's ``STTErrorResponse``), with
  ``status_code`` 429 — RFC 6585's "Too Many Requests" for a client that has "sent too many requests in a
  given amount of time", and the status Cartesia gives its concurrency limit — and ``error_code``
  ``audio_faster_than_realtime``, the emulator's own name since the service documents none.
- ``"delay"``: audio is accepted at any rate but processed no faster than real time (within the same
  tolerance), as a buffering server would; turns then end later, by the backlog, and commands wait behind the
  audio sent before them.
- ``"off"``: audio is processed the moment it arrives.

Audio is counted as the session's encoding and sample rate say: ``sample_rate`` × bytes per sample of
``encoding`` bytes make one second. The clock starts when the WebSocket session opens.

>>> budget = RealtimeBudget("reject", 500.0, bytes_per_second=16000, opened_at=0.0)
>>> budget.admits(arrived_bytes=8000, now=0.0), budget.admits(arrived_bytes=16000, now=0.0)
(True, False)
"""

from __future__ import annotations

import math
from typing import Literal, get_args

RealtimeMode = Literal["reject", "delay", "off"]
REALTIME_MODES: tuple[RealtimeMode, ...] = get_args(RealtimeMode)
REALTIME_TOLERANCE_MS = 500.0


def check_realtime(mode: str, tolerance_ms: float) -> None:
    """ValueError unless ``mode`` is a :data:`RealtimeMode` and ``tolerance_ms`` a finite number >= 0."""
    if mode not in REALTIME_MODES:
        raise ValueError(f"realtime must be one of {REALTIME_MODES}, got {mode!r}")
    if not math.isfinite(tolerance_ms) or tolerance_ms < 0:
        raise ValueError(f"realtime_tolerance_ms must be a finite number >= 0, got {tolerance_ms}")


class RealtimeBudget:
    """The audio one session may have received, or processed, by a given time (seconds of the session's clock)."""

    def __init__(self, mode: RealtimeMode, tolerance_ms: float, bytes_per_second: int, opened_at: float) -> None:
        check_realtime(mode, tolerance_ms)
        self.mode = mode
        self.tolerance_ms = tolerance_ms
        self.bytes_per_second = bytes_per_second
        self.opened_at = opened_at

    def allowed_bytes(self, now: float) -> float:
        """How many bytes of audio real time allows by ``now``, the tolerance included."""
        return (now - self.opened_at + self.tolerance_ms / 1000.0) * self.bytes_per_second

    def admits(self, arrived_bytes: int, now: float) -> bool:
        """Whether a session that has received ``arrived_bytes`` in all by ``now`` is within the limit."""
        return self.mode != "reject" or arrived_bytes <= self.allowed_bytes(now)

    def processable(self, processed_bytes: int, now: float) -> float:
        """How many more bytes may be processed at ``now`` (unbounded unless the mode is ``"delay"``)."""
        if self.mode != "delay":
            return math.inf
        return max(0.0, self.allowed_bytes(now) - processed_bytes)

    def due(self, processed_bytes: int, wanted_bytes: int) -> float:
        """When ``wanted_bytes`` more may be processed (the session's clock); at once unless ``"delay"``."""
        if self.mode != "delay":
            return -math.inf
        seconds = (processed_bytes + wanted_bytes) / self.bytes_per_second - self.tolerance_ms / 1000.0
        return self.opened_at + seconds

    def ahead_ms(self, arrived_bytes: int, now: float) -> float:
        """How far ``arrived_bytes`` of audio runs ahead of the time since the session opened."""
        return arrived_bytes * 1000.0 / self.bytes_per_second - (now - self.opened_at) * 1000.0
