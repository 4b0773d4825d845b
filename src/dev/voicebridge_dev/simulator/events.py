"""What happened during a simulated call, in order: the log the timeline, recording and report are made from.

Times are seconds of the call (see :mod:`voicebridge_dev.simulator.clock`). Listeners (the live timeline on
the terminal) see each event as it is recorded, from whichever thread records it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

__all__ = [
    "BOT",
    "CALLER",
    "ActionRun",
    "CallEnded",
    "CallEvent",
    "CallLog",
    "EndReason",
    "LambdaCall",
    "LambdaOutcome",
    "Noted",
    "Segment",
    "SegmentKind",
    "SpeechStarted",
    "StreamingChanged",
    "Track",
    "sound_span",
]

Track = Literal["caller", "bot"]
CALLER: Track = "caller"
BOT: Track = "bot"

SegmentKind = Literal["speech", "dtmf", "prompt", "connect-voice", "hold"]

SOUND_DBFS = -50.0
"""A 10 ms block whose peak is above this level holds sound (a recording's quiet lead-in and tail do not)."""


def sound_span(samples: npt.NDArray[np.int16], rate: int) -> tuple[float, float]:
    """Where the sound in ``samples`` begins and ends, in seconds from their start: the simulator's truth of when a
    party started and stopped speaking (a clip's quiet lead-in and tail left out); the whole span if all is quiet."""
    block = rate // 100
    whole = samples.size - samples.size % block
    if whole == 0:
        return 0.0, samples.size / rate
    peaks = np.abs(samples[:whole].astype(np.int32)).reshape(-1, block).max(axis=1)
    loud = np.flatnonzero(peaks > 32768 * 10 ** (SOUND_DBFS / 20))
    if loud.size == 0:
        return 0.0, samples.size / rate
    return float(loud[0] * block / rate), float((loud[-1] + 1) * block / rate)


LambdaOutcome = Literal["ok", "error", "timeout", "invalid-response", "budget-exhausted", "abandoned"]
EndReason = Literal["disconnected", "transferred", "ended", "caller hung up", "error"]


@dataclass(eq=False)
class Segment:
    """Audio one party sends, from ``start`` for ``samples`` (8 kHz int16), cut short at ``end`` if need be.

    ``kind``: the caller's ``speech`` or ``dtmf`` (keys pressed, as their tones); the bot's ``prompt`` (a WAV from
    S3), ``connect-voice`` (Connect's own text-to-speech, here a local stand-in) or ``hold`` (silence played by the
    flow).
    """

    track: Track
    start: float
    samples: npt.NDArray[np.int16]
    kind: SegmentKind
    text: str | None = None
    uri: str | None = None
    clip: str | None = None
    action: str | None = None
    rate: int = 8000
    end: float = field(init=False)

    def __post_init__(self) -> None:
        self.end = self.start + self.samples.size / self.rate

    @property
    def duration(self) -> float:
        return self.end - self.start

    @functools.cached_property
    def _sound(self) -> tuple[float, float]:
        """Where its samples' sound is (:func:`sound_span`), found once: the samples never change, the end may."""
        return sound_span(self.samples, self.rate)

    @property
    def sound_start(self) -> float:
        """When the sound in it begins (:func:`sound_span`)."""
        return min(self.end, self.start + self._sound[0])

    @property
    def sound_end(self) -> float:
        """When the sound in it ends, or where it was cut short (:func:`sound_span`)."""
        return min(self.end, self.start + self._sound[1])


@dataclass(frozen=True)
class ActionRun:
    """The flow ran an action; ``outcome`` is the branch it took (a condition, an error type, or ``next``)."""

    at: float
    identifier: str
    type: str
    outcome: str
    next_action: str | None
    flow: str = ""
    """The name of the flow the action is in (its export's, or its file's once the call moved to another flow)."""
    why: str | None = None
    """Why the action took an error branch (the value, the missing flow or file, the service not here)."""


@dataclass(frozen=True)
class LambdaCall:
    """An Invoke-Lambda block's call, from the invocation to the answer the flow acted on."""

    action: str
    function: str
    start: float
    end: float
    parameters: dict[str, str]
    outcome: LambdaOutcome
    response: dict[str, Any] | None = None
    error: str | None = None

    @property
    def duration(self) -> float:
        return self.end - self.start

    @property
    def at(self) -> float:
        """When the flow had the answer (or gave up on it)."""
        return self.end

    @property
    def result(self) -> str | None:
        """The response's ``Result`` key, which every function of this project sets."""
        if self.response is None:
            return None
        value = self.response.get("Result")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class SpeechStarted:
    """A party started sending audio (recorded when the call's media reaches it)."""

    segment: Segment

    @property
    def at(self) -> float:
        return self.segment.start


@dataclass(frozen=True)
class StreamingChanged:
    """Media streaming to Kinesis Video Streams started or stopped."""

    at: float
    enabled: bool
    stream_arn: str
    fragment_number: str | None


@dataclass(frozen=True)
class CallEnded:
    at: float
    reason: EndReason
    detail: str | None = None


@dataclass(frozen=True)
class Noted:
    """What the report keeps of an action beyond its branch: a recorded stand-in's parameters, a view shown, a Lex
    bot's turn, a flow or module entered (``type`` is the action's; ``detail`` says what)."""

    at: float
    identifier: str
    type: str
    detail: dict[str, Any]


CallEvent = ActionRun | LambdaCall | SpeechStarted | StreamingChanged | CallEnded | Noted


class CallLog:
    """The events of one call, in the order they were recorded."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[CallEvent] = []
        self._listeners: list[Callable[[CallEvent], None]] = []

    def subscribe(self, listener: Callable[[CallEvent], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def record(self, event: CallEvent) -> None:
        # Listeners run under the lock so that every one of them sees the events in the log's order.
        with self._lock:
            self._events.append(event)
            for listener in self._listeners:
                listener(event)

    @property
    def events(self) -> list[CallEvent]:
        with self._lock:
            return list(self._events)
