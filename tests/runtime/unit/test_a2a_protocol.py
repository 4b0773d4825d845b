"""The agent's side of Connect's A2A voice contract, sans I/O: what each frame Connect sends is read as, how a frame
that cannot be dispatched is answered, FRAGMENT reassembly, and the shape of every frame the agent sends.

Frames are written here as docs/protocols.md, *Amazon Connect external AI agents*, says Connect sends them, with the
contract's own strings, not the module's constants, so a wrong constant fails a test.
"""

from __future__ import annotations

import base64
import json
import re
import uuid
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.a2a.protocol import (
    FRAME_BUDGET,
    MAX_FRAGMENTS,
    MAX_INBOUND_FRAME,
    MAX_TEXT_CHARS,
    AudioConfig,
    AudioIn,
    ChannelState,
    ConnectError,
    DtmfComplete,
    Event,
    Ignored,
    InitSession,
    Interruption,
    Malformed,
    Reader,
    TextIn,
    audio_chunk_bytes,
    audio_chunk_frame,
    error_frame,
    fitted,
    init_response_frame,
    interruption_frame,
    status_frame,
    tracing_frame,
)

EXT = "https://docs.aws.amazon.com/connect/a2a/ext/v1"
EVENT_TYPE = f"{EXT}/eventType"
CONTEXT = "5d7e6f1a-9b1c-4c3e-8f0a-2b6d7c8e9f01"
INSTANCE = "arn:aws:connect:us-east-1:123456789012:instance/11111111-2222-3333-4444-555555555555"
CONTACT_ID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
CONTACT = f"{INSTANCE}/contact/{CONTACT_ID}"
PCM16 = {"encoding": "LINEAR_PCM", "sampleSizeBits": 16, "channelCount": 1}


def request(
    parts: list[dict[str, Any]], metadata: dict[str, Any] | None = None, *, request_id: Any = "req-1", **extra: Any
) -> str:
    message = {
        "messageId": str(uuid.uuid4()),
        "contextId": CONTEXT,
        "role": "ROLE_USER",
        "parts": parts,
        "metadata": metadata or {},
        **extra,
    }
    frame = {"jsonrpc": "2.0", "id": request_id, "method": "SendMessage", "params": {"message": message}}
    return json.dumps(frame)


def event(kind: str, data: dict[str, Any], *, request_id: Any = "req-1") -> str:
    part = {"data": data, "mediaType": "application/json"}
    return request([part], {EVENT_TYPE: kind}, request_id=request_id, extensions=[EXT])


def init_session(**fields: Any) -> str:
    body = {
        "instanceArn": INSTANCE,
        "contactArn": CONTACT,
        "supportedFinishTypes": ["COMPLETE", "ESCALATE"],
        "subscribeToTracingEvents": True,
        "history": [],
        "audioInputConfiguration": {**PCM16, "sampleRateHertz": 8000},
        "audioOutputConfiguration": {**PCM16, "sampleRateHertz": 16000},
    }
    body.update(fields)
    return event("INIT_SESSION", {"initSession": {k: v for k, v in body.items() if v is not None}}, request_id="init")


def audio(raw: str) -> str:
    return request([{"raw": raw, "mediaType": "audio/lpcm"}], request_id=str(uuid.uuid4()))


def read(frame: str | bytes) -> Event:
    return Reader().feed(frame)


def refusal(frame: str | bytes) -> Malformed:
    answer = read(frame)
    assert isinstance(answer, Malformed), answer
    return answer


# -- INIT_SESSION


def test_init_session_reads_the_contact_and_what_connect_offers() -> None:
    init = read(init_session())
    assert isinstance(init, InitSession)
    assert (init.request_id, init.context_id) == ("init", CONTEXT)
    assert (init.instance_arn, init.contact_arn, init.contact_id) == (INSTANCE, CONTACT, CONTACT_ID)
    assert init.finish_types == ("COMPLETE", "ESCALATE")
    assert init.tracing is True


