"""A container, the worker process one function's handler runs in: ``python -m voicebridge_dev.local.lambda_.worker``.

It loads the handler (the init phase), then answers each request from one pipe on the other, until EOF; the
pipes' protocol is stated in :mod:`voicebridge_dev.local.lambda_.containers`. Errors are reported as Lambda's
Python runtime reports them (``errorMessage``, ``errorType``, ``requestId``, ``stackTrace``), and logged as
its ``[ERROR]`` entry.
"""

from __future__ import annotations

import importlib
import io
import json
import math
import os
import resource
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, cast

from voicebridge_dev.local.lambda_.containers import INIT_MARK
from voicebridge_dev.local.lambda_.context import ClientContext, InvokeContext


class _InitFailure(Exception):
    """The handler could not be loaded; ``payload`` is the error as Lambda reports it."""

    def __init__(self, error_type: str, message: str, stack: list[str] | None = None) -> None:
        super().__init__(message)
        self.payload: dict[str, Any] = {
            "errorMessage": message,
            "errorType": error_type,
            "requestId": "",
            "stackTrace": stack or [],
        }


def _stack(error: BaseException, skip: int = 0) -> list[str]:
    tb = error.__traceback__
    for _ in range(skip):
        if tb is not None:
            tb = tb.tb_next
    return traceback.format_tb(tb) if tb is not None else []


def _import_handler(dotted: str) -> Callable[[Any, InvokeContext], Any]:
    module_name, _, attribute = dotted.rpartition(".")
    if not module_name or not attribute:
        raise _InitFailure("Runtime.MalformedHandlerName", f"Bad handler '{dotted}': expected module.function")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise _InitFailure("Runtime.ImportModuleError", f"Unable to import module '{module_name}': {exc}") from exc
    except SyntaxError as exc:
        raise _InitFailure(
            "Runtime.UserCodeSyntaxError", f"Syntax error in module '{module_name}': {exc}", _stack(exc, 1)
        ) from exc
    except Exception as exc:
        # Whatever the module raises at import time is the init error, reported under its own type.
        raise _InitFailure(type(exc).__name__, str(exc), _stack(exc, 1)) from exc
    handler = getattr(module, attribute, None)
    if not callable(handler):
        raise _InitFailure("Runtime.HandlerNotFound", f"Handler '{attribute}' missing on module '{module_name}'")
    return cast(Callable[[Any, InvokeContext], Any], handler)


def _max_memory_mb() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return math.ceil(peak / (1024 * 1024 if sys.platform == "darwin" else 1024))


def _cpu_s() -> float:
    """CPU time this process has used, every thread's, user and system."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _log_error(error: Mapping[str, Any]) -> None:
    """The ``[ERROR]`` entry Lambda's Python runtime writes to the log."""
    trace = "".join(error.get("stackTrace") or [])
    print(f"[ERROR] {error['errorType']}: {error['errorMessage']}", file=sys.stderr)
    if trace:
        print("Traceback (most recent call last):\n" + trace.rstrip("\n"), file=sys.stderr)


def _end_of_log(marker: str, mark: str) -> None:
    # Python's buffers first, so everything the handler wrote reaches the pipe ahead of the marker.
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(1, f"{marker}{mark}\n".encode())


def _run_handler(
    handler: Callable[[Any, InvokeContext], Any], config: Mapping[str, Any], message: Mapping[str, Any]
) -> dict[str, Any]:
    request_id = str(message["request_id"])
    client = message.get("client_context")
    context = InvokeContext(
        function_name=config["function_name"],
        memory_limit_in_mb=config["memory_mb"],
        timeout_s=config["timeout_s"],
        region=config["region"],
        aws_request_id=request_id,
        client_context=None if client is None else ClientContext(**client),
    )
    cpu_started = _cpu_s()
    answer = _answer(handler, context, request_id, message)
    # What the invocation's CPU cost (threads it left running count towards the next): the emulator's own figure,
    # for sizing a function by measurement; Lambda's REPORT line has none.
    answer["cpu_ms"] = round((_cpu_s() - cpu_started) * 1000, 1)
    return answer


def _answer(
    handler: Callable[[Any, InvokeContext], Any], context: InvokeContext, request_id: str, message: Mapping[str, Any]
) -> dict[str, Any]:
    try:
        result = handler(json.loads(message["event"]), context)
    except Exception as exc:
        # A handler's exception is the invocation's answer, not the container's end, as in Lambda.
        error = {
            "errorMessage": str(exc),
            "errorType": type(exc).__name__,
            "requestId": request_id,
            "stackTrace": _stack(exc, 1),
        }
        _log_error(error)
        return {"type": "error", "error": error, "max_memory_mb": _max_memory_mb()}
    try:
        payload = json.dumps(result)
    except (TypeError, ValueError) as exc:
        error = {
            "errorMessage": f"Unable to marshal response: {exc}",
            "errorType": "Runtime.MarshalError",
            "requestId": request_id,
            "stackTrace": [],
        }
        _log_error(error)
        return {"type": "error", "error": error, "max_memory_mb": _max_memory_mb()}
    return {"type": "result", "payload": payload, "max_memory_mb": _max_memory_mb()}


def _worker_main(argv: list[str]) -> int:
    """A container: load the handler, then answer each request from one pipe on the other, until EOF."""
    config = json.loads(argv[0])
    requests = os.fdopen(int(argv[1]), "rb")
    replies = os.fdopen(int(argv[2]), "wb", buffering=0)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)

    def reply(message: Mapping[str, Any]) -> None:
        replies.write(json.dumps(message).encode() + b"\n")

    started = time.perf_counter()
    try:
        handler = _import_handler(config["handler"])
    except _InitFailure as failure:
        _log_error(failure.payload)
        _end_of_log(config["marker"], INIT_MARK)
        reply(
            {
                "type": "init_error",
                "error": failure.payload,
                "init_ms": (time.perf_counter() - started) * 1000,
            }
        )
        return 1
    _end_of_log(config["marker"], INIT_MARK)
    reply({"type": "ready", "init_ms": (time.perf_counter() - started) * 1000})
    for line in requests:
        message = json.loads(line)
        answer = _run_handler(handler, config, message)
        _end_of_log(config["marker"], str(message["request_id"]))
        reply(answer)
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
