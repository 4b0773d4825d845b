"""The Lex emulator itself: the bot it serves, its sessions, faults and records, and its server."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Unpack

from voicebridge_dev.local.lex.bot import BANK_BOT, Bot, Locale
from voicebridge_dev.local.lex.dialog import Dialog, Session, Sessions
from voicebridge_dev.local.lex.faults import Fault
from voicebridge_dev.local.lex.records import LABEL, InvocationRecord
from voicebridge_dev.local.lex.requests import RecognizeTextRequest
from voicebridge_dev.local.lex.server import Handler
from voicebridge_dev.local.service import (
    Address,
    ApiError,
    ControlAnswer,
    ControlPlane,
    RecordingEmulator,
    validation_refusal,
)

logger = logging.getLogger(__name__)


class LexEmulator(RecordingEmulator[Fault, InvocationRecord]):
    """A local Lex V2 runtime ``RecognizeText`` serving one scripted bot (an emulator, not Amazon Lex).

    ``bot`` — the bot (:mod:`~.bot`), a :class:`Bot` or its JSON document; the bank bot :data:`~.bot.BANK_BOT` by
    default. It may be replaced while the emulator runs, which forgets every session.
    :meth:`wait_idle` waits until no call is being served.
    """

    service = "Lex"
    label = LABEL
    handler = Handler

    def __init__(self, *, bot: Bot | Mapping[str, Any] | None = None, **address: Unpack[Address]) -> None:
        super().__init__(InvocationRecord, **address)
        self._bot = Bot.of(BANK_BOT if bot is None else bot)
        self.sessions = Sessions(self._bot.idle_session_ttl_s)

    def _serving(self) -> str:
        return f"bot {self.bot_id}, alias {self.bot_alias_id}"

    @property
    def bot(self) -> Bot:
        return self._bot

    @bot.setter
    def bot(self, bot: Bot | Mapping[str, Any]) -> None:
        chosen = Bot.of(bot)
        self._bot, self.sessions = chosen, Sessions(chosen.idle_session_ttl_s)
        logger.info("%s: now serving bot %s (%s)", LABEL, chosen.bot_id, ", ".join(chosen.locales))

    @property
    def bot_id(self) -> str:
        return self._bot.bot_id

    @property
    def bot_alias_id(self) -> str:
        return self._bot.alias_id

    @property
    def locale_id(self) -> str:
        return self._bot.locale_id

    def locale_of(self, request: RecognizeTextRequest) -> Locale:
        """The locale a request addresses; ResourceNotFoundException for a bot, alias or locale not served."""
        bot = self._bot
        if request.bot_id != bot.bot_id or request.bot_alias_id not in bot.alias_ids:
            raise ApiError(
                404,
                "ResourceNotFoundException",
                f"{request.bot_id}/{request.bot_alias_id} is not a valid BotId/BotAliasId combination.",
            )
        locale = bot.locales.get(request.locale_id)
        if locale is None:
            raise ApiError(
                404,
                "ResourceNotFoundException",
                f"The locale {request.locale_id} is not available for bot {bot.bot_id} alias {request.bot_alias_id}.",
            )
        return locale

    def converse(
        self, locale: Locale, request: RecognizeTextRequest, request_id: str
    ) -> tuple[dict[str, Any], Session]:
        """One turn of the request's session: the RecognizeTextResponse, and the session as the turn leaves it, to
        :meth:`keep` once the answer goes out. ValidationException for a ``sessionState`` the bot cannot follow."""
        key = (request.bot_id, request.bot_alias_id, request.locale_id, request.session_id)
        session = self.sessions.get(key)
        return Dialog(locale, session).answer(request, request_id), session

    def keep(self, session: Session) -> None:
        """Store the session a turn answered; of two turns of one session at once, the last answered wins."""
        self.sessions.put(session)

    # -- records

    def _log(self, record: InvocationRecord) -> None:
        dialog_action = ((record.answer or {}).get("sessionState", {}).get("dialogAction") or {}).get("type")
        logger.info(
            "%s: RecognizeText %s/%s/%s session=%s -> %d %s intent=%s action=%s total=%.0fms",
            LABEL,
            record.bot_id,
            record.bot_alias_id,
            record.locale_id,
            record.session_id,
            record.http_status,
            record.error_type or record.outcome,
            record.intent or "-",
            dialog_action or "-",
            (record.finished - record.started) * 1000,
        )

    def control_plane(self) -> ControlPlane:
        """The ``/_emulator/...`` routes: faults, the calls so far, the bot and its sessions."""

        def set_bot(body: bytes) -> ControlAnswer:
            self.bot = json.loads(body or b"null")
            bot = self.bot
            return ControlAnswer(
                HTTPStatus.OK, {"botId": bot.bot_id, "botAliasIds": list(bot.alias_ids), "locales": list(bot.locales)}
            )

        control = ControlPlane(refusal=validation_refusal)
        control.add_fault_routes(self, Fault.from_json, Fault.to_json)
        control.add_invocation_routes(LABEL, lambda: self.invocations)
        control.route("POST", "bot", set_bot)
        control.route("GET", "bot", lambda _: ControlAnswer(HTTPStatus.OK, dict(self.bot.document)))
        control.route("GET", "sessions", lambda _: ControlAnswer(HTTPStatus.OK, {"sessions": self.sessions.snapshot()}))
        control.route("DELETE", "sessions", lambda _: ControlAnswer(HTTPStatus.OK, {"cleared": self.sessions.clear()}))
        return control
