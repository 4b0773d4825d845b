"""The consumer's replying side: each finished caller turn answered, sentence by sentence, on a thread of its own.

For a turn *n*: the status says a reply is being made (pollers speed up), the responder streams the reply's text,
the :class:`~voicebridge.converse.sentences.SentenceSplitter` cuts it into segments as they complete — the first one
short (its first clause, about a second of speech), the others whole sentences — and each is spoken by the Speak
path's synthesizer (prompt cache, µ-law conversion while streaming, fallbacks) and stored as segment *k* the moment
its prompt is in S3, so the first plays while the rest is still being written. When the text is exhausted the
status records the reply's action and the responder's attributes.

- **Speculative replies.** On Ink's ``turn.eager_end`` (the caller may be done) the reply is started at once on the
  words so far, on a thread of its own, and its first segment is made and stored under speculative keys no flow
  can play (:func:`~voicebridge.store.replies.speculative_keys`); then it waits. When the turn ends with the same
  words (case, punctuation and white space aside) the reply is *committed*: one conditional write names it as turn
  *n*'s reply, and it goes on as any other. Different words, a ``turn.resume``, or no turn end within the
  responder's time *cancel* it: the responder's stream is closed, a synthesis under way abandoned at its next chunk,
  nothing more is stored, and the turn is answered as if nothing had been tried. A reply's action and attributes (a
  Bedrock tool call such as ``transfer_to_agent``) reach the flow only once it is committed. At most
  ``speculative_max_per_turn`` attempts are started per turn, and only for a responder that declares itself free of
  side effects (``speculative_safe``: Bedrock and scripted rules; a customer function when so configured; never
  Lex, whose RecognizeText moves the dialog on). What each turn's speculation did is counted (``spec#<n>``).
- **Listening never waits on replying**: turns are handed over with :meth:`ReplyWorker.submit` (and eager ends with
  :meth:`ReplyWorker.eager_end`) and answered here.
- **Barge-in**: a caller turn that ends while a reply is still being made stops that reply after its current
  segment; the new turn is answered with what the caller said since.
- **Failures**: a responder that fails before saying anything yields ``APOLOGY_TEXT`` and ``Continue`` (a
  speculative reply that fails is cancelled instead, and the turn answered normally); Sonic failing yields a
  segment with only its text, for Connect's own voice.
- **Hand-over**: the consumer waits for the reply in progress (:meth:`ReplyWorker.drain`); a speculation not yet
  committed is cancelled (the successor hears the turn again). A successor finding a reply unfinished
  (:meth:`ReplyWorker.resume`) makes the rest of it, with what was already said as the reply's beginning, and
  numbers its segments on, under the same keys: nothing is said twice.
- Transcripts are never logged at INFO.

::

    worker = ReplyWorker(contact_id, responder=..., speak=..., replies=ReplyStore(turns), settings=settings)
    worker.eager_end(3, "what is my balance")   # from the transcriber: Ink thinks the caller may be done
    worker.turn_ended(turn)                     # from the transcriber, as Ink ends the turn (commits a match)
    worker.submit(turn)                         # from the transcriber, once the turn is stored
    worker.drain(timeout_s=10)                  # before a hand-over
"""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.config import Settings
from voicebridge.conversation import Action, Exchange
from voicebridge.converse.responder import Responder, ResponderError, TurnRequest
from voicebridge.converse.sentences import SentenceSplitter
from voicebridge.errors import ModelUnavailable, VoiceBridgeError
from voicebridge.sonic.synthesizer import SynthesisCancelled
from voicebridge.store.replies import REPLY_KEYS, ReplyStatus, ReplyStore, Segment, speculative_keys
from voicebridge.store.turns import Turn, TurnStore
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


class Speak(Protocol):
    """Speak a sentence before a deadline (``time.monotonic()``); ModelUnavailable when only its text can go,
    SynthesisCancelled once ``cancel`` is set."""

    def __call__(self, text: str, deadline: float, cancel: threading.Event | None = None) -> Spoken: ...


Report = Callable[[str, MetricUnit, float], None]


def same_words(first: str, second: str) -> bool:
    """Whether two transcripts say the same words: case, punctuation and white space aside."""
    return _words(first) == _words(second)


