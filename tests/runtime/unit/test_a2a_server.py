"""The agent server's own health figures, on a loopback port with no session; how it reads a socket's frames."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import cast

import pytest
from websockets.asyncio.server import ServerConnection

from voicebridge.a2a.auth import ApiKeys
from voicebridge.a2a.server import LAG_EVERY_S, AgentServer, _frames
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


# -- reading a socket's frames


class Socket:
    """A connection holding frames already received; reading past them waits until cancelled."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = deque(frames)

    async def recv(self) -> str:
        if not self.frames:
            await asyncio.get_running_loop().create_future()
        return self.frames.popleft()


async def ends(session_end: asyncio.Event) -> None:
    """A session's end, as the server waits for it."""
    await session_end.wait()


def test_frames_already_received_are_read_one_after_another_without_a_turn_of_the_event_loop() -> None:
    async def turns_while_reading() -> tuple[list[str], int]:
        turns = 0

        async def count_turns() -> None:
            nonlocal turns
            while True:
                await asyncio.sleep(0)
                turns += 1

        counter = asyncio.create_task(count_turns())
        never = asyncio.create_task(ends(asyncio.Event()))
        await asyncio.sleep(0)
        got: list[str] = []
        before = turns
        frames = _frames(cast(ServerConnection, Socket([f"frame {n}" for n in range(10)])), never)
        while len(got) < 10:
            got.append(await anext(frames))
        read_in = turns - before
        await frames.aclose()
        counter.cancel()
        never.cancel()
        return got, read_in

    got, turns = asyncio.run(turns_while_reading())

    assert got == [f"frame {n}" for n in range(10)]
    assert turns == 0


def test_a_session_that_finishes_ends_a_read_waiting_for_the_next_frame_and_leaves_its_task_uncancelled() -> None:
    async def read_until_finished() -> tuple[list[str], int]:
        ended = asyncio.Event()
        finished = asyncio.create_task(ends(ended))
        got: list[str] = []
        async for frame in _frames(cast(ServerConnection, Socket(["the last frame"])), finished):
            got.append(frame)
            ended.set()
        task = asyncio.current_task()
        assert task is not None
        return got, task.cancelling()

    assert asyncio.run(asyncio.wait_for(read_until_finished(), 5)) == (["the last frame"], 0)


def test_a_read_cancelled_while_the_session_goes_on_is_cancelled() -> None:
    async def cancel_a_read() -> None:
        never = asyncio.create_task(ends(asyncio.Event()))

        async def read_all() -> None:
            async for _ in _frames(cast(ServerConnection, Socket([])), never):
                pass

        reading = asyncio.create_task(read_all())
        await asyncio.sleep(0.01)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading
        never.cancel()

    asyncio.run(cancel_a_read())
