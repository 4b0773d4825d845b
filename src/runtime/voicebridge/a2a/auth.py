"""The bearer key Connect presents on the WebSocket upgrade (``Authorization: Bearer <key>``).

With ``AuthType: API_KEY`` Connect sends the value of the AppIntegrations application's Secrets Manager secret
(docs/protocols.md, *Upgrade*). The server reads the same secret: its ``AWSCURRENT`` version, and its
``AWSPREVIOUS`` one too, so that during a rotation a Connect still holding the old key is let in. Versions are kept
for ``ttl_s`` and read again after, so a rotation reaches every task within that time. Keys are compared in constant
time, each of them, whatever the header holds.

::

    keys = ApiKeys(secretsmanager, secret_id="arn:aws:secretsmanager:…:secret:voicebridge-a2a")
    keys.accepts(headers.get("Authorization"))   # True / False
"""

from __future__ import annotations

import hmac
import threading
import time
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.errors import ConfigurationError
from voicebridge.telemetry import logger

STAGES = ("AWSCURRENT", "AWSPREVIOUS")


class ApiKeys:
    """The keys that open a session, read from Secrets Manager and kept for ``ttl_s``."""

    def __init__(self, client: Any, secret_id: str, *, ttl_s: float = 60.0) -> None:
        self._client = client
        self._secret_id = secret_id
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._keys: tuple[bytes, ...] = ()
        self._read_at = float("-inf")

    def accepts(self, authorization: str | None) -> bool:
        """Whether the ``Authorization`` header holds an accepted key (``Bearer <key>``)."""
        scheme, _, presented = (authorization or "").partition(" ")
        given = presented.strip().encode()
        accepted = False
        for key in self.keys():
            # Every key is compared, so the time taken says nothing of which one (or whether one) matched.
            accepted |= hmac.compare_digest(given, key)
        return accepted and scheme.lower() == "bearer" and bool(given)

    def keys(self) -> tuple[bytes, ...]:
        with self._lock:
            if time.monotonic() - self._read_at < self._ttl_s and self._keys:
                return self._keys
            try:
                keys = tuple(key for key in (self._read(stage) for stage in STAGES) if key)
            except ConfigurationError as exc:
                if not self._keys:
                    raise
                # Secrets Manager is briefly out of reach: the keys read before stay until the next try.
                logger.warning("A2A keys not read again; the keys read before stay", reason=exc.safe_message)
                self._read_at = time.monotonic()
                return self._keys
            if not keys:
                raise ConfigurationError("the A2A API key secret has no value (A2A_API_KEY_SECRET_ARN)")
            self._keys, self._read_at = keys, time.monotonic()
            return keys

    def _read(self, stage: str) -> bytes | None:
        try:
            answer = self._client.get_secret_value(SecretId=self._secret_id, VersionStage=stage)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if stage != "AWSCURRENT" and code == "ResourceNotFoundException":
                # No rotation has happened yet: there is no previous version.
                return None
            raise ConfigurationError(f"the A2A API key secret cannot be read ({code})") from None
        except BotoCoreError as exc:
            raise ConfigurationError(f"the A2A API key secret cannot be read ({type(exc).__name__})") from None
        value = answer.get("SecretString")
        return value.strip().encode() if isinstance(value, str) and value.strip() else None
