"""A whole inbound call through contact_flows/voice-agent.json, run by the flow simulator on a virtual clock.

Every production path runs over loopback: the Lambda emulator runs the template's functions, the caller's
audio streams through the KVS emulator to the consumer, then to the Ink emulator (the caller's clips
registered with their sentences); the consumer asks the responder — the Bedrock emulator's bank agent, or the
Lex emulator's bank bot — and Sonic for each sentence, and ConverseFunction hands the flow each prompt from S3.
Speech is the deterministic stand-in. The virtual clock skips prompts and holds; the caller's speech reaches Ink
at its real pace, and what the functions take they take in real time (the silence scenario waits through three
of ConverseFunction's 6 s waits). The scenarios are the demo's, wired as the demo wires them.
"""

from __future__ import annotations

import itertools
import json
import statistics
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from tests.fixtures import ROOT
from voicebridge_dev.demo import inject_scenario_faults, scenario_settings
from voicebridge_dev.local.bedrock import Fault as BedrockFault
from voicebridge_dev.local.bedrock import FaultKind as BedrockFaultKind
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID
from voicebridge_dev.local.lambda_ import Fault as LambdaFault
from voicebridge_dev.local.lambda_ import FaultKind as LambdaFaultKind
from voicebridge_dev.local.lambda_ import LambdaEmulator
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator import (
    SCENARIOS,
    CallResult,
    Clip,
    HangUp,
    Say,
    SimulatedCaller,
    Step,
    VirtualClock,
    build_report,
    load_clips,
    local_queue_arn,
    simulate_call,
    timeline_png,
    transcript,
    turn_story,
)
from voicebridge_dev.simulator.caller import Press
from voicebridge_dev.template import LOCAL_ACCOUNT

TEMPLATE = ROOT / "template.yaml"
VOICE_AGENT = ROOT / "contact_flows" / "voice-agent.json"
CLIPS = load_clips()
AWAIT_MAX_WAIT_MS = "7000"
RATE = 8000

GREETING = "Hello! Thanks for calling. How can I help you today?"
STILL_THERE = "Are you still there? I'm listening."
SILENCE_GOODBYE = "I haven't heard anything for a while, so I'll hang up now. Goodbye!"
BANK_UTTERANCES = [CLIPS[name].transcript for name in SCENARIOS["normal"].steps]
LOCAL_QUEUE = local_queue_arn("us-east-1")
CALLER_PATIENCE_S = 1.5
"""How long the bot must be quiet before the caller speaks: a patient caller, so that a busy machine's longer gap
between a reply's segments is not taken for the reply's end (the demo's caller waits 0.6 s)."""


def _lambdas(cloud: LocalCloud, **env: str) -> LambdaEmulator:
    """A Lambda emulator of the test's own, for the functions' settings; they invoke each other through it."""
    variables = {name: value for name, value in cloud.env().items() if name != "AWS_ENDPOINT_URL_LAMBDA"}
    variables.update(AWAIT_MAX_WAIT_MS=AWAIT_MAX_WAIT_MS, **env)
    return LambdaEmulator(TEMPLATE, env=variables, parameters=cloud.parameters())


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    local = LocalCloud(
        template=TEMPLATE,
        engine=StandInSpeechEngine(),
        sonic_time_to_first_byte_ms=20.0,
        sonic_realtime_factor=60.0,
        media_pace=0,
    )
    with local:
        for clip in CLIPS.values():
            local.ink.register(clip.pcm, clip.transcript)
        yield local


@pytest.fixture(scope="module")
def lambdas(cloud: LocalCloud) -> Iterator[LambdaEmulator]:
    with _lambdas(cloud) as emulator:
        yield emulator


def call(
    cloud: LocalCloud, lambdas: LambdaEmulator, steps: list[Step], flow: Path = VOICE_AGENT, **options: Any
) -> CallResult:
    return simulate_call(
        flow,
        template_path=TEMPLATE,
        env={**cloud.env(), "AWS_ENDPOINT_URL_LAMBDA": lambdas.url},
        kvs=cloud.kvs,
        voice=StandInSpeechEngine(),
        caller=SimulatedCaller(steps, pause_s=CALLER_PATIENCE_S),
        clock=VirtualClock(),
        **options,
    )


def scenario_call(cloud: LocalCloud, name: str) -> CallResult:
    """The demo's scenario ``name``, its responder and faults as the demo sets them, in containers of its own."""
    scenario = SCENARIOS[name]
    # Prompts of its own too: a prompt another call cached would play without asking Sonic.
    with _lambdas(cloud, **scenario_settings(scenario), PROMPT_PREFIX=f"{name}/") as emulator:
        inject_scenario_faults(cloud, scenario)
        try:
            return call(cloud, emulator, scenario.script(CLIPS))
        finally:
            cloud.sonic.faults.clear()
            cloud.bedrock.clear_faults()
            cloud.lex.clear_faults()


@pytest.fixture(scope="module")
def normal_call(cloud: LocalCloud) -> CallResult:
    return scenario_call(cloud, "normal")


@pytest.fixture(scope="module")
def lex_call(cloud: LocalCloud) -> CallResult:
    return scenario_call(cloud, "lex")


@pytest.fixture(scope="module")
def silent_call(cloud: LocalCloud) -> CallResult:
    return scenario_call(cloud, "silence")


