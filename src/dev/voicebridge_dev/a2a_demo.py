"""``voicebridge demo --transport a2a``: the demo's call on the streaming transport.

The same scenarios, local cloud, responder, Sonic and Ink as the flows path's demo; instead of the flow simulator
playing Connect's contact flow, the Connect A2A client emulator (:mod:`voicebridge_dev.local.a2a`) plays Connect's
external-AI-agent session against ``python -m voicebridge.a2a`` (:class:`~voicebridge_dev.local.agent.LocalAgent`).
The caller (:class:`ScriptedCaller`) listens as the flows path's simulated caller does: each line once the agent
has answered and been quiet for the pause, or — an :class:`~voicebridge_dev.simulator.caller.Over` step — a set
time into the agent's next reply, talking over it.

The report has the flows path's keys (:func:`~voicebridge_dev.simulator.report.turn_entry`), built from the same
records of the product (the turn table) and from what the caller heard (the emulator's recording): a reply's
segment is *delivered* when Connect received its first audio and *played* when the caller heard it. On this path
``sonic_first_segment`` is Sonic's time to its first audio (the sentence is heard as it is made, not stored first),
so ``bridge`` is what the agent adds between Ink's turn end and the caller hearing Sonic's first chunk.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from voicebridge.audio.wav import pcm16_wav_bytes
from voicebridge.redaction import Redactor
from voicebridge_dev.local.a2a import ConnectSettings, SessionResult, run_session
from voicebridge_dev.local.a2a.redial import said_in_order
from voicebridge_dev.local.agent import LocalAgent
from voicebridge_dev.local.cloud import CloudBase
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID
from voicebridge_dev.simulator.agent import SESSION_LIMIT_S, ScriptedCaller, SessionClock, Utterance
from voicebridge_dev.simulator.caller import Step
from voicebridge_dev.simulator.line import LineNoise
from voicebridge_dev.simulator.records import CallRecords, read_records
from voicebridge_dev.simulator.report import ReplySegment, TurnFigures, figures_table, summary, turn_entry
from voicebridge_dev.template import LOCAL_ACCOUNT, local_physical_id

RATE = 8000
INSTANCE_ARN = f"arn:aws:connect:us-east-1:{LOCAL_ACCOUNT}:instance/{EMULATED_INSTANCE_ID}"
"""Every demo contact is one of the Connect emulator's instance, as a contact Connect hands over is one of its
instance's: the agent reads the contact's attributes and writes its hand-over note there (UpdateContactAttributes
on any other instance is ResourceNotFoundException)."""
SILENCE_MARKER_AFTER_S = 7.0
"""When the emulated Connect sends its silence marker: its threshold is unpublished; the flows path's voice agent asks
whether anyone is there after as long (one ConverseFunction wait)."""


@dataclass(frozen=True)
class StreamingCall:
    """A finished streaming call: what Connect saw, what the caller said, what the product recorded."""

    contact_id: str
    session: SessionResult
    said: Sequence[Utterance]
    records: CallRecords
    violations: Sequence[str]
    record: bytes | None = None
    """The call record the product stored (None if none came)."""
    attributes: Mapping[str, str] | None = None
    """The contact's attributes once the agent handed back: its hand-over note for the flow and the person next."""


def place_streaming_call(
    cloud: CloudBase,
    steps: list[Step],
    agent_env: Mapping[str, str],
    *,
    template: Path,
    output_rate: int = 16000,
    line: LineNoise | None = None,
    attributes: Mapping[str, str] | None = None,
) -> StreamingCall:
    """One contact on the streaming transport, start to end, on a started local cloud; ``line`` the noise on the
    caller's line; ``attributes`` are set on the contact first, on the Connect emulator's instance, as a flow before
    the agent would set them."""
    caller = ScriptedCaller(list(steps), line=line)
    contact_id = str(uuid.uuid4())
    if attributes:
        cloud.set_contact_attributes(contact_id, attributes)
    with LocalAgent(cloud, template, env=agent_env) as agent:
        settings = ConnectSettings(
            api_key=agent.api_key,
            output_rate=output_rate,
            max_duration_s=SESSION_LIMIT_S,
            strict=False,
            instance_arn=INSTANCE_ARN,
            contact_arn=f"{INSTANCE_ARN}/contact/{contact_id}",
            silence_marker_after_s=SILENCE_MARKER_AFTER_S,
        )
        session = asyncio.run(run_session(agent.url, settings, caller_audio=caller))
        record = cloud.call_record(contact_id)
        handed_over = cloud.contact_attributes(contact_id)
    started = session.timeline.started_at
    records = read_records(cloud.client("dynamodb"), local_physical_id("TurnTable"), contact_id, SessionClock(started))
    broken = [f"{v.rule}: {v.detail}" for v in session.errors]
    return StreamingCall(contact_id, session, caller.said, records, broken, record, handed_over)


