"""Making one reply: the responder asked, its text cut into segments, each spoken and stored the moment it is.

:class:`ReplyMaker` makes a :class:`ReplyInProgress` — a reply to a finished turn, or a speculative one started on
Ink's eager end — for the :class:`~voicebridge.converse.worker.ReplyWorker`, which decides which replies are made and
when. The first segment is short (its first clause, about a second of speech) and the rest whole sentences
(:class:`~voicebridge.converse.sentences.SentenceSplitter`); each is spoken by the Speak path's synthesizer and stored
as segment *k* the moment its prompt is in S3, with, on the first, the reply's waterfall (when the responder was
asked, its first token, the first clause, Sonic's first byte). A speculative reply stores its segments where no flow
can play them and, after the first, waits to be committed or cancelled; its action and attributes reach the flow
only once it is committed. A responder that fails before saying anything yields the apology (a speculative reply
that fails is left for the turn's end instead); a sentence Sonic cannot speak is stored as text, for Connect's voice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.clock import Clock
from voicebridge.config import Settings
from voicebridge.conversation import Action, Exchange
from voicebridge.converse.responder import Responder, ResponderError, TurnRequest
from voicebridge.converse.sentences import SentenceSplitter
from voicebridge.errors import ModelUnavailable, Superseded, VoiceBridgeError
from voicebridge.sonic.synthesizer import SynthesisCancelled
from voicebridge.store.replies import REPLY_KEYS, ReplyStatus, ReplyStore, Segment
from voicebridge.store.turns import Turn
from voicebridge.telemetry import logger

CHARS_PER_TOKEN = 4.0
"""What a discarded reply's text (and the conversation it was asked) is counted as in model tokens when the model's
own count never came (a stream closed early): the usual estimate for English text."""


@dataclass(frozen=True, slots=True)
class Spoken:
    """A sentence made into a prompt."""

    uri: str
    synthesis_ms: float | None = None
    """The model's part of it (first byte to last); None when the prompt came from the cache."""
    first_byte_at: float | None = None
    """When the model's first audio arrived (epoch seconds); None when the prompt came from the cache."""
    duration_ms: int | None = None
    """How long the prompt plays (None: not known to the transport)."""


@dataclass(frozen=True, slots=True)
class Made:
    """A segment of a reply as the flows path's agent track can find it: when its prompt was ready (epoch ms), and
    how long it plays (None: Connect's own voice reads its text, for as long as that takes)."""

    ready_at_ms: float
    duration_ms: int | None


HeardOf = Callable[["ReplyInProgress", "ReplyInProgress"], "int | None"]
"""The flows path's view of the agent's track: how many of an earlier reply's segments (:attr:`ReplyInProgress.made`)
the caller had begun to hear when they began the turn a later reply answers (None: the track does not tell)."""


class Speak(Protocol):
    """Speak a sentence of ``reply`` before a deadline (``time.monotonic()``); ModelUnavailable when only its text can
    go, SynthesisCancelled once ``cancel`` is set (or the transport stopped the reply). The flows path stores a prompt;
    the streaming path plays the audio into the call as it comes."""

    def __call__(
        self, text: str, deadline: float, cancel: threading.Event | None = None, *, reply: ReplyInProgress | None = None
    ) -> Spoken: ...


Report = Callable[[str, MetricUnit, float], None]

DUE_SHARE = 0.9
"""The share of the call's quickest time to a reply's first segment that a poller sleeps through before it looks: a
reply a tenth quicker than every earlier one on the call is handed out late by at most the difference."""


