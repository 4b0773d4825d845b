"""The Bedrock emulator's HTTP/1.1 server: the ConverseStream route, its error answers and paced stream, and the
control plane.

**Bedrock Runtime** ``ConverseStream`` (rest-json; botocore's ``bedrock-runtime`` model, ``botocore/data/
bedrock-runtime/2023-09-30/service-2.json``)::

    POST /model/{modelId}/converse-stream      body: the request JSON (:mod:`~.requests`)

    200  Content-Type: application/vnd.amazon.eventstream, chunked: the events of :mod:`~.stream`
    400  x-amzn-ErrorType: ValidationException         {"message": …}   a request the service refuses (one the
                                                                          model's family refuses, :mod:`~.families`,
                                                                          among them), a model id it does not serve
    400  x-amzn-ErrorType: SerializationException      {"message": …}   a body that is not JSON
    429  x-amzn-ErrorType: ThrottlingException         {"message": …}   (injected)
    429  x-amzn-ErrorType: ModelNotReadyException      {"message": …}   (injected)
    503  x-amzn-ErrorType: ServiceUnavailableException {"message": …}   (injected)

The statuses and the ``{"message"}`` bodies are the error shapes of botocore's model. The header carries the name
as Bedrock sends it, followed by its namespace (``ValidationException:http://internal.amazon.com/coral/
com.amazon.bedrock/``, as a public report shows it: https://github.com/aws-samples/amazon-bedrock-client-for-mac/
issues/112); botocore reads the error's code from the header, up to the colon, and its text from the body's
``message``. The ``modelId`` is percent-decoded, so a model's foundation-model ARN, an inference profile id or an
inference profile ARN naming a served model works too. Requests are not authenticated: SigV4 (or bearer) headers
are accepted and ignored.

Pacing: ``messageStart`` goes out as the call arrives; the first delta after ``time_to_first_token_ms``, the
next ones at ``tokens_per_second``, each its own HTTP chunk, flushed at once.

The control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/faults        {"kind": "stall", "after_tokens": 3, "seconds": 2.0}  (or a list)
    GET    /_emulator/faults        pending faults
    DELETE /_emulator/faults        drop every pending fault
    GET    /_emulator/invocations   one record per call (:class:`~.records.InvocationRecord`)
    POST   /_emulator/brain         a brain file (:mod:`~.brain`): it answers the calls from now on
    GET    /_emulator/brain         the brain in use
    POST   /_emulator/config        {"time_to_first_token_ms": 300, "tokens_per_second": 60}
    GET    /_emulator/config        the settings and the model ids served

Any other path is UnknownOperationException (404).
"""

from __future__ import annotations

import re
import time
from typing import Final, Protocol
from urllib.parse import unquote, urlsplit

from voicebridge_dev.local.bedrock.brain import Brain
from voicebridge_dev.local.bedrock.faults import Fault, FaultKind
from voicebridge_dev.local.bedrock.records import LABEL, Invocation
from voicebridge_dev.local.bedrock.requests import ConverseRequest, parse_converse_request
from voicebridge_dev.local.bedrock.stream import ReplyPlan, event, exception_event, forced_stop, pieces, plan_reply
from voicebridge_dev.local.service import ApiError, CallHandler, Serving, Stopping, validation_error

_CONVERSE_STREAM: Final = re.compile(r"^/model/(?P<model>[^/]+)/converse-stream$")
_INVALID_MODEL: Final = "The provided model identifier is invalid."
_ERROR_NAMESPACE: Final = "http://internal.amazon.com/coral/com.amazon.bedrock/"


