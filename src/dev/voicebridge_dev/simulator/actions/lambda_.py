"""The Lambda family of the flow simulator: ``InvokeLambdaFunction``.

boto3 ``lambda.invoke`` against ``AWS_ENDPOINT_URL_LAMBDA`` with the Connect event (docs/protocols.md, *Amazon
Connect → Lambda*; :class:`~voicebridge_dev.simulator.contact.Contact`). The answer becomes ``$.External`` when it
is a flat string map (``STRING_MAP``) or a JSON object (``JSON``); a function error, an invalid answer, or no answer
within ``InvocationTimeLimitSeconds`` takes ``NoMatchingError``. Throttling and 5xx are retried inside that limit,
as Connect does. Lambda blocks chained without a prompt between them share a 20 s budget (the Invoke Lambda
function page of Connect's flow language reference,
https://docs.aws.amazon.com/connect/latest/APIReference/interactions-invokelambdafunction.html).
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge_dev.flows import Action
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.events import LambdaCall, LambdaOutcome
from voicebridge_dev.simulator.outcomes import (
    WAIT_SLICE_S,
    ActionFailed,
    Branch,
    CallOver,
    UnsupportedActionError,
)

__all__ = ["CHAIN_BUDGET_S", "MAX_RESPONSE_BYTES", "invoke_lambda"]

CHAIN_BUDGET_S = 20.0
"""Connect's limit for Lambda blocks chained without a prompt between them."""
MAX_RESPONSE_BYTES = 32 * 1024
_RETRY_BASE_S = 0.1
_RETRYABLE_CODES = frozenset({"TooManyRequestsException", "ServiceException", "ThrottlingException"})


class _Attempt:
    """One ``lambda.invoke`` running in a thread of its own, so the flow can give up on it."""

    def __init__(self, client: Any, function: str, payload: bytes) -> None:
        self.done = threading.Event()
        self.payload: bytes | None = None
        self.function_error: str | None = None
        self.error: BotoCoreError | ClientError | None = None
        threading.Thread(
            target=self._run, args=(client, function, payload), name="connect-sim-invoke", daemon=True
        ).start()

    def _run(self, client: Any, function: str, payload: bytes) -> None:
        try:
            answer = client.invoke(FunctionName=function, InvocationType="RequestResponse", Payload=payload)
            self.payload = answer["Payload"].read()
            self.function_error = answer.get("FunctionError")
        except (BotoCoreError, ClientError) as exc:
            self.error = exc
        finally:
            self.done.set()

    @property
    def retryable(self) -> bool:
        if not isinstance(self.error, ClientError):
            return False
        code = self.error.response.get("Error", {}).get("Code", "")
        status = self.error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in _RETRYABLE_CODES or status >= 500


def invoke_lambda(call: Call, action: Action) -> Branch:
    params = action.parameters
    if params.get("InvocationType", "SYNCHRONOUS") != "SYNCHRONOUS":
        raise UnsupportedActionError(action, f"InvocationType {params.get('InvocationType')}")
    arn = call.contact.value(str(params["LambdaFunctionARN"]))
    limit = call.seconds(action, "InvocationTimeLimitSeconds")
    response_type = (params.get("ResponseValidation") or {}).get("ResponseType", "STRING_MAP")
    inputs = {
        name: call.contact.value(str(value)) for name, value in (params.get("LambdaInvocationAttributes") or {}).items()
    }
    start = call.clock.now()
    allowed = min(limit, CHAIN_BUDGET_S - call.chain)
    outcome: LambdaOutcome
    response: dict[str, Any] | None = None
    error: str | None = None
    if allowed <= 0:
        outcome, error = (
            "budget-exhausted",
            f"chained Lambda blocks used Connect's {CHAIN_BUDGET_S:.0f} s",
        )
    elif call.local_answers is not None and arn not in call.functions:
        outcome, response = "ok", _local_answer(call, arn)
        if response_type == "STRING_MAP" and not all(isinstance(value, str) for value in response.values()):
            outcome, response, error = (
                "invalid-response",
                None,
                "response is not a flat map of strings (STRING_MAP)",
            )
    else:
        payload = json.dumps(call.contact.event(inputs)).encode()
        try:
            outcome, response, error = _call(call, arn, payload, start + allowed, response_type)
        except CallOver as over:
            _record_call(call, action, arn, start, inputs, "abandoned", None, f"the call ended: {over.reason}")
            raise
        if outcome == "timeout" and allowed < limit:
            outcome = "budget-exhausted"
    _record_call(call, action, arn, start, inputs, outcome, response, error)
    call.contact.external = response if response is not None else {}
    if outcome != "ok":
        raise ActionFailed(f"the function {arn}: {error or outcome}")
    return Branch("next", action.next_action)


