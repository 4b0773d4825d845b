"""The ``lambda`` responder: the customer's own Lambda function answers each turn.

The call is Lambda ``Invoke`` (botocore's ``lambda`` model, 2015-03-31; HTTP ``POST
/2015-03-31/functions/{FunctionName}/invocations``) with ``InvocationType=RequestResponse``; the answer is the
``Payload``, and ``FunctionError`` (``Unhandled``) says the function raised instead, its payload then
``{"errorType", "errorMessage"}``. The event the function gets (version 1 of this contract)::

    {"Version": "1",
     "ContactId": "7f2c6a1e-...",
     "Turn": {"Index": 3, "Transcript": "what is my balance"},
     "History": [{"Caller": "hello", "Agent": "Hello! How can I help?"}, ...],
     "Attributes": {"CustomerTier": "gold"}}

and what it returns (every field optional)::

    {"Reply": "Your balance is two hundred dollars.", "Action": "Continue", "Attributes": {"Intent": "Balance"}}

``Reply`` is text to speak (none: nothing is said), ``Action`` one of ``Continue`` (the default), ``Transfer`` or
``Hangup`` in any case (another word: Continue, with a warning), ``Attributes`` names mapped to text. An answer
that is not a JSON object, or whose fields have other types, is refused::

    responder = FunctionResponder(container.client("lambda"), function="arn:aws:lambda:...:function:answer")
    reply = responder.respond(TurnRequest("c1", 3, "what is my balance"), deadline=time.monotonic() + 8)
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from urllib3.exceptions import HTTPError as Urllib3Error

from voicebridge.conversation import Action
from voicebridge.converse.responder import FixedReply, ResponderError, TurnRequest
from voicebridge.converse.responders.refusals import error_code
from voicebridge.telemetry import logger

VERSION = "1"
"""The version of the event the function gets; a change a function could trip on gets a new one."""


def event_of(request: TurnRequest) -> dict[str, Any]:
    """The event the function gets for ``request``."""
    return {
        "Version": VERSION,
        "ContactId": request.contact_id,
        "Turn": {"Index": request.turn_index, "Transcript": request.transcript},
        "History": [{"Caller": exchange.caller, "Agent": exchange.agent} for exchange in request.history],
        "Attributes": dict(request.attributes),
    }


def reply_of(payload: bytes) -> FixedReply:
    """The reply a function's answer makes; ResponderError saying what is wrong with an unreadable one."""
    try:
        answer = json.loads(payload)
    except ValueError:
        raise ResponderError("the function's answer is not JSON") from None
    if not isinstance(answer, dict):
        raise ResponderError(f"the function's answer is a JSON {type(answer).__name__}, not an object")
    text = answer.get("Reply", "")
    if not isinstance(text, str):
        raise ResponderError("the function's Reply is not text")
    named = answer.get("Action", Action.CONTINUE.value)
    if not isinstance(named, str):
        raise ResponderError("the function's Action is not text")
    attributes = answer.get("Attributes", {})
    if not isinstance(attributes, dict) or not all(isinstance(value, str) for value in attributes.values()):
        raise ResponderError("the function's Attributes do not map names to text")
    try:
        action = Action.parse(named)
    except ValueError:
        logger.warning("the function answered an unknown action; continuing", action=named[:40])
        action = Action.CONTINUE
    return FixedReply(text, action, {str(name): value for name, value in attributes.items()})


class FunctionResponder:
    """Answers with the customer's own Lambda function, invoked synchronously once per turn."""

    name = "lambda"

    def __init__(self, client: Any, *, function: str, side_effect_free: bool = False) -> None:
        """``client`` is a ``lambda`` client whose read timeout bounds the call; ``function`` the function's name or
        ARN (an alias or version may be part of it); ``side_effect_free`` that the function changes nothing when
        asked (``RESPONDER_FUNCTION_SIDE_EFFECT_FREE``), so it may be asked speculatively, before the caller's turn
        has ended, about words the caller may then not say."""
        self._client = client
        self.function = function
        self.speculative_safe = side_effect_free

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        if time.monotonic() >= deadline:
            raise ResponderError("no time left to ask the function")
        started = time.monotonic()
        try:
            answer = self._client.invoke(
                FunctionName=self.function,
                InvocationType="RequestResponse",
                Payload=json.dumps(event_of(request)).encode("utf-8"),
            )
            payload = answer["Payload"].read()
        except ClientError as exc:
            raise ResponderError(f"the function could not be invoked ({error_code(exc)})") from None
        except (BotoCoreError, Urllib3Error) as exc:
            raise ResponderError(f"the function did not answer ({type(exc).__name__})") from None
        if answer.get("FunctionError"):
            raise ResponderError(f"the function failed ({_error_type(payload)})")
        reply = reply_of(payload)
        logger.info(
            "function reply",
            turn=request.turn_index,
            action=reply.action.value,
            text_chars=len(reply.spoken),
            attributes=len(reply.attributes),
            duration_ms=round((time.monotonic() - started) * 1000),
        )
        return reply


def _error_type(payload: bytes) -> str:
    """The ``errorType`` of a failed invocation's payload: its message may carry anything, the caller's words too."""
    try:
        error = json.loads(payload)
    except ValueError:
        return "unreadable error"
    kind = error.get("errorType") if isinstance(error, Mapping) else None
    return str(kind)[:80] if kind else "no error type"
