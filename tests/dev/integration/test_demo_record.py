"""``voicebridge demo``'s whole call against what the product kept of it: the call record, the metrics and the
demo's waterfall agree turn by turn (a file of its own: the longest real-time test, so it runs beside the others)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voicebridge.call.record import CALLER_WENT_ON_MS
from voicebridge_dev.demo import run_demo

pytestmark = pytest.mark.timeout(180)

PAUSED = "I'd like to check my balance, | please."


def _metric_values(logs: str, name: str) -> list[float]:
    """Every value of metric ``name`` in the functions' Embedded Metric Format lines, in the order logged."""
    values: list[float] = []
    for line in logs.splitlines():
        if not line.startswith("{") or f'"{name}"' not in line:
            continue
        value = json.loads(line)[name]
        values += [float(v) for v in value] if isinstance(value, list) else [float(value)]
    return values


def test_the_record_the_metrics_and_the_waterfall_agree_turn_by_turn(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"

    # The first turn has a pause of half a second in it: one turn to Ink, two utterances to the voice detector.
    status = run_demo(
        out=out, report=str(report), engine="standin", scenario="normal", text=PAUSED, recognition="registered"
    )

    assert status == 0
    demo = json.loads(report.read_text(encoding="utf-8"))
    turns = demo["turns"]
    # The record times the caller's audio from the start of the contact's stream, the demo from the call's: the
    # stream starts where the flow enables media streaming (a few hundred ms in when the call is slow to begin).
    streamed_from = next(change["at_ms"] for change in demo["media_streaming"] if change["enabled"])
    record = json.loads((out / "call-record.json").read_text(encoding="utf-8"))
    kept = [turn for turn in record["turns"] if turn["track"] == "customer"]
    # Every turn stored once, in order.
    assert [turn["heard"] for turn in kept] == [turn["heard"] for turn in turns]
    assert [turn["turn"] for turn in kept] == list(range(len(turns)))
    latencies = [turn["latencyMs"]["turnEnd"] for turn in kept]
    assert _metric_values((out / "function-logs.txt").read_text(encoding="utf-8"), "InkTurnLatency") == latencies
    for turn, stored in zip(turns, kept, strict=True):
        # The stand-in voice fades out below the voice detector's threshold for up to a quarter of a second after
        # its last loud syllable: the simulator's truth is the clip's last sample. The record's end has come 35-90 ms
        # after it, counted from the stream's start (the detector's windows and the stream's framing).
        assert -250 <= streamed_from + stored["audioEndMs"] - turn["speech_end_ms"] <= 150, turn["heard"]
        assert abs(streamed_from + stored["audioStartMs"] - turn["speech_start_ms"]) <= 100, turn["heard"]
        assert abs(stored["latencyMs"]["turnEnd"] - turn["latency_ms"]["stop_to_turn_end"]) <= 250, turn["heard"]
    # How soon the caller spoke again after each turn ended, as the demo timed it: nobody was cut off in this call.
    for turn, following, stored in zip(turns, turns[1:], kept, strict=False):
        ended_at = turn["speech_end_ms"] + turn["latency_ms"]["stop_to_turn_end"]
        assert abs(stored["nextVoiceAfterMs"] - (following["speech_start_ms"] - ended_at)) <= 250, turn["heard"]
        assert stored["nextVoiceAfterMs"] > CALLER_WENT_ON_MS
    assert "nextVoiceAfterMs" not in kept[-1]
    # Every reply was heard whole (the last one before the transfer too: the flow stops streaming after it plays).
    assert [turn["reply"].get("heard") for turn in kept] == [None] * len(kept)
    assert _metric_values((out / "function-logs.txt").read_text(encoding="utf-8"), "CallerWentOn") == [0] * (
        len(kept) - 1
    )
