"""An Amazon Connect emulator for local runs: a flow simulator, a simulated caller, what a call leaves behind.

It runs an exported contact flow (flow language 2019-10-30) for one inbound voice call on the local cloud —
Lambda blocks through the Lambda emulator, prompts from the local S3, media streamed to the KVS emulator —
while a scripted caller speaks recorded utterances. It emulates Connect's flow engine; it is not Connect.

>>> caller = SimulatedCaller(SCENARIOS["normal"].script(load_clips()))  # doctest: +SKIP
>>> result = simulate_call("contact_flows/voice-agent.json", template_path="template.yaml",  # doctest: +SKIP
...                        env=env, kvs=cloud.kvs, voice=engine, caller=caller, clock=VirtualClock())
>>> print(latency_table(result))  # doctest: +SKIP
"""

from voicebridge_dev.simulator.caller import (
    SCENARIOS,
    CallerScriptError,
    Clip,
    HangUp,
    Say,
    Scenario,
    Silence,
    SimulatedCaller,
    Step,
    UnknownScenarioError,
    find_scenario,
    load_clips,
)
from voicebridge_dev.simulator.clock import Clock, RealClock, VirtualClock
from voicebridge_dev.simulator.contact import LOCAL_QUEUE_ID, Contact, local_queue_arn
from voicebridge_dev.simulator.engine import (
    CHAIN_BUDGET_S,
    CallResult,
    FlowRuntimeError,
    FlowSimulator,
    LoadedFlow,
    SimulatorError,
    UnsupportedActionError,
    load_flow_for_simulation,
    simulate_call,
)
from voicebridge_dev.simulator.events import BOT, CALLER, CallLog, Segment
from voicebridge_dev.simulator.picture import timeline_png
from voicebridge_dev.simulator.records import CallRecords, StoredSegment, StoredTurn
from voicebridge_dev.simulator.report import (
    LATENCIES,
    LiveTimeline,
    ReplySegment,
    TurnFigures,
    build_report,
    latency_table,
    summary,
    transcript,
    turn_figures,
    turn_story,
)

__all__ = [
    "BOT",
    "CALLER",
    "CHAIN_BUDGET_S",
    "LATENCIES",
    "LOCAL_QUEUE_ID",
    "SCENARIOS",
    "CallLog",
    "CallRecords",
    "CallResult",
    "CallerScriptError",
    "Clip",
    "Clock",
    "Contact",
    "FlowRuntimeError",
    "FlowSimulator",
    "HangUp",
    "LiveTimeline",
    "LoadedFlow",
    "RealClock",
    "ReplySegment",
    "Say",
    "Scenario",
    "Segment",
    "Silence",
    "SimulatedCaller",
    "SimulatorError",
    "Step",
    "StoredSegment",
    "StoredTurn",
    "TurnFigures",
    "UnknownScenarioError",
    "UnsupportedActionError",
    "VirtualClock",
    "build_report",
    "find_scenario",
    "latency_table",
    "load_clips",
    "load_flow_for_simulation",
    "local_queue_arn",
    "simulate_call",
    "summary",
    "timeline_png",
    "transcript",
    "turn_figures",
    "turn_story",
]
