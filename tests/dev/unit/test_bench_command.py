"""`voicebridge bench`: a bench that needs a speech engine this machine lacks says so, and the others still run."""

from __future__ import annotations

from pathlib import Path

import pytest

from voicebridge_dev.cli import main

NEEDS_AN_ENGINE = """
from voicebridge_dev.local.ink.errors import RecogniserUnavailableError


def run():
    raise RecogniserUnavailableError("pocketsphinx is not installed (install the 'speech' extra)")
"""

RUNS = """
def run():
    return {"median_ms": 12}
"""


def test_a_bench_missing_its_speech_engine_is_named_and_the_others_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "bench_a_recognising.py").write_text(NEEDS_AN_ENGINE, encoding="utf-8")
    (tmp_path / "bench" / "bench_b_timing.py").write_text(RUNS, encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    status = main(["bench"])

    out, err = capsys.readouterr()
    assert status == 2
    assert "a-recognising not run: pocketsphinx is not installed" in err
    assert '"median_ms": 12' in out
