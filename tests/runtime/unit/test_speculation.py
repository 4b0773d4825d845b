"""Speculative replies, the parts that need no service: which words count as the same, what Ink's eager events
reach, how the status says a reply may come at any moment, and the settings that bound it."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from voicebridge.config import Settings
from voicebridge.converse.worker import same_words
from voicebridge.errors import ConfigurationError
from voicebridge.ink.session import InkSession
from voicebridge.store.replies import ReplyStatus, segment_key, speculative_keys


class Heard:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def on_turn_start(self) -> None:
        self.events.append(("start", ""))

    def on_turn_end(self, transcript: str) -> None:
        self.events.append(("end", transcript))

    def on_turn_update(self, transcript: str) -> None:
        self.events.append(("update", transcript))

    def on_turn_eager_end(self, transcript: str) -> None:
        self.events.append(("eager_end", transcript))

    def on_turn_resume(self) -> None:
        self.events.append(("resume", ""))

    def on_failure(self, reason: str) -> None:
        self.events.append(("failure", reason))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("What is my balance", "what is my balance?"),
        ("Yes, please go ahead.", "yes please   go ahead"),
        ("I don't recognise it", "I don’t recognise it"),
    ],
)
def test_words_that_differ_only_in_case_punctuation_or_spacing_are_the_same(first: str, second: str) -> None:
    assert same_words(first, second)


@pytest.mark.parametrize(
    ("first", "second"), [("what is my", "what is my balance"), ("pay my bill", "pay my bills"), ("", "yes")]
)
def test_words_that_differ_are_not_the_same(first: str, second: str) -> None:
    assert not same_words(first, second)


def test_the_session_passes_on_the_eager_end_with_its_words_and_the_resume() -> None:
    heard = Heard()
    session = InkSession(object(), heard)
    for event in (
        SimpleNamespace(type="turn.start"),
        SimpleNamespace(type="turn.eager_end", transcript="what is my balance"),
        SimpleNamespace(type="turn.resume"),
        SimpleNamespace(type="turn.eager_end", transcript="what is my balance today"),
        SimpleNamespace(type="turn.end", transcript="what is my balance today"),
    ):
        assert session._handle(event)
    assert heard.events == [
        ("start", ""),
        ("eager_end", "what is my balance"),
        ("resume", ""),
        ("eager_end", "what is my balance today"),
        ("end", "what is my balance today"),
    ]


def test_speculative_segments_live_apart_from_the_replies_a_flow_plays() -> None:
    assert segment_key(3, 1) == "reply#000000003#001"
    assert segment_key(3, 1, speculative_keys(3, 0)) == "spec#000000003#00#001"


def test_the_status_says_sonic_is_making_a_turns_first_sentence_or_a_later_turns() -> None:
    assert ReplyStatus(2, 0, done=False, synthesizing=2).synthesizing_first(2)
    assert ReplyStatus(2, 0, done=False, synthesizing=3).synthesizing_first(2)
    assert not ReplyStatus(2, 0, done=False, synthesizing=1).synthesizing_first(2)
    assert not ReplyStatus(2, 0, done=False).synthesizing_first(2)


def test_speculation_is_on_by_default_with_two_attempts_a_turn_and_inks_eager_threshold_at_one_half() -> None:
    settings = Settings.from_env({})
    assert (settings.speculative_replies, settings.speculative_max_per_turn) == ("on", 2)
    assert settings.ink_eager_end_threshold == 0.5


@pytest.mark.parametrize(
    "environment",
    [
        {"INK_EAGER_END_THRESHOLD": "0.29"},
        {"INK_EAGER_END_THRESHOLD": "0.61"},
        {"SPECULATIVE_REPLIES": "yes"},
        {"SPECULATIVE_MAX_PER_TURN": "0"},
        {"RESPONDER_FUNCTION_SIDE_EFFECT_FREE": "maybe"},
    ],
)
def test_settings_outside_their_documented_range_are_refused(environment: dict[str, str]) -> None:
    with pytest.raises(ConfigurationError, match=next(iter(environment))):
        Settings.from_env(environment)


def test_lex_never_speculates_and_a_customer_function_only_when_declared_free_of_side_effects() -> None:
    from voicebridge.converse.responders.function import FunctionResponder
    from voicebridge.converse.responders.lex import LexResponder

    assert LexResponder.speculative_safe is False
    assert FunctionResponder(object(), function="answer").speculative_safe is False
    assert FunctionResponder(object(), function="answer", side_effect_free=True).speculative_safe is True


def test_the_session_passes_on_the_words_so_far_of_an_open_turn() -> None:
    heard = Heard()
    session = InkSession(object(), heard)
    assert session._handle(SimpleNamespace(type="turn.update", transcript="what is my"))
    assert heard.events == [("update", "what is my")]