def test_init_session_reads_both_proposed_audio_configurations() -> None:
    init = read(init_session())
    assert isinstance(init, InitSession)
    assert (init.audio_in, init.audio_out) == (AudioConfig(8000), AudioConfig(16000))


@pytest.mark.parametrize("rate", [8000, 16000, 24000])
def test_init_session_takes_each_rate_the_contract_lists(rate: int) -> None:
    init = read(init_session(audioOutputConfiguration={**PCM16, "sampleRateHertz": rate}))
    assert isinstance(init, InitSession)
    assert init.audio_out == AudioConfig(rate)


def test_init_session_without_audio_configurations_proposes_none() -> None:
    init = read(init_session(audioInputConfiguration=None, audioOutputConfiguration=None))
    assert isinstance(init, InitSession)
    assert (init.audio_in, init.audio_out) == (None, None)


def test_init_session_without_a_tracing_subscription_asks_for_no_traces() -> None:
    init = read(init_session(subscribeToTracingEvents=None))
    assert isinstance(init, InitSession)
    assert init.tracing is False


def test_init_session_reads_the_history_oldest_first_as_role_and_text() -> None:
    history = [
        {"role": "ROLE_USER", "parts": [{"text": "I want to dispute a charge", "mediaType": "text/plain"}]},
        {"role": "ROLE_AGENT", "parts": [{"text": "Which one?"}, {"text": "The latest?"}]},
    ]
    init = read(init_session(history=history))
    assert isinstance(init, InitSession)
    assert init.history == (("ROLE_USER", "I want to dispute a charge"), ("ROLE_AGENT", "Which one? The latest?"))


@pytest.mark.parametrize(
    "config",
    [
        {**PCM16, "sampleRateHertz": 44100},
        {**PCM16, "sampleRateHertz": 11025},
        {**PCM16, "sampleRateHertz": 0},
        {**PCM16, "encoding": "MULAW", "sampleRateHertz": 8000},
        {**PCM16, "sampleSizeBits": 8, "sampleRateHertz": 8000},
        {**PCM16, "channelCount": 2, "sampleRateHertz": 8000},
        "LINEAR_PCM/8000",
    ],
    ids=["44.1k", "11.025k", "zero", "mulaw", "8-bit", "stereo", "not-an-object"],
)
def test_init_session_with_audio_outside_the_contract_is_invalid_params(config: Any) -> None:
    answer = refusal(init_session(audioInputConfiguration=config))
    assert (answer.request_id, answer.code) == ("init", -32602)


def test_init_session_without_a_contact_arn_is_invalid_params() -> None:
    answer = refusal(init_session(contactArn=None))
    assert (answer.request_id, answer.code) == ("init", -32602)


def test_init_session_whose_finish_types_are_not_a_list_is_invalid_params() -> None:
    answer = refusal(init_session(supportedFinishTypes="COMPLETE"))
    assert (answer.request_id, answer.code) == ("init", -32602)


# -- what follows INIT_SESSION


def test_channel_state_reads_the_state() -> None:
    assert read(event("CHANNEL_STATE", {"channelState": {"state": "READY"}})) == ChannelState("READY")


def test_channel_state_without_a_state_is_invalid_params() -> None:
    assert refusal(event("CHANNEL_STATE", {"channelState": {}})).code == -32602


def test_an_audio_slice_is_its_pcm() -> None:
    pcm = bytes(range(160)) * 2
    assert read(audio(base64.b64encode(pcm).decode())) == AudioIn(pcm)


def test_an_audio_slice_of_an_odd_number_of_bytes_is_invalid_params() -> None:
    answer = refusal(audio(base64.b64encode(b"\x01\x02\x03").decode()))
    assert answer.code == -32602


def test_an_audio_slice_that_is_not_base64_is_invalid_params() -> None:
    assert refusal(audio("not base64 at all!")).code == -32602


