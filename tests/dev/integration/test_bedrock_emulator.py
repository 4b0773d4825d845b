"""The Bedrock Runtime ConverseStream emulator, driven by an unmodified boto3 ``bedrock-runtime`` client over loopback
HTTP: botocore decodes the event stream and parses the errors, so every assertion is about what a real client sees.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any, cast

import boto3
import botocore.loaders
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EventStreamError
from urllib3.exceptions import ProtocolError

from voicebridge_dev.local.bedrock import (
    BANK_AGENT,
    LABEL,
    MAX_OUTPUT_TOKENS,
    STOP_REASONS,
    BedrockEmulator,
    Fault,
    FaultKind,
)
from voicebridge_dev.local.cloud import LocalCloud

pytestmark = pytest.mark.timeout(30)

REGION = "us-east-1"
TOOLS = {
    "tools": [
        {
            "toolSpec": {
                "name": name,
                "description": description,
                "inputSchema": {"json": {"type": "object", "properties": {"reason": {"type": "string"}}}},
            }
        }
        for name, description in (("transfer_to_agent", "Hand the caller to a person"), ("end_call", "Hang up"))
    ]
}
BALANCE = (
    "Your checking account balance is two thousand four hundred and twelve dollars and fifty cents. Is there anything "
    "else I can help you with?"
)


# --- clients and calls --------------------------------------------------------------------------------


@pytest.fixture
def emulator() -> Iterator[BedrockEmulator]:
    with BedrockEmulator(time_to_first_token_ms=20, tokens_per_second=400) as emu:
        yield emu
        emu.stopping.set()
        assert emu.wait_idle(5)


def runtime(emulator: BedrockEmulator, **config: Any) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=emulator.url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(**{"retries": {"total_max_attempts": 1}, "read_timeout": 10, **config}),
    )


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"text": text}]}


def converse(
    emulator: BedrockEmulator, messages: list[dict[str, Any]], client: Any = None, **request: Any
) -> list[tuple[float, dict[str, Any]]]:
    """Every event of one ConverseStream call, each with the seconds since the call when botocore yielded it."""
    began = time.perf_counter()
    answer = (client or runtime(emulator)).converse_stream(modelId=emulator.model_id, messages=messages, **request)
    return [(time.perf_counter() - began, event) for event in answer["stream"]]


def events_of(timed: list[tuple[float, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [event for _, event in timed]


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e)


def tool_calls(events: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(name, decoded input) of each toolUse block, its input joined from its deltas."""
    calls: dict[int, tuple[str, str]] = {}
    for e in events:
        if "contentBlockStart" in e:
            start = e["contentBlockStart"]
            calls[start["contentBlockIndex"]] = (start["start"]["toolUse"]["name"], "")
        elif "contentBlockDelta" in e and "toolUse" in e["contentBlockDelta"]["delta"]:
            index = e["contentBlockDelta"]["contentBlockIndex"]
            name, text = calls[index]
            calls[index] = (name, text + e["contentBlockDelta"]["delta"]["toolUse"]["input"])
    return [(name, json.loads(text)) for name, text in calls.values()]


def stop_reason(events: list[dict[str, Any]]) -> str:
    (stop,) = [e["messageStop"]["stopReason"] for e in events if "messageStop" in e]
    return str(stop)


def control(emulator: BedrockEmulator, method: str, route: str, body: Any = None) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{emulator.url}/_emulator/{route}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def refusal(emulator: BedrockEmulator, client: Any = None, **request: Any) -> dict[str, str]:
    """The error botocore raises for a call, as its ``Error`` member."""
    request.setdefault("messages", [user("hello")])
    with pytest.raises(ClientError) as caught:
        (client or runtime(emulator)).converse_stream(**{"modelId": emulator.model_id, **request})
    return cast("dict[str, str]", caught.value.response["Error"]).copy()


# --- the stream ---------------------------------------------------------------------------------------


def test_the_reply_streams_as_word_deltas_that_join_to_its_text(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("What's my balance?")]))
    deltas = [e for e in events if "contentBlockDelta" in e]
    assert events[0] == {"messageStart": {"role": "assistant"}}
    assert len(deltas) == len(BALANCE.split())
    assert all(d["contentBlockDelta"]["contentBlockIndex"] == 0 for d in deltas)
    assert text_of(events) == BALANCE
    assert {"contentBlockStop": {"contentBlockIndex": 0}} in events
    assert stop_reason(events) == "end_turn"


