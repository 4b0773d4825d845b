"""The Lambda emulator itself: the template's functions, their warm containers and Event queues, and the server.

Each function runs as Lambda runs it: in warm worker processes ("containers", POSIX only), one started by an
invocation that finds none idle, up to ``concurrency`` per function, then reused, so per-container caches
behave as in Lambda. A synchronous invocation that finds every container busy gets TooManyRequestsException,
as under reserved concurrency (boto3 retries it); Event invocations wait in a bounded queue instead. A
container's environment is the host's locale, path and AWS credentials (``sam local`` passes them too), then
the template's variables, then ``env``, then the variables Lambda reserves; ``AWS_ENDPOINT_URL_LAMBDA`` points
back at this emulator unless ``env`` sets it, so a handler invokes a function (itself included) with plain
boto3. A container that overruns the function's timeout is killed; the next invocation starts a new one.

Log lines are forwarded as they arrive to the logger ``voicebridge_dev.local.lambda_.<LogicalId>`` and kept
with the invocation's record. The record log keeps the last :data:`RECORD_LIMIT`; :meth:`LambdaEmulator.keep` keeps
the records a caller picks (those that failed, in a load run) however many others follow.
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Any, Final, Self, Unpack

from voicebridge_dev.local.lambda_.containers import (
    KILL_WAIT_S,
    LOG_LIMIT_CHARS,
    Call,
    Container,
    Outcome,
    error_outcome,
)
from voicebridge_dev.local.lambda_.errors import EmulatorStopping
from voicebridge_dev.local.lambda_.faults import Fault
from voicebridge_dev.local.lambda_.functions import LATEST, Function, Functions
from voicebridge_dev.local.lambda_.invoke import Answer, log_tail, parse_event, parse_invoke_headers
from voicebridge_dev.local.lambda_.records import LABEL, InvocationRecord, InvocationStatus, InvocationType
from voicebridge_dev.local.lambda_.server import Handler
from voicebridge_dev.local.service import (
    RECORD_LIMIT,
    Address,
    ApiError,
    CallLog,
    ControlAnswer,
    ControlPlane,
    ServedEmulator,
)
from voicebridge_dev.template import LOCAL_ACCOUNT

logger = logging.getLogger(__name__)

EVENT_QUEUE_LIMIT: Final = 100
"""Event invocations queued per function before further ones are refused with TooManyRequestsException."""
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


DEFAULT_CONCURRENCY: Final = 12
"""Containers per function when the template reserves none. AWS gives an account 1,000 unreserved by default; a
development machine runs each container as a process, so the local cloud stops at a dozen: ten simultaneous calls
(each with its consumer and a long-polling ConverseFunction) run unthrottled, a larger burst is throttled."""


@dataclass(frozen=True)
class KeptInvocation:
    """An invocation :meth:`LambdaEmulator.keep` picked: its record (logs included) and its answer's bytes."""

    record: InvocationRecord
    answer: bytes


