"""The emulator of Connect's A2A client against hand-written fake agents on 127.0.0.1.

Each contract rule has a fake agent that breaks it and a test that the emulator names it; a well-behaved agent's
session passes. Sessions are short: READY at once, little or no caller audio, a short linger after FINISH.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from tests.dev.integration.a2a_agents import API_KEY, EXT, Agent, Behaviour, event_type_of, is_audio, serving, tone
from voicebridge_dev.local.a2a import (
    Action,
    AgentFrameChecker,
    ConnectSettings,
    ContractViolation,
    Dtmf,
    Fragmented,
    HangUp,
    InformationalError,
    Interrupt,
    Probe,
    Rule,
    SessionResult,
    SilenceMarker,
    UpgradeRejected,
    run_session,
)

pytestmark = pytest.mark.timeout(20)

SETTINGS = ConnectSettings(
    api_key=API_KEY, input_rate=8000, output_rate=16000, finish_linger_s=0.05, max_duration_s=5.0, init_timeout_s=2.0
)
GREETING = tone(0.2, 16000)


def session(
    behaviour: Behaviour,
    settings: ConnectSettings = SETTINGS,
    *,
    caller_audio: bytes = b"",
    script: Sequence[Action] = (),
    echo: bool = True,
) -> SessionResult:
    async def main() -> SessionResult:
        async with serving(behaviour, echo=echo) as url:
            return await run_session(url, settings, caller_audio=caller_audio, script=script)

    return asyncio.run(main())


def broken_rules(behaviour: Behaviour, settings: ConnectSettings = SETTINGS, **kwargs: Any) -> set[Rule]:
    with pytest.raises(ContractViolation) as raised:
        session(behaviour, settings, **kwargs)
    return raised.value.rules


def warnings_of(result: SessionResult) -> set[Rule]:
    return {v.rule for v in result.violations if v.is_warning}


async def greet_and_finish(agent: Agent, finish: str = "COMPLETE") -> None:
    await agent.accept()
    await agent.turn("task-1", "greeting", GREETING, finish=finish)


# A well-behaved agent.


def test_a_well_behaved_agent_session_passes_and_hands_back_complete() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.turn("task-1", "greeting", GREETING)
        while not is_audio(await a.next_frame()):
            pass
        await a.turn("task-2", "answer", tone(0.2, 16000, 330.0), finish="COMPLETE")

    result = session(agent)

    assert result.outcome == "finished"
    assert result.errors == []
    assert (result.finish.type if result.finish else None) == "COMPLETE"
    assert result.flow_tool == "Complete"
    assert [t.state for t in result.turns] == ["TASK_STATE_COMPLETED", "TASK_STATE_COMPLETED"]
    assert len(result.traces) == 2


def test_the_caller_hears_all_of_the_agents_audio_resampled_to_8_khz() -> None:
    result = session(greet_and_finish)

    heard = sum(block.agent_samples for block in result.recording.blocks)
    assert heard == pytest.approx(0.2 * 8000, abs=40)
    assert [e.detail["reason"] for e in result.timeline.of("playback_stop")] == ["complete"]


# The upgrade and the session's start.


def test_a_wrong_key_is_reported_as_the_agents_401() -> None:
    with pytest.raises(UpgradeRejected) as raised:
        session(greet_and_finish, replace(SETTINGS, api_key="wrong-key"))
    assert raised.value.status == 401


def test_the_upgrade_carries_connects_headers() -> None:
    seen: dict[str, str] = {}

    async def agent(a: Agent) -> None:
        assert a.ws.request is not None
        seen.update(a.ws.request.headers.raw_items())
        await greet_and_finish(a)

    session(agent)

    assert seen["Authorization"] == f"Bearer {API_KEY}"
    assert seen["A2A-Extensions"] == EXT
    assert seen["traceparent"].startswith("00-")
    assert seen["tracestate"].startswith("connect=parentSpanId:")


def test_an_upgrade_that_does_not_echo_the_extension_is_a_violation() -> None:
    assert Rule.EXTENSION_NOT_ECHOED in broken_rules(greet_and_finish, echo=False)


def test_init_session_proposes_the_configured_rates_finish_types_and_an_empty_history() -> None:
    inits: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await greet_and_finish(a)
        inits.append(a.init)

    settings = replace(SETTINGS, input_rate=16000, output_rate=24000, finish_types=("COMPLETE", "ESCALATE"))
    session(agent, settings)

    init = inits[0]["params"]["message"]["parts"][0]["data"]["initSession"]
    assert inits[0]["method"] == "SendMessage"
    assert init["audioInputConfiguration"]["sampleRateHertz"] == 16000
    assert init["audioOutputConfiguration"]["sampleRateHertz"] == 24000
    assert init["supportedFinishTypes"] == ["COMPLETE", "ESCALATE"]
    assert init["history"] == []


def test_a_counter_proposed_output_rate_is_the_sessions_output_rate() -> None:
    async def agent(a: Agent) -> None:
        config = {"encoding": "LINEAR_PCM", "sampleRateHertz": 24000, "sampleSizeBits": 16, "channelCount": 1}
        await a.accept(audioOutputConfiguration=config)
        await a.turn("task-1", "greeting", tone(0.2, 24000), finish="COMPLETE")

    result = session(agent)

    assert result.audio_output is not None and result.audio_output.sample_rate == 24000
    assert sum(block.agent_samples for block in result.recording.blocks) == pytest.approx(1600, abs=40)


def test_a_counter_proposal_outside_the_supported_rates_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        config = {"encoding": "LINEAR_PCM", "sampleRateHertz": 44100, "sampleSizeBits": 16, "channelCount": 1}
        await a.accept(audioOutputConfiguration=config)

    assert Rule.COUNTER_PROPOSAL_INVALID in broken_rules(agent)


def test_a_partial_counter_proposal_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept(audioOutputConfiguration={"sampleRateHertz": 24000})

    assert Rule.COUNTER_PROPOSAL_INVALID in broken_rules(agent)


def test_an_init_response_not_echoing_the_request_id_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.read_init()
        await a.send(a.init_response(frame_id="not-the-id"))

    assert Rule.REPLY_ID_MISMATCH in broken_rules(agent)


def test_a_numeric_status_code_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.read_init()
        await a.send(a.init_response(status=200))

    assert Rule.INIT_RESPONSE_INVALID in broken_rules(agent)


def test_a_status_other_than_200_refuses_the_handoff() -> None:
    async def agent(a: Agent) -> None:
        await a.read_init()
        await a.send(a.init_response(status="503"))

    result = session(agent)

    assert result.outcome == "init_refused"
    assert result.init_status == "503"


def test_output_before_ready_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.read_init()
        await a.send(a.init_response())
        await a.speak("task-1", "greeting", GREETING)

    assert Rule.OUTPUT_BEFORE_READY in broken_rules(agent, replace(SETTINGS, ready_delay_s=0.3))


def test_ready_follows_init_after_the_configured_delay() -> None:
    order: list[str | None] = []

    async def agent(a: Agent) -> None:
        await a.read_init()
        await a.send(a.init_response())
        order.append(event_type_of(await a.next_frame()))
        await a.turn("task-1", "greeting", GREETING, finish="COMPLETE")

    result = session(agent, replace(SETTINGS, ready_delay_s=0.1))

    assert order == ["CHANNEL_STATE"]
    assert result.timeline.of("ready")[0].at == 0.0
    assert result.timeline.of("init_response")[0].at < 0.0


# The caller's audio.


def test_the_callers_audio_reaches_the_agent_in_20_ms_slices_unchanged_at_8_khz() -> None:
    caller = tone(0.1, 8000, 200.0)
    slices: list[bytes] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        while len(slices) < 5:
            frame = await a.next_frame()
            if is_audio(frame):
                slices.append(base64.b64decode(frame["params"]["message"]["parts"][0]["raw"]))
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    session(agent, caller_audio=caller)

    assert [len(s) for s in slices] == [320] * 5
    assert b"".join(slices) == caller


def test_the_callers_audio_is_resampled_to_the_negotiated_input_rate() -> None:
    sizes: list[int] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        while len(sizes) < 3:
            frame = await a.next_frame()
            if is_audio(frame):
                sizes.append(len(base64.b64decode(frame["params"]["message"]["parts"][0]["raw"])))
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    session(agent, replace(SETTINGS, input_rate=16000), caller_audio=tone(0.1, 8000))

    assert sum(sizes) == pytest.approx(3 * 640, abs=64)


# Frames.


def test_a_result_holding_two_events_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.chunk("task-1", "greeting", GREETING, append=False)
        frame["result"]["message"] = a.interruption()["result"]["message"]
        await a.send(frame)

    assert Rule.RESULT_SHAPE in broken_rules(agent)


def test_an_empty_acknowledgement_of_connects_request_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send({"jsonrpc": "2.0", "id": a.received[-1]["id"], "result": {}})

    assert Rule.RESULT_SHAPE in broken_rules(agent)


def test_a_wrong_event_type_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING, append=False, event_type="AUDIO_CHUNK"))

    assert Rule.EVENT_TYPE in broken_rules(agent)


def test_a_binary_frame_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(GREETING)

    assert Rule.BINARY_FRAME in broken_rules(agent)


def test_a_frame_that_is_not_json_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send("{not json")

    assert Rule.MALFORMED_FRAME in broken_rules(agent)


def test_a_request_from_the_agent_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send({"jsonrpc": "2.0", "method": "SendMessage", "id": "a-1", "params": {}})

    assert Rule.UNEXPECTED_REQUEST in broken_rules(agent)


def test_a_message_with_the_users_role_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.interruption()
        frame["result"]["message"]["role"] = "ROLE_USER"
        await a.send(frame)

    assert Rule.WRONG_ROLE in broken_rules(agent)


def test_another_sessions_context_id_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.chunk("task-1", "greeting", GREETING, append=False)
        frame["result"]["artifactUpdate"]["contextId"] = "another-session"
        await a.send(frame)

    assert Rule.CONTEXT_MISMATCH in broken_rules(agent)


def test_a_chunk_without_a_task_id_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.chunk("task-1", "greeting", GREETING, append=False)
        del frame["result"]["artifactUpdate"]["taskId"]
        await a.send(frame)

    assert Rule.MISSING_TASK_ID in broken_rules(agent)


def test_a_json_rpc_error_for_connects_request_fails_the_session() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        ready = a.received[-1]
        await a.send({"jsonrpc": "2.0", "id": ready["id"], "error": {"code": -32603, "message": "internal"}})

    assert Rule.JSONRPC_ERROR in broken_rules(agent)


# Audio chunks and artifacts.


def test_a_chunk_over_the_frame_budget_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", tone(0.6, 16000), piece=19_200)

    assert Rule.FRAME_OVER_BUDGET in broken_rules(agent)


def test_odd_length_pcm_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING[:-1], append=False))

    assert Rule.AUDIO_ODD_LENGTH in broken_rules(agent)


def test_pcm_that_is_not_base64_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.chunk("task-1", "greeting", GREETING, append=False)
        frame["result"]["artifactUpdate"]["artifact"]["parts"][0]["raw"] = "not base64!"
        await a.send(frame)

    assert Rule.AUDIO_NOT_BASE64 in broken_rules(agent)


def test_an_audio_chunk_with_a_text_part_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.chunk("task-1", "greeting", GREETING, append=False)
        frame["result"]["artifactUpdate"]["artifact"]["parts"] = [{"text": "hello", "mediaType": "text/plain"}]
        await a.send(frame)

    assert Rule.AUDIO_PART_INVALID in broken_rules(agent)


def test_a_first_chunk_that_appends_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING, append=True, last=True))

    assert Rule.FIRST_CHUNK_APPENDS in broken_rules(agent)


def test_a_continuation_that_does_not_append_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING, append=False))
        await a.send(a.chunk("task-1", "greeting", GREETING, append=False, last=True))

    assert Rule.CONTINUATION_NOT_APPENDED in broken_rules(agent)


def test_a_new_artifact_before_the_last_one_ended_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "sentence-1", GREETING, append=False))
        await a.send(a.chunk("task-1", "sentence-2", GREETING, append=False, last=True))

    assert Rule.OVERLAPPING_ARTIFACT in broken_rules(agent)


def test_a_new_artifact_after_the_agents_interruption_is_fine() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "sentence-1", GREETING, append=False))
        await a.send(a.interruption())
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1"))
        await a.turn("task-2", "sentence-2", GREETING, finish="COMPLETE")

    assert session(agent).errors == []


def test_a_last_chunk_after_the_agents_interruption_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "sentence-1", GREETING, append=False))
        await a.send(a.interruption())
        await a.send(a.chunk("task-1", "sentence-1", b"", append=True, last=True))

    assert Rule.CHUNK_AFTER_INTERRUPTION in broken_rules(agent)


def test_reusing_an_interrupted_artifact_id_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "sentence-1", GREETING, append=False))
        await a.send(a.interruption())
        await a.send(a.chunk("task-2", "sentence-1", GREETING, append=False, last=True))

    assert Rule.INTERRUPTED_ARTIFACT_REUSED in broken_rules(agent)


def test_a_chunk_after_the_last_chunk_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING, append=False, last=True))
        await a.send(a.chunk("task-1", "greeting", GREETING, append=True, last=True))

    assert Rule.CHUNK_AFTER_LAST in broken_rules(agent)


def test_reusing_a_finished_artifact_id_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.turn("task-1", "reply", GREETING)
        await a.send(a.chunk("task-2", "reply", GREETING, append=False, last=True))

    assert Rule.ARTIFACT_REUSED in broken_rules(agent)


def test_ending_a_turn_with_an_artifact_left_open_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING, last=False)
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1"))

    assert Rule.ARTIFACT_LEFT_OPEN in broken_rules(agent)


def test_audio_sent_in_fragments_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        for piece in a.fragments(a.chunk("task-1", "greeting", GREETING, append=False, last=True)):
            await a.send(piece)

    assert Rule.FRAGMENTED_AUDIO in broken_rules(agent)


def test_a_trace_sent_in_fragments_is_reassembled() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        for piece in a.fragments(a.trace("task-1")):
            await a.send(piece)
        await a.send(a.status("task-1", finish="COMPLETE"))

    result = session(agent)

    assert result.errors == []
    assert len(result.traces) == 1


def test_a_fragment_set_that_never_completes_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.fragments(a.trace("task-1"))[0])
        await a.send(a.status("task-1", finish="COMPLETE"))

    assert Rule.FRAGMENT_INVALID in broken_rules(agent, replace(SETTINGS, subscribe_traces=False))


def test_text_chunks_in_an_audio_session_are_a_warning() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        frame = a.chunk("task-1", "caption", b"", append=False, last=True, event_type="TEXT_RESPONSE_CHUNK")
        frame["result"]["artifactUpdate"]["artifact"]["parts"] = [{"text": "hello", "mediaType": "text/plain"}]
        await a.send(frame)
        await a.turn("task-1", "greeting", GREETING, finish="COMPLETE")

    assert warnings_of(session(agent)) == {Rule.TEXT_IN_AUDIO_SESSION}


# Traces, turns and FINISH.


def test_a_trace_after_the_terminal_status_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.turn("task-1", "greeting", GREETING)
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-2", finish="COMPLETE"))

    assert Rule.TRACE_AFTER_TERMINAL in broken_rules(agent)


def test_a_second_trace_on_a_turn_is_ignored_with_a_warning() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.trace("task-1"))
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    result = session(agent)

    assert warnings_of(result) == {Rule.SECOND_TRACE}
    assert len(result.traces) == 1


def test_a_span_without_an_end_time_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "invoke_agent fake", "startTimeUnixNano": "1"}
        await a.send(a.trace("task-1", span=span))
        await a.send(a.status("task-1", finish="COMPLETE"))

    assert Rule.TRACE_INCOMPLETE in broken_rules(agent)


def test_a_turn_without_a_trace_is_a_violation_when_connect_subscribed() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.status("task-1", finish="COMPLETE"))

    assert Rule.TRACE_MISSING in broken_rules(agent)


def test_a_trace_connect_did_not_subscribe_to_is_a_warning() -> None:
    result = session(greet_and_finish, replace(SETTINGS, subscribe_traces=False))

    assert warnings_of(result) == {Rule.TRACE_NOT_SUBSCRIBED}


def test_a_terminal_status_for_another_task_than_the_turns_chunks_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-9", finish="COMPLETE"))

    assert Rule.TASK_MISMATCH in broken_rules(agent)


def test_a_chunk_for_a_task_that_ended_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.turn("task-1", "greeting", GREETING)
        await a.send(a.chunk("task-1", "more", GREETING, append=False, last=True))

    assert Rule.EVENT_AFTER_TERMINAL in broken_rules(agent)


@pytest.mark.parametrize("state", ["TASK_STATE_CANCELED", "TASK_STATE_REJECTED", "TASK_STATE_INPUT_REQUIRED"])
def test_a_task_state_connect_lists_as_unsupported_is_a_violation(state: str) -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", state=state))

    assert Rule.UNSUPPORTED_TASK_STATE in broken_rules(agent)


def test_a_working_status_is_ignored_with_a_warning() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.status("task-1", state="TASK_STATE_WORKING"))
        await a.turn("task-1", "greeting", GREETING, finish="COMPLETE")

    assert warnings_of(session(agent)) == {Rule.NON_TERMINAL_STATUS}


def test_a_failed_turn_with_an_unknown_error_category_is_fine() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.trace("task-1"))
        error = {"errorCode": 424, "errorReason": "speech service down", "errorCategory": "SOMETHING_NEW"}
        await a.send(a.status("task-1", state="TASK_STATE_FAILED", error=error))
        await a.send(a.message({"finish": {"type": "COMPLETE_WITH_ERROR", "reason": "speech failed"}}, "FINISH"))

    result = session(agent)

    assert result.errors == []
    assert result.turns[0].error == {
        "errorCode": 424,
        "errorReason": "speech service down",
        "errorCategory": "SOMETHING_NEW",
    }
    assert result.flow_tool is None


def test_a_failed_turn_without_an_error_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "greeting", GREETING)
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", state="TASK_STATE_FAILED"))

    assert Rule.FAILED_WITHOUT_ERROR in broken_rules(agent)


def test_a_finish_type_not_offered_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await greet_and_finish(a, "COMPLETE")

    assert Rule.FINISH_TYPE_NOT_OFFERED in broken_rules(agent, replace(SETTINGS, finish_types=("ESCALATE",)))


def test_a_finish_without_a_type_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.message({"finish": {"reason": "bye"}}, "FINISH"))

    assert Rule.FINISH_INVALID in broken_rules(agent)


def test_escalate_hands_back_to_the_flows_escalate_branch() -> None:
    result = session(lambda a: greet_and_finish(a, "ESCALATE"))

    assert result.flow_tool == "Escalate"
    assert result.finish is not None and result.finish.reason == "done"


def test_anything_after_finish_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await greet_and_finish(a)
        await a.send(a.chunk("task-2", "encore", GREETING, append=False, last=True))

    assert Rule.SENT_AFTER_FINISH in broken_rules(agent, replace(SETTINGS, finish_linger_s=0.3))


# Interruptions, DTMF, silence, fragments, probes and the end of the call.


def test_the_agents_interruption_flushes_what_the_caller_has_not_heard() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "long-reply", tone(2.0, 16000), last=False)
        await asyncio.sleep(0.2)
        await a.send(a.interruption())
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    result = session(agent)

    heard_s = sum(block.agent_samples for block in result.recording.blocks) / 8000
    assert heard_s < 1.5
    assert [e.detail["reason"] for e in result.timeline.of("playback_stop")] == ["agent_interruption"]
    started, interruption = result.timeline.of("playback_start")[0], result.timeline.of("interruption")[0]
    stopped = result.recording.audio_stopped_after(started.at)
    assert stopped is not None and started.at < stopped <= interruption.at + SETTINGS.block_ms / 1000


def test_keys_pressed_while_the_agent_speaks_interrupt_before_the_digits() -> None:
    events: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "long-reply", tone(1.0, 16000))
        events.append(await a.next_event())
        events.append(await a.next_event())
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    result = session(agent, script=[Dtmf(at_s=0.1, digits="1234#")])

    assert [event_type_of(e) for e in events] == ["INTERRUPTION", "DTMF_INPUT_COMPLETE"]
    assert events[0]["params"]["message"]["parts"][0]["data"]["interruption"]["type"] == "DTMF_INPUT"
    digits = events[1]["params"]["message"]["parts"][0]["data"]["dtmfInputComplete"]
    assert digits == {"inputString": "1234#", "terminationReason": "END_CHARACTER"}
    assert result.timeline.of("playback_stop")[0].detail["reason"] == "connect_interruption"


def test_keys_pressed_while_the_agent_is_silent_send_only_the_digits() -> None:
    events: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        events.append(await a.next_event())
        await a.turn("task-1", "reply", GREETING, finish="COMPLETE")

    session(agent, script=[Dtmf(at_s=0.05, digits="42", termination="TIMEOUT")])

    assert [event_type_of(e) for e in events] == ["DTMF_INPUT_COMPLETE"]


def test_the_silence_marker_is_a_text_turn() -> None:
    events: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        events.append(await a.next_event())
        await a.turn("task-1", "reprompt", GREETING, finish="COMPLETE")

    session(agent, script=[SilenceMarker(at_s=0.05)])

    message = events[0]["params"]["message"]
    assert message["parts"] == [{"text": "<EMPTY_USER_INPUT>", "mediaType": "text/plain"}]
    assert message["metadata"] == {}


def test_connects_informational_error_carries_the_extension() -> None:
    events: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        events.append(await a.next_event("ERROR"))
        await a.turn("task-1", "reply", GREETING, finish="COMPLETE")

    session(agent, script=[InformationalError(at_s=0.05)])

    message = events[0]["params"]["message"]
    assert message["extensions"] == [EXT]
    assert message["parts"][0]["data"]["error"]["errorCategory"] == "BAD_REQUEST"


def test_fragments_from_connect_reassemble_into_the_original_request() -> None:
    pieces: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        while not pieces or len(pieces) < pieces[0]["params"]["message"]["parts"][0]["data"]["fragment"]["totalParts"]:
            pieces.append(await a.next_event("FRAGMENT"))
        await a.turn("task-1", "reply", GREETING, finish="COMPLETE")

    session(agent, script=[Fragmented(Dtmf(at_s=0.05, digits="9876#"), piece_chars=100)])

    bodies = sorted(
        (p["params"]["message"]["parts"][0]["data"]["fragment"] for p in pieces), key=lambda f: f["partNumber"]
    )
    original = json.loads(base64.b64decode("".join(f["payload"] for f in bodies)))
    assert len(bodies) > 1
    assert {p["id"] for p in pieces} == {original["id"]}
    assert original["params"]["message"]["parts"][0]["data"]["dtmfInputComplete"]["inputString"] == "9876#"


def test_connects_own_interruption_drops_chunks_still_in_flight_with_a_warning() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "reply", tone(1.0, 16000), last=False)
        await a.next_event("INTERRUPTION")
        await a.send(a.chunk("task-1", "reply", GREETING, append=True, last=True))
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    result = session(agent, script=[Interrupt(at_s=0.1)])

    assert warnings_of(result) == {Rule.LATE_CHUNK_AFTER_CONNECT_INTERRUPTION}
    assert result.timeline.of("interruption")[0].detail["by"] == "connect"


def test_probes_answered_with_json_rpc_errors_leave_the_session_intact() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        while not (isinstance(raw := await a.ws.recv(), str) and raw.startswith('{"jsonrpc"') and raw.endswith(": ")):
            pass
        await a.send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}})
        while (frame := await a.next_frame()).get("method") != "ReticulateSplines":
            pass
        await a.send({"jsonrpc": "2.0", "id": frame["id"], "error": {"code": -32601, "message": "no such method"}})
        await a.turn("task-1", "reply", GREETING, finish="COMPLETE")

    probes = [Probe(at_s=0.0, kind="malformed_json"), Probe(at_s=0.05, kind="unknown_method")]
    result = session(agent, script=probes)

    assert result.errors == []
    assert sorted((p.probe, p.code) for p in result.probes) == [("malformed_json", -32700), ("unknown_method", -32601)]


def test_a_probe_left_unanswered_is_a_violation() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        while True:
            frame = await a.next_frame()
            if frame.get("method") == "ReticulateSplines":
                break
        await a.turn("task-1", "reply", GREETING, finish="COMPLETE")

    assert Rule.PROBE_UNANSWERED in broken_rules(agent, script=[Probe(at_s=0.0, kind="unknown_method")])


def test_a_hang_up_drops_the_socket_without_a_closing_handshake() -> None:
    closed: list[int | None] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        try:
            while True:
                await a.ws.recv()
        except Exception:
            closed.append(a.ws.close_code)

    result = session(agent, script=[HangUp(at_s=0.05)])

    assert result.outcome == "hung_up"
    assert closed == [1006]


def test_an_agent_that_closes_without_finish_ends_the_session_without_an_outcome() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.ws.close(1011, "crashed")

    result = session(agent)

    assert result.outcome == "agent_closed"
    assert result.close_code == 1011
    assert result.flow_tool is None


def test_an_agent_silent_past_the_idle_window_gets_connects_timeout_error() -> None:
    events: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        events.append(await a.next_event("ERROR"))

    result = session(agent, replace(SETTINGS, idle_timeout_s=0.2))

    assert result.outcome == "idle_timeout"
    assert events[0]["params"]["message"]["parts"][0]["data"]["error"]["errorCode"] == 408


def test_a_lenient_session_records_violations_without_raising() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING, append=True, last=True))
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1", finish="COMPLETE"))

    result = session(agent, replace(SETTINGS, strict=False))

    assert result.outcome == "finished"
    assert [v.rule for v in result.errors] == [Rule.FIRST_CHUNK_APPENDS]


def test_a_strict_session_tells_the_agent_why_it_closes() -> None:
    events: list[dict[str, Any]] = []

    async def agent(a: Agent) -> None:
        await a.accept()
        await a.send(a.chunk("task-1", "greeting", GREETING, append=True, last=True))
        events.append(await a.next_event("ERROR"))

    with pytest.raises(ContractViolation) as raised:
        session(agent)

    assert raised.value.result is not None and raised.value.result.outcome == "violation"
    error = events[0]["params"]["message"]["parts"][0]["data"]["error"]
    assert (error["errorCode"], error["errorCategory"]) == (400, "BAD_REQUEST")
    assert "first_chunk_appends" in error["errorReason"]


def test_probes_that_need_no_answer_pass_unanswered() -> None:
    async def agent(a: Agent) -> None:
        await a.accept()
        await asyncio.sleep(0.2)
        await a.turn("task-1", "reply", GREETING, finish="COMPLETE")

    probes = [Probe(at_s=0.0, kind=kind) for kind in ("unknown_event_type", "oversized", "binary")]
    result = session(agent, script=probes)

    assert result.outcome == "finished"
    assert result.errors == []


def test_the_recording_measures_the_caller_talking_over_the_agent() -> None:
    voiced_at = 0.3
    caller = bytes(int(8000 * voiced_at) * 2) + tone(0.5, 8000, 180.0)

    async def agent(a: Agent) -> None:
        await a.accept()
        await a.speak("task-1", "long-reply", tone(3.0, 16000), last=False)
        while True:
            frame = await a.next_frame()
            if is_audio(frame) and any(base64.b64decode(frame["params"]["message"]["parts"][0]["raw"])):
                break
        await a.send(a.interruption())
        await a.send(a.trace("task-1"))
        await a.send(a.status("task-1"))
        await asyncio.sleep(0.2)
        await a.turn("task-2", "answer", GREETING, finish="COMPLETE")

    result = session(agent, caller_audio=caller)

    stopped = result.recording.audio_stopped_after(voiced_at)
    interruption = result.timeline.of("interruption")[0]
    assert stopped is not None and voiced_at < stopped <= interruption.at + SETTINGS.block_ms / 1000
    assert [e.detail["artifact"] for e in result.timeline.of("playback_start")] == ["long-reply", "answer"]


def test_an_error_inside_the_emulator_is_raised_not_taken_for_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_feed(self: AgentFrameChecker, frame: str | bytes, now: float) -> list[Any]:
        raise RuntimeError("checker bug")

    monkeypatch.setattr(AgentFrameChecker, "feed", broken_feed)

    with pytest.raises(RuntimeError, match="checker bug"):
        session(greet_and_finish)