def _words(text: str) -> list[str]:
    kept = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.casefold())
    return kept.split()


@dataclass(frozen=True, slots=True)
class _Job:
    turn: Turn
    transcript: str
    spoken_prefix: str = ""
    first_segment: int = 0
    keys: str = REPLY_KEYS


@dataclass(eq=False)
class _Reply:
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
    failed: bool = False
    request_chars: int = 0
    text_chars: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    sonic_ms: float = 0.0
    last: Segment | None = None
    """The segment stored last: the status carries a copy of it."""
    committed_at_ms: float | None = None

    @property
    def speculative(self) -> bool:
        return self.keys != REPLY_KEYS


class ReplyWorker:
    """Answers one contact's turns, one at a time, newest first; speculates on eager ends beside that."""

    def __init__(
        self,
        contact_id: str,
        *,
        responder: Responder,
        speak: Speak,
        replies: ReplyStore,
        settings: Settings,
        attributes: Mapping[str, str] | None = None,
        report: Report | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.contact_id = contact_id
        self._responder = responder
        self._speak = speak
        self._replies = replies
        self._settings = settings
        self._attributes = dict(attributes or {})
        self._report = report or (lambda name, unit, value: None)
        self._clock = clock
        self._speculates = settings.speculative_replies == "on" and getattr(responder, "speculative_safe", False)
        self._queue: deque[_Job] = deque()
        self._wake = threading.Condition()
        self._current: _Reply | None = None
        """The reply the worker's thread is making."""
        self._speculation: _Reply | None = None
        """The speculative reply waiting for its turn to end."""
        self._committed: set[_Reply] = set()
        """Speculative replies committed and still being made, on their own threads."""
        self._running: set[threading.Thread] = set()
        self._starts: Counter[int] = Counter()
        self._answered_early: set[int] = set()
        """Turns whose speculative reply :meth:`turn_ended` committed: their :meth:`submit` has nothing to do."""
        self._history: list[Exchange] | None = None
        """The conversation so far, read once: this worker is its only writer while it lives."""
        self._closing = False
        self._abandoned = threading.Event()
        self.replies_made = 0
        self._thread = threading.Thread(target=self._run, name="replies", daemon=True)
        self._thread.start()

    # -- the consumer's side

    def eager_end(self, seq: int, transcript: str) -> None:
        """Ink thinks the caller may be done with turn ``seq``: start its reply on ``transcript``, speculatively.

        Called on Ink's receiver thread: it only starts a thread."""
        if not self._speculates or not transcript.strip():
            return
        with self._wake:
            if self._closing:
                return
            previous = self._speculation
            if previous is not None and previous.seq == seq and same_words(previous.transcript, transcript):
                return
            if previous is not None:
                self._cancel(previous, "the words changed")
            if self._starts[seq] >= self._settings.speculative_max_per_turn:
                return
            self._starts[seq] += 1
            reply = _Reply(
                seq,
                transcript,
                keys=speculative_keys(seq, self._starts[seq] - 1),
                turn=None,
                committed=False,
                eager_at_ms=self._clock.time() * 1000,
            )
            self._speculation = reply
            thread = threading.Thread(target=self._speculate, args=(reply,), name="speculative-reply", daemon=True)
            self._running.add(thread)
        self._report("SpeculativeStart", MetricUnit.Count, 1)
        thread.start()

    def turn_resumed(self, seq: int) -> None:
        """Ink heard the caller go on after an eager end: the speculative reply to ``seq`` is cancelled."""
        with self._wake:
            reply = self._speculation
            if reply is not None and reply.seq == seq:
                self._cancel(reply, "the caller went on")

    def turn_ended(self, turn: Turn) -> None:
        """Ink ended ``turn`` (not yet stored): a speculative reply to the same words is committed now, while the turn
        is being written, so the flow can play it one write sooner. Anything else waits for :meth:`submit`.

        Called on Ink's receiver thread. A turn that turns out to be a replay (a predecessor stored it) is harmless
        here: if the predecessor answered it, the commit finds its reply named and drops the speculation."""
        with self._wake:
            reply = self._speculation
            if reply is None or not self._confirms(reply, turn):
                return
            self._speculation = None
            # Counted as being made from now on, so a drain at once (a hand-over) waits for it.
            self._committed.add(reply)
            self._answered_early.add(turn.seq)
            self._interrupt_all_but(reply)
            self._wake.notify_all()
        self._commit(reply, turn)

    def submit(self, turn: Turn) -> None:
        """Answer ``turn`` (the caller's, just stored); a reply still being made stops after its segment. A
        speculative reply to the same words is committed instead of starting anew (unless :meth:`turn_ended` did
        already)."""
        with self._wake:
            if turn.seq in self._answered_early:
                self._answered_early.discard(turn.seq)
                return
            reply, self._speculation = self._speculation, None
            hit = reply is not None and self._confirms(reply, turn)
            if reply is not None and not hit:
                self._cancel(reply, "the turn ended with other words")
            if hit and reply is not None:
                self._committed.add(reply)
            else:
                self._queue.append(_Job(turn, turn.transcript))
            self._interrupt_all_but(reply)
            self._wake.notify_all()
        if hit and reply is not None:
            self._commit(reply, turn)
        elif self._starts[turn.seq]:
            self._note(turn.seq, outcome="miss")

    def _confirms(self, reply: _Reply, turn: Turn) -> bool:
        """Whether ``turn`` ended with the words ``reply`` was made for, nothing else waiting (caller holds the
        lock)."""
        return (
            reply.seq == turn.seq
            and not self._queue
            and not reply.failed
            and not reply.cancel.is_set()
            and same_words(reply.transcript, turn.transcript)
        )

    def _interrupt_all_but(self, reply: _Reply | None) -> None:
        """A newer turn ended: every reply still being made stops after its segment (caller holds the lock)."""
        for making in (self._current, *self._committed):
            if making is not None and making is not reply:
                making.interrupt.set()

    def resume(self, turn: Turn, keys: str = REPLY_KEYS) -> None:
        """Finish the reply to ``turn`` that a predecessor left unfinished, continuing after what it stored."""
        stored = self._replies.segments(self.contact_id, turn.seq, keys)
        prefix = " ".join(segment.text for segment in stored)
        with self._wake:
            self._queue.append(_Job(turn, turn.transcript, spoken_prefix=prefix, first_segment=len(stored), keys=keys))
            self._wake.notify_all()

    def resume_unfinished(self, turns: TurnStore) -> None:
        """If the latest reply was left unfinished (a hand-over came first), finish it."""
        status = self._replies.status(self.contact_id)
        if status is None or status.done:
            return
        found = turns.turns_after(self.contact_id, after=status.turn - 1, limit=1)
        if found and found[0].seq == status.turn:
            logger.info("finishing the reply a predecessor left", turn=status.turn, segments=status.segments)
            self.resume(found[0], status.keys)

    def abandon(self) -> None:
        """Stop at once and store nothing more: the successor finishes the reply in progress."""
        self._abandoned.set()
        with self._wake:
            for reply in (self._current, self._speculation, *self._committed):
                if reply is not None:
                    reply.cancel.set()
                    reply.go.set()
            self._speculation = None
            self._queue.clear()
            self._closing = True
            self._wake.notify_all()

    def drain(self, timeout_s: float) -> bool:
        """Wait until every submitted turn has been answered; whether that happened within ``timeout_s``. A
        speculation not yet committed is not waited for."""
        with self._wake:
            return self._wake.wait_for(self._idle, timeout_s)

    def close(self, timeout_s: float) -> None:
        """Answer what is queued (for at most ``timeout_s``), then stop; a speculation still waiting is cancelled."""
        self.drain(timeout_s)
        with self._wake:
            self._closing = True
            if self._speculation is not None:
                self._cancel(self._speculation, "listening ended")
                self._speculation = None
            self._wake.notify_all()
            running = list(self._running)
        self._thread.join(1.0)
        for thread in running:
            thread.join(1.0)

    def _idle(self) -> bool:
        return not self._queue and self._current is None and not self._committed

    # -- the worker's thread

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closing:
                    self._wake.wait()
                if not self._queue:
                    return
                job = self._take_newest()
                reply = _Reply(
                    job.turn.seq,
                    job.transcript,
                    keys=job.keys,
                    turn=job.turn,
                    first_segment=job.first_segment,
                    spoken_prefix=job.spoken_prefix,
                )
                self._current = reply
            try:
                self._make(reply)
            except VoiceBridgeError as exc:
                logger.warning("reply not stored", turn=reply.seq, reason=exc.safe_message)
            except Exception:
                logger.exception("reply failed")
            finally:
                with self._wake:
                    self._current = None
                    self._wake.notify_all()

    def _take_newest(self) -> _Job:
        """The newest queued turn, carrying what the caller said in the turns it supersedes (caller holds the lock)."""
        jobs = list(self._queue)
        self._queue.clear()
        newest = jobs[-1]
        if len(jobs) == 1 or newest.spoken_prefix:
            return newest
        said = " ".join(job.transcript.strip() for job in jobs if not job.spoken_prefix)
        return _Job(newest.turn, said)

    # -- speculation

    def _speculate(self, reply: _Reply) -> None:
        """A speculative reply's thread: make it; if it is cancelled, count what it cost."""
        try:
            self._make(reply)
            if not reply.failed:
                # Made whole before the turn ended: it stays ready until its words are confirmed or not.
                self._hold(reply)
        except VoiceBridgeError as exc:
            reply.failed = True
            logger.warning("speculative reply not stored", turn=reply.seq, reason=exc.safe_message)
        except Exception:
            reply.failed = True
            logger.exception("speculative reply failed")
        finally:
            # Counted on this thread, not on the one that committed it (Ink's receiver, or the turn writer).
            if reply.committed_at_ms is not None:
                self._note(reply.seq, outcome="hit", keys=reply.keys, committed_at_ms=reply.committed_at_ms, Hits=1)
            elif reply.cancel.is_set() and not self._abandoned.is_set():
                self._count_waste(reply)
            with self._wake:
                self._committed.discard(reply)
                self._running.discard(threading.current_thread())
                self._wake.notify_all()

    def _cancel(self, reply: _Reply, why: str) -> None:
        """Cancel a speculative reply not yet committed (caller holds the lock)."""
        if reply.cancel.is_set():
            return
        reply.cancel.set()
        reply.go.set()
        if self._speculation is reply:
            self._speculation = None
        logger.info("speculative reply cancelled", turn=reply.seq, why=why, segments=reply.next_index)
        self._report("SpeculativeMiss", MetricUnit.Count, 1)

    def _commit(self, reply: _Reply, turn: Turn) -> None:
        """Name the speculative ``reply`` as ``turn``'s, with whatever it has ready; it then goes on as any other."""
        with reply.lock:
            finished = reply.finished
            action, attributes = finished or (Action.CONTINUE, {})
            status = ReplyStatus(
                turn.seq,
                reply.next_index,
                done=finished is not None,
                action=action,
                attributes=_bounded(attributes),
                keys=reply.keys,
                latest=reply.last,
            )
            committed = self._replies.commit(status, self.contact_id)
            if committed:
                reply.turn, reply.committed = turn, True
        if not committed:
            # A reply to this turn (a predecessor's) or to a later one is named already: answering it again would
            # say it twice, so the speculation is simply dropped.
            with self._wake:
                self._cancel(reply, "another reply was named first")
                self._committed.discard(reply)
                self._wake.notify_all()
            return
        committed_at_ms = self._clock.time() * 1000
        reply.committed_at_ms = committed_at_ms
        if finished is not None:
            # Made whole before the turn ended: recorded as finished before its thread may end and a drain return.
            self._finalize(reply)
        reply.go.set()
        self._report("SpeculativeHit", MetricUnit.Count, 1)
        if reply.next_index and turn.latency_ms is not None:
            caller_stopped_ms = turn.ended_at_ms - turn.latency_ms
            self._report(
                "ReplyFirstPromptReady", MetricUnit.Milliseconds, max(0.0, committed_at_ms - caller_stopped_ms)
            )
        logger.info("speculative reply committed", turn=turn.seq, segments=reply.next_index)

    def _count_waste(self, reply: _Reply) -> None:
        """What a cancelled speculative reply cost: the model's tokens (its own count when the stream got that far,
        else the conversation asked and the text received at :data:`CHARS_PER_TOKEN`; a system prompt is not
        counted then) and Sonic's stream time."""
        asked = reply.input_tokens if reply.input_tokens is not None else round(reply.request_chars / CHARS_PER_TOKEN)
        said = reply.output_tokens if reply.output_tokens is not None else round(reply.text_chars / CHARS_PER_TOKEN)
        tokens = asked + said
        self._report("SpeculativeWasteTokens", MetricUnit.Count, tokens)
        self._report("SpeculativeWasteSonicSeconds", MetricUnit.Seconds, reply.sonic_ms / 1000)
        self._note(reply.seq, Misses=1, WasteTokens=tokens, WasteSonicMs=round(reply.sonic_ms, 1))

    def _note(
        self,
        turn: int,
        *,
        outcome: str | None = None,
        keys: str | None = None,
        committed_at_ms: float | None = None,
        **counts: float,
    ) -> None:
        try:
            self._replies.note_speculation(
                self.contact_id,
                turn,
                outcome=outcome,
                starts=self._starts[turn],
                keys=keys,
                committed_at_ms=committed_at_ms,
                **counts,
            )
        except VoiceBridgeError as exc:
            logger.warning("speculation not counted", turn=turn, reason=exc.safe_message)

    def _hold(self, reply: _Reply) -> None:
        """A speculative reply not yet committed waits, after its first segment, until it is committed or cancelled
        (at most the responder's time: a turn that never ends cancels it)."""
        if reply.committed or reply.cancel.is_set():
            return
        if not reply.go.wait(self._settings.responder_timeout_ms / 1000):
            with self._wake:
                self._cancel(reply, "the turn did not end in time")

    # -- making a reply

    def _make(self, reply: _Reply) -> None:
        started = self._clock.monotonic()
        deadline = started + self._settings.responder_timeout_ms / 1000
        waterfall: dict[str, float] = {"ResponderStartedAt": self._clock.time() * 1000}
        if reply.eager_at_ms is not None:
            waterfall["EagerEndAt"] = reply.eager_at_ms
        request = TurnRequest(
            contact_id=self.contact_id,
            turn_index=reply.seq,
            transcript=reply.transcript,
            history=self._conversation()[-self._settings.history_turns :] if self._settings.history_turns else (),
            attributes=dict(self._attributes),
            language=self._settings.sonic_default_language,
            spoken_prefix=reply.spoken_prefix,
        )
        reply.request_chars = len(request.transcript) + sum(len(e.caller) + len(e.agent) for e in request.history)
        splitter = SentenceSplitter(short_first=reply.first_segment == 0 and not reply.spoken_prefix)
        reply.next_index = reply.first_segment
        if reply.spoken_prefix:
            reply.spoken.append(reply.spoken_prefix)
        action, attributes = Action.CONTINUE, {}
        try:
            answer = self._responder.respond(request, deadline=deadline)
            # Said once the responder has been asked, so the status write is not on the way to its first token.
            if not reply.speculative:
                self._replies.begin(self.contact_id, reply.seq, reply.keys)
            elif not reply.committed:
                self._replies.expect(self.contact_id, reply.seq)
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
            if reply.speculative and not reply.committed:
                reply.failed = True
                logger.info("speculative reply failed; the turn is answered when it ends", reason=exc.safe_message)
                return
            self._report("ResponderErrors", MetricUnit.Count, 1)
            logger.warning("responder failed", responder=self._responder.name, turn=reply.seq, reason=exc.safe_message)
            if reply.next_index == reply.first_segment:
                self._add_pieces(reply, [self._settings.apology_text], started, waterfall)
        if reply.cancel.is_set():
            return
        with reply.lock:
            reply.finished = (action, _bounded(attributes))
            committed = reply.committed
        if committed:
            self._finalize(reply)

    def _add_pieces(self, reply: _Reply, pieces: list[str], started: float, waterfall: dict[str, float]) -> bool:
        """Speak and store each piece; True when the caller spoke again (the reply stops here)."""
        for piece in pieces:
            if reply.cancel.is_set():
                return False
            timings: dict[str, float] = {}
            if reply.next_index == reply.first_segment:
                responder_ms = self._since(started)
                waterfall["FirstClauseAt"] = self._clock.time() * 1000
                self._report("ResponderFirstSentence", MetricUnit.Milliseconds, responder_ms)
                timings = {**waterfall, "ResponderMs": round(responder_ms, 1)}
            self._store(reply, piece, timings)
            reply.spoken.append(piece)
            if reply.interrupt.is_set():
                return True
            if reply.speculative:
                self._hold(reply)
        return False

    def _finalize(self, reply: _Reply) -> None:
        """Record the end of a committed reply: its status, the contact's attributes, the history (once)."""
        with reply.lock:
            if reply.finalized or reply.finished is None or reply.turn is None:
                return
            reply.finalized = True
            action, attributes = reply.finished
        if self._abandoned.is_set():
            return
        self._attributes.update(attributes)
        self._replies.finish(
            self.contact_id, reply.seq, reply.next_index, action, attributes, reply.keys, latest=reply.last
        )
        self._history = self._replies.record_exchange(
            self.contact_id,
            Exchange(reply.transcript, " ".join(reply.spoken)),
            keep=self._settings.history_turns,
            before=self._conversation(),
        )
        self.replies_made += 1
        logger.info(
            "reply stored",
            turn=reply.seq,
            segments=reply.next_index,
            action=action.value,
            speculative=reply.speculative,
        )

    def _store(self, reply: _Reply, sentence: str, waterfall: Mapping[str, float]) -> None:
        """Speak and store one sentence as the reply's next segment. The segment keeps how its time was spent (the
        responder's, the model's, the caller's stop, and on the first one the reply's waterfall), for the report and
        the metrics."""
        index = reply.next_index
        budget_s = min(self._settings.sonic_deadline_ms / 1000, 8.0)
        uri: str | None
        timings: dict[str, float] = dict(waterfall)
        turn = reply.turn
        if turn is not None:
            timings["TurnEndedAt"] = float(turn.ended_at_ms)
            if turn.latency_ms is not None:
                timings["CallerStoppedAt"] = float(turn.ended_at_ms - turn.latency_ms)
        try:
            spoken = self._speak(sentence, self._clock.monotonic() + budget_s, reply.cancel)
            uri = spoken.uri
            if spoken.synthesis_ms is not None:
                timings["SynthesisMs"] = round(spoken.synthesis_ms, 1)
                reply.sonic_ms += spoken.synthesis_ms
            if spoken.first_byte_at is not None and index == reply.first_segment:
                timings["SonicFirstByteAt"] = spoken.first_byte_at * 1000
        except SynthesisCancelled:
            return
        except ModelUnavailable as exc:
            logger.warning("sentence left to Connect's voice", turn=reply.seq, segment=index, reason=exc.safe_message)
            uri = None
        if reply.cancel.is_set() or self._abandoned.is_set():
            return
        ready_ms = int(self._clock.time() * 1000)
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
                return
            stored = self._replies.put_segment(segment, advance=reply.committed)
            reply.next_index = index + 1
            reply.last = segment
        if stored and index == 0 and turn is not None and turn.latency_ms is not None:
            # From the end of the caller's voice (Connect's clock) to the first prompt in S3.
            caller_stopped_ms = turn.ended_at_ms - turn.latency_ms
            self._report("ReplyFirstPromptReady", MetricUnit.Milliseconds, max(0.0, ready_ms - caller_stopped_ms))

    def _conversation(self) -> list[Exchange]:
        if self._history is None:
            self._history = self._replies.history(self.contact_id)
        return self._history

    def _since(self, started: float) -> float:
        return (self._clock.monotonic() - started) * 1000


MAX_ATTRIBUTES_BYTES = 8 * 1024
"""What a reply's attributes may weigh: they reach the flow in ConverseFunction's answer, which Connect caps at
32 KB, next to a sentence and a transcript."""


def _bounded(attributes: Mapping[str, str]) -> dict[str, str]:
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