class LambdaEmulator(ServedEmulator[Fault]):
    """A local Lambda ``Invoke`` endpoint running a SAM template's Python functions (an emulator, not Lambda).

    ``parameters`` — template parameter values (else their defaults), as ``sam local --parameter-overrides``.
    ``env`` — variables added to every function's environment over the template's (e.g. ``LocalCloud.env()``).
    ``concurrency`` — containers per function at most: the function's ``ReservedConcurrentExecutions`` when the
    template reserves some, else this (default :data:`DEFAULT_CONCURRENCY`, the share of an account's unreserved
    pool a development machine can run as processes), so local load meets the throttling it would in AWS.
    :meth:`wait_idle` waits until no invocation is running or queued.
    """

    label = LABEL
    handler = Handler
    service = "Lambda"

    def __init__(
        self,
        template_path: str | Path,
        *,
        region: str = "us-east-1",
        parameters: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        concurrency: int | None = None,
        **address: Unpack[Address],
    ) -> None:
        concurrency = DEFAULT_CONCURRENCY if concurrency is None else concurrency
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        super().__init__(**address)
        self.template_path = Path(template_path).resolve()
        self.region = region
        self.parameters = dict(parameters or {})
        self.env = dict(env or {})
        self.concurrency = concurrency
        self._functions = Functions(region, {}, {})
        self._records: CallLog[InvocationRecord] = CallLog(RECORD_LIMIT)
        self._kept: CallLog[KeptInvocation] = CallLog()
        self._wanted: Callable[[InvocationRecord, bytes], bool] | None = None
        self._cpu_ms: dict[str, float] = {}
        self._state = threading.Lock()
        self._containers: set[Container] = set()
        self._numbers = itertools.count(1)

    # -- lifecycle

    def start(self) -> Self:
        """Read the template's functions, then start serving.

        A function whose environment cannot be resolved locally is logged and answers ServiceException with
        the reason; the others run.
        """
        if self._server is None:
            self._functions = Functions.load(self.template_path, self.region, self.parameters)
        return super().start()

    def _serving(self) -> str:
        return "functions: " + ", ".join(function.logical_id for function in self._functions)

    def _wind_down(self) -> None:
        """Drop queued Event invocations and kill every container, running handlers included."""
        with self._state:
            containers = list(self._containers)
            self._containers.clear()
        for function in self._functions:
            with function.lock:
                dropped = list(function.events)
                function.events.clear()
                function.lock.notify_all()
            for call in dropped:
                self._cancel(function, call)
        for container in containers:
            container.kill(by_emulator=True)
        for function in self._functions:
            for dispatcher in function.dispatchers:
                dispatcher.join(timeout=KILL_WAIT_S)
            with function.lock:
                function.dispatchers.clear()
                function.idle.clear()
                function.containers = 0

    # -- state

    @property
    def invocations(self) -> list[InvocationRecord]:
        """Finished invocations, oldest first (a copy)."""
        return self._records.snapshot()

    def keep(self, wanted: Callable[[InvocationRecord, bytes], bool]) -> None:
        """From now on, keep every finished invocation ``wanted`` picks from its record and its answer's bytes, with
        that answer, beside the bounded record log (:attr:`kept`): a long run's failures, with their logs."""
        self._wanted = wanted

    @property
    def kept(self) -> list[KeptInvocation]:
        """The invocations :meth:`keep` picked, oldest first (a copy)."""
        return self._kept.snapshot()

    @property
    def cpu_seconds(self) -> dict[str, float]:
        """CPU time each function's containers used during invocations since the emulator started (however many
        invocations the record log still keeps)."""
        with self._state:
            return {name: ms / 1000 for name, ms in self._cpu_ms.items()}

    def wait_for_idle(self, timeout: float) -> bool:
        """:meth:`wait_idle` by the name this emulator's callers have waited with."""
        return self.wait_idle(timeout)

    # -- the Invoke operation

    def answer_invoke(self, name: str, qualifier: str | None, headers: Mapping[str, str], body: bytes) -> Answer:
        """Answer one Invoke request; ``headers`` are keyed in lower case."""
        function = self._functions.resolve(name, qualifier)
        request = parse_invoke_headers(headers)
        kind = request.invocation_type
        if kind is InvocationType.DRY_RUN:
            return Answer(204, {})
        event = parse_event(body)
        fault = self.faults.take(lambda fault: fault.strikes(function.logical_id, function.physical_name))
        if fault is not None and (refusal := fault.refusal()) is not None:
            raise refusal
        call = Call(str(uuid.uuid4()), kind, event, request.client_context)
        if kind is InvocationType.EVENT:
            self._enqueue(function, call)
            return Answer(202, {"x-amzn-RequestId": call.request_id})
        outcome, logs = self._invoke_now(function, call)
        if outcome.status is InvocationStatus.CANCELLED:
            raise ApiError(500, "ServiceException", "the Lambda emulator stopped during the invocation")
        answer = Answer(200, {"x-amzn-RequestId": call.request_id, "X-Amz-Executed-Version": LATEST}, outcome.payload)
        if outcome.status is not InvocationStatus.OK:
            answer.headers["X-Amz-Function-Error"] = "Unhandled"
        if request.log_type == "Tail":
            answer.headers["X-Amz-Log-Result"] = log_tail(logs)
        return answer

    def _invoke_now(self, function: Function, call: Call) -> tuple[Outcome, list[str]]:
        with self.in_flight.serving():
            try:
                container = self._lease(function, wait=False)
            except EmulatorStopping as exc:
                raise ApiError(500, "ServiceException", "the Lambda emulator is stopping") from exc
            return self._run(function, call, container)

    def _enqueue(self, function: Function, call: Call) -> None:
        with function.lock:
            if self.stopping.is_set():
                raise ApiError(500, "ServiceException", "the Lambda emulator is stopping")
            if len(function.events) >= EVENT_QUEUE_LIMIT:
                raise ApiError(
                    429,
                    "TooManyRequestsException",
                    f"{function.logical_id} has {EVENT_QUEUE_LIMIT} Event invocations queued",
                    {"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"},
                )
            self.in_flight.begin()
            function.events.append(call)
            if len(function.dispatchers) < self._limit(function):
                dispatcher = threading.Thread(
                    target=self._dispatch,
                    args=(function,),
                    name=f"lambda-{function.logical_id}-events-{len(function.dispatchers) + 1}",
                    daemon=True,
                )
                function.dispatchers.append(dispatcher)
                dispatcher.start()
            function.lock.notify_all()

    def _dispatch(self, function: Function) -> None:
        while True:
            with function.lock:
                function.lock.wait_for(lambda: bool(function.events) or self.stopping.is_set())
                if self.stopping.is_set():
                    return
                call = function.events.popleft()
            try:
                container = self._lease(function, wait=True)
            except EmulatorStopping:
                self._cancel(function, call)
                return
            try:
                outcome, _ = self._run(function, call, container)
                if outcome.status is not InvocationStatus.OK:
                    function.log.warning(
                        "%s: Event invocation %s of %s ended %s: %s",
                        LABEL,
                        call.request_id,
                        function.logical_id,
                        outcome.status.value,
                        outcome.payload.decode("utf-8", "replace"),
                    )
                    if outcome.status is not InvocationStatus.CANCELLED:
                        # Queued before this invocation stops counting, so the emulator is never idle in between.
                        self._send_failure_record(function, call, outcome)
            finally:
                self.in_flight.end()

    def _send_failure_record(self, function: Function, call: Call, outcome: Outcome) -> None:
        """Invoke the function's on-failure destination with the invocation record, as Lambda does once an Event
        invocation's retries are spent (the template's are 0): the record's shape is the Lambda developer guide's
        "Capturing records of Lambda asynchronous invocations" example."""
        target = function.spec.on_failure
        if target is None:
            return
        try:
            destination = self._functions.resolve(target, None)
        except ApiError:
            function.log.error("%s: on-failure destination %s is not a function here", LABEL, target)
            return
        try:
            payload: Any = json.loads(outcome.payload or b"null")
        except ValueError:
            payload = outcome.payload.decode("utf-8", "replace")
        try:
            request: Any = json.loads(call.event or "null")
        except ValueError:
            request = call.event
        arn = f"arn:aws:lambda:{self._functions.region}:{LOCAL_ACCOUNT}:function:{function.physical_name}"
        record = {
            "version": "1.0",
            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "requestContext": {
                "requestId": call.request_id,
                "functionArn": f"{arn}:{LATEST}",
                "condition": "RetriesExhausted",
                "approximateInvokeCount": 1,
            },
            "requestPayload": request,
            "responseContext": {"statusCode": 200, "executedVersion": LATEST, "functionError": "Unhandled"},
            "responsePayload": payload,
        }
        try:
            self._enqueue(destination, Call(str(uuid.uuid4()), InvocationType.EVENT, json.dumps(record), None))
        except ApiError as exc:
            function.log.error("%s: failure record for %s not delivered: %s", LABEL, call.request_id, exc)

    def _cancel(self, function: Function, call: Call) -> None:
        """Record an Event invocation the emulator stopped before it ran, and count it done."""
        now = time.time()
        self._record(function, call, now, now, 0.0, Outcome(InvocationStatus.CANCELLED, b"", None, []), None)
        self.in_flight.end()

    def _limit(self, function: Function) -> int:
        """How many of ``function``'s invocations may run at once."""
        reserved = function.spec.reserved_concurrency
        return reserved if reserved is not None else self.concurrency

    # -- containers

    def _lease(self, function: Function, *, wait: bool) -> Container | None:
        """An idle container, or None when a slot for a new one is reserved. Raises EmulatorStopping, or ApiError
        (throttled) when every container is busy and ``wait`` is false."""
        with function.lock:
            while True:
                if self.stopping.is_set():
                    raise EmulatorStopping
                if function.idle:
                    # Most recently used first, so one warm container serves a trickle of calls.
                    return function.idle.pop()
                if function.containers < self._limit(function):
                    function.containers += 1
                    return None
                if not wait:
                    raise ApiError(
                        429,
                        "TooManyRequestsException",
                        "Rate Exceeded.",
                        {"Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"},
                    )
                function.lock.wait()

    def _release(self, function: Function, container: Container | None) -> None:
        with function.lock:
            if container is not None and container.alive() and not self.stopping.is_set():
                function.idle.append(container)
            else:
                function.containers = max(0, function.containers - 1)
                if container is not None:
                    with self._state:
                        self._containers.discard(container)
            function.lock.notify_all()

    def _environment(self, function: Function) -> dict[str, str]:
        spec = function.spec
        variables = {name: os.environ[name] for name in _INHERITED if name in os.environ}
        # Not self.url: a container may still start while the emulator stops.
        variables["AWS_ENDPOINT_URL_LAMBDA"] = f"http://{self.host}:{self.port}"
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

    def _spawn(self, function: Function) -> Container:
        container = Container(next(self._numbers), function, self._environment(function), self.region)
        with self._state:
            stopping = self.stopping.is_set()
            if not stopping:
                self._containers.add(container)
        if stopping:
            container.kill(by_emulator=True)
            raise EmulatorStopping
        return container

    def _run(self, function: Function, call: Call, container: Container | None) -> tuple[Outcome, list[str]]:
        """Run ``call`` in ``container`` (a new one when None) and record it; its outcome and log lines."""
        started, clock = time.time(), time.perf_counter()
        init_ms: float | None = None
        init_lines: list[str] = []
        invoke_ms = 0.0
        outcome: Outcome | None = None
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
        except EmulatorStopping:
            outcome = Outcome(InvocationStatus.CANCELLED, b"", None, [])
        except OSError as exc:
            error = {
                "errorMessage": f"cannot start a container: {exc}",
                "errorType": "Emulator.ContainerStartFailed",
            }
            outcome = error_outcome(InvocationStatus.CRASHED, error, [])
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
    def _report(function: Function, call: Call, outcome: Outcome, invoke_ms: float, init_ms: float | None) -> str:
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
        if outcome.cpu_ms is not None:
            fields.append(f"CPU Time (emulator): {outcome.cpu_ms:.1f} ms")
        if outcome.status is not InvocationStatus.OK:
            fields.append(f"Status: {outcome.status.value}")
        return "\t".join(fields)

    def _record(
        self,
        function: Function,
        call: Call,
        started: float,
        finished: float,
        duration_ms: float,
        outcome: Outcome,
        container: Container | None,
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
            max_memory_mb=outcome.max_memory_mb,
            cpu_ms=outcome.cpu_ms,
        )
        self._records.append(record)
        wanted = self._wanted
        if wanted is not None and wanted(record, outcome.payload):
            self._kept.append(KeptInvocation(record, outcome.payload))
        if outcome.cpu_ms is not None:
            with self._state:
                self._cpu_ms[function.logical_id] = self._cpu_ms.get(function.logical_id, 0.0) + outcome.cpu_ms
        function.log.info(
            "%s: %s %s %s -> %s in %.0f ms%s",
            LABEL,
            call.invocation_type.value,
            function.logical_id,
            call.request_id,
            outcome.status.value,
            duration_ms,
            f" (cold start, init {init_ms:.0f} ms)" if init_ms is not None else "",
        )

    def control_plane(self) -> ControlPlane:
        """The ``/_emulator/...`` routes: the finished invocations and the faults."""

        def refused(reason: str) -> ControlAnswer:
            body = {"Type": "User", "message": reason}
            return ControlAnswer(HTTPStatus.BAD_REQUEST, body, {"x-amzn-ErrorType": "InvalidRequestContentException"})

        control = ControlPlane(refusal=refused)
        control.add_invocation_routes(LABEL, lambda: self.invocations)
        control.add_fault_routes(self, Fault.from_json, Fault.to_json)
        return control
