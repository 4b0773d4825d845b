"""The demo report's language and who ended each turn, read from the call record the stack wrote."""

from __future__ import annotations

import json

from voicebridge_dev.demo import with_turn_ending

RECORD = {
    "listening": {"language": "es-US"},
    "turns": [
        {"track": "customer", "turn": 0, "endedBy": "voicebridge", "nextVoiceAfterMs": 420},
        {"track": "agent", "turn": 0, "endedBy": "ink"},
        {"track": "customer", "turn": 1, "endedBy": "voicebridge"},
    ],
}


def test_the_report_takes_the_calls_language_and_each_turns_ending_from_the_record() -> None:
    report = with_turn_ending({"turns": [{"index": 0}, {"index": 1}]}, json.dumps(RECORD).encode(), "es")
    assert report["language"] == "es-US"
    assert [turn["turn_end_by"] for turn in report["turns"]] == ["voicebridge", "voicebridge"]


def test_the_report_says_how_soon_the_caller_spoke_again_after_each_turn_as_the_record_does() -> None:
    report = with_turn_ending({"turns": [{"index": 0}, {"index": 1}]}, json.dumps(RECORD).encode(), "es")
    assert [turn["next_voice_after_ms"] for turn in report["turns"]] == [420, None]


def test_without_a_record_the_report_says_the_language_asked_for_and_no_turn_ending() -> None:
    report = with_turn_ending({"turns": [{"index": 0}]}, None, "en")
    assert (report["language"], report["turns"][0]["turn_end_by"]) == ("en", None)
