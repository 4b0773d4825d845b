"""Benchmark: one long call on the streaming transport, nothing lost.

A caller talks to the streaming agent for ``MINUTES`` minutes of real time (Ink accepts audio no faster than it is
spoken, so this path has no virtual clock): the bank scenario's lines over and over, each once the agent has answered
and been quiet for the pause. At the end every line the caller said must be one turn of the contact's turn table, in
order, none twice; Connect's side (the A2A client emulator) must have seen no breach of the contract; the record
must be written. Run ``voicebridge bench --only long-call`` (twenty minutes) or ``python bench/bench_long_call.py 5``.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any

from voicebridge_dev.a2a_demo import INSTANCE_ARN
from voicebridge_dev.demo import scenario_settings
from voicebridge_dev.local.a2a import ConnectSettings, run_session
from voicebridge_dev.local.agent import LocalAgent
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator import SCENARIOS, load_clips
from voicebridge_dev.simulator.agent import ScriptedCaller, SessionClock
from voicebridge_dev.simulator.caller import Say, Step
from voicebridge_dev.simulator.records import read_records
from voicebridge_dev.template import local_physical_id

TEMPLATE = Path("template.yaml")
MINUTES = 20.0
LINES = ("balance", "pay-bill", "order-help", "amount", "thanks")
"""Lines that never end the call (no request for a person)."""


def run(minutes: float = MINUTES) -> dict[str, Any]:
    clips = load_clips()
    steps: list[Step] = [Say(clips[LINES[i % len(LINES)]]) for i in range(int(minutes * 60 / 6))]
    with LocalCloud(template=TEMPLATE, engine=StandInSpeechEngine(), media_pace=0) as cloud:
        for clip in clips.values():
            cloud.ink.register(clip.pcm, clip.transcript)
        with LocalAgent(cloud, TEMPLATE, env=scenario_settings(SCENARIOS["normal"])) as agent:
            caller = ScriptedCaller(steps)
            contact = str(uuid.uuid4())
            settings = ConnectSettings(
                api_key=agent.api_key,
                strict=False,
                max_duration_s=minutes * 60,
                instance_arn=INSTANCE_ARN,
                contact_arn=f"{INSTANCE_ARN}/contact/{contact}",
            )
            session = asyncio.run(run_session(agent.url, settings, caller_audio=caller))
        records = read_records(
            cloud.client("dynamodb"), local_physical_id("TurnTable"), contact, SessionClock(session.timeline.started_at)
        )
        listed = cloud.client("s3").list_objects_v2(Bucket=local_physical_id("CallRecordBucket"), Prefix="records/")
    said = [u.clip.transcript for u in caller.said]
    heard = [t.transcript for t in records.turns if t.track == "customer"]
    return {
        "minutes": round(max((e.at for e in session.timeline.events), default=0.0) / 60, 1),
        "lines_said": len(said),
        "turns_stored": len(heard),
        "every_line_once_in_order": heard[: len(said)] == said and len(heard) <= len(said) + 1,
        "contract_violations": [f"{v.rule}: {v.detail}" for v in session.errors],
        "record_written": any(o["Key"].endswith(f"/{contact}.json") for o in listed.get("Contents", [])),
    }


def report(figures: dict[str, Any]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in figures.items())


if __name__ == "__main__":
    print(report(run(float(sys.argv[1]) if len(sys.argv) > 1 else MINUTES)))