def turn_figures(call: StreamingCall) -> list[TurnFigures]:
    """The caller's turns and the replies to them, as the flows path's report has them."""
    played = {e.detail["artifact"]: e.at for e in call.session.timeline.of("playback_start")}
    stopped = {e.detail["artifact"]: e.at for e in call.session.timeline.of("playback_stop")}
    received: dict[str, float] = {}
    for event in call.session.timeline.of("chunk_received"):
        received.setdefault(event.detail["artifact"], event.at)
    figures = []
    for stored in (t for t in call.records.turns if t.track == "customer"):
        said = _utterance_for(call.said, stored.ended_at)
        segments = []
        for segment in call.records.reply(stored.index):
            artifact = (segment.prompt_uri or "").removeprefix("a2a://")
            moments = dict(segment.moments)
            first_byte, clause = moments.get("SonicFirstByteAt"), moments.get("FirstClauseAt")
            ttfb = None if first_byte is None or clause is None else max(0.0, (first_byte - clause) * 1000)
            segments.append(
                ReplySegment(
                    index=segment.index,
                    text=segment.text,
                    prompt=segment.prompt_uri,
                    more=None,
                    ready=segment.ready_at,
                    delivered=received.get(artifact) if segment.index == 0 else None,
                    start=played.get(artifact) if segment.index == 0 else None,
                    end=stopped.get(artifact) if segment.index == 0 else None,
                    responder_ms=segment.responder_ms,
                    synthesis_ms=ttfb if segment.index == 0 else segment.synthesis_ms,
                    moments=moments,
                )
            )
        figures.append(
            TurnFigures(
                index=stored.index,
                heard=stored.transcript,
                said=said.clip.transcript if said else None,
                speech_start=said.sound_start if said else None,
                speech_end=said.sound_end if said else None,
                turn_end=stored.ended_at,
                segments=tuple(segments),
                speculation=call.records.speculation(stored.index),
                backchannel=stored.backchannel,
            )
        )
    return figures


def _utterance_for(said: Sequence[Utterance], turn_end: float | None) -> Utterance | None:
    """The caller's line a turn ended for: the last one that began before the turn's end."""
    if turn_end is None:
        return None
    before = [u for u in said if u.start < turn_end]
    return before[-1] if before else None


def barge_ins(call: StreamingCall) -> list[dict[str, Any]]:
    """Each line the caller said over the agent: how long the agent's voice went on at the caller after the caller's
    first voiced frame, and whether it stopped for good (an interruption) or went on (a backchannel)."""
    interruptions = [e.at for e in call.session.timeline.of("interruption") if e.detail.get("by") == "agent"]
    out = []
    for utterance in call.said:
        if not utterance.over:
            continue
        voiced = utterance.sound_start
        stopped = call.session.recording.audio_stopped_after(voiced)
        interrupted = any(utterance.start <= at <= utterance.end + 1.0 for at in interruptions)
        out.append(
            {
                "clip": utterance.clip.name,
                "text": utterance.clip.transcript,
                "barge_in_ms": None if stopped is None else round((stopped - voiced) * 1000),
                "interrupted": interrupted,
                "backchannel_interrupted": interrupted and len(utterance.clip.pcm) / (2 * RATE) < 0.6,
            }
        )
    return out


