"""Cutting a streamed reply into sentences: the first is ready as soon as it is written, and nothing is lost."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.converse.sentences import SentenceSplitter, heard_share


def split(text: str, *, chunk: int = 3, **options: Any) -> list[str]:
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


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["pay", "the", "monthly", "bill", "now.", "Mr.", "3.5", "yes!", "really?", "card,", "—", "It"]),
        min_size=1,
        max_size=60,
    ),
    chunk=st.integers(min_value=1, max_value=20),
    short_first=st.booleans(),
)
def test_any_chunking_yields_the_same_segments_and_loses_no_word(
    words: list[str], chunk: int, short_first: bool
) -> None:
    text = " ".join(words)
    whole = split(text, chunk=len(text), max_chars=40, short_first=short_first)
    assert split(text, chunk=chunk, max_chars=40, short_first=short_first) == whole
    assert " ".join(whole).split() == text.split()


def test_a_short_first_segment_ends_at_the_first_clause_after_two_words() -> None:
    text = "Sure, I can help with that. Your balance is two hundred dollars."
    assert split(text, short_first=True) == ["Sure, I can help with that.", "Your balance is two hundred dollars."]
    assert split("Of course, one moment please. Let me look.", short_first=True) == [
        "Of course,",
        "one moment please.",
        "Let me look.",
    ]


def test_a_short_first_segment_is_cut_within_a_second_and_a_half_of_speech_when_no_clause_comes() -> None:
    text = "Done. I've paid your electricity bill of eighty-four dollars and twenty cents from your checking account."
    first, *rest = split(text, short_first=True)
    assert first == "Done. I've paid your"
    assert rest == ["electricity bill of eighty-four dollars and twenty cents from your checking account."]


def test_a_short_first_segment_cut_for_time_ends_before_a_phrase_and_never_inside_a_number() -> None:
    assert split("Your balance is two hundred dollars.", short_first=True) == [
        "Your balance",
        "is two hundred dollars.",
    ]
    first, _ = split("Please hold twenty three hundred dollars ready now.", short_first=True)
    assert first == "Please hold twenty three hundred dollars"[: len(first)]
    assert first.split()[-1] not in {"twenty", "three", "hundred"}


def test_a_one_word_sentence_does_not_end_the_short_first_segment() -> None:
    assert split("Done. Paid, thank you. Bye now.", short_first=True)[0] == "Done. Paid,"


def test_a_short_reply_is_one_segment() -> None:
    assert split("Goodbye!", short_first=True) == ["Goodbye!"]
    assert split("Thanks for calling.", short_first=True) == ["Thanks for calling."]


def test_later_segments_stay_whole_sentences_after_a_short_first_one() -> None:
    text = "Yes, that works. Your card, the one ending in four, is blocked now. A new one is on its way."
    assert split(text, short_first=True) == [
        "Yes, that works.",
        "Your card, the one ending in four, is blocked now.",
        "A new one is on its way.",
    ]


def test_a_sentence_the_audio_stopped_in_is_parted_in_proportion_to_what_played() -> None:
    text = "To dispute a card charge, first find the transaction."
    assert heard_share(text, 0.0) == ("", text)
    assert heard_share(text, 0.35) == ("To dispute a", "card charge, first find the transaction.")
    assert heard_share(text, 1.0) == (text, "")
    assert heard_share(text, 1.7) == (text, "") and heard_share(text, -0.2) == ("", text)
