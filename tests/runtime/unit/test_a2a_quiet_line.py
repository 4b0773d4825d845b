"""The streaming agent's ear on the line: a reply slow in coming gets one holding line ("One moment."), and after
``A2A_SILENCE_MS`` with nobody speaking and nothing on its way it asks whether anyone is there, then says goodbye;
Connect's silence marker counts the same, only on a quiet line."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

import pytest

from tests.fixtures.a2a_session import Reply, Turn
from tests.fixtures.metrics import NamedMetrics
from voicebridge.a2a import session as sessions
from voicebridge.a2a.output import Player
from voicebridge.a2a.protocol import EMPTY_USER_INPUT, TextIn
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings
from voicebridge.config import Settings
from voicebridge.errors import ConfigurationError

SETTINGS = StreamSettings.of(Settings.from_env({}))
QUIET_S = 0.1
LOOK_S = 0.02


@dataclass
class Worker:
    """What the session asks of its reply worker here: whether a reply is being made."""

    making: bool = False
    ended: list[int] = field(default_factory=list)

    def turn_ended(self, turn: Any) -> None:
        self.ended.append(turn.seq)


class Line:
    """A session on a line nobody speaks on, its own lines written down instead of said."""

    def __init__(self, settings: StreamSettings = SETTINGS) -> None:
        async def send(frame: str) -> None:
            pass

        self.session = AgentSession(cast(Engine, object()), settings, send, sink=NamedMetrics())
        self.session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        self.worker = Worker()
        self.session._worker = cast(Any, self.worker)
        self.said: list[tuple[str, tuple[str, str] | None]] = []
        self.said_at: list[float] = []
        self.session._say = self._say  # type: ignore[method-assign]

    def _say(self, text: str, *, finish: tuple[str, str] | None = None, asked: str = "") -> None:
        self.said.append((text, finish))
        self.said_at.append(time.monotonic())


def on_a_line(
    check: Callable[[Line], Awaitable[None]], silence_s: float = QUIET_S, settings: StreamSettings = SETTINGS
) -> Line:
    async def run() -> Line:
        line = Line(settings)
        watch = asyncio.get_running_loop().create_task(line.session._watch_line(silence_s))
        try:
            await check(line)
        finally:
            watch.cancel()
        return line

    return asyncio.run(run())


async def until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        await asyncio.sleep(0.01)


@pytest.fixture(autouse=True)
def looks_often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sessions, "LINE_LOOK_S", LOOK_S)


def test_a_quiet_line_is_asked_about_once_then_told_goodbye() -> None:
    started = time.monotonic()

    async def check(line: Line) -> None:
        await until(lambda: len(line.said) == 2)

    line = on_a_line(check)

    assert line.said == [
        (SETTINGS.lines.reprompt, None),
        (SETTINGS.lines.goodbye, ("COMPLETE", "the caller said nothing")),
    ]
    # Each after a whole silence, never sooner.
    assert line.said_at[0] - started >= QUIET_S and line.said_at[1] - line.said_at[0] >= QUIET_S


@pytest.mark.parametrize("busy", ["caller mid-turn", "reply being made", "agent speaking"])
def test_nothing_is_asked_while_anyone_speaks_or_a_reply_is_on_its_way_and_the_count_starts_again_after(
    busy: str,
) -> None:
    async def check(line: Line) -> None:
        session = line.session
        if busy == "caller mid-turn":
            session._caller_turn = 3
        elif busy == "reply being made":
            line.worker.making = True
        else:
            session._player.open("task", waits=lambda: False)  # type: ignore[union-attr]
        await asyncio.sleep(QUIET_S * 3)
        assert line.said == []
        session._caller_turn, line.worker.making = None, False
        session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        over = time.monotonic()
        await until(lambda: bool(line.said))
        # Counted from the watch's last look at the busy line, at most a look before it went quiet.
        assert time.monotonic() - over >= QUIET_S - LOOK_S

    line = on_a_line(check)

    assert line.said[0] == (SETTINGS.lines.reprompt, None)


def test_connects_silence_marker_counts_only_on_a_quiet_line() -> None:
    async def check(line: Line) -> None:
        line.worker.making = True
        await line.session._text(TextIn(EMPTY_USER_INPUT))
        assert line.said == []
        line.worker.making = False
        await line.session._text(TextIn(EMPTY_USER_INPUT))
        assert line.said == [(SETTINGS.lines.reprompt, None)]

    on_a_line(check)


def test_the_agents_own_watch_can_be_turned_off_and_a_silence_too_short_to_wait_is_refused() -> None:
    assert StreamSettings.of(Settings.from_env({"A2A_SILENCE_MS": "0"})).silence_ms == 0
    assert StreamSettings.of(Settings.from_env({"A2A_SILENCE_MS": "9000"})).silence_ms == 9000
    with pytest.raises(ConfigurationError, match="A2A_SILENCE_MS"):
        Settings.from_env({"A2A_SILENCE_MS": "500"})


HOLD = replace(SETTINGS, hold_after_ms=100)
"""The holding line after 0.1 s (CONVERSE_HOLD_AFTER_MS, 4 s by default)."""


def test_a_reply_slow_in_coming_gets_one_holding_line_once_the_hold_time_has_passed() -> None:
    ended = time.monotonic()

    async def check(line: Line) -> None:
        line.worker.making = True
        line.session._turn_ended(cast(Any, Turn(3)))
        await until(lambda: bool(line.said))
        await asyncio.sleep(HOLD.hold_after_ms / 1000 * 3)

    line = on_a_line(check, silence_s=0, settings=HOLD)

    # Once a turn, never before the hold time.
    assert line.said == [(HOLD.lines.hold, None)] and line.worker.ended == [3]
    assert line.said_at[0] - ended >= HOLD.hold_after_ms / 1000


def test_no_holding_line_for_a_reply_that_begins_in_time_or_began_before_its_turn_ended() -> None:
    async def check(line: Line) -> None:
        session = line.session
        session._turn_ended(cast(Any, Turn(3)))
        # The reply's first sentence is being spoken (its task opens), then has all been heard (its task is gone).
        session._forget(session._task_for(cast(Any, Reply(3)), "reply"))
        # A speculation's first sentence was spoken before the turn it answers ended.
        session._forget(session._task_for(cast(Any, Reply(4)), "reply"))
        speculated = session._task_for(cast(Any, Reply(4)), "reply")
        session._turn_ended(cast(Any, Turn(4)))
        session._forget(speculated)
        # Nothing left playing or waiting: only the turns' own state could make a holding line now.
        session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        await asyncio.sleep(HOLD.hold_after_ms / 1000 * 3)

    line = on_a_line(check, silence_s=0, settings=HOLD)

    assert line.said == []


def test_no_holding_line_over_a_caller_mid_turn() -> None:
    async def check(line: Line) -> None:
        line.session._caller_turn = 4
        line.session._turn_ended(cast(Any, Turn(3)))
        await asyncio.sleep(HOLD.hold_after_ms / 1000 * 3)
        assert line.said == []
        line.session._caller_turn = None
        await until(lambda: bool(line.said))

    line = on_a_line(check, silence_s=0, settings=HOLD)

    assert line.said == [(HOLD.lines.hold, None)]


def test_a_contacts_own_lines_are_its_languages_with_the_deployments_for_any_line_not_given() -> None:
    spanish = {"es": {"greeting": "¡Hola!", "hold": "Un momento."}, "es-MX": {"greeting": "¡Qué tal!"}}
    settings = StreamSettings.of(Settings.from_env({"A2A_LINES": json.dumps(spanish)}))

    assert settings.lines_in("es-US") == replace(SETTINGS.lines, greeting="¡Hola!", hold="Un momento.")
    assert settings.lines_in("es-MX") == replace(SETTINGS.lines, greeting="¡Qué tal!", hold="Un momento.")
    assert settings.lines_in("fr") == settings.lines_in("en-US") == SETTINGS.lines
