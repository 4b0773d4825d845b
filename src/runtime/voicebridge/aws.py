"""AWS clients, created once per container and reused across invocations.

Endpoints come from boto3's own ``AWS_ENDPOINT_URL_<SERVICE>`` variables, so the same code reaches AWS in production
and the local cloud in development without a local-mode branch.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import boto3
from botocore.config import Config

_session = boto3.session.Session()


def session() -> boto3.session.Session:
    """The container's boto3 session."""
    return _session


@cache
def client(service: str, *, read_timeout: float = 10.0, pool: int = 16) -> Any:
    """A shared client for ``service``; keep-alive connections in a pool sized for concurrent generations."""
    config = Config(
        connect_timeout=2,
        read_timeout=read_timeout,
        max_pool_connections=pool,
        retries={"mode": "standard", "max_attempts": 2},
        tcp_keepalive=True,
    )
    return _session.client(service, config=config)
