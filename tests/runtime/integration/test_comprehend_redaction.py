"""RedactTranscripts=comprehend against the local cloud's Comprehend emulator, read by botocore: what is sent, what
comes back, and the built-in redactor standing in when Comprehend does not answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from voicebridge import container
from voicebridge.redaction.comprehend import ComprehendRedactor
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.comprehend import Fault, FaultKind

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def comprehend(cloud_env: LocalCloud) -> Iterator[LocalCloud]:
    cloud_env.comprehend.faults.clear()
    yield cloud_env
    cloud_env.comprehend.faults.clear()


def redactor(*types: str, fell_back: list[str] | None = None) -> ComprehendRedactor:
    return ComprehendRedactor(
        container.client("comprehend", retries=0),
        language="en",
        entity_types=types or ("CREDIT_DEBIT_NUMBER", "CREDIT_DEBIT_EXPIRY", "EMAIL"),
        on_fallback=None if fell_back is None else fell_back.append,
    )


def test_a_written_card_number_and_its_expiry_come_back_redacted(comprehend: LocalCloud) -> None:
    redaction = redactor().redact("My card number is 4111 1111 1111 1111, expiry 04/29")

    assert redaction.text == "My card number is [CARD], expiry [EXPIRY]"


def test_spoken_digits_are_sent_as_digits_and_the_words_are_redacted(comprehend: LocalCloud) -> None:
    said = "card four one one one one one one one one one one one one one one one thanks"
    before = len(comprehend.comprehend.invocations)

    redaction = redactor().redact(said)

    assert redaction.text == "card [CARD] thanks"
    (sent,) = comprehend.comprehend.invocations[before:]
    assert sent.text == "card 4111111111111111 thanks"


def test_offsets_after_text_outside_ascii_land_on_the_entity(comprehend: LocalCloud) -> None:
    assert redactor().redact("¿Señor? 🙂 jo@example.com").text == "¿Señor? 🙂 [EMAIL]"


def test_only_the_chosen_types_are_redacted(comprehend: LocalCloud) -> None:
    redaction = redactor("EMAIL").redact("card 4111 1111 1111 1111, mail jo@example.com")

    assert redaction.text == "card 4111 1111 1111 1111, mail [EMAIL]"


def test_a_throttled_request_is_redacted_by_the_builtin_redactor_and_counted(comprehend: LocalCloud) -> None:
    comprehend.comprehend.inject(Fault(FaultKind.THROTTLE))
    fell_back: list[str] = []

    redaction = redactor(fell_back=fell_back).redact("my card is 4111 1111 1111 1111")

    assert redaction.text == "my card is [CARD]"
    assert fell_back == ["TooManyRequestsException"]


def test_an_unanswered_request_is_redacted_by_the_builtin_redactor(comprehend: LocalCloud) -> None:
    comprehend.comprehend.inject(Fault(FaultKind.INTERNAL_ERROR))
    fell_back: list[str] = []

    assert redactor(fell_back=fell_back).redact("SSN 123-45-6789").text == "SSN [SSN]"
    assert fell_back == ["InternalServerException"]
