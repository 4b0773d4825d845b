"""The consumer's replying side: each finished caller turn answered, sentence by sentence, on a thread of its own.

For a turn *n*: the status says a reply is being made (pollers speed up), the responder streams the reply's text,
the :class:`~voicebridge.converse.sentences.SentenceSplitter` cuts sentences out of it as they complete, and each is
spoken by the Speak path's synthesizer (prompt cache, µ-law conversion while streaming, fallbacks) and stored as
segment *k* the moment its prompt is in S3 — so the first sentence plays while the rest is still being written.
When the text is exhausted the status records the reply's action and the responder's attributes.

- **Listening never waits on replying**: turns are handed over with :meth:`ReplyWorker.submit` and answered here.
- **Barge-in**: a caller turn that ends while a reply is still being made stops that reply after its current
  sentence; the new turn is answered with what the caller said since.
- **Failures**: a responder that fails before saying anything yields ``APOLOGY_TEXT`` and ``Continue``; Sonic
  failing yields a segment with only its text, for Connect's own voice.
- **Hand-over**: the consumer waits for the reply in progress (:meth:`ReplyWorker.drain`). A successor finding a
  reply unfinished (:meth:`ReplyWorker.resume`) makes the rest of it, with what was already said as the reply's
  beginning, and numbers its segments on: nothing is said twice.
- Transcripts are never logged at INFO.

::

    worker = ReplyWorker(contact_id, responder=..., speak=..., replies=ReplyStore(turns), settings=settings)
    worker.submit(turn)              # from the transcriber, once the turn is stored
    worker.drain(timeout_s=10)       # before a hand-over
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.config import Settings
from voicebridge.converse.replies import Action, Exchange, Responder, ResponderError, TurnRequest
from voicebridge.converse.sentences import SentenceSplitter
from voicebridge.errors import ModelUnavailable, VoiceBridgeError
from voicebridge.store.replies import ReplyStore, Segment
from voicebridge.store.turns import Turn, TurnStore
from voicebridge.telemetry import logger


@dataclass(frozen=True, slots=True)
class Spoken:
    """A sentence made into a prompt."""

    uri: str
    synthesis_ms: float | None = None
    """The model's part of it (first byte to last); None when the prompt came from the cache."""


Speak = Callable[[str, float], Spoken]
"""Speak a sentence before a deadline (``time.monotonic()``); ModelUnavailable when only its text can go."""
Report = Callable[[str, MetricUnit, float], None]


@dataclass(frozen=True, slots=True)
class _Job:
    turn: Turn
    transcript: str
    spoken_prefix: str = ""
    first_segment: int = 0