def _local_answer(call: Call, arn: str) -> dict[str, Any]:
    """A function the simulation does not run answers what it was given to answer (by ARN or name), or ``{}``."""
    assert call.local_answers is not None
    name = arn.rsplit(":function:", 1)[-1].split(":", 1)[0]
    answer = call.local_answers.get(arn, call.local_answers.get(name, {}))
    return dict(answer)


def _record_call(
    call: Call,
    action: Action,
    arn: str,
    start: float,
    inputs: dict[str, str],
    outcome: LambdaOutcome,
    response: dict[str, Any] | None,
    error: str | None,
) -> None:
    end = call.clock.now()
    call.chain += end - start
    call.longest_chain = max(call.longest_chain, call.chain)
    call.log.record(
        LambdaCall(
            action=action.identifier,
            function=call.functions.get(arn, arn),
            start=start,
            end=end,
            parameters=inputs,
            outcome=outcome,
            response=response,
            error=error,
        )
    )


def _call(
    call: Call, function: str, payload: bytes, deadline: float, response_type: str
) -> tuple[LambdaOutcome, dict[str, Any] | None, str | None]:
    retries = 0
    while True:
        attempt = _Attempt(call.lambda_client, function, payload)
        if not _wait_for(call, attempt, deadline):
            return "timeout", None, f"no answer within {deadline:.1f} s of the call"
        if attempt.error is None or not attempt.retryable:
            break
        pause = _RETRY_BASE_S * 2**retries
        if call.clock.now() + pause >= deadline:
            break
        retries += 1
        _wait_real(call, pause)
    if attempt.error is not None:
        return "error", None, f"{type(attempt.error).__name__}: {attempt.error}"
    raw = attempt.payload or b""
    if attempt.function_error is not None:
        return (
            "error",
            None,
            f"function error ({attempt.function_error}): {raw[:300].decode(errors='replace')}",
        )
    if len(raw) > MAX_RESPONSE_BYTES:
        return "invalid-response", None, f"response of {len(raw)} bytes is over Connect's 32 KB"
    try:
        answer = json.loads(raw)
    except ValueError:
        return "invalid-response", None, "response is not JSON"
    if not isinstance(answer, dict):
        return "invalid-response", None, f"response is a JSON {type(answer).__name__}, not an object"
    if response_type == "STRING_MAP" and not all(isinstance(value, str) for value in answer.values()):
        return "invalid-response", None, "response is not a flat map of strings (STRING_MAP)"
    return "ok", answer, None


def _wait_for(call: Call, attempt: _Attempt, deadline: float) -> bool:
    """Wait for ``attempt`` until ``deadline``; False when it did not answer in time.

    Nothing is skipped, on either clock: the function's work takes its real time, and what the caller does
    meanwhile — the pause after a prompt, in which the flow may play the next one, and the caller's speech,
    which reaches Ink at its own pace — happens as it would.
    """
    while not attempt.done.is_set():
        now = call.clock.now()
        if call.caller.hung_up(now):
            raise CallOver("caller hung up")
        if now >= deadline:
            return False
        upcoming = call.caller.next_event(now)
        wake = deadline if upcoming is None else min(deadline, upcoming)
        attempt.done.wait(min(max(wake - now, 0.0), WAIT_SLICE_S))
    return True


def _wait_real(call: Call, seconds: float) -> None:
    """Let ``seconds`` of real time pass (the call's time with it, on either clock), unless the caller hangs up."""
    end = time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        if call.caller.hung_up(call.clock.now()):
            raise CallOver("caller hung up")
        time.sleep(min(left, WAIT_SLICE_S))
