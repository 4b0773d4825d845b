"""Benchmark: many streaming calls at once on one agent server process, against the same call alone.

``python -m voicebridge.a2a`` runs as one process (as one Fargate task's); moto and every emulator run in processes of
their own (:class:`~voicebridge_dev.local.processes.ProcessCloud`), and Connect's side is the A2A client emulator, one
session per call, each with the demo's caller saying the ``normal`` scenario's lines (registered recognition: Ink
hears each line as said). Calls start a quarter of a second apart.

- **stop to first audio**: per turn, the caller's line ending to the agent's first audio at the caller (the emulator's
  playback), p50 and p99 over every turn of every call; the many-calls p99 against the single call's p50 (target: at
  most 2×).
- **exactly once**: every line the caller said is one turn in the contact's turn table, no more, no fewer.
- **CPU**: the server process's CPU seconds per call-minute (the sessions' length added up), and from it what 1,000
  call-minutes cost on Fargate (ARM, 1 vCPU / 2 GB tasks run at 60 % CPU: docs/deploying.md's prices) beside the
  flows path's Lambda consumer and long poll for the same minutes.
- **CPU by process**: the same per call-minute for each process of the run — the agent server, this one (Connect's
  side: the A2A client emulator's sessions and their simulated callers) and each service's (moto, Ink, Sonic, …) —,
  so a run on two shared cores says whose time the calls' tail waited behind.
- **where a turn waits**: each turn's stop → first audio split, from the turn table's moments, into what it waited on
  one after the other: Ink (the caller's stop → Ink's turn end, the agent's pacing of the audio to Ink included),
  the responder (turn end → its first clause, when the clause was not ready before), Sonic (→ its first audio), and
  delivery (→ the audio playing at the caller: the agent's forwarding and the emulated Connect's playout); medians
  over every turn and over the slowest tenth. Then, of Ink's wait, how late the audio reached the emulator's
  decision: at each ``turn.end`` the Ink emulator notes how far the audio it had processed ran behind the session's
  clock (``behind_ms`` in its sessions' summaries; near zero for a client streaming in real time), wherever on the
  way it was held up. Where: the worst the Ink emulator's event loop (every session's) woke late in the round (a
  loop never far behind read the audio as it came), the same for this process's loop, which streams the callers'
  audio (Connect's side sends each slice as late as it is), and the server's ``StreamingLoopLag`` (the longest its
  event loop woke late in each 15 s), read from its log; what none of them holds is the agent's own forwarding.

Run ``voicebridge bench --only streaming-load`` (a few minutes: the calls are real time).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from voicebridge_dev.a2a_demo import INSTANCE_ARN
from voicebridge_dev.demo import scenario_settings
from voicebridge_dev.local.a2a import ConnectSettings, SessionResult, run_session
from voicebridge_dev.local.agent import LocalAgent
from voicebridge_dev.local.ink.server import LoopLag
from voicebridge_dev.local.processes import ControlClient, ProcessCloud
from voicebridge_dev.simulator import SCENARIOS, load_clips
from voicebridge_dev.simulator.agent import ScriptedCaller, SessionClock, Utterance
from voicebridge_dev.simulator.records import CallRecords, read_records
from voicebridge_dev.template import local_physical_id

TEMPLATE = Path("template.yaml")
CALLS = (1, 20)
STAGGER_S = 0.25
FARGATE_VCPU_HOUR, FARGATE_GB_HOUR = 0.03238, 0.00356
TASK_VCPU, TASK_GB, TARGET_CPU = 1.0, 2.0, 0.6
LAMBDA_GB_SECOND = 0.0000133334
CONSUMER_GB, POLL_GB = 1769 / 1024, 256 / 1024


async def _one(agent: LocalAgent, delay_s: float) -> tuple[str, SessionResult, list[Utterance]]:
    await asyncio.sleep(delay_s)
    steps = SCENARIOS["normal"].script(load_clips())
    caller = ScriptedCaller(steps)
    contact = str(uuid.uuid4())
    settings = ConnectSettings(
        api_key=agent.api_key,
        strict=False,
        max_duration_s=240,
        instance_arn=INSTANCE_ARN,
        contact_arn=f"{INSTANCE_ARN}/contact/{contact}",
    )
    session = await run_session(agent.url, settings, caller_audio=caller)
    return contact, session, caller.said


def _first_audio_ms(session: SessionResult, said: list[Utterance]) -> list[float]:
    starts = sorted(e.at for e in session.timeline.of("playback_start"))
    waits = []
    for utterance in said:
        later = [at for at in starts if at >= utterance.end]
        if later:
            waits.append((later[0] - utterance.end) * 1000)
    return waits


WAITS = ("ink", "responder", "sonic", "delivery")


def _waits(session: SessionResult, said: list[Utterance], records: CallRecords) -> list[dict[str, float]]:
    """Each answered turn's stop → first audio as what it waited on one after the other (ms); a turn whose reply has
    no waterfall (a sentence Sonic did not make) is left out."""
    starts = sorted(e.at for e in session.timeline.of("playback_start"))
    turns = [t for t in records.turns if t.track == "customer"]
    out = []
    for utterance, turn in zip(said, turns, strict=False):
        reply = records.reply(turn.index)
        later = [at for at in starts if at >= utterance.end]
        moments = reply[0].moments if reply else {}
        clause, sonic = moments.get("FirstClauseAt"), moments.get("SonicFirstByteAt")
        if turn.ended_at is None or clause is None or sonic is None or not later:
            continue
        ended = turn.ended_at
        out.append(
            {
                "ink": (ended - utterance.end) * 1000,
                "responder": max(0.0, clause - ended) * 1000,
                "sonic": max(0.0, sonic - max(clause, ended)) * 1000,
                "delivery": (later[0] - max(sonic, ended)) * 1000,
                "total": (later[0] - utterance.end) * 1000,
            }
        )
    return out


def _where_waited(turns: list[dict[str, float]]) -> dict[str, Any]:
    """Medians of each wait over every turn and over the slowest tenth (by stop → first audio)."""
    if not turns:
        return {}
    slowest = sorted(turns, key=lambda t: t["total"])[-max(1, len(turns) // 10) :]
    return {
        group: {name: round(statistics.median(t[name] for t in chosen)) for name in (*WAITS, "total")}
        for group, chosen in (("all_turns_p50_ms", turns), ("slowest_tenth_p50_ms", slowest))
    }


def _loop_lag_ms(log: Path, since: int) -> list[float]:
    """The server's ``StreamingLoopLag`` values in its log, from line ``since`` on."""
    values: list[float] = []
    for line in log.read_text(encoding="utf-8").splitlines()[since:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        lag = entry.get("StreamingLoopLag") if isinstance(entry, dict) else None
        if isinstance(lag, list):
            values += lag
        elif isinstance(lag, int | float):
            values.append(lag)
    return values


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _round(cloud: ProcessCloud, agent: LocalAgent, calls: int, log: Path) -> dict[str, Any]:
    cpu_before = agent.cpu_seconds()
    services_before = cloud.cpu_seconds()
    here_before = time.process_time()
    ink = ControlClient(cloud.processes["ink"].url)
    sessions_before = len(ink.request("GET", "sessions"))
    ink.request("DELETE", "loop-lag")
    log_from = len(log.read_text(encoding="utf-8").splitlines())

    # Connect's side runs on this process's loop: a late loop sends the callers' audio late.
    here_lag = LoopLag()

    async def all_calls() -> list[tuple[str, SessionResult, list[Utterance]]]:
        watch = asyncio.create_task(here_lag.watch())
        try:
            return await asyncio.gather(*(_one(agent, i * STAGGER_S) for i in range(calls)))
        finally:
            watch.cancel()

    done = asyncio.run(all_calls())
    cpu = agent.cpu_seconds() - cpu_before
    here = time.process_time() - here_before
    services = {name: seconds - services_before[name] for name, seconds in cloud.cpu_seconds().items()}
    ink_loop_lag = float(ink.request("GET", "loop-lag")["worst_ms"])
    behind = [
        float(event["behind_ms"])
        for session in ink.request("GET", "sessions")[sessions_before:]
        for event in session["events"]
        if event["type"] == "turn.end"
    ]
    waits: list[float] = []
    turns: list[dict[str, float]] = []
    once = 0
    minutes = 0.0
    dynamodb = cloud.client("dynamodb")
    for contact, session, said in done:
        waits += _first_audio_ms(session, said)
        minutes += max((e.at for e in session.timeline.events), default=0.0) / 60
        records = read_records(
            dynamodb, local_physical_id("TurnTable"), contact, SessionClock(session.timeline.started_at)
        )
        heard = [t.transcript for t in records.turns if t.track == "customer"]
        if heard == [u.clip.transcript for u in said]:
            once += 1
            turns += _waits(session, said, records)
    # The server flushes its metrics every 15 s: the last window of the round is in the log once it has passed.
    lag = _loop_lag_ms(log, log_from)
    return {
        "calls": calls,
        "turns": len(waits),
        "stop_to_first_audio_p50_ms": round(statistics.median(waits)) if waits else None,
        "stop_to_first_audio_p99_ms": round(_percentile(waits, 0.99)) if waits else None,
        "calls_every_turn_once": once,
        "contract_violations": sum(len(s.errors) for _, s, _ in done),
        "server_cpu_s_per_call_minute": round(cpu / minutes, 3) if minutes else None,
        "call_minutes": round(minutes, 2),
        "where_turns_waited": _where_waited(turns),
        "server_loop_lag_ms": {"max": round(max(lag)), "p50": round(statistics.median(lag))} if lag else None,
        "ink_turn_end_audio_behind_ms": {
            "p50": round(statistics.median(behind)),
            "p99": round(_percentile(behind, 0.99)),
            "max": round(max(behind)),
        }
        if behind
        else None,
        "ink_loop_lag_worst_ms": round(ink_loop_lag),
        "connect_side_loop_lag_worst_ms": round(here_lag.worst_ms),
        "cpu_s_per_call_minute_by_process": _cpu_by_process(cpu, here, services, minutes),
    }


def _cpu_by_process(server: float, here: float, services: dict[str, float], minutes: float) -> dict[str, float]:
    """CPU seconds per call-minute of each process, the heaviest first: the agent server, this one (the Connect
    emulator's sessions and their callers) and each service's."""
    if not minutes:
        return {}
    used = {"agent server": server, "this process: Connect's A2A client, the callers": here, **services}
    return {name: round(seconds / minutes, 3) for name, seconds in sorted(used.items(), key=lambda kv: -kv[1])}


def _costs(cpu_per_minute: float) -> dict[str, float]:
    sessions_per_task = TASK_VCPU * 60 * TARGET_CPU / cpu_per_minute
    task_hours = 1000 / 60 / sessions_per_task
    fargate = task_hours * (TASK_VCPU * FARGATE_VCPU_HOUR + TASK_GB * FARGATE_GB_HOUR)
    lambda_ = 1000 * 60 * (CONSUMER_GB + POLL_GB) * LAMBDA_GB_SECOND
    return {
        "sessions_per_task": round(sessions_per_task, 1),
        "fargate_usd_per_1000_call_minutes": round(fargate, 3),
        "lambda_usd_per_1000_call_minutes": round(lambda_, 3),
    }


def run() -> dict[str, Any]:
    figures: dict[str, Any] = {}
    clips = load_clips()
    with ProcessCloud(template=TEMPLATE, engine="standin", media_pace=0, recognition="registered") as cloud:
        for clip in clips.values():
            cloud.register_transcript(clip.pcm, clip.transcript)
        # Its log unbuffered: the loop lag is read from it while the server runs.
        settings = {**scenario_settings(SCENARIOS["normal"]), "PYTHONUNBUFFERED": "1"}
        with tempfile.TemporaryDirectory() as folder:
            log = Path(folder) / "agent.log"
            with (
                log.open("w", encoding="utf-8") as written,
                LocalAgent(cloud, TEMPLATE, env=settings, log=written) as agent,
            ):
                for calls in CALLS:
                    figures[f"{calls}-calls"] = _round(cloud, agent, calls, log)
    single = figures[f"{CALLS[0]}-calls"]["stop_to_first_audio_p50_ms"]
    many = figures[f"{CALLS[-1]}-calls"]
    if single:
        many["p99_over_single_p50"] = round(many["stop_to_first_audio_p99_ms"] / single, 2)
    if many["server_cpu_s_per_call_minute"]:
        figures["cost"] = _costs(many["server_cpu_s_per_call_minute"])
    return figures


def report(figures: dict[str, Any]) -> str:
    return "\n".join(f"{name}: {row}" for name, row in figures.items())


if __name__ == "__main__":
    print(report(run()))
