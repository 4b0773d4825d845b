"""The Lex emulator's HTTP/1.1 server: the RecognizeText route, its error answers, and the control plane.

**Lex V2 runtime** ``RecognizeText`` (rest-json; botocore's ``lexv2-runtime`` model, ``botocore/data/lexv2-runtime/
2020-08-07/service-2.json``)::

    POST /bots/{botId}/botAliases/{botAliasId}/botLocales/{localeId}/sessions/{sessionId}/text
         body: {"text", "sessionState"?, "requestAttributes"?}       (:mod:`~.requests`)

    200  RecognizeTextResponse (:mod:`~.dialog`)
    400  x-amzn-ErrorType: ValidationException        {"message": …}   a request the runtime refuses
    400  x-amzn-ErrorType: SerializationException     {"message": …}   a body that is not JSON
    404  x-amzn-ErrorType: ResourceNotFoundException  {"message": …}   an unknown bot, alias or locale
    429  ThrottlingException, 500 InternalServerException, 424 DependencyFailedException   (injected)

botocore reads the error's code from ``x-amzn-ErrorType`` and its text from the body's ``message``; the URI's members
are percent-decoded. Requests are not authenticated: SigV4 headers are accepted and ignored.

The control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/faults        {"kind": "throttle", "count": 1}  (or a list)
    GET    /_emulator/faults        pending faults
    DELETE /_emulator/faults        drop every pending fault
    GET    /_emulator/invocations   one record per call (:class:`~.records.InvocationRecord`)
    POST   /_emulator/bot           a bot file (:mod:`~.bot`): it is served from now on, every session forgotten
    GET    /_emulator/bot           the bot file served
    GET    /_emulator/sessions      the sessions alive, with their attributes and dialog state
    DELETE /_emulator/sessions      forget every session

Any other path is UnknownOperationException (404).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from voicebridge_dev.local.lex.bot import Locale
from voicebridge_dev.local.lex.dialog import Session
from voicebridge_dev.local.lex.faults import Fault, FaultKind
from voicebridge_dev.local.lex.records import LABEL, InvocationRecord
from voicebridge_dev.local.lex.requests import RecognizeTextRequest, parse_recognize_text
from voicebridge_dev.local.service import ApiError, EmulatorHandler, Serving

__all__ = ["Backend", "Handler"]

_RECOGNIZE_TEXT: Final = re.compile(
    r"^/bots/(?P<bot>[^/]+)/botAliases/(?P<alias>[^/]+)/botLocales/(?P<locale>[^/]+)/sessions/(?P<session>[^/]+)/text$"
)


class Backend(Serving[Fault], Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.LexEmulator`)."""

    def locale_of(self, request: RecognizeTextRequest) -> Locale: ...
    def converse(
        self, locale: Locale, request: RecognizeTextRequest, request_id: str
    ) -> tuple[dict[str, Any], Session]: ...
    def keep(self, session: Session) -> None: ...
    def record(self, record: InvocationRecord) -> None: ...


class Handler(EmulatorHandler[Backend]):
    server_version = "LexRuntimeV2Emulator/1.0"
    label = LABEL

    def do_POST(self) -> None:
        match = _RECOGNIZE_TEXT.match(urlsplit(self.path).path)
        body = self.read_body()
        if match is None:
            self.serve_control(body)
            return
        ids = {name: unquote(value) for name, value in match.groupdict().items()}
        self.emulator.in_flight.begin()
        try:
            self._recognize_text(ids, body)
        finally:
            self.emulator.in_flight.end()

    def unknown_operation(self) -> None:
        message = f"{self.command} {urlsplit(self.path).path} is not an operation of the {LABEL}"
        self.send_json(404, {"message": message}, {"x-amzn-ErrorType": "UnknownOperationException"})

    def _recognize_text(self, ids: dict[str, str], raw: bytes) -> None:
        emulator, started, request_id = self.emulator, time.perf_counter(), str(uuid.uuid4())
        record: dict[str, Any] = {
            "request_id": request_id,
            "bot_id": ids["bot"],
            "bot_alias_id": ids["alias"],
            "locale_id": ids["locale"],
            "session_id": ids["session"],
            "started": started,
            "http_status": 200,
            "outcome": "ok",
        }
        headers = {"x-amzn-RequestId": request_id}
        try:
            try:
                record["body"] = json.loads(raw) if raw else {}
            except ValueError:
                record["body"] = raw.decode("utf-8", errors="replace")
                raise ApiError(400, "SerializationException", "The request body is not valid JSON.") from None
            request = parse_recognize_text(ids["bot"], ids["alias"], ids["locale"], ids["session"], record["body"])
            answer, session = emulator.converse(emulator.locale_of(request), request, request_id)
            fault = emulator.faults.take()
            record["fault"] = fault.kind.value if fault else None
            if fault is not None:
                if fault.kind is FaultKind.DROP:
                    self._drop(record)
                    return
                refusal = fault.refusal()
                if refusal is not None:
                    record["outcome"] = f"fault_{fault.kind.value}"
                    raise refusal
            emulator.keep(session)
            record["answer"] = answer
            if fault is not None:
                # A stall: the turn has happened, only its answer is late.
                emulator.stopping.wait(fault.seconds)
        except ApiError as error:
            record.update(http_status=error.status, error_type=error.error_type, error_message=error.message)
            if record.get("fault") is None:
                record["outcome"] = "error"
            self._finish(record)
            self.send_json(error.status, {"message": error.message}, {**headers, "x-amzn-ErrorType": error.error_type})
            return
        self._finish(record)
        self.send_json(200, answer, headers)

    def _drop(self, record: dict[str, Any]) -> None:
        """Cut the connection with no answer; the session stays as it was before the turn."""
        record["outcome"] = "fault_drop"
        self._finish(record)
        self.cut()

    def _finish(self, record: dict[str, Any]) -> None:
        self.emulator.record(InvocationRecord(finished=time.perf_counter(), **record))