def test_the_stream_ends_with_metadata_counting_the_tokens(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("What's my balance?")]))
    metadata = events[-1]["metadata"]
    words = len(BALANCE.split())
    assert metadata["usage"] == {"inputTokens": 3, "outputTokens": words, "totalTokens": 3 + words}
    assert metadata["metrics"]["latencyMs"] >= 0


def test_deltas_arrive_after_the_time_to_first_token_at_the_configured_rate(emulator: BedrockEmulator) -> None:
    emulator.configure({"time_to_first_token_ms": 150, "tokens_per_second": 40})
    timed = [(at, e) for at, e in converse(emulator, [user("What's my balance?")]) if "contentBlockDelta" in e]
    first, last = timed[0][0], timed[-1][0]
    assert 0.14 <= first < 0.5
    assert 0.9 / 40 <= (last - first) / (len(timed) - 1) <= 2.0 / 40
    (record,) = emulator.invocations
    assert record.first_token_at is not None
    assert 0.15 <= record.first_token_at - record.started < 0.4


def test_pacing_set_over_http_applies_to_the_next_call(emulator: BedrockEmulator) -> None:
    status, settings = control(emulator, "POST", "config", {"time_to_first_token_ms": 250})
    assert status == 200
    assert settings["time_to_first_token_ms"] == 250 and settings["model_ids"] == [emulator.model_id]
    first = next(at for at, e in converse(emulator, [user("hello")]) if "contentBlockDelta" in e)
    assert first >= 0.24
    assert control(emulator, "POST", "config", {"tokens_per_second": 0})[0] == 400
    assert control(emulator, "POST", "config", {"speed": 2})[0] == 400


# --- what it says -------------------------------------------------------------------------------------


def test_a_request_for_a_person_is_a_short_sentence_then_a_transfer_to_agent_call(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS))
    assert text_of(events) == "Of course. Let me connect you with one of my colleagues."
    assert tool_calls(events) == [("transfer_to_agent", {"reason": "the caller asked for a person"})]
    (start,) = [e["contentBlockStart"] for e in events if "contentBlockStart" in e]
    assert start["contentBlockIndex"] == 1
    assert start["start"]["toolUse"]["toolUseId"].startswith("tooluse_")
    assert stop_reason(events) == "tool_use"


def test_goodbye_ends_the_call_through_end_call(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("That's all, goodbye")], toolConfig=TOOLS))
    assert [name for name, _ in tool_calls(events)] == ["end_call"]
    assert stop_reason(events) == "tool_use"


def test_a_tool_the_request_does_not_declare_is_never_called(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("Let me talk to a person")]))
    assert text_of(events) == "Of course. Let me connect you with one of my colleagues."
    assert tool_calls(events) == []
    assert stop_reason(events) == "end_turn"


def test_a_question_on_disputing_a_charge_is_answered_in_five_sentences(emulator: BedrockEmulator) -> None:
    text = text_of(events_of(converse(emulator, [user("How do I dispute a card charge?")])))
    assert text.startswith("I'm sorry to hear that. To dispute a card charge")
    assert text.count(". ") + text.endswith(".") == 5


def test_the_last_user_message_is_the_one_answered(emulator: BedrockEmulator) -> None:
    history = [user("What's my balance?"), assistant(BALANCE), user("I'd like to pay a bill")]
    text = text_of(events_of(converse(emulator, history)))
    assert text.startswith("Your electricity bill of eighty-four dollars")


def test_a_yes_answers_the_question_the_agent_asked_just_before(emulator: BedrockEmulator) -> None:
    asked = text_of(events_of(converse(emulator, [user("pay my bill")])))
    assert asked.endswith("Would you like me to pay it from your checking account?")
    paid = text_of(events_of(converse(emulator, [user("pay my bill"), assistant(asked), user("yes please")])))
    assert paid.startswith("Done. I've paid your electricity bill")
    assert text_of(events_of(converse(emulator, [user("yes please")]))).startswith("Sorry,")


