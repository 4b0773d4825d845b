"""What Connect (and the caller behind it) does to the agent at given times, besides streaming the caller's audio.

Each action's ``at_s`` is session time: seconds after CHANNEL_STATE READY, the clock the caller's audio runs on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from voicebridge_dev.local.a2a.wire import DtmfTermination, InterruptionType


@dataclass(frozen=True, slots=True)
class Dtmf:
    """The caller keyed ``digits``: INTERRUPTION (DTMF_INPUT) first if output is in flight, then DTMF_INPUT_COMPLETE."""

    at_s: float
    digits: str
    termination: DtmfTermination = "END_CHARACTER"


@dataclass(frozen=True, slots=True)
class SilenceMarker:
    """Connect's extended-silence input: a text part ``<EMPTY_USER_INPUT>``."""

    at_s: float


@dataclass(frozen=True, slots=True)
class Interrupt:
    """Connect's own INTERRUPTION; Connect stops playing the agent's audio as it sends it."""

    at_s: float
    kind: InterruptionType = "USER_AUDIO_INPUT"
    reason: str = "user_speech"


@dataclass(frozen=True, slots=True)
class InformationalError:
    """An informational ERROR from Connect; not a turn boundary, and the session goes on."""

    at_s: float
    code: int = 400
    reason: str = "Malformed trace frame"
    category: str = "BAD_REQUEST"


@dataclass(frozen=True, slots=True)
class Fragmented:
    """``action``'s frame sent as FRAGMENT events (for DTMF, the DTMF_INPUT_COMPLETE), to test reassembly."""

    action: Dtmf | SilenceMarker | InformationalError
    piece_chars: int = 200

    @property
    def at_s(self) -> float:
        return self.action.at_s


ProbeKind = Literal["malformed_json", "unknown_method", "unknown_event_type", "oversized", "binary"]
PROBES_ANSWER_REQUIRED: frozenset[str] = frozenset({"malformed_json", "unknown_method"})
"""A malformed frame or an unknown method "receives a standard JSON-RPC error object"; the others may be answered."""


@dataclass(frozen=True, slots=True)
class Probe:
    """A frame Connect would never send, to test that the agent survives it."""

    at_s: float
    kind: ProbeKind


@dataclass(frozen=True, slots=True)
class HangUp:
    """The connection drops: the socket is aborted without a closing handshake."""

    at_s: float


Action = Dtmf | SilenceMarker | Interrupt | InformationalError | Fragmented | Probe | HangUp
