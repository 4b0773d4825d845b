"""A turn's figures when its reply was speculative: the bridge counts only what came after the turn ended."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from voicebridge_dev.simulator import report as report_module
from voicebridge_dev.simulator.engine import CallResult
from voicebridge_dev.simulator.events import CALLER, LambdaCall, Segment
from voicebridge_dev.simulator.records import CallRecords, StoredSegment, StoredSpeculation, StoredTurn
from voicebridge_dev.simulator.report import ReplySegment, TurnFigures, _Turn, _with_utterances


def figures(*, speculation: StoredSpeculation | None, moments: dict[str, float]) -> TurnFigures:
    """A turn: the caller stops at 10.000 s, Ink ends the turn at 10.600 s; segment 0 stored at 10.900 s, handed to
    the flow at 10.950 s and played at 10.960 s; the responder took 400 ms to its first clause, Sonic 150 ms."""
    first = ReplySegment(
        index=0,
        text="Your balance",
        prompt="https://bucket/p.wav",
        more=True,
        ready=10.9,
        delivered=10.95,
        start=10.96,
        end=11.7,
        responder_ms=400.0,
        synthesis_ms=150.0,
        moments=moments,
    )
    return TurnFigures(
        index=0,
        heard="what is my balance",
        said="What is my balance?",
        speech_start=8.0,
        speech_end=10.0,
        turn_end=10.6,
        segments=(first,),
        speculation=speculation,
    )


HIT = StoredSpeculation(turn=0, outcome="hit", keys="spec#000000000#00", committed_at=10.62, starts=1)


def test_without_speculation_the_bridge_is_stop_to_playing_less_ink_the_responder_and_sonic() -> None:
    turn = figures(speculation=None, moments={})
    latency = turn.latency_ms()
    assert turn.speculative == "off"
    assert latency["bridge"] == 960 - 600 - 400 - 150
    assert sum(part or 0 for part in turn.bridge_parts_ms().values()) == latency["bridge"]


def test_a_hit_counts_only_the_responder_and_sonic_time_after_the_turn_ended() -> None:
    # The reply started at the eager end, 260 ms before the turn end; its first clause came 140 ms after the turn end.
    turn = figures(speculation=HIT, moments={"EagerEndAt": 10.34, "ResponderStartedAt": 10.34, "FirstClauseAt": 10.74})
    latency = turn.latency_ms()
    assert turn.speculative == "hit"
    assert latency["bridge"] == 960 - 600 - 140 - 150
    assert sum(part or 0 for part in turn.bridge_parts_ms().values()) == latency["bridge"]


def test_a_hit_whose_prompt_was_ready_before_the_turn_ended_waits_only_for_the_commit() -> None:
    turn = figures(speculation=HIT, moments={"ResponderStartedAt": 9.8, "FirstClauseAt": 10.2})
    parts = turn.bridge_parts_ms()
    assert turn.latency_ms()["bridge"] == 960 - 600 - 0 - 0
    assert parts["delivery"] == 950 - 900 and sum(part or 0 for part in parts.values()) == 360


def test_a_miss_is_timed_as_a_reply_started_at_the_turn_end() -> None:
    missed = StoredSpeculation(turn=0, outcome="miss", keys=None, committed_at=None, starts=2, misses=2)
    turn = figures(speculation=missed, moments={"ResponderStartedAt": 10.62, "FirstClauseAt": 11.02})
    assert turn.speculative == "miss"
    assert turn.latency_ms()["bridge"] == 960 - 600 - 400 - 150


def test_the_waterfall_lists_the_turns_moments_in_order() -> None:
    moments = {
        "EagerEndAt": 10.34,
        "ResponderStartedAt": 10.34,
        "ResponderFirstTokenAt": 10.66,
        "FirstClauseAt": 10.74,
        "SonicFirstByteAt": 10.8,
    }
    waterfall = figures(speculation=HIT, moments=moments).waterfall_ms()
    assert list(waterfall) == [
        "caller_stop",
        "eager_end",
        "turn_end",
        "responder_first_token",
        "first_clause",
        "sonic_first_byte",
        "segment_stored",
        "converse_answered",
        "connect_playing",
    ]
    assert list(waterfall.values()) == [10000, 10340, 10600, 10660, 10740, 10800, 10900, 10950, 10960]


VOICED_SECOND = (8000 * np.sin(2 * np.pi * 300 * np.arange(8000) / 8000)).astype(np.int16)
"""One second of a 300 Hz tone at 8 kHz: voiced throughout."""


def said_once(samples: npt.NDArray[np.int16], text: str, *, ended_at: float) -> CallResult:
    """A call in which the caller says ``text`` (``samples``, from 1.0 s) and the product ends one turn of it at
    ``ended_at`` (s)."""
    said = Segment(CALLER, 1.0, samples, "speech", text)
    return CallResult(
        "c1", "ended", None, 5.0, [], [said], np.zeros((1, 2), dtype=np.int16), False, 0.0,
        records=CallRecords(turns=(StoredTurn("customer", 0, text, ended_at=ended_at),)),
    )  # fmt: skip


def test_a_turn_ended_inside_the_clips_quiet_tail_is_paired_with_the_utterance_it_heard() -> None:
    # One second of voice from 1.0 s, then 0.6 s of quiet: the product ended the turn at 2.3 s, inside the quiet.
    samples = np.concatenate([VOICED_SECOND, np.zeros(4800, dtype=np.int16)])
    result = said_once(samples, "Quiero mi saldo", ended_at=2.3)
    (turn,) = _with_utterances(result, [_Turn(0, heard="Quiero mi saldo")])
    assert (turn.said, turn.speech_end) == ("Quiero mi saldo", 2.0)


def test_a_turn_ink_ended_before_the_callers_last_syllable_is_paired_with_it_as_a_cut_off() -> None:
    # Two seconds of voice from 1.0 s; Ink ended the turn at 2.75 s, under babble, 250 ms before the voice did.
    samples = np.concatenate([VOICED_SECOND, VOICED_SECOND])
    result = said_once(samples, "Let me talk to a person, please.", ended_at=2.75)
    (turn,) = _with_utterances(result, [_Turn(0, heard="Let me talk to a person, please.")])
    # Before, no utterance ended before the turn: it read as a turn heard with nobody speaking.
    assert (turn.said, turn.speech_end) == ("Let me talk to a person, please.", 3.0)
    assert turn.turn_end is not None and turn.speech_end is not None
    assert round((turn.turn_end - turn.speech_end) * 1000) == -250


def test_a_turn_the_caller_went_on_from_before_its_reply_was_handed_out_is_in_the_report() -> None:
    # "Quiero hablar", a pause the product ended the turn in (at 2.9 s), then "con una persona" (turn 1): the flow was
    # handed only the reply to turn 1, which answers both.
    first = Segment(CALLER, 1.0, VOICED_SECOND, "speech", "Quiero hablar")
    rest = Segment(CALLER, 3.2, VOICED_SECOND, "speech", "con una persona")
    answer = {"Result": "Speak", "TurnIndex": "1", "Segment": "0", "More": "false", "Transcript": "con una persona"}
    spoken = LambdaCall("InvokeLambdaFunction", "ConverseFunction", 5.2, 5.3, {}, "ok", response=answer)
    stored = (StoredTurn("customer", 0, "Quiero hablar", 2.9), StoredTurn("customer", 1, "con una persona", 5.1))
    result = CallResult(
        "c1", "transferred", None, 8.0, [spoken], [first, rest], np.zeros((1, 2), dtype=np.int16), False, 0.0,
        records=CallRecords(turns=stored),
    )  # fmt: skip

    figures = report_module.turn_figures(result)

    assert [(turn.index, turn.heard, turn.said) for turn in figures] == [
        (0, "Quiero hablar", "Quiero hablar"),
        (1, "con una persona", "con una persona"),
    ]
    assert (figures[0].reply, figures[0].latency_ms()["stop_to_turn_end"]) == (None, 900)


# --- talked over: the flows path ---------------------------------------------------------------------------------


def _entry(index: int, said: tuple[int, int] | None, *segments: tuple[int | None, int | None]) -> dict[str, Any]:
    """A report turn: when the caller spoke it, and its reply's segments as (played, ended) ms, None: never played."""
    return {
        "index": index,
        "speech_start_ms": None if said is None else said[0],
        "speech_end_ms": None if said is None else said[1],
        "segments": [{"index": i, "played_ms": p, "ended_ms": e} for i, (p, e) in enumerate(segments)],
    }


