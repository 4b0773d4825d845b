"""StartListeningFunction: hand the contact's media stream to the transcriber and answer at once.

Input: optional ``Tracks`` (``customer`` or ``both``). Output: ``Result=OK`` with ``StreamARN`` and
``AlreadyListening``; ``Result=Error`` with ``ErrorCode=NoMediaStream`` when streaming has not started.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import aws
from voicebridge.config import settings
from voicebridge.connect.events import ContactFlowEvent, response
from voicebridge.errors import VoiceBridgeError
from voicebridge.handlers._edge import connect_edge
from voicebridge.listening import start_listening
from voicebridge.store.turns import TurnStore
from voicebridge.telemetry import logger, metrics


@cache
def turn_store() -> TurnStore:
    return TurnStore(settings().turn_table, ttl_days=settings().turn_ttl_days)


@connect_edge
def _start(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    try:
        started = start_listening(
            event,
            store=turn_store(),
            lambda_client=aws.client("lambda"),
            consumer=settings().transcribe_function_name,
            default_tracks=settings().listen_tracks,
        )
    except VoiceBridgeError:
        metrics.add_metric(name="ListenErrors", unit=MetricUnit.Count, value=1)
        raise
    logger.info("listening", tracks=started.tracks, already_listening=started.already_listening)
    return response("OK", StreamARN=started.stream_arn, AlreadyListening=started.already_listening)


handler = metrics.log_metrics(_start)
