"""Audio for Ink at the pace it accepts: never more than one second of audio per second, and back to live after a
backlog without losing the caller's words.

Cartesia: "realtime endpoints can only accept one second of audio data per second, i.e. audio needs to be sent 'in
real time'" (docs.cartesia.ai, *Compare STT endpoints*; the official examples pace 100 ms chunks). Live audio from
KVS arrives at that pace already; a *backlog* does not — the start of a call (the consumer starts a second or two
after the caller's audio), a GetMedia reconnect, an Ink session replaying the unsettled audio, a hand-over. Sent at
one second per second, a backlog would never be caught up: every turn after it would end late by as much.

So the pacer does two things, sans I/O (the owner passes ``now`` and sends what :meth:`Pacer.due` returns):

- **Budget.** A session may have been sent at most ``elapsed + burst_ms`` of audio since it opened. Live audio
  that arrives late and bunched (network jitter) goes out at once, because the budget accrues while nothing is
  sent; only audio beyond it waits.
- **Catching up.** While more than ``catch_up_after_ms`` (about one block) is waiting and no turn is open in Ink,
  silent chunks beyond the first ``keep_silence_ms`` of each silent run are dropped from the queue instead of sent.
  Silent is what the owner's voice detector judged unvoiced (:meth:`Pacer.push`'s ``silent``), so a line's noise is
  caught up like a clean line's silence; audio pushed without a judgment (a replay, the keep-alive's zeros) is silent
  when its RMS is below ``silence_dbfs``, well under any voice. A silent chunk is dropped only once the chunk after
  it is queued and silent too: a detector finds a voice's first tens of milliseconds a chunk late. While a turn is
  open nothing is dropped: Ink ends a turn only on the silence it hears, and a shortened pause could join two turns.
  So Ink hears every word and every pause that ends a turn, and the session returns to live at the caller's next
  long pause (at once at the start of a call, when the caller is listening to the greeting). Dropped silence is
  reported (:attr:`Pacer.skipped_ms`), never counted as sent. ``INK_CATCH_UP=off`` turns this off (every byte is
  sent, and a backlog's delay stays for the rest of the call).

::

    pacer = Pacer()
    pacer.open(now)
    pacer.push(pcm, now)
    for chunk in pacer.due(now):
        session.send_audio(chunk)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from voicebridge.audio.vad import BYTES_PER_MS

CATCH_UP_AFTER_MS = 100.0
"""Audio waiting beyond about one block means the session is behind live."""


FINALIZE = "finalize"
"""A marker queued with the audio: Ink is asked to finalize once everything queued before it has been sent."""


@dataclass(frozen=True, slots=True)
class _Queued:
    pcm: bytes
    silent: bool
    marker: str | None = None


class Pacer:
    """The send queue of one Ink session."""

    def __init__(
        self,
        *,
        burst_ms: float = 200.0,
        catch_up_after_ms: float = CATCH_UP_AFTER_MS,
        keep_silence_ms: float = 300.0,
        silence_dbfs: float = -50.0,
    ) -> None:
        self.burst_ms = burst_ms
        self.catch_up_after_ms = catch_up_after_ms
        self.keep_silence_ms = keep_silence_ms
        self._silence_rms = 32768.0 * 10 ** (silence_dbfs / 20.0)
        self._queue: deque[_Queued] = deque()
        self._queued_bytes = 0
        self._opened_at: float | None = None
        self._sent_ms = 0.0
        self._silent_run_ms = 0.0
        self.skipped_ms = 0.0
        """Silence dropped to catch up, since the pacer was made."""
        self.passed_bytes = 0
        """Audio the session has been sent or has skipped, since it opened: how far Ink has heard the stream."""

    def open(self, now: float) -> None:
        """A new session: its budget starts now, and nothing is queued."""
        self._opened_at = now
        self._sent_ms = 0.0
        self._silent_run_ms = 0.0
        self._queue.clear()
        self._queued_bytes = 0
        self.passed_bytes = 0

    def push(self, pcm: bytes, *, silent: bool | None = None) -> None:
        """Queue audio for the session (in order), ``silent`` as the voice detector judged it (None: not judged,
        silent if its level is below ``silence_dbfs``)."""
        if not pcm:
            return
        self._queue.append(_Queued(pcm, self._is_silent(pcm) if silent is None else silent))
        self._queued_bytes += len(pcm)

    def push_marker(self, marker: str) -> None:
        """Queue a command (e.g. :data:`FINALIZE`) to go out right after the audio queued before it."""
        self._queue.append(_Queued(b"", False, marker))

    def due(self, now: float, *, may_skip: bool = True) -> list[bytes | str]:
        """The queued audio the budget allows now, oldest first; when catching up and ``may_skip`` (no turn is open
        in Ink), long silences are dropped."""
        if self._opened_at is None:
            return []
        budget_ms = (now - self._opened_at) * 1000 + self.burst_ms - self._sent_ms
        out: list[bytes | str] = []
        while self._queue:
            head = self._queue[0]
            if head.marker is not None:
                self._queue.popleft()
                out.append(head.marker)
                continue
            ms = len(head.pcm) / BYTES_PER_MS
            if head.silent:
                if (
                    may_skip
                    and self._catching_up()
                    and self._silent_run_ms + ms > self.keep_silence_ms
                    and self._silence_follows()
                ):
                    self._silent_run_ms += ms
                    self._pop()
                    self.skipped_ms += ms
                    continue
            else:
                self._silent_run_ms = 0.0
            if ms > budget_ms:
                break
            if head.silent:
                self._silent_run_ms += ms
            self._pop()
            out.append(head.pcm)
            budget_ms -= ms
            self._sent_ms += ms
        return out

    @property
    def waiting_ms(self) -> float:
        """Audio queued and not yet sent: how far behind live the session is."""
        return self._queued_bytes / BYTES_PER_MS

    def drop_queue(self) -> None:
        """The session is gone: what it had not been sent will be replayed to the next one."""
        self._queue.clear()
        self._queued_bytes = 0

    def _pop(self) -> None:
        size = len(self._queue.popleft().pcm)
        self._queued_bytes -= size
        self.passed_bytes += size

    def _silence_follows(self) -> bool:
        return len(self._queue) > 1 and self._queue[1].silent

    def _catching_up(self) -> bool:
        return self.waiting_ms > self.catch_up_after_ms

    def _is_silent(self, pcm: bytes) -> bool:
        samples = np.frombuffer(pcm, dtype="<i2", count=len(pcm) // 2).astype(np.float32)
        return samples.size == 0 or float(np.sqrt(np.mean(np.square(samples)))) < self._silence_rms