def test_a_text_part_is_the_callers_text() -> None:
    text = read(request([{"text": "my card was charged twice", "mediaType": "text/plain"}]))
    assert text == TextIn("my card was charged twice")
    assert isinstance(text, TextIn) and not text.silence


def test_the_empty_user_input_marker_is_silence() -> None:
    text = read(request([{"text": "<EMPTY_USER_INPUT>", "mediaType": "text/plain"}]))
    assert isinstance(text, TextIn) and text.silence


def test_text_longer_than_a_spoken_turn_could_be_is_invalid_params() -> None:
    assert read(request([{"text": "a" * MAX_TEXT_CHARS}])) == TextIn("a" * MAX_TEXT_CHARS)
    assert refusal(request([{"text": "a" * (MAX_TEXT_CHARS + 1)}])).code == -32602


def test_dtmf_input_complete_reads_the_digits_and_why_they_ended() -> None:
    dtmf = event("DTMF_INPUT_COMPLETE", {"dtmfInputComplete": {"inputString": "4921", "terminationReason": "TIMEOUT"}})
    assert read(dtmf) == DtmfComplete("4921", "TIMEOUT")


def test_an_interruption_reads_its_type_and_reason() -> None:
    interruption = event("INTERRUPTION", {"interruption": {"type": "DTMF_INPUT", "reason": "dtmf"}})
    assert read(interruption) == Interruption("DTMF_INPUT", "dtmf")


def test_an_error_from_connect_reads_its_code_reason_and_category() -> None:
    error = {"errorCode": 408, "errorReason": "idle timeout", "errorCategory": "TIMEOUT"}
    assert read(event("ERROR", {"error": error})) == ConnectError(408, "idle timeout", "TIMEOUT")


def test_an_event_type_the_contract_does_not_name_is_ignored_not_refused() -> None:
    assert isinstance(read(event("SOMETHING_NEW", {"somethingNew": {}})), Ignored)


def test_an_audio_slice_that_carries_an_event_type_is_still_the_callers_audio() -> None:
    pcm = bytes(range(160)) * 2
    slice_ = request([{"raw": base64.b64encode(pcm).decode(), "mediaType": "audio/lpcm"}], {EVENT_TYPE: "AUDIO_INPUT"})
    assert read(slice_) == AudioIn(pcm)


def test_a_message_with_neither_text_nor_audio_is_ignored() -> None:
    assert isinstance(read(request([])), Ignored)


def test_a_known_event_without_its_data_part_is_invalid_params() -> None:
    answer = refusal(request([{"text": "READY"}], {EVENT_TYPE: "CHANNEL_STATE"}))
    assert (answer.request_id, answer.code) == ("req-1", -32602)


# -- frames that cannot be dispatched: JSON-RPC errors, A2A's ErrorInfo in their data


def answer_of(refused: Malformed) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(refused.frame())
    return answer


def test_a_refusal_is_a_json_rpc_error_whose_data_is_an_error_info() -> None:
    unknown = json.loads(request([], request_id="r-9")) | {"method": "tasks/cancel"}
    answer = answer_of(refusal(json.dumps(unknown)))
    assert answer["jsonrpc"] == "2.0" and answer["id"] == "r-9" and "result" not in answer
    assert answer["error"]["code"] == -32601 and answer["error"]["message"]
    [info] = answer["error"]["data"]
    assert info == {
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": "UNKNOWN_METHOD",
        "domain": "a2a-protocol.org",
    }


