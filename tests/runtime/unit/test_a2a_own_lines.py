"""The streaming agent's own lines (greeting, re-prompt, goodbye) end their response whatever becomes of the
sentence: a response never ended keeps every later one, every reply, from being heard."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast

import pytest

from tests.fixtures.metrics import NamedMetrics
from voicebridge.a2a.output import Player, Response
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings
from voicebridge.config import Settings
from voicebridge.errors import ConfigurationError, ModelUnavailable

SETTINGS = StreamSettings.of(Settings.from_env({}))


class Voice:
    """Sonic's voice for the session: fails as told, or speaks a little audio."""

    def __init__(self, failure: Exception | None) -> None:
        self.failure = failure

    def say(self, text: str, player: Player, response: Response, *, deadline: float, stop: Any) -> Any:
        if self.failure is not None:
            raise self.failure
        player.push(response, b"\x00\x00" * 80)
        return type("Said", (), {"first_byte_at": time.time(), "synthesis_ms": 1.0, "sent": 160})()


@pytest.mark.parametrize(
    ("failure", "failed", "counted"),
    [
        (None, None, []),
        (ModelUnavailable("Sonic is down"), 424, []),
        (ConfigurationError("no endpoint named"), 500, ["StreamingErrors"]),
        (RuntimeError("a slip"), 500, ["StreamingErrors"]),
    ],
)
def test_an_own_line_ends_its_response_and_says_why_it_failed(
    failure: Exception | None, failed: int | None, counted: list[str]
) -> None:
    metrics = NamedMetrics()

    async def call() -> tuple[Any, Response]:
        async def send(frame: str) -> None:
            pass

        session = AgentSession(cast(Engine, object()), SETTINGS, send, sink=metrics)
        session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        session._voice = cast(Any, Voice(failure))
        session._say("Hello! How can I help you today?")
        (task,) = session._tasks
        deadline = time.monotonic() + 5
        while not task.ended and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return task, task.response

    task, response = asyncio.run(call())

    assert task.ended and response.ended
    assert (task.failed[0] if task.failed else None) == failed
    assert metrics.names == counted
