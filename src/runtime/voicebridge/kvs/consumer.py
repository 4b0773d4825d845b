"""TranscribeStream's domain: one contact's media stream, read to its end across as many invocations as it takes.

Each invocation owns the contact for one *generation* (recorded in the checkpoint item). It:

1. loads the checkpoint and resumes GetMedia from the earliest fragment any track has not settled;
2. parses the Matroska stream incrementally and hands each audio frame, with its position (fragment number, byte
   offset into that fragment's track audio) and producer time, to the track's
   :class:`~voicebridge.ink.transcriber.TrackTranscriber` the moment its bytes arrive;
3. on a read timeout or dropped connection, reconnects from the fragment it was in (positions make the repeat
   harmless), and stops when the stream has ended (media streaming stopped, the call ended), when the stream's
   ``ContactId`` tag names another contact (streams are reused), or on an error tag it cannot recover from;
4. when the Lambda's time is short, waits for a quiet moment (nothing unsettled), saves the checkpoint under the
   next generation and invokes itself asynchronously: the next invocation continues exactly there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.config import Settings
from voicebridge.errors import ConfigurationError, MediaInterrupted, Superseded, VoiceBridgeError
from voicebridge.ink.transcriber import MetricSink, SessionFactory, TrackTranscriber
from voicebridge.kvs.media import MediaSource
from voicebridge.kvs.mkv import AudioFrame, ClusterStart, DocumentStart, MatroskaReader, Tags
from voicebridge.store.turns import AGENT, CUSTOMER, Checkpoint, TurnStore
from voicebridge.telemetry import logger, metrics

TRACKS = {"AUDIO_FROM_CUSTOMER": CUSTOMER, "Track_audio/L16": CUSTOMER, "AUDIO_TO_CUSTOMER": AGENT}
SAMPLE_BYTES_PER_MS = 16
KEEPALIVE_AFTER_MS = 1000


@dataclass
class Outcome:
    """How an invocation ended."""

    reason: str
    handed_off_to: int | None = None
    audio_seconds: float = 0.0
    turns: int = 0
    reconnects: int = 0


@dataclass
class _Fragment:
    number: str | None = None
    producer_ms: float | None = None
    cluster_ms: float | None = None
    offsets: dict[str, int] = field(default_factory=dict)
    waiting: list[AudioFrame] = field(default_factory=list)
    """Frames that arrived before the fragment's number (a layout that tags the fragment after its Cluster)."""


