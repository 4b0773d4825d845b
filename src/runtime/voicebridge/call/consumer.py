"""TranscribeStream's domain: one contact's media stream, read to its end across as many invocations as it takes.

Each invocation owns the contact for one *generation* (recorded in the checkpoint item). It:

1. takes ownership: its generation is the checkpoint's, or the predecessor that invoked it is about to save it
   (it waits for that save, and takes over if the predecessor died before it);
2. reads GetMedia from where the caller's audio, or the settled position, begins — by producer timestamp for the
   first read (Connect's ``StartTimestamp``), else after the fragment *before* the one needed — so no audio is lost
   whether ``FRAGMENT_NUMBER`` is exclusive (AWS's StartSelector reference) or not (the member's own wording);
3. parses the Matroska stream incrementally and hands each frame of this contact, placed by (fragment, offset), to
   the track's :class:`~voicebridge.ink.transcriber.TrackTranscriber` the moment it may
   (:mod:`voicebridge.kvs.fragments` decides whose audio a fragment is);
4. on a dropped connection, a limit or an error tag, reconnects — with the continuation token of the last complete
   fragment, else after the predecessor of the fragment in progress — with bounded, jittered back-off, recording
   ``retrying`` in the checkpoint while it cannot read, for as long as ``LISTEN_RETRY_LIMIT_MS`` allows; it stops
   when the stream has ended (no new audio for the read timeout plus a second: streaming stopped or the call
   ended), when the stream carries another contact, or on a configuration error, recording why;
5. beats its heart in the checkpoint every few seconds, so a dead consumer can be told from a live one;
6. when the Lambda's time is short, waits for a quiet moment (nothing unsettled), invokes its successor, and only
   once that invocation is accepted hands the checkpoint over to it: the next invocation continues exactly there;
7. when listening ends (not at a hand-over), writes the contact's call record (:mod:`voicebridge.call.record`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.backoff import Backoff
from voicebridge.call.backchannel import AgentVoice, holding_back
from voicebridge.call.heartbeat import Heartbeat
from voicebridge.call.record import CallRecorder, caller_went_on
from voicebridge.call.speaking import SpeakingMarks
from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.config import InkCatchUp
from voicebridge.converse.making import ReplyInProgress
from voicebridge.converse.sentences import heard_share
from voicebridge.converse.worker import ReplyWorker
from voicebridge.errors import ConfigurationError, MediaInterrupted, MediaStalled, Superseded, VoiceBridgeError
from voicebridge.ink.listening import ListeningSettings
from voicebridge.ink.pacer import CATCH_UP_AFTER_MS, Pacer
from voicebridge.ink.session import InkSession, TurnListener
from voicebridge.ink.transcriber import MetricSink, SessionFactory, TrackTranscriber
from voicebridge.kvs.fragments import (
    Audio,
    ContactChanged,
    FragmentHistory,
    FragmentRouter,
    Lag,
    StreamErrorTag,
    TagProblem,
)
from voicebridge.kvs.media import MediaSource, StartSelector
from voicebridge.kvs.mkv import MatroskaReader
from voicebridge.language import Listening
from voicebridge.store.replies import ReplyStore
from voicebridge.store.turns import (
    AGENT,
    CUSTOMER,
    LEASE_MS,
    LISTENING,
    RETRYING,
    STOPPED,
    Checkpoint,
    TrackProgress,
    TurnStore,
)
from voicebridge.telemetry import logger, metrics

TRACKS = {"AUDIO_FROM_CUSTOMER": CUSTOMER, "Track_audio/L16": CUSTOMER, "AUDIO_TO_CUSTOMER": AGENT}
START_MARGIN_MS = 5000
"""The first read starts this much before Connect's StartTimestamp: whichever clock the timestamp is on, the chunk
holding the start fragment is then included (earlier fragments are skipped by number)."""
REPLY_FINISH_S = 10.0
"""How long a reply in progress is waited for at a hand-over or at the end of the stream."""
HANDOFF_FLOOR_MS = 5000
"""Below this much remaining time a hand-over that keeps failing is given up, and the reason recorded."""
STREAM_ENDED = "stream ended"
"""Why listening stopped when Connect stopped streaming: the caller hung up, or the flow stopped it."""
HOLD_MARGIN_MS = 1000
"""A reply whose first sentence was made this close to ``CONVERSE_HOLD_AFTER_MS`` after its turn ended may have had
the holding line played before it: the agent's track is not read for what of it was heard."""


