"""The Bedrock responder: ConverseStream's events, as botocore yields them, become a streamed reply and its action.

The event dicts here are what botocore's ``bedrock-runtime`` parser makes of the wire (checked by decoding framed
events with botocore's own EventStream); an exception event is raised by botocore's iteration as EventStreamError.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import botocore.loaders
import pytest
from botocore.exceptions import ClientError, EventStreamError
from hypothesis import given
from hypothesis import strategies as st
from urllib3.exceptions import ProtocolError

from voicebridge.conversation import Action, Exchange
from voicebridge.converse.responder import ResponderError, TurnRequest
from voicebridge.converse.responders.bedrock import (
    COMPLETE_STOPS,
    KEYPAD_TEXT,
    STOP_REASONS,
    UNFINISHED_STOPS,
    BedrockResponder,
    ConverseStreamReader,
    conversation,
)

LATER = float("inf")


def start() -> dict[str, Any]:
    return {"messageStart": {"role": "assistant"}}


def text(delta: str, index: int = 0) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"text": delta}, "contentBlockIndex": index}}


def tool_start(name: str, index: int = 1) -> dict[str, Any]:
    tool = {"toolUseId": "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", "name": name}
    return {"contentBlockStart": {"start": {"toolUse": tool}, "contentBlockIndex": index}}


def tool_input(fragment: str, index: int = 1) -> dict[str, Any]:
    return {"contentBlockDelta": {"delta": {"toolUse": {"input": fragment}}, "contentBlockIndex": index}}


def block_stop(index: int = 0) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def stop(reason: str) -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


METADATA = {
    "metadata": {"usage": {"inputTokens": 412, "outputTokens": 18, "totalTokens": 430}, "metrics": {"latencyMs": 611}}
}


def said(*deltas: str, reason: str = "end_turn") -> list[dict[str, Any]]:
    return [start(), *(text(d) for d in deltas), block_stop(0), stop(reason), METADATA]


class Stream:
    """What ``converse_stream`` returns under ``stream``: iterable once, closable, maybe failing after its events."""

    def __init__(self, events: list[dict[str, Any]], error: Exception | None = None, pause_s: float = 0.0) -> None:
        self.events = events
        self.error = error
        self.pause_s = pause_s
        self.read = 0
        self.closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for event in self.events:
            if self.read:
                time.sleep(self.pause_s)
            self.read += 1
            yield event
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closed = True


class Bedrock:
    """A ``bedrock-runtime`` client that answers one ConverseStream."""

    def __init__(self, stream: Stream | None = None, error: Exception | None = None) -> None:
        self.stream = stream or Stream(said("Hello."))
        self.error = error
        self.requests: list[dict[str, Any]] = []

    def converse_stream(self, **parameters: Any) -> dict[str, Any]:
        self.requests.append(parameters)
        if self.error is not None:
            raise self.error
        return {"ResponseMetadata": {"HTTPStatusCode": 200}, "stream": self.stream}


def responder(client: Bedrock, **options: Any) -> BedrockResponder:
    # A throttled call is retried after a back-off; these tests are about what the reply says, not the wait.
    options.setdefault("sleep", lambda _seconds: None)
    return BedrockResponder(client, model_id="amazon.nova-lite-v1:0", system_prompt="Be brief.", **options)


def turn(transcript: str = "can I talk to someone", **fields: Any) -> TurnRequest:
    return TurnRequest("3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f", 2, transcript, **fields)


def answer(events: list[dict[str, Any]], **fields: Any) -> tuple[list[str], Action, dict[str, str]]:
    reply = responder(Bedrock(Stream(events))).respond(turn(**fields), deadline=LATER)
    deltas = list(reply.text())
    return deltas, reply.action, dict(reply.attributes)


# --- text -------------------------------------------------------------------------------------------------


def test_text_deltas_are_yielded_in_order_as_they_arrive() -> None:
    stream = Stream(said("Your balance", " is two hundred", " dollars."))
    reply = responder(Bedrock(stream)).respond(turn("what is my balance"), deadline=LATER)
    deltas = reply.text()
    assert next(deltas) == "Your balance"
    assert stream.read == 2
    assert list(deltas) == [" is two hundred", " dollars."]
    assert (reply.action, dict(reply.attributes), reply.stop_reason) == (Action.CONTINUE, {}, "end_turn")


def test_the_stream_is_closed_once_read() -> None:
    stream = Stream(said("Hello."))
    list(responder(Bedrock(stream)).respond(turn(), deadline=LATER).text())
    assert stream.closed


def test_a_reply_cut_by_max_tokens_stands_as_written() -> None:
    assert answer(said("Your balance is", reason="max_tokens"))[:2] == (["Your balance is"], Action.CONTINUE)


def test_an_empty_reply_is_an_error() -> None:
    with pytest.raises(ResponderError, match="empty"):
        answer(said())


# --- tools ------------------------------------------------------------------------------------------------


def test_a_tool_call_in_fragments_becomes_the_action_and_its_reason_an_attribute() -> None:
    events = [
        start(),
        text("Of course, one moment."),
        block_stop(0),
        tool_start("transfer_to_agent"),
        tool_input('{"rea'),
        tool_input('son": "asked for '),
        tool_input('a person"}'),
        block_stop(1),
        stop("tool_use"),
        METADATA,
    ]
    assert answer(events) == (["Of course, one moment."], Action.TRANSFER, {"ActionReason": "asked for a person"})


def test_a_tool_call_without_text_speaks_the_configured_line() -> None:
    events = [start(), tool_start("end_call", index=0), tool_input("{}", index=0), block_stop(0), stop("tool_use")]
    reply = responder(Bedrock(Stream(events)), hangup_text="Goodbye for now.").respond(turn("bye"), deadline=LATER)
    assert (list(reply.text()), reply.action, dict(reply.attributes)) == (["Goodbye for now."], Action.HANGUP, {})


def test_asking_for_the_card_on_the_keypad_tells_the_flow_and_continues() -> None:
    events = [
        start(),
        text("Please type it on the keypad."),
        block_stop(0),
        tool_start("collect_card_by_keypad"),
        tool_input('{"reason": "pays by card"}'),
        block_stop(1),
        stop("tool_use"),
    ]
    assert answer(events) == (
        ["Please type it on the keypad."],
        Action.CONTINUE,
        {"ActionReason": "pays by card", "Collect": "card"},
    )


def test_asking_for_the_card_without_a_word_says_how_to_type_it() -> None:
    events = [start(), tool_start("collect_card_by_keypad", index=0), tool_input("{}", index=0), block_stop(0)]
    assert answer([*events, stop("tool_use")]) == ([KEYPAD_TEXT], Action.CONTINUE, {"Collect": "card"})


def test_a_tool_input_that_is_not_json_still_asks_for_the_action() -> None:
    events = [start(), tool_start("transfer_to_agent", index=0), tool_input('{"reason": "unfinished', index=0)]
    deltas, action, attributes = answer([*events, block_stop(0), stop("tool_use")])
    assert (deltas, action, attributes) == (["Let me connect you with a colleague."], Action.TRANSFER, {})


def test_a_tool_that_was_not_offered_is_ignored() -> None:
    events = [start(), text("Let me check."), tool_start("lookup_balance"), tool_input("{}"), stop("tool_use")]
    assert answer(events)[:2] == (["Let me check."], Action.CONTINUE)


def test_both_tools_are_offered_with_a_reason_in_their_input() -> None:
    client = Bedrock()
    list(responder(client).respond(turn(), deadline=LATER).text())
    tools = client.requests[0]["toolConfig"]["tools"]
    assert [t["toolSpec"]["name"] for t in tools] == ["transfer_to_agent", "end_call", "collect_card_by_keypad"]
    assert all(t["toolSpec"]["description"] for t in tools)
    assert all(t["toolSpec"]["inputSchema"]["json"]["properties"]["reason"]["type"] == "string" for t in tools)


# --- stop reasons -----------------------------------------------------------------------------------------


def test_a_guardrail_intervention_is_the_reply_and_the_conversation_continues() -> None:
    events = [
        start(),
        text("Sorry, I can't help with that."),
        tool_start("end_call"),
        stop("guardrail_intervened"),
        METADATA,
    ]
    assert answer(events) == (["Sorry, I can't help with that."], Action.CONTINUE, {})


@pytest.mark.parametrize("reason", ["content_filtered", "malformed_model_output", "model_context_window_exceeded"])
def test_a_model_that_stops_with_nothing_said_fails_naming_the_stop_reason(reason: str) -> None:
    with pytest.raises(ResponderError, match=reason):
        answer([start(), stop(reason)])


def test_a_model_that_stops_after_speaking_keeps_what_it_said_and_continues() -> None:
    events = [start(), text("I can transfer you."), tool_start("transfer_to_agent"), stop("malformed_tool_use")]
    assert answer(events)[:2] == (["I can transfer you."], Action.CONTINUE)


def test_every_stop_reason_botocore_declares_has_an_outcome() -> None:
    model = botocore.loaders.Loader().load_service_model("bedrock-runtime", "service-2")
    assert set(model["shapes"]["StopReason"]["enum"]) == STOP_REASONS
    assert len(STOP_REASONS) == len(COMPLETE_STOPS) + 1 + len(UNFINISHED_STOPS) == 9


@pytest.mark.parametrize("reason", sorted(UNFINISHED_STOPS))
def test_a_reply_the_model_broke_off_keeps_what_was_said_and_acts_on_no_tool(reason: str) -> None:
    events = [start(), text("One moment."), tool_start("end_call"), tool_input("{}"), stop(reason)]
    assert answer(events)[:2] == (["One moment."], Action.CONTINUE)


def test_a_stop_reason_newer_than_this_code_is_taken_as_an_unfinished_one() -> None:
    assert answer([start(), text("Hello."), stop("some_future_reason")])[:2] == (["Hello."], Action.CONTINUE)
    with pytest.raises(ResponderError, match="some_future_reason"):
        answer([start(), stop("some_future_reason")])


def test_a_stream_that_ends_before_message_stop_is_an_error() -> None:
    stream = Stream([start(), text("Your bal")])
    reply = responder(Bedrock(stream)).respond(turn(), deadline=LATER)
    deltas = reply.text()
    assert next(deltas) == "Your bal"
    with pytest.raises(ResponderError, match="before messageStop"):
        next(deltas)


def test_the_reader_records_usage_and_latency() -> None:
    reader = ConverseStreamReader()
    for event in said("Hi."):
        reader.feed(event)
    assert (reader.stop_reason, reader.usage["outputTokens"], reader.latency_ms) == ("end_turn", 18, 611)


# --- failures ---------------------------------------------------------------------------------------------


def test_an_exception_event_mid_stream_fails_the_reply_after_what_was_said() -> None:
    error = EventStreamError(
        {"Error": {"Code": "modelStreamErrorException", "Message": "can you hear me, said the caller"}},
        "ConverseStream",
    )
    stream = Stream([start(), text("Your balance")], error=error)
    deltas = responder(Bedrock(stream)).respond(turn(), deadline=LATER).text()
    assert next(deltas) == "Your balance"
    with pytest.raises(ResponderError) as failure:
        next(deltas)
    assert failure.value.safe_message == "the model stream failed (modelStreamErrorException)"
    assert stream.closed


def test_a_connection_broken_mid_stream_fails_the_reply() -> None:
    # urllib3's own error: botocore reads an event stream straight from urllib3, without wrapping what it raises.
    stream = Stream([start()], error=ProtocolError("Connection broken: IncompleteRead(0 bytes read)"))
    with pytest.raises(ResponderError, match=r"interrupted \(ProtocolError\)"):
        list(responder(Bedrock(stream)).respond(turn(), deadline=LATER).text())


@pytest.mark.parametrize(
    ("code", "message", "reason"),
    [
        ("ThrottlingException", "Too many requests", "Bedrock refused the request (ThrottlingException)"),
        (
            "ModelErrorException",
            "the model said: what is my balance",
            "Bedrock refused the request (ModelErrorException)",
        ),
        (
            "ValidationException",
            "The provided model identifier is invalid.",
            "Bedrock refused the request (ValidationException: The provided model identifier is invalid.)",
        ),
    ],
)
def test_a_refused_call_fails_with_a_short_safe_reason(code: str, message: str, reason: str) -> None:
    error = ClientError({"Error": {"Code": code, "Message": message}}, "ConverseStream")
    with pytest.raises(ResponderError) as failure:
        responder(Bedrock(error=error)).respond(turn("what is my balance"), deadline=LATER)
    assert failure.value.safe_message == reason


def test_a_stream_still_running_at_the_deadline_fails() -> None:
    stream = Stream(said("One.", " Two."), pause_s=0.1)
    deltas = responder(Bedrock(stream)).respond(turn(), deadline=time.monotonic() + 0.15).text()
    assert next(deltas) == "One."
    with pytest.raises(ResponderError, match="in time"):
        next(deltas)
    assert stream.closed


def test_no_call_is_made_once_the_deadline_has_passed() -> None:
    client = Bedrock()
    with pytest.raises(ResponderError, match="no time left"):
        responder(client).respond(turn(), deadline=time.monotonic() - 1)
    assert client.requests == []


def test_an_empty_turn_is_not_sent() -> None:
    with pytest.raises(ResponderError, match="no words"):
        responder(Bedrock()).respond(turn("  "), deadline=LATER)


# --- the request ------------------------------------------------------------------------------------------


def test_the_history_becomes_alternating_messages_that_start_with_the_caller() -> None:
    history = [Exchange("", "Welcome to the bank."), Exchange("hi", "Hello! How can I help?"), Exchange("balance", "")]
    assert conversation(turn("and my bills", history=history)) == [
        {"role": "user", "content": [{"text": "hi"}]},
        {"role": "assistant", "content": [{"text": "Hello! How can I help?"}]},
        {"role": "user", "content": [{"text": "balance\nand my bills"}]},
    ]


def test_prefill_is_sent_as_the_last_assistant_message_and_only_the_rest_is_spoken() -> None:
    client = Bedrock(Stream(said(" two hundred dollars.")))
    reply = responder(client).respond(turn("my balance", spoken_prefix="Your balance is "), deadline=LATER)
    assert list(reply.text()) == [" two hundred dollars."]
    assert client.requests[0]["messages"][-2:] == [
        {"role": "user", "content": [{"text": "my balance"}]},
        {"role": "assistant", "content": [{"text": "Your balance is"}]},
    ]


def test_a_prefilled_reply_may_have_nothing_left_to_say() -> None:
    assert answer(said(), spoken_prefix="Your balance is two hundred dollars.") == ([], Action.CONTINUE, {})


def test_the_request_carries_the_model_prompt_inference_settings_and_guardrail() -> None:
    client = Bedrock()
    options = {"max_tokens": 200, "temperature": 0.2, "top_p": 0.9, "guardrail": ("gr1abc", "3")}
    list(responder(client, **options).respond(turn(), deadline=LATER).text())
    request = client.requests[0]
    assert {k: v for k, v in request.items() if k not in ("messages", "toolConfig")} == {
        "modelId": "amazon.nova-lite-v1:0",
        "system": [{"text": "Be brief."}],
        "inferenceConfig": {"maxTokens": 200, "temperature": 0.2, "topP": 0.9},
        "guardrailConfig": {"guardrailIdentifier": "gr1abc", "guardrailVersion": "3"},
    }


def test_unset_inference_settings_and_prompt_are_left_to_the_model() -> None:
    client = Bedrock()
    BedrockResponder(client, model_id="m").respond(turn(), deadline=LATER)
    assert "system" not in client.requests[0] and "guardrailConfig" not in client.requests[0]
    assert client.requests[0]["inferenceConfig"] == {"maxTokens": 400}


# --- any chunking -----------------------------------------------------------------------------------------


def _pieces(whole: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted({c % (len(whole) + 1) for c in cuts}), len(whole)]
    return [whole[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@given(reply=st.text(min_size=1), reason=st.text(), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_any_chunking_of_the_text_and_the_tool_input_reads_the_same(reply: str, reason: str, cuts: list[int]) -> None:
    tool_json = json.dumps({"reason": reason})
    events = [
        start(),
        *(text(piece) for piece in _pieces(reply, cuts)),
        block_stop(0),
        tool_start("end_call"),
        *(tool_input(piece) for piece in _pieces(tool_json, cuts)),
        block_stop(1),
        stop("tool_use"),
    ]
    reader = ConverseStreamReader()
    said = "".join(reader.feed(event) for event in events)
    action, call = reader.finish()
    assert (said, action, call.reason if call else None) == (reply, Action.HANGUP, reason.strip())


def test_a_spanish_contact_tells_the_model_to_answer_in_its_language() -> None:
    (system,) = responder(Bedrock(Stream([]))).request(turn("quiero mi saldo", language="es-US"))["system"]
    assert system["text"].startswith("Be brief.\n\n")
    assert "BCP-47 tag es-US: always answer in that language" in system["text"]


def test_an_english_contact_is_sent_the_system_prompt_alone() -> None:
    assert responder(Bedrock(Stream([]))).request(turn(language="en-US"))["system"] == [{"text": "Be brief."}]