@pytest.mark.parametrize(
    ("frame", "code", "reason"),
    [
        (b'{"jsonrpc":"2.0"}', -32600, "BINARY_FRAME"),
        ("{not json", -32700, "INVALID_JSON"),
        ('["jsonrpc", "2.0"]', -32600, "NOT_AN_OBJECT"),
        ('{"jsonrpc":"1.0","id":"r","method":"SendMessage","params":{}}', -32600, "NOT_JSON_RPC_2"),
        ('{"jsonrpc":"2.0","method":"SendMessage","params":{}}', -32600, "NOT_JSON_RPC_2"),
        ('{"jsonrpc":"2.0","id":true,"method":"SendMessage","params":{}}', -32600, "NOT_JSON_RPC_2"),
        ('{"jsonrpc":"2.0","id":"r","method":"tasks/get","params":{}}', -32601, "UNKNOWN_METHOD"),
        ('{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{}}', -32602, "NO_MESSAGE"),
        ('{"jsonrpc":"2.0","id":"r","method":"SendMessage","params":{"message":{}}}', -32602, "NO_MESSAGE"),
    ],
    ids=[
        "binary",
        "not-json",
        "not-an-object",
        "json-rpc-1",
        "no-id",
        "boolean-id",
        "unknown-method",
        "no-message",
        "message-without-parts",
    ],
)
def test_a_frame_that_cannot_be_dispatched_gets_the_json_rpc_error_for_it(
    frame: str | bytes, code: int, reason: str
) -> None:
    answer = answer_of(refusal(frame))
    assert answer["error"]["code"] == code
    assert answer["error"]["data"][0]["reason"] == reason


@pytest.mark.parametrize(
    "frame",
    [
        init_session(audioInputConfiguration={**PCM16, "sampleRateHertz": 44100}),
        event("CHANNEL_STATE", {"channelState": {}}),
        audio("not base64 at all!"),
        event("FRAGMENT", {"fragment": {"fragmentId": "f", "partNumber": 3, "totalParts": 2, "payload": ""}}),
    ],
    ids=["init-session", "channel-state", "audio", "fragment"],
)
def test_a_refusals_reason_is_a_constant_and_what_was_wrong_is_in_its_message(frame: str) -> None:
    answer = answer_of(refusal(frame))
    assert re.fullmatch(r"[A-Z][A-Z0-9_]+[A-Z0-9]", answer["error"]["data"][0]["reason"])
    assert len(answer["error"]["data"][0]["reason"]) <= 63
    assert answer["error"]["message"].startswith("Invalid params: ")


def test_a_refusal_echoes_the_request_id_when_it_could_be_read() -> None:
    assert refusal('{"jsonrpc":"2.0","id":"r-7","method":"SendMessage","params":{}}').request_id == "r-7"


def test_a_refusal_has_a_null_id_when_none_could_be_read() -> None:
    assert answer_of(refusal("{not json"))["id"] is None


def test_an_oversized_frame_is_refused_unread() -> None:
    oversized = audio("A" * MAX_INBOUND_FRAME)
    answer = answer_of(refusal(oversized))
    assert (answer["id"], answer["error"]["code"]) == (None, -32600)
    assert answer["error"]["data"][0]["reason"] == "FRAME_TOO_LARGE"


def test_a_number_too_long_to_read_is_refused_not_raised() -> None:
    frame = '{"jsonrpc":"2.0","id":' + "9" * 5000 + ',"method":"SendMessage","params":{}}'
    assert refusal(frame).code in (-32700, -32600)


