"""Whether callers went on after the product (or Ink) ended their turn: the call record times the caller's next voice
from each turn's end, and the record's writer counts the turns the caller did not let go (``CallerWentOn``)."""

from __future__ import annotations

import threading
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from voicebridge.call.consumer import write_record
from voicebridge.call.record import CallRecorder, RecordSettings, Written, build_record, caller_went_on
from voicebridge.ink.transcriber import MetricSink
from voicebridge.redaction import BuiltinRedactor
from voicebridge.store.turns import AGENT, CHECKPOINT, CUSTOMER

VOICE_END_MS = 1_764_000_000_000
"""Connect's clock where the first turn's voice ended."""


def spoken(seq: int, began_ms: float, voice_ms: int, latency_ms: int, **more: Any) -> dict[str, Any]:
    """A caller's turn item whose voice began ``began_ms`` after :data:`VOICE_END_MS`, lasted ``voice_ms`` and was
    ended ``latency_ms`` after it stopped (its place in the stream is the same offset from 60 s in)."""
    start = 60_000 + int(began_ms)
    return {
        "TurnKey": f"{CUSTOMER}#{seq:09d}",
        "Track": CUSTOMER,
        "Seq": seq,
        "Transcript": f"turn {seq}",
        "AudioStartMs": start,
        "AudioEndMs": start + voice_ms,
        "EndedAt": VOICE_END_MS + began_ms + voice_ms + latency_ms,
        "LatencyMs": latency_ms,
        **more,
    }


def after(*turns: dict[str, Any]) -> list[int | None]:
    """The record's ``nextVoiceAfterMs`` of each caller's turn, by turn number."""
    record = build_record("c1", [{"TurnKey": CHECKPOINT}, *turns], BuiltinRedactor(), generation=0)
    caller = sorted((turn for turn in record["turns"] if turn["track"] == CUSTOMER), key=lambda turn: turn["turn"])
    return [turn.get("nextVoiceAfterMs") for turn in caller]


def test_the_record_times_the_callers_next_voice_from_the_end_of_the_turn_before() -> None:
    # The first turn's voice ended at 0 and the turn 900 ms later; the caller spoke again at 1,200 ms.
    first = spoken(0, -2000, 2000, 900)
    assert after(first, spoken(1, 1200, 800, 700)) == [300, None]


def test_a_caller_who_spoke_again_before_the_turn_was_ended_is_timed_before_its_end() -> None:
    assert after(spoken(0, -2000, 2000, 900), spoken(1, 600, 800, 700)) == [-300, None]


def test_a_backchannel_ends_nothing_and_a_typed_turn_has_no_voice_to_time() -> None:
    typed = {"TurnKey": f"{CUSTOMER}#000000002", "Track": CUSTOMER, "Seq": 2, "Transcript": "1234", "EndedAt": 1}
    turns = [
        spoken(0, -2000, 2000, 900),
        spoken(1, 5000, 300, 700, Backchannel=True),
        typed,
        spoken(3, 20_000, 1000, 700),
    ]
    # The first turn is timed to the backchannel's voice; nothing is timed from it, or to or from the keys.
    assert after(*turns) == [5000 - 900, None, None, None]


def test_the_agents_turns_are_not_the_callers_next_voice() -> None:
    agent = {**spoken(1, 1200, 800, 700), "TurnKey": f"{AGENT}#000000000", "Track": AGENT, "Seq": 0}
    assert after(spoken(0, -2000, 2000, 900), agent, spoken(1, 9000, 800, 700)) == [8100, None]


def test_a_caller_went_on_when_their_voice_came_back_within_a_second_of_the_turns_end() -> None:
    record = {"turns": [{"nextVoiceAfterMs": 999}, {"nextVoiceAfterMs": -40}, {"nextVoiceAfterMs": 1000}, {}]}
    assert caller_went_on(record) == [True, True, False]
    assert caller_went_on(record, within_ms=500) == [False, True, False]


class CountingSink(MetricSink):
    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self.added: list[tuple[str, float]] = []

    def add(self, name: str, unit: MetricUnit, value: float) -> None:
        self.added.append((name, value))


class KeptRecorder:
    """A recorder whose record was written (the bucket's part is the recorder's own tests')."""

    def __init__(self, outcome: Written) -> None:
        self.outcome = outcome

    def write(self, contact_id: str, *, generation: int) -> Written:
        return self.outcome


def test_writing_the_record_counts_each_judged_turn_once_one_for_a_caller_who_went_on() -> None:
    record = {"turns": [{"nextVoiceAfterMs": 250}, {"nextVoiceAfterMs": 4200}, {"heard": "the last"}]}
    sink = CountingSink()
    recorder: Any = KeptRecorder(Written("written", "s3://b/k.json", record))

    write_record(lambda: recorder, "c1", 0, sink)

    assert [value for name, value in sink.added if name == "CallerWentOn"] == [1, 0]


def test_a_record_another_writer_wrote_is_not_counted_again() -> None:
    sink = CountingSink()
    recorder: Any = KeptRecorder(Written("already"))
    write_record(lambda: recorder, "c1", 0, sink)
    assert sink.added == []


def test_without_a_bucket_the_record_is_still_built_and_its_turns_counted() -> None:
    items = [{"TurnKey": CHECKPOINT}, spoken(0, -2000, 2000, 900), spoken(1, 1200, 800, 700)]

    class Store:
        def contact_items(self, contact_id: str) -> list[dict[str, Any]]:
            return items

        def put_items(self, batch: Any) -> None:
            pass

    recorder = CallRecorder(RecordSettings(bucket=""), Store(), None, None, BuiltinRedactor())  # type: ignore[arg-type]
    written = recorder.write("c1", generation=0)
    assert written.outcome == "off" and written.record is not None
    assert caller_went_on(written.record) == [True]
