"""What the Ink emulator keeps for tests to inspect: each session's audio, events and turns, and each handshake.

Sessions are also summarised over HTTP::

    GET    /_emulator/sessions                                                 session summaries
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Literal

from voicebridge_dev.local.ink.audio import BYTES_PER_SAMPLE


@dataclass(frozen=True)
class SentEvent:
    """An event written to a client; ``audio_ms`` is how much audio had been received when it was decided, and
    ``behind_ms`` how far that audio ran behind the session's clock (the time since it opened) when it was sent: a
    client that streams in real time keeps it near zero, so under load it says how late the audio reached the
    emulator's decision, whether the client sent it late or the emulator read it late."""

    type: str
    payload: dict[str, Any]
    audio_ms: float
    behind_ms: float = 0.0


@dataclass
class TurnRecord:
    """One detected turn, in milliseconds of the session's received audio."""

    speech_start_ms: float
    start_ms: float
    speech_end_ms: float | None = None
    end_ms: float | None = None
    transcript: str | None = None


@dataclass(frozen=True)
class HandshakeRecord:
    """One WebSocket handshake attempt and the status it was answered with."""

    path: str
    query: dict[str, str]
    status_code: int
    cartesia_version: str | None


@dataclass(eq=False)
class InkSession:
    """Accounting of one accepted WebSocket session, for tests to inspect.

    ``received_audio`` is the audio the emulator has processed, in order: all that arrived, except a ``delay``
    backlog not yet reached or a message refused for running ahead of real time.
    """

    request_id: str
    endpoint: Literal["turns", "manual"]
    model: str
    encoding: str
    sample_rate: int
    query: dict[str, str]
    cartesia_version: str | None
    keyterms: tuple[str, ...] = ()
    """The ``keyterm`` query parameters, in the order sent."""
    received_audio: bytearray = field(default_factory=bytearray)
    events: list[SentEvent] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    ended_by: str | None = None
    _finished: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def audio_ms(self) -> float:
        return self.ms_of(len(self.received_audio) // BYTES_PER_SAMPLE[self.encoding])

    def ms_of(self, sample: int) -> float:
        return sample * 1000.0 / self.sample_rate

    def events_of(self, event_type: str) -> list[SentEvent]:
        return [event for event in self.events if event.type == event_type]

    def wait_closed(self, timeout: float) -> bool:
        """Wait until the emulator is done with this session; False on timeout."""
        return self._finished.wait(timeout)

    def mark_closed(self) -> None:
        """The emulator is done with this session."""
        self._finished.set()

    def summary(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "endpoint": self.endpoint,
            "model": self.model,
            "encoding": self.encoding,
            "sample_rate": self.sample_rate,
            "cartesia_version": self.cartesia_version,
            "keyterms": list(self.keyterms),
            "received_audio_bytes": len(self.received_audio),
            "events": [{"type": e.type, "audio_ms": e.audio_ms, "behind_ms": e.behind_ms} for e in self.events],
            "turns": [vars(turn) for turn in self.turns],
            "ended_by": self.ended_by,
        }
