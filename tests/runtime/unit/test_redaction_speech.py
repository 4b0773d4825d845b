"""The built-in redactor on speech as a streaming transcript gives it: hesitations and corrections inside numbers,
numbers said twice, international numbers, the agent's question as the only context, spelled and split e-mail
addresses — and the numbers it must leave alone (reference numbers, warranty dates, websites)."""

from __future__ import annotations

import pytest

from voicebridge.redaction import BuiltinRedactor
from voicebridge.redaction.spoken import digit_runs

REDACTOR = BuiltinRedactor()


def redact(text: str, *, before: str = "", after: str = "") -> str:
    return REDACTOR.redact(text, before=before, after=after).text


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (
            "my visa is four one one one, one one one one uh, one one one one... one one one one",
            "my visa is [CARD]",
        ),
        ("card number 4012 8888 um let me see 8888 1881", "card number [CARD]"),
        ("it's five five oh oh hang on, oh oh five five, five five five five, five five five nine", "it's [CARD]"),
        ("my social is one two three... four five, uh, six seven eight nine", "my social is [SSN]"),
        ("call me on two one two, um, five five five, er, oh one nine eight", "call me on [PHONE]"),
    ],
)
def test_a_filler_or_a_pause_inside_a_number_does_not_end_it(said: str, expected: str) -> None:
    assert redact(said) == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("my card is four one one two sorry four one one one one one one one one one one one one one one one",
         "my card is [CARD]"),
        ("the social is one two four no wait one two three four five six seven eight nine", "the social is [SSN]"),
        ("my cell is two one two five five five scratch that two one two five five five oh one nine eight",
         "my cell is [PHONE]"),
        ("it's six oh one one one one one one one one one one one one one seven sorry, from the top, six oh one one "
         "one one one one one one one one one one one seven", "it's [CARD]"),
    ],
)  # fmt: skip
def test_a_self_correction_is_redacted_with_the_number_it_corrects(said: str, expected: str) -> None:
    assert redact(said) == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("it's 123456789, that's one two three four five six seven eight nine", "it's [SSN]"),
        ("four one one one one one one one one one one one one one one one, 4111 1111 1111 1111", "[CARD]"),
    ],
)
def test_the_same_number_said_twice_in_two_forms_is_redacted_in_both(said: str, expected: str) -> None:
    assert redact(said) == expected


@pytest.mark.parametrize(
    "said",
    [
        "plus four four seven nine one one, one two three four five six",
        "my number abroad is plus three five three, eight seven, one two three, four five six seven",
        "plus four nine one five one, two three four five six seven eight",
    ],
)
def test_an_international_number_said_with_plus_is_a_phone_number(said: str) -> None:
    assert redact(said).endswith("[PHONE]")
    assert not any(word in redact(said) for word in ("one", "two", "three", "four", "five", "six", "seven"))


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("the code on the back is nine one seven", "the code on the back is [CVV]"),
        ("the three digits on the back are four oh two", "the three digits on the back are [CVV]"),
        ("it's 615 on the back", "it's [CVV] on the back"),
    ],
)
def test_a_security_code_is_found_by_the_ways_callers_name_it(said: str, expected: str) -> None:
    assert redact(said) == expected


@pytest.mark.parametrize(
    ("asked", "answer", "expected"),
    [
        ("And the three digit code on the back?", "yeah nine seventeen", "yeah [CVV]"),
        ("What's the expiration date?", "oh four slash twenty nine", "[EXPIRY]"),
        ("What's the long number across the front?", "it's 4111 1111 1111 1112", "it's [CARD]"),
        ("What are the three digits on the back?", "um it says three twenty", "um it says [CVV]"),
    ],
)  # fmt: skip
def test_the_agents_question_before_a_turn_says_what_its_digits_are(asked: str, answer: str, expected: str) -> None:
    assert redact(answer, before=asked) == expected


