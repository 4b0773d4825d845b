"""A streaming server holds many contacts' sessions in one process: each one's log lines carry its own contact id,
on every thread its work runs on."""

from __future__ import annotations

import contextvars
import io
import json
import logging
import threading
from collections.abc import Iterator

import pytest

from voicebridge.telemetry import in_context, logger


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
