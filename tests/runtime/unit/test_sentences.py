"""Cutting a streamed reply into sentences: the first is ready as soon as it is written, and nothing is lost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.converse.sentences import SentenceSplitter


def split(text: str, *, chunk: int = 3, **options: int) -> list[str]:
    splitter = SentenceSplitter(**options)
    out: list[str] = []
    for i in range(0, len(text), chunk):
        out += splitter.feed(text[i : i + chunk])
    return out + splitter.flush()


def test_the_first_sentence_is_out_before_the_second_is_written() -> None:
    splitter = SentenceSplitter()
    assert splitter.feed("Your balance is two hundred dollars. Would") == ["Your balance is two hundred dollars."]
    assert splitter.feed(" you like to pay a bill?") == []
    assert splitter.flush() == ["Would you like to pay a bill?"]


def test_amounts_abbreviations_and_initials_do_not_end_a_sentence() -> None:
    text = "Dr. J. Smith sent $1,204.50 to Acme Inc. on Jan. 5. It arrived today."
    assert split(text) == ["Dr. J. Smith sent $1,204.50 to Acme Inc. on Jan. 5.", "It arrived today."]


def test_questions_exclamations_ellipses_and_quotes_end_sentences() -> None:
    text = 'Great news! Did it arrive? Let me check… He said "done." Then he left.'
    assert split(text) == ["Great news! Did it arrive?", "Let me check…", 'He said "done."', "Then he left."]


def test_a_long_sentence_is_cut_at_its_last_clause_boundary() -> None:
    text = (
        "You can pay by card, by bank transfer from your checking account, or at any branch during opening hours, "
        "and the payment shows the same day"
    )
    first, rest = split(text, max_chars=80)
    assert first.endswith(",") and len(first) <= 80
    assert f"{first} {rest}" == text


def test_a_short_piece_waits_to_join_the_next_sentence() -> None:
    assert split("OK. Your card is blocked now.") == ["OK. Your card is blocked now."]


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["pay", "the", "monthly", "bill", "now.", "Mr.", "3.5", "yes!", "really?", "card,", "—", "It"]),
        min_size=1,
        max_size=60,
    ),
    chunk=st.integers(min_value=1, max_value=20),
)
def test_any_chunking_yields_the_same_sentences_and_loses_no_word(words: list[str], chunk: int) -> None:
    text = " ".join(words)
    whole = split(text, chunk=len(text), max_chars=40)
    assert split(text, chunk=chunk, max_chars=40) == whole
    assert " ".join(whole).split() == text.split()
