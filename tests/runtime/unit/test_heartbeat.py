"""The consumer's own thread, on a clock the test moves: keep-alives every frame, the heartbeat every few seconds,
and a newer owner found by the heartbeat stops the consumer."""

from __future__ import annotations

import threading
from typing import Any

from tests.fixtures.clock import ManualClock
from voicebridge.call.heartbeat import Heartbeat
from voicebridge.errors import Superseded
from voicebridge.ink.transcriber import MetricSink
from voicebridge.store.turns import RENEW_S


class Track:
    def __init__(self) -> None:
        self.keepalives: list[float] = []

    def keepalive(self, idle_ms: float) -> None:
        self.keepalives.append(idle_ms)


class Store:
    """Records each beat; the ``beats``-th one finds a newer consumer, or stops the test's consumer."""

    def __init__(self, stop: threading.Event, *, beats: int, superseded: bool) -> None:
        self.stop = stop
        self.beats: list[tuple[str, str]] = []
        self._limit = beats
        self._superseded = superseded

    def heartbeat(self, checkpoint: Any, state: str, reason: str = "", *, tracks: Any = None) -> None:
        self.beats.append((state, reason))
        if len(self.beats) >= self._limit:
            self.stop.set()
            if self._superseded:
                raise Superseded("a newer consumer owns the contact")


def beat(*, beats: int, superseded: bool = False) -> tuple[Store, list[Track], threading.Event]:
    stop, newer = threading.Event(), threading.Event()
    clock = ManualClock()
    store = Store(stop, beats=beats, superseded=superseded)
    tracks = [Track(), Track()]
    heart = Heartbeat(
        object(),  # type: ignore[arg-type]
        store,  # type: ignore[arg-type]
        lambda: tracks,  # type: ignore[arg-type,return-value]
        frame_ms=100,
        stop=stop,
        superseded=newer,
        state=lambda: ("listening", ""),
        sink=MetricSink(threading.Lock()),
        clock=clock,
    )
    heart.start()
    heart.join(5.0)
    return store, tracks, newer


def test_every_track_is_kept_alive_each_frame_and_the_heart_beats_every_few_seconds() -> None:
    store, tracks, newer = beat(beats=2)
    assert store.beats == [("listening", "")] * 2
    frames = round(2 * RENEW_S / 0.1)
    assert all(abs(len(track.keepalives) - frames) <= 1 for track in tracks)
    # Only a real stall earns silence: at least a second, whatever the frame.
    assert all(idle == 1000 for track in tracks for idle in track.keepalives)
    assert not newer.is_set()


def test_a_heartbeat_that_finds_a_newer_owner_says_so() -> None:
    store, _, newer = beat(beats=1, superseded=True)
    assert len(store.beats) == 1 and newer.is_set()
