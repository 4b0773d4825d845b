"""What the flow plays next: ConverseFunction's domain, a long poll over the reply status that fits Connect's 8 s.

The flow calls ConverseFunction right after every prompt with where it is — ``TurnIndex`` and ``Segment`` of what
it just played (absent at the start), and ``CollectedTurn``, the turn whose request it has taken — and gets back, as
soon as it exists:

- the next segment of the same reply; or, when a newer turn's reply has begun (the caller spoke again: barge-in),
  that reply's first segment — ``Result=Speak`` with ``PromptUri`` (or only ``Text``, for Connect's own voice),
  ``TurnIndex``, ``Segment``, ``More`` (``true`` while the reply may have more segments), ``Transcript`` (what the
  caller said), ``Action`` (``Continue`` | ``Transfer`` | ``Hangup``, final on the reply's last segment) and the
  responder's attributes;
- ``Result=OK`` with ``Action`` when the reply it was playing turned out to be over with nothing more to say, and
  the flow must transfer or hang up, or take what the reply asked for (``Collect``: the card on the keypad) — a
  segment handed out while the reply was still being written says ``More=true``. This comes before a newer turn's
  reply when the flow played the whole of the one that asked;
- when nothing new came within the wait: ``Listening`` while the caller is mid-turn, ``Thinking`` while a reply is
  still being made or a stored turn has none begun yet, else ``Timeout`` (:func:`next_to_play` says which reply is
  in the making; the handler asks whether the caller is speaking);
- ``Result=Error`` with ``NotListening`` (and why) when no consumer is alive for the contact.

It polls one small item, the reply status, which also says whether the caller is speaking (the consumer marks it
from its own voice detection and Ink's turns): every ``fast_poll_ms`` while a segment may be stored at any moment — a
later sentence of the reply being made once the flow has played all of it there is, or a first sentence Sonic is
making (the consumer marks it) —, every ``making_poll_ms`` while a reply's first sentence is still with the responder
(a reply begun, or Ink's eager end heard: a speculative reply may be named as the turn ends), and every
``slow_poll_ms`` otherwise: while the caller speaks or thinks, and while a later sentence is held back. Each mark of
a reply's making says when its first segment is due, from the call's quickest reply so far, and the poll does not
look for it sooner; while nothing is being made it looks no more often than the least that segment has come after
the reply's first mark on the call (a look sooner could not hand it out any sooner). A later sentence of the reply
being played is held back while the caller is speaking (they began over it, or in the gap before it), and so is a
reply's first while the caller speaks a later turn than the one it answers (the turn was ended, and they went on):
nothing is said over a caller, and their turn's own reply takes its place — unless the consumer keeps their turn as a
backchannel, which it tells by the mark the poll leaves on the status for the sentence it holds back
(:meth:`~voicebridge.store.replies.ReplyStore.hold_back`, on the status and the caller's turn, two writes at once
per hold, removed as the sentence is handed out; a hold never removed is what the call record's ``heard`` reads).
A short voice over the agent ("uh-huh") is not waited on to its turn's end: once it stops and the consumer marks it
paused (:attr:`~voicebridge.store.replies.ReplyStatus.speaking_paused_ms`), the held sentence goes out, and the
write that takes the hold's mark back says the reply went on over that turn (``WentOnFor``, what the consumer judges
it a backchannel by).
A newer turn's reply handed out while the flow had played only part of the one before marks the caller's turn the
same way, where no hold did (:func:`_left`: one write, on such a hand-out only).
Segments are read where the status says they are (a
committed speculative reply keeps its speculative keys). It answers within the wait, counted from the invocation's
start, and a look the table has not answered when the answer is due is left behind: the answer is what the last look
saw (:mod:`voicebridge.polls.longpoll`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.connect.events import whole_number
from voicebridge.conversation import Action
from voicebridge.polls.longpoll import LateLook, LongPoll, Meanwhile
from voicebridge.polls.next_turn import require_listening
from voicebridge.store.replies import ReplyStatus, ReplyStore, Segment
from voicebridge.store.turns import MAX_SEQ, TurnStore

Pace = Literal["fast", "making", "slow", "idle"]


@dataclass(frozen=True, slots=True)
class Thinking:
    """A reply being made when the wait ran out: to ``turn``, nothing new of it for ``ms``; ``started`` when the
    flow has played none of it yet."""

    turn: int
    ms: int
    started: bool


@dataclass(frozen=True, slots=True)
class Next:
    """What ConverseFunction answers: a segment to play, an action to take, or nothing yet."""

    segment: Segment | None = None
    more: bool = False
    action: Action = Action.CONTINUE
    attributes: Mapping[str, str] = field(default_factory=dict)
    waited_ms: float = 0.0
    thinking: Thinking | None = None
    """When nothing came within the wait: the reply still being made, if one is."""
    speaking_ms: int | None = None
    """When nothing came within the wait: how long the caller has been speaking, if they are (the reply status
    carries it, so answering ``Listening`` costs no read of its own)."""

    @property
    def timed_out(self) -> bool:
        return self.segment is None and self.action is Action.CONTINUE and ASKING not in self.attributes


def next_to_play(
    contact_id: str,
    parameters: Mapping[str, Any],
    *,
    replies: ReplyStore,
    turns: TurnStore,
    max_wait_ms: int,
    fast_poll_ms: int,
    slow_poll_ms: int,
    remaining_ms: int | None,
    making_poll_ms: int | None = None,
    backchannel_ms: int = 0,
    started: float | None = None,
    clock: Clock = SYSTEM_CLOCK,
    read: Callable[[int], None] | None = None,
) -> Next:
    """The next segment after the one the flow played (None when the wait ran out), long-polled.

    ``started`` is when the invocation began (``clock.monotonic()``), so what came before the poll — a cold
    container making its clients — counts against the wait, as it counts against Connect's limit
    (:class:`~voicebridge.polls.longpoll.LongPoll`). ``read`` is told the turn whose reply the flow has played, to
    redact it, once the poll waits slowly (nothing is being made: no look can be hurried by the work).
    ``making_poll_ms`` (default: ``fast_poll_ms``) is the pace while a reply's first sentence is with the responder,
    and while a sentence is held back over a caller who began less than ``backchannel_ms`` and
    :data:`PAUSE_MARKED_MS` ago: their voice may be a backchannel, whose pause the consumer marks soon after it stops.
    """
    turn = whole_number(parameters, "TurnIndex", default=-1, low=-1, high=MAX_SEQ)
    played = whole_number(parameters, "Segment", default=-1, low=-1)
    collected = whole_number(parameters, "CollectedTurn", default=-1, low=-1, high=MAX_SEQ)
    poll = LongPoll.asked(parameters, max_wait_ms=max_wait_ms, remaining_ms=remaining_ms, started=started, clock=clock)
    meanwhile = Meanwhile((lambda: read(turn)) if read is not None and turn >= 0 else None)
    try:
        paces = (fast_poll_ms, fast_poll_ms if making_poll_ms is None else making_poll_ms, slow_poll_ms)
        where = (turn, played, collected)
        return _poll(contact_id, poll, meanwhile, where, replies, turns, paces, clock, backchannel_ms)
    finally:
        meanwhile.end()


def _poll(
    contact_id: str,
    poll: LongPoll,
    meanwhile: Meanwhile,
    where: tuple[int, int, int],
    replies: ReplyStore,
    turns: TurnStore,
    paces: tuple[int, int, int],
    clock: Clock,
    backchannel_ms: int = 0,
) -> Next:
    turn, played, collected = where
    fast_poll_ms, making_poll_ms, slow_poll_ms = paces
    checked_listening = False
    status: ReplyStatus | None = None
    ended: dict[int, ReplyStatus] = {}
    try:
        while True:
            try:
                status, found, held = poll.look(lambda: _look(contact_id, replies, turn, played, collected, ended))
                if found is not None:
                    _release(poll, replies, contact_id, status, found)
                    _left(poll, replies, contact_id, status, found, (turn, played), ended)
                    return Next(found.segment, found.more, found.action, found.attributes, waited_ms=poll.waited_ms)
                if held is not None and (status is None or status.held_back != held):
                    poll.look(functools.partial(replies.hold_back, contact_id, *held))
                if not checked_listening:
                    poll.look(lambda: require_listening(turns, contact_id))
                    checked_listening = True
            except LateLook:
                # The table did not answer in time: what the last look saw, or, with nothing seen, a reply still
                # to come (the flow plays the silent prompt and asks again), rather than an answer past Connect's limit.
                known = _thinking(status, turn, played, clock.time())
                if status is None:
                    known = Thinking(turn, 0, started=False)
                return Next(waited_ms=poll.waited_ms, thinking=known, speaking_ms=_speaking_ms(status, clock.time()))
            if held is not None:
                pace, first = _held_pace(status, clock.time(), backchannel_ms), False
            else:
                pace, first = _pace(status, turn, played)
            interval_ms: float = {"fast": fast_poll_ms, "making": making_poll_ms}.get(pace, slow_poll_ms)
            if first:
                interval_ms = max(interval_ms, _until_due_ms(status, clock.time()))
            if pace == "idle" and status is not None:
                # A look buys seeing the next reply's first mark in time, and its segment comes no sooner than the
                # call's least lead after it.
                interval_ms = max(interval_ms, min(status.lead_ms, DUE_HORIZON_MS))
            if pace in ("slow", "idle"):
                meanwhile.begin()
            if not poll.pause(interval_ms / 1000):
                thinking = _thinking(status, turn, played, clock.time())
                if thinking is None and poll.spare_look():
                    unanswered = functools.partial(_unanswered, turns, contact_id, status, turn, clock.time())
                    with contextlib.suppress(LateLook):
                        thinking = poll.look(unanswered)
                return Next(waited_ms=poll.waited_ms, thinking=thinking, speaking_ms=_speaking_ms(status, clock.time()))
    finally:
        poll.close()


def _look(
    contact_id: str, replies: ReplyStore, turn: int, played: int, collected: int, ended: dict[int, ReplyStatus]
) -> tuple[ReplyStatus | None, Next | None, tuple[int, int] | None]:
    """One look: the reply status, what to answer now (None: nothing yet), and the sentence held back over a speaking
    caller, if one is. ``ended`` keeps, across the poll's looks, how earlier replies ended once read (it never changes
    once written)."""
    status = replies.status(contact_id)
    found = _next(contact_id, status, turn, played, replies, collected, ended)
    segment = found.segment if found is not None else None
    if segment is not None and status is not None and _over_the_caller(status, found, turn):
        # The caller began a turn while this reply was playing, or went on after the turn it answers was ended: its
        # next sentence is not said over them. Their turn's own reply takes its place, or, if Ink hears no turn in
        # it after all (or a backchannel), it goes on. The mark says so to the consumer, which judges the caller's
        # turn by it.
        return status, None, (segment.turn, segment.index)
    return status, found, None


def _over_the_caller(status: ReplyStatus, found: Next | None, turn: int) -> bool:
    """Whether handing ``found`` out now would say it over the speaking caller: a later sentence of the reply being
    played, or any sentence of a reply to a turn before the one they are speaking (a reply's own turn is marked as
    spoken until it is stored, which may come after its first sentence)."""
    if not status.speaking_since_ms:
        return False
    if _continues(found, turn):
        # A short voice over the agent that stopped ("uh-huh": the consumer marks the pause) holds nothing back.
        return not status.speaking_paused_ms
    segment = found.segment if found is not None else None
    return segment is not None and status.speaking_turn is not None and status.speaking_turn > segment.turn


def _release(poll: LongPoll, replies: ReplyStore, contact_id: str, status: ReplyStatus | None, found: Next) -> None:
    """The sentence held back over the caller is handed out now: its mark goes (a write only after a hold). Handed
    out over the pause of a caller's turn still open, the status says so in the same write, for the consumer that
    judges that turn (the reply went on over it)."""
    segment = found.segment
    if status is None or segment is None or status.held_back != (segment.turn, segment.index):
        return
    paused = status.speaking_turn if status.speaking_since_ms and status.speaking_paused_ms else None
    release = functools.partial(replies.release_hold, contact_id, segment.turn, segment.index, went_on_for=paused)
    with contextlib.suppress(LateLook):
        poll.look(release)


def _left(
    poll: LongPoll,
    replies: ReplyStore,
    contact_id: str,
    status: ReplyStatus | None,
    found: Next,
    where: tuple[int, int],
    ended: Mapping[int, ReplyStatus],
) -> None:
    """A newer turn's reply is handed out while the flow had played the one before only up to ``played``: the caller
    heard that far of it and no further (a prompt plays to its end), which the caller's turn keeps for the call record
    and the consumer's history (``ReplyHeldAt``, as a hold never released says it). No write where a hold already
    marked the same sentence, or where the reply is known to have ended with the sentence played."""
    turn, played = where
    segment = found.segment
    if segment is None or segment.turn <= turn or turn < 0 or played < 0:
        return
    outcome = ended.get(turn)
    if outcome is not None and played + 1 >= outcome.segments:
        return
    if status is not None and status.held_back == (turn, played + 1):
        return
    with contextlib.suppress(LateLook):
        poll.look(functools.partial(replies.note_left, contact_id, turn, played + 1))


def _pace(status: ReplyStatus | None, turn: int, played: int) -> tuple[Pace, bool]:
    """How soon to look again, and whether what is looked for is a reply's first segment (not looked for before its
    due time, :func:`_until_due_ms`). ``fast`` while a segment for the flow may be stored at any moment: a later
    sentence of the reply being made (the flow has played all of it there is), or a reply's first sentence Sonic is
    making; ``making`` while a first sentence is still with the responder — a reply begun, or a speculative one on
    Ink's eager end, which may be named as the turn ends — as it takes a synthesis after the mark that Sonic began,
    the poll is fast by then; ``slow`` while the next sentence is held back over a speaking caller; ``idle`` while
    nothing is being made (the slow pace, or the call's least lead when that is longer)."""
    if status is None:
        return "idle", False
    if status.expecting is not None and status.expecting > status.turn:
        return ("fast" if status.synthesizing_first(status.expecting) else "making"), True
    if status.done:
        held_back = status.turn == turn and status.segments > played + 1
        return ("slow" if held_back else "idle"), False
    if status.turn > turn:
        return ("fast" if status.synthesizing_first(status.turn) else "making"), True
    return ("fast" if status.segments <= played + 1 else "slow"), False


def _held_pace(status: ReplyStatus | None, now_s: float, backchannel_ms: int) -> Pace:
    """How soon to look again while a sentence is held back over the speaking caller: ``making`` while their voice
    may still prove a backchannel whose pause is about to be marked (they began less than ``backchannel_ms`` and
    :data:`PAUSE_MARKED_MS` ago), so the sentence goes out soon after the mark; else ``slow``."""
    speaking_ms = _speaking_ms(status, now_s)
    if backchannel_ms and speaking_ms is not None and speaking_ms < backchannel_ms + PAUSE_MARKED_MS:
        return "making"
    return "slow"


PAUSE_MARKED_MS = 1000
"""How long after a backchannel's voice stops its pause may be marked: the voice detector's 300 ms of silence, Ink's
words through its end (the emulator's 200 ms of silence and a decode), the audio's way through Kinesis Video Streams,
and the write."""


DUE_HORIZON_MS = 1500
"""The furthest ahead a due time is believed (the consumer's clock, not this function's, wrote it, and a clock set
wrong must not keep a poll from looking for longer than this), and the longest an idle poll sleeps on the call's
least lead."""


def _until_due_ms(status: ReplyStatus | None, now_s: float) -> float:
    """How long the first segment of the reply being made cannot be stored yet, as its last mark said (0: it may be
    at any moment, or the mark said nothing): the poll sleeps through it rather than look."""
    if status is None or not status.due_at_ms:
        return 0.0
    ahead_ms = status.due_at_ms - now_s * 1000
    return ahead_ms if 0 < ahead_ms <= DUE_HORIZON_MS else 0.0


def _speaking_ms(status: ReplyStatus | None, now_s: float) -> int | None:
    """How long the caller has been speaking, as the status last seen says; None when they are not."""
    if status is None or not status.speaking_since_ms:
        return None
    return max(0, int(now_s * 1000) - status.speaking_since_ms)


def _continues(found: Next | None, turn: int) -> bool:
    """``found`` is a later sentence of the reply the flow is playing (not a newer turn's first)."""
    return found is not None and found.segment is not None and found.segment.turn == turn and found.segment.index > 0


def _thinking(status: ReplyStatus | None, turn: int, played: int, now_s: float) -> Thinking | None:
    """The reply the flow is waiting for, if it is still being made (the turn it answers may be newer)."""
    if status is None or status.done or status.turn < turn:
        return None
    started = status.turn > turn or played < 0
    return Thinking(status.turn, max(0, int(now_s * 1000) - status.updated_at_ms), started)


def _unanswered(
    turns: TurnStore, contact_id: str, status: ReplyStatus | None, turn: int, now_s: float
) -> Thinking | None:
    """A turn stored whose reply has not begun yet: the responder has been asked and has not answered (a reply's
    status is written once its first words are on their way), which is thinking, not silence. One read, made only
    when the wait ran out and the table has been quick enough to leave time for it (else the answer is Timeout, on
    time)."""
    answered = max(turn, -1 if status is None else status.turn)
    # A backchannel is kept but never answered: nothing is being thought of for it.
    newer = [t for t in turns.turns_after(contact_id, after=answered, limit=UNANSWERED_LOOK) if not t.backchannel]
    if not newer:
        return None
    return Thinking(newer[0].seq, max(0, int(now_s * 1000) - newer[0].ended_at_ms), started=True)


UNANSWERED_LOOK = 10
"""How many turns after the one answered last the look for one still being thought of reads (backchannels among them
are passed over): one read of small items."""


def _next(
    contact_id: str,
    status: ReplyStatus | None,
    turn: int,
    played: int,
    replies: ReplyStore,
    collected: int = -1,
    ended: dict[int, ReplyStatus] | None = None,
) -> Next | None:
    """What to answer now; ``collected`` is the turn whose request (``Collect``) the flow has already taken,
    ``ended`` how earlier replies ended, as far as already read."""
    if status is None:
        return None
    if status.turn > turn:
        over = _played_to_its_end(contact_id, turn, played, replies, collected, {} if ended is None else ended)
        if over is not None:
            return over
        # A reply to a newer turn: its first segment, whatever was left of the one being played.
        return _segment(contact_id, status, status.turn, 0, replies)
    if status.turn < turn:
        return None
    if status.segments > played + 1:
        return _segment(contact_id, status, turn, played + 1, replies)
    asks = ASKING in status.attributes and collected != turn
    if status.done and (status.action is not Action.CONTINUE or asks):
        return Next(action=status.action, attributes=status.attributes)
    return None


ASKING = "Collect"
"""A reply attribute asking the flow for something of the caller's before the conversation goes on (the card on the
keypad): the flow must be told it even when a newer turn has begun."""


def _played_to_its_end(
    contact_id: str, turn: int, played: int, replies: ReplyStore, collected: int, known: dict[int, ReplyStatus]
) -> Next | None:
    """What the reply the flow played to its last segment asked of it, when a newer turn began before the flow
    heard that the reply was over: its transfer, hang-up or request (``Collect``) comes before the newer turn's
    reply, as the caller heard the agent say so. None when the flow has more of it to play, or it asked nothing."""
    if turn < 0 or played < 0:
        return None
    ended = known.get(turn) or replies.outcome(contact_id, turn)
    if ended is not None:
        # Kept for the poll's next looks: a reply's outcome is written once.
        known[turn] = ended
    if ended is None or played < ended.segments - 1:
        return None
    if ended.action is Action.CONTINUE and (ASKING not in ended.attributes or collected == turn):
        return None
    return Next(action=ended.action, attributes=ended.attributes)


def _segment(contact_id: str, status: ReplyStatus, turn: int, index: int, replies: ReplyStore) -> Next | None:
    if status.segments <= index and status.turn == turn:
        return None
    copies = [copy for copy in (status.latest, status.earlier) if copy is not None]
    # The status carries the segment stored last and the one before: what the flow almost always asks for next, in
    # the same read.
    segment = next((copy for copy in copies if copy.turn == turn and copy.index == index), None)
    if segment is None:
        segment = replies.segment(contact_id, turn, index, status.keys)
    if segment is None:
        return None
    last = status.done and status.turn == turn and index == status.segments - 1
    if last:
        return Next(segment, more=False, action=status.action, attributes=status.attributes)
    return Next(segment, more=True)
