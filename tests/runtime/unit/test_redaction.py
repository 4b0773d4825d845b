"""The built-in redactor: each entity type as callers write and say it, across turns, and what it leaves alone."""

from __future__ import annotations

import json
import logging

import pytest

from voicebridge.redaction import BuiltinRedactor, NoRedaction, luhn_valid
from voicebridge.redaction.logs import RedactingFilter, redact_values, redacting
from voicebridge.redaction.spoken import digit_runs, written_form
from voicebridge_dev.redaction_cases import Span, entity_cases, load_independent, ordinary_sentences, score

REDACTOR = BuiltinRedactor()


def redact(text: str) -> str:
    return REDACTOR.redact(text).text


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("My card number is 4111 1111 1111 1111, expiry 04/29", "My card number is [CARD], expiry [EXPIRY]"),
        ("4111-1111-1111-1111", "[CARD]"),
        ("it's 378282246310005", "it's [CARD]"),
        ("four one one one one one one one one one one one one one one one", "[CARD]"),
        ("forty one eleven eleven eleven eleven eleven eleven eleven", "[CARD]"),
        ("four double one, double one double one, 1111 one one one one one", "[CARD]"),
        ("four one one one dash one one one one dash one one one one dash one one one one", "[CARD]"),
    ],
)
def test_a_card_number_written_or_spoken_is_one_card(said: str, expected: str) -> None:
    assert redact(said) == expected


def test_a_card_number_that_fails_the_luhn_check_is_redacted_only_after_a_card_word() -> None:
    assert not luhn_valid("4111111111111112")
    assert redact("my card is 4111 1111 1111 1112") == "my card is [CARD]"
    assert redact("the reference is 4111 1111 1111 1112") == "the reference is 4111 1111 1111 1112"


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("expiry 04/29", "expiry [EXPIRY]"),
        ("it expires oh four twenty nine", "it expires [EXPIRY]"),
        ("the expiration date is April 2029", "the expiration date is [EXPIRY]"),
        ("4111111111111111 0429 123", "[CARD] [EXPIRY] [CVV]"),
        ("the security code is one two three", "the security code is [CVV]"),
        ("CVV 1234", "CVV [CVV]"),
    ],
)
def test_expiry_dates_and_security_codes_are_found_by_what_they_are_said_after(said: str, expected: str) -> None:
    assert redact(said) == expected


def test_a_date_or_a_short_number_said_without_a_card_or_expiry_word_is_left() -> None:
    assert redact("the payment was due on 04/15") == "the payment was due on 04/15"
    assert redact("I'd like 123 of them") == "I'd like 123 of them"


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("SSN 123-45-6789", "SSN [SSN]"),
        ("it's 123 45 6789", "it's [SSN]"),
        ("my social is one two three, four five, six seven eight nine", "my social is [SSN]"),
    ],
)
def test_social_security_numbers_written_or_spoken(said: str, expected: str) -> None:
    assert redact(said) == expected


def test_a_number_the_ssa_never_issues_is_no_ssn() -> None:
    assert redact("my social is 000-12-3456") == "my social is 000-12-3456"
    assert redact("it's 666-12-3456") == "it's 666-12-3456"


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("write to jo.smith@example.com", "write to [EMAIL]"),
        ("it's jo dot smith at example dot com", "it's [EMAIL]"),
        ("a underscore patel at mail dot example dot org please", "[EMAIL] please"),
    ],
)
def test_email_addresses_written_or_spoken(said: str, expected: str) -> None:
    assert redact(said) == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("call me at (555) 234-5678", "call me at [PHONE]"),
        ("my number is 555-234-5678", "my number is [PHONE]"),
        ("my cell is five five five, two three four, five six seven eight", "my cell is [PHONE]"),
        ("it's five five five dash two three four dash five six seven eight", "it's [PHONE]"),
        ("you can reach me on +44 20 7946 0958", "you can reach me on [PHONE]"),
    ],
)
def test_phone_numbers_written_or_spoken(said: str, expected: str) -> None:
    assert redact(said) == expected


def test_a_timestamp_is_not_a_phone_number() -> None:
    assert redact("call me back 2026-12-02 07:25:10") == "call me back 2026-12-02 07:25:10"


def test_a_number_said_across_two_turns_is_one_number() -> None:
    first, second = "my card is 4111 1111", "1111 1111 thanks"

    assert REDACTOR.redact(first, after=second).text == "my card is [CARD]"
    assert REDACTOR.redact(second, before=first).text == "[CARD] thanks"
    assert REDACTOR.redact(second).text == second


def test_spoken_digits_are_one_run_with_the_span_they_were_said_in() -> None:
    text = "card four one one one, 1111 double one 11, expiry oh four twenty nine"

    runs = digit_runs(text)

    assert [run.digits for run in runs] == ["411111111111", "0429"]
    assert text[runs[1].start : runs[1].end] == "oh four twenty nine"


def test_written_form_maps_what_a_reader_finds_back_to_the_words() -> None:
    text = "it's four one one one, one one one one ok"
    rewritten = written_form(text)

    assert rewritten.text == "it's 4111, 1111 ok"
    start = rewritten.text.index("4111")
    span = rewritten.original_span(start, start + len("4111, 1111"))
    assert text[span[0] : span[1]] == "four one one one, one one one one"
    ok = rewritten.text.index("ok")
    assert rewritten.original_span(ok, ok + 2) == (text.index("ok"), len(text))


def test_recall_and_precision_on_the_generated_set() -> None:
    cases = entity_cases()
    missed = [case for case in cases if case.leaked(redact(case.sentence))]
    ordinary = ordinary_sentences()
    changed = [sentence for sentence in ordinary if redact(sentence) != sentence]

    assert len(cases) >= 200 and {case.form for case in cases} >= {"written", "spoken digits"}
    assert len(missed) / len(cases) <= 0.02, missed[:5]
    assert len(changed) / len(ordinary) <= 0.01, changed


def test_recall_and_changes_on_the_independent_sets_dev_file() -> None:
    def find(text: str, before: str, after: str) -> list[Span]:
        return [(e.start, e.end) for e in REDACTOR.redact(text, before=before, after=after).entities]

    scored = score(find, load_independent("dev"))

    assert scored.recall >= 0.98, scored.misses[:5]
    assert scored.changed_rate <= 0.01, scored.false_positives[:5]


def test_off_keeps_the_words_as_heard() -> None:
    assert NoRedaction().redact("4111 1111 1111 1111").text == "4111 1111 1111 1111"


def test_a_log_line_is_redacted_in_every_value_but_powertools_own() -> None:
    line = {
        "message": "heard 4111 1111 1111 1111",
        "timestamp": "2026-12-02 07:25:10,967+0000",
        "said": ["ssn 123-45-6789"],
        "extra": {"phone": "555-234-5678"},
        "count": 5,
    }

    written = json.loads(redacting(json.dumps)(line))

    assert written == {
        "message": "heard [CARD]",
        "timestamp": "2026-12-02 07:25:10,967+0000",
        "said": ["ssn [SSN]"],
        "extra": {"phone": "[PHONE]"},
        "count": 5,
    }
    assert redact_values("no digits at all") == "no digits at all"


def test_a_library_log_record_is_redacted_with_its_arguments_merged_in() -> None:
    record = logging.LogRecord("botocore", logging.DEBUG, __file__, 1, "params: %s", ("4111111111111111",), None)

    assert RedactingFilter().filter(record)

    assert record.getMessage() == "params: [CARD]"
