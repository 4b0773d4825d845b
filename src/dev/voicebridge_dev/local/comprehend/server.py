"""The Comprehend emulator's HTTP/1.1 server: the JSON 1.1 route, its error answers, and the control plane.

**Amazon Comprehend** (JSON 1.1; botocore's ``comprehend`` model, ``botocore/data/comprehend/2017-11-27/
service-2.json``: ``jsonVersion`` 1.1, ``targetPrefix`` ``Comprehend_20171127``)::

    POST /
         X-Amz-Target: Comprehend_20171127.DetectPiiEntities     (or .ContainsPiiEntities)
         Content-Type: application/x-amz-json-1.1
         body: {"Text", "LanguageCode"}                           (:mod:`~.requests`)

    200  {"Entities": [{"BeginOffset", "EndOffset", "Score", "Type"}]}   DetectPiiEntities
         {"Labels": [{"Name", "Score"}]}                                 ContainsPiiEntities
    400  {"__type": "ValidationException", "message": …}          a member missing, empty, or a language not taken
    400  {"__type": "SerializationException", "message": …}       a body that is not a JSON object
    400  {"__type": "InvalidRequestException", "Message": …, "Reason": "INVALID_DOCUMENT"}   text with no UTF-8 form
    400  {"__type": "TextSizeLimitExceededException", "Message": …}    over 100,000 bytes of UTF-8
    400  {"__type": "UnknownOperationException", "message": …}    any other target, or none
    429  {"__type": "TooManyRequestsException", "Message": …}     beyond the quota (:mod:`~.quota`), or injected
    500  {"__type": "InternalServerException", "Message": …}      injected

botocore's JSON parser (``parsers.BaseJSONParser._do_error_parse``) reads the error's code from the body's
``__type`` (the part after any ``#``) and its text from ``message``, else ``Message``. The model's error shapes name
the member ``Message``; AWS's request validation layer, which answers ValidationException, SerializationException and
UnknownOperationException for every JSON service, writes ``message``. Answers are ``application/x-amz-json-1.1``
with an ``x-amzn-RequestId``. botocore 1.44 prefers the model's ``json`` protocol to its ``smithy-rpc-v2-cbor``
(``utils.PRIORITY_ORDERED_SUPPORTED_PROTOCOLS``); a CBOR request (``POST /service/Comprehend_20171127/operation/…``)
is not served. Requests are not authenticated: SigV4 headers are accepted and ignored.

The control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/faults        {"kind": "throttle", "count": 1}  (or a list)
    GET    /_emulator/faults        pending faults
    DELETE /_emulator/faults        drop every pending fault
    GET    /_emulator/invocations   one record per call, with the text it sent (:class:`~.records.InvocationRecord`)
    POST   /_emulator/config        {"requests_per_second": 5}  (null: no quota); answers the settings
    GET    /_emulator/config        the settings
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from voicebridge_dev.local.comprehend.faults import Fault
from voicebridge_dev.local.comprehend.quota import RequestQuota
from voicebridge_dev.local.comprehend.records import LABEL, Call
from voicebridge_dev.local.comprehend.requests import LANGUAGES, PiiRequest, parse_pii_request
from voicebridge_dev.local.service import CONTROL_PREFIX, AnsweringHandler, ApiError, Serving

TARGET_PREFIX: Final = "Comprehend_20171127."
CONTENT_TYPE: Final = "application/x-amz-json-1.1"
_VALIDATION_LAYER: Final = ("ValidationException", "SerializationException", "UnknownOperationException")
"""Errors AWS's request layer answers, with ``message``; the model's own shapes carry ``Message``."""
_THROTTLED: Final = "The number of requests exceeds the limit. Resubmit your request later."


class Backend(Serving[Fault], Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.ComprehendEmulator`)."""

    @property
    def quota(self) -> RequestQuota: ...
    def answer(self, request: PiiRequest) -> dict[str, Any]: ...
    def record(self, state: Call) -> None: ...


def error_body(error: ApiError) -> dict[str, Any]:
    """The JSON 1.1 body of ``error``: ``__type``, its text under the key the sender writes, and its extra fields."""
    key = "message" if error.error_type in _VALIDATION_LAYER else "Message"
    return {"__type": error.error_type, key: error.message, **error.extra}


class Handler(AnsweringHandler[Backend]):
    server_version = "ComprehendEmulator/1.0"
    label = LABEL
    content_type = CONTENT_TYPE

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        body = self.read_body()
        if path.startswith(CONTROL_PREFIX):
            self.serve_control(body)
            return
        target = self.headers.get("X-Amz-Target", "")
        operation = target.removeprefix(TARGET_PREFIX) if target.startswith(TARGET_PREFIX) else ""
        if path != "/" or operation not in LANGUAGES:
            self.unknown_operation()
            return
        call = Call(started=time.perf_counter(), operation=operation)
        self.serve_call(call, lambda: self.answer(call, lambda: self._serve(call, body)))

    def unknown_operation(self) -> None:
        target = self.headers.get("X-Amz-Target") or "no X-Amz-Target"
        error = ApiError(
            400,
            "UnknownOperationException",
            f"{self.command} {urlsplit(self.path).path} ({target}) is not an operation of the {LABEL}; it serves "
            f"{', '.join(TARGET_PREFIX + name for name in LANGUAGES)}",
        )
        self.send_json(error.status, error_body(error), {"Content-Type": CONTENT_TYPE})

    def error_answer(self, error: ApiError) -> tuple[Any, Mapping[str, str]]:
        return error_body(error), {}

    def _serve(self, call: Call, raw: bytes) -> Any:
        emulator = self.emulator
        try:
            body, unreadable = self.json_body(call, raw), None
        except ApiError as error:
            body, unreadable = None, error
        if isinstance(body, dict):
            text, language = body.get("Text"), body.get("LanguageCode")
            call.text = text if isinstance(text, str) else None
            call.language_code = language if isinstance(language, str) else None
        # The quota is enforced in front of the service: a call beyond it is refused before it is read.
        if not emulator.quota.admit(call.operation):
            call.outcome = "throttled"
            raise ApiError(429, "TooManyRequestsException", _THROTTLED)
        if unreadable is not None:
            raise unreadable
        answer = emulator.answer(parse_pii_request(call.operation, body))
        fault = self.strike(call)
        if fault is not None:
            if fault.kind.cuts:
                return None
            emulator.stopping.wait(fault.seconds)
        return answer
