"""One track of a call, transcribed turn by turn with no audio lost and no turn stored twice.

The transcriber sits between the KVS reader and an :class:`~voicebridge.ink.session.InkSession`.

- **Positions** are kept by a :class:`~voicebridge.ink.ledger.PositionLedger`: what has been sent, what is settled
  (belongs to finished turns or to silence), and what a new session replays. Audio seen again (a GetMedia reconnect,
  a continuation that starts at an earlier fragment) is recognised by its position and skipped: Ink receives each
  byte once.
- **Settling.** A finished turn settles the audio up to the end of its utterance (found in the PCM), so a replay
  never repeats a finished turn. Silence settles too, once no turn is open and Ink has had ``ack_ms`` to react to it
  (Ink starts a turn a little after the caller does). Everything between ``settled`` and ``sent`` stays in the replay
  buffer.
- **Dropped sockets.** After a failure the next frame opens a new session and replays the unsettled audio first, so
  a turn in progress is transcribed whole. Reopening backs off (bounded, jittered), and a session lost right after
  it opened does not reset the back-off, so a failing Ink is not hammered (:class:`SessionOpener`).
- **Pace.** Everything goes through a :class:`~voicebridge.ink.pacer.Pacer`: Ink accepts at most one second of audio
  per second, so a replay or a backlog is paced, and catches up with live by dropping long silences.
- **Turns.** Each finished turn takes the track's next sequence number and is written with a conditional put: a
  replay or a continuation can reproduce a turn, never store it twice (:class:`TurnRecorder`).
- **Eager ends.** Ink's ``turn.eager_end`` (the caller may be done) and ``turn.resume`` (they were not) are passed on
  with the sequence number the turn will take if it ends, so a reply can be started on the words so far; nothing is
  stored or settled for them. A finished turn is passed on once as it ends (``on_turn_ended``, so a reply made for its
  words can be named while it is being stored) and once stored (``on_turn``, never for a replay).
- **Backchannels.** A turn whose voice was short and said over the agent, who went on ("uh-huh": the transport judges,
  ``talked_over``), and whose words only acknowledge (not "stop"), is stored marked as one and passed on as it ends
  (a reply started on its words is dropped), but never as stored: it is kept in the call's record and not answered.
- **Pauses.** Given ``paused_over`` (the flows path), a turn's voice that stopped after being short and said over
  the agent, whose words from Ink so far (through its end) only acknowledge, is marked paused (``on_paused``) while
  Ink has yet to end the turn: the flow's next sentence need not wait for that end, a second or so after an "uh-huh"
  that outlasted a prompt. Voice after it takes the mark back; the turn's end clears it.
- **Our own end of turn.** Given an ``end_of_turn`` watch, each time the voice detector sees the caller stop, Smart Turn
  (:class:`~voicebridge.audio.end_of_turn.TurnEndWatch`) judges whether they are done. "Complete" is, on Ink's turns
  endpoint, an eager end of our own with Ink's words so far (``turn.update``), usually before Ink's. The words must
  be Ink's answer to audio that reached past the stop: words from before it lack the last of what was said, and a
  reply started on them is cancelled when Ink's words come (spending one of the turn's speculative attempts), so a
  verdict that comes first waits for the next ``turn.update``, and is dropped if Ink's own ``turn.eager_end`` (with
  its final words for the audio so far) comes first. Ink's
  ``turn.end`` stays the authority, the caller speaking again after it is a resume, as Ink's ``turn.resume`` is, and
  whether the two agreed is counted (``EndOfTurnAgreed``,
  ``EndOfTurnDisagreed``). In manual mode, which has no turn events, with ``model_ends_turns`` "complete" ends the
  turn once the caller has stayed quiet ``model_end_quiet_ms`` after the stop it judged (a pause mid-sentence
  shorter than that is not cut off: ending a turn cannot be taken back, unlike an eager end), and
  ``manual_end_silence_ms`` of silence ends a turn whatever the model said: both are the language's
  :class:`~voicebridge.language.TurnEndPolicy`.
- **Keep-alive.** When the source stalls, silence keeps the session alive and lets a turn in progress end (Ink ends
  a turn only while audio flows); that silence is not part of the positions.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypedDict

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.acknowledgements import only_acknowledges
from voicebridge.audio.end_of_turn import TurnEndWatch, Verdict
from voicebridge.audio.vad import BYTES_PER_MS, DetectorName, FrameDetector, Utterance, VoiceActivity, detector
from voicebridge.backoff import Backoff
from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.errors import InkUnavailable
from voicebridge.ink.ledger import PositionLedger
from voicebridge.ink.pacer import FINALIZE, Pacer
from voicebridge.ink.session import InkSession, TurnListener
from voicebridge.language import Listening, TurnEndBy
from voicebridge.store.turns import TrackProgress, Turn, TurnStore
from voicebridge.store.writer import TurnWriter, Written
from voicebridge.telemetry import logger, metrics

SessionFactory = Callable[[TurnListener, str], InkSession]

MAX_REPLAY_BYTES = 120_000 * BYTES_PER_MS
"""Unsettled audio kept for a replay: two minutes of one uninterrupted utterance."""


MarkKind = Literal["speaking", "paused"]
"""A mark the transcriber tells the transport: the caller began or ended a turn, or its short voice paused."""

VOICES_KEPT = 8
"""How many ended turns' voices are kept (:meth:`TrackTranscriber.voice_of`): replies are made for the latest."""


