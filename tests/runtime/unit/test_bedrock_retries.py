"""The Bedrock responder retries what Bedrock says may pass — within the turn's deadline, and never once it has spoken.

Retryable: ``ThrottlingException``, ``ModelNotReadyException`` (HTTP 429) and ``ServiceUnavailableException`` (503)
before the stream, and the ``throttlingException`` and ``serviceUnavailableException`` events inside it before any
text. The client (botocore's) retries nothing itself; time is a fake clock that the fake sleep moves on.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError, EventStreamError

from voicebridge.converse.responder import ResponderError, TurnRequest
from voicebridge.converse.responders.bedrock import BedrockResponder

TRANSCRIPT = "what is my balance"


def refused(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "no capacity"}}, "ConverseStream")


def stream_error(code: str) -> EventStreamError:
    return EventStreamError({"Error": {"Code": code, "Message": "no capacity"}}, "ConverseStream")


def said(*deltas: str) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        *({"contentBlockDelta": {"delta": {"text": d}, "contentBlockIndex": 0}} for d in deltas),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


class Stream:
    """A ``converse_stream`` answer's ``stream``: its events, then maybe an exception event."""

    def __init__(self, events: list[dict[str, Any]], error: Exception | None = None) -> None:
        self.events = events
        self.error = error
        self.closed = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        yield from self.events
        if self.error is not None:
            raise self.error

    def close(self) -> None:
        self.closed = True


class Bedrock:
    """A ``bedrock-runtime`` client answering each call with the next of ``answers`` (the last one again after)."""

    def __init__(self, *answers: Stream | Exception) -> None:
        self.answers = list(answers)
        self.calls = 0

    def converse_stream(self, **_: Any) -> dict[str, Any]:
        answer = self.answers[min(self.calls, len(self.answers) - 1)]
        self.calls += 1
        if isinstance(answer, Exception):
            raise answer
        return {"stream": answer}


