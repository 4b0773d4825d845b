"""The caller's audio on a streaming session: the server's one event loop reads every session's frames, so it only
hands each to the session's listener thread; the voice detectors (barge-in's and the transcriber's) hear it there."""

from __future__ import annotations

import asyncio
import threading
from typing import cast

from voicebridge.a2a.session import AgentSession, Engine, StreamSettings
from voicebridge.config import Settings
from voicebridge.ink.transcriber import MetricSink

ONE_SECOND = bytes(range(256)) * 62 + bytes(128)
"""A second of 8 kHz s16le audio that is not silence."""


def test_caller_audio_read_on_the_event_loop_is_queued_for_the_listener_unjudged() -> None:
    async def read_a_frame() -> AgentSession:
        async def send(frame: str) -> None:
            pass

        engine = cast(Engine, type("Engine", (), {})())
        session = AgentSession(
            engine, StreamSettings.of(Settings.from_env({})), send, sink=MetricSink(threading.Lock())
        )
        session._caller_audio(ONE_SECOND)
        return session

    session = asyncio.run(read_a_frame())

    assert session._audio.get_nowait() == ONE_SECOND
    assert session._barge.position_ms == 0
