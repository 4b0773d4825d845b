"""The edge of the functions invoked with a consumer event (``{"ContactId", "Generation"}``): TranscribeStreamFunction,
and CallRecordFunction through the failure record that wraps it. Kept apart from :mod:`._edge` so that neither
loads Connect's flow event parser it has no use for."""

from __future__ import annotations

from typing import Any

from voicebridge.call.invocation import parse_consumer_event
from voicebridge.telemetry import logger


def consumer_contact(payload: Any, malformed: str) -> tuple[str, int] | dict[str, Any]:
    """The contact and generation a consumer event names, the log's correlation id set to the contact; for an event
    that names none, logged as ``malformed``, the answer refusing it (``InvalidInput``) instead."""
    parsed = parse_consumer_event(payload)
    if isinstance(parsed, str):
        logger.error(malformed, reason=parsed)
        return {"Result": "Error", "ErrorCode": "InvalidInput", "ErrorMessage": parsed}
    logger.set_correlation_id(parsed[0])
    return parsed
