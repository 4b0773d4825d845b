"""``voicebridge demo`` as a newcomer runs it: one call, a sentence of their own heard exactly as said and its card
number kept nowhere, the services each in a process of their own; the streaming transport on a noisy line; a Spanish
call."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from voicebridge.call.record import CALLER_WENT_ON_MS
from voicebridge.config import Settings
from voicebridge_dev.demo import run_demo
from voicebridge_dev.turn_ends import summarise

pytestmark = pytest.mark.timeout(180)

CARD = "I would like to speak to a person about my card number 4111 1111 1111 1111, expiry 04/29"
REDACTED = "I would like to speak to a person about my card number [CARD], expiry [EXPIRY]"


@dataclass(frozen=True)
class Demo:
    out: Path
    report: Path
    status: int


@pytest.fixture(scope="module")
def card_call(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """One call, as a newcomer runs the demo with a sentence of their own, on services in processes of their own: the
    caller asks for a person and gives a card number."""
    folder = tmp_path_factory.mktemp("card-call")
    out, report = folder / "out", folder / "report.json"
    status = run_demo(
        out=out,
        report=str(report),
        engine="standin",
        scenario="transfer",
        text=CARD,
        recognition="registered",
        own_processes=True,
    )
    return Demo(out, report, status)


def test_the_demo_runs_on_services_in_processes_of_their_own(card_call: Demo) -> None:
    assert card_call.status == 0
    written = json.loads(card_call.report.read_text(encoding="utf-8"))
    assert written["service_processes"] is True and written["recogniser"] == "registered transcripts"
    assert written["ended_by"] == "transferred"
    assert {path.name for path in card_call.out.iterdir()} >= {"call.wav", "transcript.txt", "timeline.png"}


def test_a_sentence_of_ones_own_is_heard_as_said(card_call: Demo) -> None:
    first = json.loads(card_call.report.read_text(encoding="utf-8"))["turns"][0]
    # The report keeps both redacted: the sentence said, its card number and expiry each a placeholder.
    assert first["said"] == first["heard"] == REDACTED


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MEASURE = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|MB|s)\b")
"""A measurement written with its unit (a REPORT line's ``Billed Duration: 1111 ms``), no one's words."""


def _words(text: str) -> list[str]:
    """What in ``text`` could hold what someone said: a JSON document's (or a JSON log line's) strings, its keys
    among them, not its numbers (a latency of 1111 ms is no card digits); any other line less its measurements."""
    try:
        return _strings(json.loads(text))
    except ValueError:
        pass
    found: list[str] = []
    for line in text.splitlines():
        try:
            found += _strings(json.loads(line)) if line.lstrip().startswith("{") else [MEASURE.sub(" ", line)]
        except ValueError:
            found.append(MEASURE.sub(" ", line))
    return found


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in (key, *_strings(item))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _card_digits_left(text: str) -> list[str]:
    """Runs of four or more of the card's digits, in order, in what ``text`` holds of anyone's words (the local account
    id, twelve ones, is no card number: ARNs are left out; so are ids, a request id's ``-4111-`` one time in 4,096
    among them)."""
    words = [w for said in _words(text) for w in UUID.sub(" ", said).split() if "arn:aws:" not in w]
    digits = "".join(ch if ch.isdigit() else " " for ch in " ".join(words))
    number = "4111111111111111"
    return [run for run in digits.split() if len(run) >= 4 and run in number]


def test_card_digits_are_found_in_words_and_not_in_measurements() -> None:
    said = "my card number 4111 1111 1111 1111"
    assert _card_digits_left(json.dumps({"heard": said, "stop_to_turn_end_ms": 1111})) == ["4111"] + ["1111"] * 3
    assert _card_digits_left(json.dumps({"heard": "[CARD]", "stop_to_turn_end_ms": 1111, "1111": [41111]})) == ["1111"]
    logs = "REPORT RequestId: x\tDuration: 1111.00 ms\tBilled Duration: 1111 ms\n" + json.dumps({"heard": said}) + "\n"
    assert _card_digits_left(logs) == ["4111", "1111", "1111", "1111"]
    assert _card_digits_left("START RequestId: 6756cf25-057b-4111-8a2e-0123456789ab\n") == []


def test_a_card_number_said_on_a_call_is_kept_nowhere(card_call: Demo) -> None:
    out = card_call.out
    record = json.loads((out / "call-record.json").read_text(encoding="utf-8"))
    assert record["turns"][0]["heard"] == REDACTED
    for kept in (out / "call-record.json", out / "transcript.txt", card_call.report, out / "function-logs.txt"):
        text = kept.read_text(encoding="utf-8")
        assert "04/29" not in text, kept.name
        assert _card_digits_left(text) == [], kept.name
    assert "turn stored" in (out / "function-logs.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def streaming_call(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """One call of the demo's scenario on the streaming transport, on a line with white noise 20 dB below speech."""
    folder = tmp_path_factory.mktemp("streaming-call")
    out, report = folder / "out", folder / "report.json"
    status = run_demo(
        out=out,
        report=str(report),
        engine="standin",
        scenario="transfer",
        recognition="registered",
        transport="a2a",
        line_noise="white-20db",
    )
    return Demo(out, report, status)