def test_a_prefill_is_continued_without_being_repeated(emulator: BedrockEmulator) -> None:
    prefill = "Your checking account balance is"
    events = events_of(converse(emulator, [user("What's my balance?"), assistant(prefill)]))
    assert text_of(events) == BALANCE[len(prefill) :]
    assert prefill + text_of(events) == BALANCE


def test_a_prefill_the_reply_does_not_begin_with_is_followed_by_the_whole_reply(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("What's my balance?"), assistant("Certainly.")]))
    assert text_of(events) == " " + BALANCE


def test_max_tokens_cuts_the_reply_short(emulator: BedrockEmulator) -> None:
    events = events_of(
        converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS, inferenceConfig={"maxTokens": 3})
    )
    assert text_of(events) == "Of course. Let"
    assert tool_calls(events) == []
    assert stop_reason(events) == "max_tokens"


def test_a_stop_sequence_ends_the_reply_before_it(emulator: BedrockEmulator) -> None:
    events = events_of(converse(emulator, [user("What's my balance?")], inferenceConfig={"stopSequences": [" Is"]}))
    assert text_of(events) == BALANCE.split(" Is")[0]
    assert stop_reason(events) == "stop_sequence"


def test_a_brain_given_over_http_answers_the_calls_after(emulator: BedrockEmulator) -> None:
    brain = {"rules": [{"match": ["weather"], "reply": "It is sunny.", "tool": {"name": "end_call", "input": {}}}]}
    assert control(emulator, "POST", "brain", brain) == (200, {"emulator": LABEL, "rules": 1})
    events = events_of(converse(emulator, [user("How's the weather?")], toolConfig=TOOLS))
    assert text_of(events) == "It is sunny."
    assert tool_calls(events) == [("end_call", {})]
    assert text_of(events_of(converse(emulator, [user("What's my balance?")]))).startswith("Sorry, I didn't catch")
    assert control(emulator, "GET", "brain") == (200, brain)


def test_a_malformed_brain_is_refused_and_the_old_one_kept(emulator: BedrockEmulator) -> None:
    status, answer = control(emulator, "POST", "brain", {"rules": [{"match": "(", "reply": "x"}]})
    assert status == 400 and "rules[0].match" in answer["message"]
    assert control(emulator, "GET", "brain") == (200, BANK_AGENT)


def test_a_brain_given_to_the_constructor_answers() -> None:
    brain = {"rules": [], "fallback": {"reply": "Scripted."}}
    with BedrockEmulator(brain=brain, time_to_first_token_ms=0, tokens_per_second=1000) as emu:
        assert text_of(events_of(converse(emu, [user("anything")]))) == "Scripted."


def test_a_foundation_model_arn_names_the_model_too(emulator: BedrockEmulator) -> None:
    arn = f"arn:aws:bedrock:{REGION}::foundation-model/{emulator.model_id}"
    answer = runtime(emulator).converse_stream(modelId=arn, messages=[user("hello")])
    assert text_of(list(answer["stream"])).startswith("Hello, thanks for calling.")


# --- validation ---------------------------------------------------------------------------------------


