"""``python -m voicebridge.a2a``: the agent server, configured from the environment (docs/configuration.md).

``A2A_HOST`` (default ``0.0.0.0``) and ``A2A_PORT`` (default 8080) are where it listens; ``A2A_DRAIN_S`` (default
110, inside Fargate's 120 s stop timeout) how long live sessions may run on after SIGTERM.
"""

from __future__ import annotations

import asyncio
import os

from voicebridge import container
from voicebridge.a2a.auth import ApiKeys
from voicebridge.a2a.server import AgentServer
from voicebridge.a2a.session import StreamSettings
from voicebridge.errors import ConfigurationError


def main() -> None:
    settings = container.settings()
    if not settings.a2a_api_key_secret_arn:
        raise ConfigurationError("A2A_API_KEY_SECRET_ARN: the agent server needs the secret holding Connect's key")
    keys = ApiKeys(container.client("secretsmanager"), settings.a2a_api_key_secret_arn)
    keys.keys()
    server = AgentServer(
        container.a2a_engine,
        StreamSettings.of(settings),
        keys,
        host=os.environ.get("A2A_HOST", "0.0.0.0"),
        port=int(os.environ.get("A2A_PORT", "8080")),
        drain_s=float(os.environ.get("A2A_DRAIN_S", "110")),
    )
    asyncio.run(server.serve())


if __name__ == "__main__":
    main()
