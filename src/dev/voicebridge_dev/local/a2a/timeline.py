"""What happened in a session, on one clock: seconds since Connect sent CHANNEL_STATE READY.

READY is zero because the caller's audio starts there: a caller sample ``o`` seconds into the caller's audio was
spoken at session time ``o``, and the recording's blocks carry session times too, so "caller's first voiced frame →
agent audio stopped at the caller" is a subtraction. ``started_at`` is the wall-clock (epoch) time of zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """``kind`` is one of :data:`KINDS`; ``detail`` holds the event's fields (artifact, task, reason, …)."""

    at: float
    kind: str
    detail: dict[str, Any]


KINDS = (
    "init_sent",
    "init_response",
    "ready",
    "chunk_received",
    "playback_start",
    "playback_stop",
    "underrun",
    "interruption",
    "text",
    "trace",
    "status",
    "finish",
    "sent",
    "probe_answered",
    "violation",
    "closed",
)


@dataclass
class Timeline:
    started_at: float = 0.0
    events: list[TimelineEvent] = field(default_factory=list)

    def add(self, at: float, kind: str, **detail: Any) -> None:
        self.events.append(TimelineEvent(at, kind, detail))

    def of(self, kind: str) -> list[TimelineEvent]:
        return [e for e in self.events if e.kind == kind]

    def wall_time(self, at: float) -> float:
        return self.started_at + at
