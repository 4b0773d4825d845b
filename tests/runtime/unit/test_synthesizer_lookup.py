"""The prompt cache's lookup runs beside the model: a miss does not wait for S3, a hit found meanwhile wins; a new
prompt's write that cannot land before the answer is due is reported in time, and lands after."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pytest

from voicebridge.errors import StorageError
from voicebridge.sonic.backends import OutputFormat
from voicebridge.sonic.request import RequestSettings, SpeechRequest
from voicebridge.sonic.synthesizer import SynthesisSettings, Synthesizer
from voicebridge.store.prompts import PromptStore

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

SETTINGS = SynthesisSettings(
    sonic_encoding="pcm_s16le", sonic_sample_rate=8000, sonic_resampler="soxr", sonic_max_attempts=4
)
REQUEST_SETTINGS = RequestSettings(
    sonic_max_text_chars=1000, sonic_default_voice="a0e99841-438c-4a64-b679-ae501e7d6091", sonic_default_language="en"
)


class Bucket:
    """S3 with a slow HeadObject; ``stored`` decides whether the prompt is there."""

    def __init__(self, *, stored: bool, head_s: float, put_s: float = 0.0) -> None:
        self.stored = stored
        self.head_s = head_s
        self.put_s = put_s
        self.head_answered_at: float | None = None
        self.puts = 0
        self.put_done = threading.Event()

    def head_object(self, **request: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        time.sleep(self.head_s)
        self.head_answered_at = time.monotonic()
        if not self.stored:
            raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadObject")
        return {"Metadata": {"duration-ms": "700"}}

    def put_object(self, **request: Any) -> dict[str, Any]:
        time.sleep(self.put_s)
        self.puts += 1
        self.put_done.set()
        return {}


class Sonic:
    """A backend that records when it was asked and streams 20 ms chunks, one every ``every_s``."""

    identity = "test:sonic"
    pcm_names = ("pcm_s16le",)

    def __init__(self, *, chunks: int, every_s: float) -> None:
        self.chunks = chunks
        self.every_s = every_s
        self.asked_at: float | None = None
        self.closed = threading.Event()

    def stream(self, request: SpeechRequest, fmt: OutputFormat, *, deadline: float) -> Iterator[bytes]:
        self.asked_at = time.monotonic()
        chunk = (np.sin(np.arange(160) / 3) * 8000).astype("<i2").tobytes()
        try:
            for _ in range(self.chunks):
                time.sleep(self.every_s)
                yield chunk
        finally:
            self.closed.set()


def synthesize(bucket: Bucket, sonic: Sonic, *, store_by: float | None = None) -> Any:
    store = PromptStore("prompts", cast("S3Client", bucket), region="us-east-1")
    synthesizer = Synthesizer(SETTINGS, sonic, store)  # type: ignore[arg-type]
    request = SpeechRequest.from_parameters({"Text": "A sentence nobody has asked for before."}, REQUEST_SETTINGS)
    return synthesizer.synthesize(request, deadline=time.monotonic() + 10, store_by=store_by)


def test_a_miss_asks_the_model_without_waiting_for_the_lookup() -> None:
    bucket, sonic = Bucket(stored=False, head_s=0.3), Sonic(chunks=5, every_s=0.01)
    prompt = synthesize(bucket, sonic)
    assert not prompt.cache_hit and bucket.puts == 1
    # The model was asked before the lookup answered (here it had finished before the lookup did).
    assert sonic.asked_at is not None
    assert bucket.head_answered_at is None or sonic.asked_at < bucket.head_answered_at


def test_a_prompt_found_stored_meanwhile_stops_the_generation_and_is_played() -> None:
    bucket, sonic = Bucket(stored=True, head_s=0.02), Sonic(chunks=100, every_s=0.02)
    prompt = synthesize(bucket, sonic)
    assert prompt.cache_hit and bucket.puts == 0
    assert sonic.closed.is_set()


def test_a_write_that_cannot_land_before_the_answer_is_due_is_reported_then_and_lands_after() -> None:
    bucket, sonic = Bucket(stored=False, head_s=0.0, put_s=1.0), Sonic(chunks=5, every_s=0.0)
    store_by = time.monotonic() + 0.3

    with pytest.raises(StorageError, match="not stored before the answer was due"):
        synthesize(bucket, sonic, store_by=store_by)

    # The answer did not wait for the write: it lands a second after it began.
    assert bucket.puts == 0
    assert bucket.put_done.wait(timeout=5) and bucket.puts == 1


def test_a_write_in_time_is_the_prompt_and_without_a_due_time_it_is_waited_for() -> None:
    for store_by in (time.monotonic() + 5, None):
        bucket, sonic = Bucket(stored=False, head_s=0.0, put_s=0.2), Sonic(chunks=5, every_s=0.0)

        prompt = synthesize(bucket, sonic, store_by=store_by)

        assert not prompt.cache_hit and bucket.puts == 1
