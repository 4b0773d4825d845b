"""StartListeningFunction: hand the contact's media stream to the transcriber and answer at once.

Input: optional ``Tracks`` (``customer`` or ``both``) and ``Language`` (a BCP-47 tag; default ``INK_LANGUAGE``).
Output: ``Result=OK`` with ``StreamARN``, ``AlreadyListening``, ``Language`` and ``TurnEndBy`` (``ink`` or
``voicebridge``); ``Result=Error`` with ``ErrorCode=NoMediaStream`` when streaming has not started, or
``LanguageNotServed`` when no Ink model transcribes the language.
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


@connect_edge(errors="ListenErrors")
def _start(event: ContactFlowEvent, context: Any) -> dict[str, str]:
    try:
        started = start_listening(
            event,
            store=container.turn_store(),
            lambda_client=container.client("lambda"),
            consumer=container.settings().transcribe_function_name,
            default_tracks=container.settings().listen_tracks,
            languages=container.settings().languages,
        )
    except VoiceBridgeError:
        metrics.add_metric(name="ListenErrors", unit=MetricUnit.Count, value=1)
        raise
    logger.info(
        "listening",
        tracks=started.tracks,
        already_listening=started.already_listening,
        language=started.listening.language,
        ink_mode=started.listening.mode,
    )
    return response(
        "OK",
        StreamARN=started.stream_arn,
        AlreadyListening=started.already_listening,
        Language=started.listening.language,
        TurnEndBy=started.listening.turn_end_by,
    )


handler = metrics.log_metrics(_start)