@pytest.mark.parametrize(
    "frame",
    [
        event("ERROR", {"error": {"errorCode": float("inf"), "errorReason": "x", "errorCategory": "TIMEOUT"}}),
        init_session(audioInputConfiguration={**PCM16, "sampleRateHertz": float("inf")}),
        event(
            "FRAGMENT", {"fragment": {"fragmentId": "f", "partNumber": float("-inf"), "totalParts": 2, "payload": ""}}
        ),
    ],
    ids=["error-code", "sample-rate", "part-number"],
)
def test_an_infinite_number_where_an_integer_belongs_is_invalid_params(frame: str) -> None:
    assert refusal(frame).code == -32602


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
EDGE_VALUES: st.SearchStrategy[Any] = st.sampled_from(
    [float("inf"), float("-inf"), float("nan"), -1, 0, 2**63, 1.5, "", True, None, [], {}]
)
SAMPLE_BODIES = {
    "INIT_SESSION": ("initSession", json.loads(init_session())["params"]["message"]["parts"][0]["data"]["initSession"]),
    "CHANNEL_STATE": ("channelState", {"state": "READY"}),
    "DTMF_INPUT_COMPLETE": ("dtmfInputComplete", {"inputString": "12", "terminationReason": "END_CHARACTER"}),
    "INTERRUPTION": ("interruption", {"type": "SYSTEM", "reason": "x"}),
    "ERROR": ("error", {"errorCode": 400, "errorReason": "x", "errorCategory": "BAD_REQUEST"}),
    "FRAGMENT": (
        "fragment",
        {"fragmentId": "f", "partNumber": 0, "totalParts": 2, "payload": "e30=", "encoding": "base64"},
    ),
}


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(sorted(SAMPLE_BODIES)), key=st.text(max_size=20), value=EDGE_VALUES | JSON_VALUES)
def test_no_value_in_any_field_of_an_event_makes_the_reader_raise(kind: str, key: str, value: Any) -> None:
    name, body = SAMPLE_BODIES[kind]
    for mutated in [*({**body, field: value} for field in body), {**body, key: value}, value]:
        Reader().feed(event(kind, {name: mutated}))


# -- FRAGMENT


def fragments(frame: str, cuts: list[int], *, fragment_id: str = "frag-1", request_id: str = "big-1") -> list[str]:
    """``frame`` carried as FRAGMENT events, its base64 cut at ``cuts``, in part order."""
    payload = base64.b64encode(frame.encode()).decode()
    bounds = [0, *sorted({c % (len(payload) + 1) for c in cuts}), len(payload)]
    pieces = [payload[a:b] for a, b in pairwise(bounds) if b > a] or [""]
    return [
        event(
            "FRAGMENT",
            {
                "fragment": {
                    "fragmentId": fragment_id,
                    "partNumber": number,
                    "totalParts": len(pieces),
                    "payload": piece,
                    "encoding": "base64",
                }
            },
            request_id=request_id,
        )
        for number, piece in enumerate(pieces)
    ]


WHOLE_FRAMES = [
    init_session(history=[{"role": "ROLE_USER", "parts": [{"text": "hello " * 40}]}]),
    audio(base64.b64encode(bytes(range(256)) * 8).decode()),
    event(
        "DTMF_INPUT_COMPLETE", {"dtmfInputComplete": {"inputString": "0123456789", "terminationReason": "MAX_LENGTH"}}
    ),
    request([{"text": "<EMPTY_USER_INPUT>", "mediaType": "text/plain"}]),
]


@settings(max_examples=200, deadline=None)
@given(
    whole=st.sampled_from(WHOLE_FRAMES),
    cuts=st.lists(st.integers(min_value=0, max_value=20_000), max_size=MAX_FRAGMENTS - 1),
    order=st.randoms(use_true_random=False),
)
def test_a_frame_split_into_fragments_delivered_in_any_order_is_read_as_the_whole_frame(
    whole: str, cuts: list[int], order: Any
) -> None:
    parts = fragments(whole, cuts)
    order.shuffle(parts)
    reader = Reader()
    events = [reader.feed(part) for part in parts]
    assert all(isinstance(e, Ignored) for e in events[:-1])
    assert events[-1] == Reader().feed(whole)


def test_fragments_of_two_frames_interleaved_are_each_reassembled() -> None:
    dtmf, text = WHOLE_FRAMES[2], WHOLE_FRAMES[3]
    first, second = fragments(dtmf, [10], fragment_id="a"), fragments(text, [5, 20], fragment_id="b")
    reader = Reader()
    events = [reader.feed(f) for f in (first[0], second[0], second[1], first[1], second[2])]
    assert [type(e) for e in events] == [Ignored, Ignored, Ignored, DtmfComplete, TextIn]


def test_a_reassembled_frame_that_cannot_be_dispatched_gets_its_own_error() -> None:
    inner = json.loads(request([]))
    inner["method"] = "tasks/cancel"
    parts = fragments(json.dumps(inner), [7])
    reader = Reader()
    reader.feed(parts[0])
    answer = reader.feed(parts[1])
    assert isinstance(answer, Malformed) and answer.code == -32601


