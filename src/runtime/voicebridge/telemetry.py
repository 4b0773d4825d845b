"""Structured logs and CloudWatch metrics (Embedded Metric Format), shared by every function.

Metric names are part of the product's interface: the template's dashboard and alarms read them.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics

from voicebridge.redaction.logs import RedactingFilter, redacting

NAMESPACE = "VoiceBridge"

# ASCII-escaped JSON: a value holding a lone surrogate (a malformed event, an exception quoting one) is still written,
# as \udXXX, instead of the whole line failing to encode.
_dumps = functools.partial(json.dumps, separators=(",", ":"), ensure_ascii=True, default=str)
# What a caller says must reach no log, at any level: read here, before the settings, since logging starts first.
REDACT_LOGS = os.environ.get("REDACT_TRANSCRIPTS", "builtin").strip().lower() != "off"
logger = Logger(service="voicebridge", json_serializer=redacting(_dumps) if REDACT_LOGS else _dumps)
if REDACT_LOGS:
    for _handler in logging.getLogger().handlers:
        _handler.addFilter(RedactingFilter())

# botocore logs whole responses at DEBUG, GetSecretValue's included: the Cartesia key must never reach a log.
logging.getLogger("botocore.parsers").setLevel(logging.INFO)
metrics = Metrics(namespace=NAMESPACE, service="voicebridge")


def in_context(target: Callable[..., Any]) -> Callable[..., Any]:
    """``target``, to run on another thread in the context it was made in: the log keys a session set for itself
    (``logger.thread_safe_append_keys``, a context variable) follow its work onto the threads it starts. Every thread
    the runtime starts takes its target through this; a thread started bare would log without them."""
    return functools.partial(contextvars.copy_context().run, target)
