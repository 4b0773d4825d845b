"""SynthesizeFunction: a contact flow asks for speech and gets back a prompt it can play.

Input parameters: ``Text`` (required), ``Prefix``, ``Voice``, ``Language``, ``Speed``, ``Volume``, ``Emotion``.
Output: ``Result=OK`` with ``PromptUri``, ``DurationMs``, ``CacheHit``, ``TimeToFirstByteMs``; ``Result=Fallback``
with ``Text`` when Sonic cannot answer in time (the flow speaks it with Connect's own voice; a text too long for
Connect's 32 KB is cut on a character boundary, with ``Truncated=true``); ``Result=Error`` with
``ErrorCode``/``ErrorMessage`` for bad input or a broken deployment.
"""

from __future__ import annotations

import time
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.connect.events import ContactFlowEvent, response, unicode_safe
from voicebridge.errors import ModelUnavailable, VoiceBridgeError
from voicebridge.handlers._edge import connect_edge, invocation_began, remaining_ms
from voicebridge.sonic.request import SpeechRequest
from voicebridge.telemetry import logger, metrics

LAMBDA_MARGIN_MS = 300
"""Kept back from the Lambda's remaining time to store the prompt and answer."""
ANSWER_MARGIN_MS = 100
"""Kept back from the Lambda's remaining time to answer: a prompt not stored by then is answered as an error (the flow
speaks the line itself) rather than the invocation timing out into the flow's error branch."""


@connect_edge(errors="SynthesisErrors", truncate=("Text",))
def _synthesize(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    began, started = invocation_began(), time.perf_counter()
    try:
        request = SpeechRequest.from_parameters(event.parameters, container.request_settings())
        budget_ms = container.settings().sonic_deadline_ms
        remaining = remaining_ms(context)
        store_by = None
        if remaining is not None:
            budget_ms = min(budget_ms, remaining - LAMBDA_MARGIN_MS)
            store_by = began + (remaining - ANSWER_MARGIN_MS) / 1000
        # A cold start's time is Connect's too: the budget counts from when the environment started.
        prompt = container.synthesizer().synthesize(request, deadline=began + budget_ms / 1000, store_by=store_by)
    except ModelUnavailable as exc:
        metrics.add_metric(name="SynthesisErrors", unit=MetricUnit.Count, value=1)
        # The model's own words may hold a lone surrogate: the log line must survive it.
        logger.warning("falling back to Connect's voice", reason=unicode_safe(exc.safe_message))
        return response("Fallback", Text=request.text, ErrorCode=exc.code, ErrorMessage=exc.safe_message)
    except VoiceBridgeError:
        metrics.add_metric(name="SynthesisErrors", unit=MetricUnit.Count, value=1)
        raise
    metrics.add_metric(name="PromptCacheHit", unit=MetricUnit.Count, value=1 if prompt.cache_hit else 0)
    metrics.add_metric(name="PromptAudioSeconds", unit=MetricUnit.Seconds, value=prompt.duration_ms / 1000)
    if prompt.time_to_first_byte_ms is not None and prompt.synthesis_ms is not None:
        metrics.add_metric(
            name="SonicTimeToFirstByte", unit=MetricUnit.Milliseconds, value=prompt.time_to_first_byte_ms
        )
        metrics.add_metric(name="SonicSynthesisTime", unit=MetricUnit.Milliseconds, value=prompt.synthesis_ms)
    logger.info(
        "prompt ready",
        cache_hit=prompt.cache_hit,
        duration_ms=prompt.duration_ms,
        attempts=prompt.attempts,
        handler_ms=round((time.perf_counter() - started) * 1000, 1),
    )
    return response(
        "OK",
        PromptUri=prompt.uri,
        DurationMs=prompt.duration_ms,
        CacheHit=prompt.cache_hit,
        TimeToFirstByteMs=round(prompt.time_to_first_byte_ms) if prompt.time_to_first_byte_ms is not None else 0,
    )


handler = metrics.log_metrics(_synthesize)
