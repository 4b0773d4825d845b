"""The agent's voice into the call: each response's audio, sent as ``AUDIO_RESPONSE_CHUNK``s a little ahead of what
Connect plays, so that the agent can stop at once.

Connect buffers what it is sent and plays it in real time; it drops what it holds only on an ``INTERRUPTION``. Sent
as fast as Sonic makes it, a reply would sit in Connect's buffer for seconds, and the only way to stop it would be to
drop it. So audio goes out as it arrives while Connect holds less than ``lead_ms`` (a reply's first audio leaves the
moment it exists), and no faster than it plays after that: a chunk goes out only if Connect then holds no more than
``lead_ms``, and a chunk is at most half the lead, so the next one fits while Connect still has the one before to play
and its buffer never runs dry between two calls of :meth:`Player.due`. Then:

- **pause** (the caller may be talking): nothing more is sent; the caller hears at most ``lead_ms`` more. A
  backchannel ("uh-huh") ends and :meth:`Player.resume` goes on where the audio stopped: nothing was lost.
- **interrupt** (the caller is talking): everything queued is dropped, Connect is told to flush (``INTERRUPTION``),
  no ``lastChunk`` is sent for the interrupted response and the next one gets a fresh ``artifactId``.

A response is one artifact: its chunks share an ``artifactId``, the first with ``append: false``, the last with
``lastChunk: true`` (an empty chunk once the response has :meth:`Player.end`\\ ed, since the last audio has usually
gone out by then). A response made speculatively stays held (``released()`` false) until its reply is committed,
and is forgotten if it is cancelled. The player is sans-I/O: the session calls :meth:`Player.due` every few
milliseconds and sends what it returns; Sonic's threads :meth:`Player.push`.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from voicebridge.a2a.protocol import audio_chunk_frame


@dataclass(eq=False)
class Response:
    """One spoken response (one artifact) of a turn's task."""

    task_id: str
    released: Callable[[], bool] = lambda: True
    """Whether its audio may go out (a speculative reply: once committed)."""
    dropped: Callable[[], bool] = lambda: False
    """Whether it was cancelled before it was heard (a speculative reply the caller's words did not confirm)."""
    waits: Callable[[], bool] = lambda: False
    """Whether its first audio waits (the caller is speaking a turn after the one it answers): asked until it begins,
    never once it has."""
    artifact_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    queue: deque[bytes] = field(default_factory=deque)
    ended: bool = False
    queued_bytes: int = 0
    pushed_bytes: int = 0
    """Everything pushed for it so far, sent or not."""
    sent_bytes: int = 0
    frames: int = 0
    closed: bool = False
    """Its ``lastChunk`` went out (or it was interrupted): nothing more is sent under its artifact."""
    interrupted: bool = False
    unheard: bool = False
    """Dropped by an interruption before any of its audio was made (never sent, nothing for Connect to flush)."""
    played_out_at: float = 0.0
    """When Connect will have played everything sent of it (monotonic seconds)."""
    first_sent_at: float | None = None


