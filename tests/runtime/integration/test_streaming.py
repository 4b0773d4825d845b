"""The streaming transport end to end: ``python -m voicebridge.a2a`` (as an ECS task runs it, with the consumer's
settings from template.yaml) on the local cloud, and Connect's side played by the strict A2A client emulator, which
fails a session on any breach of the contract. The caller's clips are registered with the Ink emulator, so each
is heard as said; the responder is the Bedrock emulator's bank agent, Sonic the emulator's stand-in voice.

Sessions run in real time (the caller speaks at 1×): each test is one session, its behaviours asserted together.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from tests.fixtures import ROOT
from tests.fixtures.logs import logged_slips
from voicebridge.config import Settings
from voicebridge_dev.demo import scenario_settings
from voicebridge_dev.local.a2a import (
    Action,
    ConnectSettings,
    Dtmf,
    Fragmented,
    HangUp,
    Probe,
    SessionResult,
    SilenceMarker,
    UpgradeRejected,
    history_from_traces,
    run_redialled,
    run_session,
)
from voicebridge_dev.local.agent import LocalAgent
from voicebridge_dev.local.bedrock import Fault as BedrockFault
from voicebridge_dev.local.bedrock import FaultKind as BedrockFaultKind
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.ink.faults import DropFault
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID
from voicebridge_dev.local.sonic import Fault, FaultKind
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator import SCENARIOS, load_clips
from voicebridge_dev.simulator.line import LineNoise
from voicebridge_dev.template import LOCAL_ACCOUNT, local_physical_id

pytestmark = pytest.mark.timeout(120)

TEMPLATE = ROOT / "template.yaml"
CLIPS = load_clips()
RATE = 8000
GREETING = Settings.from_env({}).a2a_greeting_text
SPANISH_GREETING = "¡Hola! Gracias por llamar al banco. ¿En qué puedo ayudarle?"
# The agent's own lines in Spanish for a Spanish contact; the lines not given stay the deployment's.
AGENT_LINES = {"es": {"greeting": SPANISH_GREETING, "hold": "Un momento."}}


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    local = LocalCloud(
        template=TEMPLATE, engine=StandInSpeechEngine(), sonic_time_to_first_byte_ms=60.0, sonic_realtime_factor=10.0
    )
    with local:
        for clip in CLIPS.values():
            local.ink.register(clip.pcm, clip.transcript)
        yield local


@pytest.fixture(scope="module")
def agent(cloud: LocalCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalAgent]:
    path = tmp_path_factory.mktemp("agent") / "agent.log"
    with (
        path.open("w", encoding="utf-8") as log,
        LocalAgent(
            cloud,
            TEMPLATE,
            env={**scenario_settings(SCENARIOS["normal"]), "A2A_LINES": json.dumps(AGENT_LINES)},
            log=log,
        ) as server,
    ):
        yield server
    # The server goes on from a slip in a session's task, as on a call: the sessions here must have made none.
    slipped = logged_slips(path)
    assert not slipped, slipped


def caller(*parts: float | str) -> tuple[bytes, dict[str, float]]:
    """The caller's audio from READY on: seconds of silence and clips by name; where each clip starts (s)."""
    audio, starts = bytearray(), {}
    for part in parts:
        if isinstance(part, str):
            starts[part] = len(audio) / (2 * RATE)
            audio += CLIPS[part].pcm
        else:
            audio += bytes(int(part * RATE) * 2)
    return bytes(audio), starts


def session(agent: LocalAgent, audio: bytes, script: Sequence[Action] = (), **settings: object) -> SessionResult:
    connect = ConnectSettings(api_key=agent.api_key, max_duration_s=90, **settings)  # type: ignore[arg-type]
    return asyncio.run(run_session(agent.url, connect, caller_audio=audio, script=list(script)))


def record(cloud: LocalCloud, contact_arn: str, *, generation: int = 0) -> Any:
    """The contact's call record as its ``generation`` wrote it, once the server has."""
    contact = contact_arn.rsplit("/", 1)[-1]
    stored = cloud.call_record(contact if generation == 0 else f"{contact}-{generation}", wait_s=10.0)
    assert stored is not None, f"no record for {contact}"
    return json.loads(stored)