TOOL_USE = {"toolUse": {"toolUseId": "tooluse_1", "name": "end_call", "input": {}}}
TOOL_RESULT = {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "ended"}]}}


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        ({"messages": [assistant("Hi.")]}, "must start with a user message"),
        ({"messages": [user("a"), user("b")]}, "must alternate between user and assistant"),
        ({"messages": [{"role": "user", "content": [{"text": "   "}]}]}, "messages.0.content.0 is blank"),
        ({"messages": [{"role": "user", "content": []}]}, "messages.0 is empty"),
        ({"messages": [user("hi"), assistant("Sure. ")]}, "cannot end with trailing whitespace"),
        ({"inferenceConfig": {"temperature": 1.5}}, "'inferenceConfig.temperature' failed to satisfy constraint"),
        ({"inferenceConfig": {"topP": 2}}, "'inferenceConfig.topP'"),
        ({"inferenceConfig": {"maxTokens": MAX_OUTPUT_TOKENS + 1}}, "exceeds the model limit"),
        ({"system": [{"text": "Be brief."}, {"text": "x", "cachePoint": {"type": "default"}}]}, "exactly one"),
        (
            {"messages": [user("bye"), {"role": "assistant", "content": [TOOL_USE]}, user("hi")]},
            "toolConfig field must be defined",
        ),
        (
            {"messages": [user("bye"), {"role": "assistant", "content": [TOOL_USE]}, user("hi")], "toolConfig": TOOLS},
            "Expected toolResult blocks at messages.2.content for the following Ids: tooluse_1",
        ),
        ({"messages": [{"role": "user", "content": [TOOL_RESULT]}], "toolConfig": TOOLS}, "answer ids no toolUse"),
        ({"toolConfig": {"tools": TOOLS["tools"] * 2}}, "more than once: end_call, transfer_to_agent"),
        (
            {"toolConfig": {"tools": [{"toolSpec": {"name": "x", "inputSchema": {"json": {"type": "string"}}}}]}},
            "Input should be 'object'",
        ),
        ({"toolConfig": {**TOOLS, "toolChoice": {"tool": {"name": "other"}}}}, "does not declare"),
        ({"guardrailConfig": {"guardrailIdentifier": "gr1", "guardrailVersion": "latest"}}, "guardrailVersion"),
        ({"guardrailConfig": {"guardrailIdentifier": "Bad_Id", "guardrailVersion": "1"}}, "guardrailIdentifier"),
        (
            {"messages": [{"role": "user", "content": [{"image": {"format": "png", "source": {"bytes": b"x"}}}]}]},
            "doesn't support the image content block",
        ),
    ],
)
def test_a_request_the_service_would_refuse_is_a_validation_exception(
    emulator: BedrockEmulator, request_fields: dict[str, Any], message: str
) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    # botocore's own checks are off: the service must refuse these even from a client that checks nothing.
    error = refusal(emulator, runtime(emulator, parameter_validation=False), **request_fields)
    assert error["Code"] == "ValidationException"
    assert message in error["Message"]
    assert len(emulator.pending_faults) == 1, "a refused request takes no fault"
    (record,) = emulator.invocations
    assert (record.http_status, record.outcome, record.first_token_at) == (400, "error", None)


def test_a_model_it_does_not_serve_is_an_invalid_model_identifier(emulator: BedrockEmulator) -> None:
    error = refusal(emulator, modelId="amazon.titan-text-express-v1")
    assert error == {"Code": "ValidationException", "Message": "The provided model identifier is invalid."}


def test_a_valid_guardrail_and_inference_configuration_are_accepted(emulator: BedrockEmulator) -> None:
    events = events_of(
        converse(
            emulator,
            [user("hello")],
            system=[{"text": "You are a bank's agent."}],
            inferenceConfig={"maxTokens": 200, "temperature": 0.2, "topP": 0.9},
            guardrailConfig={
                "guardrailIdentifier": "gr1",
                "guardrailVersion": "DRAFT",
                "streamProcessingMode": "async",
            },
            additionalModelRequestFields={"top_k": 5},
        )
    )
    assert stop_reason(events) == "end_turn"


# --- faults -------------------------------------------------------------------------------------------


def test_throttling_before_the_stream_is_a_throttling_exception(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    assert refusal(emulator)["Code"] == "ThrottlingException"
    assert [r.outcome for r in emulator.invocations] == ["fault_throttle"]


def test_boto3_retries_a_throttled_call_and_streams(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE))
    client = runtime(emulator, retries={"max_attempts": 3, "mode": "standard"})
    assert text_of(events_of(converse(emulator, [user("hello")], client=client))).startswith("Hello")
    assert [r.outcome for r in emulator.invocations] == ["fault_throttle", "ok"]


def test_a_fault_on_the_first_turns_strikes_each_of_their_calls_and_no_later_turns(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.THROTTLE, count=100, first_turns=1))
    for _ in range(3):
        assert refusal(emulator)["Code"] == "ThrottlingException"
    later = [user("hello"), assistant("Sorry, could you say that again?"), user("hello")]
    assert text_of(events_of(converse(emulator, later))).startswith("Hello")
    assert [r.outcome for r in emulator.invocations] == ["fault_throttle"] * 3 + ["ok"]