@dataclass(frozen=True, slots=True)
class ConsumerSettings(ListeningSettings):
    """What the consumer reads of the settings (:meth:`of`, which the container calls): how it listens, as the
    streaming transport does, and how it reads the stream and hands over."""

    ink_catch_up: InkCatchUp
    kvs_read_timeout_ms: int
    listen_retry_limit_ms: int
    consumer_handoff_ms: int
    converse_backchannel_ms: int
    converse_hold_after_ms: int


@dataclass
class Outcome:
    """How an invocation ended."""

    reason: str
    handed_off_to: int | None = None
    audio_seconds: float = 0.0
    turns: int = 0
    reconnects: int = 0


class _Stop(Exception):
    """Reading is over for this invocation."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.reason)
        self.outcome = outcome


class KeytermSessionFactory(Protocol):
    """Opens an Ink session for a track (``container.ink_session``): with the flow's keyterms when given, on the
    endpoint and model the contact's language is listened with."""

    def __call__(
        self,
        listener: TurnListener,
        name: str,
        keyterms: tuple[str, ...] | None = None,
        listening: Listening | None = None,
    ) -> InkSession: ...


class StreamConsumer:
    """Reads one contact's stream for one invocation."""

    def __init__(
        self,
        settings: ConsumerSettings,
        store: TurnStore,
        *,
        contact_id: str,
        generation: int,
        open_session: KeytermSessionFactory,
        continue_with: Callable[[dict[str, Any]], None],
        remaining_ms: Callable[[], int],
        media: Callable[[str], MediaSource],
        clock: Clock = SYSTEM_CLOCK,
        replier: Callable[[Checkpoint, MetricSink], ReplyWorker] | None = None,
        recorder: Callable[[], CallRecorder] | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self.contact_id = contact_id
        self.generation = generation
        self._open_session = open_session
        self._continue_with = continue_with
        self._remaining_ms = remaining_ms
        self._media = media
        self._clock = clock
        self._make_replier = replier
        self._recorder = recorder
        self._replier: ReplyWorker | None = None
        self._sink = MetricSink(threading.Lock())
        self._transcribers: dict[str, TrackTranscriber] = {}
        self._stop = threading.Event()
        self._superseded = threading.Event()
        self._refusal: ConfigurationError | None = None
        """What the keep-alive thread learnt no session can cure (Ink refused the model): the read stops on it."""
        self._media_reconnects = 0
        self._state = LISTENING
        self._state_reason = ""
        self._history = FragmentHistory()
        self._media_backoff = Backoff(base_s=0.1, cap_s=5.0, stable_s=2.0)
        self._handoff_backoff = Backoff(base_s=0.5, cap_s=4.0)
        self._next_handoff_at = 0.0
        self._speaking = SpeakingMarks(store, contact_id, generation, clock=clock)
        self._agent_voice: AgentVoice | None = None
        """What the caller heard of the agent, when the flow converses: a short turn said over it is a backchannel."""
        self._played_until: dict[int, float] = {}
        """For a turn the caller began over a reply: when the prompt playing then ended (Connect's clock), before
        which the reply to that turn cannot have begun to play."""
        self._played_lock = threading.Lock()

    # -- lifecycle

    def run(self) -> Outcome:
        """Read until the stream ends, the contact changes or the time is short; never leaves a false state."""
        checkpoint = take_ownership(self._store, self.contact_id, self.generation, self._clock)
        if checkpoint is None:
            return Outcome("superseded")
        checkpoint.invocations += 1
        self._history = FragmentHistory(ours_up_to=_latest_settled(checkpoint))
        ticker = Heartbeat(
            checkpoint,
            self._store,
            lambda: list(self._transcribers.values()),
            frame_ms=self._settings.ink_frame_ms,
            stop=self._stop,
            superseded=self._superseded,
            state=lambda: (self._state, self._state_reason),
            sink=self._sink,
            clock=self._clock,
            refused=self._refuse,
        )
        try:
            self._start_replying(checkpoint)
        except VoiceBridgeError as exc:
            # A responder that cannot be built (a missing setting, an unreadable rules file) stops listening with
            # the reason, which the flow then hears from ConverseFunction.
            self._end(checkpoint, f"{exc.code}: {exc.safe_message}", ticker)
            raise
        try:
            listening = self._settings.languages.listening(checkpoint.language)
        except VoiceBridgeError as exc:
            # StartListening checked the language: only a deployment changed since then can refuse it here.
            self._end(checkpoint, f"{exc.code}: {exc.safe_message}", ticker)
            raise
        sessions = self._sessions(checkpoint.keyterms, listening)
        self._transcribers = {
            track: self._transcriber(track, p, sessions, listening) for track, p in checkpoint.tracks.items()
        }
        self._add("ActiveStreams", MetricUnit.Count, 1)
        try:
            self._store.heartbeat(checkpoint, LISTENING)
            ticker.start()
            outcome = self._read(checkpoint)
        except Superseded:
            outcome = Outcome("superseded")
        except VoiceBridgeError as exc:
            outcome = Outcome(f"{exc.code}: {exc.safe_message}")
            self._end(checkpoint, outcome.reason, ticker)
            raise
        except Exception:
            self._end(checkpoint, "internal error (see the consumer's log)", ticker)
            raise
        if outcome.reason not in ("handoff", "superseded"):
            self._end(checkpoint, outcome.reason, ticker)
        else:
            self._stop_ticker(ticker)
        outcome.audio_seconds = sum(t.audio_bytes_sent for t in self._transcribers.values()) / 16000
        outcome.turns = sum(t.turns_stored for t in self._transcribers.values())
        outcome.reconnects = self._media_reconnects
        self._add("AudioSecondsStreamed", MetricUnit.Seconds, outcome.audio_seconds)
        self._flush_metrics()
        return outcome

    def _sessions(self, keyterms: tuple[str, ...] | None, listening: Listening) -> SessionFactory:
        """Ink sessions for the contact's language, with the flow's keyterms when it passed some (else the
        factory's, the deployment's)."""
        factory = self._open_session

        def open_session(listener: TurnListener, name: str) -> InkSession:
            return factory(listener, name, keyterms, listening)

        return open_session

    def _transcriber(
        self, track: str, progress: TrackProgress, sessions: SessionFactory, listening: Listening
    ) -> TrackTranscriber:
        # The caller's turns are answered, and whether the caller is mid-turn is what the long polls are told.
        replier = self._replier if track == CUSTOMER else None
        agent_voice = self._agent_voice if track == CUSTOMER else None
        return TrackTranscriber(
            contact_id=self.contact_id,
            track=track,
            progress=progress,
            store=self._store,
            open_session=sessions,
            sink=self._sink,
            # Only the caller's turns are answered: the agent's track needs no end-of-turn model.
            **self._settings.transcribing(listening, answered=track == CUSTOMER),
            clock=self._clock,
            pacer=Pacer(catch_up_after_ms=CATCH_UP_AFTER_MS if self._settings.ink_catch_up != "off" else math.inf),
            on_turn=replier.submit if replier else None,
            on_eager_end=replier.eager_end if replier else None,
            on_resume=replier.turn_resumed if replier else None,
            on_turn_ended=replier.turn_ended if replier else None,
            on_speaking=self._speaking.update if track == CUSTOMER else None,
            talked_over=self._backchannel if agent_voice else None,
            paused_over=agent_voice.began_over if agent_voice else None,
            on_paused=self._speaking.pause if agent_voice else None,
        )

    def _backchannel(self, start_ms: float, end_ms: float) -> bool:
        """Whether the caller's voice from ``start_ms`` to ``end_ms`` (Connect's clock) was said over the agent, who
        went on (:mod:`voicebridge.call.backchannel`)."""
        assert self._agent_voice is not None
        return self._agent_voice.went_on_over(start_ms, end_ms, more_to_say=self._reply_goes_on)

    def _reply_goes_on(self) -> bool:
        """The reply being said has more to say: still being made, or a sentence of it held back over the caller."""
        if self._replier is not None and self._replier.making:
            return True
        try:
            status = ReplyStore(self._store).status(self.contact_id)
        except VoiceBridgeError as exc:
            logger.warning("could not read whether the reply goes on; the turn is answered", reason=exc.safe_message)
            return False
        return holding_back(status)

    def _start_replying(self, checkpoint: Checkpoint) -> None:
        """When the flow converses, the worker that answers the caller's turns (finishing a reply left unfinished)."""
        if checkpoint.converse and self._make_replier is not None:
            # ConverseFunction learns whether the caller speaks from the reply status it reads anyway.
            self._speaking.replies = ReplyStore(self._store)
            self._replier = self._make_replier(checkpoint, self._sink)
            self._agent_voice = AgentVoice(backchannel_ms=self._settings.converse_backchannel_ms)
            self._replier.hear_from(self._heard_of)
            self._replier.resume_unfinished(self._store)

    def _heard_of(self, earlier: ReplyInProgress, reply: ReplyInProgress) -> int | None:
        """How many of ``earlier``'s prompts the caller had begun to hear when they began the turn ``reply`` answers,
        as the agent's track shows (:meth:`AgentVoice.heard_through`); None when it does not tell."""
        caller, found = self._transcribers.get(CUSTOMER), self._prompts_of(earlier)
        answering = None if caller is None else caller.voice_of(reply.seq)
        if found is None or answering is None or self._agent_voice is None:
            return None
        durations, after_ms = found
        heard = self._agent_voice.heard_through(
            durations, after_ms=after_ms, began_ms=answering[0], ended_ms=answering[1]
        )
        if heard is None:
            return None
        count, until_ms = heard
        with self._played_lock:
            self._played_until = {seq: ms for seq, ms in self._played_until.items() if seq >= earlier.seq}
            self._played_until[reply.seq] = until_ms
        return count

    def _prompts_of(self, reply: ReplyInProgress) -> tuple[list[int | None], float] | None:
        """``reply``'s prompts' lengths, and from when its first played (Connect's clock): once the caller's voice in
        the turn it answers had ended, and once the prompt that turn was begun over had (kept from reading the
        track for that turn). None when not known, or a holding line may have played before its first prompt (its
        first sentence was made late)."""
        caller = self._transcribers.get(CUSTOMER)
        if caller is None or reply.turn is None or not reply.made:
            return None
        asked = caller.voice_of(reply.seq)
        if asked is None or asked[1] is None:
            return None
        late_ms = reply.made[0].ready_at_ms - reply.turn.ended_at_ms
        if late_ms >= self._settings.converse_hold_after_ms - HOLD_MARGIN_MS:
            return None
        with self._played_lock:
            after_ms = max(asked[1], self._played_until.get(reply.seq, asked[1]))
        return [made.duration_ms for made in reply.made], after_ms

    def _note_cut_off(self) -> None:
        """The stream ended (the caller hung up; or the flow stopped streaming, after its last prompt): the latest
        reply, if the agent's track shows it cut off there or never played to its end, is kept on its turn as heard
        only so far — its prompts begun, the words of the last in proportion to how much of it played — for the call
        record (one write, then only)."""
        reply = None if self._replier is None else self._replier.said_last
        found = None if reply is None or reply.heard is not None else self._prompts_of(reply)
        if reply is None or found is None or self._agent_voice is None:
            return
        played = self._agent_voice.played(found[0], after_ms=found[1])
        if played is None:
            return
        count, share = played
        sentences = reply.spoken
        if count == len(sentences) and share >= 1.0:
            return
        heard = sentences[: max(0, count - 1)]
        if count:
            heard.append(heard_share(sentences[count - 1], share)[0])
        try:
            ReplyStore(self._store).note_heard(self.contact_id, reply.seq, " ".join(w for w in heard if w))
        except VoiceBridgeError as exc:
            logger.warning("what the caller heard of the last reply was not kept", reason=exc.safe_message)
        logger.info("the call ended in a reply", turn=reply.seq, prompts_begun=count, of=len(sentences))

    def _end(self, checkpoint: Checkpoint, reason: str, ticker: Heartbeat) -> None:
        """Close the sessions (letting a turn in progress finish) and record why listening stopped."""
        self._stop_ticker(ticker)
        for transcriber in self._transcribers.values():
            transcriber.close()
        if self._replier is not None:
            # The caller's last turn deserves its answer even though listening is over (the flow may still play it).
            self._replier.close(timeout_s=REPLY_FINISH_S)
            if reason == STREAM_ENDED:
                try:
                    self._note_cut_off()
                except Exception:
                    # It refines the record; the record and the checkpoint are written whatever it does.
                    logger.exception("what the caller heard of the last reply was not read")
        self._speaking.close(timeout_s=1.0)
        record_settled(checkpoint, self._transcribers, self._history)
        checkpoint.state, checkpoint.stop_reason, checkpoint.speaking_since_ms = STOPPED, reason[:240], 0
        try:
            self._store.save(checkpoint)
        except Superseded:
            logger.info("checkpoint owned by a newer consumer; not marking stopped")
            return
        except VoiceBridgeError as exc:
            logger.warning("could not record the end of listening", reason=exc.safe_message)
        logger.info("listening stopped", reason=reason)
        if self._recorder is not None:
            write_record(self._recorder, self.contact_id, checkpoint.generation, self._sink)

    def _refuse(self, error: ConfigurationError) -> None:
        self._refusal = error

    def _stop_ticker(self, ticker: Heartbeat) -> None:
        self._stop.set()
        ticker.join(2.0)

    # -- reading

    def _read(self, checkpoint: Checkpoint) -> Outcome:
        source = self._media(checkpoint.stream_arn)
        initial = initial_selector(checkpoint)
        idle_since: float | None = None
        failing_since: float | None = None
        while True:
            if self._refusal is not None:
                raise self._refusal
            router = FragmentRouter(
                self.contact_id, start_fragment=checkpoint.start_fragment, tracks=TRACKS, history=self._history
            )
            selector = router.resume_selector() or initial
            progressed = connected = False
            try:
                for delivered in self._consume(source, selector, router, checkpoint):
                    connected = True
                    progressed |= delivered
                    if delivered:
                        idle_since = failing_since = None
                        self._media_backoff.success(self._clock.monotonic())
                        self._set_state(checkpoint, LISTENING)
                connected, reason = True, "payload ended"
            except _Stop as stop:
                return stop.outcome
            except MediaStalled as exc:
                connected, reason = True, exc.safe_message
            except MediaInterrupted as exc:
                reason = exc.safe_message
            now = self._clock.monotonic()
            if connected and not progressed and any(t.behind_ms > 0 for t in self._transcribers.values()):
                # What was read is still going to Ink at its pace: the stream's quiet is measured after that.
                idle_since = None
            elif connected and not progressed:
                idle_since = idle_since or now
                # Connect stopped streaming, or the call ended: nothing new arrives any more.
                if now - idle_since > self._settings.kvs_read_timeout_ms / 1000 + 1:
                    return Outcome(STREAM_ENDED)
            elif not connected:
                failing_since = failing_since or now
                self._set_state(checkpoint, RETRYING, reason)
                limit_ms = self._settings.listen_retry_limit_ms
                if (now - failing_since) * 1000 > limit_ms:
                    return Outcome(f"media unavailable for {limit_ms // 1000} s: {reason}")
            outcome = self._maybe_hand_off(checkpoint)
            if outcome is not None:
                return outcome
            self._media_reconnects += 1
            delay = 0.0 if progressed else self._media_backoff.failure(now)
            logger.info(
                "media resumed",
                reason=reason,
                selector=str(router.resume_selector() or initial),
                delay_s=round(delay, 3),
            )
            self._add("MediaReconnects", MetricUnit.Count, 1)
            self._clock.sleep(delay)

    def _consume(
        self, source: MediaSource, selector: StartSelector, router: FragmentRouter, checkpoint: Checkpoint
    ) -> Iterator[bool]:
        """Yield, after each chunk read, whether it delivered new audio; raise _Stop to end the invocation."""
        reader = MatroskaReader()
        try:
            for chunk in source.read(selector):
                delivered = False
                for event in reader.feed(chunk):
                    for action in router.feed(event):
                        delivered |= _deliver(action, self._transcribers, self._sink, self._agent_voice)
                yield delivered
                if self._refusal is not None:
                    raise self._refusal
                if self._superseded.is_set():
                    raise _Stop(Outcome("superseded"))
                outcome = self._maybe_hand_off(checkpoint)
                if outcome is not None:
                    raise _Stop(outcome)
        finally:
            router.end()

    def _set_state(self, checkpoint: Checkpoint, state: str, reason: str = "") -> None:
        if (state, reason) == (self._state, self._state_reason):
            return
        self._state, self._state_reason = state, reason
        try:
            self._store.heartbeat(checkpoint, state, reason)
        except Superseded:
            self._superseded.set()
        except VoiceBridgeError as exc:
            logger.warning("could not record the consumer's state", state=state, reason=exc.safe_message)

    # -- hand-over

    def _maybe_hand_off(self, checkpoint: Checkpoint) -> Outcome | None:
        remaining = self._remaining_ms()
        if remaining > self._settings.consumer_handoff_ms or self._clock.monotonic() < self._next_handoff_at:
            return None
        quiet = all(t.quiet for t in self._transcribers.values())
        if not quiet and all(t.settling for t in self._transcribers.values()):
            # Silence with nothing pending: stop reading (KVS keeps the audio) until Ink has caught up.
            until = self._clock.monotonic() + 1.0
            while not quiet and self._clock.monotonic() < until:
                self._clock.sleep(0.05)
                quiet = all(t.quiet for t in self._transcribers.values())
        # Prefer a quiet moment (nothing to replay); past half the margin, hand over regardless.
        if not quiet and remaining > self._settings.consumer_handoff_ms / 2:
            return None
        successor = self.generation + 1
        try:
            self._continue_with({"ContactId": self.contact_id, "Generation": successor})
        except Exception as exc:
            if remaining < HANDOFF_FLOOR_MS:
                return Outcome(f"hand-over failed ({type(exc).__name__})")
            delay = self._handoff_backoff.failure(self._clock.monotonic())
            self._next_handoff_at = self._clock.monotonic() + delay
            logger.warning("the next invocation was refused; trying again", reason=type(exc).__name__, delay_s=delay)
            return None
        # Turns are read in order: every turn of this invocation must be in the table before the successor's.
        budget_s = max(0.0, (remaining - HANDOFF_FLOOR_MS) / 1000)
        for transcriber in self._transcribers.values():
            if not transcriber.drain_writes(budget_s):
                logger.error("turn writes still pending at the hand-over", track=transcriber.track)
        if self._replier is not None and not self._replier.drain(min(budget_s, REPLY_FINISH_S)):
            # The successor finishes it, after what is already stored: nothing is said twice.
            logger.info("reply unfinished at the hand-over; the next invocation finishes it")
            self._replier.abandon()
        # Only now that the successor was accepted does the checkpoint name it: it waits for this save.
        self._stop.set()
        record_settled(checkpoint, self._transcribers, self._history)
        # A turn open at the hand-over stays open for the long polls; the successor's Ink session ends it.
        checkpoint.speaking_since_ms = self._speaking.since_ms
        self._store.save(checkpoint, new_generation=successor)
        self._speaking.close(timeout_s=0)
        for transcriber in self._transcribers.values():
            transcriber.close(flush_ms=0, timeout_s=0.5)
        if self._replier is not None:
            self._replier.close(timeout_s=0)
        logger.info("handed over to the next invocation", generation=successor, quiet=quiet, remaining_ms=remaining)
        return Outcome("handoff", handed_off_to=successor)

    def _add(self, name: str, unit: MetricUnit, value: float) -> None:
        self._sink.add(name, unit, value)

    def _flush_metrics(self) -> None:
        with self._sink.lock:
            metrics.flush_metrics()


def write_record(recorder: Callable[[], CallRecorder], contact_id: str, generation: int, sink: MetricSink) -> None:
    """Write the contact's call record now that listening has ended; a failure is logged and counted
    (``CallRecordErrors``), never raised: the lease's end lets another writer try."""
    try:
        written = recorder().write(contact_id, generation=generation)
    except VoiceBridgeError as exc:
        logger.error("call record not written", error_code=exc.code, reason=exc.safe_message)
        sink.add("CallRecordErrors", MetricUnit.Count, 1)
        return
    except Exception:
        logger.exception("call record failed")
        sink.add("CallRecordErrors", MetricUnit.Count, 1)
        return
    logger.info("call record", outcome=written.outcome, uri=written.uri)
    if written.record is not None:
        for went_on in caller_went_on(written.record):
            sink.add("CallerWentOn", MetricUnit.Count, int(went_on))


def _deliver(
    action: Any, transcribers: Mapping[str, TrackTranscriber], sink: MetricSink, agent_voice: AgentVoice | None = None
) -> bool:
    """Do what one of the router's actions asks; whether it delivered new audio. _Stop or MediaInterrupted end the
    read."""
    if isinstance(action, Audio):
        if agent_voice is not None and action.track == AGENT:
            agent_voice.feed(action.pcm, action.produced_end_ms)
        transcriber = transcribers.get(action.track)
        if transcriber is None:
            return False
        return transcriber.audio(action.fragment, action.offset, action.pcm, action.produced_end_ms)
    if isinstance(action, ContactChanged):
        logger.info("stream now carries another contact; stopping", other_contact=action.other)
        raise _Stop(Outcome("contact changed"))
    if isinstance(action, Lag):
        sink.add("KvsLag", MetricUnit.Milliseconds, action.ms)
    elif isinstance(action, StreamErrorTag):
        logger.warning("error in the media stream", error_code=action.code, error_id=action.error_id)
        raise MediaInterrupted(f"stream error {action.code}")
    elif isinstance(action, TagProblem):
        logger.warning("unreadable tag in the media stream", tag=action.tag, value=action.value)
    return False


def _latest_settled(checkpoint: Checkpoint) -> str | None:
    """The highest fragment any track has settled audio in: this contact's for certain."""
    numbers = [p.fragment for p in checkpoint.tracks.values() if p.fragment and p.fragment.isdigit()]
    return max(numbers, key=int) if numbers else None


def record_settled(
    checkpoint: Checkpoint, transcribers: Mapping[str, TrackTranscriber], history: FragmentHistory
) -> None:
    """Put each track's settled position in the checkpoint, with where GetMedia must resume for it."""
    for track, transcriber in transcribers.items():
        settled = transcriber.settled
        known = history.locate(settled.fragment) if settled.fragment else None
        previous = checkpoint.tracks.get(track)
        progress = TrackProgress(settled.fragment, settled.offset, settled.stream_bytes, settled.next_seq)
        if known is not None:
            progress.previous, progress.fragment_ms = known.previous, known.producer_ms
        elif previous is not None and previous.fragment == settled.fragment:
            progress.previous, progress.fragment_ms = previous.previous, previous.fragment_ms
        checkpoint.tracks[track] = progress


def initial_selector(checkpoint: Checkpoint) -> StartSelector:
    """Where an invocation's first read starts: the settled position, else where the caller's audio began."""
    needed = checkpoint.earliest_needed()
    if needed is not None and needed.fragment is not None:
        if needed.previous:
            return StartSelector.after_fragment(needed.previous)
        if needed.fragment_ms is not None:
            return StartSelector.producer_time(needed.fragment_ms)
    if checkpoint.start_timestamp_ms is not None:
        return StartSelector.producer_time(checkpoint.start_timestamp_ms - START_MARGIN_MS)
    logger.warning("no start timestamp: the first fragment may be skipped if FRAGMENT_NUMBER is exclusive")
    return StartSelector.after_fragment(checkpoint.start_fragment)


def take_ownership(store: TurnStore, contact_id: str, generation: int, clock: Clock) -> Checkpoint | None:
    """The contact's checkpoint, once ``generation`` owns it; None when another generation does."""
    checkpoint = store.load(contact_id)
    if checkpoint is None:
        raise ConfigurationError(f"contact {contact_id} has no listening session")
    if checkpoint.generation == generation - 1 and checkpoint.state != STOPPED:
        checkpoint = _await_predecessor(store, checkpoint, generation, clock)
    if checkpoint is None or checkpoint.generation != generation or checkpoint.state == STOPPED:
        owner = None if checkpoint is None else checkpoint.generation
        logger.info("not the owner of this contact; exiting", owner=owner, mine=generation)
        return None
    return checkpoint


def _await_predecessor(store: TurnStore, checkpoint: Checkpoint, generation: int, clock: Clock) -> Checkpoint | None:
    """The predecessor invoked ``generation`` and saves the hand-over next; if it dies first, take over."""
    deadline = clock.monotonic() + LEASE_MS / 1000 + 2
    while clock.monotonic() < deadline:
        clock.sleep(0.1)
        latest = store.load(checkpoint.contact_id)
        if latest is None or latest.generation != generation - 1 or latest.state == STOPPED:
            return latest
        if not latest.alive(store.now_ms()):
            logger.warning("the predecessor died before handing over; taking over", predecessor=latest.generation)
            store.save(latest, new_generation=generation)
            return latest
    return None
