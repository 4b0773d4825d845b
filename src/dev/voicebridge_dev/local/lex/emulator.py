"""The Lex emulator itself: the bot it serves, its sessions, faults and records, and its server."""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from voicebridge_dev.local.lex.bot import BANK_BOT, Bot, Locale
from voicebridge_dev.local.lex.dialog import Dialog, Session, Sessions
from voicebridge_dev.local.lex.errors import ApiError
from voicebridge_dev.local.lex.faults import Fault
from voicebridge_dev.local.lex.records import LABEL, InvocationRecord
from voicebridge_dev.local.lex.requests import RecognizeTextRequest
from voicebridge_dev.local.lex.server import Server
from voicebridge_dev.local.service import ServedEmulator

__all__ = ["RECORD_LIMIT", "LexEmulator"]

logger = logging.getLogger(__name__)

RECORD_LIMIT: Final = 1000
"""Calls kept in :attr:`LexEmulator.invocations` (oldest dropped first)."""


class LexEmulator(ServedEmulator[Fault]):
    """A local Lex V2 runtime ``RecognizeText`` serving one scripted bot (an emulator, not Amazon Lex).

    ``bot`` — the bot (:mod:`~.bot`), a :class:`Bot` or its JSON document; the bank bot :data:`~.bot.BANK_BOT` by
    default. It may be replaced while the emulator runs, which forgets every session.
    :meth:`wait_idle` waits until no call is being served.
    """

    service: ClassVar[str] = "Lex"
    label: ClassVar[str] = LABEL

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, bot: Bot | Mapping[str, Any] | None = None) -> None:
        super().__init__(host, port)
        self._bot = _bot(BANK_BOT if bot is None else bot)
        self.sessions = Sessions(self._bot.idle_session_ttl_s)
        self._records: deque[InvocationRecord] = deque(maxlen=RECORD_LIMIT)
        self._records_lock = threading.Lock()

    def _make_server(self, address: tuple[str, int]) -> Server:
        return Server(address, self)

    def _serving(self) -> str:
        return f"bot {self.bot_id}, alias {self.bot_alias_id}"

    @property
    def bot(self) -> Bot:
        return self._bot

    @bot.setter
    def bot(self, bot: Bot | Mapping[str, Any]) -> None:
        chosen = _bot(bot)
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

    @property
    def invocations(self) -> list[InvocationRecord]:
        """RecognizeText calls so far, oldest first (a copy)."""
        with self._records_lock:
            return list(self._records)

    def record(self, record: InvocationRecord) -> None:
        """Keep the record of a finished call, and log it."""
        with self._records_lock:
            self._records.append(record)
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


def _bot(bot: Bot | Mapping[str, Any]) -> Bot:
    return bot if isinstance(bot, Bot) else Bot.from_json(dict(bot) if isinstance(bot, Mapping) else bot)
