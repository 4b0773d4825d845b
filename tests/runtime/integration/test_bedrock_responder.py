"""The product's Bedrock responder, as the container builds it, against the Bedrock Runtime emulator over loopback HTTP:
its retries inside the turn, every stop reason botocore's model names, and requests that carry only what the model's
family takes (the emulator refusing, from its own reading of the Bedrock User Guide, whatever the family does not).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from voicebridge import container
from voicebridge.conversation import Action
from voicebridge.converse.responder import Reply, ResponderError, TurnRequest
from voicebridge.converse.responders.bedrock import BedrockReply
from voicebridge_dev.local.bedrock import DEFAULT_MODEL_ID, BedrockEmulator, Fault, FaultKind

pytestmark = pytest.mark.timeout(30)

LLAMA = "meta.llama3-1-70b-instruct-v1:0"
TITAN = "amazon.titan-text-express-v1"
HAIKU = "anthropic.claude-3-5-haiku-20241022-v1:0"
BALANCE = "Your balance is two hundred dollars. Anything else?"
PERSON = "Of course, one moment."
BRAIN = {
    "rules": [
        {"match": ["balance"], "reply": BALANCE},
        {
            "match": ["person"],
            "reply": PERSON,
            "tool": {"name": "transfer_to_agent", "input": {"reason": "the caller asked for a person"}},
        },
    ],
    "fallback": {"reply": "Sorry, could you say that another way?"},
}

Build = Callable[..., Any]


@pytest.fixture(scope="module")
def emulator() -> Iterator[BedrockEmulator]:
    models = (DEFAULT_MODEL_ID, LLAMA, TITAN, HAIKU)
    with BedrockEmulator(model_ids=models, brain=BRAIN, time_to_first_token_ms=10, tokens_per_second=400) as emu:
        yield emu


@pytest.fixture
def bedrock(emulator: BedrockEmulator, monkeypatch: pytest.MonkeyPatch) -> Iterator[Build]:
    """A fresh container's Bedrock responder for the model and settings given, pointed at the emulator."""
    emulator.clear_faults()

    def responder(**env: str) -> Any:
        for name in list(os.environ):
            if name.startswith(("RESPONDER", "BEDROCK_", "HISTORY_", "APOLOGY_")):
                monkeypatch.delenv(name)
        settings = {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "RESPONDER": "bedrock",
            "BEDROCK_MODEL_ID": DEFAULT_MODEL_ID,
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": emulator.url,
            **env,
        }
        for name, value in settings.items():
            monkeypatch.setenv(name, value)
        container.reset()
        return container.responder()

    yield responder
    container.reset()
    emulator.clear_faults()
    emulator.wait_idle(10)


def turn(transcript: str) -> TurnRequest:
    return TurnRequest("3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f", 1, transcript)


def soon() -> float:
    return time.monotonic() + 8.0


def heard(reply: Reply) -> tuple[str, Action, dict[str, str]]:
    return "".join(reply.text()), reply.action, dict(reply.attributes)


def outcomes(emulator: BedrockEmulator, since: int) -> list[str]:
    return [record.outcome for record in emulator.invocations[since:]]


# --- retries ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "outcome"),
    [
        (FaultKind.THROTTLE, "fault_throttle"),
        (FaultKind.MODEL_NOT_READY, "fault_model_not_ready"),
        (FaultKind.UNAVAILABLE, "fault_unavailable"),
    ],
)
def test_a_refused_first_call_is_made_again_and_the_reply_arrives(
    bedrock: Build, emulator: BedrockEmulator, kind: FaultKind, outcome: str
) -> None:
    since = len(emulator.invocations)
    emulator.inject(Fault(kind))
    reply = bedrock().respond(turn("what is my balance"), deadline=soon())
    assert heard(reply) == (BALANCE, Action.CONTINUE, {})
    assert isinstance(reply, BedrockReply) and reply.retries == 1
    assert outcomes(emulator, since) == [outcome, "ok"]


def test_a_throttling_event_before_any_text_is_retried(bedrock: Build, emulator: BedrockEmulator) -> None:
    since = len(emulator.invocations)
    emulator.inject(Fault(FaultKind.STREAM_ERROR, exception="throttlingException", after_tokens=0))
    reply = bedrock().respond(turn("what is my balance"), deadline=soon())
    assert heard(reply)[0] == BALANCE
    assert outcomes(emulator, since) == ["fault_stream_error", "ok"]


def test_a_throttling_event_after_text_fails_the_reply_without_asking_again(
    bedrock: Build, emulator: BedrockEmulator
) -> None:
    since = len(emulator.invocations)
    emulator.inject(Fault(FaultKind.STREAM_ERROR, exception="throttlingException", after_tokens=2))
    deltas = bedrock().respond(turn("what is my balance"), deadline=soon()).text()
    said = [next(deltas), next(deltas)]
    with pytest.raises(ResponderError, match=r"the model stream failed \(throttlingException\)"):
        next(deltas)
    assert "".join(said) == "Your balance"
    assert outcomes(emulator, since) == ["fault_stream_error"]


