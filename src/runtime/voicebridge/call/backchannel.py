"""When the agent's voice reached the caller on the flows path: what tells a backchannel from a turn.

A caller who says "uh-huh" or "right" while a reply plays is not asking for anything, and on the flows path a turn
Ink makes of it would otherwise be answered in the reply's place: its answer is what the flow plays next, and the
rest of the reply is never heard. Connect plays a prompt to its end whatever the caller says, so the agent's own
track shows whether it went on over the caller: media streaming carries what the caller hears on
``AUDIO_TO_CUSTOMER`` beside what they say (docs/protocols.md, *Kinesis Video Streams*), each frame on Connect's
clock. :class:`AgentVoice` keeps, for the last minute, the stretches that track was voiced; a caller's turn is a
backchannel when its voice was shorter than the limit (``CONVERSE_BACKCHANNEL_MS``) and the agent went on over it
(:meth:`AgentVoice.went_on_over`):

- its voice ran from before the caller's began to past its end (the prompt went on); or
- it was speaking as the caller began (within a pause between its words), and the reply had more to say: the reply
  is still being made, or the flow, done with one prompt, is waiting for the next while the caller speaks
  (ConverseFunction marks the sentence it holds back over a speaking caller in the reply status,
  :attr:`~voicebridge.store.replies.ReplyStatus.held_back`; the consumer reads it only for such a turn), or handed
  it out once the caller's short voice stopped (:attr:`~voicebridge.store.replies.ReplyStatus.went_on_for`). A
  reply's first segment is a short clause, so a backchannel often outlasts the prompt it began over.

Such a voice is not waited on to its turn's end: once it stops, short, begun over the agent, with Ink's words so far
only acknowledging, the transcriber marks it paused (:meth:`AgentVoice.began_over`), and ConverseFunction hands out
the sentence it held back, as the streaming path's agent goes on where it paused, without the second Ink takes to
end the turn.

A caller who answers the reply's last words, or who speaks long enough, takes a turn as before. The same track
says how much of the reply they heard by then (:meth:`AgentVoice.heard_through`): the reply's prompts play one after
another, the first from the first voice once the question it answers was over, each later one from the first voice
once the one before has played for its length; the prompt the caller began over plays to its end and no further one
is handed out over them, so the reply that answers them is asked with the rest marked not said
(:meth:`~voicebridge.converse.making.ReplyMaker._asked_history`), before ConverseFunction can mark where the flow
left it (once that prompt has ended).

The streaming path judges the same thing from its own player (:mod:`voicebridge.a2a.session`); both hand the
judgement to the transcriber, which stores such a turn marked as a backchannel and never answers it.

::

    voice = AgentVoice(backchannel_ms=600)
    voice.feed(pcm, produced_end_ms)          # every AUDIO_TO_CUSTOMER frame the consumer reads
    voice.went_on_over(start_ms, end_ms, more_to_say=reply_goes_on)   # the caller's voice, on the same clock
    voice.heard_through(durations, after_ms=asked_ms, began_ms=began_ms, ended_ms=ended_ms)   # a reply's prompts heard
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence

import numpy as np

from voicebridge.audio.vad import BYTES_PER_MS, FrameDetector, detector
from voicebridge.store.replies import ReplyStatus

FRAME_MS = 20
GAP_MS = 400
"""Quiet shorter than this inside the agent's voice is a pause between its words, not the end of its speech."""
WENT_ON_MS = 200
"""How far past the end of the caller's voice the agent's must reach for it to have gone on over them."""
KEEP_MS = 60_000
"""How much of the agent's voice is kept: far more than a turn takes to end."""
ONSET_QUIET_MS = 100
"""Quiet at least this long before voice is where a prompt may begin (between two words of one it is shorter)."""
LEAD_MS = 150
"""The quiet a prompt may begin with: its first voice on the track comes up to this long after it began to play."""
HANDED_MS = 300
"""A prompt whose voice began this soon after the caller's was handed out before they were marked speaking (their
voice read, judged, and written to the reply status the flow's ConverseFunction reads): it plays, and is heard. (One
begun later while they still spoke was too: the mark came late.)"""


