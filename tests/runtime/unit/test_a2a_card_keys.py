"""Keys for a card never reach the streaming agent's responder, turn table or logs: once a reply asked for the card on
the keypad, or when the keys form a card number, they are dropped and the caller handed back for a person to take
it; other keys are a turn."""

from __future__ import annotations

import asyncio
import threading
import time
from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.fixtures.a2a_session import Turn
from tests.fixtures.metrics import NamedMetrics
from voicebridge.a2a.output import Player
from voicebridge.a2a.protocol import DtmfComplete
from voicebridge.a2a.session import CARD_FINISH, AgentSession, Engine, StreamSettings, card_number_in
from voicebridge.config import Settings
from voicebridge.conversation import Action

SETTINGS = StreamSettings.of(Settings.from_env({}))


@pytest.mark.parametrize(
    ("keys", "card"),
    [
        ("4111111111111111#", True),
        ("4111111111111111", True),
        ("378282246310005#", True),
        ("4111111111111112#", False),
        ("1234#", False),
        ("411111111111#", False),
        ("41111111111111111111#", False),
        ("", False),
    ],
)
def test_keys_that_form_a_card_number_are_told_by_length_and_check_digit(keys: str, card: bool) -> None:
    assert card_number_in(keys) is card


class Keyed:
    """A session's keys: what became a turn, and what the agent said instead."""

    def __init__(self) -> None:
        async def send(frame: str) -> None:
            pass

        self.metrics = NamedMetrics()
        self.session = AgentSession(cast(Engine, object()), SETTINGS, send, sink=self.metrics)
        self.session.init = cast(Any, object())
        self.typed: list[str] = []
        self.said: list[tuple[str, tuple[str, str] | None, str]] = []
        self.session._typed = self.typed.append  # type: ignore[method-assign, assignment]
        self.session._say = self._say  # type: ignore[method-assign]

    def _say(self, text: str, *, finish: tuple[str, str] | None = None, asked: str = "") -> None:
        self.said.append((text, finish, asked))


def pressed(*keys: str, card_asked_by: str | None = None) -> Keyed:
    """A session (one a reply asked for the card in, when ``card_asked_by`` says what the caller asked) given
    ``keys``, one ``DTMF_INPUT_COMPLETE`` each."""

    async def run() -> Keyed:
        keyed = Keyed()
        if card_asked_by is not None:
            keyed.session._collect_card(card_asked_by)
        for each in keys:
            await keyed.session._dispatch(DtmfComplete(each, "END_CHARACTER"))
        return keyed

    return asyncio.run(run())


def test_other_keys_are_a_turn() -> None:
    keyed = pressed("1234#")
    assert keyed.typed == ["1234#"] and keyed.said == []


def test_a_card_number_typed_unasked_is_dropped_and_the_caller_handed_back() -> None:
    keyed = pressed("4111111111111111#")
    assert keyed.typed == []
    assert keyed.said == [(SETTINGS.lines.card, CARD_FINISH, "")]
    assert keyed.metrics.names == ["CardKeysDropped"]


def test_once_a_reply_asked_for_the_card_every_key_is_dropped_and_the_hand_over_said_again() -> None:
    keyed = pressed("12#", card_asked_by="I want to pay by card")
    assert keyed.typed == []
    assert keyed.said == [(SETTINGS.lines.card, CARD_FINISH, "I want to pay by card")] * 2


def test_a_hand_over_line_the_callers_words_dropped_before_it_was_heard_hands_nobody_over() -> None:
    """The caller spoke as the card hand-over line was about to be said (none of it made yet): their turn is answered,
    and the contact is not handed back."""
    sent: list[str] = []
    handed: list[tuple[str, str]] = []

    async def run() -> AgentSession:
        async def send(frame: str) -> None:
            sent.append(frame)

        session = AgentSession(cast(Engine, object()), SETTINGS, send, sink=NamedMetrics())
        session.init = cast(
            Any, SimpleNamespace(context_id="ctx", tracing=False, finish_types=("COMPLETE", "ESCALATE"))
        )
        player = session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        session._worker = cast(Any, SimpleNamespace(turn_ended=lambda turn: None))
        session._hand_over = lambda task, finish: handed.append(finish)  # type: ignore[method-assign]
        # What _collect_card starts: the line's task, its audio not made yet.
        task = session._task_for(None, "prompt")
        task.finish, session._card_for = CARD_FINISH, "I want to pay by card"
        session._turn_ended(cast(Any, Turn(5)))
        task.ended = True
        player.end(task.response)
        await session._end_tasks(time.monotonic())
        return session

    session = asyncio.run(run())

    assert handed == [] and session.finished is None
    assert [frame for frame in sent if "ESCALATE" in frame] == []


@pytest.mark.parametrize(("over", "handed"), [(None, True), ("keys", True), ("words", False)])
def test_a_reply_asking_for_the_card_hands_over_unless_the_caller_spoke_on_over_it(
    over: str | None, handed: bool
) -> None:
    async def run() -> Keyed:
        keyed = Keyed()
        player = keyed.session._player = Player("ctx", 8000, lead_ms=200, chunk_bytes=320)
        reply = SimpleNamespace(
            seq=3,
            committed=True,
            transcript="I want to pay by card",
            turn=None,
            cancel=threading.Event(),
            responder_started_ms=None,
            finished=(Action.CONTINUE, {"Collect": "card"}),
            spoken=["Please type your card number."],
            heard=None,
        )
        task = keyed.session._task_for(cast(Any, reply), "reply")
        player.push(task.response, b"\x00\x00" * 1600)
        player.due(time.monotonic())
        if over == "keys":
            # Keys pressed over the reply stop it (DTMF_INPUT_COMPLETE, Connect's INTERRUPTION): the card it asked for.
            player.interrupt(time.monotonic())
        elif over == "words":
            keyed.session._worker = cast(Any, SimpleNamespace(turn_ended=lambda turn: None))
            keyed.session._turn_ended(cast(Any, Turn(4)))
        keyed.session._reply_finished(cast(Any, reply))
        return keyed

    keyed = asyncio.run(run())

    assert keyed.said == ([(SETTINGS.lines.card, CARD_FINISH, "I want to pay by card")] if handed else [])
