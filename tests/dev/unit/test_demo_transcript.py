"""The demo's transcript file: redacted as the stack redacts, each line's words and never its time."""

from __future__ import annotations

from voicebridge.redaction import BuiltinRedactor
from voicebridge_dev.demo import redacted_transcript

HEADER = "Simulated call 40132f2d-5239-47a5-b06d-411eb9c2ad33 (real clock)\n"


def test_a_line_that_mentions_a_card_keeps_its_time() -> None:
    line = "[00:10.683] BOT     To dispute a card charge, first find the transaction.  [S3 prompt]\n"

    assert redacted_transcript(HEADER + line, BuiltinRedactor()) == HEADER + line


def test_a_card_number_said_is_redacted_and_its_line_keeps_its_time() -> None:
    said = "[00:21.104] CALLER  My card number is 4111 1111 1111 1111.\n"

    redacted = redacted_transcript(HEADER + said, BuiltinRedactor()).splitlines()

    assert redacted[0] == HEADER.strip()
    assert redacted[1].startswith("[00:21.104] CALLER  My card number is ")
    assert "4111" not in redacted[1]
