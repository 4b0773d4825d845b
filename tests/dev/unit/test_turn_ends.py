"""``voicebridge records turn-ends``: how a deployment's callers' turns ended, from the call records it wrote."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from voicebridge_dev.cli import main
from voicebridge_dev.turn_ends import DEFAULT_LANGUAGE, summarise


def turn(latency_ms: int, after_ms: int | None, ended_by: str = "voicebridge", **more: Any) -> dict[str, Any]:
    """A caller's turn as the record gives it; ``after_ms`` is when the caller's voice came back after its end."""
    return {
        "track": "customer",
        "endedBy": ended_by,
        "latencyMs": {"turnEnd": latency_ms},
        **({} if after_ms is None else {"nextVoiceAfterMs": after_ms}),
        **more,
    }


def record(contact: str, language: str | None, *turns: dict[str, Any]) -> dict[str, Any]:
    return {"contactId": contact, "recordId": f"{contact}/0", "listening": {"language": language}, "turns": list(turns)}


SPANISH = record("c-es", "es-US", turn(950, 300), turn(980, 4000), turn(1010, None))
ENGLISH = record(
    "c-en",
    None,
    turn(700, 5200, "ink"),
    turn(300, -20, "ink"),
    turn(200, None, "ink", backchannel=True),
    {"track": "agent", "latencyMs": {"turnEnd": 1}},
    turn(800, None, "ink"),
)


def test_each_language_and_side_gets_its_stop_to_end_times_and_the_turns_the_caller_went_on_after() -> None:
    rows = {(row.language, row.ended_by): row for row in summarise([SPANISH, ENGLISH])}

    assert set(rows) == {("es-US", "voicebridge"), (DEFAULT_LANGUAGE, "ink")}
    spanish = rows["es-US", "voicebridge"]
    assert (spanish.calls, spanish.turns, spanish.median_ms) == (1, 3, 980)
    # The last turn has no turn after it: two could have been followed, one was, 300 ms after its end.
    assert (spanish.followed, spanish.went_on, spanish.went_on_rate) == (2, 1, 0.5)
    english = rows[DEFAULT_LANGUAGE, "ink"]
    # The backchannel and the agent's turn are not the caller's turns ending; a voice back before the end counts.
    assert (english.turns, english.median_ms, english.followed, english.went_on) == (3, 700, 2, 1)


def test_how_soon_counts_as_going_on_is_the_callers_to_choose() -> None:
    (row,) = summarise([SPANISH], within_ms=5000)
    assert row.went_on == 2


def write(folder: Path, name: str, content: Any) -> None:
    (folder / name).write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")


def test_the_command_reads_a_folder_and_names_what_it_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "2026" / "12").mkdir(parents=True)
    write(tmp_path / "2026" / "12", "c-es.json", SPANISH)
    write(tmp_path, "c-en.json", ENGLISH)
    write(tmp_path, "notes.json", {"hello": "world"})
    write(tmp_path, "broken.json", "{")

    assert main(["records", "turn-ends", str(tmp_path), "--json"]) == 0

    out, err = capsys.readouterr()
    figures = json.loads(out)
    assert figures["within_ms"] == 1000
    assert {(row["language"], row["went_on"], row["followed"]) for row in figures["rows"]} == {
        ("es-US", 1, 2),
        (DEFAULT_LANGUAGE, 1, 2),
    }
    assert "notes.json: not a call record" in err and "broken.json: not JSON" in err


def test_the_command_prints_a_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "c-es.json", SPANISH)
    assert main(["records", "turn-ends", str(tmp_path / "c-es.json")]) == 0
    header, row = capsys.readouterr().out.splitlines()
    assert header.split()[:2] == ["language", "ended"]
    assert row.split() == ["es-US", "voicebridge", "1", "3", "980", "ms", "1,004", "ms", "1", "of", "2", "(50.0%)"]


def test_a_source_that_does_not_exist_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["records", "turn-ends", str(tmp_path / "nowhere")]) == 2
    assert "no such file or folder" in capsys.readouterr().err


@pytest.fixture
def bucket(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="records-bucket")
        yield s3


def test_the_command_reads_the_records_in_the_stacks_bucket(bucket: Any, capsys: pytest.CaptureFixture[str]) -> None:
    bucket.put_object(Bucket="records-bucket", Key="records/2026/12/06/c-es.json", Body=json.dumps(SPANISH))
    bucket.put_object(Bucket="records-bucket", Key="records/2026/12/06/c-en.json", Body=json.dumps(ENGLISH))
    bucket.put_object(Bucket="records-bucket", Key="other/c-x.json", Body=json.dumps(SPANISH))

    assert main(["records", "turn-ends", "s3://records-bucket/records/", "--json", "--region", "us-east-1"]) == 0

    rows = json.loads(capsys.readouterr().out)["rows"]
    assert sorted((row["language"], row["calls"], row["turns"]) for row in rows) == [
        (DEFAULT_LANGUAGE, 1, 3),
        ("es-US", 1, 3),
    ]
