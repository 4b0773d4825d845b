"""What the flow's two long polls (AwaitTurnFunction, ConverseFunction) start from and answer alike.

Both count their wait from when the invocation began (a cold start's, from when its environment started), within the
invocation's remaining time, read the turn table, and redact the turn the flow says it has read while they wait
(docs/redaction.md); both answer a wait that ran out while the caller is mid-turn with ``Result=Listening`` and the
short silent prompt to play before asking again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from voicebridge import container
from voicebridge.connect.events import ContactFlowEvent, response
from voicebridge.handlers._edge import invocation_began, remaining_ms
from voicebridge.polls.next_turn import redacting_read_turns
from voicebridge.store.turns import TurnStore


@dataclass(frozen=True, slots=True)
class PollStart:
    """A long poll's invocation, as it began."""

    started: float
    """When the invocation began (``time.monotonic()``; a cold start's, when its environment started): what came
    before the first look counts against the wait."""
    remaining_ms: int | None
    turns: TurnStore
    read: Callable[[int], None] | None
    """Told the turn the flow has read, to redact it (None when nothing is redacted)."""


def poll_start(event: ContactFlowEvent, context: Any) -> PollStart:
    """Read first thing in the handler: the clock and the time left, before the clients are made."""
    started, remaining = invocation_began(), remaining_ms(context)
    turns = container.turn_store()
    return PollStart(started, remaining, turns, redacting_read_turns(turns, container.redactor(), event.contact_id))


def listening(speaking_ms: int) -> dict[str, str]:
    """The wait ran out while the caller is mid-turn: a long turn is not silence."""
    return response("Listening", SpeakingMs=speaking_ms, PromptUri=container.pause_uri())
