"""The words of a conversation that every layer shares: what a reply asks of the flow (:class:`Action`), and one
earlier exchange of the conversation (:class:`Exchange`).

The settings parse intent actions, the reply store keeps them and the history, the responders produce them: they
live here, below all of those, so that no layer imports one above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Action", "Exchange"]


class Action(StrEnum):
    """What the flow does once the reply has been played."""

    CONTINUE = "Continue"
    """Listen for the caller's next turn."""
    TRANSFER = "Transfer"
    """Hand the caller to a person (the flow's queue)."""
    HANGUP = "Hangup"
    """End the call."""

    @classmethod
    def parse(cls, value: str) -> Action:
        """An action named in any case (``transfer``, ``HANGUP``); ValueError for anything else."""
        for action in cls:
            if action.value.lower() == value.strip().lower():
                return action
        raise ValueError(f"unknown action {value!r}: expected Continue, Transfer or Hangup")


@dataclass(frozen=True, slots=True)
class Exchange:
    """One earlier turn of the conversation: what the caller said and what was answered."""

    caller: str
    agent: str
