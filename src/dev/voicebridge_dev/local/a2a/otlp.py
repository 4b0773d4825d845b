"""What the emulator checks of a TRACING_SPAN's OTLP/JSON payload (docs/protocols.md, *TRACING_SPAN*).

Required on every span: ``traceId``, ``spanId``, ``name``, ``startTimeUnixNano``, ``endTimeUnixNano``; OTLP/JSON
writes the ids as hex (32 and 16 digits) and the times as decimal strings. The batch must hold at least one
``aws.connect.span.message`` span event, since Connect's trace requirements name the turn's messages.
"""

from __future__ import annotations

import re

MESSAGE_EVENT = "aws.connect.span.message"
_TRACE_ID = re.compile(r"[0-9a-f]{32}")
_SPAN_ID = re.compile(r"[0-9a-f]{16}")


def _nanos(value: object) -> int | None:
    if type(value) is int:
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None


def _span_problems(span: object, where: str) -> list[str]:
    if not isinstance(span, dict):
        return [f"{where} is not an object"]
    problems = []
    trace_id, span_id, name = span.get("traceId"), span.get("spanId"), span.get("name")
    if not (isinstance(trace_id, str) and _TRACE_ID.fullmatch(trace_id) and set(trace_id) != {"0"}):
        problems.append(f"{where} has no valid traceId")
    if not (isinstance(span_id, str) and _SPAN_ID.fullmatch(span_id) and set(span_id) != {"0"}):
        problems.append(f"{where} has no valid spanId")
    if not (isinstance(name, str) and name):
        problems.append(f"{where} has no name")
    start, end = _nanos(span.get("startTimeUnixNano")), _nanos(span.get("endTimeUnixNano"))
    if start is None or end is None:
        problems.append(f"{where} lacks startTimeUnixNano or endTimeUnixNano")
    elif end < start:
        problems.append(f"{where} ends before it starts")
    return problems


def trace_problems(otlp: object) -> list[str]:
    """Why ``otlp`` is not a trace Connect can use; empty when it is."""
    if not isinstance(otlp, dict) or not isinstance(otlp.get("resourceSpans"), list) or not otlp["resourceSpans"]:
        return ["otlp has no resourceSpans"]
    problems: list[str] = []
    spans = 0
    message_events = 0
    for r, resource in enumerate(otlp["resourceSpans"]):
        scopes = resource.get("scopeSpans") if isinstance(resource, dict) else None
        if not isinstance(scopes, list):
            problems.append(f"resourceSpans[{r}] has no scopeSpans")
            continue
        for s, scope in enumerate(scopes):
            scope_spans = scope.get("spans") if isinstance(scope, dict) else None
            if not isinstance(scope_spans, list):
                problems.append(f"resourceSpans[{r}].scopeSpans[{s}] has no spans")
                continue
            for n, span in enumerate(scope_spans):
                spans += 1
                problems += _span_problems(span, f"span {span.get('name') if isinstance(span, dict) else n!r}")
                events = span.get("events", []) if isinstance(span, dict) else []
                message_events += sum(
                    1
                    for e in events
                    if isinstance(events, list) and isinstance(e, dict) and e.get("name") == MESSAGE_EVENT
                )
    if spans == 0:
        problems.append("the trace holds no span")
    elif message_events == 0:
        problems.append(f"no span carries an {MESSAGE_EVENT} event (the turn's input and output)")
    return problems
