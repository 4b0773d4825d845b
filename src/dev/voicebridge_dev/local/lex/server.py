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

import re
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from voicebridge_dev.local.lex.bot import Locale
from voicebridge_dev.local.lex.dialog import Session
from voicebridge_dev.local.lex.faults import Fault
from voicebridge_dev.local.lex.records import LABEL, Turn
from voicebridge_dev.local.lex.requests import RecognizeTextRequest, parse_recognize_text
from voicebridge_dev.local.service import AnsweringHandler, ApiError, Serving

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
    def record(self, state: Turn) -> None: ...


class Handler(AnsweringHandler[Backend]):
    server_version = "LexRuntimeV2Emulator/1.0"
    label = LABEL

    def do_POST(self) -> None:
        match = _RECOGNIZE_TEXT.match(urlsplit(self.path).path)
        body = self.read_body()
        if match is None:
            self.serve_control(body)
            return
        ids = {name: unquote(value) for name, value in match.groupdict().items()}
        turn = Turn(
            started=time.perf_counter(),
            bot_id=ids["bot"],
            bot_alias_id=ids["alias"],
            locale_id=ids["locale"],
            session_id=ids["session"],
        )
        self.serve_call(turn, lambda: self.answer(turn, lambda: self._recognize_text(turn, body)))

    def error_answer(self, error: ApiError) -> tuple[Any, Mapping[str, str]]:
        return {"message": error.message}, {"x-amzn-ErrorType": error.error_type}

    def _recognize_text(self, turn: Turn, raw: bytes) -> Any:
        emulator = self.emulator
        body = self.json_body(turn, raw)
        request = parse_recognize_text(turn.bot_id, turn.bot_alias_id, turn.locale_id, turn.session_id, body)
        answer, session = emulator.converse(emulator.locale_of(request), request, turn.request_id)
        fault = self.strike(turn)
        if fault is not None and fault.kind.cuts:
            # The connection is cut with no answer; the session stays as it was before the turn.
            return None
        emulator.keep(session)
        if fault is not None:
            # A stall: the turn has happened, only its answer is late.
            emulator.stopping.wait(fault.seconds)
        return answer
