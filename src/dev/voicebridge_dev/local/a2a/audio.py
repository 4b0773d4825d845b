"""The call's audio on Connect's side: the caller's stream to the agent, and the agent's audio played to the caller.

The caller's audio is 8 kHz 16-bit little-endian PCM (the telephone leg), resampled to the negotiated input rate as
one continuous stream. The agent's chunks are resampled to 8 kHz per artifact and queued for a playout that runs at
1× real time in blocks (20 ms by default): each block the caller hears, agent audio or silence, goes into the
:class:`Recording` with the session time it started. An interruption flushes the queue at once.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np
import soxr

from voicebridge_dev.local.a2a.timeline import Timeline

CALL_RATE = 8000


class StreamResampler:
    """16-bit PCM from one rate to another, continuous across calls (libsoxr's streaming resampler).

    Quick quality (cubic interpolation): libsoxr's filtered qualities hand their output back in bursts of 60 ms and
    more, which would delay a 20 ms slice or the start of a reply; Connect's own resampler is unpublished.
    """

    def __init__(self, in_rate: int, out_rate: int) -> None:
        self._stream = (
            None if in_rate == out_rate else soxr.ResampleStream(in_rate, out_rate, 1, dtype="float32", quality="QQ")
        )

    def __call__(self, pcm: bytes, *, last: bool = False) -> bytes:
        if self._stream is None:
            return pcm
        samples = np.frombuffer(pcm, "<i2").astype(np.float32) / 32768.0
        out = self._stream.resample_chunk(samples, last=last)
        return bytes((np.clip(out, -1.0, 1.0) * 32767.0).round().astype("<i2").tobytes())


@dataclass(frozen=True, slots=True)
class PlayedBlock:
    """One block the caller heard: from session time ``at``, ``agent_samples`` of agent audio, then silence."""

    at: float
    offset: int
    samples: int
    agent_samples: int


@dataclass
class Recording:
    """What the caller heard, as 8 kHz 16-bit PCM from READY on, and when each block of it played."""

    pcm: bytearray = field(default_factory=bytearray)
    blocks: list[PlayedBlock] = field(default_factory=list)
    rate: int = CALL_RATE

    def audio_stopped_after(self, at: float) -> float | None:
        """The session time the caller last heard agent audio before the first silence after ``at`` (or the end of
        the recording); ``None`` if the recording ends before ``at``."""
        for block in self.blocks:
            if block.at + block.samples / self.rate <= at:
                continue
            if block.agent_samples < block.samples:
                return max(at, block.at + block.agent_samples / self.rate)
        last = self.blocks[-1] if self.blocks else None
        return last.at + last.samples / self.rate if last and last.at + last.samples / self.rate > at else None


@dataclass
class _Segment:
    artifact_id: str
    pcm: bytearray
    complete: bool = False
    started: bool = False


class Playout:
    """Connect's playback of the agent's audio to the caller, one block per tick."""

    def __init__(self, output_rate: int, timeline: Timeline, recording: Recording, block_ms: int = 20) -> None:
        self.output_rate = output_rate
        self.block_bytes = CALL_RATE * block_ms // 1000 * 2
        self.timeline = timeline
        self.recording = recording
        self._queue: deque[_Segment] = deque()
        self._resamplers: dict[str, StreamResampler] = {}
        self._underrun: str | None = None

    @property
    def busy(self) -> bool:
        """Agent audio is waiting to be heard (or an artifact is still being received)."""
        return bool(self._queue)

    def add(self, artifact_id: str, pcm: bytes, *, last: bool) -> None:
        resampler = self._resamplers.setdefault(artifact_id, StreamResampler(self.output_rate, CALL_RATE))
        pcm8k = resampler(pcm, last=last)
        if last:
            del self._resamplers[artifact_id]
        segment = self._queue[-1] if self._queue and self._queue[-1].artifact_id == artifact_id else None
        if segment is None or segment.complete:
            segment = _Segment(artifact_id, bytearray())
            self._queue.append(segment)
        segment.pcm += pcm8k
        segment.complete = last

    def flush(self, at: float, reason: str) -> None:
        """Drops everything not yet heard; the artifact being heard stops now."""
        playing = self._queue[0] if self._queue and self._queue[0].started else None
        if playing is not None or self._underrun is not None:
            artifact = playing.artifact_id if playing else self._underrun
            self.timeline.add(at, "playback_stop", artifact=artifact, reason=reason)
        self._queue.clear()
        self._resamplers.clear()
        self._underrun = None

    def finish(self) -> None:
        """No more audio will come: what is queued counts as complete, so the playout can drain."""
        for artifact_id in list(self._resamplers):
            self.add(artifact_id, b"", last=True)
        for segment in self._queue:
            segment.complete = True

    def tick(self, at: float) -> None:
        """Plays the block starting at session time ``at``."""
        block = bytearray()
        agent_bytes = 0
        position = at
        while len(block) < self.block_bytes and self._queue:
            segment = self._queue[0]
            if not segment.started:
                segment.started = True
                self._underrun = None
                self.timeline.add(position, "playback_start", artifact=segment.artifact_id)
            take = segment.pcm[: self.block_bytes - len(block)]
            if take:
                self._underrun = None
            del segment.pcm[: len(take)]
            block += take
            agent_bytes += len(take)
            position = at + len(block) / 2 / CALL_RATE
            if segment.pcm:
                continue
            if segment.complete:
                self._queue.popleft()
                self.timeline.add(position, "playback_stop", artifact=segment.artifact_id, reason="complete")
            else:
                if self._underrun is None:
                    self._underrun = segment.artifact_id
                    self.timeline.add(position, "underrun", artifact=segment.artifact_id)
                break
        block += bytes(self.block_bytes - len(block))
        self.recording.blocks.append(
            PlayedBlock(at, len(self.recording.pcm) // 2, self.block_bytes // 2, agent_bytes // 2)
        )
        self.recording.pcm += block