def test_talking_over_a_prompt_counts_to_the_end_of_that_reply_not_into_the_answer_that_follows() -> None:
    dispute = _entry(0, (5_000, 7_000), (9_000, 10_400), (10_500, 16_300), (None, None))
    balance = _entry(1, (11_200, 13_000), (16_320, 17_400))

    _, over = report_module._talked_over([dispute, balance])

    assert over["barge_in_ms"] == 16_300 - 11_200
    assert over["backchannel_interrupted"] is False


def test_a_backchannel_after_which_the_rest_of_the_reply_is_never_played_interrupted_it() -> None:
    bill = _entry(2, (24_300, 25_800), (27_250, 28_530), (None, None), (None, None))
    uh_huh = _entry(3, (28_290, 28_550), (29_780, 31_200))

    _, over = report_module._talked_over([bill, uh_huh])

    assert over["barge_in_ms"] == 28_530 - 28_290
    assert over["backchannel_interrupted"] is True


def test_the_silence_after_a_backchannel_counts_from_its_end_or_the_end_of_the_prompt_it_ran_into() -> None:
    # "Uh-huh" ends 40 ms after the first clause; the next sentence plays 400 ms after that.
    bill = _entry(2, (24_300, 25_800), (27_250, 28_530), (28_970, 32_000), (32_050, 34_000))
    uh_huh = _entry(3, (28_230, 28_570), (None, None))
    # "Mm" inside the second sentence: the reply's next silence after it is the gap to the third.
    mm = _entry(4, (29_500, 29_800), (None, None))

    _, over, inside = report_module._talked_over([bill, uh_huh, mm])

    assert (over["backchannel_interrupted"], over["went_on_after_ms"]) == (False, 28_970 - 28_570)
    assert inside["went_on_after_ms"] == 32_050 - 32_000
    # A turn, not a backchannel: nothing said of the reply going on.
    long_turn = _entry(5, (29_000, 30_500), (None, None))
    assert "went_on_after_ms" not in report_module._talked_over([bill, long_turn])[1]