def test_no_retry_is_made_that_could_not_answer_in_the_turns_time(bedrock: Build, emulator: BedrockEmulator) -> None:
    since = len(emulator.invocations)
    emulator.inject(Fault(FaultKind.THROTTLE))
    with pytest.raises(ResponderError, match=r"\(ThrottlingException\)"):
        bedrock().respond(turn("what is my balance"), deadline=time.monotonic() + 1.0)
    assert outcomes(emulator, since) == ["fault_throttle"]


# --- every stop reason ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reason", "said", "words", "message", "expected"),
    [
        ("end_turn", "a person please", 100, None, (PERSON, Action.CONTINUE)),
        ("tool_use", "a person please", 100, None, (PERSON, Action.TRANSFER)),
        ("max_tokens", "what is my balance", 3, None, ("Your balance is", Action.CONTINUE)),
        ("stop_sequence", "what is my balance", 3, None, ("Your balance is", Action.CONTINUE)),
        (
            "guardrail_intervened",
            "a person please",
            100,
            "Sorry, I can't help.",
            ("Sorry, I can't help.", Action.CONTINUE),
        ),
        ("malformed_model_output", "what is my balance", 2, None, ("Your balance", Action.CONTINUE)),
        ("malformed_tool_use", "a person please", 100, None, (PERSON, Action.CONTINUE)),
        ("content_filtered", "what is my balance", 0, None, "the model stopped without an answer (content_filtered)"),
        (
            "model_context_window_exceeded",
            "what is my balance",
            0,
            None,
            "the model stopped without an answer (model_context_window_exceeded)",
        ),
    ],
)
def test_each_stop_reason_has_an_outcome(
    bedrock: Build,
    emulator: BedrockEmulator,
    reason: str,
    said: str,
    words: int,
    message: str | None,
    expected: tuple[str, Action] | str,
) -> None:
    emulator.inject(Fault(FaultKind.STOP, stop_reason=reason, after_tokens=words, message=message))
    reply = bedrock().respond(turn(said), deadline=soon())
    if isinstance(expected, str):
        with pytest.raises(ResponderError) as failure:
            heard(reply)
        assert failure.value.safe_message == expected
    else:
        assert heard(reply)[:2] == expected
    assert isinstance(reply, BedrockReply) and reply.stop_reason == reason


# --- what each family is sent -------------------------------------------------------------------------------


def test_a_family_that_takes_no_tools_while_streaming_is_sent_none_and_still_answers(
    bedrock: Build, emulator: BedrockEmulator
) -> None:
    reply = bedrock(BEDROCK_MODEL_ID=f"us.{LLAMA}").respond(turn("a person please"), deadline=soon())
    assert heard(reply) == (PERSON, Action.CONTINUE, {})
    assert "toolConfig" not in emulator.invocations[-1].body


def test_a_family_that_takes_no_system_prompt_reads_it_in_the_first_user_message(
    bedrock: Build, emulator: BedrockEmulator
) -> None:
    reply = bedrock(BEDROCK_MODEL_ID=TITAN, BEDROCK_SYSTEM_PROMPT="Be brief.").respond(
        turn("what is my balance"), deadline=soon()
    )
    assert heard(reply)[0] == BALANCE
    body = emulator.invocations[-1].body
    assert "system" not in body and "toolConfig" not in body
    assert body["messages"] == [{"role": "user", "content": [{"text": "Be brief.\n\nwhat is my balance"}]}]


def test_latency_optimized_inference_is_asked_of_a_model_that_offers_it_and_the_service_takes_it(
    bedrock: Build, emulator: BedrockEmulator
) -> None:
    reply = bedrock(BEDROCK_MODEL_ID=f"us.{HAIKU}", AWS_DEFAULT_REGION="us-east-2").respond(
        turn("a person please"), deadline=soon()
    )
    assert heard(reply)[0]
    assert emulator.invocations[-1].body["performanceConfig"] == {"latency": "optimized"}


def test_latency_optimized_inference_is_not_asked_where_the_model_does_not_offer_it(
    bedrock: Build, emulator: BedrockEmulator
) -> None:
    # Llama 3.1 70B offers it in us-east-2 and us-west-2 only.
    reply = bedrock(BEDROCK_MODEL_ID=f"us.{LLAMA}", AWS_DEFAULT_REGION="us-east-1").respond(
        turn("a person please"), deadline=soon()
    )
    assert heard(reply)[0] == PERSON
    assert "performanceConfig" not in emulator.invocations[-1].body


def test_a_guardrail_the_family_refuses_is_still_sent_and_the_turn_fails_loudly(
    bedrock: Build, emulator: BedrockEmulator
) -> None:
    env = {"BEDROCK_MODEL_ID": HAIKU, "BEDROCK_GUARDRAIL_ID": "gr1abc", "BEDROCK_GUARDRAIL_VERSION": "1"}
    with pytest.raises(ResponderError, match="ValidationException"):
        heard(bedrock(**env).respond(turn("a person please"), deadline=soon()))
    assert "guardrailConfig" in emulator.invocations[-1].body
