"""Settings that hold a document or name one in S3: a responder's rules file, a model's system prompt.

A value of the form ``s3://bucket/key`` is read from S3 (``GetObject``, UTF-8); any other value is the document
itself. The container reads each once, when it builds the responder::

    rules = read_document(settings.responder_rules, lambda: container.client("s3"), setting="RESPONDER_RULES")
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.errors import ConfigurationError, StorageError

S3_SCHEME = "s3://"


def read_document(value: str, s3: Callable[[], Any], *, setting: str) -> str:
    """The document ``value`` holds or names; ``s3`` gives the S3 client, asked for only when the value is a URI.

    ConfigurationError when the URI is malformed, the object missing or not readable by this function, or not
    UTF-8; StorageError when S3 cannot be reached."""
    if not value.startswith(S3_SCHEME):
        return value
    bucket, _, key = value.removeprefix(S3_SCHEME).partition("/")
    if not bucket or not key:
        raise ConfigurationError(f"{setting}: {value!r} is not s3://bucket/key")
    try:
        body = s3().get_object(Bucket=bucket, Key=key)["Body"].read()
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code", "unknown")
        raise ConfigurationError(f"{setting}: {value} could not be read ({code})") from None
    except BotoCoreError as exc:
        raise StorageError(f"{setting}: S3 unreachable ({type(exc).__name__})") from None
    try:
        return bytes(body).decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigurationError(f"{setting}: {value} is not UTF-8 text") from None