class Backend(Serving[Fault], Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.BedrockEmulator`)."""

    brain: Brain
    time_to_first_token_ms: float
    tokens_per_second: float

    def serves(self, model_id: str) -> bool: ...
    def record(self, state: Invocation) -> None: ...


class Handler(CallHandler[Backend]):
    server_version = "BedrockRuntimeEmulator/1.0"
    label = LABEL

    def _send_error(self, error: ApiError) -> None:
        headers = {"x-amzn-ErrorType": f"{error.error_type}:{_ERROR_NAMESPACE}"}
        self.send_json(error.status, {"message": error.message}, headers)

    def do_POST(self) -> None:
        match = _CONVERSE_STREAM.match(urlsplit(self.path).path)
        if match is None:
            self.serve_control(self.read_body())
            return
        state = Invocation(model_id=unquote(match.group("model")), started=time.perf_counter())
        body = self.read_body()
        self.serve_call(state, lambda: self._converse_stream(state, body))

    # -- ConverseStream

    def _converse_stream(self, state: Invocation, body: bytes) -> None:
        emulator = self.emulator
        try:
            request = self._request(state, body)
            asked = sum(message.role == "user" for message in request.messages)
            fault = emulator.faults.take(lambda pending: pending.strikes(asked))
            state.fault = fault.kind.value if fault else None
            if fault is not None and (refusal := fault.refusal()) is not None:
                state.outcome = f"fault_{fault.kind.value}"
                raise refusal
        except ApiError as error:
            state.http_status, state.error_type, state.error_message = error.status, error.error_type, error.message
            if state.fault is None:
                state.outcome = "error"
            self.complete(state)
            self._send_error(error)
            return
        brain = emulator.brain.speaking(request.language)
        plan = plan_reply(request, brain.answer(request.said, request.previous_reply))
        if fault is not None and fault.kind is FaultKind.STOP:
            plan, fault = forced_stop(plan, fault.stop_reason, fault.after_tokens, fault.message), None
        self._stream(state, request, plan, fault)

    def _request(self, state: Invocation, raw: bytes) -> ConverseRequest:
        body = self.json_body(state, raw)
        if not self.emulator.serves(state.model_id):
            raise validation_error(_INVALID_MODEL)
        return parse_converse_request(state.model_id, body)

    def _stream(self, state: Invocation, request: ConverseRequest, plan: ReplyPlan, fault: Fault | None) -> None:
        emulator = self.emulator
        headers = {"Content-Type": "application/vnd.amazon.eventstream", "Transfer-Encoding": "chunked"}
        self.send_head(200, {**headers, "x-amzn-RequestId": state.request_id})
        self.write_chunk(event("messageStart", {"role": "assistant"}))
        first_due = state.started + emulator.time_to_first_token_ms / 1000.0
        interval = 1.0 / emulator.tokens_per_second
        tokens = 0
        for piece in pieces(plan):
            if not piece.token:
                self.write_chunk(piece.frame)
                continue
            self._wait_until(first_due + tokens * interval)
            if fault is not None and tokens == fault.after_tokens:
                if not self._strike(state, fault):
                    return
                # The stall pushes the rest of the schedule back, as a stuck model would.
                first_due += fault.seconds
                fault = None
            self.write_chunk(piece.frame)
            state.first_token_at = state.first_token_at or time.perf_counter()
            state.text += piece.text
            tokens += 1
            state.deltas = tokens
        # A fault due after more deltas than the reply has strikes at its end, before messageStop.
        if fault is not None:
            self._wait_until(first_due + tokens * interval)
            if not self._strike(state, fault):
                return
        state.tool, state.stop_reason = (plan.tool.name if plan.tool else None), plan.stop_reason
        self.write_chunk(event("messageStop", {"stopReason": plan.stop_reason}))
        usage = {
            "inputTokens": request.input_tokens,
            "outputTokens": plan.output_tokens,
            "totalTokens": request.input_tokens + plan.output_tokens,
        }
        latency_ms = round((time.perf_counter() - state.started) * 1000)
        self.write_chunk(event("metadata", {"usage": usage, "metrics": {"latencyMs": latency_ms}}))
        self.complete(state)
        self.end_chunks()

    def _strike(self, state: Invocation, fault: Fault) -> bool:
        """Apply a mid-stream fault; True when the stream goes on after it (a stall)."""
        if fault.kind is FaultKind.STALL:
            self._pause(fault.seconds)
            return True
        state.outcome = f"fault_{fault.kind.value}"
        # Recorded first: a client that reads an exception event stops reading there.
        self.complete(state)
        if fault.kind is FaultKind.STREAM_ERROR:
            self.write_chunk(exception_event(fault.exception, fault.describe()))
            self.end_chunks()
        else:
            # A drop: the socket is cut with the body unfinished, as a connection lost mid-stream.
            self.cut()
        return False

    # -- writing and pacing

    def _wait_until(self, due: float) -> None:
        delay = due - time.perf_counter()
        if delay > 0:
            self._pause(delay)

    def _pause(self, seconds: float) -> None:
        if self.emulator.stopping.wait(seconds):
            raise Stopping
