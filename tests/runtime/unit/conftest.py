"""Unit tests' shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from voicebridge.store.writer import TurnWriter


@pytest.fixture(autouse=True)
def turn_writers_closed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[TurnWriter]]:
    """Every turn writer a test starts (each transcriber has one, on a thread of its own) is closed when the test
    ends: left running, it would write and log a turn after the test, into a capture pytest has closed."""
    made: list[TurnWriter] = []
    start = TurnWriter.__init__

    def started(writer: TurnWriter, *args: Any, **kwargs: Any) -> None:
        start(writer, *args, **kwargs)
        made.append(writer)

    monkeypatch.setattr(TurnWriter, "__init__", started)
    yield made
    for writer in made:
        writer.close(timeout_s=0)