class Clock:
    """``time.monotonic`` for the responder, moved on only by its sleeps."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 6))
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


def responder(client: Bedrock, clock: Clock, **options: Any) -> BedrockResponder:
    defaults: dict[str, Any] = {"rng": lambda: 1.0, "retry_reserve_s": 1.5}
    return BedrockResponder(
        client, model_id="amazon.nova-lite-v1:0", sleep=clock.sleep, clock=clock, **{**defaults, **options}
    )


def turn() -> TurnRequest:
    return TurnRequest("3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f", 4, TRANSCRIPT)


# --- before the stream ------------------------------------------------------------------------------------


def test_a_throttled_call_is_made_again_and_its_reply_arrives(clock: Clock) -> None:
    client = Bedrock(refused("ThrottlingException"), Stream(said("Two hundred dollars.")))
    reply = responder(client, clock).respond(turn(), deadline=clock.now + 8)
    assert list(reply.text()) == ["Two hundred dollars."]
    assert (client.calls, reply.retries) == (2, 1)


@pytest.mark.parametrize("code", ["ThrottlingException", "ModelNotReadyException", "ServiceUnavailableException"])
def test_each_retryable_refusal_is_retried(clock: Clock, code: str) -> None:
    client = Bedrock(refused(code), Stream(said("Hello.")))
    reply = responder(client, clock).respond(turn(), deadline=clock.now + 8)
    assert (list(reply.text()), reply.retries) == (["Hello."], 1)


@pytest.mark.parametrize(
    "code", ["ValidationException", "AccessDeniedException", "ModelErrorException", "InternalServerException"]
)
def test_a_refusal_another_call_would_get_too_is_not_retried(clock: Clock, code: str) -> None:
    client = Bedrock(refused(code), Stream(said("Hello.")))
    with pytest.raises(ResponderError, match=f"Bedrock refused the request \\({code}"):
        responder(client, clock).respond(turn(), deadline=clock.now + 8)
    assert (client.calls, clock.slept) == (1, [])


def test_a_reply_made_at_the_first_call_counts_no_retries(clock: Clock) -> None:
    reply = responder(Bedrock(Stream(said("Hello."))), clock).respond(turn(), deadline=clock.now + 8)
    list(reply.text())
    assert reply.retries == 0


def test_retries_wait_a_full_jitter_back_off_doubling_up_to_its_cap(clock: Clock) -> None:
    client = Bedrock(refused("ThrottlingException"))
    options = {"max_attempts": 5, "backoff_base_s": 0.2, "backoff_cap_s": 0.5}
    with pytest.raises(ResponderError, match=r"\(ThrottlingException\)"):
        responder(client, clock, **options).respond(turn(), deadline=clock.now + 30)
    assert (client.calls, clock.slept) == (5, [0.2, 0.4, 0.5, 0.5])


def test_the_wait_is_drawn_from_the_random_source(clock: Clock) -> None:
    client = Bedrock(refused("ThrottlingException"), Stream(said("Hello.")))
    list(responder(client, clock, rng=lambda: 0.25).respond(turn(), deadline=clock.now + 8).text())
    assert clock.slept == [0.05]


def test_a_call_still_throttled_after_the_last_attempt_fails_the_turn_as_a_refusal(clock: Clock) -> None:
    client = Bedrock(refused("ThrottlingException"))
    with pytest.raises(ResponderError) as failure:
        responder(client, clock, max_attempts=3).respond(turn(), deadline=clock.now + 30)
    assert failure.value.safe_message == "Bedrock refused the request (ThrottlingException)"
    assert client.calls == 3


def test_no_retry_is_begun_that_could_not_answer_before_the_deadline(clock: Clock) -> None:
    client = Bedrock(refused("ThrottlingException"), Stream(said("Hello.")))
    with pytest.raises(ResponderError, match=r"\(ThrottlingException\)"):
        responder(client, clock, retry_reserve_s=1.5).respond(turn(), deadline=clock.now + 1.6)
    assert (client.calls, clock.slept) == (1, [])


def test_retries_stop_once_the_budget_is_spent(clock: Clock) -> None:
    # 0.2 s waited + 1.5 s reserved fits in 2 s; the next wait, 0.4 s, would leave less than the reserve.
    client = Bedrock(refused("ModelNotReadyException"))
    with pytest.raises(ResponderError, match=r"\(ModelNotReadyException\)"):
        responder(client, clock, max_attempts=5).respond(turn(), deadline=clock.now + 2.0)
    assert (client.calls, clock.slept) == (2, [0.2])


# --- inside the stream ------------------------------------------------------------------------------------


@pytest.mark.parametrize("code", ["throttlingException", "serviceUnavailableException"])
def test_a_retryable_exception_event_before_any_text_is_retried(clock: Clock, code: str) -> None:
    failed = Stream([{"messageStart": {"role": "assistant"}}], error=stream_error(code))
    client = Bedrock(failed, Stream(said("Your balance", " is two hundred dollars.")))
    reply = responder(client, clock).respond(turn(), deadline=clock.now + 8)
    assert list(reply.text()) == ["Your balance", " is two hundred dollars."]
    assert (client.calls, reply.retries, failed.closed) == (2, 1, True)
    assert reply.stop_reason == "end_turn"


def test_no_retry_follows_text_already_yielded(clock: Clock) -> None:
    events = said("Your balance")[:2]
    client = Bedrock(Stream(events, error=stream_error("throttlingException")), Stream(said("Hello.")))
    deltas = responder(client, clock).respond(turn(), deadline=clock.now + 8).text()
    assert next(deltas) == "Your balance"
    with pytest.raises(ResponderError) as failure:
        next(deltas)
    assert failure.value.safe_message == "the model stream failed (throttlingException)"
    assert (client.calls, clock.slept) == (1, [])


def test_an_exception_event_that_is_not_retryable_fails_the_reply(clock: Clock) -> None:
    client = Bedrock(Stream([], error=stream_error("validationException")), Stream(said("Hello.")))
    with pytest.raises(ResponderError, match=r"\(validationException\)"):
        list(responder(client, clock).respond(turn(), deadline=clock.now + 8).text())
    assert client.calls == 1


def test_a_model_stream_error_before_any_text_is_retried_as_botocore_says(clock: Clock) -> None:
    client = Bedrock(Stream([], error=stream_error("modelStreamErrorException")), Stream(said("Hello.")))
    reply = responder(client, clock).respond(turn(), deadline=clock.now + 8)
    assert ("".join(reply.text()), reply.retries, client.calls) == ("Hello.", 1, 2)


def test_a_model_stream_error_after_text_was_said_is_not_retried(clock: Clock) -> None:
    client = Bedrock(Stream(said("Hello."), error=stream_error("modelStreamErrorException")), Stream(said("Hi.")))
    reply = responder(client, clock).respond(turn(), deadline=clock.now + 8)
    with pytest.raises(ResponderError, match=r"\(modelStreamErrorException\)"):
        list(reply.text())
    assert client.calls == 1


def test_a_stream_retry_and_a_call_retry_share_one_budget(clock: Clock) -> None:
    client = Bedrock(
        Stream([], error=stream_error("throttlingException")),
        refused("ThrottlingException"),
        Stream(said("Hello.")),
    )
    reply = responder(client, clock, max_attempts=2).respond(turn(), deadline=clock.now + 8)
    with pytest.raises(ResponderError, match=r"Bedrock refused the request \(ThrottlingException\)"):
        list(reply.text())
    assert client.calls == 2


# --- what is logged -----------------------------------------------------------------------------------------


def test_each_retry_is_logged_with_its_code_and_never_the_callers_words(
    clock: Clock, log_lines: Callable[[], list[dict[str, Any]]]
) -> None:
    client = Bedrock(refused("ThrottlingException"), Stream(said("Hello.")))
    list(responder(client, clock).respond(turn(), deadline=clock.now + 8).text())
    lines = log_lines()
    (retry,) = [line for line in lines if line["message"] == "retrying the model"]
    assert (retry["code"], retry["retry"], retry["turn"], retry["delay_ms"]) == ("ThrottlingException", 1, 4, 200)
    assert [line["retries"] for line in lines if line["message"] == "bedrock reply"] == [1]
    assert TRANSCRIPT not in json.dumps(lines)
