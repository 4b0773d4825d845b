"""Many simulated calls at once on one local cloud, and whether each caller turn was delivered exactly once.

Each call runs through the flow on a thread of its own, with its own caller and clock (a virtual clock by default:
the calls' prompts take no wall time, their functions and the callers' speech take theirs), against the same
emulators, table and bucket::

    run = simulate_calls(10, lambda n: SimulatedCaller(steps), flow="contact_flows/voice-agent.json",
                         template_path="template.yaml", env=env, kvs=cloud.kvs, voice=engine)
    print(load_table(run))

For each call, :func:`delivery` sets what the caller said against what the product stored and handed the flow:
each utterance stored as one turn with what was said (``heard``: the Ink emulator's registered transcripts make it
exact), answered by a reply whose first segment reached the flow once, and no segment handed over twice. Across
the calls, :func:`load_figures` gives the percentiles of the per-turn latencies (:mod:`~.report`).
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voicebridge_dev.local.kvs import StreamHost
from voicebridge_dev.local.speech_engine import SpeechEngine
from voicebridge_dev.simulator.caller import SimulatedCaller
from voicebridge_dev.simulator.clock import Clock, VirtualClock
from voicebridge_dev.simulator.engine import CallResult, simulate_call
from voicebridge_dev.simulator.events import CALLER
from voicebridge_dev.simulator.report import LATENCIES, turn_figures

__all__ = [
    "Delivery",
    "FailedInvocation",
    "LoadRun",
    "delivery",
    "load_figures",
    "load_table",
    "percentile",
    "simulate_calls",
]

PERCENTILES = (50, 90, 99)


@dataclass(frozen=True)
class FailedInvocation:
    """A function invocation that failed (its status is not ``ok``) or answered the flow ``Result=Error``."""

    function: str
    request_id: str
    status: str
    error: str
    """Lambda's error type and message, or the answer's ``ErrorCode`` and ``ErrorMessage``."""
    logs: str

    def summary(self) -> dict[str, str]:
        """What a report says of it: who, how, and the last lines of its log (where a traceback ends)."""
        tail = "\n".join(self.logs.rstrip("\n").splitlines()[-FAILED_LOG_LINES:])
        return {
            "function": self.function,
            "request_id": self.request_id,
            "status": self.status,
            "error": self.error,
            "log_tail": tail,
        }


FAILED_LOG_LINES = 30
"""The lines of a failed invocation's log a report shows (its traceback, and the report line)."""


@dataclass(frozen=True)
class LoadRun:
    """The calls' results, in the order they were placed, and the wall time the whole run took."""

    results: tuple[CallResult, ...]
    wall_s: float
    cpu_s: Mapping[str, float] = field(default_factory=dict)
    """CPU seconds each component used during the run, where the run's owner measured them (:func:`cpu_table`)."""
    failed: tuple[FailedInvocation, ...] = ()
    """The function invocations that failed or answered ``Result=Error`` during the run, with their logs, where the
    run's owner kept them: what names the cause of a call that took an error branch."""
    table_requests: Mapping[str, int] = field(default_factory=dict)
    """The turn table's requests during the run, by operation (``GetItem`` by the kind of item read), where the run's
    owner counted them."""


def simulate_calls(
    count: int,
    caller: Callable[[int], SimulatedCaller],
    *,
    flow: str | Path,
    template_path: str | Path,
    env: Mapping[str, str],
    kvs: StreamHost,
    voice: SpeechEngine,
    clock: Callable[[], Clock] = VirtualClock,
    parameters: Mapping[str, str] | None = None,
    placeholders: Mapping[str, str] | None = None,
    interval_s: float = 0.0,
    max_call_s: float = 1800.0,
) -> LoadRun:
    """``count`` calls through ``flow``, call n placed ``n * interval_s`` after the first; ``caller(n)`` is its caller.

    Calls arrive a moment apart on a real line, and each runs for a minute or more, so a second between them still
    has them all on the line at once; what it spares a small machine is every container of every function starting
    cold in the same second (in AWS each would start on hardware of its own). A call still going after ``max_call_s``
    on its clock ends as an error, with what it kept so far.
    """
    results: list[CallResult | None] = [None] * count
    failures: list[BaseException] = []
    start = threading.Barrier(count)

    def place(n: int) -> None:
        try:
            start.wait()
            time.sleep(n * interval_s)
            results[n] = simulate_call(
                flow,
                template_path=template_path,
                env=env,
                kvs=kvs,
                voice=voice,
                caller=caller(n),
                clock=clock(),
                parameters=parameters,
                placeholders=placeholders,
                max_call_s=max_call_s,
            )
        except BaseException as exc:  # handed to the caller below, with the call it stopped
            failures.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=place, args=(n,), name=f"simulated-call-{n}") for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return LoadRun(tuple(result for result in results if result is not None), time.monotonic() - started)


