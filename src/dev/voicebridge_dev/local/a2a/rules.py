"""The contract's rules as the emulator enforces them, what breaking one records, and the emulator's errors.

Each :class:`Rule` is a named check of docs/protocols.md, *Amazon Connect external AI agents (A2A voice streaming)*.
A rule is either a **violation** (the agent broke the contract: a strict session fails) or a **warning** (Connect
tolerates it, or the sources are silent and the emulator only reports it). A violation is **fatal** when the
emulator, as Connect does for "a protocol violation such as conflicting artifacts", sends an informational ERROR
(400, BAD_REQUEST) and closes the connection; the trace rules are not, because Connect keeps the conversation going
after "a malformed trace frame".
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from voicebridge_dev.local.a2a.session import SessionResult


class Rule(StrEnum):
    # The upgrade and the frames themselves.
    EXTENSION_NOT_ECHOED = "extension_not_echoed"
    BINARY_FRAME = "binary_frame"
    MALFORMED_FRAME = "malformed_frame"
    FRAME_OVER_BUDGET = "frame_over_budget"
    UNEXPECTED_REQUEST = "unexpected_request"
    RESULT_SHAPE = "result_shape"
    EVENT_TYPE = "event_type"
    WRONG_ROLE = "wrong_role"
    CONTEXT_MISMATCH = "context_mismatch"
    MISSING_TASK_ID = "missing_task_id"
    REPLY_ID_MISMATCH = "reply_id_mismatch"
    JSONRPC_ERROR = "jsonrpc_error"
    # Session start.
    INIT_RESPONSE_INVALID = "init_response_invalid"
    COUNTER_PROPOSAL_INVALID = "counter_proposal_invalid"
    OUTPUT_BEFORE_READY = "output_before_ready"
    # Audio and the artifacts that carry it.
    AUDIO_PART_INVALID = "audio_part_invalid"
    AUDIO_NOT_BASE64 = "audio_not_base64"
    AUDIO_ODD_LENGTH = "audio_odd_length"
    FIRST_CHUNK_APPENDS = "first_chunk_appends"
    CONTINUATION_NOT_APPENDED = "continuation_not_appended"
    OVERLAPPING_ARTIFACT = "overlapping_artifact"
    CHUNK_AFTER_LAST = "chunk_after_last"
    ARTIFACT_LEFT_OPEN = "artifact_left_open"
    ARTIFACT_REUSED = "artifact_reused"
    CHUNK_AFTER_INTERRUPTION = "chunk_after_interruption"
    INTERRUPTED_ARTIFACT_REUSED = "interrupted_artifact_reused"
    LATE_CHUNK_AFTER_CONNECT_INTERRUPTION = "late_chunk_after_connect_interruption"
    TEXT_IN_AUDIO_SESSION = "text_in_audio_session"
    # Turns, traces and the end of the session.
    TASK_MISMATCH = "task_mismatch"
    EVENT_AFTER_TERMINAL = "event_after_terminal"
    UNSUPPORTED_TASK_STATE = "unsupported_task_state"
    NON_TERMINAL_STATUS = "non_terminal_status"
    FAILED_WITHOUT_ERROR = "failed_without_error"
    FINISH_INVALID = "finish_invalid"
    FINISH_TYPE_NOT_OFFERED = "finish_type_not_offered"
    SENT_AFTER_FINISH = "sent_after_finish"
    TRACE_AFTER_TERMINAL = "trace_after_terminal"
    SECOND_TRACE = "second_trace"
    TRACE_INCOMPLETE = "trace_incomplete"
    TRACE_NOT_SUBSCRIBED = "trace_not_subscribed"
    TRACE_MISSING = "trace_missing"
    UNEXPECTED_RESULT_KIND = "unexpected_result_kind"
    # FRAGMENT.
    FRAGMENT_INVALID = "fragment_invalid"
    FRAGMENTED_AUDIO = "fragmented_audio"
    # The emulator's robustness probes.
    PROBE_UNANSWERED = "probe_unanswered"


WARNINGS = frozenset(
    {
        Rule.LATE_CHUNK_AFTER_CONNECT_INTERRUPTION,
        Rule.TEXT_IN_AUDIO_SESSION,
        Rule.NON_TERMINAL_STATUS,
        Rule.SECOND_TRACE,
        Rule.TRACE_NOT_SUBSCRIBED,
        Rule.UNEXPECTED_RESULT_KIND,
    }
)
"""Recorded, never failing a session: Connect ignores them, or the sources are silent."""

NOT_FATAL = WARNINGS | {
    Rule.TRACE_INCOMPLETE,
    Rule.TRACE_AFTER_TERMINAL,
    Rule.TRACE_MISSING,
    Rule.SENT_AFTER_FINISH,
    Rule.PROBE_UNANSWERED,
}
"""Violations after which the conversation goes on (a trace problem is non-fatal in the contract's own example;
after FINISH and at the end there is nothing left to close)."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One broken rule: ``at`` is seconds on the session clock (see :class:`~.timeline.Timeline`)."""

    rule: Rule
    detail: str
    at: float

    @property
    def is_warning(self) -> bool:
        return self.rule in WARNINGS

    @property
    def is_fatal(self) -> bool:
        return self.rule not in NOT_FATAL

    def __str__(self) -> str:
        kind = "warning" if self.is_warning else "violation"
        return f"{kind} {self.rule} at {self.at:.3f} s: {self.detail}"


class ConnectEmulatorError(Exception):
    """Base of the emulator's errors; ``code`` is stable."""

    code = "a2a_emulator_error"


class UpgradeRejected(ConnectEmulatorError):
    """The agent refused the WebSocket upgrade with an HTTP status (401 for a wrong key)."""

    code = "upgrade_rejected"

    def __init__(self, status: int) -> None:
        super().__init__(f"the agent refused the WebSocket upgrade with HTTP {status}")
        self.status = status


class ContractViolation(ConnectEmulatorError):
    """A strict session saw the agent break the contract: ``violations`` are the broken rules, ``result`` the rest."""

    code = "contract_violation"

    def __init__(self, violations: list[Violation], result: SessionResult | None = None) -> None:
        lines = "\n  ".join(str(v) for v in violations)
        super().__init__(f"the agent broke Connect's A2A contract:\n  {lines}")
        self.violations = violations
        self.result = result

    @property
    def rules(self) -> set[Rule]:
        return {v.rule for v in self.violations}
