"""The Ink emulator's loop-lag probe: how late the loop serving every session woke, the worst since a reset."""

from __future__ import annotations

import asyncio
import time

from voicebridge_dev.local.ink.server import LoopLag


async def a_loop_held_up(lag: LoopLag, seconds: float) -> None:
    watch = asyncio.create_task(lag.watch())
    await asyncio.sleep(0.1)
    time.sleep(seconds)  # the loop held up, as by a session's work or a busy machine
    await asyncio.sleep(0.1)
    watch.cancel()


def test_a_loop_held_up_shows_at_least_most_of_the_hold_as_its_worst_lag() -> None:
    lag = LoopLag()
    asyncio.run(a_loop_held_up(lag, 0.3))
    assert lag.worst_ms >= 200


def test_a_reset_gives_the_worst_so_far_and_starts_again() -> None:
    lag = LoopLag()
    asyncio.run(a_loop_held_up(lag, 0.3))
    assert lag.reset() >= 200
    assert lag.worst_ms == 0.0
