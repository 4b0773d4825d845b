"""The caller's audio on a streaming session: the server's one event loop reads every session's frames, so it only
hands each to the session's listener thread; there one voice detector judges each frame for both barge-in and the
transcriber's turns."""

from __future__ import annotations

import asyncio
import threading
from typing import cast

import numpy as np
import numpy.typing as npt
import pytest

from tests.fixtures.tracks import MemoryStore
from voicebridge.a2a.output import Player
from voicebridge.a2a.protocol import InitSession
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings
from voicebridge.audio.silero import SileroDetector
from voicebridge.config import Settings
from voicebridge.errors import InkUnavailable
from voicebridge.ink.session import InkSession
from voicebridge.ink.transcriber import MetricSink
from voicebridge.store.turns import Claim

ONE_SECOND = bytes(range(256)) * 62 + bytes(128)
"""A second of 8 kHz s16le audio that is not silence."""


def quiet_engine() -> Engine:
    """An engine whose Ink is never reached and whose voice says nothing: enough to start a session's engine."""

    def no_ink(*args: object) -> InkSession:
        raise InkUnavailable("not in this test: the caller's audio is judged before it is sent")

    responder = type("Responder", (), {"name": "none"})()
    return cast(
        Engine,
        type(
            "Engine",
            (),
            {
                "store": MemoryStore(),
                "replies": None,
                "open_ink": staticmethod(no_ink),
                "responder": staticmethod(lambda: responder),
                "voice": staticmethod(lambda rate, language: None),
                "contact_language": staticmethod(lambda instance, contact: None),
            },
        )(),
    )


CONTACT = "arn:aws:connect:us-east-1:111122223333:instance/i/contact/c"
INIT = InitSession("init", "ctx", "arn:i", CONTACT, ("COMPLETE",), False, None, None)


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


def test_each_caller_frame_is_scored_once_for_barge_in_and_the_transcribers_turns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scored: list[int] = []
    score = SileroDetector._score

    def counted(detector: SileroDetector, window: npt.NDArray[np.float32], start: int) -> None:
        scored.append(start)
        score(detector, window, start)

    monkeypatch.setattr(SileroDetector, "_score", counted)

    engine = quiet_engine()
    init = INIT

    async def listen() -> None:
        async def send(frame: str) -> None:
            pass

        session = AgentSession(
            engine, StreamSettings.of(Settings.from_env({})), send, sink=MetricSink(threading.Lock())
        )
        monkeypatch.setattr(session, "_claim", lambda init, language: (Claim.CLAIMED, 1, None))
        await asyncio.to_thread(session._start_engine, init, 8000)
        session._caller_audio(ONE_SECOND)
        session._audio.put(None)
        assert session._listener is not None and session._worker is not None
        await asyncio.to_thread(session._listener.join, 30)
        session._worker.close(timeout_s=1)

    asyncio.run(listen())

    # Silero scores 256-sample windows: the second's 31 whole ones, each once (not once per detector).
    assert scored == [window * 256 for window in range(len(ONE_SECOND) // 2 // 256)]


def test_frames_queued_behind_the_listener_are_taken_in_one_piece() -> None:
    async def queued() -> AgentSession:
        async def send(frame: str) -> None:
            pass

        session = AgentSession(
            quiet_engine(), StreamSettings.of(Settings.from_env({})), send, sink=MetricSink(threading.Lock())
        )
        for frame in (b"\x01\x00" * 80, b"\x02\x00" * 80):
            session._caller_audio(frame)
        session._audio.put(None)
        return session

    session = asyncio.run(queued())
    first = session._audio.get_nowait()
    assert first is not None
    assert session._queued_after(first) == (b"\x01\x00" * 80 + b"\x02\x00" * 80, True)


def test_an_idle_agent_does_not_wake_the_event_loop_every_tick_and_a_turns_task_wakes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked: list[float] = []
    due = Player.due

    def counted(player: Player, now: float) -> list[str]:
        looked.append(now)
        return due(player, now)

    monkeypatch.setattr(Player, "due", counted)

    async def idle_then_speak() -> tuple[int, int]:
        async def send(frame: str) -> None:
            pass

        session = AgentSession(
            quiet_engine(), StreamSettings.of(Settings.from_env({})), send, sink=MetricSink(threading.Lock())
        )
        monkeypatch.setattr(session, "_claim", lambda init, language: (Claim.CLAIMED, 1, None))
        await asyncio.to_thread(session._start_engine, INIT, 8000)
        ticker = asyncio.get_running_loop().create_task(session._tick())
        await asyncio.sleep(0.3)
        idle = len(looked)
        # A turn's task begins on a thread that makes audio: the ticker wakes for it.
        await asyncio.to_thread(session._task_for, None, "prompt")
        await asyncio.sleep(0.1)
        woken = len(looked) - idle
        ticker.cancel()
        session._audio.put(None)
        assert session._worker is not None
        session._worker.close(timeout_s=1)
        return idle, woken

    idle, woken = asyncio.run(idle_then_speak())
    # 0.3 s at a 10 ms tick would be about thirty looks.
    assert idle <= 2
    assert woken >= 1
