"""The consumer's replying side: which replies are made, when, and on which thread.

For a turn *n*: the status says a reply is being made (pollers speed up), and the reply is made segment by segment
(:class:`~voicebridge.converse.making.ReplyMaker`: the first one short, the rest whole sentences, each stored the
moment its prompt is in S3), so the first plays while the rest is still being written. When the text is exhausted
the status records the reply's action and the responder's attributes.

- **Speculative replies.** On Ink's ``turn.eager_end`` (the caller may be done) the reply is started at once on the
  words so far, on a thread of its own, and its first segment is made and stored under speculative keys no flow
  can play (:func:`~voicebridge.store.replies.speculative_keys`); then it waits. A reply to an earlier turn still
  being made (a slow or throttled model) is let finish first, so that the speculation is asked with that turn in its
  history, as a reply made at the turn's end would be. When the turn ends with the same
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
  segment; the new turn is answered with what the caller said since, once that reply has ended (a committed
  speculation, made on its own thread, too), so that it is asked with the earlier turn in its history. A
  backchannel ("uh-huh" over the agent, who went on: :attr:`~voicebridge.store.turns.Turn.backchannel`) stops
  nothing and is not answered.
- **Failures**: a responder that fails before saying anything yields ``APOLOGY_TEXT`` and ``Continue`` (a
  speculative reply that fails before it is committed is cancelled instead, and the turn answered normally, as is
  one whose commit the table refuses); Sonic failing yields a segment with only its text, for Connect's own voice.
  A turn end that has claimed a speculation for its commit wins over a failure or a wait running out at the same
  moment (:meth:`ReplyInProgress.fail_uncommitted`; the claim and a cancel under the worker's lock): a reply named
  is always made, and a turn never left with none.
- **Hand-over**: the consumer waits for the reply in progress (:meth:`ReplyWorker.drain`); a speculation not yet
  committed is cancelled (the successor hears the turn again). A successor finding a reply unfinished
  (:meth:`ReplyWorker.resume`) makes the rest of it, with what was already said as the reply's beginning, and
  numbers its segments on, under the same keys: nothing is said twice.
- Transcripts are never logged at INFO.

::

    worker = ReplyWorker(contact_id, responder=..., speak=..., replies=ReplyStore(turns),
                         settings=ReplySettings.of(config))
    worker.eager_end(3, "what is my balance")   # from the transcriber: Ink thinks the caller may be done
    worker.turn_ended(turn)                     # from the transcriber, as Ink ends the turn (commits a match)
    worker.submit(turn)                         # from the transcriber, once the turn is stored
    worker.drain(timeout_s=10)                  # before a hand-over
"""

from __future__ import annotations

import threading
import unicodedata
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.converse.making import (
    HeardOf,
    ReplyInProgress,
    ReplyMaker,
    ReplySettings,
    Report,
    Speak,
)
from voicebridge.converse.responder import Responder
from voicebridge.converse.speculation import SpeculationLedger
from voicebridge.errors import VoiceBridgeError
from voicebridge.store.replies import REPLY_KEYS, ReplyStore, speculative_keys
from voicebridge.store.turns import Turn, TurnStore
from voicebridge.telemetry import in_context, logger


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


class _TurnQueue:
    """The turns waiting to be answered: only the newest is, with what the caller said in the turns it supersedes."""

    def __init__(self) -> None:
        self._jobs: deque[_Job] = deque()

    def __bool__(self) -> bool:
        return bool(self._jobs)

    def append(self, job: _Job) -> None:
        self._jobs.append(job)

    def clear(self) -> None:
        self._jobs.clear()

    @property
    def newest(self) -> int:
        """The newest waiting turn's number (the queue holds one at least)."""
        return self._jobs[-1].turn.seq

    def take(self) -> ReplyInProgress:
        """The reply to make next, emptying the queue; a reply being resumed is made as it was left."""
        jobs = list(self._jobs)
        self._jobs.clear()
        job = jobs[-1]
        if len(jobs) > 1 and not job.spoken_prefix:
            # The caller ended turns faster than they were answered: one reply answers all they said.
            said = " ".join(queued.transcript.strip() for queued in jobs if not queued.spoken_prefix)
            job = _Job(job.turn, said)
        return ReplyInProgress(
            job.turn.seq,
            job.transcript,
            keys=job.keys,
            turn=job.turn,
            first_segment=job.first_segment,
            spoken_prefix=job.spoken_prefix,
        )


