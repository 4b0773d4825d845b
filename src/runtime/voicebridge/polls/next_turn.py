"""AwaitTurnFunction's domain: the caller's next finished turn, long-polled within Connect's 8 s.

``await_turn`` long-polls the turn table for the caller's first finished turn after a given index, at a short
interval, for a bounded time that always fits Connect's 8 s limit for a synchronous Lambda block. When nobody is
listening (never started, stopped, or the consumer died) it says so, with the reason, instead of timing out
(:func:`require_listening`, which ConverseFunction's long poll, :mod:`voicebridge.polls.next_segment`, uses too).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.connect.events import whole_number
from voicebridge.errors import NotListening, VoiceBridgeError
from voicebridge.polls.longpoll import LateLook, LongPoll, Meanwhile
from voicebridge.redaction import Redactor
from voicebridge.store.turns import CUSTOMER, MAX_SEQ, Turn, TurnStore
from voicebridge.telemetry import logger


def redacting_read_turns(store: TurnStore, redactor: Redactor, contact_id: str) -> Callable[[int], None] | None:
    """What a long poll does with the turn a flow has read: redact its stored text (None when nothing is
    redacted). Never raises: the end of listening redacts whatever this leaves."""
    if redactor.name == "off":
        return None

    def read(through: int) -> None:
        try:
            store.redact_read_turns(contact_id, through, lambda text: redactor.redact(text).text)
        except VoiceBridgeError as exc:
            logger.warning("could not redact the turns read", error_code=exc.code, reason=exc.safe_message)
        except Exception:
            logger.exception("redacting the turns read failed")

    return read


def require_listening(store: TurnStore, contact_id: str) -> None:
    """NotListening, saying why, unless a consumer is alive for the contact."""
    checkpoint = store.load(contact_id)
    if checkpoint is None:
        raise NotListening("nobody is listening to this contact: call StartListening first")
    if not checkpoint.alive(store.now_ms()):
        raise NotListening(checkpoint.why_not_listening)


def caller_speaking_ms(store: TurnStore, contact_id: str) -> int | None:
    """How long the caller has been speaking, while a turn is open and a consumer is alive; None otherwise.

    What a long poll that ran out answers instead of ``Timeout``: the flow must not take a long turn for silence."""
    checkpoint = store.load(contact_id)
    now_ms = store.now_ms()
    if checkpoint is None or not checkpoint.speaking_since_ms or not checkpoint.alive(now_ms):
        return None
    return max(0, now_ms - checkpoint.speaking_since_ms)


@dataclass(frozen=True, slots=True)
class Awaited:
    """What AwaitTurnFunction answers: the caller's turn, or, when none came within the wait, whether they are
    speaking."""

    turn: Turn | None
    waited_ms: float
    """Milliseconds from the invocation's start to the answer."""
    speaking_ms: int | None = None
    """No turn came: how long the caller has been speaking, if they are (None also when the table did not say in
    time)."""


def await_turn(
    contact_id: str,
    parameters: dict[str, Any],
    *,
    store: TurnStore,
    max_wait_ms: int,
    poll_interval_ms: int,
    remaining_ms: int | None,
    started: float | None = None,
    clock: Clock = SYSTEM_CLOCK,
    read: Callable[[int], None] | None = None,
) -> Awaited:
    """The caller's first turn after ``AfterTurn`` (None on timeout), within the wait counted from ``started``, when
    the invocation began (:class:`~voicebridge.polls.longpoll.LongPoll`); a look the table has not answered when the
    answer is due is left behind, and the answer is that no turn came. ``read`` is told, while the poll waits, the
    turn the flow says it has read (``AfterTurn``), to redact it."""
    after = whole_number(parameters, "AfterTurn", default=-1, low=-1, high=MAX_SEQ)
    poll = LongPoll.asked(parameters, max_wait_ms=max_wait_ms, remaining_ms=remaining_ms, started=started, clock=clock)
    meanwhile = Meanwhile((lambda: read(after)) if read is not None and after >= 0 else None)
    checked_session = False
    try:
        while True:
            try:
                turns = poll.look(lambda: store.turns_after(contact_id, after=after, track=CUSTOMER, limit=1))
                if turns:
                    return Awaited(turns[0], poll.waited_ms)
                if not checked_session:
                    poll.look(lambda: require_listening(store, contact_id))
                    checked_session = True
            except LateLook:
                return Awaited(None, poll.waited_ms)
            meanwhile.begin()
            if not poll.pause(poll_interval_ms / 1000):
                speaking = None
                if poll.spare_look():
                    with contextlib.suppress(LateLook):
                        speaking = poll.look(lambda: caller_speaking_ms(store, contact_id))
                return Awaited(None, poll.waited_ms, speaking)
    finally:
        poll.close()
        meanwhile.end()
