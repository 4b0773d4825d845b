"""The streaming agent server on the local cloud, as a task of the ECS service runs it: ``python -m voicebridge.a2a``
in a process of its own, with the consumer's environment from template.yaml (the same settings as the flows path,
pointed at the local cloud) and its bearer key in the local Secrets Manager.

::

    with LocalCloud(...) as cloud, LocalAgent(cloud, TEMPLATE) as agent:
        run_session(agent.url, ConnectSettings(api_key=agent.api_key), caller_audio=pcm)
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Self

from voicebridge_dev.template import function_spec, load_template

ENVIRONMENT_OF = "TranscribeStreamFunction"
"""The function whose settings the server runs with: the consumer, which converses on the flows path."""
SECRET_NAME = "voicebridge-local-a2a-key"
START_TIMEOUT_S = 30.0


class LocalAgentError(RuntimeError):
    """The agent server did not come up; the message holds what it logged."""


class LocalAgent:
    """``python -m voicebridge.a2a`` against a local cloud, on a free loopback port."""

    def __init__(
        self,
        cloud: Any,
        template: str | Path,
        *,
        env: Mapping[str, str] | None = None,
        log: IO[str] | None = None,
    ) -> None:
        self._cloud = cloud
        self._template = Path(template)
        self._extra = dict(env or {})
        self._log = log
        self.api_key = "local-a2a-" + secrets.token_hex(12)
        self.port = _free_port()
        self._process: subprocess.Popen[str] | None = None

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/health"

    def environment(self) -> dict[str, str]:
        """What the server process runs with."""
        template = load_template(self._template)
        spec = function_spec(template, ENVIRONMENT_OF, region=self._cloud.region, parameters=self._cloud.parameters())
        secret_arn = self._secret()
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "A2A_"))},
            **spec.environment,
            **self._cloud.env(),
            "A2A_API_KEY_SECRET_ARN": secret_arn,
            "A2A_HOST": "127.0.0.1",
            "A2A_PORT": str(self.port),
            "A2A_DRAIN_S": "2",
            **self._extra,
        }

    def _secret(self) -> str:
        client = self._cloud.client("secretsmanager")
        try:
            arn: str = client.create_secret(Name=SECRET_NAME, SecretString=self.api_key)["ARN"]
        except client.exceptions.ResourceExistsException:
            arn = client.put_secret_value(SecretId=SECRET_NAME, SecretString=self.api_key)["ARN"]
        return arn

    def start(self) -> Self:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "voicebridge.a2a"],
            env=self.environment(),
            stdout=self._log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if self._log else subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                output = self._process.stderr.read() if self._process.stderr else ""
                raise LocalAgentError(f"the agent server exited ({self._process.returncode}): {output[-2000:]}")
            if self.health() is not None:
                return self
            time.sleep(0.1)
        self.stop()
        raise LocalAgentError(f"the agent server did not answer its health check within {START_TIMEOUT_S:.0f} s")

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(self.health_url, timeout=1) as answer:
                body: dict[str, Any] = json.loads(answer.read())
                return body
        except (OSError, urllib.error.URLError, ValueError):
            return None

    def stop(self) -> None:
        process = self._process
        if process is None:
            return
        self._process = None
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
