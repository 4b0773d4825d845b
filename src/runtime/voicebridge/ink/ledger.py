"""Where one track's audio stands: what has been sent to Ink, what is settled, and what a new session must replay.

Pure bookkeeping — no I/O, no locks, no clock of its own (the caller passes ``now``) — so it can be tested with any
chunking and any reconnect point.

Audio arrives addressed by its place in KVS: (fragment number, byte offset into that fragment's audio of this
track). The ledger also counts it in bytes since the start of the contact's stream.

- **Sent** is how far audio has been admitted for Ink. :meth:`PositionLedger.admit` returns only the part of a frame
  not admitted before, so audio seen again (a GetMedia reconnect, a continuation that starts one fragment early) is
  never sent twice.
- **Settled** is how far audio belongs to finished turns or to silence Ink has had time to react to. Everything
  between settled and sent is *unsettled*: a new Ink session replays exactly that (:attr:`PositionLedger.unsettled`),
  and a hand-over checkpoints the settled position (:attr:`PositionLedger.settled`) so the next invocation starts
  there.
- **Silent points** are places where nothing was pending (no turn open, no voice): once Ink has had ``ack_s`` to
  start a turn there and has not, everything up to the point settles (:meth:`PositionLedger.settle_acknowledged`).

::

    ledger = PositionLedger(TrackProgress())
    fresh = ledger.admit("91343852333181452199722691208580038832309429352", 0, pcm, produced_end_ms=None)
    ledger.mark_silent_point(now=12.5)
    ledger.settle_acknowledged(now=13.0, ack_s=0.4)
    checkpoint_progress = ledger.settled
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from voicebridge.audio.vad import BYTES_PER_MS
from voicebridge.store.turns import TrackProgress


@dataclass(frozen=True, slots=True)
class Chunk:
    """Unsettled audio: where it came from in KVS and where it sits in the contact's stream."""

    stream_start: int
    fragment: str
    offset: int
    length: int
    produced_end_ms: float | None
    """Connect's clock (epoch ms) at the end of the chunk, when the fragment's tags gave it."""

    @property
    def stream_end(self) -> int:
        return self.stream_start + self.length


@dataclass(frozen=True, slots=True)
class SilentPoint:
    """A point at which everything admitted could settle, once Ink has had time to react."""

    at: float
    stream_bytes: int


class PositionLedger:
    """Sent, settled and unsettled audio of one track."""

    def __init__(self, progress: TrackProgress, *, max_unsettled_bytes: int) -> None:
        self.settled = TrackProgress(progress.fragment, progress.offset, progress.stream_bytes, progress.next_seq)
        self.max_unsettled_bytes = max_unsettled_bytes
        self._sent_fragment = progress.fragment
        self._sent_offset = progress.offset
        self.sent_bytes = progress.stream_bytes
        self._unsettled = bytearray()
        self._chunks: deque[Chunk] = deque()
        self._silent_points: deque[SilentPoint] = deque()

    # -- admitting audio

    def admit(self, fragment: str, offset: int, pcm: bytes, produced_end_ms: float | None) -> bytes:
        """Record the part of ``pcm`` (at ``offset`` bytes into ``fragment``) not admitted before, and return it."""
        fresh = self._unseen(fragment, offset, pcm)
        if not fresh:
            return b""
        start_offset = offset + len(pcm) - len(fresh)
        self._chunks.append(Chunk(self.sent_bytes, fragment, start_offset, len(fresh), produced_end_ms))
        self._sent_fragment, self._sent_offset = fragment, offset + len(pcm)
        self.sent_bytes += len(fresh)
        self._unsettled += fresh
        if len(self._unsettled) > self.max_unsettled_bytes:
            # One uninterrupted utterance longer than the window: its oldest audio cannot be replayed any more.
            self.settle_to(self.sent_bytes - self.max_unsettled_bytes)
        return fresh

    def _unseen(self, fragment: str, offset: int, pcm: bytes) -> bytes:
        if self._sent_fragment is None:
            return pcm
        here, sent = int(fragment), int(self._sent_fragment)
        if here < sent:
            return b""
        if here == sent:
            if offset + len(pcm) <= self._sent_offset:
                return b""
            return pcm[max(0, self._sent_offset - offset) :]
        return pcm

    # -- settling

    def settle_to(self, stream_bytes: int) -> None:
        """Settle everything before ``stream_bytes`` (never beyond what was admitted)."""
        stream_bytes = min(stream_bytes, self.sent_bytes)
        drop = stream_bytes - self.settled.stream_bytes
        if drop <= 0:
            return
        del self._unsettled[:drop]
        while self._chunks and self._chunks[0].stream_end <= stream_bytes:
            self._chunks.popleft()
        if self._chunks and self._chunks[0].stream_start < stream_bytes:
            head = self._chunks[0]
            cut = stream_bytes - head.stream_start
            self._chunks[0] = Chunk(stream_bytes, head.fragment, head.offset + cut, head.length - cut, None)
        while self._silent_points and self._silent_points[0].stream_bytes <= stream_bytes:
            self._silent_points.popleft()
        if self._chunks:
            self.settled.fragment, self.settled.offset = self._chunks[0].fragment, self._chunks[0].offset
        else:
            self.settled.fragment, self.settled.offset = self._sent_fragment, self._sent_offset
        self.settled.stream_bytes = stream_bytes

    def mark_silent_point(self, now: float) -> None:
        """Everything admitted so far could settle once Ink has had time to react (nothing is pending)."""
        if self._silent_points and self._silent_points[-1].stream_bytes == self.sent_bytes:
            return
        if self.sent_bytes > self.settled.stream_bytes:
            self._silent_points.append(SilentPoint(now, self.sent_bytes))

    def forget_silent_points(self) -> None:
        """A turn started (or a session was replaced): the silent points seen so far are not silent to Ink."""
        self._silent_points.clear()

    def settle_acknowledged(self, now: float, ack_s: float) -> bool:
        """Settle up to the latest silent point older than ``ack_s``; whether anything settled."""
        target = None
        while self._silent_points and self._silent_points[0].at <= now - ack_s:
            target = self._silent_points.popleft().stream_bytes
        if target is None:
            return False
        self.settle_to(target)
        return True

    # -- what the owner reads

    @property
    def unsettled(self) -> bytes:
        """The audio a new session must be sent first, oldest first."""
        return bytes(self._unsettled)

    @property
    def unsettled_bytes(self) -> int:
        return self.sent_bytes - self.settled.stream_bytes

    @property
    def quiet(self) -> bool:
        """Nothing unsettled: a new session or a hand-over replays nothing."""
        return self.sent_bytes == self.settled.stream_bytes

    def produced_at(self, stream_ms: float) -> float | None:
        """When the audio at ``stream_ms`` was produced (Connect's clock), if it is still unsettled."""
        position = stream_ms * BYTES_PER_MS
        for chunk in self._chunks:
            if chunk.stream_start <= position <= chunk.stream_end and chunk.produced_end_ms is not None:
                return chunk.produced_end_ms - (chunk.stream_end - position) / BYTES_PER_MS
        return None
