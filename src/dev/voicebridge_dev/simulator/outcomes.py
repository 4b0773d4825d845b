"""How a simulated action turns out, for the families of actions, the call and the engine alike: the branch an
action takes, the failure its error branch handles, the end of the call, and the simulator's errors.

An action that fails takes the error branch it has for the failure, else the catch-all ``NoMatchingError``: the
branch for any error no other matches (the action pages of Connect's flow language reference,
https://docs.aws.amazon.com/connect/latest/APIReference/flow-language-actions.html).
"""

from __future__ import annotations

from dataclasses import dataclass

from voicebridge_dev.flows import Action
from voicebridge_dev.simulator.events import EndReason

__all__ = [
    "WAIT_SLICE_S",
    "ActionFailed",
    "Branch",
    "CallOver",
    "FlowRuntimeError",
    "SimulatorError",
    "UnsupportedActionError",
    "branch_on",
    "error_type",
]

WAIT_SLICE_S = 0.05
"""The longest the simulator waits at once, so a caller hanging up is seen soon."""


class SimulatorError(Exception):
    """Base class of the flow simulator's errors."""


class UnsupportedActionError(SimulatorError):
    """The flow reached an action (or a parameter choice) the simulator does not implement."""

    def __init__(self, action: Action, detail: str | None = None) -> None:
        what = f"action {action.identifier!r} ({action.type}"
        what += f", {detail})" if detail else ")"
        super().__init__(f"{what} is not supported by the flow simulator")
        self.identifier = action.identifier
        self.type = action.type


class FlowRuntimeError(SimulatorError):
    """The flow cannot go on: a failed action without an error branch, a runaway loop, a call too long."""


class CallOver(Exception):
    """The call ends here (the flow disconnected or transferred it, or the caller hung up)."""

    def __init__(self, reason: EndReason, detail: str | None = None) -> None:
        super().__init__(reason)
        self.reason: EndReason = reason
        self.detail = detail


class ActionFailed(Exception):
    """The action failed in a way the flow handles with an error branch."""

    def __init__(self, reason: str, error_type: str = "NoMatchingError") -> None:
        super().__init__(reason)
        self.error_type = error_type


@dataclass
class Branch:
    outcome: str
    target: str | None
    why: str | None = None
    """Why an error branch was taken, in the flow author's words."""


def branch_on(action: Action, value: str) -> Branch:
    """The condition ``value`` equals (a key, an intent, a view's result); else NoMatchingCondition, or the
    catch-all NoMatchingError when the action has no branch for it."""
    target = action.condition_target(value)
    if target is None:
        raise ActionFailed(f"{value!r} matches no condition", error_type(action, "NoMatchingCondition"))
    return Branch(f"Equals {value}", target)


def error_type(action: Action, error: str | None) -> str:
    """``error`` when the action has a branch for it, else the catch-all ``NoMatchingError``."""
    return error if error is not None and action.error_target(error) is not None else "NoMatchingError"