class TurnEnding(TypedDict):
    """What a :class:`TrackTranscriber` is given to end (or eagerly end) a track's turns."""

    end_of_turn: TurnEndWatch | None
    model_ends_turns: bool
    manual_end_silence_ms: int
    model_end_quiet_ms: int


def turn_ending(listening: Listening, *, answered: bool) -> TurnEnding:
    """How a track of a contact in ``listening``'s language ends its turns, by the language's policy: the model runs
    on a track that is answered (the caller's), where the policy gives it a part."""
    policy = listening.policy
    return TurnEnding(
        end_of_turn=TurnEndWatch.for_policy(policy) if answered and listening.runs_model else None,
        model_ends_turns=listening.ends_turns,
        manual_end_silence_ms=policy.silence_ms,
        model_end_quiet_ms=policy.quiet_ms,
    )


@dataclass
class MetricSink:
    """Where transcribers report from any thread; Powertools' metric set is not thread-safe on its own."""

    lock: threading.Lock

    def add(self, name: str, unit: MetricUnit, value: float) -> None:
        with self.lock:
            metrics.add_metric(name=name, unit=unit, value=value)


class SessionOpener:
    """Opens one track's Ink sessions, no sooner than the back-off (bounded, jittered) allows after a failure.

    A session lost soon after it opened counts as a failure too, so a failing Ink is not hammered."""

    def __init__(self, open_session: SessionFactory, track: str, clock: Clock) -> None:
        self._open_session = open_session
        self.track = track
        self._clock = clock
        self._backoff = Backoff(base_s=0.1, cap_s=5.0, stable_s=10.0)
        self._next_open_at = 0.0
        self._last: InkSession | None = None

    @property
    def waiting(self) -> bool:
        """Whether the back-off still forbids opening."""
        return self._clock.monotonic() < self._next_open_at

    def failed(self) -> None:
        self._next_open_at = self._clock.monotonic() + self._backoff.failure(self._clock.monotonic())

    def open(self, listener: TurnListener) -> InkSession | None:
        """A session open for ``listener``, or None when Ink is unavailable (the failure counted); ConfigurationError
        when Ink refused the last session for the deployment's fault, which no new session cures."""
        if self._last is not None and self._last.refusal is not None:
            raise self._last.refusal
        try:
            session = self._open_session(listener, f"ink-{self.track}")
            session.open()
        except InkUnavailable as exc:
            self.failed()
            logger.warning("ink unavailable; audio kept for replay", track=self.track, reason=exc.safe_message)
            return None
        self._backoff.success(self._clock.monotonic())
        self._last = session
        return session


