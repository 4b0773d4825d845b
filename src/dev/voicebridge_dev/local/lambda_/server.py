"""The Lambda emulator's HTTP/1.1 server: the ``Invoke`` route (:mod:`~voicebridge_dev.local.lambda_.invoke`) and
the control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    GET    /_emulator/invocations   one record per finished invocation (:class:`InvocationRecord`)
    POST   /_emulator/faults        {"kind": "throttle", "count": 1}  (or a list)
    GET    /_emulator/faults        pending faults
    DELETE /_emulator/faults        drop every pending fault

Any other path is UnknownOperationException (404).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from voicebridge_dev.local.lambda_.invoke import Answer
from voicebridge_dev.local.lambda_.records import LABEL
from voicebridge_dev.local.service import ApiError, EmulatorHandler

_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")


def _body(error: ApiError) -> dict[str, str]:
    """The Lambda API's error body: who is at fault, and the message under the key botocore reads it from."""
    key = "Message" if error.error_type in ("ResourceNotFoundException", "ServiceException") else "message"
    return {"Type": "User" if error.status < 500 else "Service", key: error.message, **error.extra}


class Backend(Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.LambdaEmulator`)."""

    def answer_invoke(self, name: str, qualifier: str | None, headers: Mapping[str, str], body: bytes) -> Answer: ...


class Handler(EmulatorHandler[Backend]):
    server_version = "LambdaEmulator/1.0"
    label = LABEL

    def _send(self, answer: Answer) -> None:
        self.send(answer.status, answer.body, answer.headers)

    def _send_error(self, error: ApiError) -> None:
        headers = {"x-amzn-ErrorType": error.error_type}
        if error.status == 429:
            headers["Retry-After"] = "1"
        self.send_json(error.status, _body(error), headers)

    def do_POST(self) -> None:
        parts = urlsplit(self.path)
        match = _INVOKE_PATH.match(parts.path)
        body = self.read_body()
        if match is None:
            self.serve_control(body)
            return
        qualifier = parse_qs(parts.query).get("Qualifier", [None])[0]
        try:
            headers = {name.lower(): value for name, value in self.headers.items()}
            answer = self.emulator.answer_invoke(unquote(match.group("name")), qualifier, headers, body)
        except ApiError as error:
            self._send_error(error)
            return
        self._send(answer)

    def unknown_operation(self) -> None:
        message = f"{self.command} {self.path} is not an operation of {LABEL}"
        self._send_error(ApiError(404, "UnknownOperationException", message))