def scenario_call_asked(cloud: LocalCloud, name: str) -> tuple[CallResult, list[Any]]:
    """The demo's scenario ``name`` (:func:`scenario_call`), and each call the Bedrock emulator had meanwhile."""
    since = len(cloud.bedrock.invocations)
    result = scenario_call(cloud, name)
    return result, list(cloud.bedrock.invocations[since:])


@pytest.fixture(scope="module")
def failure_call(cloud: LocalCloud) -> tuple[CallResult, list[Any]]:
    return scenario_call_asked(cloud, "model-failure")


def agent_calls(call_and_asked: tuple[CallResult, list[Any]]) -> list[tuple[int, str, str]]:
    """Each call the agent had during the call: how many caller turns its conversation held, the last, and how it
    ended (for a failure's message: the responder's faults strike by the first of these)."""
    _, asked = call_and_asked
    return [
        (
            sum(message["role"] == "user" for message in record.body["messages"]),
            record.body["messages"][-1]["content"][0]["text"],
            record.outcome,
        )
        for record in asked
    ]


def prompts(result: CallResult) -> list[dict[str, Any]]:
    return list(build_report(result)["prompts"])


def outcomes(result: CallResult, identifier: str) -> list[str]:
    return [action.outcome for action in result.actions if action.identifier == identifier]


def results_of(result: CallResult, function: str) -> list[str | None]:
    return [c.result for c in result.lambda_calls if c.function == function]


def write_flow(folder: Path, actions: list[dict[str, Any]]) -> Path:
    path = folder / "flow.json"
    flow = {"Version": "2019-10-30", "StartAction": actions[0]["Identifier"], "Actions": actions}
    path.write_text(json.dumps(flow), encoding="utf-8")
    return path


def say(identifier: str, text: str, next_action: str = "Disconnect") -> dict[str, Any]:
    return {
        "Identifier": identifier,
        "Type": "MessageParticipant",
        "Parameters": {"Text": text},
        "Transitions": {
            "NextAction": next_action,
            "Errors": [{"NextAction": next_action, "ErrorType": "NoMatchingError"}],
        },
    }


DISCONNECT = {
    "Identifier": "Disconnect",
    "Type": "DisconnectParticipant",
    "Parameters": {},
    "Transitions": {},
}


def sounding(channel: npt.NDArray[np.int16], *, gap_s: float = 0.35) -> list[tuple[float, float]]:
    """Regions (seconds) where ``channel`` is not digital silence, pauses shorter than ``gap_s`` bridged."""
    loud = np.flatnonzero(channel)
    if loud.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(loud) > gap_s * RATE)
    starts = np.concatenate([[loud[0]], loud[breaks + 1]])
    ends = np.concatenate([loud[breaks], [loud[-1]]])
    return [(start / RATE, (end + 1) / RATE) for start, end in zip(starts, ends, strict=True)]


# A region starts with its audio's first sample (the report rounds to the millisecond); it may end before its
# audio does, when that audio ends in digital silence (the stand-in voice is silent for a final "?").
START_MS, END_MS = 1, 80


# --- a bank's agent on the line (Bedrock) -----------------------------------------------------------------


def test_each_utterance_is_heard_and_answered_by_the_agent(normal_call: CallResult) -> None:
    report = build_report(normal_call)

    assert [turn["said"] for turn in report["turns"]] == BANK_UTTERANCES
    assert [turn["heard"] for turn in report["turns"]] == BANK_UTTERANCES
    replies = [turn["reply"] for turn in report["turns"]]
    assert "balance is" in replies[0] and "bill of" in replies[1] and replies[2].startswith("Done.")
    assert "dispute a card charge" in replies[3]
    segments = [segment["text"] for turn in report["turns"] for segment in turn["segments"]]
    assert [p["text"] for p in prompts(normal_call)] == [GREETING, *segments]
    assert {p["source"] for p in prompts(normal_call)} == {"prompt"}


def test_a_long_answer_is_played_sentence_by_sentence_each_as_it_is_ready(normal_call: CallResult) -> None:
    dispute = build_report(normal_call)["turns"][3]
    segments = dispute["segments"]

    assert [s["index"] for s in segments] == list(range(5))
    assert " ".join(s["text"] for s in segments) == dispute["reply"]
    # The last may still say More=true when it was handed over before the responder's stream ended.
    assert [s["more"] for s in segments[:-1]] == [True] * 4
    for segment, following in itertools.pairwise(segments):
        # Each segment is stored before the flow asks for it and plays once the one before has ended.
        ordered = segment["ready_ms"] <= segment["delivered_ms"] <= segment["played_ms"] < segment["ended_ms"]
        assert ordered, (segment, turn_story(normal_call, dispute["index"]))
        assert following["played_ms"] >= segment["ended_ms"]
    assert len(dispute["segment_gaps_ms"]) == 4


def test_the_flow_asks_for_each_segment_after_the_one_it_just_played(normal_call: CallResult) -> None:
    asked = [
        (c.parameters["TurnIndex"], c.parameters["Segment"])
        for c in normal_call.lambda_calls
        if c.function == "ConverseFunction"
    ]
    played = [
        (str(turn["index"]), str(segment["index"]))
        for turn in build_report(normal_call)["turns"]
        for segment in turn["segments"]
    ]
    results = results_of(normal_call, "ConverseFunction")

    assert results[: len(played)] == ["Speak"] * len(played)
    # The reply's end comes with its last sentence (More=false), or, when that sentence was handed over before
    # the responder's stream ended, in one more answer: Result=OK with the Action.
    assert results[len(played) :] in ([], ["OK"])
    assert asked == [("-1", "-1"), *played][: len(results)]


