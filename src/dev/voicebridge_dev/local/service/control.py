"""The control plane an emulator serves beside the service it emulates: ``/_emulator/...`` endpoints through
which a test, or another process, injects faults, reads figures and changes settings, in JSON over plain HTTP.

The plane routes a request's method and path to an action and turns a request the action refuses into the
emulator's own error answer. It knows no transport: an ``http.server`` handler and an asyncio front alike
hand it the method, the target and the body, and put its answer on the wire their own way. A path it has no
route for is the emulator's to answer (each tells an unknown operation as the service it emulates would).

:meth:`ControlPlane.add_fault_routes` serves an emulator's faults the common way::

    POST   /_emulator/faults   one fault or a list of them   -> 201 {"pending": [fault, ...]}
    GET    /_emulator/faults                                 -> 200 {"pending": [fault, ...]}
    DELETE /_emulator/faults                                 -> 200 {"cleared": calls they would have struck}

and :meth:`ControlPlane.add_invocation_routes` the calls an emulator recorded::

    GET    /_emulator/invocations                            -> 200 {"emulator": label, "invocations": [...]}
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

from voicebridge_dev.local.service.emulator import Emulator
from voicebridge_dev.local.service.errors import unknown_names
from voicebridge_dev.local.service.faults import F
from voicebridge_dev.local.service.records import Record

CONTROL_PREFIX = "/_emulator/"


@dataclass(frozen=True)
class ControlAnswer:
    """An answer to a control request: its status, its JSON payload and any headers of the emulator's own."""

    status: int
    payload: Any
    headers: Mapping[str, str] = field(default_factory=dict)


class EmulatorConfigError(ValueError):
    """An emulator setting (from Python or ``POST /_emulator/config``) is malformed."""


def config_changes(changes: Any, settings: Iterable[str]) -> dict[str, Any]:
    """A ``POST /_emulator/config`` body (or its Python equivalent), refused unless it is an object naming only
    ``settings``: what an emulator's ``configure`` checks first, before each setting's own value."""
    if not isinstance(changes, dict):
        raise EmulatorConfigError("the configuration is a JSON object")
    if unknown := unknown_names(changes, settings):
        raise EmulatorConfigError(f"unknown configuration fields: {unknown}")
    return changes


ControlAction = Callable[[bytes], ControlAnswer]
"""Acts on a control request's body; raises ValueError (its reason answered with 400) to refuse it."""


def validation_refusal(reason: str) -> ControlAnswer:
    """A refused control request in the AWS JSON shape: 400, ``{"message"}``, ``x-amzn-ErrorType:
    ValidationException``."""
    return ControlAnswer(HTTPStatus.BAD_REQUEST, {"message": reason}, {"x-amzn-ErrorType": "ValidationException"})


class ControlPlane:
    """The ``/_emulator/...`` routes of one emulator.

    ``refusal`` makes the answer to a refused request from its reason, in the shape the emulator answers
    errors with.
    """

    def __init__(self, refusal: Callable[[str], ControlAnswer]) -> None:
        self._refusal = refusal
        self._routes: dict[tuple[str, str], ControlAction] = {}

    def route(self, method: str, name: str, action: ControlAction) -> None:
        """Serve ``method /_emulator/<name>`` with ``action``."""
        self._routes[(method, CONTROL_PREFIX + name)] = action

    def dispatch(self, method: str, target: str, body: bytes) -> ControlAnswer | None:
        """The answer to a request; None when no route matches its method and path."""
        action = self._routes.get((method, urlsplit(target).path))
        if action is None:
            return None
        try:
            return action(body)
        except ValueError as exc:
            return self._refusal(str(exc))

    def add_fault_routes(self, emulator: Emulator[F], parse: Callable[[Any], F], render: Callable[[F], Any]) -> None:
        """``/_emulator/faults`` on ``emulator``'s queue; ``parse`` reads one fault's JSON (raising a
        :class:`~voicebridge_dev.local.service.faults.FaultSpecError`), ``render`` writes one."""

        def pending() -> list[Any]:
            return [render(fault) for fault in emulator.pending_faults]

        def post(body: bytes) -> ControlAnswer:
            decoded = json.loads(body or b"null")
            faults = [parse(item) for item in (decoded if isinstance(decoded, list) else [decoded])]
            for fault in faults:
                emulator.inject(fault)
            return ControlAnswer(HTTPStatus.CREATED, {"pending": pending()})

        self.route("POST", "faults", post)
        self.route("GET", "faults", lambda _: ControlAnswer(HTTPStatus.OK, {"pending": pending()}))
        self.route("DELETE", "faults", lambda _: ControlAnswer(HTTPStatus.OK, {"cleared": emulator.clear_faults()}))

    def add_invocation_routes(self, label: str, invocations: Callable[[], Iterable[Record]]) -> None:
        """``GET /_emulator/invocations``: ``{"emulator": label, "invocations": [record, ...]}``, oldest first."""

        def answer(_: bytes) -> ControlAnswer:
            records = [record.to_json() for record in invocations()]
            return ControlAnswer(HTTPStatus.OK, {"emulator": label, "invocations": records})

        self.route("GET", "invocations", answer)

    def add_config_routes(self, configure: Callable[[Any], None], config: Callable[[], Any]) -> None:
        """``POST /_emulator/config`` applies its JSON body with ``configure`` (a ValueError refuses it) and, like
        ``GET``, answers the settings ``config`` reads."""

        def post(body: bytes) -> ControlAnswer:
            configure(json.loads(body or b"null"))
            return ControlAnswer(HTTPStatus.OK, config())

        self.route("POST", "config", post)
        self.route("GET", "config", lambda _: ControlAnswer(HTTPStatus.OK, config()))