class Quickest:
    """The call's quickest first sentence so far, in its two steps: the responder asked to the sentence in hand, and
    Sonic begun to the segment stored; and the least time from a reply's first mark to its first segment stored. From
    them the maker says, with each mark of a reply's making, when its first segment is due
    (:attr:`~voicebridge.store.replies.ReplyStatus.due_at_ms`) and how often a poller need look while nothing is
    being made (:attr:`~voicebridge.store.replies.ReplyStatus.lead_ms`); nothing before the call's first reply (and a
    successor's), which the poller waits for at its pace."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.responder_ms: float | None = None
        self.synthesis_ms: float | None = None
        self.marked_ms: float | None = None

    def note(
        self, *, responder_ms: float | None = None, synthesis_ms: float | None = None, marked_ms: float | None = None
    ) -> None:
        """Keep a first sentence's times where they are the quickest yet (``marked_ms``: from its reply's first mark
        to it stored)."""
        with self._lock:
            self.responder_ms = _least(self.responder_ms, responder_ms)
            self.synthesis_ms = _least(self.synthesis_ms, synthesis_ms)
            self.marked_ms = _least(self.marked_ms, marked_ms)

    def due_once_asked(self, asked_ms: float) -> int:
        """When the first segment of a reply whose responder was asked at ``asked_ms`` (epoch ms) is due; 0: unknown."""
        with self._lock:
            if self.responder_ms is None or self.synthesis_ms is None:
                return 0
            return round(asked_ms + DUE_SHARE * (self.responder_ms + self.synthesis_ms))

    def lead_ms(self) -> int:
        """The least a first segment has been stored after its reply's first mark (0: unknown)."""
        with self._lock:
            return 0 if self.marked_ms is None else round(self.marked_ms)

    def due_once_synthesizing(self, began_ms: float) -> int:
        """When a first segment Sonic began at ``began_ms`` (epoch ms) is due; 0: unknown."""
        with self._lock:
            return 0 if self.synthesis_ms is None else round(began_ms + DUE_SHARE * self.synthesis_ms)


def _least(kept: float | None, new: float | None) -> float | None:
    return new if kept is None else kept if new is None else min(kept, new)


@dataclass(frozen=True, slots=True)
class ReplySettings:
    """What the reply worker reads of the settings (:meth:`of`, which the container calls)."""

    speculative: bool
    """``SPECULATIVE_REPLIES`` is on (a responder must also be free of side effects to speculate)."""
    speculative_max_per_turn: int
    responder_timeout_ms: int
    history_turns: int
    language: str
    """The language a responder answers in: the contact's, else ``SONIC_DEFAULT_LANGUAGE``."""
    sonic_deadline_ms: int
    apology_text: str
    polled: bool = True
    """A flow polls the reply status for what to play (the flows path): the maker tells it when to look fast (an
    eager end heard, Sonic making a reply's first sentence). The streaming transport plays what is made directly."""

    @classmethod
    def of(cls, settings: Settings, *, polled: bool = True) -> ReplySettings:
        return cls(
            speculative=settings.speculative_replies == "on",
            speculative_max_per_turn=settings.speculative_max_per_turn,
            responder_timeout_ms=settings.responder_timeout_ms,
            history_turns=settings.history_turns,
            language=settings.sonic_default_language,
            sonic_deadline_ms=settings.sonic_deadline_ms,
            apology_text=settings.apology_text,
            polled=polled,
        )


@dataclass(eq=False)
class ReplyInProgress:
    """One reply being made: to a finished turn (committed from the start), or speculatively on an eager end."""

    seq: int
    transcript: str
    keys: str
    turn: Turn | None
    """The caller's finished turn; None while a speculative reply waits for it."""
    first_segment: int = 0
    spoken_prefix: str = ""
    eager_at_ms: float | None = None
    committed: bool = True
    cancel: threading.Event = field(default_factory=threading.Event)
    """Stop at once and store nothing more (a speculation the caller's words did not confirm; an abandon)."""
    interrupt: threading.Event = field(default_factory=threading.Event)
    """Stop after the current segment (the caller spoke again)."""
    go: threading.Event = field(default_factory=threading.Event)
    """Set once a speculative reply is committed or cancelled: it waits for this after its first segment."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    next_index: int = 0
    spoken: list[str] = field(default_factory=list)
    finished: tuple[Action, dict[str, str]] | None = None
    finalized: bool = False
    told_over: bool = False
    """The transport was told the reply is over (``on_finished``): once, whether it ended whole or on a failure."""
    failed: bool = False
    request_chars: int = 0
    text_chars: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    sonic_ms: float = 0.0
    due_at_ms: int = 0
    """When its first segment is due, as last said to pollers (0: unknown); a commit names it with the reply."""
    marked_at_ms: float | None = None
    """When pollers were told it is being made (its eager end or its beginning, epoch ms)."""
    last: Segment | None = None
    """The segment stored last: the status carries a copy of it."""
    earlier: Segment | None = None
    """The segment stored before it: the status carries a copy of it too."""
    committed_at_ms: float | None = None
    responder_started_ms: float | None = None
    """When the responder was asked (epoch ms)."""
    heard: str | None = None
    """What the caller heard of it, when a transport knows that was less than was made (a reply cut short
    mid-sentence by the caller): the history keeps this, with what was not said marked so."""
    made: list[Made] = field(default_factory=list)
    """Its segments' prompts, one for each of :attr:`spoken` (the flows path's agent track is matched against them)."""
    heard_through: int | None = None
    """The flows path: how many of its segments the caller heard, when less than all: as the agent's track showed
    when the caller began a turn over it, then as ConverseFunction marked it (:meth:`ReplyMaker.finalize`)."""
    cut: tuple[ReplyInProgress, int] | None = None
    """The flows path: the earlier reply the caller began this one's turn over, and how many of its segments they
    had heard; asked with that, and recorded once this reply is (a turn never answered changes nothing)."""

    @property
    def speculative(self) -> bool:
        return self.keys != REPLY_KEYS

    def fail_uncommitted(self) -> bool:
        """Mark a reply not yet committed as failed; whether it was. Decided under :attr:`lock`, as
        :meth:`ReplyMaker.commit` decides: a commit after it finds the reply failed and leaves the turn to be
        answered anew, and one before it makes the reply the turn's, whose failure is then answered as any committed
        reply's is. Either way the turn is answered once."""
        with self.lock:
            if self.committed:
                return False
            self.failed = True
            return True


