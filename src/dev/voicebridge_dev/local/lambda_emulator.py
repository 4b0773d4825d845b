"""EMULATOR of AWS Lambda's ``Invoke`` API, running the template's Python handlers — a stand-in, not Lambda.

It speaks the ``Invoke`` operation of the Lambda API (rest-json) over loopback HTTP/1.1, so an unmodified
boto3 client pointed at it with ``AWS_ENDPOINT_URL_LAMBDA`` invokes the functions template.yaml declares::

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

    GET  /_emulator/invocations      one record per finished invocation (:class:`InvocationRecord`)

``FunctionName`` is a logical ID (``SynthesizeFunction``), the local physical name
(:func:`~voicebridge_dev.template.local_physical_id`), or a full or partial ARN with either, optionally
followed by ``:$LATEST``; the only version is ``$LATEST``. Requests are not authenticated: SigV4 headers are
ignored.

Each function runs as Lambda runs it: in warm worker processes ("containers", POSIX only), one started by an
invocation that finds none idle, up to ``concurrency`` per function, then reused, so per-container caches
behave as in Lambda. A synchronous invocation that finds every container busy gets TooManyRequestsException,
as under reserved concurrency (boto3 retries it); Event invocations wait in a bounded queue instead. A
container imports the handler when it starts (the init phase, bounded by :data:`INIT_TIMEOUT_S` plus the
function's timeout). Its environment is the host's locale, path and AWS credentials (``sam local`` passes
them too), then the template's variables, then ``env``, then the variables Lambda reserves;
``AWS_ENDPOINT_URL_LAMBDA`` points back at this emulator unless ``env`` sets it, so a handler invokes a
function (itself included) with plain boto3. A container that overruns the function's timeout is killed; the
next invocation starts a new one.

A container speaks JSON lines over two pipes of its own, leaving stdout and stderr (merged, as in a
CloudWatch log stream) to the handler::

    emulator → container   {"request_id": …, "event": "<the event's JSON text>", "client_context": {…} | null}
    container → emulator   {"type": "ready", "init_ms": …}
                           or {"type": "init_error", "error": {…}, "init_ms": …}, after which it exits;
                           then one per request:
                           {"type": "result", "payload": "<JSON text>", "max_memory_mb": …}
                           {"type": "error", "max_memory_mb": …,
                            "error": {"errorMessage", "errorType", "requestId", "stackTrace"}}

Before each reply the container writes a marker line naming the request to its stdout, so the emulator knows
where an invocation's log ends. Log lines are forwarded as they arrive to the logger
``voicebridge_dev.local.lambda_emulator.<LogicalId>`` and kept with the invocation's record.

>>> with LambdaEmulator("template.yaml", env=cloud.env()) as emu:  # doctest: +SKIP
...     client = boto3.client("lambda", endpoint_url=emu.url, region_name="us-east-1")
...     client.invoke(FunctionName="SynthesizeFunction", Payload=json.dumps(event))
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import dataclasses
import importlib
import io
import itertools
import json
import logging
import math
import os
import queue
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, Final, Self, cast
from urllib.parse import parse_qs, unquote, urlsplit

from voicebridge_dev.local.runner import LambdaContext
from voicebridge_dev.local.service import LocalService, TrackedHandler, TrackingHTTPServer
from voicebridge_dev.template import (
    LOCAL_ACCOUNT,
    FunctionSpec,
    TemplateError,
    function_spec,
    load_template,
    local_physical_id,
)

__all__ = [
    "EVENT_QUEUE_LIMIT",
    "INIT_TIMEOUT_S",
    "ClientContext",
    "InvocationRecord",
    "InvocationStatus",
    "InvocationType",
    "InvokeContext",
    "LambdaEmulator",
]

logger = logging.getLogger(__name__)

LATEST: Final = "$LATEST"
INIT_TIMEOUT_S: Final = 10.0
"""Longest a container may take to start and import its handler, on top of the function's timeout."""
EVENT_QUEUE_LIMIT: Final = 100
"""Event invocations queued per function before further ones are refused with TooManyRequestsException."""
RECORD_LIMIT: Final = 1000
"""Finished invocations kept in :attr:`LambdaEmulator.invocations` (oldest dropped first)."""
LOG_LIMIT_CHARS: Final = 256 * 1024
"""Log text kept per invocation (its tail)."""
LOG_TAIL_BYTES: Final = 4096
_LOG_DRAIN_S: Final = 2.0
_KILL_WAIT_S: Final = 5.0
_FUNCTION_TYPES: Final = ("AWS::Serverless::Function", "AWS::Lambda::Function")
# Passed through from the host, as `sam local invoke` passes credentials into its container; nothing else is.
_INHERITED: Final = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_CONFIG_FILE",
    "AWS_SHARED_CREDENTIALS_FILE",
)
_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")
_WORKER_MODULE: Final = "voicebridge_dev.local.lambda_emulator"
_MARKER_PREFIX: Final = "\x1evoicebridge-lambda-end:"
_INIT_MARK: Final = "init"
_LABEL: Final = "lambda emulator (not AWS Lambda)"


