"""Lambda handlers for the Lambda emulator's tests, each with one observable behaviour.

They run inside the emulator's worker processes, imported as ``tests.lambda_handlers`` from the repository
root, so they depend on nothing of the product's handlers.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_invocations = 0


def echo(event: Any, context: Any) -> Any:
    return event


def sleep(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Sleeps ``seconds``; touches ``started`` first, when given, so a test knows the handler is running."""
    if "started" in event:
        Path(event["started"]).touch()
    time.sleep(float(event["seconds"]))
    return {"slept": event["seconds"], "pid": os.getpid()}


class PaymentDeclined(Exception):
    """A handler's own exception type, to see it reported by name."""


def fail(event: dict[str, Any], context: Any) -> None:
    raise PaymentDeclined(event.get("message", "declined"))


def crash(event: dict[str, Any], context: Any) -> None:
    os._exit(int(event.get("status", 3)))


def unserialisable(event: dict[str, Any], context: Any) -> object:
    return object()


def environment(event: dict[str, Any], context: Any) -> dict[str, str | None]:
    return {name: os.environ.get(name) for name in event["names"]}


def count(event: Any, context: Any) -> dict[str, int]:
    """How many times this container has run the handler: a per-container cache in miniature."""
    global _invocations
    _invocations += 1
    return {"count": _invocations, "pid": os.getpid()}


def describe_context(event: Any, context: Any) -> dict[str, Any]:
    client = context.client_context
    return {
        "function_name": context.function_name,
        "invoked_function_arn": context.invoked_function_arn,
        "memory_limit_in_mb": context.memory_limit_in_mb,
        "aws_request_id": context.aws_request_id,
        "remaining_ms": context.get_remaining_time_in_millis(),
        "custom": None if client is None else client.custom,
    }


def log(event: dict[str, Any], context: Any) -> str:
    """Writes one line to stdout and one to stderr, as print() and a logger would."""
    print(event["stdout"])
    print(event["stderr"], file=sys.stderr)
    return "logged"


def record(event: dict[str, Any], context: Any) -> str:
    """Appends ``text`` to the file at ``path``: the trace an asynchronous invocation leaves."""
    with open(event["path"], "a", encoding="utf-8") as out:
        out.write(event["text"] + "\n")
    return "recorded"


def _lambda_client() -> Any:
    # Imported on first use: most handlers here never call AWS, and their containers start faster without it.
    import boto3

    return boto3.client("lambda")


def relay(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """Invokes ``target`` asynchronously with ``payload``, through plain boto3 (AWS_ENDPOINT_URL_LAMBDA)."""
    answer = _lambda_client().invoke(
        FunctionName=event["target"], InvocationType="Event", Payload=json.dumps(event["payload"])
    )
    return {"StatusCode": answer["StatusCode"]}


def continue_later(event: dict[str, Any], context: Any) -> dict[str, int]:
    """Records one step, then re-invokes itself for the rest, as the KVS consumer does near its timeout."""
    record({"path": event["path"], "text": f"step {event['step']}"}, context)
    if event["step"] < event["last"]:
        _lambda_client().invoke(
            FunctionName=os.environ["AWS_LAMBDA_FUNCTION_NAME"],
            InvocationType="Event",
            Payload=json.dumps({**event, "step": event["step"] + 1}),
        )
    return {"step": event["step"]}