def test_fragments_disagreeing_on_their_total_are_invalid_params() -> None:
    first, _ = fragments(WHOLE_FRAMES[2], [10])
    disagreeing = json.loads(fragments(WHOLE_FRAMES[2], [10, 20])[1])
    reader = Reader()
    reader.feed(first)
    assert isinstance(reader.feed(json.dumps(disagreeing)), Malformed)


@pytest.mark.parametrize(
    ("number", "total"),
    [(2, 2), (-1, 2), (0, 0), (0, MAX_FRAGMENTS + 1)],
    ids=["past-end", "negative", "none", "too-many"],
)
def test_a_fragment_numbered_outside_its_total_is_invalid_params(number: int, total: int) -> None:
    fragment = {"fragmentId": "f", "partNumber": number, "totalParts": total, "payload": "e30=", "encoding": "base64"}
    assert refusal(event("FRAGMENT", {"fragment": fragment})).code == -32602


def test_a_reassembled_payload_that_is_not_base64_json_text_is_invalid_params() -> None:
    fragment = {"fragmentId": "f", "partNumber": 0, "totalParts": 1, "payload": "//79", "encoding": "base64"}
    assert refusal(event("FRAGMENT", {"fragment": fragment})).code == -32602


def test_too_many_unfinished_fragment_ids_give_up_the_oldest() -> None:
    reader = Reader()
    halves = [fragments(WHOLE_FRAMES[2], [10], fragment_id=f"id-{n}") for n in range(MAX_FRAGMENTS + 1)]
    for first, _ in halves:
        assert isinstance(reader.feed(first), Ignored)
    assert isinstance(reader.feed(halves[-1][1]), DtmfComplete)
    assert isinstance(reader.feed(halves[0][1]), Ignored)