class TurnRecorder:
    """Stores one track's finished turns and tells of them: each is passed on as Ink ends it, written in order on the
    writer's thread, then counted, logged, and passed on again once stored."""

    def __init__(
        self,
        store: TurnStore,
        contact_id: str,
        track: str,
        sink: MetricSink,
        clock: Clock,
        *,
        on_turn: Callable[[Turn], None] | None = None,
        on_turn_ended: Callable[[Turn], None] | None = None,
        on_speaking: Callable[[int, bool], None] | None = None,
        ended_by: TurnEndBy = "ink",
    ) -> None:
        self.contact_id = contact_id
        self.track = track
        self._ended_by: TurnEndBy = ended_by
        self._sink = sink
        self._on_turn = on_turn
        self._on_turn_ended = on_turn_ended
        self._on_speaking = on_speaking
        self._writer = TurnWriter(store, on_done=self._written, clock=clock, name=f"turns-{track}")
        self.turns_stored = 0

    def ended(
        self,
        seq: int,
        transcript: str,
        audio_ms: tuple[float, float],
        ended_at_ms: float,
        latency_ms: float | None,
        *,
        backchannel: bool = False,
    ) -> None:
        """Ink ended turn ``seq`` (its audio ``audio_ms`` into the stream): pass it on, then queue it to be stored. A
        ``backchannel`` is stored and passed on as ended (a reply started on its words is dropped), never to be
        answered."""
        turn = Turn(
            contact_id=self.contact_id,
            track=self.track,
            seq=seq,
            transcript=transcript,
            audio_start_ms=int(audio_ms[0]),
            audio_end_ms=int(audio_ms[1]),
            ended_at_ms=int(ended_at_ms),
            latency_ms=None if latency_ms is None else int(latency_ms),
            ended_by=self._ended_by,
            backchannel=backchannel,
        )
        if self._on_turn_ended is not None:
            # Before the turn is stored: a reply already made for these words can be named while the write goes on.
            self._on_turn_ended(turn)
        self._writer.put(turn)

    def _written(self, turn: Turn, outcome: Written) -> None:
        """The writer's report (on its thread) of what became of a turn."""
        if self._on_speaking is not None:
            # Stored, replayed or lost, the caller's turn is over.
            self._on_speaking(turn.seq, False)
        if outcome is Written.STORED:
            self.turns_stored += 1
            self._sink.add("TurnsTranscribed", MetricUnit.Count, 1)
            if turn.latency_ms is not None:
                self._sink.add("InkTurnLatency", MetricUnit.Milliseconds, turn.latency_ms)
            logger.info(
                "turn stored", track=self.track, seq=turn.seq, chars=len(turn.transcript), latency_ms=turn.latency_ms
            )
            if turn.backchannel:
                self._sink.add("Backchannels", MetricUnit.Count, 1)
                logger.info("a backchannel is kept, not answered", track=self.track, seq=turn.seq)
            elif self._on_turn is not None:
                self._on_turn(turn)
        elif outcome is Written.REPLAY:
            logger.info("turn already stored (replay)", track=self.track, seq=turn.seq)
        else:
            self._sink.add("TurnsLost", MetricUnit.Count, 1)
            self._sink.add("ListenErrors", MetricUnit.Count, 1)
            logger.error("turn lost: the turn table refused it until listening ended", track=self.track, seq=turn.seq)

    def drain(self, timeout_s: float) -> bool:
        """Wait for the turns still being written; whether all were within ``timeout_s``."""
        return self._writer.drain(timeout_s=timeout_s)

    def close(self, timeout_s: float) -> None:
        """Write the turns still queued (retrying for at most ``timeout_s``), then stop the writer."""
        self._writer.close(timeout_s=timeout_s)


