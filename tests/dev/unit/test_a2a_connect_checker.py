"""The Connect A2A emulator's reading of agent frames, fed directly (no sockets)."""

from __future__ import annotations

import base64
import json
from itertools import pairwise
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from voicebridge_dev.local.a2a import (
    EVENT_TYPE_KEY,
    AgentFrameChecker,
    AudioChunk,
    AudioConfig,
    Finished,
    InitAccepted,
    ProbeAnswered,
    Rule,
    TraceReceived,
    Violation,
)
from voicebridge_dev.local.a2a.otlp import trace_problems
from voicebridge_dev.local.a2a.wire import ConnectFrames, audio_config_from_wire

CONTEXT = "ctx-1"


def checker(**overrides: Any) -> AgentFrameChecker:
    settings: dict[str, Any] = {
        "context_id": CONTEXT,
        "init_request_id": "c-1",
        "proposed_input": AudioConfig(8000),
        "proposed_output": AudioConfig(16000),
        "finish_types": ("COMPLETE", "ESCALATE"),
        "subscribe_traces": False,
    }
    return AgentFrameChecker(**(settings | overrides))


def ready(c: AgentFrameChecker) -> AgentFrameChecker:
    message = {
        "role": "ROLE_AGENT",
        "parts": [{"data": {"initSessionResponse": {"statusCode": "200"}}}],
        "metadata": {EVENT_TYPE_KEY: "INIT_SESSION_RESPONSE"},
    }
    c.feed(json.dumps({"jsonrpc": "2.0", "id": "c-1", "result": {"message": message}}), 0.0)
    c.ready_sent()
    return c


def chunk(pcm: bytes, **fields: Any) -> str:
    update = {
        "taskId": "t-1",
        "contextId": CONTEXT,
        "artifact": {
            "artifactId": "a-1",
            "parts": [{"raw": base64.b64encode(pcm).decode(), "mediaType": "audio/lpcm"}],
            "metadata": {EVENT_TYPE_KEY: "AUDIO_RESPONSE_CHUNK"},
        },
    } | fields
    return json.dumps({"jsonrpc": "2.0", "id": "x", "result": {"artifactUpdate": update}})


def rules(events: list[Any]) -> list[Rule]:
    return [e.rule for e in events if isinstance(e, Violation)]


def test_an_init_response_without_audio_configurations_accepts_the_proposal() -> None:
    c = checker()
    message = {
        "role": "ROLE_AGENT",
        "parts": [{"data": {"initSessionResponse": {"statusCode": "200"}}}],
        "metadata": {EVENT_TYPE_KEY: "INIT_SESSION_RESPONSE"},
    }

    events = c.feed(json.dumps({"jsonrpc": "2.0", "id": "c-1", "result": {"message": message}}), 0.0)

    assert events == [InitAccepted(AudioConfig(8000), AudioConfig(16000))]


def test_append_and_last_chunk_left_out_read_as_false_as_proto3_json_writes_them() -> None:
    c = ready(checker())

    events = c.feed(chunk(b"\x01\x00"), 0.1)

    assert events == [AudioChunk("t-1", "a-1", b"\x01\x00", first=True, last=False, playable=True)]


def test_a_frame_exactly_at_the_budget_passes_and_one_byte_more_does_not() -> None:
    frame = chunk(b"\x00\x00")
    at_budget = ready(checker(frame_budget=len(frame)))
    over_budget = ready(checker(frame_budget=len(frame) - 1))

    assert rules(at_budget.feed(frame, 0.1)) == []
    assert rules(over_budget.feed(frame, 0.1)) == [Rule.FRAME_OVER_BUDGET]


def fragments(frame: str, cuts: list[int]) -> list[str]:
    encoded = base64.b64encode(frame.encode()).decode()
    bounds = [0, *sorted({c % len(encoded) for c in cuts if c % len(encoded)}), len(encoded)]
    pieces = [encoded[a:b] for a, b in pairwise(bounds)]
    return [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": "x",
                "result": {
                    "message": {
                        "role": "ROLE_AGENT",
                        "parts": [
                            {
                                "data": {
                                    "fragment": {
                                        "fragmentId": "f",
                                        "partNumber": n,
                                        "totalParts": len(pieces),
                                        "payload": p,
                                        "encoding": "base64",
                                    }
                                }
                            }
                        ],
                        "metadata": {EVENT_TYPE_KEY: "FRAGMENT"},
                    }
                },
            }
        )
        for n, p in enumerate(pieces)
    ]


