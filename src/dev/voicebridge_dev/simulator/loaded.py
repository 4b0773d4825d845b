"""A flow as the simulator runs it: the bottom of the simulator's layers, so the flow library, the call and the
engine that loads it all name it without importing one another."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from voicebridge_dev.flows import Flow

__all__ = ["LoadedFlow"]


@dataclass(frozen=True)
class LoadedFlow:
    """A flow ready to run, its placeholders filled with local ARNs; ``functions`` maps ARN to logical ID."""

    flow: Flow
    functions: Mapping[str, str]
    family: str | None = None
    """The flow type's family (``customer queue``, ``hold``, ``whisper``…), when the flow says which it is."""
    templated: bool = False
    """The flow is a template whose tokens are filled before import: a token where a value is needed (a prompt's
    URL) gets a stand-in."""
