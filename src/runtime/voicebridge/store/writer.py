"""Turn writes that survive a throttled or unreachable table: queued, retried with back-off, never blocking Ink.

A finished turn is put in order on the writer's own thread, retried with bounded, jittered back-off until it is
stored (or found already stored: a replay) — or until the writer is closed and its last deadline passes, when the
turn is reported lost, loudly, rather than mistaken for a replay::

    writer = TurnWriter(store, on_done=report)
    writer.put(turn)                 # returns at once
    writer.close(timeout_s=5.0)      # waits for the queue to drain, at most this long
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from enum import StrEnum

from voicebridge.backoff import Backoff
from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.errors import StorageError
from voicebridge.store.turns import Turn, TurnStore
from voicebridge.telemetry import in_context, logger


class Written(StrEnum):
    """What became of a turn."""

    STORED = "stored"
    REPLAY = "replay"
    """The same turn was already stored (a replay after a reconnect or a continuation)."""
    LOST = "lost"
    """The table refused it until the writer closed."""


class TurnWriter:
    """Puts turns on a thread of its own, in order, retrying each until it is stored or the writer is closed."""

    def __init__(
        self,
        store: TurnStore,
        *,
        on_done: Callable[[Turn, Written], None],
        clock: Clock = SYSTEM_CLOCK,
        backoff: Backoff | None = None,
        name: str = "turn-writer",
    ) -> None:
        self._store = store
        self._on_done = on_done
        self._clock = clock
        self._backoff = backoff or Backoff(base_s=0.05, cap_s=2.0)
        self._queue: deque[Turn] = deque()
        self._writing = False
        self._wake = threading.Condition()
        self._closing = threading.Event()
        self._give_up_at: float | None = None
        self._thread = threading.Thread(target=in_context(self._run), name=name, daemon=True)
        self._thread.start()

    def put(self, turn: Turn) -> None:
        """Queue ``turn``; it is written after every turn queued before it."""
        with self._wake:
            self._queue.append(turn)
            self._wake.notify()

    @property
    def pending(self) -> int:
        """Turns not yet written, the one being written included."""
        with self._wake:
            return len(self._queue) + self._writing

    def drain(self, *, timeout_s: float) -> bool:
        """Wait until every queued turn is written (or lost); whether that happened within ``timeout_s`` (real
        time: the writer's own thread does the work)."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._queue and not self._writing, timeout_s)

    def close(self, *, timeout_s: float) -> None:
        """Write what is queued, retrying for at most ``timeout_s`` more; report the rest lost."""
        with self._wake:
            self._give_up_at = self._clock.monotonic() + timeout_s
            self._closing.set()
            self._wake.notify()
        self._thread.join(timeout_s + 1.0)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closing.is_set():
                    self._wake.wait()
                if not self._queue:
                    return
                turn = self._queue.popleft()
                self._writing = True
            try:
                self._on_done(turn, self._write(turn))
            finally:
                with self._wake:
                    self._writing = False
                    self._wake.notify_all()

    def _write(self, turn: Turn) -> Written:
        while True:
            try:
                stored = self._store.put_turn(turn)
            except StorageError as exc:
                now = self._clock.monotonic()
                if self._give_up_at is not None and now >= self._give_up_at:
                    return Written.LOST
                delay = self._backoff.failure(now)
                if self._give_up_at is not None:
                    delay = min(delay, max(0.0, self._give_up_at - now))
                logger.warning(
                    "turn write failed; retrying",
                    track=turn.track,
                    seq=turn.seq,
                    reason=exc.safe_message,
                    delay_s=delay,
                )
                self._clock.sleep(delay)
                continue
            self._backoff.success(self._clock.monotonic())
            return Written.STORED if stored else Written.REPLAY
