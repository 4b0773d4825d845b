"""Runs a template function's handler in this process, as Lambda would: its environment, a context with a deadline.

This is what ``voicebridge invoke`` uses (a Docker-free ``sam local invoke``): one function per process, so the
handler's per-container caches behave as in a fresh Lambda container.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from voicebridge_dev.template import LOCAL_ACCOUNT, FunctionSpec


@dataclass
class LambdaContext:
    """The attributes of Lambda's context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int
    timeout_s: float
    region: str = "us-east-1"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    _deadline: float = field(default=0.0, repr=False)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    @property
    def invoked_function_arn(self) -> str:
        return f"arn:aws:lambda:{self.region}:{LOCAL_ACCOUNT}:function:{self.function_name}"

    @property
    def log_group_name(self) -> str:
        return f"/aws/lambda/{self.function_name}"

    @property
    def log_stream_name(self) -> str:
        return f"local/{self.aws_request_id}"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@contextlib.contextmanager
def environment(variables: Mapping[str, str]) -> Iterator[None]:
    """Set ``variables`` for the duration of the block, restoring the previous values after."""
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def load_handler(dotted: str) -> Any:
    """``package.module.function`` → the function."""
    module_name, _, attribute = dotted.rpartition(".")
    if not module_name:
        raise ValueError(f"handler {dotted!r} is not module.function")
    return getattr(importlib.import_module(module_name), attribute)


def invoke(spec: FunctionSpec, event: Any, *, region: str = "us-east-1") -> Any:
    """Run ``spec``'s handler on ``event`` with its environment and a context bounded by its timeout."""
    # A variable the template leaves empty (an endpoint override, an optional URL) keeps the value the caller's
    # shell gives it: that is how `voicebridge local up`'s exports reach the handler.
    template = {name: value for name, value in spec.environment.items() if value or name not in os.environ}
    variables = {
        **template,
        "AWS_LAMBDA_FUNCTION_NAME": spec.logical_id,
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory_mb),
        "AWS_REGION": region,
    }
    with environment(variables):
        handler = load_handler(spec.handler)
        return handler(event, LambdaContext(spec.logical_id, spec.memory_mb, spec.timeout_s, region=region))
