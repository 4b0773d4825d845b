"""The flow simulator's pieces around a caller's input: keys pressed, caller scripts, Lex bots, and other flows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from voicebridge.audio.wav import pcm16_wav_bytes
from voicebridge_dev.flows import parse_flow
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator.agent import ScriptedCaller
from voicebridge_dev.simulator.caller import (
    CallerScriptError,
    HangUp,
    Press,
    Say,
    Scenario,
    Silence,
    SimulatedCaller,
    dtmf_tones,
    load_script,
)
from voicebridge_dev.simulator.clock import VirtualClock
from voicebridge_dev.simulator.events import CallLog
from voicebridge_dev.simulator.keypad import menu_key, stored_input
from voicebridge_dev.simulator.lexbot import (
    DEFAULT_START_TIMEOUT_S,
    bot_of,
    closed,
    lex_attributes,
    message_text,
    start_timeout_s,
)
from voicebridge_dev.simulator.library import FlowLibrary, display_names
from voicebridge_dev.simulator.media import SAMPLE_RATE, MediaPlane

STORE = {"StoreInput": "True", "InputTimeLimitSeconds": "5"}


# -- keys


def test_a_menu_takes_the_first_key_pressed() -> None:
    assert menu_key("21#") == "2"


@pytest.mark.parametrize(
    ("keys", "params", "stored"),
    [
        ("1234#", {}, "1234"),
        ("1234#99", {}, "1234"),
        ("12*34#", {}, "34"),
        ("12*34#", {"DTMFConfiguration": {"DisableCancelKey": "True"}}, "12*34"),
        ("123456", {"InputValidation": {"CustomValidation": {"MaximumLength": "4"}}}, "1234"),
        ("12**", {"DTMFConfiguration": {"InputTerminationSequence": "**"}}, "12"),
        ("#", {}, "Timeout"),
        (None, {}, "Timeout"),
    ],
)
def test_stored_input_ends_at_the_terminator_or_the_maximum_length(
    keys: str | None, params: dict[str, Any], stored: str
) -> None:
    assert stored_input(keys, {**STORE, **params}).value == stored


def test_a_phone_number_is_stored_in_e164_form_or_takes_invalid_phone_number() -> None:
    local = {"InputValidation": {"PhoneNumberValidation": {"NumberFormat": "Local", "CountryCode": "AU"}}}
    e164 = {"InputValidation": {"PhoneNumberValidation": {"NumberFormat": "E164"}}}

    assert stored_input("0412345678#", {**STORE, **local}).value == "+61412345678"
    assert stored_input("15555550100#", {**STORE, **e164}).value == "+15555550100"
    short = stored_input("12#", {**STORE, **local})
    assert (short.value, short.error) == (None, "InvalidPhoneNumber")
    assert stored_input("1555#", {**STORE, **e164}).error == "InvalidPhoneNumber"


def test_each_key_sounds_its_two_dtmf_tones() -> None:
    tones = dtmf_tones("1#")
    tone = round(0.1 * SAMPLE_RATE)
    assert tones.size == 4 * tone
    for start, pair in ((0, (697, 1209)), (2 * tone, (941, 1477))):
        spectrum = np.abs(np.fft.rfft(tones[start : start + tone].astype(float)))
        peaks = sorted(np.argsort(spectrum)[-2:] * SAMPLE_RATE / tone)
        assert all(abs(peak - expected) <= 10 for peak, expected in zip(peaks, pair, strict=True))
    assert not tones[tone : 2 * tone].any()


# -- caller scripts


def test_a_caller_script_reads_every_kind_of_step(tmp_path: Path) -> None:
    (tmp_path / "mine.wav").write_bytes(pcm16_wav_bytes(np.zeros(800, np.int16), SAMPLE_RATE))
    script = tmp_path / "caller.json"
    script.write_text(
        json.dumps(
            {
                "steps": [
                    {"press": "1"},
                    {"say": "I want to pay my bill."},
                    {"clip": "balance"},
                    {"file": "mine.wav", "transcript": "Hello."},
                    "silence",
                    "hangup",
                ],
                "views": {"Confirm": "Next"},
            }
        ),
        encoding="utf-8",
    )

    loaded = load_script(script, voice=StandInSpeechEngine())

    kinds = [type(step) for step in loaded.steps]
    assert kinds == [Press, Say, Say, Say, Silence, HangUp]
    said = [step.clip.transcript for step in loaded.steps if isinstance(step, Say)]
    assert said == ["I want to pay my bill.", "I would like to check my account balance.", "Hello."]
    assert dict(loaded.views) == {"Confirm": "Next"}


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ([{"press": "12a"}], "keys are 0-9"),
        ([{"shout": "hi"}], "unknown step"),
        ([{"clip": "nope"}], "no clip named"),
        ([{"file": "missing.wav", "transcript": "x"}], "missing.wav"),
        ([{"file": "missing.wav"}], "transcript"),
        (["whistle"], "is not"),
    ],
)
def test_a_bad_step_is_named_with_its_number(tmp_path: Path, steps: list[Any], message: str) -> None:
    script = tmp_path / "caller.json"
    script.write_text(json.dumps(["silence", *steps]), encoding="utf-8")

    with pytest.raises(CallerScriptError, match=f"step 2: .*{message}"):
        load_script(script, voice=StandInSpeechEngine())


def test_a_listening_block_takes_the_keys_only_when_they_come_in_time() -> None:
    clock = VirtualClock()
    media = MediaPlane(clock, CallLog())
    caller = SimulatedCaller([Press("42"), Press("7")], pause_s=0.5)

    caller.bot_stopped(1.0, media)
    assert caller.respond(Say) is None
    assert caller.respond(Press, before=1.2) is None
    answer = caller.respond(Press, before=2.0)
    assert answer is not None
    step, start, end = answer
    assert (step, start) == (Press("42"), 1.5)
    assert end == pytest.approx(1.9)
    assert caller.respond(Press) is None


def test_a_caller_who_hangs_up_into_the_bots_next_reply_waits_for_it_then_hangs_up_that_far_in() -> None:
    clock = VirtualClock()
    media = MediaPlane(clock, CallLog())
    caller = SimulatedCaller([HangUp(after_s=2.5)], pause_s=0.5)

    # Not in the quiet after the greeting: during the next reply, two and a half seconds in.
    caller.bot_stopped(1.0, media)
    assert not caller.hung_up(5.0) and caller.next_event(1.0) is None
    caller.bot_started(6.0, media)
    assert caller.next_event(6.0) == 8.5
    assert not caller.hung_up(8.4) and caller.hung_up(8.5)
    # A scenario names it so.
    assert Scenario("hang-up", "", ("hangup@2.5", "hangup")).script({}) == [HangUp(2.5), HangUp()]


def test_the_streaming_callers_hang_up_into_a_reply_comes_that_far_into_the_agents_voice() -> None:
    caller = ScriptedCaller([HangUp(after_s=1.0)], pause_s=0.5)
    slice_bytes = 320  # 20 ms
    at = 0.0
    for heard_agent, seconds in ((False, 2.0), (True, 0.9)):
        for _ in range(round(seconds / 0.02)):
            at += 0.02
            caller.next_slice(at, slice_bytes, agent_heard=heard_agent)
    # Quiet, then 0.9 s of the agent: not yet.
    assert not caller.hung_up
    for _ in range(10):
        at += 0.02
        caller.next_slice(at, slice_bytes, agent_heard=True)
    assert caller.hung_up and not caller.steps


# -- Lex


def test_a_lex_v2_alias_arn_names_the_bot_and_anything_else_does_not() -> None:
    bot = bot_of("arn:aws:lex:us-east-1:123456789012:bot-alias/LOCALBANK1/TSTALIASID")
    assert bot is not None and (bot.bot_id, bot.alias_id, bot.region) == ("LOCALBANK1", "TSTALIASID", "us-east-1")
    assert bot_of("") is None
    assert bot_of("arn:aws:lex:us-east-1:123456789012:bot:LOCALBANK1") is None


def test_the_start_timeout_comes_from_the_most_specific_session_attribute() -> None:
    key = "x-amz-lex:audio:start-timeout-ms"
    assert start_timeout_s({}) == DEFAULT_START_TIMEOUT_S
    assert start_timeout_s({f"{key}:*:*": "10000"}) == 10.0
    assert start_timeout_s({f"{key}:*:*": "10000", f"{key}:PayBill:Amount": "2500"}, "PayBill", "Amount") == 2.5
    assert start_timeout_s({f"{key}:*:*": "soon"}) == DEFAULT_START_TIMEOUT_S


def test_what_a_closed_intent_leaves_in_lex_attributes() -> None:
    answer = {
        "sessionState": {
            "dialogAction": {"type": "Close"},
            "intent": {"name": "PayBill", "slots": {"Amount": {"value": {"interpretedValue": "84"}}, "Note": None}},
            "sessionAttributes": {"LastPayment": "84"},
        },
        "interpretations": [{"intent": {"name": "PayBill"}, "nluConfidence": {"score": 0.91}}],
        "messages": [{"contentType": "SSML", "content": "<speak>Done. <break/>Paid.</speak>"}],
    }

    assert closed(answer) and not closed({"sessionState": {"dialogAction": {"type": "ElicitSlot"}}})
    assert message_text(answer) == "Done. Paid."
    assert lex_attributes(answer) == {
        "IntentName": "PayBill",
        "IntentConfidence": {"Score": "0.91"},
        "Slots": {"Amount": "84"},
        "SessionAttributes": {"LastPayment": "84"},
    }


# -- other flows


def _flow_file(folder: Path, file: str, name: str | None) -> Path:
    document: dict[str, Any] = {
        "Version": "2019-10-30",
        "StartAction": "Bye",
        "Actions": [{"Identifier": "Bye", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}}],
    }
    if name:
        document["Metadata"] = {"name": name}
    path = folder / file
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_library_finds_a_flow_by_file_name_exported_name_arn_or_display_name(tmp_path: Path) -> None:
    first = _flow_file(tmp_path, "3f1c2a9e-0000-4000-8000-00000000000a.json", "Billing")
    second = _flow_file(tmp_path, "Survey.json", None)
    loads: list[Path] = []

    def load(path: Path) -> Any:
        loads.append(path)
        return path

    library = FlowLibrary([tmp_path], load)

    def found(reference: str, names: tuple[str, ...] = ()) -> Path | None:
        hit = library.find(reference, names=names)
        return None if hit is None else hit[0]

    arn = "arn:aws:connect:us-east-1:123456789012:instance/i/contact-flow/3f1c2a9e-0000-4000-8000-00000000000a"

    assert found("Billing") == first
    assert found(arn) == first
    assert found("arn:aws:connect:us-east-1:123456789012:instance/i/flow-module/Survey:3") == second
    assert found("{{contactFlows.Survey.arn}}", names=("Survey",)) == second
    assert found("elsewhere") is None
    assert loads == [first, second]
    assert len(library) == 2


def test_display_names_come_from_the_consoles_action_metadata() -> None:
    flow = parse_flow(
        {
            "Version": "2019-10-30",
            "StartAction": "Go",
            "Metadata": {
                "ActionMetadata": {
                    "Go": {"ContactFlow": {"id": "", "text": "SEB - Journey"}},
                    "Module": {
                        "parameters": {"FlowModuleId": {"displayName": "Contact Survey"}},
                        "contactFlowModuleName": "Contact Survey",
                    },
                }
            },
            "Actions": [
                {
                    "Identifier": "Go",
                    "Type": "TransferToFlow",
                    "Parameters": {"ContactFlowId": "SEB - Journey"},
                    "Transitions": {
                        "NextAction": "Bye",
                        "Errors": [{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
                    },
                },
                {"Identifier": "Bye", "Type": "DisconnectParticipant", "Parameters": {}, "Transitions": {}},
            ],
        }
    )

    assert display_names(flow, "Go") == ["SEB - Journey"]
    assert display_names(flow, "Module") == ["Contact Survey", "Contact Survey"]
    assert display_names(flow, "Nothing") == []


def test_a_describe_contact_flow_answer_is_known_by_its_name_id_and_arn(tmp_path: Path) -> None:
    flow_id = "7d1e5f00-0000-4000-8000-000000000042"
    arn = f"arn:aws:connect:us-east-1:123456789012:instance/i/contact-flow/{flow_id}"
    content = {"Version": "2019-10-30", "StartAction": "Bye", "Metadata": {"name": "Billing v2"}, "Actions": []}
    answer = {"ContactFlow": {"Arn": arn, "Id": flow_id, "Name": "Billing", "Content": json.dumps(content)}}
    path = tmp_path / "described.json"
    path.write_text(json.dumps(answer), encoding="utf-8")
    library = FlowLibrary([tmp_path], lambda given: given)  # type: ignore[arg-type,return-value]

    for reference in ("Billing", "Billing v2", flow_id, arn, "described"):
        found = library.find(reference)
        assert found is not None and found[0] == path, reference