def agent_audio_after(result: SessionResult, at_s: float) -> list[str]:
    """The tasks whose audio Connect received after ``at_s``."""
    return [
        e.detail["task"]
        for e in result.timeline.events
        if e.kind == "chunk_received" and e.at > at_s and e.detail["bytes"]
    ]


def test_a_contact_is_negotiated_greeted_after_ready_answered_and_handed_to_a_person(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    audio, starts = caller(4.0, "balance", 9.0, "person", 6.0)
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-escalate"

    result = session(agent, audio, input_rate=16000, output_rate=24000, contact_arn=contact)

    # The caller's audio is asked for at 8 kHz (what Ink hears); the agent speaks at the rate Connect proposed.
    assert (result.audio_input.sample_rate, result.audio_output.sample_rate) == (8000, 24000)  # type: ignore[union-attr]
    assert result.finish is not None and result.finish.type == "ESCALATE" and result.flow_tool == "Escalate"
    # The greeting, one answer per turn: each with its audio, its trace, then its terminal status.
    assert [turn.state for turn in result.turns] == ["TASK_STATE_COMPLETED"] * 3
    assert len(result.traces) == 3
    assert history_from_traces(result.traces[:1])[0]["parts"][0]["text"] == GREETING
    assert agent_audio_after(result, starts["balance"]) and agent_audio_after(result, starts["person"])
    kept = record(cloud, contact)
    heard = [turn["heard"] for turn in kept["turns"]]
    assert heard == [CLIPS["balance"].transcript, CLIPS["person"].transcript]
    assert kept["lastAction"] == "Transfer"


def test_talking_over_a_reply_stops_it_and_is_answered_and_a_backchannel_does_not(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    audio, _ = caller(1.0, "uh-huh")
    more, later = caller(5.0, "dispute", 4.0, "person", 6.0)
    offset = len(audio) / (2 * RATE)
    audio += more
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-talk-over"

    result = session(agent, audio, contact_arn=contact)

    interruptions = [e.at for e in result.timeline.of("interruption") if e.detail["by"] == "agent"]
    person = offset + later["person"]
    # The "uh huh" during the greeting stopped nothing; the caller's words over the reply did, while they spoke.
    assert len(interruptions) == 1
    assert person < interruptions[0] < person + CLIPS["person"].pcm.__len__() / (2 * RATE)
    assert result.finish is not None and result.finish.type == "ESCALATE"
    # The record keeps the sentences made and what of them reached the caller: the start of the dispute answer.
    dispute = next(turn for turn in record(cloud, contact)["turns"] if turn["heard"] == CLIPS["dispute"].transcript)
    made = " ".join(dispute["reply"]["said"])
    assert dispute["reply"]["heard"] and made.startswith(dispute["reply"]["heard"]), dispute["reply"]
    assert len(dispute["reply"]["heard"]) < len(made)


def test_a_caller_who_hangs_up_during_a_reply_is_recorded_as_hearing_only_what_played(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    audio, starts = caller(3.0, "dispute", 30.0)
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-hang-up"
    # The five-sentence answer begins within a second or two of the question's end: seven seconds on, the caller
    # hangs up in the middle of it.
    asked_until = starts["dispute"] + len(CLIPS["dispute"].pcm) / (2 * RATE)

    result = session(agent, audio, contact_arn=contact, script=[HangUp(at_s=asked_until + 7.0)])

    assert agent_audio_after(result, asked_until)
    dispute = next(turn for turn in record(cloud, contact)["turns"] if turn["heard"] == CLIPS["dispute"].transcript)
    made, heard = " ".join(dispute["reply"]["said"]), dispute["reply"].get("heard")
    assert heard and made.startswith(heard) and len(heard) < len(made), dispute["reply"]


def test_a_short_wait_over_a_reply_stops_it_as_its_turn_ends_and_is_answered(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    wait = StandInSpeechEngine().synthesize("wait", RATE, 1.0).tobytes()
    cloud.ink.register(wait, "Wait.")
    audio, _ = caller(5.0, "dispute", 2.5)
    said_at = len(audio) / (2 * RATE)
    more, later = caller(6.0, "person", 6.0)
    person_at = said_at + len(wait) / (2 * RATE) + later["person"]
    audio += wait + more

    result = session(agent, audio)

    # Shorter than a barge-in, the agent only paused for it; but "wait" asks for something: once Ink ends its turn
    # the reply stops (not after its sentence, nor at its end) and the turn is answered.
    interruptions = [e.at for e in result.timeline.of("interruption") if e.detail["by"] == "agent"]
    assert len(wait) / (2 * RATE) < 0.6
    before_person = [at for at in interruptions if at < person_at]
    assert len(before_person) == 1 and said_at < before_person[0] < said_at + 2.0, (said_at, interruptions)
    assert agent_audio_after(result, before_person[0])
    assert result.finish is not None and result.finish.type == "ESCALATE"


def test_a_reply_ready_while_the_caller_goes_on_after_their_turn_ended_is_never_begun_over_them(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    # Ink ends the "balance" turn in the caller's pause; its answer is slow (the model stalls two seconds), and comes
    # while the caller says their next line.
    audio, starts = caller(4.0, "balance", 1.3, "person", 6.0)
    person = (starts["person"], starts["person"] + len(CLIPS["person"].pcm) / (2 * RATE))
    cloud.bedrock.inject(BedrockFault(BedrockFaultKind.STALL, after_tokens=0, seconds=2.0, count=2, first_turns=1))
    try:
        result = session(agent, audio)
    finally:
        cloud.bedrock.clear_faults()

    # The answer waited while they spoke, and their turn's end dropped it unheard: nothing of the agent during their
    # line, nothing for Connect to flush, and their line is what was answered.
    during = [
        e.at for e in result.timeline.of("chunk_received") if e.detail["bytes"] and person[0] <= e.at <= person[1]
    ]
    assert during == [], (during, person)
    assert not [e.at for e in result.timeline.of("interruption") if e.detail["by"] == "agent"]
    assert result.finish is not None and result.finish.type == "ESCALATE"


def test_a_reply_slow_in_coming_is_preceded_by_one_holding_line(cloud: LocalCloud, agent: LocalAgent) -> None:
    # The model stalls five seconds on the first turn: past CONVERSE_HOLD_AFTER_MS (4 s) with nothing to say. The
    # caller hangs up once the answer has begun.
    audio, starts = caller(4.0, "balance", 20.0)
    asked_end = starts["balance"] + len(CLIPS["balance"].pcm) / (2 * RATE)
    cloud.bedrock.inject(BedrockFault(BedrockFaultKind.STALL, after_tokens=0, seconds=5.0, count=2, first_turns=1))
    try:
        result = session(agent, audio, script=[HangUp(at_s=asked_end + 11.0)])
    finally:
        cloud.bedrock.clear_faults()

    # The greeting, "One moment." heard whole, then the answer: each its own task, in that order.
    first_audio: dict[str, float] = {}
    for e in result.timeline.of("chunk_received"):
        if e.detail["bytes"]:
            first_audio.setdefault(e.detail["task"], e.at)
    greeting, held, answered = list(first_audio)[:3]
    completed = [turn.task_id for turn in result.turns if turn.state == "TASK_STATE_COMPLETED"]
    assert completed[:2] == [greeting, held]
    assert asked_end + 4.0 <= first_audio[held] < first_audio[answered], (asked_end, first_audio)


def test_babble_on_the_callers_line_never_interrupts_the_agent(agent: LocalAgent) -> None:
    audio, starts = caller(4.0, "balance", 9.0, "person", 6.0)
    line = LineNoise.of("babble-10db", [clip.samples for clip in CLIPS.values()])
    noisy = line.added(np.frombuffer(audio, dtype="<i2"), 0).tobytes()
    spoken = [(at, at + len(CLIPS[name].pcm) / (2 * RATE)) for name, at in starts.items()]

    result = session(agent, noisy)

    # Six voices talking 10 dB under the caller, all through the greeting and the answers: none of them is the caller,
    # so the agent stops only while the caller speaks (over the end of a reply, as they may).
    interruptions = [e.at for e in result.timeline.of("interruption") if e.detail["by"] == "agent"]
    assert all(any(start < at < end for start, end in spoken) for at in interruptions), (interruptions, spoken)
    assert result.finish is not None and result.finish.type == "ESCALATE"


def test_keys_are_a_turn_and_silence_is_asked_about_once_then_ended(agent: LocalAgent) -> None:
    audio, _ = caller(30.0)

    # Connect's silence marker once; the second silence is the agent's own (A2A_SILENCE_MS), with no marker.
    result = session(agent, audio, script=[Dtmf(at_s=4.0, digits="1234#"), SilenceMarker(at_s=14.0)])

    assert agent_audio_after(result, 4.0), "the keys were answered"
    assert result.finish is not None and result.finish.type == "COMPLETE"
    # Greeting, the answer to the keys, "are you still there?", goodbye.
    assert len(result.turns) == 4
    # The goodbye's audio began a whole A2A_SILENCE_MS (7 s by default) after the question's had all come.
    received = [e for e in result.timeline.of("chunk_received") if e.detail["bytes"]]
    asked, goodbye = (turn.task_id for turn in result.turns[-2:])
    asked_end = max(e.at for e in received if e.detail["task"] == asked)
    goodbye_start = min(e.at for e in received if e.detail["task"] == goodbye)
    assert goodbye_start - asked_end >= 7.0 - 1.0, (asked_end, goodbye_start)


CARD_KEYS = "4111111111111111#"


def test_a_caller_paying_by_card_is_handed_back_and_no_key_reaches_the_model_the_table_or_the_record(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    text = "I want to pay my bill by card, please."
    said = StandInSpeechEngine().synthesize(text, RATE, 1.0).tobytes()
    cloud.ink.register(said, text)
    audio = bytes(2 * RATE * 2) + said + bytes(25 * RATE * 2)
    instance = f"arn:aws:connect:us-east-1:{LOCAL_ACCOUNT}:instance/{EMULATED_INSTANCE_ID}"
    contact_id = str(uuid.uuid4())
    asked_before = len(cloud.bedrock.invocations)

    # The bank agent asks for the card on the keypad (collect_card_by_keypad); the caller types it as told, while
    # the reply is still being said.
    result = session(
        agent,
        audio,
        script=[Dtmf(at_s=8.0, digits=CARD_KEYS)],
        instance_arn=instance,
        contact_arn=f"{instance}/contact/{contact_id}",
    )

    assert result.finish is not None and result.finish.type == "ESCALATE", result.finish
    attributes = cloud.contact_attributes(contact_id)
    assert attributes["VoicebridgeCollect"] == "card" and attributes["VoicebridgeOutcome"] == "Escalate"
    assert text in attributes["VoicebridgeHandoverNote"]
    # The hand-over line was heard whole before the hand-back (said again after the keys stopped it).
    card_line = [turn for turn in result.turns if turn.state == "TASK_STATE_COMPLETED"][-1]
    assert any(e.detail["task"] == card_line.task_id for e in result.timeline.of("chunk_received"))
    digits = CARD_KEYS.rstrip("#")
    asked = [json.dumps(call.body) for call in cloud.bedrock.invocations[asked_before:]]
    assert asked and not any(digits in body for body in asked)
    table = cloud.client("dynamodb").scan(TableName=local_physical_id("TurnTable"))["Items"]
    assert not any(digits in json.dumps(item) for item in table)
    kept = record(cloud, contact_id)
    assert [turn["heard"] for turn in kept["turns"]] == [text] and digits not in json.dumps(kept)


def test_a_caller_saying_goodbye_ends_the_session_with_complete_after_the_last_word(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    goodbye = StandInSpeechEngine().synthesize("That's all, goodbye.", RATE, 1.0).tobytes()
    cloud.ink.register(goodbye, "That's all, goodbye.")
    audio, _ = caller(4.0)
    audio += goodbye + bytes(8 * RATE * 2)
    # The local Connect emulator's instance, and a contact id shaped as Connect's are.
    instance = f"arn:aws:connect:us-east-1:{LOCAL_ACCOUNT}:instance/{EMULATED_INSTANCE_ID}"
    contact = f"{instance}/contact/{uuid.uuid4()}"

    result = session(agent, audio, instance_arn=instance, contact_arn=contact)

    assert result.finish is not None and result.finish.type == "COMPLETE" and result.flow_tool == "Complete"
    # The reply's last word was heard before the hand-back: FINISH came after its audio had played out.
    played = [e.at for e in result.timeline.of("playback_stop") if e.detail.get("reason") == "complete"]
    finished = result.timeline.of("finish")[0].at
    assert played and max(played) <= finished + 0.05
    assert cloud.contact_attributes(contact.rsplit("/", 1)[-1])["VoicebridgeOutcome"] == "Complete"


def test_a_wrong_key_is_refused_with_401(agent: LocalAgent) -> None:
    connect = ConnectSettings(api_key="not-the-key")
    with pytest.raises(UpgradeRejected) as refused:
        asyncio.run(run_session(agent.url, connect, caller_audio=b""))
    assert refused.value.status == 401


def test_bad_frames_are_answered_with_errors_and_the_session_lives_on(cloud: LocalCloud, agent: LocalAgent) -> None:
    audio, _ = caller(12.0)
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-robust"
    probes: list[Action] = [
        Probe(at_s=0.5, kind="malformed_json"),
        Probe(at_s=0.6, kind="unknown_method"),
        Probe(at_s=0.7, kind="unknown_event_type"),
        Probe(at_s=0.8, kind="oversized"),
        Probe(at_s=0.9, kind="binary"),
    ]

    result = session(
        agent, audio, contact_arn=contact, script=[*probes, Fragmented(Dtmf(at_s=4.0, digits="42#")), HangUp(at_s=9.0)]
    )

    answered = {probe.probe for probe in result.probes}
    assert {"malformed_json", "unknown_method"} <= answered
    assert agent_audio_after(result, 4.0), "the fragmented keys were put together and answered"
    # The dropped socket ends the session; what was said is kept.
    kept = record(cloud, contact)
    assert [turn["heard"] for turn in kept["turns"]] == ["42#"]


def test_a_greeting_sonic_cannot_speak_fails_its_task_and_the_call_goes_on(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    audio, starts = caller(3.0, "balance", 7.0)
    cloud.inject("sonic", Fault(FaultKind.THROTTLE, count=40))
    # Sonic comes back once the greeting has given up.
    threading.Timer(2.0, cloud.sonic.faults.clear).start()

    result = session(agent, audio, script=[HangUp(at_s=10.0)])

    failed = result.turns[0]
    assert failed.state == "TASK_STATE_FAILED" and failed.error is not None and failed.error["errorCode"] == 424
    assert agent_audio_after(result, starts["balance"]), "the caller's turn is answered"


def test_sonic_and_ink_failing_mid_call_lose_no_turn_and_answer_each_once(cloud: LocalCloud, agent: LocalAgent) -> None:
    audio, starts = caller(3.0, "pay-bill", 6.0, "thanks", 6.0)
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-ink-drop"
    # The greeting's stream fails after a few chunks; Ink's socket drops right after the first turn ends.
    cloud.inject("sonic", Fault(FaultKind.ERROR_MID_STREAM, count=1, after_chunks=3))
    cloud.inject("ink", DropFault(after_turn_end=1))

    result = session(agent, audio, contact_arn=contact, script=[HangUp(at_s=16.0)])

    # What was heard of the greeting is its turn; the caller was not left in silence unknowingly.
    assert result.turns[0].state == "TASK_STATE_COMPLETED" and agent_audio_after(result, 0.0)
    kept = record(cloud, contact)
    assert [turn["heard"] for turn in kept["turns"]] == [CLIPS["pay-bill"].transcript, CLIPS["thanks"].transcript]
    assert agent_audio_after(result, starts["thanks"])


def test_a_spanish_contact_is_heard_on_inks_manual_endpoint_and_answered_in_spanish(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    said = "Quiero hablar con una persona"
    clip = StandInSpeechEngine().synthesize("I want to talk to a person in Spanish", RATE, 1.0).tobytes()
    cloud.ink.register(clip, said)
    contact_id = str(uuid.uuid4())
    instance = f"arn:aws:connect:us-east-1:111122223333:instance/{EMULATED_INSTANCE_ID}"
    contact = f"{instance}/contact/{contact_id}"
    cloud.set_contact_attributes(contact_id, {"Language": "es-US"})

    audio = bytes(int(4.0 * RATE) * 2) + clip + bytes(int(6.0 * RATE) * 2)
    result = session(agent, audio, instance_arn=instance, contact_arn=contact)

    assert result.finish is not None and result.finish.type == "ESCALATE"
    # Greeted in the contact's language (A2A_LINES' Spanish, for es-US).
    assert history_from_traces(result.traces[:1])[0]["parts"][0]["text"] == SPANISH_GREETING
    kept = record(cloud, contact)
    assert kept["listening"]["language"] == "es-US"
    (turn,) = kept["turns"]
    assert (turn["heard"].strip(), turn["endedBy"]) == (said, "voicebridge")
    assert turn["reply"]["said"][0] == "Por supuesto."
    assert cloud.ink.sessions[-1].endpoint == "manual"


def test_a_dropped_socket_dialled_again_is_continued_without_a_greeting_and_each_turn_recorded_once(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    audio, starts = caller(3.0, "balance", 14.0, 3.0, "person", 6.0)
    drop_at = starts["person"] - 3.0
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-redial"
    connect = ConnectSettings(api_key=agent.api_key, max_duration_s=60, contact_arn=contact, context_id="ctx-redial")

    call = asyncio.run(run_redialled(agent.url, connect, caller_audio=audio, drop_at_s=drop_at))

    assert call.first.outcome == "hung_up" and agent_audio_after(call.first, starts["balance"])
    # The redial carried the conversation so far; the agent said nothing until the caller spoke again.
    assert [m["role"] for m in call.history] == ["ROLE_AGENT", "ROLE_USER", "ROLE_AGENT"]
    person = starts["person"] - drop_at
    assert agent_audio_after(call.second, 0.0) and not [
        e for e in call.second.timeline.of("chunk_received") if e.at < person and e.detail["bytes"]
    ]
    assert call.second.finish is not None and call.second.finish.type == "ESCALATE"
    assert len(call.second.turns) == 1
    # The redial's record (the contact's next generation) holds the whole call: each of the caller's turns once.
    kept = record(cloud, contact, generation=1)
    assert kept["listening"]["generation"] == 1
    assert [turn["heard"] for turn in kept["turns"]] == [CLIPS["balance"].transcript, CLIPS["person"].transcript]


def test_a_handoff_with_history_is_not_greeted_and_its_unanswered_message_is_answered(
    cloud: LocalCloud, agent: LocalAgent
) -> None:
    asked = CLIPS["balance"].transcript
    history = (
        {
            "messageId": "h-1",
            "role": "ROLE_AGENT",
            "parts": [{"text": "Welcome to the bank.", "mediaType": "text/plain"}],
        },
        {"messageId": "h-2", "role": "ROLE_USER", "parts": [{"text": asked, "mediaType": "text/plain"}]},
    )
    audio, _ = caller(9.0, "person", 6.0)
    contact = "arn:aws:connect:us-east-1:111122223333:instance/00000000-0000-4000-8000-000000000000/contact/c-history"

    result = session(agent, audio, contact_arn=contact, history=history)

    # The first thing the caller hears answers the question they asked before the handoff; no greeting.
    first = history_from_traces(result.traces[:1])
    assert [m["role"] for m in first] == ["ROLE_USER", "ROLE_AGENT"] and first[0]["parts"][0]["text"] == asked
    assert GREETING not in first[1]["parts"][0]["text"]
    assert result.finish is not None and result.finish.type == "ESCALATE"
    kept = record(cloud, contact)
    assert [turn["heard"] for turn in kept["turns"]] == [asked, CLIPS["person"].transcript]
    # What Connect handed over is listed apart from the turns.
    assert kept["handedOver"] == [
        {"role": "agent", "said": "Welcome to the bank."},
        {"role": "customer", "said": asked},
    ]
