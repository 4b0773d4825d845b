"""The handler edge: parse the Connect event, run one domain call, shape the flat response.

Nothing escapes: a product error becomes ``Result=Error`` with its stable ``ErrorCode``; anything unexpected is
logged with its traceback, counted in the function's errors metric (so its alarm fires: the Lambda invocation itself
succeeds, and Lambda's own ``Errors`` never moves) and answered as ``InternalError``, so a flow always takes a branch
it knows. Every answer fits Connect (:func:`voicebridge.connect.events.fit`): its long text fields are shortened
rather than the answer refused, and one that still cannot fit is never sent.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.connect.events import (
    TRUNCATED,
    ContactFlowEvent,
    error_response,
    fit,
    response_size,
    unicode_safe,
)
from voicebridge.errors import VoiceBridgeError
from voicebridge.telemetry import logger, metrics

ConnectHandler = Callable[[ContactFlowEvent, Any], dict[str, str]]
LambdaHandler = Callable[[Any, Any], dict[str, str]]


ON_DEMAND = "on-demand"
"""``AWS_LAMBDA_INITIALIZATION_TYPE`` of an execution environment Lambda starts when an invocation finds none idle
(docs/protocols.md, "The call"); its start-up is part of that invocation's time as its caller sees it."""

_cold = True
"""No invocation has begun in this process yet."""
_loaded_at: float | None = None
"""When the last handler of this process was wrapped (``time.monotonic()``): the end of its Init phase."""
PROACTIVE_GAP_S = 1.0
"""A first invocation that comes this long after its handler was loaded found an environment Lambda had started before
it (Lambda initializes on-demand environments proactively at times, docs/protocols.md): that start-up was nobody's
wait. A cold start's first invocation comes as its Init ends."""


def connect_edge(*, errors: str, truncate: Sequence[str] = ()) -> Callable[[ConnectHandler], LambdaHandler]:
    """Wrap a function of (parsed event, Lambda context) into a Lambda handler for Connect.

    ``errors`` names the metric an unexpected failure (or an answer too large to send) counts in, the one whose alarm
    watches the function; ``truncate`` names the long text fields of its answers that may be shortened, in that order,
    when an answer would not fit Connect's limit::

        @connect_edge(errors="ListenErrors", truncate=("Transcript",))
        def _await(event: ContactFlowEvent, context: Any) -> dict[str, str]: ...
    """

    def wrap(domain: ConnectHandler) -> LambdaHandler:
        # Wrapped as its module is imported, at the end of the environment's Init phase.
        global _loaded_at
        _loaded_at = time.monotonic()

        @functools.wraps(domain)
        def handler(event: Any, context: Any) -> dict[str, str]:
            # The logger outlives the invocation: a malformed event must not be logged under the last contact's id.
            logger.set_correlation_id(None)
            try:
                parsed = ContactFlowEvent.parse(event)
                logger.set_correlation_id(parsed.contact_id)
                result = domain(parsed, context)
                answer = fit(result, truncate)
            except VoiceBridgeError as exc:
                # A message may quote what a model or a store said: no lone surrogate may break the log line.
                reason = unicode_safe(exc.safe_message)
                logger.warning("request failed", error_code=exc.code, reason=reason)
                return error_response(exc.code, reason)
            except Exception:
                logger.exception("unexpected failure")
                metrics.add_metric(name=errors, unit=MetricUnit.Count, value=1)
                return error_response("InternalError", "unexpected failure; see the function's logs")
            if answer is None:
                logger.error("response too large for Connect", size=response_size(result))
                metrics.add_metric(name=errors, unit=MetricUnit.Count, value=1)
                return error_response("InternalError", "response larger than Connect accepts")
            if TRUNCATED in answer and TRUNCATED not in result:
                logger.warning("response truncated to fit Connect", size=response_size(result), fields=list(truncate))
            return answer

        return handler

    return wrap


def invocation_began(*, process_age_s: Callable[[], float | None] | None = None) -> float:
    """When the caller's wait for this invocation began, on ``time.monotonic()``'s clock: now, or, for the first
    invocation of an environment started on demand, when its process started — the cold start is spent of Connect's
    8 s before the handler runs, and Lambda's remaining time does not count it. Called once, first thing, per
    invocation. Provisioned and SnapStart environments start before any invocation, and so does an on-demand one whose
    first invocation came more than :data:`PROACTIVE_GAP_S` after its handler was loaded: theirs begins now."""
    global _cold
    now = time.monotonic()
    cold, _cold = _cold, False
    if not cold or os.environ.get("AWS_LAMBDA_INITIALIZATION_TYPE") != ON_DEMAND:
        return now
    if _loaded_at is None or now - _loaded_at > PROACTIVE_GAP_S:
        return now
    age = (process_age_s or _process_age_s)()
    return now if age is None else now - max(0.0, age)


def _process_age_s() -> float | None:
    """Seconds since this process started (Linux ``/proc``; None elsewhere or when unreadable)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat, open("/proc/uptime", encoding="ascii") as uptime:
            # Field 22, starttime, in clock ticks after boot; the command (field 2) may hold spaces, so count
            # from its closing parenthesis, after which field 3 comes.
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
            up_s = float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return up_s - started_ticks / os.sysconf("SC_CLK_TCK")


def remaining_ms(context: Any) -> int | None:
    """The invocation's remaining time in milliseconds; None for a context without Lambda's clock (a test's)."""
    return context.get_remaining_time_in_millis() if hasattr(context, "get_remaining_time_in_millis") else None
