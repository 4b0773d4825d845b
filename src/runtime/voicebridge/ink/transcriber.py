"""One track of a call, transcribed turn by turn with no audio lost and no turn stored twice.

The transcriber sits between the KVS reader and an :class:`~voicebridge.ink.session.InkSession`.

- **Positions.** Audio arrives addressed by (fragment number, byte offset into that fragment's audio of this track)
  and is also counted in bytes since the start of the contact's stream. ``sent`` is how far audio has gone to Ink;
  ``settled`` is how far it belongs to finished turns or to silence. Audio seen again (a GetMedia reconnect, a
  continuation that starts at an earlier fragment) is recognised by its position and skipped: Ink receives each
  byte once.
- **Settling.** A finished turn settles the audio up to the end of its utterance (found in the PCM), so a replay
  never repeats a finished turn. Silence settles too, once no turn is open and Ink has had ``ack_ms`` to react to it
  (Ink starts a turn a little after the caller does). Everything between ``settled`` and ``sent`` stays in the replay
  buffer.
- **Dropped sockets.** After a failure the next frame opens a new session and replays the unsettled audio first, so
  a turn in progress is transcribed whole.
- **Turns.** Each finished turn takes the track's next sequence number and is written with a conditional put: a
  replay or a continuation can reproduce a turn, never store it twice.
- **Keep-alive.** When the source stalls, silence keeps the session alive and lets a turn in progress end (Ink ends
  a turn only while audio flows); that silence is not part of the positions.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.audio.vad import BYTES_PER_MS, VoiceActivity
from voicebridge.errors import InkUnavailable, StorageError
from voicebridge.ink.session import InkSession, TurnListener
from voicebridge.store.turns import TrackProgress, Turn, TurnStore
from voicebridge.telemetry import logger, metrics

SessionFactory = Callable[[TurnListener, str], InkSession]

MAX_REPLAY_BYTES = 120_000 * BYTES_PER_MS
"""Unsettled audio kept for a replay: two minutes of one uninterrupted utterance."""


@dataclass
class MetricSink:
    """Where transcribers report from any thread; Powertools' metric set is not thread-safe on its own."""

    lock: threading.Lock

    def add(self, name: str, unit: MetricUnit, value: float) -> None:
        with self.lock:
            metrics.add_metric(name=name, unit=unit, value=value)


@dataclass
class _Chunk:
    """Unsettled audio: where it came from, where it sits in the stream, and when it was sent."""

    stream_start: int
    fragment: str
    offset: int
    length: int
    produced_end_ms: float | None


@dataclass(frozen=True)
class _Candidate:
    """A silent point at which everything sent could be settled, once Ink has had time to react."""

    sent_at: float
    stream_bytes: int


