"""A reply cut short at the end of a caller's turn (on Ink's thread) is told to Connect (``INTERRUPTION``) before its
task ends: a task's terminal status before it would leave its artifact open, never given ``lastChunk``."""

from __future__ import annotations

import asyncio
import json
import time
from types import SimpleNamespace
from typing import Any, cast

from tests.fixtures.a2a_session import Reply, Turn
from tests.fixtures.metrics import NamedMetrics
from voicebridge.a2a.output import Player
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings
from voicebridge.config import Settings

SETTINGS = StreamSettings.of(Settings.from_env({}))


class Worker:
    def turn_ended(self, turn: Any) -> None:
        pass


def test_the_interruption_goes_out_before_the_cut_replys_terminal_status_whenever_the_ticker_looks() -> None:
    sent: list[str] = []

    async def run() -> None:
        async def send(frame: str) -> None:
            sent.append(frame)

        session = AgentSession(cast(Engine, object()), SETTINGS, send, sink=NamedMetrics())
        session.init = cast(Any, SimpleNamespace(context_id="ctx", tracing=False, finish_types=("COMPLETE",)))
        player = session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        session._worker = cast(Any, Worker())
        task = session._task_for(cast(Any, Reply(4)), "reply")
        player.push(task.response, b"\x00\x00" * 1600)
        for frame in player.due(time.monotonic()):
            sent.append(frame)
        # Turn 5 ends while the reply is heard (on Ink's thread in a call); the ticker looks before the loop has run
        # the coroutine that tells Connect.
        session._turn_ended(cast(Any, Turn(5)))
        await session._end_tasks(time.monotonic())
        await asyncio.sleep(0.05)
        await session._end_tasks(time.monotonic())

    asyncio.run(run())

    kinds = [
        "interruption" if "INTERRUPTION" in frame else "status" if "TASK_STATE_" in frame else "chunk" for frame in sent
    ]
    assert "interruption" in kinds and "status" in kinds, kinds
    assert kinds.index("interruption") < kinds.index("status"), kinds
    assert all(json.loads(frame) for frame in sent)