class ReplyMaker:
    """Makes one contact's replies, each on the thread that asks (the worker's, or a speculation's own)."""

    def __init__(
        self,
        contact_id: str,
        *,
        responder: Responder,
        speak: Speak,
        replies: ReplyStore,
        settings: ReplySettings,
        attributes: Mapping[str, str],
        report: Report,
        clock: Clock,
        abandoned: threading.Event,
        hold: Callable[[ReplyInProgress], None],
        on_finished: Callable[[ReplyInProgress], None] | None = None,
    ) -> None:
        self.contact_id = contact_id
        self._responder = responder
        self._speak = speak
        self._replies = replies
        self._settings = settings
        self._attributes = dict(attributes)
        self._report = report
        self._clock = clock
        self._abandoned = abandoned
        self._hold = hold
        self._on_finished = on_finished
        self._history_lock = threading.Lock()
        self._history: list[Exchange] | None = None
        """The conversation so far, read once: this consumer is its only writer while it lives."""
        self._unsettled: list[_Unsettled] = []
        """The flows path: replies recorded as said whole, whose caller may have heard less (see :meth:`finalize`)."""
        self.said_last: ReplyInProgress | None = None
        """The latest reply recorded with something said: the one a caller's next turn may have begun over."""
        self.heard_of: HeardOf | None = None
        """The flows path: what the agent's track tells of how much of a reply the caller heard (the consumer's)."""
        self._quickest = Quickest()
        self.replies_made = 0

    def make(self, reply: ReplyInProgress) -> None:
        """Make ``reply``: ask the responder, speak and store each segment, record its end once committed (a
        speculative one waits, after its first segment, for :meth:`hold` to let it on)."""
        started = self._clock.monotonic()
        deadline = started + self._settings.responder_timeout_ms / 1000
        waterfall: dict[str, float] = {"ResponderStartedAt": self._clock.time() * 1000}
        reply.responder_started_ms = waterfall["ResponderStartedAt"]
        if reply.eager_at_ms is not None:
            waterfall["EagerEndAt"] = reply.eager_at_ms
        request = TurnRequest(
            contact_id=self.contact_id,
            turn_index=reply.seq,
            transcript=reply.transcript,
            history=self._asked_history(reply),
            attributes=dict(self._attributes),
            language=self._settings.language,
            spoken_prefix=reply.spoken_prefix,
        )
        reply.request_chars = len(request.transcript) + sum(len(e.caller) + len(e.agent) for e in request.history)
        splitter = SentenceSplitter(short_first=reply.first_segment == 0 and not reply.spoken_prefix)
        reply.next_index = reply.first_segment
        if reply.spoken_prefix:
            reply.spoken.append(reply.spoken_prefix)
        action, attributes = Action.CONTINUE, {}
        # An eager end is said at once, beside the request: ConverseFunction, polling slowly while the caller speaks,
        # is then looking fast by the time the turn ends and the reply is named.
        expecting = None
        reply.due_at_ms = self._quickest.due_once_asked(waterfall["ResponderStartedAt"])
        due = {"due_at_ms": reply.due_at_ms, "lead_ms": self._quickest.lead_ms()}
        if reply.speculative and not reply.committed and self._settings.polled:
            reply.marked_at_ms = waterfall["ResponderStartedAt"]
            expecting = self._replies.expect_soon(self.contact_id, reply.seq, reply.keys, **due)
        try:
            answer = self._responder.respond(request, deadline=deadline)
            # Said once the responder has been asked, so the status write is not on the way to its first token.
            if not reply.speculative:
                reply.marked_at_ms = self._clock.time() * 1000
                self._replies.begin(self.contact_id, reply.seq, reply.keys, **due)
            elif expecting is not None:
                expecting.result()
            text = answer.text()
            try:
                for delta in text:
                    if reply.cancel.is_set():
                        return
                    reply.text_chars += len(delta)
                    waterfall.setdefault("ResponderFirstTokenAt", self._clock.time() * 1000)
                    if self._add_pieces(reply, splitter.feed(delta), started, waterfall):
                        logger.info(
                            "reply cut short: the caller spoke again", turn=reply.seq, segments=reply.next_index
                        )
                        break
                    if reply.cancel.is_set():
                        return
                else:
                    self._add_pieces(reply, splitter.flush(), started, waterfall)
                    action, attributes = answer.action, dict(answer.attributes)
            finally:
                close = getattr(text, "close", None)
                if close is not None:
                    close()
            reply.input_tokens = getattr(answer, "input_tokens", None)
            reply.output_tokens = getattr(answer, "output_tokens", None)
            retries = getattr(answer, "retries", 0)
            if retries:
                self._report("ResponderRetries", MetricUnit.Count, retries)
        except ResponderError as exc:
            if reply.fail_uncommitted():
                logger.info("speculative reply failed; the turn is answered when it ends", reason=exc.safe_message)
                return
            self._report("ResponderErrors", MetricUnit.Count, 1)
            logger.warning("responder failed", responder=self._responder.name, turn=reply.seq, reason=exc.safe_message)
            if reply.next_index == reply.first_segment:
                self._add_pieces(reply, [self._settings.apology_text], started, waterfall)
        if reply.cancel.is_set():
            return
        with reply.lock:
            reply.finished = (action, bounded(attributes))
            committed = reply.committed
        if committed:
            self.finalize(reply)

    def _add_pieces(
        self, reply: ReplyInProgress, pieces: list[str], started: float, waterfall: dict[str, float]
    ) -> bool:
        """Speak and store each piece; True when the caller spoke again (the reply stops here)."""
        for piece in pieces:
            if reply.cancel.is_set():
                return False
            timings: dict[str, float] = {}
            if reply.next_index == reply.first_segment:
                responder_ms = self._since(started)
                self._quickest.note(responder_ms=responder_ms)
                waterfall["FirstClauseAt"] = self._clock.time() * 1000
                self._report("ResponderFirstSentence", MetricUnit.Milliseconds, responder_ms)
                timings = {**waterfall, "ResponderMs": round(responder_ms, 1)}
            if self._store(reply, piece, timings):
                reply.spoken.append(piece)
            if reply.interrupt.is_set():
                return True
            if reply.speculative:
                self._hold(reply)
        return False

    def commit(self, reply: ReplyInProgress, turn: Turn) -> float | None:
        """Name the speculative ``reply`` as ``turn``'s, with whatever it has ready, and record it finished if it is
        made whole already; when that was (epoch ms), or None when it failed first (:attr:`ReplyInProgress.failed`)
        or another reply was named first."""
        with reply.lock:
            if reply.failed:
                return None
            finished = reply.finished
            action, attributes = finished or (Action.CONTINUE, {})
            status = ReplyStatus(
                turn.seq,
                reply.next_index,
                done=finished is not None,
                action=action,
                attributes=bounded(attributes),
                keys=reply.keys,
                latest=reply.last,
                earlier=reply.earlier,
                due_at_ms=reply.due_at_ms if reply.next_index == 0 else 0,
            )
            if not self._replies.commit(status, self.contact_id):
                return None
            reply.turn, reply.committed = turn, True
        reply.committed_at_ms = self._clock.time() * 1000
        if finished is not None:
            # Made whole before the turn ended: recorded as finished before its thread may end and a drain return.
            self.finalize(reply)
        return reply.committed_at_ms

    def finalize(self, reply: ReplyInProgress) -> None:
        """Record the end of a committed reply: its status, the contact's attributes, the history (once)."""
        with reply.lock:
            if reply.finalized or reply.finished is None or reply.turn is None:
                return
            reply.finalized = True
            action, attributes = reply.finished
        if self._abandoned.is_set():
            return
        self._attributes.update(attributes)
        # The call's least lead, said as soon as the reply that measured it ends: the wait for the caller's next
        # turn is paced by it.
        self._replies.finish(
            self.contact_id,
            reply.seq,
            reply.next_index,
            action,
            attributes,
            reply.keys,
            latest=reply.last,
            lead_ms=self._quickest.lead_ms(),
            earlier=reply.earlier,
        )
        with self._history_lock:
            before = self.conversation()
            if reply.cut is not None:
                # The turn it answers was begun over an earlier reply: answered, so no longer an "uh-huh" that reply
                # went on over, and the flow leaves it after the prompt the caller began over.
                (earlier, heard), reply.cut = reply.cut, None
                if earlier.heard_through is None:
                    before = _saying(before, earlier, heard)
            self._history = self._replies.record_exchange(
                self.contact_id,
                Exchange(reply.transcript, _said(reply)),
                keep=self._settings.history_turns,
                before=self._settle_heard(before),
            )
            if self._settings.polled and self._settings.history_turns and reply.heard is None and reply.spoken:
                self._unsettled.append(_Unsettled(reply))
            if reply.spoken:
                self.said_last = reply
        self.replies_made += 1
        logger.info(
            "reply stored",
            turn=reply.seq,
            segments=reply.next_index,
            action=action.value,
            speculative=reply.speculative,
        )
        self._tell_over(reply)

    def ended_on_failure(self, reply: ReplyInProgress, error: Exception) -> None:
        """``reply`` stopped on an error before it was recorded finished (a write refused, a slip in the code). A
        committed one ends as a reply that said what it had said — the apology, when it had said nothing — recorded
        finished where the table takes it, so the flow goes on listening rather than wait for a reply that will never
        come (``Thinking``, a holding line, then silence); and the transport is told it is over all the same, so its
        voice ends: on the streaming path a response never ended keeps every later one from being heard. A contact
        another consumer took over (``Superseded``) is that one's to answer: nothing more is said or written."""
        if not reply.committed:
            return
        try:
            if not reply.cancel.is_set() and not self._abandoned.is_set() and not isinstance(error, Superseded):
                apology = self._settings.apology_text
                if reply.next_index == reply.first_segment and self._store(reply, apology, {}):
                    reply.spoken.append(apology)
                with reply.lock:
                    if reply.finished is None:
                        reply.finished = (Action.CONTINUE, {})
                self.finalize(reply)
        except Exception as exc:
            # Already failing (often on the same table): what could be recorded is, and the reply ends regardless.
            logger.warning("a failed reply could not be recorded finished", turn=reply.seq, reason=type(exc).__name__)
        finally:
            self._tell_over(reply)

    def _tell_over(self, reply: ReplyInProgress) -> None:
        with reply.lock:
            if reply.told_over:
                return
            reply.told_over = True
        if self._on_finished is not None:
            self._on_finished(reply)

    def _store(self, reply: ReplyInProgress, sentence: str, waterfall: Mapping[str, float]) -> bool:
        """Speak and store one sentence as the reply's next segment. The segment keeps how its time was spent (the
        responder's, the model's, the caller's stop, and on the first one the reply's waterfall), for the report and
        the metrics."""
        index = reply.next_index
        budget_s = min(self._settings.sonic_deadline_ms / 1000, 8.0)
        uri: str | None
        duration_ms: int | None = None
        timings: dict[str, float] = dict(waterfall)
        turn = reply.turn
        if turn is not None:
            timings["TurnEndedAt"] = float(turn.ended_at_ms)
            if turn.latency_ms is not None:
                timings["CallerStoppedAt"] = float(turn.ended_at_ms - turn.latency_ms)
        began_ms = self._clock.time() * 1000
        if index == 0 and self._settings.polled:
            # A poller waiting for this segment looks fast from now on (it is stored within one synthesis), once
            # the share of the call's quickest synthesis that cannot bring it has passed.
            reply.due_at_ms = self._quickest.due_once_synthesizing(began_ms)
            self._replies.synthesizing_soon(self.contact_id, reply.seq, due_at_ms=reply.due_at_ms)
        try:
            spoken = self._speak(sentence, self._clock.monotonic() + budget_s, reply.cancel, reply=reply)
            uri, duration_ms = spoken.uri, spoken.duration_ms
            if spoken.synthesis_ms is not None:
                timings["SynthesisMs"] = round(spoken.synthesis_ms, 1)
                reply.sonic_ms += spoken.synthesis_ms
            if spoken.first_byte_at is not None and index == reply.first_segment:
                timings["SonicFirstByteAt"] = spoken.first_byte_at * 1000
        except SynthesisCancelled:
            return False
        except ModelUnavailable as exc:
            logger.warning("sentence left to Connect's voice", turn=reply.seq, segment=index, reason=exc.safe_message)
            uri = None
        if reply.cancel.is_set() or self._abandoned.is_set():
            return False
        ready_ms = int(self._clock.time() * 1000)
        if index == 0:
            marked = None if reply.marked_at_ms is None else ready_ms - reply.marked_at_ms
            self._quickest.note(synthesis_ms=ready_ms - began_ms, marked_ms=marked)
        segment = Segment(
            self.contact_id,
            reply.seq,
            index,
            sentence,
            uri,
            transcript=reply.transcript,
            ready_at_ms=ready_ms,
            timings=timings,
            keys=reply.keys,
        )
        with reply.lock:
            if reply.cancel.is_set():
                return False
            stored = self._replies.put_segment(segment, advance=reply.committed, earlier=reply.last)
            reply.next_index = index + 1
            reply.earlier, reply.last = reply.last, segment
            reply.made.append(Made(ready_ms, duration_ms))
        if stored and index == 0 and turn is not None and turn.latency_ms is not None:
            # From the end of the caller's voice (Connect's clock) to the first prompt in S3.
            caller_stopped_ms = turn.ended_at_ms - turn.latency_ms
            self._report("ReplyFirstPromptReady", MetricUnit.Milliseconds, max(0.0, ready_ms - caller_stopped_ms))
        return True

    def _asked_history(self, reply: ReplyInProgress) -> list[Exchange]:
        """The conversation ``reply``'s responder is asked with. On the flows path, when its turn began while an
        earlier reply played (the agent's track, :attr:`heard_of`), that reply as the caller heard it: through the
        prompt they began over (Connect plays a prompt to its end, and ConverseFunction hands out no further one over
        a speaking caller), the rest marked not said. ConverseFunction's own mark, read later, settles it
        (:meth:`_settle_heard`)."""
        if not self._settings.history_turns:
            return []
        history = self.conversation()
        earlier, heard_of = self.said_last, self.heard_of
        if heard_of is not None and earlier is not None and _cuttable(earlier, reply):
            try:
                heard = heard_of(earlier, reply)
            except Exception as exc:
                # The estimate only refines the history: a slip in it leaves the reply said whole, as it was.
                logger.warning("what the caller heard was not read from the agent's track", reason=type(exc).__name__)
                heard = None
            if heard is not None and heard < len(earlier.spoken):
                reply.cut = (earlier, heard)
                history = _saying(history, earlier, heard, keep=False)
        return history[-self._settings.history_turns :]

    def _settle_heard(self, history: list[Exchange]) -> list[Exchange]:
        """The flows path: the history with what the caller heard of earlier replies, where it was less than was made.
        ConverseFunction marks it on the caller's turn (a sentence held back over them and never handed out, or the
        flow leaving the reply for a newer turn's after a prompt: prompts play to their end), which can come after the
        next reply is made; so each reply is looked at by the ends of the next :data:`SETTLE_LOOKS` replies, one small
        read each, off the way to any reply's first words, then taken as heard whole. Replies asked before the mark
        was read were told it was said."""
        settled = list(history)
        for waiting in list(self._unsettled):
            reply = waiting.reply
            try:
                held = self._replies.held_at(self.contact_id, reply.seq)
            except VoiceBridgeError as exc:
                logger.warning("what the caller heard of a reply was not read", turn=reply.seq, reason=exc.safe_message)
                held = None
            waiting.looks_left -= 1
            if held is None and waiting.looks_left > 0:
                continue
            self._unsettled.remove(waiting)
            if held is None or reply.spoken_prefix:
                continue
            # The mark stands over what the agent's track suggested: a mark past the last sentence, all heard.
            settled = _saying(settled, reply, held if held < len(reply.spoken) else None)
        return settled

    def amend_heard(self, reply: ReplyInProgress, heard: str, unsaid: str) -> None:
        """The caller heard only ``heard`` of ``reply``, not ``unsaid`` (they talked over it): the history says so,
        whether the reply is still being made or was recorded already, and the caller's turn keeps what was heard for
        the call record."""
        try:
            self._replies.note_heard(self.contact_id, reply.seq, heard)
        except VoiceBridgeError as exc:
            logger.warning("what the caller heard of the reply was not kept", turn=reply.seq, reason=exc.safe_message)
        heard = _heard_text(heard, unsaid)
        with self._history_lock:
            reply.heard = heard
            history = self._history
            if not reply.finalized or not history or history[-1].caller != reply.transcript:
                return
            self._history = self._replies.record_exchange(
                self.contact_id,
                Exchange(reply.transcript, heard),
                keep=self._settings.history_turns,
                before=history[:-1],
            )

    def conversation(self) -> list[Exchange]:
        if self._history is None:
            self._history = self._replies.history(self.contact_id)
        return self._history

    def _since(self, started: float) -> float:
        return (self._clock.monotonic() - started) * 1000