class TrackTranscriber(TurnListener):
    """Sends one track's audio to Ink and stores its finished turns."""

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
    ) -> None:
        self.contact_id = contact_id
        self.track = track
        self.settled = TrackProgress(progress.fragment, progress.offset, progress.stream_bytes, progress.next_seq)
        self._sent_fragment = progress.fragment
        self._sent_offset = progress.offset
        self._sent_bytes = progress.stream_bytes
        self._store = store
        self._open_session = open_session
        self._sink = sink
        self._mode = mode
        self._frame_bytes = frame_ms * BYTES_PER_MS
        self._ack_s = ack_ms / 1000
        self._manual_end_silence_ms = manual_end_silence_ms
        self._lock = threading.RLock()
        self._replay = bytearray()
        self._chunks: deque[_Chunk] = deque()
        self._candidates: deque[_Candidate] = deque()
        self._vad = VoiceActivity(close_ms=settle_ms, position_ms=progress.stream_bytes / BYTES_PER_MS)
        self._turn_open = False
        self._finalizing = False
        self._session: InkSession | None = None
        self._delivered = True
        self._open_failures = 0
        self._next_open_at = 0.0
        self._last_send = time.monotonic()
        self.audio_bytes_sent = 0
        self.turns_stored = 0

    # -- audio in

    def audio(self, fragment: str, offset: int, pcm: bytes, produced_end_ms: float | None) -> bool:
        """Audio at ``offset`` bytes into ``fragment``'s audio of this track; sends the part not sent before.

        Returns whether any of it was new."""
        with self._lock:
            fresh = self._unsent(fragment, offset, pcm)
            if not fresh:
                return False
            start_offset = offset + len(pcm) - len(fresh)
            self._chunks.append(_Chunk(self._sent_bytes, fragment, start_offset, len(fresh), produced_end_ms))
            self._sent_fragment, self._sent_offset = fragment, offset + len(pcm)
            self._sent_bytes += len(fresh)
            self._vad.feed(fresh)
            if self._send(fresh):
                self.audio_bytes_sent += len(fresh)
            # Kept until settled, delivered or not: a new session replays it.
            self._replay += fresh
            if len(self._replay) > MAX_REPLAY_BYTES:
                self._settle_to(self._sent_bytes - MAX_REPLAY_BYTES)
            if self._mode == "manual":
                self._manual_turn_boundary()
            if not self._turn_open and not self._vad.speaking and self._delivered:
                self._candidates.append(_Candidate(time.monotonic(), self._sent_bytes))
            self._settle_silence()
        self._recover()
        return True

    def _unsent(self, fragment: str, offset: int, pcm: bytes) -> bytes:
        if self._sent_fragment is None:
            return pcm
        here, sent = int(fragment), int(self._sent_fragment)
        if here < sent:
            return b""
        if here == sent:
            end = offset + len(pcm)
            if end <= self._sent_offset:
                return b""
            return pcm[max(0, self._sent_offset - offset) :]
        return pcm

    def keepalive(self, idle_ms: float) -> None:
        """Send silence when nothing has been sent for ``idle_ms`` (the source stalled); settle what can be."""
        with self._lock:
            self._settle_silence()
            if (time.monotonic() - self._last_send) * 1000 >= idle_ms:
                self._send(bytes(self._frame_bytes))
        self._recover()

    def _send(self, pcm: bytes) -> bool:
        """Send on the live session (caller holds the lock); False when there is none to take it."""
        session = self._session
        if session is None or not session.alive:
            self._delivered = False
            return False
        try:
            session.send_audio(pcm)
        except InkUnavailable:
            self._delivered = False
            return False
        self._last_send = time.monotonic()
        self._delivered = True
        return True

    def _recover(self) -> None:
        """Open a session when there is none or it was lost, replaying the unsettled audio first.

        Called without the lock: the lost session's receiver must be able to deliver the events it already has
        (a turn that ended just before the drop settles its audio, which then is not replayed)."""
        lost = self._session
        if (lost is not None and lost.alive) or time.monotonic() < self._next_open_at:
            return
        if lost is not None:
            lost.close(timeout_s=0.5)
        with self._lock:
            if self._session is not lost:
                return
            if lost is not None:
                self._session = None
                self._sink.add("InkReconnects", MetricUnit.Count, 1)
            try:
                session = self._open_session(self, f"ink-{self.track}")
                session.open()
            except InkUnavailable as exc:
                self._open_failures += 1
                self._next_open_at = time.monotonic() + min(5.0, 0.1 * 2**self._open_failures)
                logger.warning("ink unavailable; audio kept for replay", track=self.track, reason=exc.safe_message)
                return
            self._open_failures = 0
            self._turn_open = self._finalizing = False
            self._candidates.clear()
            self._session = session
            replay = bytes(self._replay)
            for start in range(0, len(replay), self._frame_bytes):
                if not self._send(replay[start : start + self._frame_bytes]):
                    return
            self._delivered = True

    # -- settling

    def _settle_silence(self) -> None:
        """Settle up to the latest silent point Ink has had time to react to, if no turn opened since."""
        if self._turn_open or self._vad.closed or not self._delivered:
            return
        if not self._candidates and not self._vad.speaking and self._sent_bytes > self.settled.stream_bytes:
            # Nothing new arrives (the source stalled or ended after a turn): the tail can settle once Ink has seen it.
            self._candidates.append(_Candidate(time.monotonic(), self._sent_bytes))
        horizon = time.monotonic() - self._ack_s
        target = None
        while self._candidates and self._candidates[0].sent_at <= horizon:
            target = self._candidates.popleft().stream_bytes
        if target is not None:
            self._settle_to(target)

    def _settle_to(self, stream_bytes: int) -> None:
        """Settle everything before ``stream_bytes`` (never beyond what was sent)."""
        stream_bytes = min(stream_bytes, self._sent_bytes)
        drop = stream_bytes - self.settled.stream_bytes
        if drop <= 0:
            return
        del self._replay[:drop]
        while self._chunks and self._chunks[0].stream_start + self._chunks[0].length <= stream_bytes:
            self._chunks.popleft()
        if self._chunks and self._chunks[0].stream_start < stream_bytes:
            head = self._chunks[0]
            cut = stream_bytes - head.stream_start
            self._chunks[0] = _Chunk(stream_bytes, head.fragment, head.offset + cut, head.length - cut, None)
        if self._chunks:
            self.settled.fragment, self.settled.offset = self._chunks[0].fragment, self._chunks[0].offset
        else:
            self.settled.fragment, self.settled.offset = self._sent_fragment, self._sent_offset
        self.settled.stream_bytes = stream_bytes

    def _wall_ms_at(self, stream_ms: float) -> float | None:
        """When the audio at ``stream_ms`` was produced (Connect's clock), if it is still in the replay window."""
        position = stream_ms * BYTES_PER_MS
        for chunk in self._chunks:
            end = chunk.stream_start + chunk.length
            if chunk.stream_start <= position <= end and chunk.produced_end_ms is not None:
                return chunk.produced_end_ms - (end - position) / BYTES_PER_MS
        return None

    def _manual_turn_boundary(self) -> None:
        """Manual mode: ask for the transcript once an utterance has been followed by enough silence."""
        if self._finalizing or not (self._vad.closed or self._vad.speaking):
            return
        self._turn_open = True
        ended = self._vad.closed and not self._vad.speaking
        if ended and self._vad.silent_for_ms >= self._manual_end_silence_ms and self._session is not None:
            self._session.finalize()
            self._finalizing = True

    @property
    def settling(self) -> bool:
        """Silence with no turn pending: the track will be quiet once Ink has had time to react."""
        with self._lock:
            return not (self._turn_open or self._vad.speaking or self._vad.closed)

    @property
    def quiet(self) -> bool:
        """Nothing unsettled: handing over now replays nothing."""
        with self._lock:
            self._settle_silence()
            return self.settled.stream_bytes == self._sent_bytes

    # -- Ink events (on the session's receiver thread)

    def on_turn_start(self) -> None:
        with self._lock:
            self._turn_open = True
            self._candidates.clear()

    def on_turn_end(self, transcript: str) -> None:
        now_ms = time.time() * 1000
        with self._lock:
            self._turn_open = self._finalizing = False
            self._candidates.clear()
            utterance = self._vad.take()
            voiced_end_wall = None
            if utterance is not None:
                voiced_end_wall = self._wall_ms_at(utterance.end_ms)
                # The turn's audio is done: settle through its trailing silence, up to where the next one begins.
                end = utterance.end_ms + self._vad.close_ms
                following = self._vad.next_start_ms()
                self._settle_to(int(min(end, following if following is not None else end) * BYTES_PER_MS))
            if not transcript.strip():
                return
            seq = self.settled.next_seq
            self.settled.next_seq = seq + 1
            latency = None if voiced_end_wall is None else max(0.0, now_ms - voiced_end_wall)
            position = self._vad.position_ms
            turn = Turn(
                contact_id=self.contact_id,
                track=self.track,
                seq=seq,
                transcript=transcript,
                audio_start_ms=int(utterance.start_ms if utterance else position),
                audio_end_ms=int(utterance.end_ms if utterance else position),
                ended_at_ms=int(now_ms),
                latency_ms=None if latency is None else int(latency),
            )
        if self._put(turn):
            self.turns_stored += 1
            self._sink.add("TurnsTranscribed", MetricUnit.Count, 1)
            if latency is not None:
                self._sink.add("InkTurnLatency", MetricUnit.Milliseconds, latency)
            logger.info("turn stored", track=self.track, seq=seq, chars=len(transcript), latency_ms=turn.latency_ms)
        else:
            logger.info("turn already stored (replay)", track=self.track, seq=seq)

    def _put(self, turn: Turn) -> bool:
        for attempt in range(3):
            try:
                return self._store.put_turn(turn)
            except StorageError as exc:
                logger.warning("turn write failed", track=self.track, seq=turn.seq, reason=exc.safe_message)
                time.sleep(0.05 * 2**attempt)
        self._sink.add("ListenErrors", MetricUnit.Count, 1)
        return False

    def on_failure(self, reason: str) -> None:
        # The session marks itself dead; the next frame opens a new one and replays what is unsettled.
        logger.info("ink session will be reopened on the next frame", track=self.track, reason=reason)

    # -- end

    def close(self, *, flush_ms: int = 1200, timeout_s: float = 3.0) -> None:
        """End of audio: let a turn in progress finish (silence, or finalize), then close the session."""
        with self._lock:
            session = self._session
            if session is None or not session.alive:
                return
            if flush_ms and (self._turn_open or self._vad.speaking or self._vad.closed):
                if self._mode == "manual":
                    session.finalize()
                    self._turn_open = True
                else:
                    for _ in range(max(1, flush_ms * BYTES_PER_MS // self._frame_bytes)):
                        self._send(bytes(self._frame_bytes))
        deadline = time.monotonic() + timeout_s
        while flush_ms and time.monotonic() < deadline:
            with self._lock:
                if not self._turn_open and not self._vad.closed:
                    break
            time.sleep(0.02)
        session.close(timeout_s=max(0.2, deadline - time.monotonic()))
