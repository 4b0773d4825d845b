"""CallRecordFunction: the call record of a contact whose consumer died, written once its lease has run out.

TranscribeStreamFunction's on-failure destination: Lambda invokes it with the record of an asynchronous invocation
that failed (a timeout, a crash, an event too old to run), whose ``requestPayload`` is the consumer's event
(``{"ContactId": ..., "Generation": n}``) and ``requestContext.condition`` why (``RetriesExhausted``,
``EventAgeExceeded``). A consumer that ends by itself writes the record itself; this covers the one that cannot.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.call.record import record_after_failure
from voicebridge.errors import VoiceBridgeError
from voicebridge.handlers._consumer import consumer_contact
from voicebridge.telemetry import logger, metrics


def _record(event: Any, context: Any) -> dict[str, Any]:
    request = event.get("requestPayload") if isinstance(event, dict) else None
    parsed = consumer_contact(request, "malformed failure record")
    if isinstance(parsed, dict):
        return parsed
    contact_id, generation = parsed
    context_of = event.get("requestContext") if isinstance(event.get("requestContext"), dict) else {}
    why = str(context_of.get("condition") or "invocation failed")
    try:
        outcome = record_after_failure(
            container.turn_store(),
            container.call_recorder(),
            contact_id,
            generation,
            why=why,
            remaining_ms=context.get_remaining_time_in_millis,
        )
    except VoiceBridgeError as exc:
        logger.error("call record not written", error_code=exc.code, reason=exc.safe_message)
        metrics.add_metric(name="CallRecordErrors", unit=MetricUnit.Count, value=1)
        return {"Result": "Error", "ErrorCode": exc.code}
    logger.info("consumer failure handled", outcome=outcome, generation=generation, condition=why)
    return {"Result": "OK", "Outcome": outcome}


handler = metrics.log_metrics(_record)
