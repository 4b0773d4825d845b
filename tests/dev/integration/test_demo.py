"""``voicebridge demo`` as a newcomer runs it: one call, a sentence of their own heard exactly as said, and the
services each in a process of their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voicebridge_dev.demo import run_demo

pytestmark = pytest.mark.timeout(180)

TEXT = "I would like to speak to a person about my card, please."


def test_a_sentence_of_ones_own_is_heard_as_said_on_services_in_processes_of_their_own(tmp_path: Path) -> None:
    report = tmp_path / "report.json"

    status = run_demo(
        out=tmp_path / "out",
        report=str(report),
        engine="standin",
        scenario="transfer",
        text=TEXT,
        recognition="registered",
        own_processes=True,
    )

    assert status == 0
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["service_processes"] is True and written["recogniser"] == "registered transcripts"
    assert written["ended_by"] == "transferred"
    first = written["turns"][0]
    assert first["said"] == first["heard"] == TEXT
    assert {path.name for path in (tmp_path / "out").iterdir()} >= {"call.wav", "transcript.txt", "timeline.png"}
