"""Structured logs and CloudWatch metrics (Embedded Metric Format), shared by every function.

Metric names are part of the product's interface: the template's dashboard and alarms read them.
"""

from __future__ import annotations

import functools
import json
import logging

from aws_lambda_powertools import Logger, Metrics

NAMESPACE = "VoiceBridge"

# ASCII-escaped JSON: a value holding a lone surrogate (a malformed event, an exception quoting one) is still written,
# as \udXXX, instead of the whole line failing to encode.
logger = Logger(
    service="voicebridge",
    json_serializer=functools.partial(json.dumps, separators=(",", ":"), ensure_ascii=True, default=str),
)

# botocore logs whole responses at DEBUG, GetSecretValue's included: the Cartesia key must never reach a log.
logging.getLogger("botocore.parsers").setLevel(logging.INFO)
metrics = Metrics(namespace=NAMESPACE, service="voicebridge")
