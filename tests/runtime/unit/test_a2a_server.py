"""The agent server's own health figures, on a loopback port with no session."""

from __future__ import annotations

import asyncio
import time

from voicebridge.a2a.auth import ApiKeys
from voicebridge.a2a.server import LAG_EVERY_S, AgentServer
from voicebridge.a2a.session import Engine, StreamSettings
from voicebridge.config import Settings

HELD_S = 0.3


def test_an_event_loop_held_busy_is_reported_as_lag_at_least_as_long() -> None:
    def no_engine() -> Engine:
        raise AssertionError("no session is opened")

    server = AgentServer(
        no_engine, StreamSettings.of(Settings.from_env({})), ApiKeys(None, "unused"), host="127.0.0.1", port=0
    )

    async def hold_the_loop() -> float:
        ready = asyncio.Event()
        serving = asyncio.create_task(server.serve(ready=ready))
        await asyncio.wait_for(ready.wait(), 10)
        await asyncio.sleep(0)
        # A session's work done on the loop itself: every other session's frames wait behind it.
        time.sleep(HELD_S)
        await asyncio.sleep(0.1)
        lag = server.loop_lag_ms
        server.stop()
        await asyncio.wait_for(serving, 10)
        return lag

    # The sampler may have begun its sleep just before the loop was held: at most one sampling period is not late.
    assert asyncio.run(hold_the_loop()) >= (HELD_S - LAG_EVERY_S) * 1000