FINISH = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": "y",
        "result": {
            "message": {
                "role": "ROLE_AGENT",
                "parts": [{"data": {"finish": {"type": "ESCALATE", "reason": "a person"}}}],
                "metadata": {EVENT_TYPE_KEY: "FINISH"},
            }
        },
    }
)


@given(st.lists(st.integers(min_value=1, max_value=10_000), max_size=6), st.randoms())
def test_fragments_in_any_split_and_any_order_reassemble_into_the_frame(cuts: list[int], rng: Any) -> None:
    c = ready(checker())
    pieces = fragments(FINISH, cuts)
    rng.shuffle(pieces)

    events = [e for piece in pieces for e in c.feed(piece, 0.1)]

    assert events == [Finished("ESCALATE", "a person", None)]


def test_a_repeated_fragment_part_is_a_violation() -> None:
    c = ready(checker())
    first = fragments(FINISH, [20])[0]

    assert rules(c.feed(first, 0.1) + c.feed(first, 0.2)) == [Rule.FRAGMENT_INVALID]


def test_a_parse_error_answers_the_oldest_probe_without_an_id() -> None:
    c = ready(checker())
    c.probe_sent("malformed_json", None, answer_required=True)

    events = c.feed(json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse"}}), 0.1)

    assert events == [ProbeAnswered("malformed_json", None, -32700)]
    assert c.close(1.0) == []


def test_an_error_for_an_id_connect_never_sent_is_a_violation() -> None:
    c = ready(checker())

    events = c.feed(json.dumps({"jsonrpc": "2.0", "id": "z-9", "error": {"code": -32600, "message": "bad"}}), 0.1)

    assert rules(events) == [Rule.REPLY_ID_MISMATCH]


def test_a_trace_with_all_required_fields_passes() -> None:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "b7ad6b7169203331",
        "name": "invoke_agent voicebridge",
        "startTimeUnixNano": "1715000000000000000",
        "endTimeUnixNano": 1715000000400000000,
        "events": [{"name": "aws.connect.span.message", "attributes": []}],
    }

    assert trace_problems({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) == []


def test_a_trace_without_message_events_or_with_a_zero_trace_id_is_incomplete() -> None:
    span = {
        "traceId": "0" * 32,
        "spanId": "b7ad6b7169203331",
        "name": "invoke_agent voicebridge",
        "startTimeUnixNano": "2",
        "endTimeUnixNano": "1",
    }

    problems = trace_problems({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})

    assert len(problems) == 3


def test_a_trace_event_names_its_problems() -> None:
    c = ready(checker(subscribe_traces=True))
    update = {
        "taskId": "t-1",
        "contextId": CONTEXT,
        "artifact": {
            "artifactId": "trace",
            "parts": [{"data": {"tracingSpan": {"otlp": {"resourceSpans": []}}}}],
            "metadata": {EVENT_TYPE_KEY: "TRACING_SPAN"},
        },
        "append": False,
        "lastChunk": True,
    }

    events = c.feed(json.dumps({"jsonrpc": "2.0", "id": "x", "result": {"artifactUpdate": update}}), 0.1)

    assert rules(events) == [Rule.TRACE_INCOMPLETE]
    assert isinstance(events[-1], TraceReceived) and events[-1].problems == ("otlp has no resourceSpans",)


def test_an_audio_configuration_must_be_a_full_supported_declaration() -> None:
    full = {"encoding": "LINEAR_PCM", "sampleRateHertz": 24000, "sampleSizeBits": 16, "channelCount": 1}

    assert audio_config_from_wire(full) == AudioConfig(24000)
    assert audio_config_from_wire(full | {"sampleRateHertz": 22050}) is None
    assert audio_config_from_wire(full | {"channelCount": 2}) is None
    assert audio_config_from_wire(full | {"sampleRateHertz": True}) is None
    assert audio_config_from_wire({"sampleRateHertz": 24000}) is None


def test_connects_fragments_keep_the_original_id_and_follow_the_published_sample() -> None:
    frames = ConnectFrames(context_id=CONTEXT)
    original = frames.dtmf_complete("1234#", "END_CHARACTER")

    pieces = frames.fragments(original, piece_chars=64)

    bodies = [p["params"]["message"]["parts"][0]["data"]["fragment"] for p in pieces]
    assert {p["id"] for p in pieces} == {original["id"]}
    assert [b["partNumber"] for b in bodies] == list(range(len(pieces)))
    assert json.loads(base64.b64decode("".join(b["payload"] for b in bodies))) == original
    assert all(p["params"]["message"]["role"] == "ROLE_AGENT" for p in pieces)
