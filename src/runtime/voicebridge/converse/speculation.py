"""What speculation did, turn by turn: counted as metrics and in the turn table (``spec#<turn>``).

Each speculative attempt is started, then either committed (a hit) or cancelled (a miss, whose cost is counted: the
model's tokens, asked and said, and Sonic's stream time); a turn answered otherwise after an attempt is a miss. At
most ``max_per_turn`` attempts start per turn, so a caller who pauses often does not start a reply per pause.
"""

from __future__ import annotations

from collections import Counter

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.converse.making import CHARS_PER_TOKEN, ReplyInProgress, Report
from voicebridge.errors import VoiceBridgeError
from voicebridge.store.replies import ReplyStore
from voicebridge.store.turns import Turn
from voicebridge.telemetry import logger


class SpeculationLedger:
    """One contact's speculative attempts: how many each turn started, and what became of them."""

    def __init__(self, contact_id: str, replies: ReplyStore, report: Report, *, max_per_turn: int) -> None:
        self.contact_id = contact_id
        self._replies = replies
        self._report = report
        self._max_per_turn = max_per_turn
        self._starts: Counter[int] = Counter()

    def start(self, turn: int) -> int | None:
        """The number of a new attempt at ``turn``'s reply, or None once the turn has started as many as it may."""
        if self._starts[turn] >= self._max_per_turn:
            return None
        self._starts[turn] += 1
        self._report("SpeculativeStart", MetricUnit.Count, 1)
        return self._starts[turn] - 1

    def cancelled(self) -> None:
        self._report("SpeculativeMiss", MetricUnit.Count, 1)

    def committed(self, reply: ReplyInProgress, turn: Turn, committed_at_ms: float) -> None:
        """An attempt named as ``turn``'s reply (its own table write waits for :meth:`record_hit`)."""
        self._report("SpeculativeHit", MetricUnit.Count, 1)
        if reply.next_index and turn.latency_ms is not None:
            caller_stopped_ms = turn.ended_at_ms - turn.latency_ms
            ready_ms = max(0.0, committed_at_ms - caller_stopped_ms)
            self._report("ReplyFirstPromptReady", MetricUnit.Milliseconds, ready_ms)

    def record_hit(self, reply: ReplyInProgress) -> None:
        if reply.committed_at_ms is not None:
            self._note(reply.seq, outcome="hit", keys=reply.keys, committed_at_ms=reply.committed_at_ms, Hits=1)

    def answered_otherwise(self, turn: int) -> None:
        """``turn`` was answered by a reply made at its end, or is not answered (a backchannel): a miss, if it had
        attempts."""
        if self._starts[turn]:
            self._note(turn, outcome="miss")

    def record_waste(self, reply: ReplyInProgress) -> None:
        """What a cancelled attempt cost: the model's tokens (its own count when the stream got that far, else the
        conversation asked and the text received at :data:`CHARS_PER_TOKEN`; a system prompt is not counted then) and
        Sonic's stream time."""
        asked = reply.input_tokens if reply.input_tokens is not None else round(reply.request_chars / CHARS_PER_TOKEN)
        said = reply.output_tokens if reply.output_tokens is not None else round(reply.text_chars / CHARS_PER_TOKEN)
        tokens = asked + said
        self._report("SpeculativeWasteTokens", MetricUnit.Count, tokens)
        self._report("SpeculativeWasteSonicSeconds", MetricUnit.Seconds, reply.sonic_ms / 1000)
        self._note(reply.seq, Misses=1, WasteTokens=tokens, WasteSonicMs=round(reply.sonic_ms, 1))

    def _note(
        self,
        turn: int,
        *,
        outcome: str | None = None,
        keys: str | None = None,
        committed_at_ms: float | None = None,
        **counts: float,
    ) -> None:
        try:
            self._replies.note_speculation(
                self.contact_id,
                turn,
                outcome=outcome,
                starts=self._starts[turn],
                keys=keys,
                committed_at_ms=committed_at_ms,
                **counts,
            )
        except VoiceBridgeError as exc:
            logger.warning("speculation not counted", turn=turn, reason=exc.safe_message)