class ReplyWorker:
    """Answers one contact's turns, one at a time, newest first."""

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
        self._queue: deque[_Job] = deque()
        self._wake = threading.Condition()
        self._busy = False
        self._closing = False
        self._interrupt = threading.Event()
        self._abandoned = threading.Event()
        self.replies_made = 0
        self._thread = threading.Thread(target=self._run, name="replies", daemon=True)
        self._thread.start()

    # -- the consumer's side

    def submit(self, turn: Turn) -> None:
        """Answer ``turn`` (the caller's, just stored); a reply still being made stops after its sentence."""
        with self._wake:
            self._queue.append(_Job(turn, turn.transcript))
            if self._busy:
                self._interrupt.set()
            self._wake.notify_all()

    def resume(self, turn: Turn) -> None:
        """Finish the reply to ``turn`` that a predecessor left unfinished, continuing after what it stored."""
        stored = self._replies.segments(self.contact_id, turn.seq)
        prefix = " ".join(segment.text for segment in stored)
        with self._wake:
            self._queue.append(_Job(turn, turn.transcript, spoken_prefix=prefix, first_segment=len(stored)))
            self._wake.notify_all()

    def resume_unfinished(self, turns: TurnStore) -> None:
        """If the latest reply was left unfinished (a hand-over came first), finish it."""
        status = self._replies.status(self.contact_id)
        if status is None or status.done:
            return
        found = turns.turns_after(self.contact_id, after=status.turn - 1, limit=1)
        if found and found[0].seq == status.turn:
            logger.info("finishing the reply a predecessor left", turn=status.turn, segments=status.segments)
            self.resume(found[0])

    def abandon(self) -> None:
        """Stop at once and store nothing more: the successor finishes the reply in progress."""
        self._abandoned.set()
        self._interrupt.set()
        with self._wake:
            self._queue.clear()
            self._closing = True
            self._wake.notify_all()

    def drain(self, timeout_s: float) -> bool:
        """Wait until every submitted turn has been answered; whether that happened within ``timeout_s``."""
        with self._wake:
            return self._wake.wait_for(lambda: not self._queue and not self._busy, timeout_s)

    def close(self, timeout_s: float) -> None:
        """Answer what is queued (for at most ``timeout_s``), then stop."""
        self.drain(timeout_s)
        with self._wake:
            self._closing = True
            self._wake.notify_all()
        self._thread.join(1.0)

    # -- the worker's thread

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._queue and not self._closing:
                    self._wake.wait()
                if not self._queue:
                    return
                job = self._take_newest()
                self._busy = True
                self._interrupt.clear()
            try:
                self._answer(job)
            except VoiceBridgeError as exc:
                logger.warning("reply not stored", turn=job.turn.seq, reason=exc.safe_message)
            except Exception:
                logger.exception("reply failed")
            finally:
                with self._wake:
                    self._busy = False
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

    def _answer(self, job: _Job) -> None:
        turn = job.turn
        started = self._clock.monotonic()
        deadline = started + self._settings.responder_timeout_ms / 1000
        self._replies.begin(self.contact_id, turn.seq)
        request = TurnRequest(
            contact_id=self.contact_id,
            turn_index=turn.seq,
            transcript=job.transcript,
            history=self._replies.history(self.contact_id)[-self._settings.history_turns :]
            if self._settings.history_turns
            else (),
            attributes=dict(self._attributes),
            language=self._settings.sonic_default_language,
            spoken_prefix=job.spoken_prefix,
        )
        splitter = SentenceSplitter()
        index = job.first_segment
        spoken: list[str] = [job.spoken_prefix] if job.spoken_prefix else []
        action, attributes = Action.CONTINUE, {}
        try:
            reply = self._responder.respond(request, deadline=deadline)
            for delta in reply.text():
                if self._abandoned.is_set():
                    return
                for sentence in splitter.feed(delta):
                    if index == job.first_segment:
                        first_sentence_ms = self._since(started)
                        self._report("ResponderFirstSentence", MetricUnit.Milliseconds, first_sentence_ms)
                        index = self._store(turn, index, sentence, responder_ms=first_sentence_ms)
                    else:
                        index = self._store(turn, index, sentence)
                    spoken.append(sentence)
                    if self._interrupt.is_set():
                        logger.info("reply cut short: the caller spoke again", turn=turn.seq, segments=index)
                        break
                else:
                    continue
                break
            else:
                for sentence in splitter.flush():
                    responder_ms = self._since(started) if index == job.first_segment else None
                    index = self._store(turn, index, sentence, responder_ms=responder_ms)
                    spoken.append(sentence)
                action, attributes = reply.action, dict(reply.attributes)
        except ResponderError as exc:
            self._report("ResponderErrors", MetricUnit.Count, 1)
            logger.warning("responder failed", responder=self._responder.name, turn=turn.seq, reason=exc.safe_message)
            if index == job.first_segment:
                index = self._store(turn, index, self._settings.apology_text)
                spoken.append(self._settings.apology_text)
        if self._abandoned.is_set():
            return
        attributes = _bounded(attributes)
        self._attributes.update(attributes)
        self._replies.finish(self.contact_id, turn.seq, index, action, attributes)
        self._replies.record_exchange(
            self.contact_id, Exchange(job.transcript, " ".join(spoken)), keep=self._settings.history_turns
        )
        self.replies_made += 1
        logger.info("reply stored", turn=turn.seq, segments=index, action=action.value, ms=round(self._since(started)))

    def _store(self, turn: Turn, index: int, sentence: str, *, responder_ms: float | None = None) -> int:
        """Speak and store one sentence as segment ``index``; the next index. The segment keeps how its time was
        spent (the responder's, the model's, the caller's stop), for the report and the metrics."""
        if self._abandoned.is_set():
            return index
        budget_s = min(self._settings.sonic_deadline_ms / 1000, 8.0)
        uri: str | None
        timings: dict[str, float] = {"TurnEndedAt": float(turn.ended_at_ms)}
        if turn.latency_ms is not None:
            timings["CallerStoppedAt"] = float(turn.ended_at_ms - turn.latency_ms)
        if responder_ms is not None:
            timings["ResponderMs"] = round(responder_ms, 1)
        try:
            spoken = self._speak(sentence, self._clock.monotonic() + budget_s)
            uri = spoken.uri
            if spoken.synthesis_ms is not None:
                timings["SynthesisMs"] = round(spoken.synthesis_ms, 1)
        except ModelUnavailable as exc:
            logger.warning("sentence left to Connect's voice", turn=turn.seq, segment=index, reason=exc.safe_message)
            uri = None
        ready_ms = int(self._clock.time() * 1000)
        stored = self._replies.put_segment(
            Segment(
                self.contact_id,
                turn.seq,
                index,
                sentence,
                uri,
                transcript=turn.transcript,
                ready_at_ms=ready_ms,
                timings=timings,
            )
        )
        if stored and index == 0 and turn.latency_ms is not None:
            # From the end of the caller's voice (Connect's clock) to the first prompt in S3.
            caller_stopped_ms = turn.ended_at_ms - turn.latency_ms
            self._report("ReplyFirstPromptReady", MetricUnit.Milliseconds, max(0.0, ready_ms - caller_stopped_ms))
        return index + 1

    def _since(self, started: float) -> float:
        return (self._clock.monotonic() - started) * 1000


MAX_ATTRIBUTES_BYTES = 8 * 1024
"""What a reply's attributes may weigh: they reach the flow in ConverseFunction's answer, which Connect caps at
32 KB, next to a sentence and a transcript."""


def _bounded(attributes: dict[str, str]) -> dict[str, str]:
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