def build_report(call: StreamingCall, **context: Any) -> dict[str, Any]:
    figures = turn_figures(call)
    over = barge_ins(call)
    return {
        **context,
        "transport": "a2a",
        "contact_id": call.contact_id,
        "ended_by": call.session.finish.type if call.session.finish else call.session.outcome,
        "flow_tool": call.session.flow_tool,
        # Only the outcome: the hand-over note holds the caller's words, and the report keeps none unredacted.
        "handover_outcome": (call.attributes or {}).get("VoicebridgeOutcome"),
        "contract_violations": list(call.violations),
        "summary": summary(figures),
        "turns": [_with_barge_in(turn_entry(turn), over) for turn in figures],
        "barge_ins": over,
        "line": line_effects(call, figures),
        "caller": [
            {
                "clip": u.clip.name,
                "text": u.clip.transcript,
                "start_ms": round(u.start * 1000),
                "end_ms": round(u.end * 1000),
            }
            for u in call.said
        ],
    }


def line_effects(call: StreamingCall, figures: Sequence[TurnFigures]) -> dict[str, int]:
    """What the caller's line set off with nobody speaking (``demo --line-noise``): the agent interrupted with no
    line of the caller's under way (from its first sound to a second after its last), and turns heard that no line of
    theirs matches."""
    interruptions = [e.at for e in call.session.timeline.of("interruption") if e.detail.get("by") == "agent"]
    return {
        "interruptions_without_speech": sum(
            1 for at in interruptions if not any(u.sound_start <= at <= u.sound_end + 1.0 for u in call.said)
        ),
        "turns_without_speech": sum(1 for turn in figures if turn.said is None),
    }


def _with_barge_in(entry: dict[str, Any], over: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A turn said over the agent carries ``barge_in_ms`` and ``backchannel_interrupted``."""
    found = next((o for o in over if o["text"] == entry["said"]), None)
    if found is not None:
        entry["barge_in_ms"] = found["barge_in_ms"]
        entry["backchannel_interrupted"] = found["backchannel_interrupted"]
    return entry


def write_outputs(call: StreamingCall, out: Path, redactor: Redactor) -> dict[str, Path]:
    """``call.wav`` (what the caller heard: the agent, with the caller's own lines on the left channel),
    ``transcript.txt`` (from the traces the agent sent Connect, redacted), and ``call-record.json`` (the record the
    product stored, as it was written: redacted there) when one came."""
    out.mkdir(parents=True, exist_ok=True)
    heard = np.frombuffer(bytes(call.session.recording.pcm), dtype="<i2")
    caller = np.zeros_like(heard)
    for utterance in call.said:
        at = round(utterance.start * RATE)
        samples = utterance.clip.samples[: max(0, len(caller) - at)]
        caller[at : at + len(samples)] = samples
    files = {"recording": out / "call.wav", "transcript": out / "transcript.txt"}
    files["recording"].write_bytes(pcm16_wav_bytes(np.stack([caller, heard], axis=1), RATE, channels=2))
    lines = [f"contact {call.contact_id} (streaming transport)"]
    # What Connect was told, in the order it was said: the agent's own lines (the greeting, a holding line) with the
    # turns and what was said of each reply.
    for _, role, text in said_in_order(call.session.traces):
        lines.append(f"{'CALLER ' if role == 'ROLE_USER' else 'AGENT  '} {redactor.redact(text).text}")
    files["transcript"].write_text("\n".join(lines) + "\n", encoding="utf-8")
    if call.record is not None:
        files["record"] = out / "call-record.json"
        files["record"].write_bytes(call.record)
    return files


def print_summary(call: StreamingCall) -> None:
    print(figures_table(turn_figures(call)))
    for entry in barge_ins(call):
        print(
            f"over the agent: {entry['clip']}: its voice stopped {entry['barge_in_ms']} ms after the caller's; "
            + ("interrupted" if entry["interrupted"] else "went on")
        )
    if call.violations:
        print("Connect's contract broken:\n  " + "\n  ".join(call.violations), file=sys.stderr)
