"""The call record lists the conversation handed over with the contact (Connect's ``history``), redacted as the
turns are, and the turn table keeps it redacted once the record is written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from voicebridge.call.record import HANDOFF, CallRecorder, RecordSettings, build_record, record_handoff
from voicebridge.redaction import BuiltinRedactor
from voicebridge.store.turns import CHECKPOINT


class Store:
    def __init__(self, items: list[dict[str, Any]] | None = None) -> None:
        self.items = items or []
        self.put: list[Mapping[str, Any]] = []

    def contact_items(self, contact_id: str) -> list[dict[str, Any]]:
        return self.items

    def put_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        self.put.extend(items)

    def expires_at(self) -> int:
        return 1_900_000_000


CARD = "my card is 4111 1111 1111 1111"
HANDED_OVER = {
    "TurnKey": HANDOFF,
    "Messages": [
        {"Role": "customer", "Text": CARD},
        {"Role": "agent", "Text": "Thanks. What would you like to pay?"},
        {"Role": "customer", "Text": "the whole balance"},
    ],
}
TURN = {"TurnKey": "customer#000000000", "Track": "customer", "Seq": 0, "Transcript": "the whole balance"}


def test_the_record_lists_the_conversation_handed_over_redacted_apart_from_the_turns() -> None:
    record = build_record("c1", [{"TurnKey": CHECKPOINT}, HANDED_OVER, TURN], BuiltinRedactor(), generation=0)

    assert record["handedOver"] == [
        {"role": "customer", "said": "my card is [CARD]"},
        {"role": "agent", "said": "Thanks. What would you like to pay?"},
        {"role": "customer", "said": "the whole balance"},
    ]
    assert [turn["heard"] for turn in record["turns"]] == ["the whole balance"]
    assert record["redaction"]["found"] == {"CARD": 1}


def test_a_contact_nothing_was_handed_over_with_has_an_empty_list() -> None:
    record = build_record("c1", [{"TurnKey": CHECKPOINT}, TURN], BuiltinRedactor(), generation=0)

    assert record["handedOver"] == []


def test_the_table_keeps_the_conversation_handed_over_redacted_once_the_record_is_written() -> None:
    store = Store([{"TurnKey": CHECKPOINT}, dict(HANDED_OVER)])
    recorder = CallRecorder(
        RecordSettings(bucket="", prefix="records/", kms_key_id="", event_bus="default"),
        store,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        BuiltinRedactor(),
    )

    recorder.write("c1", generation=0)

    (kept,) = [item for item in store.put if item["TurnKey"] == HANDOFF]
    assert [m["Text"] for m in kept["Messages"]] == [
        "my card is [CARD]",
        "Thanks. What would you like to pay?",
        "the whole balance",
    ]
    assert kept["Redacted"] is True


def test_a_handoff_keeps_each_message_with_words_oldest_first() -> None:
    store = Store()

    record_handoff(store, "c1", [("customer", "hello"), ("agent", "  "), ("agent", "Hi, how can I help?")])  # type: ignore[arg-type]

    assert [item["Messages"] for item in store.put] == [
        [{"Role": "customer", "Text": "hello"}, {"Role": "agent", "Text": "Hi, how can I help?"}]
    ]


def test_a_conversation_with_no_words_keeps_nothing() -> None:
    store = Store()

    record_handoff(store, "c1", [("customer", "")])  # type: ignore[arg-type]

    assert store.put == []