def test_service_unavailable_before_the_stream(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.UNAVAILABLE))
    assert refusal(emulator)["Code"] == "ServiceUnavailableException"


def test_a_model_stream_error_mid_stream_follows_the_deltas_already_sent(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STREAM_ERROR, after_tokens=3, message="the model failed"))
    answer = runtime(emulator).converse_stream(modelId=emulator.model_id, messages=[user("What's my balance?")])
    received = []
    with pytest.raises(EventStreamError) as caught:
        for event in answer["stream"]:
            received.append(event)
    assert caught.value.response["Error"] == {"Code": "modelStreamErrorException", "Message": "the model failed"}
    assert text_of(received) == "Your checking account"
    (record,) = emulator.invocations
    assert (record.outcome, record.deltas, record.text) == ("fault_stream_error", 3, "Your checking account")


def test_any_exception_event_of_the_stream_can_be_injected(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STREAM_ERROR, after_tokens=0, exception="throttlingException"))
    answer = runtime(emulator).converse_stream(modelId=emulator.model_id, messages=[user("hello")])
    with pytest.raises(EventStreamError) as caught:
        list(answer["stream"])
    assert caught.value.response["Error"]["Code"] == "throttlingException"


def test_a_stall_holds_the_stream_then_it_goes_on(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STALL, after_tokens=2, seconds=0.6))
    timed = [(at, e) for at, e in converse(emulator, [user("What's my balance?")]) if "contentBlockDelta" in e]
    assert timed[2][0] - timed[1][0] >= 0.55
    assert text_of([e for _, e in timed]) == BALANCE
    assert emulator.invocations[0].outcome == "ok" and emulator.invocations[0].fault == "stall"


def test_a_client_that_gives_up_on_a_stall_times_out(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STALL, after_tokens=1, seconds=3))
    answer = runtime(emulator, read_timeout=0.5).converse_stream(modelId=emulator.model_id, messages=[user("hi")])
    with pytest.raises(Exception, match="Read timed out"):
        list(answer["stream"])


def test_a_dropped_connection_cuts_the_stream_mid_reply(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.DROP, after_tokens=4))
    answer = runtime(emulator).converse_stream(modelId=emulator.model_id, messages=[user("What's my balance?")])
    received = []
    with pytest.raises(ProtocolError):
        for event in answer["stream"]:
            received.append(event)
    assert text_of(received) == "Your checking account balance"
    assert emulator.invocations[0].outcome == "fault_drop"


def test_faults_are_injected_listed_and_cleared_over_http(emulator: BedrockEmulator) -> None:
    status, answer = control(emulator, "POST", "faults", [{"kind": "throttle", "count": 2}, {"kind": "drop"}])
    assert status == 201 and [f["kind"] for f in answer["pending"]] == ["throttle", "drop"]
    assert refusal(emulator)["Code"] == "ThrottlingException"
    assert control(emulator, "GET", "faults")[1]["pending"][0]["count"] == 1
    assert control(emulator, "DELETE", "faults") == (200, {"cleared": 2})
    assert control(emulator, "POST", "faults", {"kind": "meltdown"})[0] == 400
    assert control(emulator, "POST", "faults", {"kind": "stream_error", "exception": "oops"})[0] == 400


# --- records and the control plane --------------------------------------------------------------------


def test_each_call_is_recorded_with_its_request_and_first_token(emulator: BedrockEmulator) -> None:
    converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS)
    status, answer = control(emulator, "GET", "invocations")
    assert status == 200 and answer["emulator"] == LABEL
    (record,) = answer["invocations"]
    assert record["body"]["messages"] == [user("Let me talk to a person")]
    assert record["model_id"] == emulator.model_id
    assert (record["stop_reason"], record["tool"]) == ("tool_use", "transfer_to_agent")
    assert record["started"] < record["first_token_at"] < record["finished"]


def test_an_operation_it_does_not_emulate_is_unknown(emulator: BedrockEmulator) -> None:
    with pytest.raises(ClientError) as caught:
        runtime(emulator).converse(modelId=emulator.model_id, messages=[user("hello")])
    assert caught.value.response["Error"]["Code"] == "UnknownOperationException"


