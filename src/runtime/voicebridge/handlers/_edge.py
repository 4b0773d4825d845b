"""The handler edge: parse the Connect event, run one domain call, shape the flat response.

Nothing escapes: a product error becomes ``Result=Error`` with its stable ``ErrorCode``; anything unexpected is
logged with its traceback and answered as ``InternalError``, so a flow always takes a branch it knows.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

from voicebridge.connect.events import MAX_RESPONSE_BYTES, ContactFlowEvent, error_response
from voicebridge.errors import VoiceBridgeError
from voicebridge.telemetry import logger

ConnectHandler = Callable[[ContactFlowEvent, Any], dict[str, str]]


def connect_edge(domain: ConnectHandler) -> Callable[[dict[str, Any], Any], dict[str, str]]:
    """Wrap a function of (parsed event, Lambda context) into a Lambda handler for Connect."""

    @functools.wraps(domain)
    def handler(event: dict[str, Any], context: Any) -> dict[str, str]:
        try:
            parsed = ContactFlowEvent.parse(event)
            logger.set_correlation_id(parsed.contact_id)
            result = domain(parsed, context)
        except VoiceBridgeError as exc:
            logger.warning("request failed", error_code=exc.code, reason=exc.safe_message)
            return error_response(exc.code, exc.safe_message)
        except Exception:
            logger.exception("unexpected failure")
            return error_response("InternalError", "unexpected failure; see the function's logs")
        if len(json.dumps(result).encode()) > MAX_RESPONSE_BYTES:
            logger.error("response too large for Connect", size=len(json.dumps(result)))
            return error_response("InternalError", "response larger than Connect accepts")
        return result

    return handler