def test_the_answer_alone_is_left_as_said() -> None:
    assert redact("yeah nine seventeen") == "yeah nine seventeen"


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("the expiry is four slash twenty nine", "the expiry is [EXPIRY]"),
        ("expiration oh one forward slash thirty three", "expiration [EXPIRY]"),
        ("it's good through twelve over twenty eight", "it's good through [EXPIRY]"),
        ("the card expires february two thousand and thirty one", "the card expires [EXPIRY]"),
    ],
)
def test_a_spoken_expiry_date_with_slash_or_a_month_name(said: str, expected: str) -> None:
    assert redact(said) == expected


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("it's sarah chen at att dot net", "it's [EMAIL]"),
        ("send it to robert miller nine six at gmail dot com", "send it to [EMAIL]"),
        ("my email is j, o, dot, s as in sam, m, i, t, h at proton mail dot com", "my email is [EMAIL]"),
        ("try gamer nineteen ninety one at sbc global dot net thanks", "try [EMAIL] thanks"),
        ("the login is maria, m a r i a, obrien at yahoo dot co dot uk", "the login is [EMAIL]"),
        ("the email is luis uh dot kim at comcast dot um, net", "the email is [EMAIL]"),
        ("my email is carlos dot martinez31@icloud.com", "my email is [EMAIL]"),
    ],
)
def test_an_email_address_said_with_names_digits_spelled_letters_or_a_multi_word_domain(
    said: str, expected: str
) -> None:
    assert redact(said) == expected


def test_an_email_address_said_across_two_turns_is_redacted_in_both() -> None:
    first, listener, second = "my e-mail's tom dot wilson two", "Okay, go ahead.", "at icloud dot com, sorry"

    assert redact(first, after=second) == "my e-mail's [EMAIL]"
    assert redact(second, before=f"{first}\n{listener}") == "[EMAIL], sorry"


def test_a_card_number_said_across_two_turns_with_the_agents_mhm_between() -> None:
    first, listener, second = "sure, it's 4111 1111 1111", "Got it so far.", "then 1111?"

    assert redact(first, after=second) == "sure, it's [CARD]"
    assert redact(second, before=f"{first}\n{listener}") == "[CARD]?"


@pytest.mark.parametrize(
    "said",
    [
        # A 20-digit reference number whose first 16 digits pass the Luhn check (4111 1111 1111 1111).
        "the reference number is 4111 1111 1111 1111 2345",
        "my rma number is four one one one one one one one one one one one one one one one two three",
        # Luhn-valid, 16 digits, but no issuer begins with 0, 1, 8 or 9.
        "it says order number 1234 5678 9012 3452 on the email",
        "1234 5678 9012 3452",
        "the warranty expires december twenty twenty six",
        "the coupon expires oh five two thousand thirty four",
        "my plan expires january of two thousand and thirty four",
        "the site says go online at www dot acmebank dot co dot uk slash returns",
    ],
)
def test_a_number_said_to_be_something_else_is_left_as_said(said: str) -> None:
    assert redact(said) == said


@pytest.mark.parametrize(
    "said",
    [
        "in case we get disconnected it's fine",
        "the other one is 4111",
        "I paid at northwind dot com with apple pay",
        "press one and then two",
        "the meeting is at two thirty, room four oh nine",
        "the Ink call ended after 15000 ms, 312 frames",
    ],
)
def test_everyday_words_between_numbers_join_no_digits(said: str) -> None:
    assert redact(said) == said


@pytest.mark.parametrize(
    ("said", "digits"),
    [
        ("cuatro cinco uno dos", ["4512"]),
        ("cero ocho, quince, veintidós", ["081522"]),
        ("treinta y cinco dieciséis", ["3516"]),
        ("dos mil veintinueve", ["2029"]),
        ("cuatro uno, eh, perdón, cuatro dos", ["4142"]),
    ],
)
def test_spanish_spoken_numbers_are_read_as_digits(said: str, digits: list[str]) -> None:
    assert [run.digits for run in digit_runs(said)] == digits


def test_spanish_articles_are_no_digits() -> None:
    assert digit_runs("un cargo de una persona") == []


def test_a_card_number_said_in_spanish_is_redacted() -> None:
    said = "mi tarjeta es cuatro uno uno uno, uno uno uno uno, uno uno uno uno, uno uno uno uno"
    assert BuiltinRedactor().redact(said).text == "mi tarjeta es [CARD]"
