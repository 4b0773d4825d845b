"""The call record is redacted by a redactor for the contact's own language."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from voicebridge.call.record import CallRecorder, RecordSettings
from voicebridge.redaction import BuiltinRedactor, NoRedaction, Redactor
from voicebridge.store.turns import CHECKPOINT


class Store:
    def __init__(self, items: list[dict[str, Any]]) -> None:
        self.items = items
        self.put: list[Mapping[str, Any]] = []

    def contact_items(self, contact_id: str) -> list[dict[str, Any]]:
        return self.items

    def put_items(self, items: Sequence[Mapping[str, Any]]) -> None:
        self.put.extend(items)


def recorder(store: Store, asked: list[str]) -> CallRecorder:
    def redactor_for(language: str) -> Redactor:
        asked.append(language)
        return BuiltinRedactor()

    return CallRecorder(
        RecordSettings(bucket="", prefix="records/", kms_key_id="", event_bus="default"),
        store,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        NoRedaction(),
        redactor_for=redactor_for,
    )


TURN = {
    "TurnKey": "customer#000000000",
    "Track": "customer",
    "Seq": 0,
    "Transcript": "mi tarjeta es 4111 1111 1111 1111",
}


def test_a_contact_with_a_language_is_redacted_by_that_languages_redactor() -> None:
    asked: list[str] = []
    store = Store([{"TurnKey": CHECKPOINT, "Language": "es-US"}, dict(TURN)])
    recorder(store, asked).write("c1", generation=0)
    assert asked == ["es-US"]
    assert [item["Transcript"] for item in store.put] == ["mi tarjeta es [CARD]"]


def test_a_contact_without_a_language_is_redacted_by_the_deployments_redactor() -> None:
    asked: list[str] = []
    store = Store([{"TurnKey": CHECKPOINT}, dict(TURN)])
    recorder(store, asked).write("c1", generation=0)
    assert asked == []
    assert [item["Transcript"] for item in store.put] == [TURN["Transcript"]]