# --- Public records and the handler's context --------------------------------------------------------


class InvocationType(StrEnum):
    REQUEST_RESPONSE = "RequestResponse"
    EVENT = "Event"
    DRY_RUN = "DryRun"


class InvocationStatus(StrEnum):
    OK = "ok"
    """The handler returned a JSON-serialisable result."""
    ERROR = "error"
    """The handler raised, its module failed to import, or its result could not be serialised."""
    TIMEOUT = "timeout"
    """The function's timeout (or the init limit) ran out; the container was killed."""
    CRASHED = "crashed"
    """The container's process exited in the middle of the invocation."""
    CANCELLED = "cancelled"
    """The emulator stopped before the invocation finished (or, for an Event, before it started)."""


@dataclass(frozen=True)
class InvocationRecord:
    """One finished invocation.

    ``started``/``finished`` are epoch seconds, ``duration_ms`` is measured on a monotonic clock (a cold
    start included), ``init_duration_ms`` is set on a cold start, and ``container`` numbers the emulator's
    containers from 1 (None when the invocation never reached one).
    """

    request_id: str
    function: str
    invocation_type: InvocationType
    started: float
    finished: float
    duration_ms: float
    status: InvocationStatus
    error: dict[str, Any] | None
    logs: str
    container: int | None
    init_duration_ms: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass
class ClientContext:
    """``context.client_context``: the decoded ``X-Amz-Client-Context`` header, as Lambda's Python runtime
    exposes it."""

    client: Any = None
    custom: Any = None
    env: Any = None


@dataclass
class InvokeContext(LambdaContext):
    """The context a handler gets in a container: :class:`LambdaContext` plus ``client_context``; ``identity``
    is None, as for any caller without a Cognito identity."""

    client_context: ClientContext | None = None
    identity: None = None


# --- The container side --------------------------------------------------------------------------------


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
        _end_of_log(config["marker"], _INIT_MARK)
        reply(
            {
                "type": "init_error",
                "error": failure.payload,
                "init_ms": (time.perf_counter() - started) * 1000,
            }
        )
        return 1
    _end_of_log(config["marker"], _INIT_MARK)
    reply({"type": "ready", "init_ms": (time.perf_counter() - started) * 1000})
    for line in requests:
        message = json.loads(line)
        answer = _run_handler(handler, config, message)
        _end_of_log(config["marker"], str(message["request_id"]))
        reply(answer)
    return 0


# --- The emulator side: containers ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    request_id: str
    invocation_type: InvocationType
    event: str
    client_context: dict[str, Any] | None = None


@dataclass
class _Outcome:
    status: InvocationStatus
    payload: bytes
    error: dict[str, Any] | None
    logs: list[str]
    max_memory_mb: int | None = None


def _error_outcome(status: InvocationStatus, error: dict[str, Any], logs: list[str]) -> _Outcome:
    return _Outcome(status, json.dumps(error).encode(), error, logs)


def _timed_out(timeout_s: float, request_id: str) -> _Outcome:
    message = f"Task timed out after {timeout_s:.2f} seconds"
    return _error_outcome(
        InvocationStatus.TIMEOUT,
        {"errorMessage": message, "errorType": "Sandbox.Timedout"},
        [f"{request_id} {message}"],
    )