def test_a_turn_said_in_the_quiet_was_not_talked_over() -> None:
    reply = _entry(0, (1_000, 2_000), (3_000, 4_000))
    next_turn = _entry(1, (4_600, 5_500), (6_500, 7_000))

    assert "barge_in_ms" not in report_module._talked_over([reply, next_turn])[1]


def test_a_turns_story_tells_what_the_product_kept_of_it_and_what_the_flow_was_handed() -> None:
    answer = {"Result": "Speak", "TurnIndex": "1", "Segment": "0", "More": "true"}
    spoken = LambdaCall("InvokeLambdaFunction", "ConverseFunction", 5.2, 5.3, {}, "ok", response=answer)
    other = LambdaCall("InvokeLambdaFunction", "ConverseFunction", 9.0, 9.1, {}, "ok", response={"Result": "Timeout"})
    stored = StoredSegment(turn=1, index=0, text="Your balance is", prompt_uri="s3://b/k.wav", ready_at=5.1)
    records = CallRecords(
        turns=(StoredTurn("customer", 1, "what is my balance", 5.0),),
        segments=(stored,),
        status={"Turn": 1, "Segments": 1, "Done": False},
    )
    result = CallResult(
        "c1", "disconnected", None, 9.0, [spoken, other], [], np.zeros((1, 2), dtype=np.int16), False, 0.0,
        records=records,
    )  # fmt: skip

    told = report_module.turn_story(result, 1).splitlines()

    assert told[0].startswith("turn 1: StoredTurn(")
    assert "reply status at the call's end: {'Turn': 1, 'Segments': 1, 'Done': False}" in told
    assert "stored reply #0 ready 5.1 'Your balance is'" in told
    handed = [line for line in told if line.startswith("ConverseFunction")]
    assert handed == [f"ConverseFunction 5.200-5.300 Speak {answer}"]
    # An earlier turn's story does not carry a status two turns on.
    assert not any("reply status" in line for line in report_module.turn_story(result, 3).splitlines())
