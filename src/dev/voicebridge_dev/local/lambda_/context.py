"""The context a handler gets in a container, as Lambda's Python runtime gives it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voicebridge_dev.local.runner import LambdaContext


@dataclass
class ClientContext:
    """``context.client_context``: the decoded ``X-Amz-Client-Context`` header, as Lambda's Python runtime
    exposes it."""

    client: Any = None
    custom: Any = None
    env: Any = None


@dataclass
class InvokeContext(LambdaContext):
    """The context a handler gets in a container: :class:`LambdaContext` plus ``client_context``; ``identity``
    is None, as for any caller without a Cognito identity."""

    client_context: ClientContext | None = None
    identity: None = None