@dataclass(frozen=True)
class Delivery:
    """One call's turns: what the caller said, what the product stored and what reached the flow."""

    contact_id: str
    ended_by: str
    utterances: int
    stored: int
    """Caller turns in the turn table."""
    answered: int
    """Turns whose reply's first segment reached the flow."""
    superseded: int
    """Turns with no reply of their own because the caller spoke again first: the reply to a later turn, which reached
    the flow, answers what the caller said in both (the consumer's barge-in)."""
    heard_as_said: int
    """Stored turns, in order, whose transcript is what the caller said in that utterance."""
    duplicates: int
    """Turns stored beyond the utterances, and segments handed to the flow more than once."""
    lost: int
    """Utterances with no stored turn."""
    once: int
    """Utterances delivered exactly once: stored once as what was said, and its reply's first segment handed over once
    (or the turn superseded by a later one whose reply was)."""
    silences: int = 0
    """ConverseFunction answers of ``Timeout`` (the flow then asks "Are you still there?")."""
    silences_over_caller: int = 0
    """Of those, the ones answered while the caller was speaking: a silence prompt said over a caller."""


def _words(text: str | None) -> str:
    return " ".join((text or "").split())


def delivery(result: CallResult) -> Delivery:
    """How ``result``'s caller turns were delivered (see :class:`Delivery`)."""
    speech = [segment for segment in sorted(result.segments, key=lambda s: s.start) if segment.track == CALLER]
    said = [segment.text for segment in speech]
    timeouts = [c.at for c in result.lambda_calls if c.function == "ConverseFunction" and c.result == "Timeout"]
    stored = sorted((t for t in result.records.turns if t.track == "customer"), key=lambda t: t.index)
    handed = Counter(
        (str(c.response.get("TurnIndex")), str(c.response.get("Segment")))
        for c in result.lambda_calls
        if c.response is not None and c.result in ("Speak", "Fallback") and "Segment" in c.response
    )
    answered = {turn for turn, segment in handed if segment == "0"}
    answered_indexes = sorted(int(turn) for turn in answered if turn.isdigit())
    superseded = {
        turn.index
        for turn in stored
        if str(turn.index) not in answered and any(later > turn.index for later in answered_indexes)
    }
    matches = [_words(text) == _words(turn.transcript) for text, turn in zip(said, stored, strict=False)]
    duplicates = max(0, len(stored) - len(said)) + sum(n - 1 for n in handed.values() if n > 1)
    once = sum(
        1
        for match, turn in zip(matches, stored, strict=False)
        if match and duplicates == 0 and (handed[(str(turn.index), "0")] == 1 or turn.index in superseded)
    )
    return Delivery(
        contact_id=result.contact_id,
        ended_by=result.ended_by,
        utterances=len(said),
        stored=len(stored),
        answered=len(answered),
        superseded=len(superseded),
        heard_as_said=sum(matches),
        duplicates=duplicates,
        lost=max(0, len(said) - len(stored)),
        once=once,
        silences=len(timeouts),
        silences_over_caller=sum(1 for at in timeouts if any(s.start <= at <= s.end for s in speech)),
    )


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile of ``values`` by nearest rank (None for no values)."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def load_figures(run: LoadRun) -> dict[str, Any]:
    """The run's delivery per call and in total, and each latency's percentiles over every turn of every call."""
    deliveries = [delivery(result) for result in run.results]
    latencies: dict[str, list[float]] = {name: [] for name in LATENCIES}
    gaps: list[float] = []
    for result in run.results:
        for turn in turn_figures(result):
            for name, value in turn.latency_ms().items():
                if value is not None:
                    latencies[name].append(value)
            gaps.extend(turn.segment_gaps_ms())
    utterances = sum(d.utterances for d in deliveries)
    call_minutes = sum(result.duration for result in run.results) / 60
    return {
        "calls": len(run.results),
        "wall_s": round(run.wall_s, 1),
        "ended_by": dict(Counter(d.ended_by for d in deliveries)),
        "turns": {
            "utterances": utterances,
            "stored": sum(d.stored for d in deliveries),
            "answered": sum(d.answered for d in deliveries),
            "superseded": sum(d.superseded for d in deliveries),
            "heard_as_said": sum(d.heard_as_said for d in deliveries),
            "duplicates": sum(d.duplicates for d in deliveries),
            "lost": sum(d.lost for d in deliveries),
            "exactly_once": sum(d.once for d in deliveries),
            "silence_prompts": sum(d.silences for d in deliveries),
            "silence_prompts_over_caller": sum(d.silences_over_caller for d in deliveries),
        },
        "percentiles_ms": {
            name: {f"p{q}": percentile(values, q) for q in PERCENTILES} for name, values in latencies.items()
        }
        | {"segment_gap": {f"p{q}": percentile(gaps, q) for q in PERCENTILES}},
        "table": table_figures(run.table_requests, call_minutes),
        "failed_invocations": [failed.summary() for failed in run.failed],
        "cpu": {
            "call_minutes": round(call_minutes, 2),
            "components": {
                name: {
                    "cpu_s": round(cpu, 2),
                    "per_call_minute_s": round(cpu / call_minutes, 2) if call_minutes else None,
                }
                for name, cpu in sorted(run.cpu_s.items(), key=lambda item: -item[1])
            },
        },
        "per_call": [
            {
                "contact_id": d.contact_id,
                "ended_by": d.ended_by,
                "utterances": d.utterances,
                "stored": d.stored,
                "answered": d.answered,
                "superseded": d.superseded,
                "heard_as_said": d.heard_as_said,
                "duplicates": d.duplicates,
                "lost": d.lost,
                "once": d.once,
            }
            for d in deliveries
        ],
    }


