"""Which words said over the agent only acknowledge it (a backchannel, talked on through) and which ask for
something (a turn the agent answers)."""

from __future__ import annotations

import pytest

from voicebridge.acknowledgements import LISTED, only_acknowledges


@pytest.mark.parametrize(
    ("said", "language"),
    [
        ("Uh-huh.", "en-US"),
        ("Mm-hmm", "en"),
        ("Yeah, yeah, okay.", "en"),
        ("I see.", "en-GB"),
        ("Oh, okay, got it.", "en"),
        ("Sí, claro.", "es-US"),
        ("Ajá", "es"),
        ("Vale, vale.", "es-ES"),
        ("D'accord.", "fr"),
        ("Ja, genau.", "de"),
        ("Tá bom.", "pt-BR"),
        ("Va bene.", "it"),
    ],
)
def test_acknowledgements_alone_are_a_backchannels_words(said: str, language: str) -> None:
    assert only_acknowledges(said, language) is True


@pytest.mark.parametrize(
    ("said", "language"),
    [
        ("Stop.", "en"),
        ("No, wait.", "en"),
        ("What?", "en-US"),
        ("Hold on.", "en"),
        ("Okay, but", "en"),
        ("Sorry?", "en"),
        ("Yeah, 42.", "en"),
        ("Espere.", "es"),
        ("No.", "es-US"),
        ("Sí, pero", "es"),
        ("Attendez.", "fr"),
        ("Moment mal.", "de"),
    ],
)
def test_any_other_word_makes_a_turn_to_answer(said: str, language: str) -> None:
    assert only_acknowledges(said, language) is False


def test_a_language_without_a_list_and_a_turn_without_words_are_left_to_the_timing() -> None:
    assert "ja" not in LISTED
    assert only_acknowledges("はい", "ja-JP") is None
    assert only_acknowledges("...", "en") is None
