"""AwaitTurnFunction: the caller's next finished turn, or a timeout that fits Connect's 8 s.

Input: ``AfterTurn`` (the last turn index the flow has handled; ``-1`` or absent for the first), optional
``MaxWaitMs``. Output: ``Result=Turn`` with ``Transcript`` and ``TurnIndex``; ``Result=Listening`` with ``SpeakingMs``
and ``PromptUri`` (a short silent prompt to play before asking again) when the wait ran out while the caller is
mid-turn; ``Result=Timeout`` when the caller said nothing; ``Result=Error``.
The turn the flow has read (``AfterTurn``) is redacted in the table while the poll waits (docs/redaction.md).
A transcript too long for Connect's 32 KB is cut on a character boundary and the answer says ``Truncated=true``: the
flow still gets the turn, and moves past it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.connect.events import ContactFlowEvent, response
from voicebridge.handlers._edge import connect_edge
from voicebridge.handlers._longpoll import listening, poll_start
from voicebridge.polls.next_turn import await_turn
from voicebridge.telemetry import metrics


@connect_edge(errors="ListenErrors", truncate=("Transcript",))
def _await(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    poll = poll_start(event, context)
    config = container.settings()
    found = await_turn(
        event.contact_id,
        event.parameters,
        store=poll.turns,
        max_wait_ms=config.await_max_wait_ms,
        poll_interval_ms=config.await_poll_interval_ms,
        remaining_ms=poll.remaining_ms,
        started=poll.started,
        read=poll.read,
    )
    metrics.add_metric(name="AwaitTurnWait", unit=MetricUnit.Milliseconds, value=found.waited_ms)
    if found.turn is None:
        if found.speaking_ms is not None:
            return listening(found.speaking_ms)
        return response("Timeout")
    return response("Turn", Transcript=found.turn.transcript, TurnIndex=found.turn.seq)


handler = metrics.log_metrics(_await)