def test_asking_for_a_person_stops_streaming_and_transfers_to_the_agent_queue(normal_call: CallResult) -> None:
    report = build_report(normal_call)

    assert report["turns"][-1]["action"] == "Transfer"
    assert (normal_call.ended_by, normal_call.detail) == ("transferred", LOCAL_QUEUE)
    assert [a.identifier for a in normal_call.actions][-3:] == [
        "Stop media streaming for transfer",
        "Set agent queue",
        "Transfer to agent",
    ]
    assert [s["enabled"] for s in report["media_streaming"]] == [True, False]


def test_the_transcript_says_who_said_what_in_order(normal_call: CallResult) -> None:
    lines = [line.split("] ", 1)[1] for line in transcript(normal_call).splitlines()[1:]]
    report = build_report(normal_call)

    expected = [f"BOT     {GREETING}  [S3 prompt]"]
    for turn in report["turns"]:
        expected += [f"CALLER  {turn['said']}", f"HEARD   {turn['heard']}  [turn {turn['index']}]"]
        expected += [f"BOT     {segment['text']}  [S3 prompt]" for segment in turn["segments"]]
    told = "\n\n".join(turn_story(normal_call, turn["index"]) for turn in report["turns"])
    assert lines == [*expected, f"END     transferred: {LOCAL_QUEUE}"], told


def test_no_chain_of_lambda_blocks_comes_near_connects_budget(normal_call: CallResult) -> None:
    chain = build_report(normal_call)["lambda_chain"]

    assert chain["exhausted"] == 0
    assert 0 < chain["longest_ms"] < chain["budget_ms"]


def test_the_summary_is_the_median_of_the_turns(normal_call: CallResult) -> None:
    report = build_report(normal_call)
    summary = report["summary"]

    assert (summary["turns"], summary["segments"]) == (5, sum(len(t["segments"]) for t in report["turns"]))
    for name, median in summary["median_ms"].items():
        assert median == statistics.median(turn["latency_ms"][name] for turn in report["turns"])
    gaps = [gap for turn in report["turns"] for gap in turn["segment_gaps_ms"]]
    assert (summary["segment_gap_median_ms"], summary["segment_gap_max_ms"]) == (statistics.median(gaps), max(gaps))


# --- the report against the recording ----------------------------------------------------------------------


def test_the_recording_lasts_as_long_as_the_call(normal_call: CallResult) -> None:
    report = build_report(normal_call)

    assert normal_call.recording.shape == (report["recording"]["frames"], 2)
    assert abs(report["recording"]["frames"] / RATE * 1000 - report["duration_ms"]) <= 1


def _first_and_last_sound(channel: npt.NDArray[np.int16], start_ms: int, end_ms: int) -> tuple[float, float]:
    """The first and last sounding moment (ms) of ``channel`` between two moments."""
    lo, hi = round(start_ms * RATE / 1000), round(end_ms * RATE / 1000)
    loud = np.flatnonzero(channel[lo:hi])
    assert loud.size, f"nothing sounds between {start_ms} and {end_ms} ms"
    return (lo + loud[0]) * 1000 / RATE, (lo + loud[-1] + 1) * 1000 / RATE


