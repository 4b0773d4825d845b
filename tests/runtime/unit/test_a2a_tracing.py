"""A turn's trace as Connect reads it (docs/protocols.md, *TRACING_SPAN*): OTLP/JSON ``TracesData``, one envelope per
turn, an ``invoke_agent`` root with a child span per step, the caller's and the agent's words as span events, and the
trace context Connect propagated on the upgrade (W3C ``traceparent``) on the session's first turn."""

from __future__ import annotations

import re
from typing import Any

import pytest

from voicebridge.a2a.tracing import TurnTrace, parse_traceparent
from voicebridge.store.turns import Turn

TRACE_ID, PARENT_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
STARTED = 1_764_000_000.0
HEX32, HEX16 = re.compile(r"[0-9a-f]{32}"), re.compile(r"[0-9a-f]{16}")
SERVER, CLIENT = 2, 3


def turn(*, ended_at: float = STARTED + 0.2, latency_ms: int = 700) -> Turn:
    ended_ms = round(ended_at * 1000)
    return Turn("c-1", "customer", 1, "I was charged twice", 1_000, 3_000, ended_ms, latency_ms)


def traced(parent: str | None = None, **otlp: Any) -> dict[str, Any]:
    trace = TurnTrace("turn-1", parent, started=STARTED)
    trace.heard("I was charged twice", turn())
    trace.spoke("I'm sorry to hear that.", STARTED + 0.5, STARTED + 1.75)
    trace.spoke("Let me look at the charges.", STARTED + 1.75, STARTED + 3.5)
    batch: dict[str, Any] = trace.otlp(**otlp)
    return batch


def spans_of(batch: dict[str, Any]) -> list[dict[str, Any]]:
    [resource_spans] = batch["resourceSpans"]
    [scope_spans] = resource_spans["scopeSpans"]
    spans: list[dict[str, Any]] = scope_spans["spans"]
    return spans


def root_of(batch: dict[str, Any]) -> dict[str, Any]:
    [root] = [span for span in spans_of(batch) if span["name"].startswith("invoke_agent ")]
    return root


def attributes(holder: dict[str, Any]) -> dict[str, str]:
    return {a["key"]: a["value"]["stringValue"] for a in holder["attributes"]}


def ns(seconds: float) -> int:
    return round(seconds * 1e9)


def test_a_turns_spans_ride_in_one_envelope_from_one_service() -> None:
    batch = traced()
    [resource_spans] = batch["resourceSpans"]
    assert attributes(resource_spans["resource"])["service.name"] == "voicebridge"
    assert len(spans_of(batch)) == 1 + 1 + 2


def test_every_span_has_hex_ids_of_otlps_lengths_and_nanosecond_times_as_decimal_strings() -> None:
    for span in spans_of(traced(TRACEPARENT)):
        assert HEX32.fullmatch(span["traceId"]) and HEX16.fullmatch(span["spanId"])
        assert "parentSpanId" not in span or HEX16.fullmatch(span["parentSpanId"])
        assert span["name"]
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            assert isinstance(span[key], str) and span[key].isdigit()
        assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])


def test_the_root_is_an_invoke_agent_server_span_and_every_step_a_client_span_under_it() -> None:
    batch = traced()
    spans, root = spans_of(batch), root_of(batch)
    assert root["name"].startswith("invoke_agent ") and root["kind"] == SERVER
    assert attributes(root)["gen_ai.operation.name"] == "invoke_agent"
    for child in (span for span in spans if span is not root):
        assert (child["kind"], child["parentSpanId"], child["traceId"]) == (CLIENT, root["spanId"], root["traceId"])
    assert len({span["spanId"] for span in spans}) == len(spans)


def test_each_spoken_segment_is_a_chat_span_with_its_real_start_and_end() -> None:
    chats = [span for span in spans_of(traced()) if span["name"].startswith("chat ")]
    times = [int(span[key]) for span in chats for key in ("startTimeUnixNano", "endTimeUnixNano")]
    expected = [ns(STARTED + 0.5), ns(STARTED + 1.75), ns(STARTED + 1.75), ns(STARTED + 3.5)]
    assert times == pytest.approx(expected, abs=1_000)


def test_inks_turn_is_a_span_from_the_callers_stop_to_the_turns_end() -> None:
    [ink] = [span for span in spans_of(traced()) if span["name"] == "transcribe ink"]
    ended = turn().ended_at_ms / 1000
    started = ended - 0.7
    assert int(ink["startTimeUnixNano"]) == pytest.approx(ns(started), abs=1_000)
    assert int(ink["endTimeUnixNano"]) == pytest.approx(ns(ended), abs=1_000)


