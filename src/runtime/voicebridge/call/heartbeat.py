"""The consumer's own thread: keep-alive silence when the source stalls, the heartbeat, the minute's metrics.

While the consumer reads GetMedia, this thread wakes every Ink frame: it lets each track send what its pace allows
and, when nothing has been sent for a while (the source stalled: GetMedia delivers with jitter, so only a real
stall counts), silence, which keeps the Ink session alive and lets a turn in progress end; every few seconds it beats
the checkpoint's heart, so a dead consumer can be told from a live one (a beat refused because a newer consumer owns
the contact sets ``superseded``); and every minute it publishes the metrics, so a long call counts as active in each
minute it is read. A ConfigurationError while sending (Ink refused the deployment's model) is handed to
``refused``, for the consumer to stop on; any other failure is logged, and the next frame tries again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.clock import Clock
from voicebridge.errors import ConfigurationError, VoiceBridgeError
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber
from voicebridge.store.turns import RENEW_S, Checkpoint, Lease, TurnStore
from voicebridge.telemetry import in_context, logger, metrics

KEEPALIVE_AFTER_MS = 1000
METRICS_EVERY_S = 60.0


class Heartbeat:
    """The consumer's thread of its own, from :meth:`start` until ``stop`` is set; ``transcribers`` gives the call's
    tracks as they are now (the consumer makes them after the thread exists)."""

    def __init__(
        self,
        checkpoint: Checkpoint,
        store: TurnStore,
        transcribers: Callable[[], Iterable[TrackTranscriber]],
        *,
        frame_ms: int,
        stop: threading.Event,
        superseded: threading.Event,
        state: Callable[[], tuple[str, str]],
        sink: MetricSink,
        clock: Clock,
        refused: Callable[[ConfigurationError], None] = lambda error: None,
    ) -> None:
        self._lease = Lease(store, checkpoint, superseded)
        self._transcribers = transcribers
        self._frame_ms = frame_ms
        self._stop = stop
        self._state = state
        self._sink = sink
        self._clock = clock
        self._refused = refused
        self._thread = threading.Thread(target=in_context(self._run), name="consumer-tick", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        # GetMedia delivers with jitter; only a real stall (not a late block mid-utterance) earns silence.
        idle_ms = max(KEEPALIVE_AFTER_MS, self._frame_ms * 2)
        next_beat = self._clock.monotonic() + RENEW_S
        next_metrics = self._clock.monotonic() + METRICS_EVERY_S
        while not self._clock.wait(self._stop, self._frame_ms / 1000):
            for transcriber in self._transcribers():
                try:
                    transcriber.keepalive(idle_ms)
                except ConfigurationError as exc:
                    self._refused(exc)
                except VoiceBridgeError as exc:
                    logger.warning("keep-alive failed", reason=exc.safe_message)
            if self._clock.monotonic() >= next_beat and not self._stop.is_set():
                next_beat = self._clock.monotonic() + RENEW_S
                self._lease.renew(*self._state())
            if self._clock.monotonic() >= next_metrics:
                # Long calls publish as they go: a stream counts as active in every minute it is read.
                next_metrics = self._clock.monotonic() + METRICS_EVERY_S
                self._sink.add("ActiveStreams", MetricUnit.Count, 1)
                with self._sink.lock:
                    metrics.flush_metrics()