def test_fragments_reassembling_into_more_than_an_inbound_frame_are_refused() -> None:
    piece = "A" * (MAX_INBOUND_FRAME // 2)
    reader = Reader()
    answers = [
        reader.feed(
            event(
                "FRAGMENT",
                {"fragment": {"fragmentId": "big", "partNumber": n, "totalParts": 4, "payload": piece}},
                request_id="big",
            )
        )
        for n in range(3)
    ]
    assert isinstance(answers[-1], Malformed)
    assert (answers[-1].request_id, answers[-1].code, answers[-1].reason) == ("big", -32600, "FRAGMENTS_TOO_LARGE")


# -- what the agent sends


def result_of(frame: str) -> dict[str, Any]:
    envelope = json.loads(frame)
    assert envelope["jsonrpc"] == "2.0" and "error" not in envelope
    result: dict[str, Any] = envelope["result"]
    assert len(result) == 1 and next(iter(result)) in ("message", "task", "statusUpdate", "artifactUpdate")
    return result


def event_type(holder: dict[str, Any]) -> str:
    kind: str = holder["metadata"][EVENT_TYPE]
    return kind


def only_data(parts: list[dict[str, Any]]) -> dict[str, Any]:
    [part] = parts
    assert part["mediaType"] == "application/json"
    data: dict[str, Any] = part["data"]
    return data


def test_init_session_response_echoes_the_request_id_and_accepts() -> None:
    init = read(init_session())
    assert isinstance(init, InitSession)
    frame = init_response_frame(init, AudioConfig(8000), AudioConfig(24000))
    assert json.loads(frame)["id"] == "init"
    message = result_of(frame)["message"]
    assert (message["role"], message["contextId"], message["extensions"]) == ("ROLE_AGENT", CONTEXT, [EXT])
    assert event_type(message) == "INIT_SESSION_RESPONSE"
    assert only_data(message["parts"])["initSessionResponse"]["statusCode"] == "200"


def test_init_session_response_declares_a_counter_proposal_in_full_and_leaves_out_what_it_accepts() -> None:
    init = read(init_session())
    assert isinstance(init, InitSession)
    response = only_data(
        result_of(init_response_frame(init, AudioConfig(8000), AudioConfig(24000)))["message"]["parts"]
    )
    declared = response["initSessionResponse"]
    # Connect proposed 8 kHz in and 16 kHz out: the input is accepted by saying nothing of it (sample A.2).
    assert "audioInputConfiguration" not in declared
    assert declared["audioOutputConfiguration"] == {**PCM16, "sampleRateHertz": 24000}


def test_init_session_response_accepting_both_proposals_declares_neither() -> None:
    init = read(init_session())
    assert isinstance(init, InitSession)
    frame = init_response_frame(init, AudioConfig(8000), AudioConfig(16000))
    declared = only_data(result_of(frame)["message"]["parts"])["initSessionResponse"]
    assert declared == {"statusCode": "200"}


def test_an_audio_chunk_is_an_artifact_update_of_the_turns_task() -> None:
    pcm = b"\x10\x00" * 400
    frame = audio_chunk_frame(CONTEXT, "task-1", "art-1", pcm, append=True, last=False)
    update = result_of(frame)["artifactUpdate"]
    assert (update["taskId"], update["contextId"], update["append"], update["lastChunk"]) == (
        "task-1",
        CONTEXT,
        True,
        False,
    )
    artifact = update["artifact"]
    assert artifact["artifactId"] == "art-1" and event_type(artifact) == "AUDIO_RESPONSE_CHUNK"
    [part] = artifact["parts"]
    assert part["mediaType"] == "audio/lpcm" and base64.b64decode(part["raw"]) == pcm


@pytest.mark.parametrize("rate", [8000, 16000, 24000])
def test_an_audio_chunk_of_the_largest_size_allowed_stays_within_the_frame_budget(rate: int) -> None:
    assert FRAME_BUDGET == 16_384
    largest = audio_chunk_bytes(rate)
    frame = audio_chunk_frame(
        str(uuid.uuid4()), str(uuid.uuid4()), str(uuid.uuid4()), b"\x7f" * largest, append=False, last=False
    )
    assert len(frame.encode()) <= 16_384
    assert largest % 2 == 0 and largest >= rate * 2 // 10


def test_a_smaller_frame_budget_gives_smaller_chunks_within_it() -> None:
    largest = audio_chunk_bytes(8000, frame_budget=2_000)
    frame = audio_chunk_frame(CONTEXT, str(uuid.uuid4()), str(uuid.uuid4()), b"\x01" * largest, append=True, last=True)
    assert largest < audio_chunk_bytes(8000) and len(frame.encode()) <= 2_000


def test_streamed_frames_carry_json_rpc_ids_of_their_own() -> None:
    frames = [audio_chunk_frame(CONTEXT, "t", "a", b"\0\0", append=True, last=False) for _ in range(3)]
    ids = [json.loads(f)["id"] for f in frames]
    assert all(isinstance(i, str) and i for i in ids) and len(set(ids)) == 3


def test_the_agents_interruption_is_a_message_asking_connect_to_flush() -> None:
    message = result_of(interruption_frame(CONTEXT))["message"]
    assert (message["role"], message["contextId"], message["extensions"]) == ("ROLE_AGENT", CONTEXT, [EXT])
    assert event_type(message) == "INTERRUPTION"
    assert only_data(message["parts"]) == {"interruption": {"type": "USER_AUDIO_INPUT", "reason": "user_speech"}}


def test_a_trace_is_one_finished_artifact_of_the_turns_task() -> None:
    otlp: dict[str, Any] = {"resourceSpans": []}
    update = result_of(tracing_frame(CONTEXT, "task-1", otlp))["artifactUpdate"]
    assert (update["taskId"], update["contextId"], update["append"], update["lastChunk"]) == (
        "task-1",
        CONTEXT,
        False,
        True,
    )
    assert event_type(update["artifact"]) == "TRACING_SPAN"
    assert only_data(update["artifact"]["parts"]) == {"tracingSpan": {"otlp": otlp}}


def test_a_turn_ends_with_a_completed_status_and_nothing_more() -> None:
    now = datetime(2026, 12, 6, 1, 2, 3, 456789, tzinfo=UTC)
    update = result_of(status_frame(CONTEXT, "task-1", now=now))["statusUpdate"]
    assert (update["taskId"], update["contextId"]) == ("task-1", CONTEXT)
    assert update["status"] == {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-12-06T01:02:03.456Z"}


def test_the_status_timestamp_is_utc_with_a_z() -> None:
    status = result_of(status_frame(CONTEXT, "task-1"))["statusUpdate"]["status"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", status["timestamp"])


@pytest.mark.parametrize("finish", ["COMPLETE", "ESCALATE", "COMPLETE_WITH_ERROR"])
def test_finish_rides_in_the_completed_status_as_an_agent_message(finish: str) -> None:
    status = result_of(status_frame(CONTEXT, "task-1", finish=(finish, "the caller asked for a person")))
    message = status["statusUpdate"]["status"]["message"]
    assert status["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert (message["role"], message["contextId"], event_type(message)) == ("ROLE_AGENT", CONTEXT, "FINISH")
    assert only_data(message["parts"]) == {"finish": {"type": finish, "reason": "the caller asked for a person"}}


def test_a_failed_turn_is_a_failed_status_carrying_the_error() -> None:
    status = result_of(status_frame(CONTEXT, "task-1", error=(424, "Sonic did not answer", "DEPENDENCY_FAILURE")))
    status = status["statusUpdate"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    message = status["message"]
    assert (message["role"], event_type(message)) == ("ROLE_AGENT", "ERROR")
    assert only_data(message["parts"]) == {
        "error": {"errorCode": 424, "errorReason": "Sonic did not answer", "errorCategory": "DEPENDENCY_FAILURE"}
    }


def test_a_frame_within_the_budget_goes_as_itself() -> None:
    frame = status_frame(CONTEXT, "task-1")
    assert fitted(frame) == [frame]


@settings(max_examples=30, deadline=None)
@given(over=st.integers(min_value=1, max_value=40_000), budget=st.sampled_from([4_096, 16_384]))
def test_a_frame_over_the_budget_goes_as_fragments_each_within_it_that_rebuild_it(over: int, budget: int) -> None:
    otlp = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "é" * (budget // 2 + over)}]}]}]}
    frame = tracing_frame(CONTEXT, "task-1", otlp)
    pieces = fitted(frame, frame_budget=budget)
    fragments = []
    for piece in pieces:
        assert len(piece.encode()) <= budget
        envelope = json.loads(piece)
        assert envelope["id"] == json.loads(frame)["id"]
        message = result_of(piece)["message"]
        assert (message["role"], event_type(message)) == ("ROLE_AGENT", "FRAGMENT")
        fragments.append(only_data(message["parts"])["fragment"])
    assert {f["fragmentId"] for f in fragments} == {fragments[0]["fragmentId"]}
    assert [(f["partNumber"], f["totalParts"], f["encoding"]) for f in fragments] == [
        (n, len(fragments), "base64") for n in range(len(fragments))
    ]
    assert base64.b64decode("".join(f["payload"] for f in fragments)).decode() == frame


def test_an_error_frame_answers_the_given_id() -> None:
    answer = json.loads(error_frame("r-3", -32603, "Internal error", "SONIC_UNAVAILABLE"))
    assert answer["id"] == "r-3" and answer["error"]["code"] == -32603
    assert answer["error"]["data"][0]["reason"] == "SONIC_UNAVAILABLE"


@settings(max_examples=300, deadline=None)
@given(frame=st.text(max_size=200) | st.binary(max_size=50))
def test_no_frame_at_all_makes_the_reader_raise(frame: str | bytes) -> None:
    Reader().feed(frame)
