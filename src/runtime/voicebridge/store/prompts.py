"""The S3 prompt cache: synthesized prompts stored under a content hash, served to Connect by URL.

A key names everything that changes the audio (see :meth:`SpeechRequest.cache_key`), so a stored prompt is never
stale. Objects are written with one ``PutObject`` of the finished WAV — S3 makes it visible whole or not at all, so a
half-written prompt can never be served. A lookup costs one ``HeadObject``, or nothing when this container has
already seen the key.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.audio.wav import MULAW_RATE, mulaw_wav_bytes
from voicebridge.errors import ConfigurationError, StorageError

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client


PAUSE_MS = 200
"""The silent prompt's length: short enough to go unnoticed between two long polls."""
PAUSE = f"pause-{PAUSE_MS}ms"


def prompt_key(prefix: str, digest: str) -> str:
    """Where a prompt is in the bucket."""
    return f"{prefix}{digest}.wav"


def prompt_uri(bucket: str, region: str, key: str) -> str:
    """The virtual-hosted URL a MessageParticipant block plays (docs/protocols.md, *Prompts played from S3*)."""
    return f"https://{bucket}.s3.{region}.amazonaws.com/{key}"


def pause_uri(bucket: str, region: str, prefix: str) -> str:
    """Where the silent prompt is: what a flow plays to end a chain of Lambda blocks, without a sound, while the
    caller speaks or the agent thinks (docs/protocols.md, *Chained blocks*). Known without a call to S3."""
    return prompt_uri(bucket, region, prompt_key(prefix, PAUSE))


@dataclass(frozen=True, slots=True)
class StoredPrompt:
    """A prompt Connect can play."""

    key: str
    uri: str
    duration_ms: int


class PromptStore:
    """Prompts in ``bucket`` under ``prefix``, with a per-container index of keys known to exist."""

    def __init__(
        self, bucket: str, s3: S3Client, *, region: str, prefix: str = "prompts/", index_size: int = 4096
    ) -> None:
        if not bucket:
            raise ConfigurationError("PROMPT_BUCKET is not set")
        self.bucket = bucket
        self.region = region
        self.prefix = prefix
        self._s3 = s3
        self._index: OrderedDict[str, StoredPrompt] = OrderedDict()
        self._index_size = index_size

    def key_for(self, digest: str) -> str:
        return prompt_key(self.prefix, digest)

    def uri_for(self, key: str) -> str:
        return prompt_uri(self.bucket, self.region, key)

    def known(self, digest: str) -> StoredPrompt | None:
        """The stored prompt for ``digest`` if this container has seen it: no S3 round trip."""
        key = self.key_for(digest)
        known = self._index.get(key)
        if known is not None:
            self._index.move_to_end(key)
        return known

    def lookup(self, digest: str) -> StoredPrompt | None:
        """The stored prompt for ``digest``, or None; at most one S3 round trip."""
        known = self.known(digest)
        if known is not None:
            return known
        key = self.key_for(digest)
        try:
            head = self._s3.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
                return None
            raise StorageError(f"prompt lookup failed ({exc.response['Error'].get('Code')})") from None
        except BotoCoreError as exc:
            raise StorageError(f"prompt bucket unreachable ({type(exc).__name__})") from None
        duration = int(head.get("Metadata", {}).get("duration-ms", "0") or 0)
        return self._remember(StoredPrompt(key, self.uri_for(key), duration))

    def put(self, digest: str, wav: bytes, *, duration_ms: int, text: str) -> StoredPrompt:
        """Store a finished prompt; visible to readers only once complete."""
        key = self.key_for(digest)
        try:
            self._s3.put_object(
                Bucket=self.bucket,
                Key=key,
                Body=wav,
                ContentType="audio/wav",
                Metadata={"duration-ms": str(duration_ms), "chars": str(len(text))},
            )
        except ClientError as exc:
            raise StorageError(f"prompt write failed ({exc.response['Error'].get('Code')})") from None
        except BotoCoreError as exc:
            raise StorageError(f"prompt bucket unreachable ({type(exc).__name__})") from None
        return self._remember(StoredPrompt(key, self.uri_for(key), duration_ms))

    def pause(self) -> StoredPrompt:
        """The silent prompt (:func:`pause_uri`), stored once: the consumer makes sure of it as it starts."""
        known = self.lookup(PAUSE)
        if known is not None:
            return known
        # µ-law's silence is 0xFF (the code of a zero sample).
        silence = mulaw_wav_bytes(b"\xff" * (MULAW_RATE * PAUSE_MS // 1000))
        return self.put(PAUSE, silence, duration_ms=PAUSE_MS, text="")

    def _remember(self, prompt: StoredPrompt) -> StoredPrompt:
        self._index[prompt.key] = prompt
        if len(self._index) > self._index_size:
            self._index.popitem(last=False)
        return prompt