class AgentVoice:
    """The stretches the agent's track was voiced, on Connect's clock (epoch ms), fed frame by frame."""

    def __init__(self, *, backchannel_ms: int, voice: FrameDetector | None = None) -> None:
        self._backchannel_ms = backchannel_ms
        # The agent's track is the product's prompts and Connect's: its level is enough, held to the track's own noise
        # floor, so a steady hiss or comfort noise between prompts is not the agent speaking.
        self._detector = voice or detector("energy")
        self._spans: deque[list[float]] = deque()
        self._onsets: deque[list[float]] = deque()
        """The same voice as :attr:`_spans`, parted wherever it was quiet for :data:`ONSET_QUIET_MS`."""
        self._through_ms = -math.inf
        self._from_ms = math.inf
        """Where the voice kept begins: the track's first frame, or :data:`KEEP_MS` before its last."""
        self._pending = b""

    def feed(self, pcm: bytes, produced_end_ms: float | None) -> None:
        """A frame of the agent's track ending at ``produced_end_ms``; a frame with no time, or one already seen (a
        GetMedia reconnect reads a fragment again), adds nothing. Frames are judged in whole 20 ms pieces, the rest
        kept for the next frame when it follows on."""
        if produced_end_ms is None or produced_end_ms <= self._through_ms:
            return
        start_ms = produced_end_ms - len(pcm) / BYTES_PER_MS
        if start_ms < self._through_ms:
            seen = int((self._through_ms - start_ms) * BYTES_PER_MS) // 2 * 2
            pcm, start_ms = pcm[seen:], start_ms + seen / BYTES_PER_MS
        if self._pending and abs(start_ms - self._through_ms) < 1:
            pcm, start_ms = self._pending + pcm, start_ms - len(self._pending) / BYTES_PER_MS
        self._through_ms = produced_end_ms
        self._from_ms = max(min(self._from_ms, start_ms), produced_end_ms - KEEP_MS)
        frame_bytes = FRAME_MS * BYTES_PER_MS
        count = len(pcm) // frame_bytes
        self._pending = pcm[count * frame_bytes :]
        if count == 0:
            return
        samples = np.frombuffer(pcm, dtype="<i2", count=count * frame_bytes // 2).astype(np.float32) / 32768.0
        for index, voiced in enumerate(self._detector.voiced(samples.reshape(count, -1))):
            if voiced:
                self._voiced(start_ms + index * FRAME_MS, start_ms + (index + 1) * FRAME_MS)
        for kept in (self._spans, self._onsets):
            while kept and kept[0][1] < produced_end_ms - KEEP_MS:
                kept.popleft()

    def _voiced(self, start_ms: float, end_ms: float) -> None:
        for kept, gap_ms in ((self._spans, GAP_MS), (self._onsets, ONSET_QUIET_MS)):
            if kept and start_ms - kept[-1][1] < gap_ms:
                kept[-1][1] = end_ms
            else:
                kept.append([start_ms, end_ms])

    def went_on_over(self, start_ms: float, end_ms: float, more_to_say: Callable[[], bool] = lambda: False) -> bool:
        """Whether the caller's voice from ``start_ms`` to ``end_ms`` was a backchannel: shorter than the limit, and
        the agent went on over it: its voice ran from before it began to :data:`WENT_ON_MS` past its end, or it was
        speaking as the caller began and its reply had more to say (``more_to_say``, asked only then: the flow waits
        between two prompts while the caller speaks)."""
        if end_ms - start_ms >= self._backchannel_ms:
            return False
        spans = list(self._spans)
        if any(low <= start_ms and end_ms + WENT_ON_MS <= high for low, high in spans):
            return True
        return self.began_over(start_ms, end_ms) and more_to_say()

    def began_over(self, start_ms: float, end_ms: float) -> bool:
        """Whether the caller's voice from ``start_ms`` to ``end_ms`` was shorter than the limit and began while the
        agent was speaking (within a pause between its words): one that stopped may be a backchannel, and the flow
        need not hold the reply's next sentence for it (:meth:`~voicebridge.call.speaking.SpeakingMarks.pause`)."""
        if end_ms - start_ms >= self._backchannel_ms:
            return False
        return any(low <= start_ms <= high + GAP_MS for low, high in list(self._spans))

    def heard_through(
        self, durations: Sequence[int | None], *, after_ms: float, began_ms: float, ended_ms: float | None = None
    ) -> tuple[int, float] | None:
        """How many of a reply's prompts (each ``durations`` long, in order) the caller heard, given their voice from
        ``began_ms`` to ``ended_ms`` (None: not ended), and when the last of those ends (Connect's clock). The first
        begins with the first voice from ``after_ms`` on (once the caller it answers was done, and whatever played
        then was over), each later one with the first voice once the one before has played for its length. Each one
        begun before the caller's voice ended was played (the answer to their voice cannot play before it ends), as
        was one begun within :data:`HANDED_MS` of its start; each plays to its end. None when the track does not
        tell: not read that far, or a prompt of unknown length (Connect's own voice) before then."""
        played_by = max(began_ms + HANDED_MS, -math.inf if ended_ms is None else ended_ms)
        if played_by > self._through_ms:
            return None
        walked = self._walk(durations, after_ms, played_by)
        return None if walked is None else (walked[0], walked[1] + walked[2])

    def played(self, durations: Sequence[int | None], *, after_ms: float) -> tuple[int, float] | None:
        """How many of a reply's prompts (found as :meth:`heard_through` finds them) had begun by the end of the
        track read — the call's end, once the stream has ended — and how much of the last of them had played by then
        (1.0: all of it). None when the track does not tell."""
        walked = self._walk(durations, after_ms, self._through_ms)
        if walked is None:
            return None
        count, start_ms, duration = walked
        if count == 0 or duration <= 0:
            return count, 1.0
        # Its first voice may have come up to LEAD_MS into it: what played is measured from that much before.
        return count, min(1.0, (self._through_ms - start_ms + LEAD_MS) / duration)

    def _walk(
        self, durations: Sequence[int | None], after_ms: float, played_by: float
    ) -> tuple[int, float, float] | None:
        """The prompts that began by ``played_by``: how many, the last one's start and its length (``after_ms`` and
        0 when none did); None when the track kept does not reach back to ``after_ms``, or a prompt of unknown
        length comes first. The first begins with the first voice after a quiet from ``after_ms`` on; each later one
        with the first voice once the one before has played for its length from its first voice (which is past its
        end: the flow may hand the next one out at once, with no quiet between them)."""
        if not durations or after_ms < self._from_ms:
            return None
        runs = list(self._onsets)
        start = next((low for low, _high in runs if low >= after_ms), None)
        last = (after_ms, 0.0)
        for index, duration in enumerate(durations):
            if start is None or start > played_by:
                return index, *last
            if duration is None:
                return None
            last = (start, float(duration))
            ends_ms = start + duration
            start = next((max(low, ends_ms) for low, high in runs if high > ends_ms), None)
        return len(durations), *last


def holding_back(status: ReplyStatus | None) -> bool:
    """Whether the flow waits to play a further sentence of the latest reply, held back over the speaking caller (a
    mark left for an earlier reply, which a newer one has replaced, says nothing), or went on with it over the
    caller's turn being judged, once its short voice stopped."""
    if status is None:
        return False
    went_on = status.went_on_for is not None and status.went_on_for == status.speaking_turn
    return went_on or (status.held_back is not None and status.held_back[0] == status.turn)