class ReplyWorker:
    """Answers one contact's turns, one at a time, newest first; speculates on eager ends beside that."""

    def __init__(
        self,
        contact_id: str,
        *,
        responder: Responder,
        speak: Speak,
        replies: ReplyStore,
        settings: ReplySettings,
        attributes: Mapping[str, str] | None = None,
        report: Report | None = None,
        clock: Clock = SYSTEM_CLOCK,
        on_finished: Callable[[ReplyInProgress], None] | None = None,
    ) -> None:
        self.contact_id = contact_id
        self._replies = replies
        self._settings = settings
        self._report: Report = report or (lambda name, unit, value: None)
        self._clock = clock
        self._abandoned = threading.Event()
        self._maker = ReplyMaker(
            contact_id,
            responder=responder,
            speak=speak,
            replies=replies,
            settings=settings,
            attributes=attributes or {},
            report=self._report,
            clock=clock,
            abandoned=self._abandoned,
            hold=self._hold,
            on_finished=on_finished,
        )
        self._speculates = settings.speculative and getattr(responder, "speculative_safe", False)
        self._queue = _TurnQueue()
        self._wake = threading.Condition()
        self._current: ReplyInProgress | None = None
        """The reply the worker's thread is making."""
        self._speculation: ReplyInProgress | None = None
        """The speculative reply waiting for its turn to end."""
        self._committed: set[ReplyInProgress] = set()
        """Speculative replies committed and still being made, on their own threads."""
        self._running: set[threading.Thread] = set()
        self._ledger = SpeculationLedger(
            contact_id, replies, self._report, max_per_turn=settings.speculative_max_per_turn
        )
        self._answered_early: set[int] = set()
        """Turns whose speculative reply :meth:`turn_ended` committed: their :meth:`submit` has nothing to do."""
        self._closing = False
        self._thread = threading.Thread(target=in_context(self._run), name="replies", daemon=True)
        self._thread.start()

    @property
    def replies_made(self) -> int:
        return self._maker.replies_made

    @property
    def making(self) -> bool:
        """A reply to a finished turn is being made (not a speculation waiting for its turn)."""
        with self._wake:
            return not self._idle()

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
            attempt = self._ledger.start(seq)
            if attempt is None:
                return
            reply = ReplyInProgress(
                seq,
                transcript,
                keys=speculative_keys(seq, attempt),
                turn=None,
                committed=False,
                eager_at_ms=self._clock.time() * 1000,
            )
            self._speculation = reply
            thread = threading.Thread(
                target=in_context(self._speculate), args=(reply,), name="speculative-reply", daemon=True
            )
            self._running.add(thread)
        thread.start()

    def turn_resumed(self, seq: int) -> None:
        """Ink heard the caller go on after an eager end: the speculative reply to ``seq`` is cancelled."""
        self._drop_speculation(seq, "the caller went on")

    def _drop_speculation(self, seq: int, why: str) -> None:
        with self._wake:
            reply = self._speculation
            if reply is not None and reply.seq == seq:
                self._cancel(reply, why)

    def turn_ended(self, turn: Turn) -> None:
        """Ink ended ``turn`` (not yet stored): a speculative reply to the same words is committed now, while the turn
        is being written, so the flow can play it one write sooner. Anything else waits for :meth:`submit`.

        Called on Ink's receiver thread. A turn that turns out to be a replay (a predecessor stored it) is harmless
        here: if the predecessor answered it, the commit finds its reply named and drops the speculation. A
        backchannel is not answered: a speculative reply started on its words is cancelled."""
        if turn.backchannel:
            self._drop_speculation(turn.seq, "a backchannel is not answered")
            self._ledger.answered_otherwise(turn.seq)
            return
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
        else:
            self._ledger.answered_otherwise(turn.seq)

    def _confirms(self, reply: ReplyInProgress, turn: Turn) -> bool:
        """Whether ``turn`` ended with the words ``reply`` was made for, nothing else waiting (caller holds the
        lock)."""
        return (
            reply.seq == turn.seq
            and not self._queue
            and not reply.failed
            and not reply.cancel.is_set()
            and same_words(reply.transcript, turn.transcript)
        )

    def _interrupt_all_but(self, reply: ReplyInProgress | None) -> None:
        """A newer turn ended: every reply still being made stops after its segment (caller holds the lock)."""
        for making in (self._current, *self._committed):
            if making is not None and making is not reply:
                making.interrupt.set()

    def stop_speaking(self) -> None:
        """The caller talked over the agent (the streaming path's barge-in): the reply being made stops at once — its
        synthesis is abandoned by the transport — a speculation waiting for its turn is cancelled, and the caller's
        words are answered when their turn ends."""
        with self._wake:
            for making in (self._current, *self._committed):
                if making is not None:
                    making.interrupt.set()
            if self._speculation is not None:
                self._cancel(self._speculation, "the caller talked over the agent")

    @property
    def said_last(self) -> ReplyInProgress | None:
        """The latest reply recorded with something said."""
        return self._maker.said_last

    def hear_from(self, heard_of: HeardOf) -> None:
        """The flows path: the consumer's reading of the agent's track, which says how much of a reply the caller
        heard before they began a turn over it (:meth:`ReplyMaker._asked_history`)."""
        self._maker.heard_of = heard_of

    def amend_heard(self, reply: ReplyInProgress, heard: str, unsaid: str) -> None:
        """What the caller heard of ``reply`` before talking over it, and what not (:meth:`ReplyMaker.amend_heard`)."""
        self._maker.amend_heard(reply, heard, unsaid)

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
                # A committed speculative reply to an earlier turn may still be being made on its own thread (a slow
                # or throttled model; this turn's end stopped it after its segment): let it finish first, so that
                # this reply is asked with that turn and what was said to it in its history, as a reply made after
                # the worker's own always is — else the model hears this turn's words without the ones before.
                # Turns that end meanwhile are answered with it, as one reply.
                self._wait_for_earlier()
                if not self._queue:
                    continue
                reply = self._queue.take()
                self._current = reply
            try:
                self._maker.make(reply)
            except VoiceBridgeError as exc:
                logger.warning("reply not stored", turn=reply.seq, reason=exc.safe_message)
                self._maker.ended_on_failure(reply, exc)
            except Exception as exc:
                logger.exception("reply failed")
                self._count_failure()
                self._maker.ended_on_failure(reply, exc)
            finally:
                with self._wake:
                    self._current = None
                    self._wake.notify_all()

    def _count_failure(self) -> None:
        """A reply failed on something no service's error explains (a slip in the code): counted, and in the
        transport's errors, whose alarm tells someone; the caller heard nothing of it, or the rest was never made."""
        self._report("ReplyErrors", MetricUnit.Count, 1)
        self._report("ListenErrors" if self._settings.polled else "StreamingErrors", MetricUnit.Count, 1)

    # -- speculation

    def _speculate(self, reply: ReplyInProgress) -> None:
        """A speculative reply's thread: make it once no earlier reply is being made; if it is cancelled, count what
        it cost."""
        try:
            if not self._after_earlier_replies(reply):
                return
            self._maker.make(reply)
            if not reply.failed:
                # Made whole before the turn ended: it stays ready until its words are confirmed or not.
                self._hold(reply)
        except VoiceBridgeError as exc:
            reply.fail_uncommitted()
            logger.warning("speculative reply not stored", turn=reply.seq, reason=exc.safe_message)
            self._maker.ended_on_failure(reply, exc)
        except Exception as exc:
            reply.fail_uncommitted()
            logger.exception("speculative reply failed")
            self._count_failure()
            self._maker.ended_on_failure(reply, exc)
        finally:
            # Counted on this thread, not on the one that committed it (Ink's receiver, or the turn writer).
            if reply.committed_at_ms is not None:
                self._ledger.record_hit(reply)
            elif reply.cancel.is_set() and not self._abandoned.is_set():
                self._ledger.record_waste(reply)
                if self._settings.polled:
                    self._withdraw(reply)
            with self._wake:
                self._committed.discard(reply)
                self._running.discard(threading.current_thread())
                self._wake.notify_all()

    def _after_earlier_replies(self, reply: ReplyInProgress) -> bool:
        """Wait while a reply to an earlier turn is still being made (a slow model, a retry, a holding line), so that
        the speculation is asked with that turn and what was said to it in its history, as a reply made at the turn's
        end would be; the turn's end stops the earlier reply after its segment. False when the speculation was
        cancelled meanwhile, or the earlier reply outlasted the responder's time (the turn is then answered when it
        ends) — unless the turn has ended and named it meanwhile: it is the turn's reply, made now."""
        with self._wake:
            waited = self._wake.wait_for(
                lambda: reply.cancel.is_set() or not self._earlier_than(reply),
                self._settings.responder_timeout_ms / 1000,
            )
            if not waited and reply not in self._committed:
                self._cancel(reply, "an earlier reply was still being made")
            return not reply.cancel.is_set()

    def _wait_for_earlier(self) -> None:
        """Wait while a committed speculative reply to a turn before the newest waiting one is still being made, at
        most the responder's time (caller holds the lock)."""
        self._wake.wait_for(
            lambda: (
                self._abandoned.is_set()
                or not self._queue
                or not any(other.seq < self._queue.newest for other in self._committed)
            ),
            self._settings.responder_timeout_ms / 1000,
        )

    def _earlier_than(self, reply: ReplyInProgress) -> bool:
        """Whether another reply is being made or waits to be (caller holds the lock)."""
        making = (self._current, *self._committed)
        return bool(self._queue) or any(other is not None and other is not reply for other in making)

    def _withdraw(self, reply: ReplyInProgress) -> None:
        """A cancelled speculative reply takes back its eager end, so ConverseFunction polls slowly again while the
        caller goes on (a hint: a table error is logged, not raised)."""
        try:
            self._replies.unexpect(self.contact_id, reply.seq, reply.keys)
        except VoiceBridgeError as exc:
            logger.warning("eager end not taken back", turn=reply.seq, reason=exc.safe_message)

    def _cancel(self, reply: ReplyInProgress, why: str) -> None:
        """Cancel a speculative reply not yet committed (caller holds the lock)."""
        if reply.cancel.is_set():
            return
        reply.cancel.set()
        reply.go.set()
        if self._speculation is reply:
            self._speculation = None
        self._wake.notify_all()
        logger.info("speculative reply cancelled", turn=reply.seq, why=why, segments=reply.next_index)
        self._ledger.cancelled()

    def _commit(self, reply: ReplyInProgress, turn: Turn) -> None:
        """Name the speculative ``reply`` as ``turn``'s, with whatever it has ready; it then goes on as any other."""
        unnamed = False
        try:
            committed_at_ms = self._maker.commit(reply, turn)
        except VoiceBridgeError as exc:
            # Called as Ink ends the turn, before it is stored: nothing is raised there. The status may or may not
            # name the speculation; the reply made anew names itself over it.
            logger.warning("speculative reply not named", turn=turn.seq, reason=exc.safe_message)
            committed_at_ms, unnamed = None, True
        if committed_at_ms is None:
            # Answered anew when the responder failed it as the turn ended, after its words were found to confirm
            # it, or it could not be named (its end may have come already, so not left to it), unless the worker was
            # abandoned meanwhile. Else a reply to this turn (a predecessor's) or to a later one is named already:
            # answering it again would say it twice, so the speculation is simply dropped.
            anew = reply.failed or unnamed
            with self._wake:
                self._cancel(reply, "it could not be named" if anew else "another reply was named first")
                self._committed.discard(reply)
                if anew and not self._abandoned.is_set():
                    self._queue.append(_Job(turn, turn.transcript))
                self._wake.notify_all()
            if anew:
                self._ledger.answered_otherwise(turn.seq)
            return
        reply.go.set()
        self._ledger.committed(reply, turn, committed_at_ms)
        logger.info("speculative reply committed", turn=turn.seq, segments=reply.next_index)

    def _hold(self, reply: ReplyInProgress) -> None:
        """A speculative reply not yet committed waits, after its first segment, until it is committed or cancelled
        (at most the responder's time: a turn that never ends cancels it, but not one whose end has claimed it for
        the commit as the time ran out, else the commit would name a reply that stopped being made)."""
        if reply.committed or reply.cancel.is_set():
            return
        wait_s = self._settings.responder_timeout_ms / 1000
        if reply.go.wait(wait_s):
            return
        with self._wake:
            # A turn end that confirmed it claimed it under this lock: it is being committed and goes on once it is.
            if reply not in self._committed:
                self._cancel(reply, "the turn did not end in time")
                return
        if not reply.go.wait(wait_s):
            logger.warning("a committed speculative reply was not let on in time", turn=reply.seq)