SETTLE_LOOKS = 2
"""How many later replies' ends look for what the caller heard of a flows reply: the flow leaves it for the next
turn's reply once the prompt playing ends, before the turn after that can begin."""


@dataclass(slots=True)
class _Unsettled:
    reply: ReplyInProgress
    looks_left: int = SETTLE_LOOKS


def _cuttable(earlier: ReplyInProgress, reply: ReplyInProgress) -> bool:
    """Whether the agent's track can say how much of ``earlier`` was heard before ``reply``'s turn began: an earlier
    turn's reply, every sentence of it a prompt made here (not one resumed from a predecessor's), nothing known of
    it yet."""
    return (
        earlier.seq < reply.seq
        and earlier.heard is None
        and earlier.heard_through is None
        and not earlier.spoken_prefix
        and len(earlier.made) == len(earlier.spoken)
    )


def _said(reply: ReplyInProgress) -> str:
    """What the history says the agent said in ``reply``: all of it, or what the caller heard and what not."""
    return reply.heard if reply.heard is not None else _told(reply.spoken, reply.heard_through)


def _told(sentences: list[str], heard: int | None) -> str:
    """``sentences`` of which the caller heard the first ``heard`` (None: all)."""
    if heard is None or heard >= len(sentences):
        return " ".join(sentences)
    return _heard_text(" ".join(sentences[:heard]), " ".join(sentences[heard:]))


