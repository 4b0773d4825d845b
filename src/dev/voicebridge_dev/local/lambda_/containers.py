"""The emulator's side of a container: a worker process running one function's handler, and the pipes to it.

A container speaks JSON lines over two pipes of its own, leaving stdout and stderr (merged, as in a
CloudWatch log stream) to the handler::

    emulator → container   {"request_id": …, "event": "<the event's JSON text>", "client_context": {…} | null}
    container → emulator   {"type": "ready", "init_ms": …}
                           or {"type": "init_error", "error": {…}, "init_ms": …}, after which it exits;
                           then one per request:
                           {"type": "result", "payload": "<JSON text>", "max_memory_mb": …, "cpu_ms": …}
                           {"type": "error", "max_memory_mb": …, "cpu_ms": …,
                            "error": {"errorMessage", "errorType", "requestId", "stackTrace"}}

Before each reply the container writes a marker line naming the request to its stdout, so the emulator knows
where an invocation's log ends. The container's side is :mod:`voicebridge_dev.local.lambda_.worker`. A container
imports the handler when it starts (the init phase, bounded by :data:`INIT_TIMEOUT_S` plus the function's
timeout); one that overruns the function's timeout is killed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Final

from voicebridge_dev.local.lambda_.records import LABEL, InvocationStatus, InvocationType

if TYPE_CHECKING:
    from voicebridge_dev.local.lambda_.functions import Function

logger = logging.getLogger(__name__)

INIT_TIMEOUT_S: Final = 10.0
"""Longest a container may take to start and import its handler, on top of the function's timeout."""
LOG_LIMIT_CHARS: Final = 256 * 1024
"""Log text kept per invocation (its tail)."""
KILL_WAIT_S: Final = 5.0
INIT_MARK: Final = "init"
_LOG_DRAIN_S: Final = 2.0
_WORKER_MODULE: Final = "voicebridge_dev.local.lambda_.worker"
_MARKER_PREFIX: Final = "\x1evoicebridge-lambda-end:"


@dataclass(frozen=True)
class Call:
    request_id: str
    invocation_type: InvocationType
    event: str
    client_context: dict[str, Any] | None = None


@dataclass
class Outcome:
    status: InvocationStatus
    payload: bytes
    error: dict[str, Any] | None
    logs: list[str]
    max_memory_mb: int | None = None
    cpu_ms: float | None = None


def error_outcome(status: InvocationStatus, error: dict[str, Any], logs: list[str]) -> Outcome:
    return Outcome(status, json.dumps(error).encode(), error, logs)


def _timed_out(timeout_s: float, request_id: str) -> Outcome:
    message = f"Task timed out after {timeout_s:.2f} seconds"
    return error_outcome(
        InvocationStatus.TIMEOUT,
        {"errorMessage": message, "errorType": "Sandbox.Timedout"},
        [f"{request_id} {message}"],
    )


class Container:
    """One worker process running one function's handler, and the threads reading its pipes."""

    def __init__(self, number: int, function: Function, environment: Mapping[str, str], region: str) -> None:
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
                    logger.error("%s: container %d wrote a malformed reply: %r", LABEL, self.number, raw[:200])
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
            self.process.wait(timeout=KILL_WAIT_S)

    def _exit_error(self, request_id: str) -> Outcome:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=KILL_WAIT_S)
        code = self.process.returncode
        if self.killed_by_emulator:
            error = {
                "errorMessage": f"RequestId: {request_id} Error: the emulator stopped",
                "errorType": "Emulator.Stopped",
            }
            return error_outcome(InvocationStatus.CANCELLED, error, self._collect_logs(None))
        reason = f"signal: {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit status {code}"
        error = {
            "errorMessage": f"RequestId: {request_id} Error: Runtime exited with error: {reason}",
            "errorType": "Runtime.ExitError",
        }
        return error_outcome(InvocationStatus.CRASHED, error, self._collect_logs(None))

    def initialize(self, request_id: str) -> Outcome | None:
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
            return error_outcome(InvocationStatus.ERROR, reply["error"], self._collect_logs(INIT_MARK))
        return None

    def init_logs(self) -> list[str]:
        return self._collect_logs(INIT_MARK)

    def invoke(self, call: Call) -> Outcome:
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
        memory, cpu_ms = reply.get("max_memory_mb"), reply.get("cpu_ms")
        if reply.get("type") == "result":
            return Outcome(InvocationStatus.OK, str(reply["payload"]).encode(), None, logs, memory, cpu_ms)
        outcome = error_outcome(InvocationStatus.ERROR, reply["error"], logs)
        outcome.max_memory_mb, outcome.cpu_ms = memory, cpu_ms
        return outcome
