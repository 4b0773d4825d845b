"""TranscribeStreamFunction: the consumer, invoked asynchronously by StartListening and by itself.

Event: ``{"ContactId": "...", "Generation": n}``; everything else is in the contact's checkpoint item. Runs until
the stream ends or Lambda's time is short, then hands over to its next invocation. It never raises: an
asynchronous failure would be retried by Lambda and start a second consumer, so failures are logged, counted
(``ListenErrors``) and end this invocation.
"""

from __future__ import annotations

import json
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.call.consumer import ConsumerSettings, StreamConsumer
from voicebridge.errors import VoiceBridgeError
from voicebridge.handlers._consumer import consumer_contact
from voicebridge.telemetry import logger, metrics


def handler(event: Any, context: Any) -> dict[str, Any]:
    parsed = consumer_contact(event, "malformed consumer event")
    if isinstance(parsed, dict):
        return parsed
    contact_id, generation = parsed
    myself = str(getattr(context, "invoked_function_arn", None) or getattr(context, "function_name", ""))

    def continue_with(payload: dict[str, Any]) -> None:
        container.client("lambda").invoke(
            FunctionName=myself, InvocationType="Event", Payload=json.dumps(payload).encode()
        )

    try:
        # What the long polls play while the caller speaks or the agent thinks: there before they can hand it out.
        container.store_pause()
        outcome = StreamConsumer(
            ConsumerSettings.of(container.settings()),
            container.turn_store(),
            contact_id=contact_id,
            generation=generation,
            open_session=container.ink_session,
            continue_with=continue_with,
            remaining_ms=context.get_remaining_time_in_millis,
            media=container.media_source,
            replier=container.reply_worker,
            recorder=container.call_recorder,
        ).run()
    except VoiceBridgeError as exc:
        logger.error("transcription stopped", error_code=exc.code, reason=exc.safe_message)
        return _stopped(exc.code)
    except Exception:
        logger.exception("transcription failed")
        return _stopped("InternalError")
    logger.info(
        "transcription invocation ended",
        reason=outcome.reason,
        handed_off_to=outcome.handed_off_to,
        audio_seconds=round(outcome.audio_seconds, 2),
        turns=outcome.turns,
        media_reconnects=outcome.reconnects,
    )
    return {"Result": "OK", "Reason": outcome.reason, "Turns": outcome.turns}


def _stopped(error_code: str) -> dict[str, Any]:
    """A failure ends the invocation counted, never raised (an asynchronous invocation that raises is retried)."""
    metrics.add_metric(name="ListenErrors", unit=MetricUnit.Count, value=1)
    metrics.flush_metrics()
    return {"Result": "Error", "ErrorCode": error_code}