def test_the_root_spans_the_whole_turn_from_the_callers_stop() -> None:
    batch = traced()
    spans, root = spans_of(batch), root_of(batch)
    assert int(root["startTimeUnixNano"]) == min(int(span["startTimeUnixNano"]) for span in spans)
    assert int(root["endTimeUnixNano"]) >= max(int(span["endTimeUnixNano"]) for span in spans)


def test_the_callers_words_and_each_segment_the_agent_said_are_message_events() -> None:
    events = root_of(traced())["events"]
    assert {event["name"] for event in events} == {"aws.connect.span.message"}
    messages = [attributes(event) for event in events]
    prefix = "aws.connect.span.message."
    assert [(m[prefix + "role"], m[prefix + "participant"], m[prefix + "content"]) for m in messages] == [
        ("input", "user", "I was charged twice"),
        ("output", "assistant", "I'm sorry to hear that."),
        ("output", "assistant", "Let me look at the charges."),
    ]
    assert {m[prefix + "type"] for m in messages} == {"TEXT_MESSAGE"}
    assert all(event["timeUnixNano"].isdigit() for event in events)


def test_a_turn_that_heard_nothing_has_no_input_event() -> None:
    trace = TurnTrace("greeting", None, started=STARTED)
    trace.spoke("Hello!", STARTED, STARTED + 1)
    roles = [attributes(e)["aws.connect.span.message.role"] for e in root_of(trace.otlp())["events"]]
    assert roles == ["output"]


def test_the_first_turn_carries_the_propagated_trace_id_and_parent() -> None:
    root = root_of(traced(TRACEPARENT))
    assert (root["traceId"], root["parentSpanId"]) == (TRACE_ID, PARENT_ID)
    assert {span["traceId"] for span in spans_of(traced(TRACEPARENT))} == {TRACE_ID}


def test_a_later_turn_has_a_trace_id_of_its_own_and_no_parent() -> None:
    first, later = root_of(traced(TRACEPARENT)), root_of(traced(None))
    assert later["traceId"] != first["traceId"] and "parentSpanId" not in later


def test_each_later_turn_gets_a_fresh_trace_id() -> None:
    assert root_of(traced())["traceId"] != root_of(traced())["traceId"]


def test_a_later_turn_is_linked_to_the_propagated_context() -> None:
    trace = TurnTrace("turn-2", None, link=TRACEPARENT, started=STARTED)
    root = root_of(trace.otlp())
    assert root["traceId"] != TRACE_ID
    assert root["links"] == [{"traceId": TRACE_ID, "spanId": PARENT_ID}]


def test_a_turn_without_a_propagated_context_has_no_links() -> None:
    assert "links" not in root_of(traced(TRACEPARENT)) and "links" not in root_of(traced(None))


def test_a_failed_turn_has_an_error_status_with_its_reason() -> None:
    root = root_of(traced(failed=(424, "Sonic did not answer", "DEPENDENCY_FAILURE")))
    assert root["status"] == {"code": 2, "message": "Sonic did not answer"}


def test_a_turn_that_went_well_has_an_ok_status() -> None:
    assert root_of(traced())["status"] == {"code": 1}


def test_an_interrupted_turn_says_so() -> None:
    assert attributes(root_of(traced(interrupted=True)))["voicebridge.interrupted"] == "true"
    assert "voicebridge.interrupted" not in attributes(root_of(traced()))


def test_a_well_formed_traceparent_gives_its_trace_and_parent_ids() -> None:
    assert parse_traceparent(TRACEPARENT) == (TRACE_ID, PARENT_ID)


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "garbage",
        f"00-{TRACE_ID}-{PARENT_ID}",
        f"00-{TRACE_ID[:-1]}-{PARENT_ID}-01",
        f"00-{TRACE_ID.upper()}-{PARENT_ID}-01",
        f"00-+{TRACE_ID[1:]}-{PARENT_ID}-01",
        f"00-{TRACE_ID[:16]}_{TRACE_ID[17:]}-{PARENT_ID}-01",
        f"00-{'0' * 32}-{PARENT_ID}-01",
        f"00-{TRACE_ID}-{'0' * 16}-01",
        f"ff-{TRACE_ID}-{PARENT_ID}-01",
    ],
    ids=[
        "absent",
        "empty",
        "garbage",
        "three-fields",
        "short-trace-id",
        "upper-case",
        "signed",
        "underscore",
        "zero-trace-id",
        "zero-parent-id",
        "version-ff",
    ],
)
def test_a_traceparent_the_w3c_says_to_ignore_is_ignored(header: str | None) -> None:
    assert parse_traceparent(header) is None


def test_a_turn_whose_traceparent_is_ignored_gets_a_trace_id_of_its_own() -> None:
    root = root_of(traced(f"00-+{TRACE_ID[1:]}-{PARENT_ID}-01"))
    assert HEX32.fullmatch(root["traceId"]) and "parentSpanId" not in root
