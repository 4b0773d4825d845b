"""Back-off: exponential, bounded, jittered, and reset only by a connection that stays up."""

from __future__ import annotations

from voicebridge.backoff import Backoff


def test_delays_double_up_to_the_cap() -> None:
    backoff = Backoff(base_s=0.1, cap_s=1.0, rng=lambda: 1.0)
    assert [round(backoff.failure(0.0), 3) for _ in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


def test_full_jitter_draws_anywhere_below_the_ceiling() -> None:
    backoff = Backoff(base_s=0.1, cap_s=1.0, rng=lambda: 0.25)
    backoff.failure(0.0)
    assert backoff.failure(0.0) == 0.25 * 0.2


def test_a_connection_lost_at_once_does_not_reset_the_count() -> None:
    backoff = Backoff(base_s=0.1, cap_s=10.0, stable_s=10.0, rng=lambda: 1.0)
    delays = []
    now = 0.0
    for _ in range(5):
        delays.append(backoff.failure(now))
        now += delays[-1]
        backoff.success(now)
        now += 0.05
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.6]


def test_a_connection_that_stayed_up_resets_the_count() -> None:
    backoff = Backoff(base_s=0.1, cap_s=10.0, stable_s=10.0, rng=lambda: 1.0)
    for _ in range(4):
        backoff.failure(0.0)
    backoff.success(1.0)
    assert backoff.failure(11.0) == 0.1


def test_without_a_stability_window_a_success_resets_at_once() -> None:
    backoff = Backoff(base_s=0.1, cap_s=10.0, rng=lambda: 1.0)
    backoff.failure(0.0)
    backoff.failure(0.0)
    backoff.success(0.0)
    assert backoff.ceiling == 0.0 and backoff.failure(0.0) == 0.1
