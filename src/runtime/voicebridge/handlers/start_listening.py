"""StartListeningFunction: hand the contact's media stream to the transcriber and answer at once.

Input: optional ``Tracks`` (``customer`` or ``both``). Output: ``Result=OK`` with ``StreamARN`` and
``AlreadyListening``; ``Result=Error`` with ``ErrorCode=NoMediaStream`` when streaming has not started.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge import container
from voicebridge.call.start import start_listening
from voicebridge.connect.events import ContactFlowEvent, response
from voicebridge.errors import VoiceBridgeError
from voicebridge.handlers._edge import connect_edge
from voicebridge.telemetry import logger, metrics


@connect_edge()
def _start(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    try:
        started = start_listening(
            event,
            store=container.turn_store(),
            lambda_client=container.client("lambda"),
            consumer=container.settings().transcribe_function_name,
            default_tracks=container.settings().listen_tracks,
        )
    except VoiceBridgeError:
        metrics.add_metric(name="ListenErrors", unit=MetricUnit.Count, value=1)
        raise
    logger.info("listening", tracks=started.tracks, already_listening=started.already_listening)
    return response("OK", StreamARN=started.stream_arn, AlreadyListening=started.already_listening)


handler = metrics.log_metrics(_start)
