"""The customer-function responder: the documented event goes out, and only a well-formed answer comes back."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from botocore.exceptions import ClientError, ReadTimeoutError

from voicebridge.conversation import Action, Exchange
from voicebridge.converse.responder import ResponderError, TurnRequest
from voicebridge.converse.responders.function import FunctionResponder, event_of, reply_of

LATER = float("inf")
REQUEST = TurnRequest(
    "3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f",
    3,
    "what is my balance",
    history=[Exchange("hello", "Hello! How can I help?")],
    attributes={"CustomerTier": "gold"},
)


class Lambda:
    """A ``lambda`` client whose Invoke answers with ``payload`` (and ``FunctionError`` when given), or fails."""

    def __init__(self, payload: Any = None, *, function_error: str | None = None, error: Exception | None = None):
        self.payload = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.function_error = function_error
        self.error = error
        self.requests: list[dict[str, Any]] = []

    def invoke(self, **parameters: Any) -> dict[str, Any]:
        self.requests.append(parameters)
        if self.error is not None:
            raise self.error
        answer: dict[str, Any] = {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": io.BytesIO(self.payload)}
        if self.function_error:
            answer["FunctionError"] = self.function_error
        return answer


def respond(client: Lambda) -> tuple[str, Action, dict[str, str]]:
    reply = FunctionResponder(client, function="answer-calls").respond(REQUEST, deadline=LATER)
    return "".join(reply.text()), reply.action, dict(reply.attributes)


def test_the_function_gets_the_documented_event_synchronously() -> None:
    client = Lambda({"Reply": "Hi."})
    respond(client)
    (request,) = client.requests
    assert (request["FunctionName"], request["InvocationType"]) == ("answer-calls", "RequestResponse")
    assert json.loads(request["Payload"]) == {
        "Version": "1",
        "ContactId": "3f1e5c2a-8d7b-4c1e-9a0f-2b6d4e8c1a7f",
        "Turn": {"Index": 3, "Transcript": "what is my balance"},
        "History": [{"Caller": "hello", "Agent": "Hello! How can I help?"}],
        "Attributes": {"CustomerTier": "gold"},
    }


def test_an_answer_gives_the_reply_its_action_and_attributes() -> None:
    answer = {"Reply": "Transferring you.", "Action": "transfer", "Attributes": {"Intent": "Agent"}}
    assert respond(Lambda(answer)) == ("Transferring you.", Action.TRANSFER, {"Intent": "Agent"})


def test_every_field_of_an_answer_is_optional() -> None:
    assert respond(Lambda({})) == ("", Action.CONTINUE, {})


def test_an_unknown_action_continues() -> None:
    assert reply_of(b'{"Reply": "Hm.", "Action": "Dance"}').action is Action.CONTINUE


@pytest.mark.parametrize(
    ("payload", "reason"),
    [
        (b"Your balance is", "not JSON"),
        (b'["Your balance"]', "a JSON list, not an object"),
        (b'{"Reply": ["Your balance"]}', "Reply is not text"),
        (b'{"Reply": "x", "Action": 2}', "Action is not text"),
        (b'{"Reply": "x", "Attributes": {"Balance": 200}}', "Attributes do not map names to text"),
        (b'{"Reply": "x", "Attributes": "Balance"}', "Attributes do not map names to text"),
    ],
)
def test_a_malformed_answer_is_refused_saying_why(payload: bytes, reason: str) -> None:
    with pytest.raises(ResponderError, match=reason):
        respond(Lambda(payload))


def test_a_function_that_raised_fails_with_its_error_type_only() -> None:
    error = {"errorType": "KeyError", "errorMessage": "'what is my balance'", "stackTrace": []}
    with pytest.raises(ResponderError) as failure:
        respond(Lambda(error, function_error="Unhandled"))
    assert failure.value.safe_message == "the function failed (KeyError)"


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (
            ClientError({"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "Invoke"),
            "the function could not be invoked (TooManyRequestsException)",
        ),
        (ReadTimeoutError(endpoint_url="http://lambda"), "the function did not answer (ReadTimeoutError)"),
    ],
)
def test_a_failed_invocation_fails_with_a_short_reason(error: Exception, reason: str) -> None:
    with pytest.raises(ResponderError) as failure:
        respond(Lambda(error=error))
    assert failure.value.safe_message == reason


def test_no_invocation_is_made_once_the_deadline_has_passed() -> None:
    client = Lambda({})
    with pytest.raises(ResponderError, match="no time left"):
        FunctionResponder(client, function="f").respond(REQUEST, deadline=0)
    assert client.requests == []


def test_a_first_turn_has_an_empty_history_and_no_attributes() -> None:
    event = event_of(TurnRequest("c1", 0, "hi"))
    assert (event["History"], event["Attributes"]) == ([], {})
