"""Whether the caller is mid-turn, in the contact's checkpoint and reply status: what lets a long poll say
``Listening``, and hold a reply's next sentence back.

A long poll that runs out while the caller is still speaking must not answer ``Timeout``: the flow would take it for
silence and play "Are you still there?" over the caller; and a sentence handed out while the caller speaks is said
over them. The transcriber says when the caller begins — its own voice detection hears the utterance open, Ink's
``turn.start`` follows a few hundred milliseconds later — and the turn is over once it is stored, or once the
utterance closed with no turn begun (a cough, a word Ink did not take for a turn). :class:`SpeakingMarks` writes the
start of the open turn into the checkpoint (``SpeakingSince``) and, when the flow converses, into the reply status
too, which ConverseFunction reads on every look anyway; it clears both when that turn is stored or comes to nothing.
A short voice said over the agent ("uh-huh") that has stopped is marked paused in the reply status
(:meth:`SpeakingMarks.pause`): the turn is still open (Ink has not ended it), but the poll need not hold the reply's
next sentence for it, as the streaming path's agent goes on where it paused.
The writes go out on a thread of their own — neither the audio path nor Ink's receiver waits on DynamoDB — and only
the newest state is written, so a burst of turns costs at most one write in flight and one waiting::

    marks = SpeakingMarks(store, contact_id, generation, replies=replies)
    marks.update(seq, True)     # the caller began turn ``seq`` (heard by the voice detector, or Ink's turn.start)
    marks.update(seq, False)    # turn ``seq`` is stored (a later turn's start is not undone)
    marks.pause(seq, True)      # turn ``seq``'s short voice over the agent stopped (False: it resumed)
    marks.close(timeout_s=1.0)
"""

from __future__ import annotations

import threading

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.errors import Superseded, VoiceBridgeError
from voicebridge.store.replies import ReplyStore
from voicebridge.store.turns import TurnStore
from voicebridge.telemetry import in_context, logger

RETRY_S = 1.0
"""How long a refused write waits before it is tried again (the newest state then)."""


def open_turn(open_now: int | None, seq: int, speaking: bool) -> int | None:
    """The caller's turn in progress once turn ``seq`` began (``speaking``) or is over, ``open_now`` before: the end
    of an earlier turn leaves a later one open."""
    if speaking:
        return seq
    return None if open_now is None or open_now <= seq else open_now


class SpeakingMarks:
    """The open turn of one contact's caller, written to its checkpoint (and, with ``replies``, its reply status) on a
    thread of its own."""

    def __init__(
        self,
        store: TurnStore,
        contact_id: str,
        generation: int,
        *,
        replies: ReplyStore | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self._store = store
        self.replies = replies
        """Where the mark is also written for ConverseFunction's poll, when the flow converses (set before the first
        :meth:`update`)."""
        self._contact_id = contact_id
        self._generation = generation
        self._clock = clock
        self._wake = threading.Condition()
        self._open: int | None = None
        self._since_ms = 0
        self._paused_ms = 0
        self._written: tuple[int, int | None, int] = (0, None, 0)
        self._closing = False
        self._started = False
        self._thread = threading.Thread(target=in_context(self._run), name="speaking-marks", daemon=True)

    def update(self, seq: int, speaking: bool) -> None:
        """Turn ``seq`` began (``speaking``) or is over; the end of an earlier turn leaves a later one open."""
        with self._wake:
            if not self._started and not self._closing:
                # Started by the first turn, once: an invocation that never hears one never starts it, and a thread
                # that stopped (the contact passed to a newer consumer) is not started again.
                self._started = True
                self._thread.start()
            opened = open_turn(self._open, seq, speaking)
            if opened != self._open:
                self._open, self._since_ms = opened, 0 if opened is None else int(self._clock.time() * 1000)
                self._paused_ms = 0
            self._wake.notify()

    def pause(self, seq: int, paused: bool) -> None:
        """The short voice of turn ``seq``, said over the agent, stopped (``paused``) or resumed; nothing for a turn
        that is not the open one (it ended meanwhile). Marked in the reply status only: the checkpoint's mark, for
        ``Listening``, stands until the turn is over."""
        with self._wake:
            if self._open != seq or self.replies is None:
                return
            self._paused_ms = int(self._clock.time() * 1000) if paused else 0
            self._wake.notify()

    @property
    def since_ms(self) -> int:
        """When the open turn began (epoch ms), 0 when none is open: what a hand-over saves in the checkpoint."""
        with self._wake:
            return self._since_ms

    def close(self, *, timeout_s: float) -> None:
        """Write the last state (a turn still open at a hand-over stays marked) and stop."""
        with self._wake:
            self._closing = True
            self._wake.notify()
            started = self._started
        if started:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._wake:
                while (self._since_ms, self._open, self._paused_ms) == self._written and not self._closing:
                    self._wake.wait()
                if (self._since_ms, self._open, self._paused_ms) == self._written:
                    return
                since, turn, paused = self._since_ms, self._open, self._paused_ms
            try:
                # The checkpoint first: its condition is what stops a consumer that lost the contact. A pause alone
                # changes only the status.
                if (since, turn) != self._written[:2]:
                    self._store.mark_speaking(self._contact_id, self._generation, since)
                if self.replies is not None:
                    self.replies.mark_speaking(self._contact_id, since, -1 if turn is None else turn, paused)
            except Superseded:
                return
            except VoiceBridgeError as exc:
                logger.warning("could not record whether the caller is speaking", reason=exc.safe_message)
                with self._wake:
                    if self._closing:
                        return
                self._clock.sleep(RETRY_S)
                continue
            with self._wake:
                self._written = (since, turn, paused)
