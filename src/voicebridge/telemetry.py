"""Structured logs and CloudWatch metrics (Embedded Metric Format), shared by every function.

Metric names are part of the product's interface: the template's dashboard and alarms read them.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

NAMESPACE = "VoiceBridge"

logger = Logger(service="voicebridge")
metrics = Metrics(namespace=NAMESPACE, service="voicebridge")
