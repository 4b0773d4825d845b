"""Structured logs and CloudWatch metrics (Embedded Metric Format), shared by every function.

Metric names are part of the product's interface: the template's dashboard and alarms read them.
"""

from __future__ import annotations

import logging

from aws_lambda_powertools import Logger, Metrics

NAMESPACE = "VoiceBridge"

logger = Logger(service="voicebridge")

# botocore logs whole responses at DEBUG, GetSecretValue's included: the Cartesia key must never reach a log.
logging.getLogger("botocore.parsers").setLevel(logging.INFO)
metrics = Metrics(namespace=NAMESPACE, service="voicebridge")
