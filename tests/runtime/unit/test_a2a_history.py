"""A streaming session that continues a conversation it did not start: Connect's ``history`` as the responder's
exchanges, and a redial that waits for the dropped socket's session to stop before it takes the contact over."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from voicebridge.a2a import session as a2a_session
from voicebridge.a2a.protocol import InitSession, Reader
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings, continuation
from voicebridge.config import Settings
from voicebridge.conversation import Exchange
from voicebridge.errors import Superseded
from voicebridge.store.turns import LISTENING, STOPPED, Checkpoint, Claim, TrackProgress


def test_a_history_becomes_exchanges_and_the_callers_last_words_unanswered() -> None:
    history = [
        ("ROLE_AGENT", "Welcome to the bank."),
        ("ROLE_USER", "I lost my card."),
        ("ROLE_AGENT", "I can block it."),
        ("ROLE_USER", "Please do, and send a new one."),
    ]

    exchanges, unanswered = continuation(history)

    assert exchanges == [Exchange("", "Welcome to the bank."), Exchange("I lost my card.", "I can block it.")]
    assert unanswered == "Please do, and send a new one."


def test_a_history_the_agent_ends_leaves_nothing_to_answer() -> None:
    exchanges, unanswered = continuation([("ROLE_USER", "What is my balance?"), ("ROLE_AGENT", "It is 12 dollars.")])

    assert exchanges == [Exchange("What is my balance?", "It is 12 dollars.")]
    assert unanswered == ""


def test_one_sides_messages_in_a_row_are_one_turn_and_unknown_roles_and_empty_texts_are_left_out() -> None:
    history = [
        ("user", "Hello."),
        ("ROLE_USER", "  "),
        ("ROLE_SYSTEM", "routed from the main menu"),
        ("ROLE_USER", "My bill is wrong."),
        ("agent", "Let me look."),
        ("ROLE_AGENT", "It shows a late fee."),
    ]

    assert continuation(history) == ([Exchange("Hello. My bill is wrong.", "Let me look. It shows a late fee.")], "")


def test_an_init_session_carries_its_history_as_roles_and_texts_oldest_first() -> None:
    frame = (
        '{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"contextId":"ctx","parts":[{"data":'
        '{"initSession":{"contactArn":"arn:aws:connect:us-east-1:1:instance/i/contact/c","history":['
        '{"messageId":"h-1","role":"ROLE_USER","parts":[{"text":"I need help with my bill","mediaType":"text/plain"}]},'
        '{"messageId":"h-2","role":"ROLE_AGENT","parts":[{"text":"I can help with that.","mediaType":"text/plain"}]}'
        ']}}}],"metadata":{"https://docs.aws.amazon.com/connect/a2a/ext/v1/eventType":"INIT_SESSION"}}}}'
    )

    init = Reader().feed(frame)

    assert isinstance(init, InitSession)
    assert continuation(init.history) == ([Exchange("I need help with my bill", "I can help with that.")], "")


class StoppingStore:
    """A turn table in which the contact's first session is still stopping for ``stopping`` looks, then stopped."""

    def __init__(self, stopping: int) -> None:
        self.stopping = stopping
        self.looks = 0
        self.claimed_after: int | None = None

    def load(self, contact_id: str) -> Checkpoint:
        self.looks += 1
        state = LISTENING if self.looks <= self.stopping else STOPPED
        return Checkpoint(contact_id, "a2a:ctx", "0", 0, {"customer": TrackProgress(stream_bytes=16_000)}, state=state)

    def claim(self, contact_id: str, *args: Any, **kwargs: Any) -> tuple[Claim, int]:
        self.claimed_after = self.looks
        return (Claim.ALIVE, 0) if self.looks <= self.stopping else (Claim.TAKEN_OVER, 1)


def claim_with(store: StoppingStore) -> tuple[Claim, int, Checkpoint | None]:
    init = InitSession("1", "ctx", "arn:i", "arn:i/contact/c", ("COMPLETE",), False, None, None)
    engine = cast(Engine, type("FakeEngine", (), {"store": store})())

    async def claim() -> tuple[Claim, int, Checkpoint | None]:
        async def send(frame: str) -> None:
            raise AssertionError("nothing is sent")

        session = AgentSession(engine, StreamSettings.of(Settings.from_env({})), send, sink=cast(Any, None))
        return session._claim(init, None)

    return asyncio.run(claim())


def test_a_redial_waits_for_the_dropped_sockets_session_to_stop_then_takes_the_contact_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(a2a_session, "REDIAL_POLL_S", 0.001)
    store = StoppingStore(stopping=3)

    claim, generation, previous = claim_with(store)

    assert (claim, generation) == (Claim.TAKEN_OVER, 1)
    assert store.claimed_after == 4, "claimed once the first session had stopped"
    assert previous is not None and previous.tracks["customer"].stream_bytes == 16_000


def test_a_redial_whose_first_session_never_stops_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(a2a_session, "REDIAL_POLL_S", 0.001)
    monkeypatch.setattr(a2a_session, "REDIAL_WAIT_S", 0.02)

    with pytest.raises(Superseded):
        claim_with(StoppingStore(stopping=10**9))
