"""Benchmark: the two transports side by side, on the same calls, emulators and machine, in one run.

Each scenario is the demo's (``voicebridge demo``), run once on the flows transport (the contact flow's Lambda blocks
and S3 prompts, the flow simulator playing Connect) and once on the streaming transport (Connect's A2A voice
streaming, the A2A client emulator playing Connect), services in this process, the stand-in voice:

- ``normal`` with registered recognition (the Ink emulator hears each clip's sentence at once) and with PocketSphinx
  (it decodes the audio): per turn the caller's stop to Ink's turn end, to the reply's first audio at the caller
  (``stop_to_playing``), what came after the turn end, and ``bridge`` (what voicebridge adds); medians.
- ``barge-in``: the caller talks over a long reply two seconds in, and says "uh-huh" during another: how long the
  agent's voice went on at the caller after the caller's first voiced frame (``barge_in_ms``, from the recording),
  and whether the backchannel stopped the agent.

Targets (issue 27): after Ink's turn end, first agent audio at the caller within 350 ms median on the streaming
path, ``bridge`` at most 20 ms; barge-in within 300 ms; a backchannel interrupts nothing. Run ``voicebridge bench
--only transports`` (about ten minutes: every call is in real time).
"""

from __future__ import annotations

import contextlib
import io
import json
import statistics
import tempfile
from pathlib import Path
from typing import Any

from voicebridge_dev.demo import run_demo
from voicebridge_dev.local.ink.recognisers import require_pocketsphinx

TRANSPORTS = ("flows", "a2a")


def _call(scenario: str, transport: str, recognition: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.json"
        with contextlib.redirect_stdout(io.StringIO()):
            status = run_demo(
                out=Path(folder) / "out",
                report=str(report),
                engine="standin",
                scenario=scenario,
                recognition=recognition,
                transport=transport,
            )
        if not report.exists():
            raise RuntimeError(
                f"the {scenario} call on the {transport} transport ({recognition} recognition) made no report: "
                f"the demo exited {status} (its reason is above)"
            )
        written: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    written["status"] = status
    return written


def _median(values: list[int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _latencies(report: dict[str, Any]) -> dict[str, float | None]:
    turns = [t for t in report["turns"] if t["reply"]]
    after = [
        None
        if t["latency_ms"]["stop_to_playing"] is None or t["latency_ms"]["stop_to_turn_end"] is None
        else t["latency_ms"]["stop_to_playing"] - t["latency_ms"]["stop_to_turn_end"]
        for t in turns
    ]
    return {
        "turns": len(turns),
        "stop_to_turn_end": _median([t["latency_ms"]["stop_to_turn_end"] for t in turns]),
        "stop_to_playing": _median([t["latency_ms"]["stop_to_playing"] for t in turns]),
        "after_turn_end": _median(after),
        "bridge": _median([t["latency_ms"]["bridge"] for t in turns]),
    }


def _barge_in(report: dict[str, Any]) -> dict[str, Any]:
    over = [t for t in report["turns"] if "barge_in_ms" in t]
    return {
        "talked_over": [
            {"said": t["said"], "barge_in_ms": t["barge_in_ms"], "went_on_after_ms": t.get("went_on_after_ms")}
            for t in over
        ],
        "backchannel_interrupted": any(t.get("backchannel_interrupted") for t in over),
    }


def run() -> dict[str, Any]:
    # Half the calls recognise with PocketSphinx: without it they would fail minutes in, after the others.
    require_pocketsphinx()
    figures: dict[str, Any] = {}
    for recognition in ("registered", "pocketsphinx"):
        for transport in TRANSPORTS:
            figures[f"normal/{recognition}/{transport}"] = _latencies(_call("normal", transport, recognition))
    for transport in TRANSPORTS:
        report = _call("barge-in", transport, "registered")
        figures[f"barge-in/{transport}"] = {**_latencies(report), **_barge_in(report)}
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = [f"{'run':<34}{'turns':>6}{'stop->turn end':>16}{'after it':>10}{'stop->play':>12}{'bridge':>8}"]
    for name, row in figures.items():
        cells = [row.get(k) for k in ("stop_to_turn_end", "after_turn_end", "stop_to_playing", "bridge")]
        text = [f"{'-' if v is None else f'{v:g}':>{w}}" for v, w in zip(cells, (16, 10, 12, 8), strict=True)]
        lines.append(f"{name:<34}{row['turns']:>6}" + "".join(text))
    for name, row in figures.items():
        if "talked_over" in row:
            said = ", ".join(
                f"{o['said']!r}: {o['barge_in_ms']} ms"
                + (
                    ""
                    if o.get("went_on_after_ms") is None
                    else f" (the reply silent {o['went_on_after_ms']:g} ms after it)"
                )
                for o in row["talked_over"]
            )
            lines.append(
                f"{name}: agent audio went on after the caller's voice: {said}; "
                f"backchannel interrupted: {row['backchannel_interrupted']}"
            )
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(run()))
