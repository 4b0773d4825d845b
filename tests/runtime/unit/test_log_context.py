"""A streaming server holds many contacts' sessions in one process: each one's log lines carry its own contact id,
on every thread its work runs on."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

import pytest

from voicebridge.sonic.backends import OutputFormat, SonicBackend
from voicebridge.sonic.request import RequestSettings, SpeechRequest
from voicebridge.sonic.synthesizer import SynthesisSettings, Synthesizer
from voicebridge.store.prompts import PromptStore
from voicebridge.store.replies import ReplyStore
from voicebridge.store.turns import TurnStore
from voicebridge.telemetry import in_context, logger

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client


@pytest.fixture
def written() -> Iterator[io.StringIO]:
    """The lines the product's logger writes, as its handler formats them."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logger.registered_formatter)
    logging.getLogger(logger.name).addHandler(handler)
    try:
        yield stream
    finally:
        logging.getLogger(logger.name).removeHandler(handler)


def session(contact_id: str) -> None:
    """What a session does: its own correlation id, then work on a thread it starts, and on its own."""
    logger.thread_safe_append_keys(correlation_id=contact_id)
    worker = threading.Thread(target=in_context(lambda: logger.info("on the session's thread")))
    worker.start()
    worker.join()
    logger.info("in the session")


def test_each_sessions_lines_carry_its_own_contact_id_on_the_threads_it_starts(written: io.StringIO) -> None:
    sessions = [
        threading.Thread(target=contextvars.copy_context().run, args=(session, contact))
        for contact in ("contact-a", "contact-b")
    ]
    for thread in sessions:
        thread.start()
    for thread in sessions:
        thread.join()
    lines = [json.loads(line) for line in written.getvalue().splitlines()]
    by_contact = sorted((line.get("correlation_id"), line["message"]) for line in lines)
    assert by_contact == [
        ("contact-a", "in the session"),
        ("contact-a", "on the session's thread"),
        ("contact-b", "in the session"),
        ("contact-b", "on the session's thread"),
    ]


class LoggingTable:
    """The turn table, saying in the log each call it gets (from whichever thread makes it)."""

    table = "turns"

    def call(self, operation: str, **request: Any) -> dict[str, Any]:
        logger.info("table call", operation=operation)
        return {}

    def put(self, item: dict[str, Any], **condition: Any) -> None:
        self.call("put_item", Item=item, **condition)

    def expires_at(self) -> int:
        return 0


class LoggingBucket:
    """The prompt bucket, saying in the log each lookup it gets; nothing is stored."""

    def __init__(self) -> None:
        self.looked_up = threading.Event()

    def head_object(self, **request: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        logger.info("prompt lookup")
        self.looked_up.set()
        raise ClientError({"Error": {"Code": "404", "Message": "Not Found"}}, "HeadObject")

    def put_object(self, **request: Any) -> dict[str, Any]:
        return {}


class OneChunk:
    identity = "test:sonic"
    pcm_names = ("pcm_s16le",)

    def stream(self, request: SpeechRequest, fmt: OutputFormat, *, deadline: float) -> Iterator[bytes]:
        yield bytes(320)


def as_session(contact_id: str, work: Callable[[], object]) -> None:
    def run() -> None:
        logger.thread_safe_append_keys(correlation_id=contact_id)
        work()

    thread = threading.Thread(target=contextvars.copy_context().run, args=(run,))
    thread.start()
    thread.join()


def carried(written: io.StringIO, message: str) -> list[str | None]:
    lines = [json.loads(line) for line in written.getvalue().splitlines()]
    return [line.get("correlation_id") for line in lines if line["message"] == message]


def test_reply_status_writes_on_the_stores_own_threads_carry_the_sessions_contact_id(written: io.StringIO) -> None:
    replies = ReplyStore(cast(TurnStore, LoggingTable()))

    as_session("contact-a", lambda: replies.synthesizing_soon("contact-a", 3).result(timeout=5))

    assert carried(written, "table call") == ["contact-a"]


def test_a_prompt_lookup_beside_the_model_carries_the_sessions_contact_id(written: io.StringIO) -> None:
    bucket = LoggingBucket()
    store = PromptStore("prompts", cast("S3Client", bucket), region="us-east-1")
    synthesizer = Synthesizer(
        SynthesisSettings(
            sonic_encoding="pcm_s16le", sonic_sample_rate=8000, sonic_resampler="soxr", sonic_max_attempts=1
        ),
        cast(SonicBackend, OneChunk()),
        store,
    )
    request = SpeechRequest.from_parameters(
        {"Text": "A sentence of contact a's."},
        RequestSettings(
            sonic_max_text_chars=100,
            sonic_default_voice="a0e99841-438c-4a64-b679-ae501e7d6091",
            sonic_default_language="en",
        ),
    )

    as_session("contact-a", lambda: synthesizer.synthesize(request, deadline=time.monotonic() + 10))

    # The lookup runs beside the model, and a synthesis may be done before it has.
    assert bucket.looked_up.wait(5)
    assert carried(written, "prompt lookup") == ["contact-a"]
