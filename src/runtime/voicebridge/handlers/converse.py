"""ConverseFunction: what the flow plays next in a conversation with the agent, long-polled within Connect's 8 s.

Input: ``TurnIndex`` and ``Segment`` of what the flow just played (absent at the start), optional ``MaxWaitMs``.
Output: ``Result=Speak`` with ``PromptUri``, ``Text`` (the sentence it speaks), ``TurnIndex``, ``Segment``,
``More``, ``Transcript``, ``Action`` and the responder's attributes; ``Result=Fallback`` with ``Text`` and no
``PromptUri`` when Sonic could not speak the sentence; ``Result=OK`` with ``Action`` when the reply is over and the
flow must transfer or hang up; when the wait ran out, ``Result=Listening`` with ``SpeakingMs`` while the caller is
mid-turn, ``Result=Thinking`` with ``TurnIndex``, ``ThinkingMs`` and ``Hold`` while a reply is still being made or
when the table answered none of the poll's looks in time (both with ``PromptUri``, a short silent prompt to play
before asking again), else ``Result=Timeout``; ``Result=Error``
(``NotListening``, ``InvalidInput``…). ``Hold=true`` says to play a holding line: once the reply has been
``CONVERSE_HOLD_AFTER_MS`` in the making with nothing of it played, unless ``HeldTurn`` (an input: the turn the flow
last held) is that turn. See :mod:`voicebridge.polls.next_segment`.
An answer too long for Connect's 32 KB has its ``Transcript``, then its ``Text``, cut on a character boundary and says
``Truncated=true``.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.connect.events import TRUNCATED, ContactFlowEvent, response, whole_number
from voicebridge.handlers._edge import connect_edge
from voicebridge.handlers._longpoll import listening, poll_start
from voicebridge.polls.next_segment import Next, next_to_play
from voicebridge.store.turns import MAX_SEQ
from voicebridge.telemetry import metrics

RESERVED = frozenset({"Result", "PromptUri", "Text", "TurnIndex", "Segment", "More", "Transcript", "Action", TRUNCATED})


@connect_edge(errors="ListenErrors", truncate=("Transcript", "Text"))
def _converse(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    poll = poll_start(event, context)
    config = container.settings()
    found = next_to_play(
        event.contact_id,
        event.parameters,
        replies=container.reply_store(),
        turns=poll.turns,
        max_wait_ms=config.converse_max_wait_ms,
        fast_poll_ms=config.converse_fast_poll_ms,
        slow_poll_ms=config.converse_slow_poll_ms,
        making_poll_ms=config.converse_making_poll_ms,
        backchannel_ms=config.converse_backchannel_ms,
        remaining_ms=poll.remaining_ms,
        started=poll.started,
        read=poll.read,
    )
    metrics.add_metric(name="ConverseWait", unit=MetricUnit.Milliseconds, value=found.waited_ms)
    # The responder's attributes never take the place of the answer's own keys.
    attributes = {key: value for key, value in found.attributes.items() if key not in RESERVED}
    segment = found.segment
    if segment is not None:
        if segment.index > 0:
            metrics.add_metric(name="ReplySegmentGap", unit=MetricUnit.Milliseconds, value=found.waited_ms)
        return response(
            "Speak" if segment.prompt_uri else "Fallback",
            **attributes,
            PromptUri=segment.prompt_uri,
            Text=segment.text,
            TurnIndex=segment.turn,
            Segment=segment.index,
            More=found.more,
            Transcript=segment.transcript,
            Action=found.action.value,
        )
    if not found.timed_out:
        return response("OK", **attributes, Action=found.action.value)
    return _nothing_yet(event, found, found.speaking_ms, config.converse_hold_after_ms)


def _nothing_yet(event: ContactFlowEvent, found: Next, speaking_ms: int | None, hold_after_ms: int) -> dict[str, str]:
    """The wait ran out: the caller is speaking, the agent is thinking, or there is silence."""
    if speaking_ms is not None:
        # No holding line may be played over the caller.
        return listening(speaking_ms)
    thinking = found.thinking
    if thinking is None:
        return response("Timeout")
    held = whole_number(event.parameters, "HeldTurn", default=-1, low=-1, high=MAX_SEQ)
    hold = thinking.started and thinking.ms >= hold_after_ms and held != thinking.turn
    return response(
        "Thinking", TurnIndex=thinking.turn, ThinkingMs=thinking.ms, Hold=hold, PromptUri=container.pause_uri()
    )


handler = metrics.log_metrics(_converse)