def _saying(history: list[Exchange], reply: ReplyInProgress, heard: int | None, *, keep: bool = True) -> list[Exchange]:
    """``history`` with ``reply``'s exchange, as recorded now, saying that the caller heard ``heard`` of its
    sentences (None: all); ``keep``: and the reply says so from now on (else only this copy of the history does)."""
    recorded = Exchange(reply.transcript, _said(reply))
    now = Exchange(reply.transcript, _told(reply.spoken, heard))
    if keep:
        reply.heard_through = heard
    rewritten = list(history)
    for index in range(len(rewritten) - 1, -1, -1):
        if rewritten[index] == recorded:
            rewritten[index] = now
            break
    return rewritten


def _heard_text(heard: str, unsaid: str) -> str:
    """The history's words for a reply the caller talked over: what they heard, and what they did not."""
    return f"{heard} [interrupted by the caller; not said: {unsaid}]".strip()


MAX_ATTRIBUTES_BYTES = 8 * 1024
"""What a reply's attributes may weigh: they reach the flow in ConverseFunction's answer, which Connect caps at
32 KB, next to a sentence and a transcript."""


def bounded(attributes: Mapping[str, str]) -> dict[str, str]:
    """The responder's attributes, as many as fit in :data:`MAX_ATTRIBUTES_BYTES` (the rest dropped, and said)."""
    kept: dict[str, str] = {}
    size = 0
    for name, value in attributes.items():
        size += len(name.encode()) + len(value.encode(errors="replace"))
        if size > MAX_ATTRIBUTES_BYTES:
            logger.warning(
                "responder attributes over the limit; the rest are dropped", kept=len(kept), given=len(attributes)
            )
            break
        kept[name] = value
    return kept