class Player:
    """The responses of one session, in order, paced into Connect's buffer."""

    def __init__(self, context_id: str, sample_rate: int, *, lead_ms: float, chunk_bytes: int) -> None:
        self.context_id = context_id
        self.bytes_per_s = sample_rate * 2
        self._lead_s = lead_ms / 1000
        chunk_bytes = min(chunk_bytes, int(self.bytes_per_s * self._lead_s / 2))
        self._chunk_bytes = max(2, chunk_bytes - chunk_bytes % 2)
        self._lock = threading.Lock()
        self._responses: deque[Response] = deque()
        self._paused = False
        self.buffered_until = 0.0
        """When Connect's buffer runs dry of everything sent so far (monotonic seconds)."""

    # -- from the threads that make audio

    def open(
        self,
        task_id: str,
        *,
        released: Callable[[], bool] | None = None,
        dropped: Callable[[], bool] | None = None,
        waits: Callable[[], bool] | None = None,
    ) -> Response:
        response = Response(task_id)
        if released is not None:
            response.released = released
        if dropped is not None:
            response.dropped = dropped
        if waits is not None:
            response.waits = waits
        with self._lock:
            self._responses.append(response)
        return response

    def push(self, response: Response, pcm: bytes) -> None:
        if not pcm:
            return
        with self._lock:
            if response.closed:
                return
            response.queue.append(pcm)
            response.queued_bytes += len(pcm)
            response.pushed_bytes += len(pcm)

    def end(self, response: Response) -> None:
        """No more audio will come for ``response``: its ``lastChunk`` follows its audio."""
        with self._lock:
            response.ended = True

    # -- from the session

    def pause(self) -> None:
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        with self._lock:
            self._paused = False

    @property
    def paused(self) -> bool:
        return self._paused

    def interrupt(self, now: float, *, keep_held: bool = False) -> list[Response]:
        """Drop everything not yet sent; the responses cut short (their audio was being heard or was due). With
        ``keep_held``, a response still held back (a speculative reply not yet committed, none of it sent) stays.
        A response dropped before any of its audio was made is marked ``unheard``: Connect holds nothing of it to flush,
        and what it would have done once heard (a hand-back, a goodbye) is not done."""
        with self._lock:
            kept = [r for r in self._responses if keep_held and not r.sent_bytes and not r.released()]
            gone = [r for r in self._responses if r not in kept]
            cut = [r for r in gone if not r.closed and (r.sent_bytes or r.queue) and not r.dropped()]
            for response in gone:
                response.interrupted = response in cut
                response.unheard = not (response.closed or response.interrupted or response.dropped())
                response.closed = True
                response.queue.clear()
            self._responses = deque(kept)
            self._paused = False
            self.buffered_until = now
        return cut

    def audible(self, now: float) -> bool:
        """Whether the caller is hearing the agent now (Connect still has audio to play)."""
        return self.buffered_until > now

    def waiting_to_begin(self) -> bool:
        """The next response that may go out has not begun: nothing of it sent yet (it waits for the caller, or for
        its audio)."""
        with self._lock:
            head = next((r for r in self._responses if not r.closed and not r.dropped()), None)
            return head is not None and head.released() and head.first_sent_at is None

    def busy(self, now: float) -> bool:
        """Audio is playing, or waiting to be sent (a response not yet ended counts as waiting)."""
        with self._lock:
            waiting = any(not r.closed and not r.dropped() for r in self._responses)
        return waiting or self.audible(now)

    def heard_bytes(self, response: Response, now: float) -> int:
        """How much of ``response`` Connect has played by ``now``: what was sent less what its buffer still holds."""
        unplayed = max(0.0, response.played_out_at - now) * self.bytes_per_s
        return max(0, response.sent_bytes - int(unplayed))

    def due(self, now: float) -> list[str]:
        """The frames to send now: audio while Connect holds less than the lead, each response's end."""
        frames: list[str] = []
        with self._lock:
            while self._responses:
                response = self._responses[0]
                if response.closed or response.dropped():
                    response.closed = True
                    self._responses.popleft()
                    continue
                if not response.released() or (response.first_sent_at is None and response.waits()):
                    break
                if not self._paused:
                    frames += self._send_audio(response, now)
                if response.queue or not response.ended or self._paused:
                    break
                frames.append(self._frame(response, b"", last=True))
                response.closed = True
                self._responses.popleft()
        return frames

    def _send_audio(self, response: Response, now: float) -> list[str]:
        frames = []
        while response.queue:
            held_s = max(0.0, self.buffered_until - now)
            if held_s + min(self._chunk_bytes, response.queued_bytes) / self.bytes_per_s > self._lead_s + 1e-9:
                break
            pcm = self._take(response)
            if response.first_sent_at is None:
                response.first_sent_at = now
            self.buffered_until = max(self.buffered_until, now) + len(pcm) / self.bytes_per_s
            response.played_out_at = self.buffered_until
            frames.append(self._frame(response, pcm, last=False))
        return frames

    def _take(self, response: Response) -> bytes:
        """Up to a chunk's worth of the queued audio, whole samples."""
        taken = bytearray()
        while response.queue and len(taken) < self._chunk_bytes:
            head = response.queue.popleft()
            room = self._chunk_bytes - len(taken)
            if len(head) > room:
                response.queue.appendleft(head[room:])
                head = head[:room]
            taken += head
        response.queued_bytes -= len(taken)
        return bytes(taken)

    def _frame(self, response: Response, pcm: bytes, *, last: bool) -> str:
        frame = audio_chunk_frame(
            self.context_id, response.task_id, response.artifact_id, pcm, append=response.frames > 0, last=last
        )
        response.frames += 1
        response.sent_bytes += len(pcm)
        return frame
