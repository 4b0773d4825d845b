"""The Cartesia API key, read from Secrets Manager (once per container, by :mod:`voicebridge.container`); never
logged, never in an error."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.errors import ConfigurationError

if TYPE_CHECKING:
    from types_boto3_secretsmanager.client import SecretsManagerClient


def read_api_key(secret_arn: str, secrets: SecretsManagerClient) -> str:
    """The key stored in ``secret_arn`` (read with the ``secretsmanager`` client ``secrets``): a plain string, or
    JSON with an ``api_key`` field."""
    if not secret_arn:
        raise ConfigurationError("CARTESIA_API_KEY_SECRET_ARN is not set")
    try:
        value = str(secrets.get_secret_value(SecretId=secret_arn)["SecretString"])
    except ClientError as exc:
        raise ConfigurationError(f"cannot read the Cartesia API key secret ({exc.response['Error']['Code']})") from None
    except BotoCoreError as exc:
        raise ConfigurationError(f"cannot reach Secrets Manager ({type(exc).__name__})") from None
    key = value.strip()
    if key.startswith("{"):
        try:
            key = str(json.loads(key).get("api_key", "")).strip()
        except (ValueError, AttributeError):
            key = ""
    if not key:
        raise ConfigurationError("the Cartesia API key secret is empty or has no api_key field")
    return key
