"""The handler edge: whatever happens inside, Connect gets a flat string map with a Result it can branch on."""

from __future__ import annotations

import json
from typing import Any

from tests.fixtures import ROOT
from voicebridge.connect.events import ContactFlowEvent, error_response, response
from voicebridge.errors import InvalidInput
from voicebridge.handlers._edge import connect_edge

EVENT = json.loads((ROOT / "events" / "synthesize.json").read_text())


def test_the_sample_event_parses() -> None:
    event = ContactFlowEvent.parse(EVENT)
    assert event.contact_id.startswith("4a573372")
    assert event.details.contact_data.media_streams is not None
    assert event.details.contact_data.media_streams.customer is not None
    assert event.details.contact_data.media_streams.customer.audio is None


def test_responses_are_flat_string_maps() -> None:
    assert response("OK", DurationMs=1200, CacheHit=False, Missing=None, Ratio=1.25) == {
        "Result": "OK",
        "DurationMs": "1200",
        "CacheHit": "false",
        "Ratio": "1.2",
    }


def test_a_product_error_becomes_its_error_code() -> None:
    @connect_edge
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise InvalidInput("Text is required")

    assert domain(EVENT, None) == error_response("InvalidInput", "Text is required")


def test_an_unexpected_exception_never_escapes() -> None:
    @connect_edge
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise RuntimeError("secret-token-123 leaked")

    result = domain(EVENT, None)
    assert result["Result"] == "Error" and result["ErrorCode"] == "InternalError"
    assert "secret-token-123" not in json.dumps(result)


def test_a_malformed_event_is_invalid_input() -> None:
    @connect_edge
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        return response("OK")

    result = domain({"Details": {"Parameters": {}}}, None)
    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert "ContactData" in result["ErrorMessage"]


def test_an_oversized_response_is_refused_rather_than_sent() -> None:
    @connect_edge
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        return response("OK", Blob="x" * 40_000)

    assert domain(EVENT, None)["ErrorCode"] == "InternalError"
