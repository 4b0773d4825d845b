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


CARD = "My card number is 4111 1111 1111 1111, expiry 04/29"


def _card_digits_left(text: str) -> list[str]:
    """Runs of four or more of the card's digits, in order, still in ``text`` (the local account id, twelve ones,
    is no card number: ARNs are left out)."""
    words = [w for w in text.replace('"', " ").split() if "arn:aws:" not in w]
    digits = "".join(ch if ch.isdigit() else " " for ch in " ".join(words))
    number = "4111111111111111"
    return [run for run in digits.split() if len(run) >= 4 and run in number]


def test_a_card_number_said_on_a_call_is_kept_nowhere(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"

    status = run_demo(
        out=out, report=str(report), engine="standin", scenario="transfer", text=CARD, recognition="registered"
    )

    assert status == 0
    record = json.loads((out / "call-record.json").read_text(encoding="utf-8"))
    assert record["turns"][0]["heard"] == "My card number is [CARD], expiry [EXPIRY]"
    for kept in (out / "call-record.json", out / "transcript.txt", report, out / "function-logs.txt"):
        text = kept.read_text(encoding="utf-8")
        assert "04/29" not in text, kept.name
        assert _card_digits_left(text) == [], kept.name
    assert "turn stored" in (out / "function-logs.txt").read_text(encoding="utf-8")


def test_the_streaming_transport_runs_the_demos_scenario_with_the_same_report_keys(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"

    status = run_demo(
        out=out, report=str(report), engine="standin", scenario="transfer", recognition="registered", transport="a2a"
    )

    assert status == 0
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["transport"] == "a2a" and written["ended_by"] == "ESCALATE" and written["contract_violations"] == []
    # The agent's hand-over note reached the contact (on the Connect emulator's instance) before the hand-back.
    assert written["handover_outcome"] == "Escalate"
    (turn,) = written["turns"]
    assert turn["said"] == turn["heard"] == "Let me talk to a person, please."
    assert set(turn["latency_ms"]) == {
        "stop_to_turn_end",
        "responder_first_sentence",
        "sonic_first_segment",
        "stop_to_playing",
        "bridge",
    }
    assert turn["latency_ms"]["stop_to_turn_end"] < turn["latency_ms"]["stop_to_playing"]
    assert {path.name for path in out.iterdir()} >= {"call.wav", "transcript.txt"}


SPANISH = "Mi tarjeta es cuatro uno uno uno uno uno uno uno uno uno uno uno uno uno uno uno quiero una persona"


def test_a_spanish_call_is_ended_by_the_product_answered_in_spanish_and_redacted(tmp_path: Path) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"

    status = run_demo(out=out, report=str(report), engine="standin", scenario="transfer", text=SPANISH, language="es")

    assert status == 0
    record = json.loads((out / "call-record.json").read_text(encoding="utf-8"))
    assert record["listening"]["language"] == "es"
    # The model may end a turn at a pause inside the sentence (docs/benchmarks.md, "End of turn"): the emulator still
    # hears the whole sentence in the first turn, and the rest of it is a turn of its own.
    first = record["turns"][0]
    assert (first["heard"].strip(), first["endedBy"]) == ("Mi tarjeta es [CARD] quiero una persona", "voicebridge")
    assert first["reply"]["said"][:2] == ["Por supuesto.", "Le paso con uno de mis compañeros."]
    assert "cuatro uno uno uno" not in (out / "call-record.json").read_text(encoding="utf-8")
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["language"] == "es"
    assert {turn["turn_end_by"] for turn in written["turns"]} == {"voicebridge"}
