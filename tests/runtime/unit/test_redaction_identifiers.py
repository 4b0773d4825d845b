"""Redaction changes nothing that is not a caller's words: ids, ARNs, keys, hashes, fragment numbers and times.

Each kind is 10,000 seeded identifiers here (bench/bench_redaction.py runs 100,000 of each). They are redacted in
batches, one identifier after another with a mark between them that ends any number, which is also how they meet in a
log line: beside each other and beside words.
"""

from __future__ import annotations

import json

import pytest

from voicebridge.redaction import BuiltinRedactor
from voicebridge.redaction.logs import redacting
from voicebridge_dev.redaction_cases import IDENTIFIER_KINDS, identifiers

COUNT = 10_000
BATCH = 1_000
REDACTOR = BuiltinRedactor()


def batches(kind: str) -> list[list[str]]:
    made = identifiers(kind, COUNT)
    return [made[i : i + BATCH] for i in range(0, COUNT, BATCH)]


def changed(before: str, after: str) -> list[str]:
    return [a for a, b in zip(before.split(" ; "), after.split(" ; "), strict=False) if a != b][:5]


@pytest.mark.parametrize("kind", list(IDENTIFIER_KINDS))
def test_no_identifier_is_changed_by_the_redactor(kind: str) -> None:
    for batch in batches(kind):
        text = " ; ".join(batch)

        redacted = REDACTOR.redact(text).text

        assert redacted == text, changed(text, redacted)


@pytest.mark.parametrize("kind", list(IDENTIFIER_KINDS))
def test_no_identifier_is_changed_in_a_log_line(kind: str) -> None:
    serialise = redacting(json.dumps)
    for batch in batches(kind):
        message = "turn stored for " + " ; ".join(batch)
        line = {
            "level": "INFO",
            "message": message,
            "correlation_id": batch[0],
            "uri": batch[1],
            "fields": {"key": batch[2], "items": batch[3:6]},
        }

        written = json.loads(serialise(line))

        assert written == line, changed(message, written["message"])


@pytest.mark.parametrize(
    "identifier",
    [
        "49b47580-a040-4644-b481-8236570f0bf6",
        "s3://voicebridge-prompts-696434027962/prompts/b13be0aa88fb55b17344e998d4e61bb7966dbb8d4888868446c74bab9fd1f51c.wav",
        "Root=1-0290a800-76eeee90cf2c2d0c2e90a4df;Parent=c8313307606e3c20;Sampled=0",
        "00-055a86b9dd19e2147e7a6d5ba4b77662-d12526435815d27a-01",
        "38fd280c1298315fdaa3982615419fd1d7e1a466",
        "arn:aws:kinesisvideo:ap-southeast-2:872399679691:stream/connect-acme-contact-09f3bbf0-d422-443e-be94-db39af816ed5/1980722101047",
        "1806445647083",
    ],
)
def test_an_identifier_with_a_card_or_phone_shaped_stretch_is_one_token(identifier: str) -> None:
    assert REDACTOR.redact(f"stored {identifier} for the call").text == f"stored {identifier} for the call"


def test_a_contact_id_is_kept_whole_as_the_correlation_id() -> None:
    contact = "49b47580-a040-4644-b481-8236570f0bf6"

    written = json.loads(redacting(json.dumps)({"message": "x", "correlation_id": contact}))

    assert written["correlation_id"] == contact
