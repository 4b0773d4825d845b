"""The Lambda emulator's HTTP/1.1 server: the ``Invoke`` route (:mod:`~voicebridge_dev.local.lambda_.invoke`) and
the control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    GET    /_emulator/invocations   one record per finished invocation (:class:`InvocationRecord`)
    POST   /_emulator/faults        {"kind": "throttle", "count": 1}  (or a list)
    GET    /_emulator/faults        pending faults
    DELETE /_emulator/faults        drop every pending fault

Any other path is UnknownOperationException (404).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, unquote, urlsplit

from voicebridge_dev.local.lambda_.errors import ApiError
from voicebridge_dev.local.lambda_.faults import Fault
from voicebridge_dev.local.lambda_.invoke import Answer
from voicebridge_dev.local.lambda_.records import LABEL
from voicebridge_dev.local.service import ControlAnswer, ControlPlane, TrackedHandler, TrackingHTTPServer

if TYPE_CHECKING:
    from voicebridge_dev.local.lambda_.emulator import LambdaEmulator

__all__ = ["Handler", "Server"]

logger = logging.getLogger(__name__)

_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")


def control_plane(emulator: LambdaEmulator) -> ControlPlane:
    """The ``/_emulator/...`` routes: the finished invocations and the faults."""

    def refused(reason: str) -> ControlAnswer:
        body = {"Type": "User", "message": reason}
        return ControlAnswer(HTTPStatus.BAD_REQUEST, body, {"x-amzn-ErrorType": "InvalidRequestContentException"})

    def invocations(_: bytes) -> ControlAnswer:
        records = [record.to_json() for record in emulator.invocations]
        return ControlAnswer(HTTPStatus.OK, {"emulator": LABEL, "invocations": records})

    control = ControlPlane(refusal=refused)
    control.route("GET", "invocations", invocations)
    control.add_fault_routes(emulator, Fault.from_json, Fault.to_json)
    return control


class Server(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], emulator: LambdaEmulator) -> None:
        self.emulator = emulator
        self.control = control_plane(emulator)
        super().__init__(address, Handler)


class Handler(TrackedHandler):
    server_version = "LambdaEmulator/1.0"

    @property
    def emulator(self) -> LambdaEmulator:
        return cast(Server, self.server).emulator

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s: " + format, LABEL, *args)

    def _send(self, answer: Answer) -> None:
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

    def _send_error(self, error: ApiError) -> None:
        headers = {"x-amzn-ErrorType": error.error_type}
        if error.status == 429:
            headers["Retry-After"] = "1"
        self._send(Answer(error.status, headers, json.dumps(error.body()).encode()))

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        match = _INVOKE_PATH.match(parts.path)
        body = self.read_body()
        if match is None:
            self._serve_control(body)
            return
        qualifier = parse_qs(parts.query).get("Qualifier", [None])[0]
        try:
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = self.emulator.answer_invoke(unquote(match.group("name")), qualifier, headers, body)
        except ApiError as error:
            self._send_error(error)
            return
        self._send(answer)

    def do_GET(self) -> None:
        self._serve_control(self.read_body())

    def do_DELETE(self) -> None:
        self._serve_control(self.read_body())

    def _serve_control(self, body: bytes) -> None:
        answer = cast(Server, self.server).control.dispatch(self.command, self.path, body)
        if answer is None:
            self._unknown_operation()
        else:
            self._send(Answer(answer.status, dict(answer.headers), json.dumps(answer.payload).encode()))

    def _unknown_operation(self) -> None:
        self._send_error(
            ApiError(
                404,
                "UnknownOperationException",
                f"{self.command} {self.path} is not an operation of {LABEL}",
            )
        )
