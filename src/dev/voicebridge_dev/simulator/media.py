"""The call's media: both parties' audio on one timeline, streamed to Kinesis Video Streams as Connect does.

While media streaming is on, every moment of the call reaches the contact's stream on both tracks, in step:
the caller's audio on ``AUDIO_FROM_CUSTOMER``, the bot's prompts on ``AUDIO_TO_CUSTOMER``, and silence
wherever a party says nothing (docs/protocols.md, *Kinesis Video Streams*). It streams up to the clock's present —
every 20 ms from its own thread, and at once whenever the simulator moves the clock — so with a
:class:`VirtualClock` a skipped prompt or utterance is streamed at once, and the KVS emulator (pace 0) hands
it to the consumer as fast as the consumer reads. Audio before streaming started is in the recording only.
"""

from __future__ import annotations

import logging
import threading

import numpy as np
import numpy.typing as npt

from voicebridge.audio.wav import read_wav
from voicebridge.errors import AudioFormatError
from voicebridge_dev.local.kvs import ContactStream, KvsEmulatorError
from voicebridge_dev.simulator.clock import Clock
from voicebridge_dev.simulator.events import BOT, CALLER, CallLog, Segment, SegmentKind, SpeechStarted, Track
from voicebridge_dev.simulator.line import LineNoise

__all__ = ["SAMPLE_RATE", "MediaPlane", "read_call_audio"]

logger = logging.getLogger(__name__)

SAMPLE_RATE = 8000
_FEED_INTERVAL_S = 0.02


def read_call_audio(data: bytes) -> npt.NDArray[np.int16]:
    """A WAV of a call's audio — 8 kHz mono, µ-law or 16-bit PCM — as samples; AudioFormatError for any other."""
    samples, rate = read_wav(data)
    if rate != SAMPLE_RATE or samples.ndim != 1:
        raise AudioFormatError(f"expected 8 kHz mono, got {rate} Hz {samples.shape}")
    return samples


class MediaPlane:
    """Every :class:`Segment` of the call, the stream they are fed to, and how far the call has played."""

    def __init__(self, clock: Clock, log: CallLog, *, rate: int = SAMPLE_RATE, line: LineNoise | None = None) -> None:
        self.clock = clock
        self.rate = rate
        self._line = line
        """The caller's line noise, under all the caller sends (and in the recording's caller channel)."""
        self._log = log
        self._lock = threading.RLock()
        self._segments: list[Segment] = []
        self._announced: set[int] = set()
        self._played = 0
        self._stream: ContactStream | None = None
        self._send_customer = True
        self._send_agent = True
        self._stop = threading.Event()
        self._feeder: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> None:
        """Feed the stream as time passes, from a thread of its own, until :meth:`stop`."""
        self._stop.clear()
        self._feeder = threading.Thread(target=self._feed_loop, name="connect-sim-media", daemon=True)
        self._feeder.start()

    def stop(self) -> None:
        self._stop.set()
        if self._feeder is not None:
            self._feeder.join(timeout=2)
            self._feeder = None

    def _feed_loop(self) -> None:
        while not self._stop.wait(_FEED_INTERVAL_S):
            try:
                self.pump()
            except KvsEmulatorError:
                logger.exception("flow simulator: media could not be streamed; streaming stops")
                with self._lock:
                    self._stream = None

    # -- the timeline

    def play(
        self,
        track: Track,
        samples: npt.NDArray[np.int16],
        kind: SegmentKind,
        *,
        at: float | None = None,
        text: str | None = None,
        uri: str | None = None,
        clip: str | None = None,
        action: str | None = None,
    ) -> Segment:
        """Put audio on ``track`` from ``at`` (default: now), never earlier than what has already played."""
        with self._lock:
            start = max(self.clock.now() if at is None else at, self._played / self.rate)
            segment = Segment(track, start, samples, kind, text=text, uri=uri, clip=clip, action=action)
            self._segments.append(segment)
        return segment

    def withdraw(self, segment: Segment) -> bool:
        """Take back ``segment`` if none of it has played yet (a party changed its mind); whether it was."""
        with self._lock:
            if segment not in self._segments or self._sample(segment.start) < self._played:
                return False
            self._segments.remove(segment)
            self._announced.discard(id(segment))
            return True

    def cut(self, segment: Segment, at: float) -> None:
        """End ``segment`` at ``at`` if it runs longer (a party stopped, or the call ended)."""
        with self._lock:
            segment.end = max(segment.start, min(segment.end, at))

    def finish(self, at: float) -> None:
        """The call ended at ``at``: audio scheduled later never happened, audio running is cut there."""
        with self._lock:
            self._segments = [segment for segment in self._segments if segment.start < at]
            for segment in self._segments:
                self.cut(segment, at)

    @property
    def segments(self) -> list[Segment]:
        with self._lock:
            return sorted(self._segments, key=lambda segment: segment.start)

    def pump(self) -> None:
        """Play the call up to now: announce the segments that began, stream what streaming should carry."""
        with self._lock:
            target = int(self.clock.now() * self.rate)
            if target <= self._played:
                return
            for segment in sorted(self._segments, key=lambda s: s.start):
                if id(segment) not in self._announced and self._sample(segment.start) < target:
                    self._announced.add(id(segment))
                    self._log.record(SpeechStarted(segment))
            if self._stream is not None:
                count = target - self._played
                silence = np.zeros(count, dtype=np.int16)
                customer = self._render(CALLER, self._played, count) if self._send_customer else silence
                agent = self._render(BOT, self._played, count) if self._send_agent else silence
                self._stream.append_tracks(customer.tobytes(), agent.tobytes())
            self._played = target

    def recording(self, until: float) -> npt.NDArray[np.int16]:
        """The call from its start to ``until`` as ``(frames, 2)``: the caller left, the bot right."""
        with self._lock:
            frames = self._sample(until)
            return np.stack([self._render(CALLER, 0, frames), self._render(BOT, 0, frames)], axis=1)

    # -- streaming

    def start_streaming(self, stream: ContactStream, *, customer: bool, agent: bool, at: float | None = None) -> None:
        """Stream from ``at`` (default: now) on — the moment of the call the stream's first audio is stamped with —
        (the contact is live on ``stream``); a track not streamed carries silence."""
        with self._lock:
            self._stream = None
            if at is None:
                self.pump()
            else:
                # Nothing was streamed while no stream was live: what the feeder passed since ``at`` goes out now.
                self._played = self._sample(at)
            self._stream = stream
            self._send_customer = customer
            self._send_agent = agent

    def stop_streaming(self) -> ContactStream | None:
        """Stream up to now, then end the contact on its stream; returns it (None when not streaming)."""
        with self._lock:
            self.pump()
            stream, self._stream = self._stream, None
        if stream is not None:
            stream.end_contact(drain=True)
        return stream

    @property
    def streaming(self) -> bool:
        with self._lock:
            return self._stream is not None

    # -- helpers

    def _sample(self, moment: float) -> int:
        return round(moment * self.rate)

    def _render(self, track: Track, first: int, count: int) -> npt.NDArray[np.int16]:
        mix = np.zeros(count, dtype=np.int32)
        last = first + count
        for segment in self._segments:
            if segment.track != track:
                continue
            begin = self._sample(segment.start)
            end = min(begin + segment.samples.size, self._sample(segment.end))
            low, high = max(begin, first), min(end, last)
            if low < high:
                mix[low - first : high - first] += segment.samples[low - begin : high - begin]
        if track == CALLER and self._line is not None:
            mix += self._line.samples(first, count)
        return np.clip(mix, -32768, 32767).astype(np.int16)
