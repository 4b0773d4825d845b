"""AwaitTurnFunction: the caller's next finished turn, or a timeout that fits Connect's 8 s.

Input: ``AfterTurn`` (the last turn index the flow has handled; ``-1`` or absent for the first), optional
``MaxWaitMs``. Output: ``Result=Turn`` with ``Transcript`` and ``TurnIndex``; ``Result=Timeout``; ``Result=Error``.
A transcript too long for Connect's 32 KB is cut on a character boundary and the answer says ``Truncated=true``: the
flow still gets the turn, and moves past it.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.connect.events import ContactFlowEvent, response
from voicebridge.handlers._edge import connect_edge
from voicebridge.polls.next_turn import await_turn
from voicebridge.telemetry import metrics


@connect_edge(truncate=("Transcript",))
def _await(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    entered = time.monotonic()
    remaining = context.get_remaining_time_in_millis() if hasattr(context, "get_remaining_time_in_millis") else None
    turn, waited_ms = await_turn(
        event.contact_id,
        event.parameters,
        store=container.turn_store(),
        max_wait_ms=container.settings().await_max_wait_ms,
        poll_interval_ms=container.settings().await_poll_interval_ms,
        remaining_ms=remaining,
        started=entered,
    )
    metrics.add_metric(name="AwaitTurnWait", unit=MetricUnit.Milliseconds, value=waited_ms)
    if turn is None:
        return response("Timeout")
    return response("Turn", Transcript=turn.transcript, TurnIndex=turn.seq)


handler = metrics.log_metrics(_await)