class TrackTranscriber(TurnListener):
    """Sends one track's audio to Ink and stores its finished turns.

    ``voice_detector`` names the detector its voice tracking makes for itself, or is a reader of one shared with
    another tracker of the same audio (the streaming agent's barge-in: :class:`~voicebridge.audio.vad.SharedDetector`),
    fed every byte given to :meth:`audio`. ``talked_over(start_ms, end_ms)`` says whether the caller's voice from its
    first voiced frame to its last (Connect's clock, epoch ms) was a backchannel: short, said over the agent, who went
    on (each transport knows in its own way when the agent spoke); a turn so said whose words only acknowledge, in the
    contact's ``language`` (:mod:`voicebridge.acknowledgements`), is stored as one and never answered.
    ``paused_over(start_ms, end_ms)`` (same clock) says whether a turn's voice that stopped was short and began while
    the agent spoke, for the pause marks told to ``on_paused(seq, paused)``."""

    def __init__(
        self,
        *,
        contact_id: str,
        track: str,
        progress: TrackProgress,
        store: TurnStore,
        open_session: SessionFactory,
        sink: MetricSink,
        mode: str = "turns",
        frame_ms: int = 100,
        settle_ms: int = 300,
        ack_ms: int = 400,
        manual_end_silence_ms: int = 700,
        model_end_quiet_ms: int = 0,
        voice_detector: DetectorName | FrameDetector = "energy",
        end_of_turn: TurnEndWatch | None = None,
        model_ends_turns: bool = False,
        clock: Clock = SYSTEM_CLOCK,
        pacer: Pacer | None = None,
        on_turn: Callable[[Turn], None] | None = None,
        on_eager_end: Callable[[int, str], None] | None = None,
        on_resume: Callable[[int], None] | None = None,
        on_turn_ended: Callable[[Turn], None] | None = None,
        on_speaking: Callable[[int, bool], None] | None = None,
        talked_over: Callable[[float, float], bool] | None = None,
        paused_over: Callable[[float, float], bool] | None = None,
        on_paused: Callable[[int, bool], None] | None = None,
        language: str = "en",
    ) -> None:
        self.contact_id = contact_id
        self.track = track
        self._talked_over = talked_over
        self._paused_over = paused_over
        self._on_paused = on_paused
        self._language = language
        self._ledger = PositionLedger(progress, max_unsettled_bytes=MAX_REPLAY_BYTES)
        self._clock = clock
        self._turns = TurnRecorder(
            store,
            contact_id,
            track,
            sink,
            clock,
            on_turn=on_turn,
            on_turn_ended=on_turn_ended,
            on_speaking=on_speaking,
            # Manual mode's turns end when the product sends the finalize (its model's "complete", or silence).
            ended_by="voicebridge" if mode == "manual" else "ink",
        )
        self._on_speaking = on_speaking
        self._opener = SessionOpener(open_session, track, clock)
        self._sink = sink
        self._mode = mode
        self._frame_bytes = frame_ms * BYTES_PER_MS
        self._ack_s = ack_ms / 1000
        self._manual_end_silence_ms = manual_end_silence_ms
        self._model_end_quiet_ms = model_end_quiet_ms
        self._lock = threading.RLock()
        # Speaking marks made under the lock, told in order under their own lock once it is released.
        self._marks_due: list[tuple[MarkKind, int, bool]] = []
        self._marks_lock = threading.Lock()
        self._marked_by_voice = False
        self._pause_for: Utterance | None = None
        """The open turn's voice so far, stopped and waiting for Ink's words through it to be judged a pause."""
        self._paused_at: float | None = None
        """Where the open turn's voice stopped (ms into the stream) when it was marked paused, until it resumes."""
        self._vad = VoiceActivity(
            detector=detector(voice_detector) if isinstance(voice_detector, str) else voice_detector,
            close_ms=settle_ms,
            position_ms=progress.stream_bytes / BYTES_PER_MS,
        )
        self._watch = end_of_turn
        self._model_ends_turns = model_ends_turns
        self._verdict: Verdict | None = None
        """The model's verdict on the caller's latest stop, while no turn has ended since."""
        self._words = ""
        """Ink's words so far in the open turn (``turn.update``)."""
        self._words_through_ms = 0.0
        """How far into the stream the audio sent to Ink reached when its latest words came."""
        self._eager_waiting: float | None = None
        """Turns endpoint: the stop (its voice end, ms) the model judged complete before Ink's words covered it, until
        words that do come, the caller speaks again, or the turn ends."""
        self._ink_eager_for: float | None = None
        """Turns endpoint: the caller's latest stop (its voice end, ms) when Ink's own eager end came, until resumed."""
        self._eager_for: float | None = None
        """Turns endpoint: the stop (its voice end, ms) our eager end was for, until the caller speaks again or the
        turn ends."""
        self._ended_by_model_at: float | None = None
        """Manual mode: the stop (its voice end, ms) whose turn the model ended, so it is finalized once."""
        self._voices: dict[int, tuple[float, float]] = {}
        """The latest turns' first and last voiced frames (Connect's clock), where a transport tells backchannels."""
        self._turn_open = False
        self._finalizes_queued = 0
        """Manual mode: finalizes queued for closed utterances whose transcripts have not arrived yet."""
        self._finalized_at: deque[int] = deque()
        """Manual mode: where in the stream each finalize sent went out, oldest first, until its transcript comes."""
        self._session: InkSession | None = None
        self._pacer = pacer or Pacer()
        self._on_eager_end = on_eager_end
        self._on_resume = on_resume
        self._session_start = progress.stream_bytes
        self._last_send = clock.monotonic()
        self.audio_bytes_sent = 0

    # -- audio in

    def audio(self, fragment: str, offset: int, pcm: bytes, produced_end_ms: float | None) -> bool:
        """Audio at ``offset`` bytes into ``fragment``'s audio of this track; sends the part not sent before.

        Returns whether any of it was new."""
        with self._lock:
            # Kept in the ledger until settled, delivered or not: a new session replays it.
            fresh = self._ledger.admit(fragment, offset, pcm, produced_end_ms)
            if not fresh:
                return False
            was_voiced = self._vad.speaking
            for start in range(0, len(fresh), self._frame_bytes):
                piece = fresh[start : start + self._frame_bytes]
                piece_start_ms = self._vad.position_ms
                self._vad.feed(piece)
                # Catching up drops what the detector heard no voice in, noise and all, never the caller.
                self._pacer.push(piece, silent=self._vad.unvoiced_since(piece_start_ms))
            verdict = self._watch.feed(fresh, self._vad) if self._watch is not None else None
            self._voice_change(was_voiced)
            self._pump()
            if verdict is not None:
                self._judged(verdict)
            self._resumed_after_our_eager_end()
            if self._mode == "manual":
                self._manual_turn_boundary()
            if not self._turn_open and not self._vad.speaking and self._caught_up:
                self._ledger.mark_silent_point(self._clock.monotonic())
            self._settle_silence()
        self._tell_marks()
        self._recover()
        return True

    def _voice_change(self, was_voiced: bool) -> None:
        """The caller began speaking as the voice detector hears it, while Ink has no turn open: the mark Ink's
        ``turn.start`` would make a few hundred milliseconds later, made now, so nothing is handed out over a caller
        who starts between two sentences (caller holds the lock).

        The voice's end does not clear it: Ink may not have heard that voice yet (a backlog read faster than it is
        sent, or a word shorter than Ink's wait to begin a turn), and the caller is not done until the turn Ink makes
        of it ends. If Ink makes none (a cough), the silence settling clears it; a short voice over the agent that
        stopped is marked paused (:meth:`_judge_pause`)."""
        if self._paused_over is not None:
            self._pause_change(was_voiced)
        if self._turn_open or was_voiced or not self._vad.speaking:
            return
        self._marked_by_voice = True
        self._marks_due.append(("speaking", self.settled.next_seq, True))

    def _pause_change(self, was_voiced: bool) -> None:
        """The caller's voice stopped (it may be a pause: judged once Ink's words cover it), or voice came after a
        pause or a stop being judged (caller holds the lock)."""
        voice_end = self._vad.last_voiced_end_ms
        if self._paused_at is not None and voice_end is not None and voice_end > self._paused_at:
            self._paused_at = None
            self._marks_due.append(("paused", self.settled.next_seq, False))
        if self._pause_for is not None and voice_end is not None and voice_end > self._pause_for.end_ms:
            self._pause_for = None
        marked = self._turn_open or self._marked_by_voice
        if was_voiced and not self._vad.speaking and marked and self._vad.closed and self._paused_at is None:
            self._pause_for = Utterance(self._vad.closed[0].start_ms, self._vad.closed[-1].end_ms)
            self._judge_pause()

    def _judge_pause(self) -> None:
        """The voice that stopped is a pause when Ink's words through its end only acknowledge and the transport
        says it was short and said over the agent (``paused_over``): marked, so the flows path's poll hands out the
        reply's next sentence without waiting for Ink to end the turn. Words asking for something ("stop"), none yet,
        or a language with no list of acknowledgements: the turn holds the reply as before (caller holds the lock)."""
        voice = self._pause_for
        if voice is None or self._paused_over is None or self._words_through_ms <= voice.end_ms:
            return
        self._pause_for = None
        if only_acknowledges(self._words, self._language) is not True:
            return
        start_wall, end_wall = self._ledger.produced_at(voice.start_ms), self._ledger.produced_at(voice.end_ms)
        if start_wall is None or end_wall is None or not self._paused_over(start_wall, end_wall):
            return
        self._paused_at = voice.end_ms
        self._marks_due.append(("paused", self.settled.next_seq, True))

    def _tell_marks(self) -> None:
        """Tell the speaking marks made under the lock, in the order they were made (called without the lock)."""
        with self._marks_lock:
            with self._lock:
                due, self._marks_due = self._marks_due, []
            for kind, seq, value in due:
                tell = self._on_speaking if kind == "speaking" else self._on_paused
                if tell is not None:
                    tell(seq, value)

    def keepalive(self, idle_ms: float) -> None:
        """Send what the pace now allows; send silence when nothing has been sent for ``idle_ms`` (the source
        stalled); settle what can be."""
        with self._lock:
            self._pump()
            self._settle_silence()
            idle = (self._clock.monotonic() - self._last_send) * 1000 >= idle_ms
            if idle and self._caught_up:
                self._pacer.push(bytes(self._frame_bytes))
                self._pump()
        self._tell_marks()
        self._recover()

    def _pump(self) -> None:
        """Send on the live session what the pace allows (caller holds the lock)."""
        session = self._session
        if session is None or not session.alive:
            return
        # While Ink has a turn open it must hear every pause: only silence outside a turn may be dropped.
        for chunk in self._pacer.due(self._clock.monotonic(), may_skip=not self._turn_open):
            if isinstance(chunk, str):
                # The transcript it brings is of the audio sent before it.
                self._finalized_at.append(self._session_start + self._pacer.passed_bytes)
                session.finalize()
                continue
            try:
                session.send_audio(chunk)
            except InkUnavailable:
                # Everything not yet settled is replayed to the next session, from the ledger.
                self._pacer.drop_queue()
                return
            self.audio_bytes_sent += len(chunk)
            self._last_send = self._clock.monotonic()

    @property
    def _heard_bytes(self) -> int:
        """How far into the stream the live session has been sent (or has skipped) audio: nothing beyond it may
        settle, since Ink has not heard it."""
        if self._session is None or not self._session.alive:
            return self._ledger.settled.stream_bytes
        return self._session_start + self._pacer.passed_bytes

    @property
    def _caught_up(self) -> bool:
        """Ink has been sent (or has skipped, as silence) everything admitted."""
        session = self._session
        return session is not None and session.alive and self._pacer.waiting_ms == 0

    @property
    def behind_ms(self) -> float:
        """Audio admitted but not yet sent: how far this track's Ink session is behind the stream."""
        with self._lock:
            return self._pacer.waiting_ms

    def _recover(self) -> None:
        """Open a session when there is none or it was lost, replaying the unsettled audio first.

        Called without the lock: the lost session's receiver must be able to deliver the events it already has
        (a turn that ended just before the drop settles its audio, which then is not replayed)."""
        lost = self._session
        if (lost is not None and lost.alive) or self._opener.waiting:
            return
        if lost is not None:
            lost.close(timeout_s=0.5)
        with self._lock:
            if self._session is not lost:
                return
            if lost is not None:
                self._session = None
                self._pacer.drop_queue()
                self._sink.add("InkReconnects", MetricUnit.Count, 1)
                self._opener.failed()
                if self._opener.waiting:
                    return
            session = self._opener.open(self)
            if session is None:
                return
            self._turn_open = False
            self._finalizes_queued = 0
            self._finalized_at.clear()
            self._ledger.forget_silent_points()
            self._session = session
            self._session_start = self._ledger.settled.stream_bytes
            self._pacer.open(self._clock.monotonic())
            replay = self._ledger.unsettled
            for start in range(0, len(replay), self._frame_bytes):
                self._pacer.push(replay[start : start + self._frame_bytes])
            self._pump()

    # -- settling

    def _settle_silence(self) -> None:
        """Settle up to the latest silent point Ink has had time to react to, if no turn opened since.

        Voice Ink heard there and made no turn of (a cough, an "mm", a line click) is forgotten with it: it belongs
        to no turn, and left waiting it would be taken for the next turn's beginning."""
        if self._turn_open or not self._caught_up:
            return
        now = self._clock.monotonic()
        if not self._vad.speaking:
            # Nothing new may arrive (the source stalled or ended after a turn): the tail can settle once Ink saw it.
            self._ledger.mark_silent_point(now)
        if self._ledger.settle_acknowledged(now, self._ack_s):
            self._vad.discard_before(self._ledger.settled.stream_bytes / BYTES_PER_MS)
            if self._marked_by_voice and not self._vad.speaking:
                # Voice Ink made no turn of: the caller is not speaking after all.
                self._marked_by_voice = False
                self._pause_for = self._paused_at = None
                self._marks_due.append(("speaking", self.settled.next_seq, False))

    def _manual_turn_boundary(self) -> None:
        """Manual mode: ask for each utterance's transcript once it has been followed by enough silence.

        Decided on the audio as it is admitted, which may run ahead of what Ink has heard (a backlog being paced),
        so each finalize is queued in order with the audio, and one is queued per utterance even while earlier
        ones are still being answered."""
        if not (self._vad.closed or self._vad.speaking or self._finalizes_queued):
            return
        self._turn_open = True
        unfinalized = len(self._vad.closed) > self._finalizes_queued
        quiet_enough = not self._vad.speaking and self._vad.silent_for_ms >= self._manual_end_silence_ms
        if self._session is None:
            return
        if self._model_ended_the_turn():
            self._ended_by_model_at = self._vad.last_voiced_end_ms
        elif not (unfinalized and quiet_enough):
            return
        self._pacer.push_marker(FINALIZE)
        self._finalizes_queued += 1
        self._pump()

    def _model_ended_the_turn(self) -> bool:
        """Manual mode: the model judged the caller's latest stop complete, its turn is not finalized yet, and the
        caller has not started again."""
        verdict = self._verdict
        return (
            self._model_ends_turns
            and verdict is not None
            and verdict.complete
            and verdict.voice_end_ms == self._vad.last_voiced_end_ms
            and self._ended_by_model_at != verdict.voice_end_ms
            and self._vad.silent_for_ms >= self._model_end_quiet_ms
        )

    def _judged(self, verdict: Verdict) -> None:
        """The model's verdict on a stop of the caller's voice (caller holds the lock): on the turns endpoint, a
        complete one is an eager end of our own with Ink's words so far."""
        self._verdict = verdict
        self._sink.add("EndOfTurnVerdicts", MetricUnit.Count, 1)
        if self._mode == "manual" or not verdict.complete or not self._turn_open:
            return
        if self._ink_eager_for is not None and self._ink_eager_for >= verdict.voice_end_ms:
            return
        self._eager_waiting = verdict.voice_end_ms
        self._eager_end_of_ours()

    def _eager_end_of_ours(self) -> None:
        """The model's complete verdict is an eager end once Ink's words cover its stop (caller holds the lock)."""
        stop = self._eager_waiting
        if stop is None or self._on_eager_end is None or self._words_through_ms <= stop or not self._words.strip():
            return
        self._eager_waiting = None
        self._eager_for = stop
        self._on_eager_end(self.settled.next_seq, self._words)

    def _resumed_after_our_eager_end(self) -> None:
        """The caller spoke again after our eager end (caller holds the lock): the speculative reply is told, as
        Ink's ``turn.resume`` tells it."""
        stop = self._eager_for
        voice_end = self._vad.last_voiced_end_ms
        if self._eager_waiting is not None and voice_end is not None and voice_end > self._eager_waiting:
            # Spoke again before Ink's words caught up: the verdict is void, and nothing was started on it.
            self._eager_waiting = None
        if stop is None or voice_end is None or voice_end <= stop:
            return
        self._eager_for = None
        if self._on_resume is not None:
            self._on_resume(self.settled.next_seq)

    @property
    def settling(self) -> bool:
        """Silence with no turn pending: the track will be quiet once Ink has had time to react."""
        with self._lock:
            return not (self._turn_open or self._vad.speaking)

    @property
    def quiet(self) -> bool:
        """Nothing unsettled: handing over now replays nothing."""
        with self._lock:
            self._settle_silence()
            return self._ledger.quiet

    @property
    def settled(self) -> TrackProgress:
        """Where the track's audio is settled: what a hand-over checkpoints."""
        return self._ledger.settled

    # -- Ink events (on the session's receiver thread)

    def on_turn_start(self) -> None:
        with self._lock:
            self._turn_open = True
            self._words, self._eager_waiting, self._ink_eager_for = "", None, None
            self._ledger.forget_silent_points()
            # The turn's end clears the mark now, whoever made it.
            self._marked_by_voice = False
            self._marks_due.append(("speaking", self.settled.next_seq, True))
        self._tell_marks()

    def on_turn_update(self, transcript: str) -> None:
        with self._lock:
            self._words, self._words_through_ms = transcript, self._heard_bytes / BYTES_PER_MS
            self._eager_end_of_ours()
            self._judge_pause()
        self._tell_marks()

    def on_turn_eager_end(self, transcript: str) -> None:
        if self._on_eager_end is None or not transcript.strip():
            return
        with self._lock:
            # Ink's eager end is on its final words for this stop: ours, on words from an update, would only replace it.
            self._eager_waiting, self._ink_eager_for = None, self._vad.last_voiced_end_ms
            seq = self.settled.next_seq
        self._on_eager_end(seq, transcript)

    def on_turn_resume(self) -> None:
        with self._lock:
            self._ink_eager_for = None
            seq = self.settled.next_seq
        if self._on_resume is not None:
            self._on_resume(seq)

    def on_turn_end(self, transcript: str) -> None:
        """Ink ended a turn: its audio is everything voiced since the previous turn up to what Ink had heard.

        Latency is measured from the Connect producer time of the turn's last voiced frame."""
        now_ms = self._clock.time() * 1000
        with self._lock:
            self._finalizes_queued = max(0, self._finalizes_queued - 1)
            self._turn_open = self._finalizes_queued > 0
            # The turn's end clears a pause with the speaking mark.
            self._pause_for = self._paused_at = None
            self._ledger.forget_silent_points()
            heard = self._finalized_at.popleft() if self._finalized_at else self._heard_bytes
            heard_ms = heard / BYTES_PER_MS
            self._count_agreement(heard_ms)
            utterance = self._vad.take_until(heard_ms)
            voiced_end_wall = None if utterance is None else self._ledger.produced_at(utterance.end_ms)
            # Where the voice began: read only for a transport that tells backchannels.
            voiced_start_wall = (
                self._ledger.produced_at(utterance.start_ms)
                if utterance is not None and self._talked_over is not None
                else None
            )
            # Settled through what Ink had heard, short of voice that began before it and goes on (the next turn's).
            following = self._vad.next_start_ms()
            target = heard if following is None else min(heard, int(following * BYTES_PER_MS))
            self._ledger.settle_to(min(target, self._heard_bytes))
            seq = self.settled.next_seq
            if not transcript.strip():
                if self._on_speaking is not None:
                    self._on_speaking(seq, False)
                return
            self.settled.next_seq = seq + 1
            if voiced_start_wall is not None and voiced_end_wall is not None:
                self._voices[seq] = (voiced_start_wall, voiced_end_wall)
                self._voices.pop(seq - VOICES_KEPT, None)
            if self._vad.speaking:
                # The caller's voice goes on past what Ink heard when it ended the turn: their next turn has begun
                # (Ink's turn.start says so later, and no voice starts meanwhile to mark it), so nothing is said over
                # them in the meantime; the end of this turn leaves the later one open.
                self._marked_by_voice = True
                self._marks_due.append(("speaking", seq + 1, True))
            latency = None if voiced_end_wall is None else max(0.0, now_ms - voiced_end_wall)
            audio_ms = (utterance.start_ms, utterance.end_ms) if utterance else (heard_ms, heard_ms)
        # Judged outside the lock: the transport may read the table to tell (audio keeps coming in meanwhile). Words
        # that ask for something ("stop", "no, wait") make a turn however short.
        backchannel = (
            self._talked_over is not None
            and voiced_start_wall is not None
            and voiced_end_wall is not None
            and only_acknowledges(transcript, self._language) is not False
            and self._talked_over(voiced_start_wall, voiced_end_wall)
        )
        self._tell_marks()
        self._turns.ended(seq, transcript, audio_ms, now_ms, latency, backchannel=backchannel)

    def _count_agreement(self, heard_ms: float) -> None:
        """Ink ended a turn: whether the model had judged the caller's last stop before it complete (caller holds the
        lock). Manual mode's turns are the model's or the silence's, with nothing of Ink's to agree with."""
        verdict, self._verdict, self._words, self._eager_for = self._verdict, None, "", None
        self._eager_waiting = self._ink_eager_for = None
        if self._mode == "manual" or verdict is None:
            return
        agreed = verdict.complete and verdict.voice_end_ms <= heard_ms
        self._sink.add("EndOfTurnAgreed" if agreed else "EndOfTurnDisagreed", MetricUnit.Count, 1)

    def voice_of(self, seq: int) -> tuple[float, float | None] | None:
        """When the caller's voice in turn ``seq`` began and ended (Connect's clock): one of the latest few ended
        turns, or the one being spoken (ended where its voice stopped so far, None while it goes on); None when not
        known (or the transport tells no backchannels)."""
        with self._lock:
            if seq in self._voices:
                return self._voices[seq]
            telling = self._talked_over is not None and seq == self.settled.next_seq
            start = self._vad.next_start_ms() if telling else None
            began = None if start is None else self._ledger.produced_at(start)
            if began is None:
                return None
            # Its voice so far: ended where it stopped, or not yet while the caller speaks.
            stop = None if self._vad.speaking else self._vad.last_voiced_end_ms
            stopped = None if stop is None else self._ledger.produced_at(stop)
            return began, None if stopped is None else max(began, stopped)

    def typed(self, text: str) -> None:
        """A turn the caller gave without speaking (keys pressed): it takes the track's next sequence number and is
        stored and answered as a spoken turn is; it has no audio of its own."""
        now_ms = self._clock.time() * 1000
        with self._lock:
            seq = self.settled.next_seq
            self.settled.next_seq = seq + 1
            position = self._heard_bytes / BYTES_PER_MS
        self._turns.ended(seq, text, (position, position), now_ms, None)

    @property
    def turns_stored(self) -> int:
        return self._turns.turns_stored

    def on_failure(self, reason: str) -> None:
        # The session marks itself dead; the next frame opens a new one and replays what is unsettled.
        logger.info("ink session will be reopened on the next frame", track=self.track, reason=reason)

    # -- end

    def drain_writes(self, timeout_s: float) -> bool:
        """Wait for the finished turns still being written; whether all were within ``timeout_s``."""
        return self._turns.drain(timeout_s)

    def close(self, *, flush_ms: int = 1200, timeout_s: float = 3.0, write_timeout_s: float = 10.0) -> None:
        """End of audio: let a turn in progress finish (silence, or finalize), close the session, then write the
        turns still queued (retrying for at most ``write_timeout_s``)."""
        try:
            self._close_session(flush_ms, timeout_s)
        finally:
            self._turns.close(write_timeout_s)

    def _close_session(self, flush_ms: int, timeout_s: float) -> None:
        with self._lock:
            session = self._session
            if session is None or not session.alive:
                return
            if flush_ms and (self._turn_open or self._vad.speaking or self._vad.closed):
                if self._mode == "manual":
                    self._pacer.push_marker(FINALIZE)
                    self._turn_open = True
                else:
                    # Ink ends a turn only while audio flows: trailing silence, at the pace it accepts.
                    for _ in range(max(1, flush_ms * BYTES_PER_MS // self._frame_bytes)):
                        self._pacer.push(bytes(self._frame_bytes))
            self._pump()
            # Audio still waiting for its pace was admitted: Ink must hear it before its turn can end.
            deadline = self._clock.monotonic() + timeout_s + self._pacer.waiting_ms / 1000
        while flush_ms and self._clock.monotonic() < deadline:
            with self._lock:
                self._pump()
                # Once the trailing silence is out, Ink has started any turn it will: voice it made no turn of is
                # noise. Manual mode's utterances each wait for their finalize's transcript.
                pending = self._mode == "manual" and self._vad.closed
                if not self._turn_open and not pending and self._pacer.waiting_ms == 0:
                    break
            self._clock.sleep(0.02)
        session.close(timeout_s=max(0.2, deadline - self._clock.monotonic()))
