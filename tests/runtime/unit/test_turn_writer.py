"""Turn writes: queued off Ink's thread, in order, retried until stored, and reported lost only when given up."""

from __future__ import annotations

import threading

from tests.fixtures.clock import ManualClock
from voicebridge.backoff import Backoff
from voicebridge.errors import StorageError
from voicebridge.store.turns import Turn
from voicebridge.store.writer import TurnWriter, Written


class FlakyStore:
    """Refuses the first ``failures`` puts, then stores; a key stored before is a replay."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.keys: list[str] = []
        self.attempts = 0

    def put_turn(self, turn: Turn) -> bool:
        self.attempts += 1
        if self.failures > 0:
            self.failures -= 1
            raise StorageError("turn table put_item failed (ProvisionedThroughputExceededException)")
        if turn.key in self.keys:
            return False
        self.keys.append(turn.key)
        return True


def turn(seq: int) -> Turn:
    return Turn("c1", "customer", seq, f"turn {seq}", 0, 0, 0)


def writer(store: FlakyStore) -> tuple[TurnWriter, list[tuple[int, Written]]]:
    done: list[tuple[int, Written]] = []
    lock = threading.Lock()

    def on_done(t: Turn, outcome: Written) -> None:
        with lock:
            done.append((t.seq, outcome))

    backoff = Backoff(base_s=0.05, cap_s=2.0, rng=lambda: 1.0)
    return TurnWriter(store, on_done=on_done, clock=ManualClock(), backoff=backoff), done  # type: ignore[arg-type]


def test_a_throttled_turn_is_retried_until_it_is_stored() -> None:
    store = FlakyStore(failures=6)
    w, done = writer(store)
    w.put(turn(0))
    assert w.drain(timeout_s=5)
    assert done == [(0, Written.STORED)] and store.attempts == 7


def test_turns_are_written_in_the_order_they_ended() -> None:
    store = FlakyStore(failures=3)
    w, _ = writer(store)
    for seq in range(4):
        w.put(turn(seq))
    assert w.drain(timeout_s=5)
    assert store.keys == [turn(seq).key for seq in range(4)]


def test_a_turn_stored_before_is_reported_as_a_replay() -> None:
    store = FlakyStore(failures=0)
    w, done = writer(store)
    w.put(turn(0))
    w.put(turn(0))
    assert w.drain(timeout_s=5)
    assert done == [(0, Written.STORED), (0, Written.REPLAY)]


def test_a_turn_refused_past_the_closing_deadline_is_reported_lost_not_as_a_replay() -> None:
    store = FlakyStore(failures=10**6)
    w, done = writer(store)
    w.put(turn(0))
    w.close(timeout_s=3.0)
    assert done == [(0, Written.LOST)]