def test_the_local_cloud_exports_reach_it_with_a_plain_client(cloud_env: LocalCloud) -> None:
    # The plain, untyped client a user would make: the emulator is checked against the wire, not the stubs.
    client: Any = boto3.client("bedrock-runtime", region_name=REGION, config=Config(retries={"total_max_attempts": 1}))
    answer = client.converse_stream(modelId=os.environ["BEDROCK_MODEL_ID"], messages=[user("What's my balance?")])
    assert text_of(list(answer["stream"])) == BALANCE
    assert cloud_env.bedrock.invocations[-1].body["messages"] == [user("What's my balance?")]


# --- stop reasons -------------------------------------------------------------------------------------


def test_the_stop_reasons_it_can_end_with_are_botocores() -> None:
    model = botocore.loaders.Loader().load_service_model("bedrock-runtime", "service-2")
    assert list(STOP_REASONS) == model["shapes"]["StopReason"]["enum"]


@pytest.mark.parametrize("reason", STOP_REASONS)
def test_a_stop_fault_ends_the_stream_with_that_stop_reason_after_the_words_asked(
    emulator: BedrockEmulator, reason: str
) -> None:
    emulator.inject(Fault(FaultKind.STOP, stop_reason=reason, after_tokens=2))
    events = events_of(converse(emulator, [user("What's my balance?")]))
    assert (text_of(events), stop_reason(events)) == ("Your checking", reason)
    assert "usage" in events[-1]["metadata"]
    (record,) = emulator.invocations
    assert (record.outcome, record.fault, record.stop_reason) == ("ok", "stop", reason)


def test_a_forced_tool_use_keeps_the_whole_tool_call(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STOP, stop_reason="tool_use", after_tokens=100))
    events = events_of(converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS))
    assert tool_calls(events) == [("transfer_to_agent", {"reason": "the caller asked for a person"})]
    assert stop_reason(events) == "tool_use"


def test_a_forced_malformed_tool_use_carries_a_tool_input_that_is_not_json(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STOP, stop_reason="malformed_tool_use", after_tokens=100))
    events = events_of(converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS))
    assert text_of(events) == "Of course. Let me connect you with one of my colleagues."
    with pytest.raises(ValueError):
        tool_calls(events)
    assert stop_reason(events) == "malformed_tool_use"


def test_any_other_forced_stop_drops_the_tool_call(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.STOP, stop_reason="end_turn", after_tokens=100))
    events = events_of(converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS))
    assert (tool_calls(events), stop_reason(events)) == ([], "end_turn")


def test_a_guardrail_intervention_streams_the_guardrails_words_in_place_of_the_reply(
    emulator: BedrockEmulator,
) -> None:
    blocked = "Sorry, I can't discuss that."
    emulator.inject(Fault(FaultKind.STOP, stop_reason="guardrail_intervened", after_tokens=100, message=blocked))
    events = events_of(converse(emulator, [user("Let me talk to a person")], toolConfig=TOOLS))
    assert (text_of(events), tool_calls(events), stop_reason(events)) == (blocked, [], "guardrail_intervened")


def test_a_stop_fault_names_a_stop_reason_of_botocores_model(emulator: BedrockEmulator) -> None:
    assert control(emulator, "POST", "faults", {"kind": "stop", "stop_reason": "content_filtered"})[0] == 201
    assert control(emulator, "POST", "faults", {"kind": "stop", "stop_reason": "bored"})[0] == 400


# --- errors before the stream, as botocore parses them ------------------------------------------------


def raw_converse_stream(emulator: BedrockEmulator, body: Any) -> tuple[int, dict[str, str], Any]:
    request = urllib.request.Request(
        f"{emulator.url}/model/{emulator.model_id}/converse-stream",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=5)
    return caught.value.code, dict(caught.value.headers), json.load(caught.value)


@pytest.mark.parametrize(
    ("kind", "status", "code"),
    [
        (FaultKind.THROTTLE, 429, "ThrottlingException"),
        (FaultKind.MODEL_NOT_READY, 429, "ModelNotReadyException"),
        (FaultKind.UNAVAILABLE, 503, "ServiceUnavailableException"),
    ],
)
def test_an_injected_refusal_has_the_status_header_and_body_of_botocores_error_shape(
    emulator: BedrockEmulator, kind: FaultKind, status: int, code: str
) -> None:
    emulator.inject(Fault(kind))
    answer_status, headers, body = raw_converse_stream(emulator, {"messages": [user("hello")]})
    assert answer_status == status
    assert headers["x-amzn-ErrorType"] == f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    assert set(body) == {"message"} and body["message"]
    emulator.inject(Fault(kind))
    assert refusal(emulator)["Code"] == code