def test_each_prompt_starts_and_ends_where_the_bot_channel_sounds(normal_call: CallResult) -> None:
    bot = normal_call.recording[:, 1]
    played = prompts(normal_call)
    bounds = [p["start_ms"] for p in played[1:]] + [build_report(normal_call)["duration_ms"]]

    for prompt, following in zip(played, bounds, strict=True):
        # The next prompt's first sample may be up to START_MS before its rounded start.
        first, last = _first_and_last_sound(bot, prompt["start_ms"] - START_MS, following - START_MS)
        assert abs(first - prompt["start_ms"]) <= START_MS
        assert -START_MS <= prompt["end_ms"] - last <= END_MS
    # Between prompts the bot's channel is silent.
    assert not bot[: round(played[0]["start_ms"] * RATE / 1000) - RATE // 1000].any()


def test_each_utterance_starts_and_ends_where_the_caller_channel_sounds(normal_call: CallResult) -> None:
    regions = sounding(normal_call.recording[:, 0])
    spoken = build_report(normal_call)["caller"]

    assert [u["text"] for u in spoken] == BANK_UTTERANCES
    assert len(regions) == len(spoken)
    for (start, end), utterance in zip(regions, spoken, strict=True):
        assert abs(start * 1000 - utterance["start_ms"]) <= START_MS
        assert -START_MS <= utterance["end_ms"] - end * 1000 <= END_MS


def test_turn_latencies_are_the_gaps_between_moments_of_the_recording(normal_call: CallResult) -> None:
    report = build_report(normal_call)
    caller_regions = sounding(normal_call.recording[:, 0])
    bot = normal_call.recording[:, 1]

    for turn, (_, speech_end) in zip(report["turns"], caller_regions, strict=True):
        # The caller stops where their clip's sound ends: at most a recording's quiet tail before its last sample.
        assert -END_MS <= turn["speech_end_ms"] - speech_end * 1000 <= START_MS
        first = turn["segments"][0]
        # Segment 0 is handed to the flow once stored and named: a speculative reply's may be stored before the turn
        # ends, and is named by the commit at the turn end.
        stored = turn["waterfall_ms"]["segment_stored"]
        ordered = turn["speech_end_ms"] < turn["turn_end_ms"] <= stored <= first["delivered_ms"]
        assert ordered, (turn["waterfall_ms"], turn_story(normal_call, turn["index"]))
        assert first["ready_ms"] <= stored
        assert first["delivered_ms"] <= turn["reply_start_ms"] == first["played_ms"]
        reply_sounds, _ = _first_and_last_sound(bot, turn["turn_end_ms"], first["ended_ms"])
        assert abs(turn["reply_start_ms"] - reply_sounds) <= START_MS
        latency = turn["latency_ms"]
        assert latency["stop_to_turn_end"] == turn["turn_end_ms"] - turn["speech_end_ms"]
        assert latency["stop_to_playing"] == turn["reply_start_ms"] - turn["speech_end_ms"]
        whole_stages = (
            latency["stop_to_playing"]
            - latency["stop_to_turn_end"]
            - latency["responder_first_sentence"]
            - (latency["sonic_first_segment"] or 0)
        )
        if turn["speculative"] == "hit":
            # Started at Ink's eager end: part of the responder's and Sonic's time came before the turn ended.
            assert latency["bridge"] >= whole_stages
        else:
            assert latency["bridge"] == whole_stages
        assert latency["bridge"] == sum(turn["bridge_parts_ms"].values())


def test_the_timeline_picture_is_a_png_of_the_call(normal_call: CallResult) -> None:
    png = timeline_png(normal_call, width=900)

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", png[8:16])
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    assert (length, kind, width, depth, colour) == (13, b"IHDR", 900, 8, 2)
    idat_length, idat = struct.unpack(">I4s", png[33:41])
    assert idat == b"IDAT"
    assert len(zlib.decompress(png[41 : 41 + idat_length])) == height * (1 + 3 * width)
    assert png.endswith(b"IEND\xaeB`\x82")


def test_a_caller_who_hangs_up_during_a_reply_is_recorded_as_hearing_only_what_played(cloud: LocalCloud) -> None:
    with _lambdas(cloud, PROMPT_PREFIX="hang-up/", RESPONDER="bedrock") as emulator:
        result = call(cloud, emulator, [Say(CLIPS["dispute"]), HangUp(after_s=2.5)])
        # Written once the consumer finds the stream ended.
        stored = cloud.call_record(result.contact_id, wait_s=15.0)
    assert result.ended_by == "caller hung up" and stored is not None
    dispute = next(turn for turn in build_report(result)["turns"] if turn["said"] == CLIPS["dispute"].transcript)
    played = [segment["text"] for segment in dispute["segments"] if segment["played_ms"] is not None]
    kept = next(turn for turn in json.loads(stored)["turns"] if turn["heard"] == CLIPS["dispute"].transcript)
    made = " ".join(kept["reply"]["said"])
    # Two and a half seconds into the five sentences: the prompts that had begun, the last of them cut off in its
    # first words (kept in proportion), and nothing of the rest, which the record still shows as made.
    heard = kept["reply"].get("heard")
    assert heard is not None and played, (kept["reply"], played)
    assert heard.startswith(" ".join(played[:-1])) and made.startswith(heard), (heard, played)
    assert len(heard) < len(" ".join(played)) < len(made)


# --- the same bank as a Lex bot ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def barge_in_call(cloud: LocalCloud) -> tuple[CallResult, list[Any]]:
    return scenario_call_asked(cloud, "barge-in")


def test_an_uh_huh_over_a_reply_is_kept_but_not_answered_and_the_reply_goes_on(
    barge_in_call: tuple[CallResult, list[Any]],
) -> None:
    result, _ = barge_in_call
    report = build_report(result)
    backchannels = [turn for turn in report["turns"] if turn["backchannel"]]
    assert [(turn["said"], turn["reply"], turn["backchannel_interrupted"]) for turn in backchannels] == [
        ("Uh-huh.", None, False)
    ]
    # The bill's reply it was said over is heard to its end, and the caller's next turn is answered.
    bill = next(turn for turn in report["turns"] if turn["said"] == "I want to pay my bill today.")
    assert all(segment["played_ms"] is not None for segment in bill["segments"])
    assert result.ended_by == "transferred"


def test_the_question_asked_over_a_reply_is_answered_knowing_what_of_it_the_caller_heard(
    barge_in_call: tuple[CallResult, list[Any]],
) -> None:
    result, asked = barge_in_call
    dispute = next(turn for turn in build_report(result)["turns"] if turn["said"] == CLIPS["dispute"].transcript)
    # Two seconds into the reply the caller asks for their balance: the prompt playing then plays to its end (on a
    # loaded machine the flow may already have been handed the next), and no further one is handed out.
    heard = [segment["text"] for segment in dispute["segments"] if segment["played_ms"] is not None]
    unsaid = [segment["text"] for segment in dispute["segments"] if segment["played_ms"] is None]
    assert heard and unsaid, dispute["segments"]
    answering = [
        record.body["messages"]
        for record in asked
        if record.body["messages"][-1]["content"][0]["text"] == CLIPS["balance"].transcript
    ]
    assert answering, asked
    # The agent answering it was told so before ConverseFunction marked where the flow left the reply, as the
    # streaming path tells it: the reply's text as far as the caller heard it (its sentences not yet made are no
    # part of it either way).
    for messages in answering:
        told = messages[-2]["content"][0]["text"]
        assert told.startswith(f"{' '.join(heard)} [interrupted by the caller; not said: {unsaid[0]}"), told


def test_a_lex_bot_asks_for_what_it_needs_and_its_closed_intent_transfers(lex_call: CallResult) -> None:
    report = build_report(lex_call)

    assert [turn["heard"] for turn in report["turns"]] == [CLIPS[n].transcript for n in SCENARIOS["lex"].steps]
    assert report["turns"][1]["reply"] == "How much would you like to pay?"
    assert "84 dollars" in report["turns"][2]["reply"]
    assert report["turns"][-1]["action"] == "Transfer"
    assert (lex_call.ended_by, lex_call.detail) == ("transferred", LOCAL_QUEUE)


# --- silence and failures ----------------------------------------------------------------------------------


def test_a_silent_caller_is_asked_twice_whether_anyone_is_there_then_told_goodbye(
    silent_call: CallResult,
) -> None:
    assert results_of(silent_call, "ConverseFunction") == ["Timeout"] * 3
    assert [p["text"] for p in prompts(silent_call)] == [GREETING, STILL_THERE, STILL_THERE, SILENCE_GOODBYE]
    assert build_report(silent_call)["caller"] == []
    assert silent_call.ended_by == "disconnected"


def test_when_the_agent_and_sonic_fail_the_caller_hears_an_apology_in_connects_voice_and_goes_on(
    failure_call: tuple[CallResult, list[Any]],
) -> None:
    result, _ = failure_call
    report = build_report(result)
    # A reply that the throttled model keeps from beginning for CONVERSE_HOLD_AFTER_MS gets its holding line, which
    # Sonic, unavailable too, cannot speak either.
    holds = [
        call
        for call in result.lambda_calls
        if call.function == "ConverseFunction" and (call.response or {}).get("Hold") == "true"
    ]

    assert results_of(result, "SynthesizeFunction") == ["Fallback"] * (1 + len(holds))
    # Every line said is in Connect's voice. A wait that runs out while the reply is still being made, before it is
    # due a holding line, plays the silent prompt (text-less, from S3) and asks again: on a loaded machine it happens.
    assert {p["source"] for p in prompts(result) if p["text"]} == {"connect-voice"}
    assert {p["text"] for p in prompts(result) if p["source"] != "connect-voice"} <= {""}
    heard = [turn["heard"] for turn in report["turns"]]
    if any((call.response or {}).get("TurnIndex") == "0" for call in holds):
        # The apology was late enough for a holding line, which the caller took for the agent's turn: they asked
        # again, and their new turn took the apology's place — or, when the apology came while they asked, they took
        # it for the answer and hung up before the balance played. Either way the product answered their last turn
        # with the balance, as its records say.
        assert heard in ([CLIPS["balance"].transcript], [CLIPS["balance"].transcript] * 2), heard
        last = max(turn.index for turn in result.records.turns if turn.track == "customer")
        said = " ".join(segment.text for segment in result.records.reply(last))
        assert "balance is" in said, (said, agent_calls(failure_call))
    else:
        assert heard == [CLIPS["balance"].transcript] * 2
        assert "Could you say that again?" in report["turns"][0]["reply"]
        assert "balance is" in report["turns"][-1]["reply"], agent_calls(failure_call)
    assert result.ended_by == "caller hung up"


# --- a long turn and a slow reply: never taken for silence ---------------------------------------------------


def long_clip(seconds: float) -> Clip:
    """One utterance of at least ``seconds`` without a pause Ink could end the turn at: the clips' voiced parts,
    a tenth of a second apart, quieter than the originals so that only this registration matches it."""
    parts, transcripts, total = [], [], 0
    for clip in itertools.cycle(CLIPS.values()):
        voiced = np.flatnonzero(np.abs(clip.samples.astype(np.int32)) > 300)
        parts += [clip.samples[voiced[0] : voiced[-1] + 1], np.zeros(RATE // 10, np.int16)]
        transcripts.append(clip.transcript)
        total += voiced[-1] + 1 - voiced[0] + RATE // 10
        if total >= seconds * RATE:
            break
    samples = (np.concatenate(parts).astype(np.int32) * 4 // 5).astype(np.int16)
    return Clip("long", " ".join(transcripts), samples)


def test_a_caller_who_talks_for_thirty_seconds_is_listened_to_and_never_asked_whether_anyone_is_there(
    cloud: LocalCloud,
) -> None:
    clip = long_clip(30.0)
    cloud.ink.register(clip.pcm, clip.transcript)
    with _lambdas(cloud, PROMPT_PREFIX="long-talker/", RESPONDER="bedrock") as emulator:
        result = call(cloud, emulator, [Say(clip), Say(CLIPS["person"])])
    converse = results_of(result, "ConverseFunction")
    # ConverseFunction waits 6 s at a time: at least four of its waits ran out while the caller spoke.
    assert converse.count("Listening") >= 4 and "Timeout" not in converse, converse
    said = [p["text"] for p in prompts(result)]
    assert STILL_THERE not in said and SILENCE_GOODBYE not in said
    # What was said is heard (on a loaded machine a stalled read can make Ink end the long turn early: the rest is then
    # a turn of its own), and the caller's next line still reaches the agent.
    assert any(t.track == "customer" and t.transcript for t in result.records.turns)
    assert result.ended_by == "transferred"


def test_a_reply_that_takes_twelve_seconds_is_waited_for_with_one_holding_line(cloud: LocalCloud) -> None:
    # The bank agent's first answer starts twelve seconds late, however many times it is asked (a reply begun at
    # Ink's eager end, and the turn's own): the responder is given the time.
    stall = BedrockFault(BedrockFaultKind.STALL, after_tokens=0, seconds=12.0, count=5, first_turns=1)
    with _lambdas(cloud, PROMPT_PREFIX="slow-reply/", RESPONDER="bedrock", RESPONDER_TIMEOUT_MS="20000") as emulator:
        cloud.bedrock.inject(stall)
        try:
            result = call(cloud, emulator, [Say(CLIPS["balance"]), Say(CLIPS["person"])])
        finally:
            cloud.bedrock.clear_faults()
    converse = results_of(result, "ConverseFunction")
    assert converse.count("Thinking") >= 1 and "Timeout" not in converse, converse
    said = [p["text"] for p in prompts(result)]
    # One holding line a slow turn, however many waits run out on it (a later turn the stall also reached gets its
    # own: what the caller said while waiting is answered with the turn it followed).
    thinking = [c.response or {} for c in result.lambda_calls if c.result == "Thinking"]
    held = [answer["TurnIndex"] for answer in thinking if answer["Hold"] == "true"]
    assert held and len(held) == len(set(held)) and said.count("One moment.") == len(held), (held, said)
    assert STILL_THERE not in said and SILENCE_GOODBYE not in said
    # The caller, taking the holding line for the agent's turn, asks for a person meanwhile. The late balance reply
    # is played if it comes before they begin; once they speak it is not begun over them, and their turn's reply
    # takes its place (it comes, on this machine, while they are still speaking).
    report = build_report(result)
    asked_for_person = report["caller"][1]["start_ms"]
    balance = [p for p in report["prompts"] if p["text"].startswith("Your checking account")]
    assert all(p["start_ms"] < asked_for_person for p in balance), (balance, asked_for_person)
    answered = next(p for p in report["prompts"] if p["text"] == "Of course.")
    assert answered["start_ms"] > asked_for_person
    assert result.ended_by == "transferred"


# --- the simulator's own rules -----------------------------------------------------------------------------


def test_an_unsupported_action_stops_the_call_with_an_error_naming_it(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = write_flow(
        tmp_path,
        [
            {
                "Identifier": "Enable flow logging",
                "Type": "UpdateFlowLoggingBehavior",
                "Parameters": {"FlowLoggingBehavior": "Enabled"},
                "Transitions": {"NextAction": "Set voice"},
            },
            {
                "Identifier": "Set voice",
                "Type": "UpdateContactVoiceSkin",
                "Parameters": {"Skin": "Joanna"},
                "Transitions": {"NextAction": "Disconnect"},
            },
            DISCONNECT,
        ],
    )

    result = call(cloud, lambdas, [], flow)

    assert result.ended_by == "error"
    assert result.error is not None
    assert "'Set voice'" in result.error and "UpdateContactVoiceSkin" in result.error
    assert [a.identifier for a in result.actions] == ["Enable flow logging"]


def test_a_function_that_does_not_answer_within_the_time_limit_takes_the_error_branch(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = write_flow(
        tmp_path,
        [
            {
                "Identifier": "Start media streaming",
                "Type": "UpdateContactMediaStreamingBehavior",
                "Parameters": {
                    "MediaStreamingState": "Enabled",
                    "MediaStreamType": "Audio",
                    "Participants": [{"ParticipantType": "Customer", "MediaDirections": ["From", "To"]}],
                },
                "Transitions": {"NextAction": "Start listening"},
            },
            {
                "Identifier": "Start listening",
                "Type": "InvokeLambdaFunction",
                "Parameters": {
                    "LambdaFunctionARN": "${StartListeningFunction.Arn}",
                    "InvocationTimeLimitSeconds": "5",
                },
                "Transitions": {"NextAction": "Await caller turn"},
            },
            {
                "Identifier": "Await caller turn",
                "Type": "InvokeLambdaFunction",
                "Parameters": {
                    "LambdaFunctionARN": "${AwaitTurnFunction.Arn}",
                    "InvocationTimeLimitSeconds": "1",
                    "LambdaInvocationAttributes": {"MaxWaitMs": AWAIT_MAX_WAIT_MS},
                },
                "Transitions": {
                    "NextAction": "Answered",
                    "Errors": [{"NextAction": "Timed out", "ErrorType": "NoMatchingError"}],
                },
            },
            say("Answered", "It answered."),
            say("Timed out", "It did not answer in time."),
            DISCONNECT,
        ],
    )

    result = call(cloud, lambdas, [], flow)

    awaited = result.lambda_calls[-1]
    assert (awaited.function, awaited.outcome) == ("AwaitTurnFunction", "timeout")
    assert 1.0 <= awaited.duration < 1.4
    assert outcomes(result, "Await caller turn") == ["NoMatchingError"]
    assert [p["text"] for p in prompts(result)] == ["It did not answer in time."]


def test_a_function_that_fails_takes_the_error_branch(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = write_flow(
        tmp_path,
        [
            {
                "Identifier": "Call nothing",
                "Type": "InvokeLambdaFunction",
                "Parameters": {
                    "LambdaFunctionARN": f"arn:aws:lambda:us-east-1:{LOCAL_ACCOUNT}:function:nothing-here",
                    "InvocationTimeLimitSeconds": "3",
                },
                "Transitions": {
                    "NextAction": "Answered",
                    "Errors": [{"NextAction": "Failed", "ErrorType": "NoMatchingError"}],
                },
            },
            say("Answered", "It answered."),
            say("Failed", "It failed: $.External.Result."),
            DISCONNECT,
        ],
    )

    result = call(cloud, lambdas, [], flow)

    (failed,) = result.lambda_calls
    assert failed.outcome == "error"
    assert failed.error is not None and "ResourceNotFoundException" in failed.error
    assert [p["text"] for p in prompts(result)] == ["It failed: ."]
    assert result.ended_by == "disconnected"


def test_a_hold_keeps_the_line_silent_then_takes_the_input_timeout_branch(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = write_flow(
        tmp_path,
        [
            {
                "Identifier": "Hold",
                "Type": "GetParticipantInput",
                "Parameters": {
                    "SSML": '<speak><break time="3s"/></speak>',
                    "StoreInput": "False",
                    "InputTimeLimitSeconds": "2",
                },
                "Transitions": {
                    "NextAction": "Disconnect",
                    "Errors": [{"NextAction": "Held", "ErrorType": "InputTimeLimitExceeded"}],
                },
            },
            say("Held", "Thanks for waiting."),
            DISCONNECT,
        ],
    )

    result = call(cloud, lambdas, [], flow)

    hold, thanks = prompts(result)
    assert (hold["source"], hold["end_ms"] - hold["start_ms"]) == ("hold", 3000)
    assert not result.recording[round(hold["start_ms"] * RATE / 1000) : round(hold["end_ms"] * RATE / 1000)].any()
    assert outcomes(result, "Hold") == ["InputTimeLimitExceeded"]
    assert thanks["start_ms"] - hold["end_ms"] >= 2000
    assert thanks["text"] == "Thanks for waiting."


def test_the_listen_only_flow_transfers_the_caller_to_the_working_queue(
    cloud: LocalCloud, lambdas: LambdaEmulator
) -> None:
    instance = f"arn:aws:connect:us-east-1:{LOCAL_ACCOUNT}:instance/{EMULATED_INSTANCE_ID}"
    queue = f"{instance}/queue/0a1b2c3d-0000-4000-8000-000000000001"

    result = call(
        cloud, lambdas, [], ROOT / "contact_flows" / "listen-only.json", placeholders={"AgentQueueArn": queue}
    )

    (listening,) = result.lambda_calls
    assert (listening.parameters, listening.result) == ({"Tracks": "both"}, "OK")
    assert [a.identifier for a in result.actions][-2:] == ["Set working queue", "Transfer to queue"]
    assert (result.ended_by, result.detail) == ("transferred", queue)


def _synthesize_then_say(tmp_path: Path, limit_s: int = 3) -> Path:
    return write_flow(
        tmp_path,
        [
            {
                "Identifier": "Synthesize",
                "Type": "InvokeLambdaFunction",
                "Parameters": {
                    "LambdaFunctionARN": "${SynthesizeFunction.Arn}",
                    "InvocationTimeLimitSeconds": str(limit_s),
                    "LambdaInvocationAttributes": {"Text": "Thanks for holding."},
                },
                "Transitions": {
                    "NextAction": "Answered",
                    "Errors": [{"NextAction": "Failed", "ErrorType": "NoMatchingError"}],
                },
            },
            say("Answered", "It answered."),
            say("Failed", "It did not answer."),
            DISCONNECT,
        ],
    )


def test_a_throttled_function_is_retried_as_connect_retries_it_until_it_answers(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    lambdas.inject(LambdaFault(LambdaFaultKind.THROTTLE, count=2, function="SynthesizeFunction"))
    try:
        # The shipped flows' limit: the answer is a cold container's first synthesis, after the retries' back-off,
        # and three seconds ran out on a loaded machine.
        result = call(cloud, lambdas, [], _synthesize_then_say(tmp_path, limit_s=8))
        # Both throttles were spent: the call was made three times.
        assert lambdas.pending_faults == []
    finally:
        lambdas.clear_faults()

    (synthesized,) = result.lambda_calls
    assert (synthesized.outcome, synthesized.result) == ("ok", "OK")
    assert outcomes(result, "Synthesize") == ["next"]


def test_a_function_throttled_throughout_takes_the_error_branch_within_its_time_limit(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    lambdas.inject(LambdaFault(LambdaFaultKind.THROTTLE, count=1000, function="SynthesizeFunction"))
    try:
        result = call(cloud, lambdas, [], _synthesize_then_say(tmp_path))
    finally:
        lambdas.clear_faults()

    (synthesized,) = result.lambda_calls
    assert synthesized.outcome == "error" and synthesized.error is not None
    assert "TooManyRequestsException" in synthesized.error
    assert synthesized.duration < 3.0
    assert [p["text"] for p in prompts(result)] == ["It did not answer."]


def test_flow_attributes_are_set_for_the_flow_and_read_back_in_a_prompt(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = write_flow(
        tmp_path,
        [
            {
                "Identifier": "Set step",
                "Type": "UpdateFlowAttributes",
                "Parameters": {"FlowAttributes": {"Step": {"Value": "two"}, "Tier": {"Value": "$.Attributes.Tier"}}},
                "Transitions": {"NextAction": "Say step"},
            },
            say("Say step", "Step $.FlowAttributes.Step, tier $.FlowAttributes.Tier, not $.Attributes.Step."),
            DISCONNECT,
        ],
    )

    result = call(cloud, lambdas, [], flow)

    assert [p["text"] for p in prompts(result)] == ["Step two, tier , not ."]


def test_input_that_never_comes_takes_no_matching_error_when_there_is_no_timeout_branch(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = write_flow(
        tmp_path,
        [
            {
                "Identifier": "Menu",
                "Type": "GetParticipantInput",
                "Parameters": {"Text": "Press one.", "StoreInput": "False", "InputTimeLimitSeconds": "2"},
                "Transitions": {
                    "NextAction": "Disconnect",
                    "Errors": [{"NextAction": "Nothing pressed", "ErrorType": "NoMatchingError"}],
                },
            },
            say("Nothing pressed", "Nothing was pressed."),
            DISCONNECT,
        ],
    )

    result = call(cloud, lambdas, [], flow)

    assert outcomes(result, "Menu") == ["NoMatchingError"]
    assert [p["text"] for p in prompts(result)] == ["Press one.", "Nothing was pressed."]


PAY_BY_CARD = "I want to pay my bill by card, please."
CARD_KEYS = "4111111111111111#"
KEYPAD = {
    "CardKeypad": "encrypted",
    "CardEncryptionKeyId": "c0ffee00-0000-4000-8000-00000000ca4d",
    "CardEncryptionCertificate": "-----BEGIN CERTIFICATE-----\\nMIIB-local-stand-in\\n-----END CERTIFICATE-----",
}


def _said(text: str) -> Clip:
    return Clip("pay-by-card", text, StandInSpeechEngine().synthesize(text, RATE, 1.0))


def test_a_caller_paying_by_card_types_it_on_the_keypad_and_no_digit_is_heard_or_kept(cloud: LocalCloud) -> None:
    clip = _said(PAY_BY_CARD)
    cloud.ink.register(clip.pcm, clip.transcript)

    # The Bedrock emulator's bank agent asks for it with collect_card_by_keypad, as the demo's agent does.
    with _lambdas(cloud, **scenario_settings(SCENARIOS["normal"])) as bedrock:
        result = call(cloud, bedrock, [Say(clip), Press(CARD_KEYS), Say(CLIPS["person"])], parameters=KEYPAD)

    identifiers = [a.identifier for a in result.actions]
    assert "Take card number on keypad" in identifiers, [
        (a.identifier, getattr(a, "branch", None)) for a in result.actions[25:45]
    ]
    taken = identifiers.index("Take card number on keypad")
    assert identifiers[taken - 1] == "Stop flow logging for card"
    assert identifiers[taken + 1 : taken + 4] == [
        "Resume flow logging after card",
        "Check card entered",
        "Set card taken line",
    ]
    assert "Thank you, I have your card details." in transcript(result)
    assert all("4111" not in turn.transcript for turn in result.records.turns)
    assert (result.ended_by, identifiers[-1]) == ("transferred", "Transfer to agent"), result.detail


def test_without_a_keypad_key_the_scripted_agents_caller_paying_by_card_is_handed_to_a_person(
    cloud: LocalCloud, lambdas: LambdaEmulator
) -> None:
    clip = _said(PAY_BY_CARD)
    cloud.ink.register(clip.pcm, clip.transcript)

    result = call(cloud, lambdas, [Say(clip)])

    identifiers = [a.identifier for a in result.actions]
    assert "Take card number on keypad" not in identifiers
    assert "Set card transfer line" in identifiers
    assert (result.ended_by, identifiers[-1]) == ("transferred", "Transfer to agent")


def _store_encrypted(tmp_path: Path, key_id: str, certificate: str) -> Path:
    """Store the keys pressed, encrypted, then say what ``$.StoredCustomerInput`` holds."""
    take = {
        "Identifier": "Take",
        "Type": "GetParticipantInput",
        "Parameters": {
            "Text": "Type it, then press pound.",
            "StoreInput": "True",
            "InputTimeLimitSeconds": "5",
            "InputValidation": {"CustomValidation": {"MaximumLength": "19"}},
            "InputEncryption": {"EncryptionKeyId": key_id, "Key": certificate},
        },
        "Transitions": {
            "NextAction": "Stored",
            "Errors": [{"NextAction": "Refused", "ErrorType": "NoMatchingError"}],
        },
    }
    return write_flow(
        tmp_path, [take, say("Stored", "$.StoredCustomerInput"), say("Refused", "Not stored."), DISCONNECT]
    )


def test_keys_stored_with_encryption_are_ciphertext_to_the_flow(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    flow = _store_encrypted(tmp_path, "key-1", "-----BEGIN CERTIFICATE-----")

    result = call(cloud, lambdas, [Press(CARD_KEYS)], flow)

    # What was said, below the header that names the call (a random contact id may hold any four digits).
    said = transcript(result).split("\n", 1)[1]
    assert "[encrypted with key key-1: 16 keys]" in said and "4111" not in said.replace(CARD_KEYS, "")


def test_keys_cannot_be_stored_encrypted_without_a_certificate(
    cloud: LocalCloud, lambdas: LambdaEmulator, tmp_path: Path
) -> None:
    result = call(cloud, lambdas, [Press(CARD_KEYS)], _store_encrypted(tmp_path, "key-1", ""))

    assert "Not stored." in transcript(result)