def test_the_streaming_transport_runs_the_demos_scenario_with_the_same_report_keys(streaming_call: Demo) -> None:
    assert streaming_call.status == 0
    written = json.loads(streaming_call.report.read_text(encoding="utf-8"))
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
    assert {path.name for path in streaming_call.out.iterdir()} >= {"call.wav", "transcript.txt", "call-record.json"}
    # The transcript is what Connect was told, in order: the agent's greeting, the caller, the hand-over reply.
    said = (streaming_call.out / "transcript.txt").read_text(encoding="utf-8").splitlines()[1:]
    assert said[:2] == [f"AGENT   {Settings.from_env({}).a2a_greeting_text}", f"CALLER  {turn['heard']}"]
    assert len(said) == 3 and said[2].startswith("AGENT   "), said
    # The hand-over reply was heard whole: the session ends once its audio has played.
    record = json.loads((streaming_call.out / "call-record.json").read_text(encoding="utf-8"))
    replies = [turn["reply"] for turn in record["turns"] if turn["track"] == "customer"]
    assert replies and [reply.get("heard") for reply in replies] == [None] * len(replies), replies


def test_a_call_on_a_noisy_line_is_heard_as_said_and_the_noise_sets_nothing_off(streaming_call: Demo) -> None:
    written = json.loads(streaming_call.report.read_text(encoding="utf-8"))
    assert written["line_noise"] == "white-20db"
    assert written["line"] == {"interruptions_without_speech": 0, "turns_without_speech": 0}
    assert written["turns"] and all(turn["heard"] == turn["said"] for turn in written["turns"])


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


def test_a_caller_the_product_cut_off_mid_sentence_is_seen_going_on_in_the_record_and_its_metric(
    tmp_path: Path,
) -> None:
    out, report = tmp_path / "out", tmp_path / "report.json"

    # A pause of 1.2 s in the middle of the sentence: Spanish turns end after 900 ms of silence, so the product ends the
    # turn in the pause and the caller goes on a few hundred milliseconds later.
    status = run_demo(
        out=out,
        report=str(report),
        engine="standin",
        scenario="transfer",
        text="Quiero hablar | con una persona",
        language="es",
        pause_ms=1200,
    )

    assert status == 0
    record = json.loads((out / "call-record.json").read_text(encoding="utf-8"))
    first, *_ = [turn for turn in record["turns"] if turn["track"] == "customer"]
    assert first["endedBy"] == "voicebridge" and 0 < first["nextVoiceAfterMs"] < CALLER_WENT_ON_MS, first
    # Ink heard what was said before the pause, and the rest as a turn of its own.
    assert [turn["heard"].strip() for turn in record["turns"]][:2] == ["Quiero hablar", "con una persona"], record
    logs = (out / "function-logs.txt").read_text(encoding="utf-8")
    counted = [json.loads(line)["CallerWentOn"] for line in logs.splitlines() if '"CallerWentOn"' in line]
    # Each spoken turn followed by another counted once as the record was written: the first, 1.
    flat = [v for values in counted for v in (values if isinstance(values, list) else [values])]
    assert flat[:1] == [1], counted
    (row,) = summarise([record])
    assert (row.language, row.ended_by, row.went_on) == ("es", "voicebridge", 1)
    written = {turn["index"]: turn for turn in json.loads(report.read_text(encoding="utf-8"))["turns"]}
    # Listed whether or not its reply was handed out before the caller went on (a loaded machine may not).
    assert written[first["turn"]]["next_voice_after_ms"] == first["nextVoiceAfterMs"]