class _Container:
    """One worker process running one function's handler, and the threads reading its pipes."""

    def __init__(self, number: int, function: _Function, environment: Mapping[str, str], region: str) -> None:
        self.number = number
        self.function = function
        self.killed_by_emulator = False
        self.init_duration_ms: float | None = None
        self._marker = _MARKER_PREFIX + uuid.uuid4().hex + ":"
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._log = threading.Condition()
        self._lines: deque[str] = deque()
        self._chars = 0
        self._marks: set[str] = set()
        self._log_closed = False
        spec = function.spec
        config = {
            "handler": spec.handler,
            "function_name": function.physical_name,
            "memory_mb": spec.memory_mb,
            "timeout_s": float(spec.timeout_s),
            "region": region,
            "marker": self._marker,
        }
        request_read, request_write = os.pipe()
        reply_read, reply_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    _WORKER_MODULE,
                    json.dumps(config),
                    str(request_read),
                    str(reply_write),
                ],
                cwd=function.code_root,
                env=dict(environment),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(request_read, reply_write),
                # Its own process group: a kill reaches what the handler started, and Ctrl-C stays with us.
                start_new_session=True,
            )
        except BaseException:
            for fd in (request_write, reply_read):
                os.close(fd)
            raise
        finally:
            os.close(request_read)
            os.close(reply_write)
        self._requests = os.fdopen(request_write, "wb", buffering=0)
        assert self.process.stdout is not None
        name = f"lambda-{function.logical_id}-{number}"
        self._readers = [
            threading.Thread(target=self._read_replies, args=(reply_read,), name=f"{name}-replies", daemon=True),
            threading.Thread(target=self._read_logs, args=(self.process.stdout,), name=f"{name}-logs", daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    # -- pipes

    def _read_replies(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for raw in stream:
                try:
                    message = json.loads(raw)
                except ValueError:
                    logger.error("%s: container %d wrote a malformed reply: %r", _LABEL, self.number, raw[:200])
                    break
                self._replies.put(message)
        self._replies.put(None)

    def _read_logs(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                text, marked, mark = line.partition(self._marker)
                with self._log:
                    if text or not marked:
                        self._lines.append(text)
                        self._chars += len(text) + 1
                        while self._chars > LOG_LIMIT_CHARS and len(self._lines) > 1:
                            self._chars -= len(self._lines.popleft()) + 1
                    if marked:
                        self._marks.add(mark)
                        self._log.notify_all()
                if text or not marked:
                    self.function.log.info("%s", text)
        with self._log:
            self._log_closed = True
            self._log.notify_all()

    def _collect_logs(self, mark: str | None) -> list[str]:
        """The log lines written so far, once the container marked the end of ``mark`` (or closed its log)."""
        with self._log:
            self._log.wait_for(lambda: self._log_closed or mark in self._marks, timeout=_LOG_DRAIN_S)
            self._marks.discard(mark or "")
            lines = list(self._lines)
            self._lines.clear()
            self._chars = 0
            return lines

    def _next_reply(self, timeout: float) -> dict[str, Any] | None:
        """The container's next message; None when it has exited. Raises TimeoutError."""
        try:
            return self._replies.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            raise TimeoutError from None

    # -- lifecycle

    def alive(self) -> bool:
        return not self.killed_by_emulator and self.process.poll() is None

    def kill(self, *, by_emulator: bool = False) -> None:
        self.killed_by_emulator = self.killed_by_emulator or by_emulator
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self._requests.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_KILL_WAIT_S)

    def _exit_error(self, request_id: str) -> _Outcome:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=_KILL_WAIT_S)
        code = self.process.returncode
        if self.killed_by_emulator:
            error = {
                "errorMessage": f"RequestId: {request_id} Error: the emulator stopped",
                "errorType": "Emulator.Stopped",
            }
            return _error_outcome(InvocationStatus.CANCELLED, error, self._collect_logs(None))
        reason = f"signal: {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit status {code}"
        error = {
            "errorMessage": f"RequestId: {request_id} Error: Runtime exited with error: {reason}",
            "errorType": "Runtime.ExitError",
        }
        return _error_outcome(InvocationStatus.CRASHED, error, self._collect_logs(None))

    def initialize(self, request_id: str) -> _Outcome | None:
        """Wait for the handler to load; None when it did, else the failure to answer the invocation with."""
        started = time.perf_counter()
        timeout_s = float(self.function.spec.timeout_s)
        try:
            reply = self._next_reply(INIT_TIMEOUT_S + timeout_s)
        except TimeoutError:
            self.kill()
            self.init_duration_ms = (time.perf_counter() - started) * 1000
            outcome = _timed_out(timeout_s, request_id)
            outcome.logs = self._collect_logs(None) + outcome.logs
            return outcome
        if reply is None:
            return self._exit_error(request_id)
        self.init_duration_ms = float(reply.get("init_ms", 0.0))
        if reply.get("type") == "init_error":
            self.kill()
            return _error_outcome(InvocationStatus.ERROR, reply["error"], self._collect_logs(_INIT_MARK))
        return None

    def init_logs(self) -> list[str]:
        return self._collect_logs(_INIT_MARK)

    def invoke(self, call: _Call) -> _Outcome:
        timeout_s = float(self.function.spec.timeout_s)
        deadline = time.monotonic() + timeout_s
        request = {"request_id": call.request_id, "event": call.event, "client_context": call.client_context}
        try:
            self._requests.write(json.dumps(request).encode() + b"\n")
        except OSError:
            return self._exit_error(call.request_id)
        try:
            reply = self._next_reply(deadline - time.monotonic())
        except TimeoutError:
            self.kill()
            outcome = _timed_out(timeout_s, call.request_id)
            outcome.logs = self._collect_logs(None) + outcome.logs
            return outcome
        if reply is None:
            return self._exit_error(call.request_id)
        logs = self._collect_logs(call.request_id)
        memory = reply.get("max_memory_mb")
        if reply.get("type") == "result":
            return _Outcome(InvocationStatus.OK, str(reply["payload"]).encode(), None, logs, memory)
        outcome = _error_outcome(InvocationStatus.ERROR, reply["error"], logs)
        outcome.max_memory_mb = memory
        return outcome


class _Function:
    """A template function: its spec, its containers and its Event queue."""

    def __init__(self, spec: FunctionSpec, code_root: Path, runtime: str | None) -> None:
        self.spec = spec
        self.logical_id = spec.logical_id
        self.physical_name = local_physical_id(spec.logical_id)
        self.code_root = code_root
        self.runtime = runtime
        self.log = logger.getChild(spec.logical_id)
        self.lock = threading.Condition()
        self.idle: list[_Container] = []
        self.containers = 0
        self.events: deque[_Call] = deque()
        self.dispatchers: list[threading.Thread] = []


class _Stopping(Exception):
    """The emulator is stopping: no new container, no new invocation."""


class _ApiError(Exception):
    """An error the Lambda API answers with instead of running the function."""

    def __init__(self, status: int, error_type: str, message: str, extra: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.extra = dict(extra or {})

    def body(self) -> dict[str, str]:
        key = "Message" if self.error_type in ("ResourceNotFoundException", "ServiceException") else "message"
        return {"Type": "User" if self.status < 500 else "Service", key: str(self), **self.extra}


@dataclass
class _Answer:
    status: int
    headers: dict[str, str]
    body: bytes = b""


def _decode_client_context(header: str | None) -> dict[str, Any] | None:
    if not header:
        return None
    try:
        decoded = json.loads(base64.b64decode(header, validate=True))
    except (binascii.Error, ValueError) as exc:
        raise _ApiError(
            400,
            "InvalidRequestContentException",
            "Client context must be a valid Base64-encoded JSON object.",
        ) from exc
    if not isinstance(decoded, dict):
        raise _ApiError(400, "InvalidRequestContentException", "Client context must be a JSON object.")
    return {key: decoded.get(key) for key in ("client", "custom", "env")}


def _log_tail(lines: list[str]) -> str:
    text = "".join(line + "\n" for line in lines).encode()
    return base64.b64encode(text[-LOG_TAIL_BYTES:]).decode("ascii")


# --- HTTP ------------------------------------------------------------------------------------------------


class _Server(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], emulator: LambdaEmulator) -> None:
        self.emulator = emulator
        super().__init__(address, _Handler)


class _Handler(TrackedHandler):
    server_version = "LambdaEmulator/1.0"

    @property
    def emulator(self) -> LambdaEmulator:
        return cast(_Server, self.server).emulator

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s: " + format, _LABEL, *args)

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return b""
        return self.rfile.read(int(length))

    def _send(self, answer: _Answer) -> None:
        self.send_response(answer.status)
        headers = {"Content-Type": "application/json", **answer.headers}
        headers.setdefault("x-amzn-RequestId", str(uuid.uuid4()))
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        try:
            self.end_headers()
            self.wfile.write(answer.body)
        except OSError:
            self.close_connection = True

    def _send_error(self, error: _ApiError) -> None:
        headers = {"x-amzn-ErrorType": error.error_type}
        if error.status == 429:
            headers["Retry-After"] = "1"
        self._send(_Answer(error.status, headers, json.dumps(error.body()).encode()))

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        match = _INVOKE_PATH.match(parts.path)
        body = self._read_body()
        if match is None:
            self._unknown_operation()
            return
        qualifier = parse_qs(parts.query).get("Qualifier", [None])[0]
        try:
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = self.emulator._answer_invoke(unquote(match.group("name")), qualifier, headers, body)
        except _ApiError as error:
            self._send_error(error)
            return
        self._send(answer)

    def do_GET(self) -> None:
        if urlsplit(self.path).path == "/_emulator/invocations":
            records = [record.to_json() for record in self.emulator.invocations]
            body = json.dumps({"emulator": _LABEL, "invocations": records}).encode()
            self._send(_Answer(200, {}, body))
        else:
            self._unknown_operation()

    def _unknown_operation(self) -> None:
        self._send_error(
            _ApiError(
                404,
                "UnknownOperationException",
                f"{self.command} {self.path} is not an operation of {_LABEL}",
            )
        )


# --- The emulator --------------------------------------------------------------------------------------


class LambdaEmulator(LocalService):
    """A local Lambda ``Invoke`` endpoint running a SAM template's Python functions (an emulator, not Lambda).

    ``parameters`` — template parameter values (else their defaults), as ``sam local --parameter-overrides``.
    ``env`` — variables added to every function's environment over the template's (e.g. ``LocalCloud.env()``).
    ``concurrency`` — containers per function at most.
    """

    def __init__(
        self,
        template_path: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        region: str = "us-east-1",
        parameters: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        concurrency: int = 4,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self.template_path = Path(template_path).resolve()
        self.host = host
        self.port = port
        self.region = region
        self.parameters = dict(parameters or {})
        self.env = dict(env or {})
        self.concurrency = concurrency
        self._functions: dict[str, _Function] = {}
        self._by_name: dict[str, _Function] = {}
        self._unrunnable: dict[str, str] = {}
        self._records: deque[InvocationRecord] = deque(maxlen=RECORD_LIMIT)
        self._state = threading.Condition()
        self._active = 0
        self._containers: set[_Container] = set()
        self._numbers = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._endpoint = ""

    # -- lifecycle

    def start(self) -> Self:
        """Read the template's functions, then start serving.

        A function whose environment cannot be resolved locally is logged and answers ServiceException with
        the reason; the others run.
        """
        if self._server is not None:
            return self
        self._load_functions()
        self._stopping.clear()
        self._server = _Server((self.host, self.port), self)
        self.port = int(self._server.server_address[1])
        self._endpoint = f"http://{self.host}:{self.port}"
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="lambda-emulator",
            daemon=True,
        )
        self._thread.start()
        logger.info("%s listening on %s (functions: %s)", _LABEL, self.url, ", ".join(self._functions))
        return self

    def stop(self) -> None:
        """Drop queued Event invocations, kill every container (running handlers included), stop serving."""
        server, self._server = self._server, None
        if server is None:
            return
        with self._state:
            self._stopping.set()
            containers = list(self._containers)
            self._containers.clear()
        for function in self._functions.values():
            with function.lock:
                dropped = list(function.events)
                function.events.clear()
                function.lock.notify_all()
            for call in dropped:
                self._cancel(function, call)
        for container in containers:
            container.kill(by_emulator=True)
        for function in self._functions.values():
            for dispatcher in function.dispatchers:
                dispatcher.join(timeout=_KILL_WAIT_S)
            with function.lock:
                function.dispatchers.clear()
                function.idle.clear()
                function.containers = 0
        server.close_all()
        if self._thread is not None:
            self._thread.join(timeout=_KILL_WAIT_S)
            self._thread = None
        logger.info("%s stopped", _LABEL)

    # -- state

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the Lambda emulator is not running; call start() first")
        return self._endpoint

    @property
    def invocations(self) -> list[InvocationRecord]:
        """Finished invocations, oldest first (a copy)."""
        with self._state:
            return list(self._records)

    def wait_for_idle(self, timeout: float) -> bool:
        """True once no invocation is running or queued, False if that did not happen within ``timeout`` s."""
        with self._state:
            return self._state.wait_for(lambda: self._active == 0, timeout=timeout)

    # -- template

    def _load_functions(self) -> None:
        template = load_template(self.template_path)
        globals_ = template.get("Globals", {}).get("Function", {})
        functions: dict[str, _Function] = {}
        unrunnable: dict[str, str] = {}
        for logical_id, resource_ in template["Resources"].items():
            if resource_.get("Type") not in _FUNCTION_TYPES:
                continue
            props = resource_.get("Properties", {})
            try:
                spec = function_spec(template, logical_id, region=self.region, parameters=self.parameters)
            except TemplateError as exc:
                # One function the local run cannot configure must not keep the others from running.
                reason = f"{logical_id} cannot run locally: {exc}"
                logger.warning("%s: %s", _LABEL, reason)
                unrunnable[logical_id] = unrunnable[local_physical_id(logical_id)] = reason
                continue
            code_uri = props.get("CodeUri", globals_.get("CodeUri"))
            code_root = self.template_path.parent
            if isinstance(code_uri, str):
                code_root = (code_root / code_uri).resolve()
            runtime = props.get("Runtime", globals_.get("Runtime"))
            functions[logical_id] = _Function(spec, code_root, runtime if isinstance(runtime, str) else None)
        if not functions and not unrunnable:
            raise TemplateError(f"{self.template_path} declares no function")
        self._functions = functions
        self._unrunnable = unrunnable
        self._by_name = {
            **{function.physical_name: function for function in functions.values()},
            **functions,
        }

    def _arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{LOCAL_ACCOUNT}:function:{name}"

    def _resolve(self, name: str, qualifier: str | None) -> _Function:
        """The function a logical ID, physical name or (partial) ARN names, with an optional qualifier."""
        parts = name.split(":")
        base, embedded = name, None
        if name.startswith("arn:"):
            local = ["aws", "lambda", self.region, LOCAL_ACCOUNT, "function"]
            if len(parts) not in (7, 8) or parts[1:6] != local:
                raise _ApiError(404, "ResourceNotFoundException", f"Function not found: {name}")
            base, embedded = parts[6], (parts[7] if len(parts) == 8 else None)
        elif len(parts) in (3, 4) and parts[:2] == [LOCAL_ACCOUNT, "function"]:
            base, embedded = parts[2], (parts[3] if len(parts) == 4 else None)
        elif len(parts) == 2:
            base, embedded = parts
        if embedded is not None and qualifier is not None and embedded != qualifier:
            raise _ApiError(
                400,
                "InvalidParameterValueException",
                "The derived qualifier from the function name does not match the specified qualifier.",
            )
        version = embedded or qualifier
        if base in self._unrunnable and version in (None, LATEST):
            raise _ApiError(500, "ServiceException", self._unrunnable[base])
        function = self._by_name.get(base)
        if function is None or version not in (None, LATEST):
            missing = self._arn(base) + (f":{version}" if version else "")
            raise _ApiError(404, "ResourceNotFoundException", f"Function not found: {missing}")
        return function

    # -- the Invoke operation

    def _answer_invoke(self, name: str, qualifier: str | None, headers: Mapping[str, str], body: bytes) -> _Answer:
        """Answer one Invoke request; ``headers`` are keyed in lower case."""
        function = self._resolve(name, qualifier)
        try:
            kind = InvocationType(headers.get("x-amz-invocation-type") or InvocationType.REQUEST_RESPONSE)
        except ValueError as exc:
            raise _ApiError(
                400,
                "InvalidParameterValueException",
                "InvocationType must be one of RequestResponse, Event, DryRun",
            ) from exc
        log_type = headers.get("x-amz-log-type") or "None"
        if log_type not in ("None", "Tail"):
            raise _ApiError(400, "InvalidParameterValueException", "LogType must be one of None, Tail")
        client_context = _decode_client_context(headers.get("x-amz-client-context"))
        if kind is InvocationType.DRY_RUN:
            return _Answer(204, {})
        event = body.decode("utf-8", "replace") if body.strip() else "{}"
        try:
            json.loads(event)
        except ValueError as exc:
            raise _ApiError(
                400, "InvalidRequestContentException", f"Could not parse request body into json: {exc}"
            ) from exc
        call = _Call(str(uuid.uuid4()), kind, event, client_context)
        if kind is InvocationType.EVENT:
            self._enqueue(function, call)
            return _Answer(202, {"x-amzn-RequestId": call.request_id})
        outcome, logs = self._invoke_now(function, call)
        if outcome.status is InvocationStatus.CANCELLED:
            raise _ApiError(500, "ServiceException", "the Lambda emulator stopped during the invocation")
        answer = _Answer(200, {"x-amzn-RequestId": call.request_id, "X-Amz-Executed-Version": LATEST}, outcome.payload)
        if outcome.status is not InvocationStatus.OK:
            answer.headers["X-Amz-Function-Error"] = "Unhandled"
        if log_type == "Tail":
            answer.headers["X-Amz-Log-Result"] = _log_tail(logs)
        return answer

    def _invoke_now(self, function: _Function, call: _Call) -> tuple[_Outcome, list[str]]:
        self._begin()
        try:
            try:
                container = self._lease(function, wait=False)
            except _Stopping as exc:
                raise _ApiError(500, "ServiceException", "the Lambda emulator is stopping") from exc
            return self._run(function, call, container)
        finally:
            self._finish()

    def _enqueue(self, function: _Function, call: _Call) -> None:
        with function.lock:
            if self._stopping.is_set():
                raise _ApiError(500, "ServiceException", "the Lambda emulator is stopping")
            if len(function.events) >= EVENT_QUEUE_LIMIT:
                raise _ApiError(
                    429,
                    "TooManyRequestsException",
                    f"{function.logical_id} has {EVENT_QUEUE_LIMIT} Event invocations queued",
                    {"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"},
                )
            self._begin()
            function.events.append(call)
            if len(function.dispatchers) < self.concurrency:
                dispatcher = threading.Thread(
                    target=self._dispatch,
                    args=(function,),
                    name=f"lambda-{function.logical_id}-events-{len(function.dispatchers) + 1}",
                    daemon=True,
                )
                function.dispatchers.append(dispatcher)
                dispatcher.start()
            function.lock.notify_all()

    def _dispatch(self, function: _Function) -> None:
        while True:
            with function.lock:
                function.lock.wait_for(lambda: bool(function.events) or self._stopping.is_set())
                if self._stopping.is_set():
                    return
                call = function.events.popleft()
            try:
                container = self._lease(function, wait=True)
            except _Stopping:
                self._cancel(function, call)
                return
            try:
                outcome, _ = self._run(function, call, container)
            finally:
                self._finish()
            if outcome.status is not InvocationStatus.OK:
                function.log.warning(
                    "%s: Event invocation %s of %s ended %s: %s",
                    _LABEL,
                    call.request_id,
                    function.logical_id,
                    outcome.status.value,
                    outcome.payload.decode("utf-8", "replace"),
                )

    def _cancel(self, function: _Function, call: _Call) -> None:
        """Record an Event invocation the emulator stopped before it ran, and count it done."""
        now = time.time()
        self._record(function, call, now, now, 0.0, _Outcome(InvocationStatus.CANCELLED, b"", None, []), None)
        self._finish()

    def _begin(self) -> None:
        with self._state:
            self._active += 1

    def _finish(self) -> None:
        with self._state:
            self._active -= 1
            self._state.notify_all()

    # -- containers

    def _lease(self, function: _Function, *, wait: bool) -> _Container | None:
        """An idle container, or None when a slot for a new one is reserved. Raises _Stopping, or _ApiError
        (throttled) when every container is busy and ``wait`` is false."""
        with function.lock:
            while True:
                if self._stopping.is_set():
                    raise _Stopping
                if function.idle:
                    # Most recently used first, so one warm container serves a trickle of calls.
                    return function.idle.pop()
                if function.containers < self.concurrency:
                    function.containers += 1
                    return None
                if not wait:
                    raise _ApiError(
                        429,
                        "TooManyRequestsException",
                        "Rate Exceeded.",
                        {"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"},
                    )
                function.lock.wait()

    def _release(self, function: _Function, container: _Container | None) -> None:
        with function.lock:
            if container is not None and container.alive() and not self._stopping.is_set():
                function.idle.append(container)
            else:
                function.containers = max(0, function.containers - 1)
                if container is not None:
                    with self._state:
                        self._containers.discard(container)
            function.lock.notify_all()

    def _environment(self, function: _Function) -> dict[str, str]:
        spec = function.spec
        variables = {name: os.environ[name] for name in _INHERITED if name in os.environ}
        variables["AWS_ENDPOINT_URL_LAMBDA"] = self._endpoint
        variables.update(self.env)
        # A value the template leaves empty (an endpoint override, an optional URL) keeps the local cloud's.
        variables.update({name: value for name, value in spec.environment.items() if value or name not in variables})
        variables.update(self.env)
        variables.update(
            {
                "_HANDLER": spec.handler,
                "AWS_REGION": self.region,
                "AWS_DEFAULT_REGION": self.region,
                "AWS_LAMBDA_FUNCTION_NAME": function.physical_name,
                "AWS_LAMBDA_FUNCTION_VERSION": LATEST,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
                "AWS_LAMBDA_FUNCTION_TIMEOUT": str(spec.timeout_s),
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.physical_name}",
                "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
                "LAMBDA_TASK_ROOT": str(function.code_root),
                # As under `sam local`: Powertools' Tracer then stays off instead of calling an X-Ray daemon.
                "AWS_SAM_LOCAL": "true",
            }
        )
        if function.runtime:
            variables["AWS_EXECUTION_ENV"] = f"AWS_Lambda_{function.runtime}"
        search = [str(function.code_root), str(self.template_path.parent)]
        if os.environ.get("PYTHONPATH"):
            search.append(os.environ["PYTHONPATH"])
        variables["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(search))
        return variables

    def _spawn(self, function: _Function) -> _Container:
        container = _Container(next(self._numbers), function, self._environment(function), self.region)
        with self._state:
            stopping = self._stopping.is_set()
            if not stopping:
                self._containers.add(container)
        if stopping:
            container.kill(by_emulator=True)
            raise _Stopping
        return container

    def _run(self, function: _Function, call: _Call, container: _Container | None) -> tuple[_Outcome, list[str]]:
        """Run ``call`` in ``container`` (a new one when None) and record it; its outcome and log lines."""
        started, clock = time.time(), time.perf_counter()
        init_ms: float | None = None
        init_lines: list[str] = []
        invoke_ms = 0.0
        outcome: _Outcome | None = None
        try:
            if container is None:
                container = self._spawn(function)
                outcome = container.initialize(call.request_id)
                init_ms = container.init_duration_ms
                if outcome is None:
                    init_lines = container.init_logs()
                else:
                    init_lines, outcome.logs = outcome.logs, []
            if outcome is None:
                invoke_started = time.perf_counter()
                outcome = container.invoke(call)
                invoke_ms = (time.perf_counter() - invoke_started) * 1000
        except _Stopping:
            outcome = _Outcome(InvocationStatus.CANCELLED, b"", None, [])
        except OSError as exc:
            error = {
                "errorMessage": f"cannot start a container: {exc}",
                "errorType": "Emulator.ContainerStartFailed",
            }
            outcome = _error_outcome(InvocationStatus.CRASHED, error, [])
        finally:
            self._release(function, container)
        finished, duration_ms = time.time(), (time.perf_counter() - clock) * 1000
        lines = [
            *init_lines,
            f"START RequestId: {call.request_id} Version: {LATEST}",
            *outcome.logs,
            f"END RequestId: {call.request_id}",
            self._report(function, call, outcome, invoke_ms, init_ms),
        ]
        self._record(function, call, started, finished, duration_ms, outcome, container, init_ms, lines)
        return outcome, lines

    @staticmethod
    def _report(function: _Function, call: _Call, outcome: _Outcome, invoke_ms: float, init_ms: float | None) -> str:
        fields = [
            f"REPORT RequestId: {call.request_id}",
            f"Duration: {invoke_ms:.2f} ms",
            f"Billed Duration: {math.ceil(invoke_ms + (init_ms or 0.0))} ms",
            f"Memory Size: {function.spec.memory_mb} MB",
        ]
        if outcome.max_memory_mb is not None:
            fields.append(f"Max Memory Used: {outcome.max_memory_mb} MB")
        if init_ms is not None:
            fields.append(f"Init Duration: {init_ms:.2f} ms")
        if outcome.status is not InvocationStatus.OK:
            fields.append(f"Status: {outcome.status.value}")
        return "\t".join(fields)

    def _record(
        self,
        function: _Function,
        call: _Call,
        started: float,
        finished: float,
        duration_ms: float,
        outcome: _Outcome,
        container: _Container | None,
        init_ms: float | None = None,
        lines: list[str] | None = None,
    ) -> None:
        logs = "".join(line + "\n" for line in lines or [])[-LOG_LIMIT_CHARS:]
        error: dict[str, Any] | None = None
        if outcome.error is not None:
            error = {key: outcome.error[key] for key in ("errorType", "errorMessage") if key in outcome.error}
        record = InvocationRecord(
            request_id=call.request_id,
            function=function.logical_id,
            invocation_type=call.invocation_type,
            started=started,
            finished=finished,
            duration_ms=duration_ms,
            status=outcome.status,
            error=error,
            logs=logs,
            container=None if container is None else container.number,
            init_duration_ms=init_ms,
        )
        with self._state:
            self._records.append(record)
        function.log.info(
            "%s: %s %s %s -> %s in %.0f ms%s",
            _LABEL,
            call.invocation_type.value,
            function.logical_id,
            call.request_id,
            outcome.status.value,
            duration_ms,
            f" (cold start, init {init_ms:.0f} ms)" if init_ms is not None else "",
        )


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
