"""The container's AWS clients, stubbed: a Connect-facing handler runs in-process and reaches no network.

Each client the Connect-facing handlers use is built once by :mod:`voicebridge.container`, as in Lambda, then
wrapped in botocore's ``Stubber``: a call answers what a test queued, and a call nobody queued fails like an
unreachable service (a ``BotoCoreError``). Endpoints point nowhere, so a client built behind the stubs' back fails
to connect instead of reaching AWS. Every call is recorded with its parameters, to show what a handler asked of AWS::

    with stubbed_aws() as aws:
        aws.stub("dynamodb").add_response("query", {"Items": []})
        answer = await_turn.handler(event, None)
        assert aws.calls == ["dynamodb.Query", ...]
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.stub import Stubber

from voicebridge import container
from voicebridge.container import ClientOptions, Service
from voicebridge.sonic.backends import STALL_TIMEOUT_S

TURN_TABLE = "voicebridge-turns"
NOWHERE = "http://127.0.0.1:9"
"""The discard port: nothing listens there."""
ENVIRONMENT = {
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_ENDPOINT_URL": NOWHERE,
    "TURN_TABLE": TURN_TABLE,
    "PROMPT_BUCKET": "voicebridge-prompts",
    "SONIC_BACKEND": "sagemaker",
    "SONIC_ENDPOINT_NAME": "sonic",
    "TRANSCRIBE_FUNCTION_NAME": "voicebridge-transcribe",
    # One attempt within the shortest deadline: a stubbed model fails at once, with no back-off to wait out.
    "SONIC_MAX_ATTEMPTS": "1",
    "SONIC_DEADLINE_MS": "500",
}
CLIENTS: dict[Service, ClientOptions] = {
    "dynamodb": {},
    "lambda": {},
    "s3": {},
    "sagemaker-runtime": {"read_timeout": STALL_TIMEOUT_S, "pool": 32},
}
"""Each service a Connect-facing handler calls, with the options its factory asks the container for."""


class StubbedAws:
    """The stubbed clients, and the calls made on them, oldest first."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, Any]]] = []
        """Each call as ``service.Operation`` and its parameters."""
        self._stubs: dict[str, Stubber] = {}

    @property
    def calls(self) -> list[str]:
        return [name for name, _ in self.requests]

    def stub(self, service: str) -> Stubber:
        return self._stubs[service]

    def _add(self, service: str, client: Any) -> None:
        # Ahead of the stubber's own check (registered first, too), which fails a call nobody queued.
        client.meta.events.register_first("before-parameter-build.*.*", self._record)
        stubber = Stubber(client)
        stubber.activate()
        self._stubs[service] = stubber

    def _record(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        self.requests.append((f"{model.service_model.service_name}.{model.name}", params))

    def _close(self) -> None:
        for stubber in self._stubs.values():
            stubber.deactivate()


@contextlib.contextmanager
def stubbed_aws() -> Iterator[StubbedAws]:
    """A fresh container whose clients are stubbed, for as long as the block runs."""
    aws = StubbedAws()
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith("AWS_ENDPOINT_URL_"):
                patch.delenv(name)
        for name, value in ENVIRONMENT.items():
            patch.setenv(name, value)
        container.reset()
        try:
            for service, options in CLIENTS.items():
                aws._add(service, container.client(service, **options))
            yield aws
        finally:
            aws._close()
            container.reset()
