"""The handler edge: whatever happens inside, Connect gets a flat string map with a Result it can branch on, smaller
than 32 KB of UTF-8, and the function's log keeps every line."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fixtures import ROOT
from voicebridge.connect.events import (
    MAX_RESPONSE_BYTES,
    ContactFlowEvent,
    error_response,
    fit,
    response,
    response_size,
)
from voicebridge.errors import InvalidInput
from voicebridge.handlers import _edge
from voicebridge.handlers._edge import connect_edge

EVENT = json.loads((ROOT / "events" / "synthesize.json").read_text())
ERRORS = "SomeErrors"
CJK = "語"
"""Three bytes of UTF-8, six as an ASCII-escaped ``\\u8a9e``."""


def answering(answer: dict[str, str], *, truncate: tuple[str, ...] = ()) -> Callable[[Any, Any], dict[str, str]]:
    """A Connect handler whose domain answers ``answer``."""

    @connect_edge(errors=ERRORS, truncate=truncate)
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        return answer

    return domain


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
    @connect_edge(errors=ERRORS)
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise InvalidInput("Text is required")

    assert domain(EVENT, None) == error_response("InvalidInput", "Text is required")


def test_an_unexpected_exception_never_escapes() -> None:
    @connect_edge(errors=ERRORS)
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise RuntimeError("secret-token-123 leaked")

    result = domain(EVENT, None)
    assert result["Result"] == "Error" and result["ErrorCode"] == "InternalError"
    assert "secret-token-123" not in json.dumps(result)


class Counted:
    """Stands in for the metrics singleton: what was added."""

    def __init__(self) -> None:
        self.added: list[tuple[str, float]] = []

    def add_metric(self, *, name: str, unit: Any, value: float) -> None:
        self.added.append((name, value))


def test_an_unexpected_failure_and_an_answer_too_large_count_in_the_functions_errors_a_product_error_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counted = Counted()
    monkeypatch.setattr(_edge, "metrics", counted)

    @connect_edge(errors=ERRORS)
    def failing(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise KeyError("a slip")

    @connect_edge(errors=ERRORS)
    def refusing(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise InvalidInput("Text is required")

    assert failing(EVENT, None)["ErrorCode"] == "InternalError"
    assert counted.added == [(ERRORS, 1)]
    assert refusing(EVENT, None)["ErrorCode"] == "InvalidInput"
    assert answering(response("OK"))(EVENT, None) == response("OK")
    assert counted.added == [(ERRORS, 1)]
    assert answering(response("OK", Blob="x" * 40_000))(EVENT, None)["ErrorCode"] == "InternalError"
    assert counted.added == [(ERRORS, 1), (ERRORS, 1)]


def test_a_malformed_event_is_invalid_input() -> None:
    result = answering(response("OK"))({"Details": {"Parameters": {}}}, None)
    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert "ContactData" in result["ErrorMessage"]


def test_an_oversized_response_is_refused_rather_than_sent() -> None:
    assert answering(response("OK", Blob="x" * 40_000))(EVENT, None)["ErrorCode"] == "InternalError"


def test_the_size_is_counted_as_the_lambda_runtime_sends_it_in_utf8_unescaped() -> None:
    answer = response("Turn", Transcript=CJK * 6000, TurnIndex=3)
    assert response_size(answer) == len(json.dumps(answer, ensure_ascii=False).encode("utf-8")) < 19_000
    assert answering(answer)(EVENT, None) == answer


def test_a_response_of_exactly_32_kib_is_refused_since_connect_takes_less() -> None:
    answer = response("OK", Blob="")
    answer["Blob"] = "x" * (MAX_RESPONSE_BYTES - response_size(answer))
    assert response_size(answer) == MAX_RESPONSE_BYTES
    assert answering(answer)(EVENT, None)["ErrorCode"] == "InternalError"
    answer["Blob"] = answer["Blob"][1:]
    assert answering(answer)(EVENT, None) == answer


def test_a_long_text_field_is_cut_on_a_character_boundary_to_fit_and_says_so() -> None:
    transcript = "🙂" + CJK * 20_000
    answer = answering(response("Turn", Transcript=transcript, TurnIndex=3), truncate=("Transcript",))(EVENT, None)
    assert answer["Result"] == "Turn" and answer["TurnIndex"] == "3" and answer["Truncated"] == "true"
    assert transcript.startswith(answer["Transcript"])
    assert response_size(answer) < MAX_RESPONSE_BYTES
    one_more = {**answer, "Transcript": transcript[: len(answer["Transcript"]) + 1]}
    assert response_size(one_more) >= MAX_RESPONSE_BYTES


def test_an_answer_that_fits_is_not_marked_truncated() -> None:
    answer = response("Turn", Transcript="pay my bill", TurnIndex=0)
    assert answering(answer, truncate=("Transcript",))(EVENT, None) == answer


def test_fields_are_cut_in_the_order_named_each_only_as_far_as_needed() -> None:
    long = CJK * 20_000
    answer = fit(response("Fallback", Transcript=long, Text=long), ("Transcript", "Text"))
    assert answer is not None and answer["Transcript"] == "" and 0 < len(answer["Text"]) < len(long)
    answer = fit(response("Fallback", Transcript=long, Text="Sorry?"), ("Transcript", "Text"))
    assert answer is not None and answer["Text"] == "Sorry?" and 0 < len(answer["Transcript"]) < len(long)


def test_an_answer_too_large_without_its_truncatable_fields_is_refused() -> None:
    answer = response("Speak", Transcript=CJK * 20_000, Blob="x" * 40_000)
    assert answering(answer, truncate=("Transcript",))(EVENT, None)["ErrorCode"] == "InternalError"


@settings(max_examples=60, deadline=None)
@given(
    piece=st.text(min_size=1, max_size=8),
    times=st.integers(1, 12_000),
    other=st.text(max_size=200),
)
def test_any_text_is_cut_to_the_longest_prefix_that_fits(piece: str, times: int, other: str) -> None:
    text = piece * times
    answer = fit(response("Turn", Transcript=text, Other=other), ("Transcript",))
    assert answer is not None and response_size(answer) < MAX_RESPONSE_BYTES
    assert text.startswith(answer["Transcript"]) and answer["Other"] == other
    if answer["Transcript"] != text:
        longer = {**answer, "Transcript": text[: len(answer["Transcript"]) + 1]}
        assert response_size(longer) >= MAX_RESPONSE_BYTES


def test_a_lone_surrogate_in_an_error_message_breaks_neither_the_log_line_nor_the_answer(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    @connect_edge(errors=ERRORS)
    def domain(event: ContactFlowEvent, context: Any) -> dict[str, str]:
        raise InvalidInput("the model refused: \ud800")

    answer = domain(EVENT, None)
    assert answer["ErrorMessage"] == "the model refused: \ufffd"
    json.dumps(answer, ensure_ascii=False).encode("utf-8")
    [line] = [line for line in log_lines() if line["message"] == "request failed"]
    assert line["reason"] == "the model refused: \ufffd"


def test_a_lone_surrogate_in_an_answer_becomes_the_replacement_character() -> None:
    assert answering(response("Turn", Transcript="a\udfffb"))(EVENT, None)["Transcript"] == "a\ufffdb"


def test_a_malformed_event_is_not_logged_under_the_previous_contact(
    log_lines: Callable[[], list[dict[str, Any]]],
) -> None:
    handler = answering(response("OK"))
    handler(EVENT, None)
    handler({"Details": {"ContactData": {"ContactId": "../../etc/passwd"}}}, None)
    [line] = [line for line in log_lines() if line["message"] == "request failed"]
    assert "correlation_id" not in line