def test_a_refusal_strikes_the_first_calls_it_counts_then_the_model_answers(emulator: BedrockEmulator) -> None:
    emulator.inject(Fault(FaultKind.MODEL_NOT_READY, count=2))
    assert [refusal(emulator)["Code"], refusal(emulator)["Code"]] == ["ModelNotReadyException"] * 2
    assert text_of(events_of(converse(emulator, [user("hello")]))).startswith("Hello")
    outcomes = [r.outcome for r in emulator.invocations]
    assert outcomes == ["fault_model_not_ready", "fault_model_not_ready", "ok"]


# --- what a model's family refuses --------------------------------------------------------------------

TITAN = "amazon.titan-text-express-v1"
MISTRAL_INSTRUCT = "mistral.mistral-7b-instruct-v0:2"
LLAMA = "meta.llama3-1-70b-instruct-v1:0"
HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"
NOVA = "amazon.nova-lite-v1:0"
COMMAND = "cohere.command-text-v14"
GUARDRAIL = {"guardrailIdentifier": "gr1", "guardrailVersion": "1"}
SYSTEM = [{"text": "Be brief."}]


@pytest.fixture(scope="module")
def families() -> Iterator[BedrockEmulator]:
    with BedrockEmulator(
        model_ids=(TITAN, MISTRAL_INSTRUCT, LLAMA, HAIKU, NOVA, COMMAND),
        time_to_first_token_ms=0,
        tokens_per_second=1000,
    ) as emu:
        yield emu


@pytest.mark.parametrize(
    ("model_id", "request_fields", "message"),
    [
        (TITAN, {"system": SYSTEM}, "This model doesn't support the system field. Remove system and try again."),
        (TITAN, {"toolConfig": TOOLS}, "This model doesn't support tool use in streaming mode."),
        (MISTRAL_INSTRUCT, {"system": SYSTEM}, "This model doesn't support the system field."),
        (LLAMA, {"toolConfig": TOOLS}, "This model doesn't support tool use in streaming mode."),
        (f"us.{LLAMA}", {"toolConfig": TOOLS}, "This model doesn't support tool use in streaming mode."),
        (
            f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.{LLAMA}",
            {"toolConfig": TOOLS},
            "tool use in streaming mode",
        ),
        (HAIKU, {"guardrailConfig": GUARDRAIL}, "This model doesn't support the guardrailConfig field."),
        (COMMAND, {}, "The model is unsupported for streaming."),
    ],
)
def test_a_field_the_models_family_does_not_take_is_a_validation_exception(
    families: BedrockEmulator, model_id: str, request_fields: dict[str, Any], message: str
) -> None:
    families.clear_faults()
    families.inject(Fault(FaultKind.THROTTLE))
    error = refusal(families, modelId=model_id, **request_fields)
    assert error["Code"] == "ValidationException"
    assert message in error["Message"]
    assert len(families.pending_faults) == 1, "a refused request takes no fault"
    families.clear_faults()


@pytest.mark.parametrize(
    ("model_id", "request_fields"),
    [
        (TITAN, {"guardrailConfig": GUARDRAIL}),
        (LLAMA, {"system": SYSTEM, "guardrailConfig": GUARDRAIL}),
        (HAIKU, {"system": SYSTEM, "toolConfig": TOOLS}),
        (NOVA, {"system": SYSTEM, "toolConfig": TOOLS, "guardrailConfig": GUARDRAIL}),
    ],
)
def test_what_the_models_family_takes_is_answered(
    families: BedrockEmulator, model_id: str, request_fields: dict[str, Any]
) -> None:
    answer = runtime(families).converse_stream(
        modelId=model_id, messages=[user("What's my balance?")], **request_fields
    )
    assert stop_reason(list(answer["stream"])) == "end_turn"