TABLE_READS = ("GetItem", "Query", "BatchGetItem", "Scan")
"""The DynamoDB operations that read."""


def table_figures(requests: Mapping[str, int], call_minutes: float) -> dict[str, Any]:
    """The table's requests in total and per call-minute, reads apart (a ``GetItem`` counted by the kind of item)."""
    reads = sum(count for name, count in requests.items() if name.split(" ")[0] in TABLE_READS)

    def per_minute(count: int) -> float | None:
        return round(count / call_minutes, 1) if call_minutes else None

    return {
        "requests": dict(sorted(requests.items(), key=lambda item: -item[1])),
        "reads": reads,
        "writes": sum(requests.values()) - reads,
        "reads_per_call_minute": per_minute(reads),
        "writes_per_call_minute": per_minute(sum(requests.values()) - reads),
        "per_call_minute": {name: per_minute(count) for name, count in requests.items()},
    }


def load_table(figures: Mapping[str, Any]) -> str:
    """:func:`load_figures` for the terminal."""
    rows = [f"{'call':>4}  {'ended by':<16}  {'said':>4}  {'stored':>6}  {'answered':>8}  {'dup':>3}  {'lost':>4}"]
    for n, call in enumerate(figures["per_call"]):
        rows.append(
            f"{n:>4}  {call['ended_by']:<16}  {call['utterances']:>4}  {call['stored']:>6}  {call['answered']:>8}  "
            f"{call['duplicates']:>3}  {call['lost']:>4}"
        )
    turns = figures["turns"]
    rows.append(
        f"turns delivered exactly once: {turns['exactly_once']} of {turns['utterances']} utterances "
        f"(stored {turns['stored']}, answered {turns['answered']}, superseded {turns['superseded']}, "
        f"heard as said {turns['heard_as_said']}, duplicates {turns['duplicates']}, lost {turns['lost']})"
    )
    rows.append(
        f"silence prompts: {turns.get('silence_prompts', 0)} "
        f"({turns.get('silence_prompts_over_caller', 0)} while the caller was speaking)"
    )
    names = {
        "stop_to_turn_end": "stop -> turn end",
        "stop_to_playing": "stop -> playing",
        "bridge": "bridge",
        "segment_gap": "segment gap",
    }
    for name, label in names.items():
        values = figures["percentiles_ms"][name]
        cells = "  ".join(f"p{q} {_cell(values[f'p{q}']):>8}" for q in PERCENTILES)
        rows.append(f"{label:<18}{cells}")
    failed = figures.get("failed_invocations", [])
    if failed:
        rows.append(f"failed function invocations: {len(failed)}")
        for invocation in failed:
            rows.append(
                f"  {invocation['function']} {invocation['request_id']} ({invocation['status']}): {invocation['error']}"
            )
            rows.extend(f"    | {line}" for line in invocation["log_tail"].splitlines())
    table = figures.get("table", {})
    if table.get("requests"):
        rows.append(
            f"turn table: {table['reads_per_call_minute']:g} reads and {table['writes_per_call_minute']:g} writes "
            f"per call-minute ({table['reads']} reads, {table['writes']} writes)"
        )
        rows.append("  " + ", ".join(f"{name} {table['per_call_minute'][name]:g}" for name in table["requests"]))
    cpu = figures["cpu"]
    if cpu["components"]:
        rows.append(f"CPU seconds, over {cpu['call_minutes']:g} call-minutes:")
        rows.append(f"  {'component':<52}  {'CPU s':>7}  {'per call-minute':>15}")
        for name, figure in cpu["components"].items():
            per = figure["per_call_minute_s"]
            rows.append(f"  {name:<52}  {figure['cpu_s']:>7g}  {'-' if per is None else f'{per:g} s':>15}")
    return "\n".join(rows) + "\n"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:g} ms"
