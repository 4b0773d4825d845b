"""The container's boto3 session; clients are built from it by :mod:`voicebridge.container`.

Endpoints come from boto3's own ``AWS_ENDPOINT_URL_<SERVICE>`` variables, so the same code reaches AWS in production
and the local cloud in development without a local-mode branch.
"""

from __future__ import annotations

import boto3

_session = boto3.session.Session()


def session() -> boto3.session.Session:
    """The container's boto3 session (sessions are not thread-safe to create, clients are safe to share)."""
    return _session
