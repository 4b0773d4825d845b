"""The Comprehend emulator's own parts, with no server: its PII detector, its request validation and its quota."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.model import StringShape

from voicebridge_dev.local.comprehend import (
    DETECTED_TYPES,
    MAX_TEXT_BYTES,
    EmulatorConfigError,
    RequestQuota,
    detect,
    luhn_valid,
    parse_pii_request,
)
from voicebridge_dev.local.service import ApiError

MODEL = botocore.session.get_session().get_service_model("comprehend")


def found(text: str) -> list[tuple[str, str]]:
    """(type, the text of its span) for each entity detected."""
    return [(entity.type, text[entity.begin : entity.end]) for entity in detect(text)]


def refused(operation: str, body: Any) -> ApiError:
    with pytest.raises(ApiError) as caught:
        parse_pii_request(operation, body)
    return caught.value


# --- the detector ------------------------------------------------------------------------------------


def test_the_types_it_reports_are_the_models_pii_entity_types() -> None:
    shape = MODEL.shape_for("PiiEntityType")
    assert isinstance(shape, StringShape) and set(DETECTED_TYPES) <= set(shape.enum)


def test_the_luhn_check_takes_valid_card_numbers_and_refuses_one_wrong_digit() -> None:
    assert luhn_valid("4111111111111111") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112")


@pytest.mark.parametrize(
    "written",
    [
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111111",
        "3782 822463 10005",  # 15 digits, grouped 4-6-5
        "4222222222222",  # 13 digits
        "6011 0000 0000 0000 001",  # 19 digits
    ],
)
def test_a_luhn_valid_card_number_is_found_whole_however_it_is_grouped(written: str) -> None:
    assert found(f"My card number is {written}, thanks.") == [("CREDIT_DEBIT_NUMBER", written)]


def test_a_number_failing_the_luhn_check_is_no_card_number() -> None:
    assert found("The reference is 4111 1111 1111 1112.") == []


def test_a_card_number_followed_by_more_digits_is_found_without_them() -> None:
    assert found("4111 1111 1111 1111 123 is what I have") == [("CREDIT_DEBIT_NUMBER", "4111 1111 1111 1111")]


def test_a_date_written_straight_after_a_card_number_is_not_taken_into_it() -> None:
    assert found("4111 1111 1111 1111 04/29") == [
        ("CREDIT_DEBIT_NUMBER", "4111 1111 1111 1111"),
        ("CREDIT_DEBIT_EXPIRY", "04/29"),
    ]


def test_an_expiry_date_is_one_after_a_card_number_or_a_word_of_expiry() -> None:
    assert found("card 4111 1111 1111 1111, expiry 04/29") == [
        ("CREDIT_DEBIT_NUMBER", "4111 1111 1111 1111"),
        ("CREDIT_DEBIT_EXPIRY", "04/29"),
    ]
    assert found("it expires 11/2027") == [("CREDIT_DEBIT_EXPIRY", "11/2027")]
    assert found("valid thru 01-30") == [("CREDIT_DEBIT_EXPIRY", "01-30")]


def test_a_date_with_nothing_of_a_card_about_it_is_no_expiry() -> None:
    assert found("The meeting moved to 04/29 in the afternoon.") == []
    assert found("it expires 13/29") == []


def test_a_security_code_is_one_after_its_name() -> None:
    assert found("the CVV is 123") == [("CREDIT_DEBIT_CVV", "123")]
    assert found("security code: 4821") == [("CREDIT_DEBIT_CVV", "4821")]
    assert found("I have 123 apples") == []


@pytest.mark.parametrize("written", ["123-45-6789", "123 45 6789"])
def test_a_social_security_number_is_found_as_it_is_written(written: str) -> None:
    assert found(f"my number is {written}") == [("SSN", written)]


@pytest.mark.parametrize("never_issued", ["000-12-3456", "666-12-3456", "912-34-5678", "123-00-4567", "123-45-0000"])
def test_a_number_the_social_security_administration_never_issues_is_no_ssn(never_issued: str) -> None:
    assert found(f"my number is {never_issued}") == []


def test_nine_digits_in_a_run_are_an_ssn_only_after_its_name() -> None:
    assert found("my social security number is 123456789") == [("SSN", "123456789")]
    assert found("order 123456789 has shipped") == []


def test_an_email_address_is_found_without_the_words_around_it() -> None:
    assert found("write to jane.doe+bank@example.co.uk.") == [("EMAIL", "jane.doe+bank@example.co.uk")]
    assert found("o a josé.núñez@example.es") == [("EMAIL", "josé.núñez@example.es")]


@pytest.mark.parametrize(
    "written",
    ["(212) 555-0100", "212-555-0100", "212.555.0100", "+1 212 555 0100", "1-800-555-0199", "+44 20 7946 0958"],
)
def test_a_phone_number_is_found_as_it_is_written(written: str) -> None:
    assert found(f"call me on {written} today") == [("PHONE", written)]


def test_digits_spoken_as_words_are_not_read_as_digits() -> None:
    assert found("my card is four one one one one one one one one one one one one one one one") == []


@pytest.mark.parametrize(
    "sentence",
    [
        "I'd like to check my balance please.",
        "I was born in 1984 and I have 3 kids.",
        "Transfer 250 dollars to savings on 12 May.",
        "My account has been open for 15 years, since 2009-03-14.",
        "Version 1.2.3 of the app crashed at 10:45.",
        "The total came to 1,234,567.89 dollars.",
        "Order number 4 of 12 arrived on time.",
    ],
)
def test_an_ordinary_sentence_has_nothing_in_it(sentence: str) -> None:
    assert found(sentence) == []


def test_offsets_count_code_points_so_text_before_an_entity_may_be_any_unicode() -> None:
    text = "Café 🙂 — número 4111 1111 1111 1111"
    (entity,) = detect(text)
    # The emoji is one code point, two UTF-16 units and four UTF-8 bytes: UTF-16 offsets would say 17 and 36.
    assert (entity.begin, entity.end) == (16, 35)
    assert text[entity.begin : entity.end] == "4111 1111 1111 1111"


def test_entities_come_by_offset_with_scores_between_zero_and_one() -> None:
    text = "mail a@example.com, ssn 123-45-6789, card 4111111111111111"
    entities = detect(text)
    assert [e.type for e in entities] == ["EMAIL", "SSN", "CREDIT_DEBIT_NUMBER"]
    assert all(0 <= e.score <= 1 for e in entities)


def test_a_card_number_is_not_also_a_phone_number() -> None:
    assert found("4111-1111-1111-1111") == [("CREDIT_DEBIT_NUMBER", "4111-1111-1111-1111")]


# --- the request -------------------------------------------------------------------------------------


def test_a_request_is_its_text_and_language() -> None:
    request = parse_pii_request("DetectPiiEntities", {"Text": "hola", "LanguageCode": "es"})
    assert (request.operation, request.text, request.language_code) == ("DetectPiiEntities", "hola", "es")


def test_every_missing_member_is_named_in_one_validation_exception() -> None:
    error = refused("DetectPiiEntities", {})
    assert (error.status, error.error_type) == (400, "ValidationException")
    assert error.message == (
        "2 validation errors detected: Value null at 'text' failed to satisfy constraint: Member must not be null; "
        "Value null at 'languageCode' failed to satisfy constraint: Member must not be null"
    )


def test_an_empty_text_is_a_validation_exception() -> None:
    assert (
        "Member must have length greater than or equal to 1"
        in refused("DetectPiiEntities", {"Text": "", "LanguageCode": "en"}).message
    )


@pytest.mark.parametrize(
    ("operation", "language", "taken"),
    [
        ("DetectPiiEntities", "fr", "[en, es]"),
        ("DetectPiiEntities", "EN", "[en, es]"),
        ("ContainsPiiEntities", "es", "[en]"),
    ],
)
def test_a_language_the_operation_does_not_take_is_a_validation_exception_naming_those_it_does(
    operation: str, language: str, taken: str
) -> None:
    error = refused(operation, {"Text": "x", "LanguageCode": language})
    assert error.error_type == "ValidationException"
    assert error.message.endswith(
        f"Value '{language}' at 'languageCode' failed to satisfy constraint: "
        f"Member must satisfy enum value set: {taken}"
    )


def test_the_size_limit_is_100000_bytes_of_utf8_not_characters() -> None:
    assert parse_pii_request("DetectPiiEntities", {"Text": "é" * (MAX_TEXT_BYTES // 2), "LanguageCode": "en"})
    error = refused("DetectPiiEntities", {"Text": "é" * (MAX_TEXT_BYTES // 2) + "a", "LanguageCode": "en"})
    assert (error.status, error.error_type) == (400, "TextSizeLimitExceededException")
    assert error.message == (
        "Input text size exceeds limit. Max length of request text allowed is 100000 bytes while in this request "
        "the text size is 100001 bytes"
    )


def test_text_with_no_utf8_form_is_an_invalid_document() -> None:
    error = refused("DetectPiiEntities", {"Text": "card \ud800", "LanguageCode": "en"})
    assert (error.error_type, error.extra) == ("InvalidRequestException", {"Reason": "INVALID_DOCUMENT"})


@pytest.mark.parametrize("body", [[], "text", {"Text": 5, "LanguageCode": "en"}, {"Text": "x", "LanguageCode": ["en"]}])
def test_a_body_of_the_wrong_shape_is_a_serialization_exception(body: Any) -> None:
    assert refused("DetectPiiEntities", body).error_type == "SerializationException"


# --- the quota ---------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_quota_admits_its_rate_in_any_second_and_refuses_the_rest() -> None:
    clock = Clock()
    quota = RequestQuota(2, clock)
    assert [quota.admit("DetectPiiEntities") for _ in range(3)] == [True, True, False]
    clock.now += 0.5
    assert not quota.admit("DetectPiiEntities")
    clock.now += 0.5
    assert quota.admit("DetectPiiEntities")


def test_each_operation_has_a_quota_of_its_own() -> None:
    quota = RequestQuota(1, Clock())
    assert quota.admit("DetectPiiEntities") and quota.admit("ContainsPiiEntities")
    assert not quota.admit("DetectPiiEntities")


def test_no_quota_admits_every_call() -> None:
    quota = RequestQuota(None, Clock())
    assert all(quota.admit("DetectPiiEntities") for _ in range(1000))


@pytest.mark.parametrize("rate", [0, -1, 1.5, True, "5"])
def test_a_quota_that_is_no_positive_whole_number_is_refused(rate: Any) -> None:
    with pytest.raises(EmulatorConfigError):
        RequestQuota(rate)