class StreamConsumer:
    """Reads one contact's stream for one invocation."""

    def __init__(
        self,
        settings: Settings,
        store: TurnStore,
        *,
        contact_id: str,
        generation: int,
        open_session: SessionFactory,
        continue_with: Callable[[dict[str, Any]], None],
        remaining_ms: Callable[[], int],
        media: Callable[[str], MediaSource],
        clock: Clock = SYSTEM_CLOCK,
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
        self._sink = MetricSink(threading.Lock())
        self._transcribers: dict[str, TrackTranscriber] = {}
        self._stop = threading.Event()
        self._media_reconnects = 0
        self._current_fragment: str | None = None
        self._previous_fragment: str | None = None

    def run(self) -> Outcome:
        checkpoint = self._store.load(self.contact_id)
        if checkpoint is None:
            raise ConfigurationError(f"contact {self.contact_id} has no listening session")
        if checkpoint.generation != self.generation or checkpoint.state != "listening":
            logger.info("not the owner of this contact; exiting", owner=checkpoint.generation, mine=self.generation)
            return Outcome("superseded")
        checkpoint.invocations += 1
        self._transcribers = {
            track: TrackTranscriber(
                contact_id=self.contact_id,
                track=track,
                progress=progress,
                store=self._store,
                open_session=self._open_session,
                sink=self._sink,
                mode=self._settings.ink_mode,
                frame_ms=self._settings.ink_frame_ms,
                clock=self._clock,
            )
            for track, progress in checkpoint.tracks.items()
        }
        self._add("ActiveStreams", MetricUnit.Count, 1)
        keepalive = threading.Thread(target=self._keepalive, name="ink-keepalive", daemon=True)
        keepalive.start()
        try:
            outcome = self._read(checkpoint)
        except Superseded:
            outcome = Outcome("superseded")
        finally:
            self._stop.set()
            keepalive.join(1.0)
        if outcome.reason not in ("handoff", "superseded"):
            for transcriber in self._transcribers.values():
                transcriber.close()
            self._finish(checkpoint, outcome.reason)
        outcome.audio_seconds = sum(t.audio_bytes_sent for t in self._transcribers.values()) / 16000
        outcome.turns = sum(t.turns_stored for t in self._transcribers.values())
        outcome.reconnects = self._media_reconnects
        self._add("AudioSecondsStreamed", MetricUnit.Seconds, outcome.audio_seconds)
        self._flush_metrics()
        return outcome

    # -- reading

    def _read(self, checkpoint: Checkpoint) -> Outcome:
        source = self._media(checkpoint.stream_arn)
        resume = checkpoint.resume_fragment()
        idle_since: float | None = None
        backoff = 0.1
        last_metrics = self._clock.monotonic()
        while True:
            progressed = False
            try:
                for outcome in self._consume(source, resume, checkpoint):
                    if outcome is not None:
                        return outcome
                    progressed = True
                    if self._clock.monotonic() - last_metrics > 60:
                        self._add("ActiveStreams", MetricUnit.Count, 1)
                        self._flush_metrics()
                        last_metrics = self._clock.monotonic()
                reason = "payload ended"
            except MediaInterrupted as exc:
                reason = exc.safe_message
            # Whether AfterFragmentNumber includes that fragment is ambiguous: starting one fragment earlier
            # loses nothing either way, and positions skip what was already sent.
            resume = self._previous_fragment or self._current_fragment or resume
            if progressed:
                idle_since, backoff = None, 0.1
            else:
                idle_since = idle_since or self._clock.monotonic()
                # Connect stopped streaming, or the call ended: nothing new arrives any more.
                if self._clock.monotonic() - idle_since > self._settings.kvs_read_timeout_ms / 1000 + 1:
                    return Outcome("stream ended")
            handoff = self._maybe_hand_off(checkpoint)
            if handoff is not None:
                return handoff
            self._media_reconnects += 1
            logger.info("media resumed", reason=reason, fragment=resume, attempt=self._media_reconnects)
            self._clock.sleep(min(backoff, 1.0) if not progressed else 0)
            backoff *= 2

    def _consume(self, source: MediaSource, resume: str, checkpoint: Checkpoint) -> Iterator[Outcome | None]:
        """Yield None after each chunk that delivered audio, or an Outcome to stop."""
        reader = MatroskaReader()
        fragment = _Fragment()
        for chunk in source.read_from(resume):
            delivered = False
            for event in reader.feed(chunk):
                if isinstance(event, AudioFrame):
                    if fragment.number is None:
                        fragment.waiting.append(event)
                    else:
                        delivered |= self._frame(fragment, event)
                elif isinstance(event, DocumentStart):
                    if fragment.waiting:
                        logger.warning(
                            "fragment without a number; its audio cannot be placed", frames=len(fragment.waiting)
                        )
                    fragment = _Fragment()
                elif isinstance(event, ClusterStart):
                    fragment.cluster_ms = event.timecode_ms
                elif isinstance(event, Tags):
                    stop = self._tags(event.tags, fragment, checkpoint)
                    if stop is not None:
                        yield stop
                        return
                    if fragment.number is not None and fragment.waiting:
                        waiting, fragment.waiting = fragment.waiting, []
                        for frame in waiting:
                            delivered |= self._frame(fragment, frame)
            if delivered:
                yield None
            handoff = self._maybe_hand_off(checkpoint)
            if handoff is not None:
                yield handoff
                return

    def _frame(self, fragment: _Fragment, frame: AudioFrame) -> bool:
        track = TRACKS.get(frame.track_name, "")
        transcriber = self._transcribers.get(track)
        if transcriber is None or fragment.number is None:
            return False
        offset = fragment.offsets.get(track, 0)
        fragment.offsets[track] = offset + len(frame.pcm)
        return transcriber.audio(fragment.number, offset, frame.pcm, _produced_end_ms(fragment, frame))

    def _tags(self, tags: dict[str, str], fragment: _Fragment, checkpoint: Checkpoint) -> Outcome | None:
        number = tags.get("AWS_KINESISVIDEO_FRAGMENT_NUMBER")
        if number:
            fragment.number = number
            if self._current_fragment is None or int(number) > int(self._current_fragment):
                self._previous_fragment, self._current_fragment = self._current_fragment, number
        producer = tags.get("AWS_KINESISVIDEO_PRODUCER_TIMESTAMP")
        if producer:
            fragment.producer_ms = float(producer) * 1000
        contact = tags.get("ContactId")
        if contact and contact != self.contact_id:
            logger.info("stream now carries another contact; stopping", other_contact=contact)
            return Outcome("contact changed")
        behind = tags.get("AWS_KINESISVIDEO_MILLIS_BEHIND_NOW")
        if behind is not None and behind.isdigit():
            self._add("KvsLag", MetricUnit.Milliseconds, float(behind))
        error = tags.get("AWS_KINESISVIDEO_ERROR_CODE")
        if error:
            error_id = tags.get("AWS_KINESISVIDEO_ERROR_ID")
            logger.warning("error in the media stream", error_code=error, error_id=error_id)
            raise MediaInterrupted(f"stream error {error}")
        return None

    # -- hand-over and end

    def _maybe_hand_off(self, checkpoint: Checkpoint) -> Outcome | None:
        remaining = self._remaining_ms()
        if remaining > self._settings.consumer_handoff_ms:
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
        for track, transcriber in self._transcribers.items():
            checkpoint.tracks[track] = transcriber.settled
        successor = self.generation + 1
        self._store.save(checkpoint, new_generation=successor)
        self._continue_with({"ContactId": self.contact_id, "Generation": successor})
        for transcriber in self._transcribers.values():
            transcriber.close(flush_ms=0, timeout_s=0.5)
        logger.info("handed over to the next invocation", generation=successor, quiet=quiet, remaining_ms=remaining)
        return Outcome("handoff", handed_off_to=successor)

    def _finish(self, checkpoint: Checkpoint, reason: str) -> None:
        for track, transcriber in self._transcribers.items():
            checkpoint.tracks[track] = transcriber.settled
        checkpoint.state, checkpoint.stop_reason = "stopped", reason
        try:
            self._store.save(checkpoint)
        except Superseded:
            logger.info("checkpoint owned by a newer consumer; not marking stopped")
        except VoiceBridgeError as exc:
            logger.warning("could not record the end of listening", reason=exc.safe_message)

    def _keepalive(self) -> None:
        # GetMedia delivers with jitter; only a real stall (not a late block mid-utterance) earns silence.
        idle_ms = max(KEEPALIVE_AFTER_MS, self._settings.ink_frame_ms * 2)
        while not self._clock.wait(self._stop, self._settings.ink_frame_ms / 1000):
            for transcriber in self._transcribers.values():
                try:
                    transcriber.keepalive(idle_ms)
                except VoiceBridgeError as exc:
                    logger.warning("keep-alive failed", reason=exc.safe_message)

    def _add(self, name: str, unit: MetricUnit, value: float) -> None:
        self._sink.add(name, unit, value)

    def _flush_metrics(self) -> None:
        with self._sink.lock:
            metrics.flush_metrics()


def _produced_end_ms(fragment: _Fragment, frame: AudioFrame) -> float | None:
    if fragment.producer_ms is None or fragment.cluster_ms is None:
        return None
    return fragment.producer_ms + (frame.timecode_ms - fragment.cluster_ms) + len(frame.pcm) / SAMPLE_BYTES_PER_MS
