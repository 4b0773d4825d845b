"""The Connect emulator's HTTP/1.1 server: the two routes, their error answers, and the control plane.

**Amazon Connect** (rest-json; botocore's ``connect`` model, ``botocore/data/connect/2017-08-08/service-2.json``)::

    POST /contact/attributes                                   UpdateContactAttributes
         body: {"InitialContactId", "InstanceId", "Attributes"}   (:mod:`~.contacts`)
    200  {}
    GET  /contact/attributes/{InstanceId}/{InitialContactId}   GetContactAttributes
    200  {"Attributes": {...}}

    400  x-amzn-ErrorType: InvalidParameterException   {"Message": …}   a member outside the model's constraints
    400  x-amzn-ErrorType: SerializationException      {"Message": …}   not JSON, or a member of another type
    404  x-amzn-ErrorType: ResourceNotFoundException   {"Message": …}   an unknown instance or contact
    429  ThrottlingException, 500 InternalServiceException              (injected)

The URI's members are percent-decoded. Requests are not authenticated: SigV4 headers are accepted and ignored.

The control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/faults        {"kind": "throttle", "count": 1}  (or a list)
    GET    /_emulator/faults        pending faults
    DELETE /_emulator/faults        drop every pending fault
    GET    /_emulator/invocations   one record per call (:class:`~.records.InvocationRecord`)
    POST   /_emulator/contacts      {"ContactId": …}: a contact of the instance from now on
    GET    /_emulator/contacts      {"InstanceId", "Contacts": [{"ContactId", "Attributes", "Updates"}, …]}
    DELETE /_emulator/contacts      forget every contact

Any other path is UnknownOperationException (404).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from voicebridge_dev.local.connect.contacts import UpdateRequest
from voicebridge_dev.local.connect.faults import Fault
from voicebridge_dev.local.connect.records import LABEL, Call
from voicebridge_dev.local.service import AnsweringHandler, ApiError, Serving

_UPDATE: Final = "/contact/attributes"
_GET: Final = re.compile(r"^/contact/attributes/(?P<instance>[^/]+)/(?P<contact>[^/]+)$")


class Backend(Serving[Fault], Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.ConnectEmulator`)."""

    def check(self, request: UpdateRequest) -> None: ...
    def update(self, request: UpdateRequest) -> None: ...
    def read(self, instance_id: str, contact_id: str) -> dict[str, str]: ...
    def record(self, state: Call) -> None: ...


class Handler(AnsweringHandler[Backend]):
    server_version = "ConnectEmulator/1.0"
    label = LABEL

    def do_POST(self) -> None:
        body = self.read_body()
        if urlsplit(self.path).path != _UPDATE:
            self.serve_control(body)
            return
        call = Call(started=time.perf_counter(), operation="UpdateContactAttributes")
        self.serve_call(call, lambda: self.answer(call, lambda: self._update(call, body)))

    def do_GET(self) -> None:
        match = _GET.match(urlsplit(self.path).path)
        if match is None:
            super().do_GET()
            return
        call = Call(
            started=time.perf_counter(),
            operation="GetContactAttributes",
            instance_id=unquote(match["instance"]),
            contact_id=unquote(match["contact"]),
        )
        self.serve_call(call, lambda: self.answer(call, lambda: self._get(call)))

    def error_answer(self, error: ApiError) -> tuple[Any, Mapping[str, str]]:
        return {"Message": error.message}, {"x-amzn-ErrorType": error.error_type}

    def _update(self, call: Call, raw: bytes) -> Any:
        body = self.json_body(call, raw)
        if isinstance(body, dict):
            # Recorded even for a request refused below, so a test sees which contact a bad request named.
            call.instance_id, call.contact_id = (
                _text_or_none(body.get("InstanceId")),
                _text_or_none(body.get("InitialContactId")),
            )
        request = UpdateRequest.of(body)
        self.emulator.check(request)
        fault = self.strike(call)
        if fault is not None and fault.kind.cuts:
            return None
        self.emulator.update(request)
        if fault is not None:
            # A stall: the attributes are written, only the answer is late.
            self.emulator.stopping.wait(fault.seconds)
        return {}

    def _get(self, call: Call) -> Any:
        assert call.instance_id is not None and call.contact_id is not None
        answer = {"Attributes": self.emulator.read(call.instance_id, call.contact_id)}
        fault = self.strike(call)
        if fault is not None:
            if fault.kind.cuts:
                return None
            self.emulator.stopping.wait(fault.seconds)
        return answer


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None
