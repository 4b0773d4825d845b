"""A streaming session that continues a conversation it did not start: Connect's ``history`` as the responder's
exchanges (a redial's claim on the contact: test_a2a_claim.py)."""

from __future__ import annotations

from voicebridge.a2a.protocol import InitSession, Reader
from voicebridge.a2a.session import continuation, speaker
from voicebridge.conversation import Exchange


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


def test_the_history_names_the_caller_and_the_agent_as_the_record_does_and_another_role_as_given() -> None:
    assert [speaker(role) for role in ("ROLE_USER", "user", "ROLE_AGENT", "agent", "ROLE_SYSTEM")] == [
        "customer",
        "customer",
        "agent",
        "agent",
        "ROLE_SYSTEM",
    ]
