"""A turn's trace for Connect (``TRACING_SPAN``): OTLP/JSON ``TracesData``, one batch per turn.

docs/protocols.md, *TRACING_SPAN*: an ``invoke_agent`` root (kind SERVER) for the turn, a child span for each step
with its real start and end — Ink's turn (``transcribe ink``), and each sentence spoken (``chat sonic``, one per
segment, so Connect sees each segment's latency) — and the caller's words and the agent's as span events
``aws.connect.span.message``. The first turn carries the trace id and parent Connect propagated on the upgrade
(``traceparent``); later turns get trace ids of their own, linked to it.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from voicebridge.store.turns import Turn

SCOPE = {"name": "voicebridge", "version": "1.0.0"}
SERVER, CLIENT = 2, 3
MAX_CONTENT_CHARS = 2000
"""A message's words in a span event, at most: a turn's trace stays small (Connect reads one per turn)."""
OK, ERROR = 1, 2


def _ns(seconds: float) -> str:
    return str(int(seconds * 1e9))


def _attribute(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _message(role: str, participant: str, content: str, at: float) -> dict[str, Any]:
    return {
        "name": "aws.connect.span.message",
        "timeUnixNano": _ns(at),
        "attributes": [
            _attribute("aws.connect.span.message.role", role),
            _attribute("aws.connect.span.message.type", "TEXT_MESSAGE"),
            _attribute("aws.connect.span.message.participant", participant),
            _attribute("aws.connect.span.message.content", content[:MAX_CONTENT_CHARS]),
        ],
    }


def parse_traceparent(header: str | None) -> tuple[str, str] | None:
    """(trace id, parent span id) from a W3C ``traceparent`` header, when it is well formed."""
    parts = (header or "").strip().split("-")
    if len(parts) != 4 or len(parts[1]) != 32 or len(parts[2]) != 16:
        return None
    try:
        int(parts[1], 16), int(parts[2], 16)
    except ValueError:
        return None
    return parts[1], parts[2]


@dataclass
class TurnTrace:
    """What one turn did, as it happens; :meth:`otlp` once it is over."""

    name: str
    parent: str | None = None
    """The upgrade's ``traceparent`` (the session's first turn only)."""
    started: float = field(default_factory=time.time)
    input: str | None = None
    turn: Turn | None = None
    spoken: list[tuple[str, float, float]] = field(default_factory=list)
    meant: list[str] = field(default_factory=list)
    """What the agent set out to say: the turn's output when nothing of it could be spoken."""

    def heard(self, transcript: str, turn: Turn | None) -> None:
        self.input, self.turn = transcript, turn

    def spoke(self, text: str, began: float, ended: float) -> None:
        self.spoken.append((text, began, ended))

    def otlp(self, *, interrupted: bool = False, failed: tuple[int, str, str] | None = None) -> dict[str, Any]:
        ended = time.time()
        propagated = parse_traceparent(self.parent)
        trace_id = propagated[0] if propagated else secrets.token_hex(16)
        root_id = secrets.token_hex(8)
        root_start = self.started
        events = []
        spans: list[dict[str, Any]] = []
        turn = self.turn
        if turn is not None:
            stopped = (turn.ended_at_ms - (turn.latency_ms or 0)) / 1000
            root_start = min(root_start, stopped)
            spans.append(self._child(trace_id, root_id, "transcribe ink", stopped, turn.ended_at_ms / 1000))
        if self.input is not None:
            events.append(_message("input", "user", self.input, root_start))
        for text, began, finished in self.spoken:
            spans.append(self._child(trace_id, root_id, "chat sonic", began, finished))
            events.append(_message("output", "assistant", text, finished))
        if not self.spoken:
            # Connect requires the turn's messages in every trace; a turn that could not be spoken says what it meant.
            events += [_message("output", "assistant", text, ended) for text in self.meant or [""]]
        root: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": root_id,
            "name": f"invoke_agent voicebridge {self.name}",
            "kind": SERVER,
            "startTimeUnixNano": _ns(root_start),
            "endTimeUnixNano": _ns(max(ended, root_start)),
            "attributes": [
                _attribute("gen_ai.agent.name", "voicebridge"),
                _attribute("gen_ai.operation.name", "invoke_agent"),
                *([_attribute("voicebridge.interrupted", "true")] if interrupted else []),
            ],
            "events": events,
            "status": {"code": ERROR, "message": failed[1]} if failed else {"code": OK},
        }
        if propagated:
            root["parentSpanId"] = propagated[1]
        return {
            "resourceSpans": [
                {
                    "resource": {"attributes": [_attribute("service.name", "voicebridge")]},
                    "scopeSpans": [{"scope": SCOPE, "spans": [root, *spans]}],
                }
            ]
        }

    @staticmethod
    def _child(trace_id: str, parent: str, name: str, start: float, end: float) -> dict[str, Any]:
        return {
            "traceId": trace_id,
            "spanId": secrets.token_hex(8),
            "parentSpanId": parent,
            "name": name,
            "kind": CLIENT,
            "startTimeUnixNano": _ns(start),
            "endTimeUnixNano": _ns(max(start, end)),
            "status": {"code": OK},
        }
