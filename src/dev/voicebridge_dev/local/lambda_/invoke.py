"""The ``Invoke`` operation of the Lambda API (rest-json), as an unmodified boto3 client calls it::

    POST /2015-03-31/functions/{FunctionName}/invocations[?Qualifier=$LATEST]      body: the event (JSON)
         X-Amz-Invocation-Type: RequestResponse (default) | Event | DryRun
         X-Amz-Log-Type: None (default) | Tail
         X-Amz-Client-Context: base64 of a JSON object, the handler's ``context.client_context``

    200  RequestResponse: the handler's result as JSON, X-Amz-Executed-Version: $LATEST,
         x-amzn-RequestId = the handler's ``context.aws_request_id``.
         When the handler raised, timed out or its runtime failed: X-Amz-Function-Error: Unhandled
         and the body {"errorMessage", "errorType", "requestId", "stackTrace"}; a timeout is
         {"errorMessage": "Task timed out after 3.00 seconds", "errorType": "Sandbox.Timedout"}.
         With LogType Tail, X-Amz-Log-Result: base64 of the last 4 KB of the invocation's log
         (START, the handler's output, END, REPORT).
    202  Event: queued; the handler runs in the background (failures are logged and recorded, not retried)
    204  DryRun: the function exists
    4xx  x-amzn-ErrorType: ResourceNotFoundException (404) | InvalidRequestContentException (400) |
         InvalidParameterValueException (400) | TooManyRequestsException (429);
         body {"Type": "User", "message": …}
    500  x-amzn-ErrorType: ServiceException, for a function whose environment the template reader cannot
         resolve (the reason is the message) or an invocation cut short by stop()

Requests are not authenticated: SigV4 headers are ignored. This module reads a request's headers and body and
shapes the answer; running the function is the emulator's.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from voicebridge_dev.local.lambda_.records import InvocationType
from voicebridge_dev.local.service import ApiError

LOG_TAIL_BYTES: Final = 4096


@dataclass
class Answer:
    """An HTTP answer of the Lambda API: status, headers of its own, body."""

    status: int
    headers: dict[str, str]
    body: bytes = b""


@dataclass(frozen=True)
class InvokeRequest:
    """What an Invoke's headers ask for."""

    invocation_type: InvocationType
    log_type: str
    client_context: dict[str, Any] | None


def parse_invoke_headers(headers: Mapping[str, str]) -> InvokeRequest:
    """Read an Invoke's headers (keyed in lower case); a bad one raises the API's error."""
    try:
        kind = InvocationType(headers.get("x-amz-invocation-type") or InvocationType.REQUEST_RESPONSE)
    except ValueError as exc:
        raise ApiError(
            400,
            "InvalidParameterValueException",
            "InvocationType must be one of RequestResponse, Event, DryRun",
        ) from exc
    log_type = headers.get("x-amz-log-type") or "None"
    if log_type not in ("None", "Tail"):
        raise ApiError(400, "InvalidParameterValueException", "LogType must be one of None, Tail")
    return InvokeRequest(kind, log_type, _decode_client_context(headers.get("x-amz-client-context")))


def parse_event(body: bytes) -> str:
    """The event's JSON text (``{}`` for an empty body); a body that is not JSON raises the API's error."""
    event = body.decode("utf-8", "replace") if body.strip() else "{}"
    try:
        json.loads(event)
    except ValueError as exc:
        raise ApiError(400, "InvalidRequestContentException", f"Could not parse request body into json: {exc}") from exc
    return event


def _decode_client_context(header: str | None) -> dict[str, Any] | None:
    if not header:
        return None
    try:
        decoded = json.loads(base64.b64decode(header, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise ApiError(
            400,
            "InvalidRequestContentException",
            "Client context must be a valid Base64-encoded JSON object.",
        ) from exc
    if not isinstance(decoded, dict):
        raise ApiError(400, "InvalidRequestContentException", "Client context must be a JSON object.")
    return {key: decoded.get(key) for key in ("client", "custom", "env")}


def log_tail(lines: list[str]) -> str:
    """The ``X-Amz-Log-Result`` of an invocation's log lines: base64 of their last 4 KB."""
    text = "".join(line + "\n" for line in lines).encode()
    return base64.b64encode(text[-LOG_TAIL_BYTES:]).decode("ascii")
