"""``voicebridge flows simulate``: run exported flows on the local cloud before importing them, and say how each ends.

Each flow is one simulated inbound call on a virtual clock, on one local cloud started for the run: the template's
functions run in the Lambda emulator, any other function answers from a file (``--lambda ARN=FILE``, the ARN or the
function's name) or with ``{}``, and the contact centre's state comes from :class:`~.standins.LocalContactCentre`
(``--centre FILE``). The caller says nothing unless ``--caller`` names one of the demo's scenarios.

Every run ends in one outcome:

- ``disconnected`` — the flow disconnected the caller;
- ``transferred`` — to a queue, an agent, a third party or another flow;
- ``ended`` — ``EndFlowExecution`` or ``EndFlowModuleExecution``;
- ``caller-hung-up`` — the scripted caller hung up;
- ``limit`` — the flow ran 1,000 actions, or longer than 30 minutes, without ending;
- ``error`` — with ``error``: the flow is invalid, an action failed with no branch for it, or it uses something
  the simulator cannot run.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from voicebridge_dev.flows.errors import FlowError, InvalidFlowError
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator.caller import SCENARIOS, SimulatedCaller, Step, load_clips
from voicebridge_dev.simulator.clock import VirtualClock
from voicebridge_dev.simulator.engine import CallResult, SimulatorError, simulate_call
from voicebridge_dev.simulator.events import BOT, ActionRun
from voicebridge_dev.simulator.standins import LocalContactCentre

__all__ = ["OUTCOMES", "FlowRun", "cli_simulate", "outcome_of", "simulate_flows"]

OUTCOMES = ("disconnected", "transferred", "ended", "caller-hung-up", "limit", "error")
_LIMITS = ("actions without ending", "longer than")


@dataclass
class FlowRun:
    """How one flow's simulated call went."""

    flow: str
    outcome: str
    detail: str | None = None
    error: str | None = None
    actions: list[dict[str, Any]] = field(default_factory=list)
    said: list[str] = field(default_factory=list)


def outcome_of(result: CallResult) -> str:
    """The run's outcome (see the module's docstring)."""
    if result.ended_by == "caller hung up":
        return "caller-hung-up"
    if result.ended_by == "error":
        return "limit" if any(limit in (result.detail or "") for limit in _LIMITS) else "error"
    return result.ended_by


def simulate_flows(
    paths: Sequence[Path],
    *,
    template: Path,
    steps: list[Step] | None = None,
    centre: LocalContactCentre | None = None,
    answers: Mapping[str, Mapping[str, Any]] | None = None,
    templated: bool = False,
) -> list[FlowRun]:
    """Each flow in ``paths`` as one simulated call on one local cloud; its run, in order."""
    runs = []
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with LocalCloud(template=template, engine=StandInSpeechEngine(), media_pace=0) as cloud:
        for path in paths:
            runs.append(_run(path, cloud, template, steps or [], centre, dict(answers or {}), templated))
    return runs


def _run(
    path: Path,
    cloud: LocalCloud,
    template: Path,
    steps: list[Step],
    centre: LocalContactCentre | None,
    answers: dict[str, Mapping[str, Any]],
    templated: bool,
) -> FlowRun:
    try:
        result = simulate_call(
            path,
            template_path=template,
            env=cloud.env(),
            kvs=cloud.kvs,
            voice=StandInSpeechEngine(),
            caller=SimulatedCaller(list(steps)),
            clock=VirtualClock(),
            centre=centre,
            local_answers=answers,
            templated=templated,
        )
    except InvalidFlowError as exc:
        return FlowRun(str(path), "error", error=f"invalid flow: {exc}")
    except FlowError as exc:
        return FlowRun(str(path), "error", error=str(exc))
    except (SimulatorError, OSError) as exc:
        return FlowRun(str(path), "error", error=str(exc))
    outcome = outcome_of(result)
    return FlowRun(
        str(path),
        outcome,
        detail=None if outcome in ("error", "limit") else result.detail,
        error=result.detail if outcome in ("error", "limit") else None,
        actions=[
            {"identifier": e.identifier, "type": e.type, "outcome": e.outcome}
            for e in result.events
            if isinstance(e, ActionRun)
        ],
        said=[s.text for s in sorted(result.segments, key=lambda s: s.start) if s.track == BOT and s.text],
    )


def _answers(pairs: Sequence[str]) -> dict[str, Mapping[str, Any]]:
    answers: dict[str, Mapping[str, Any]] = {}
    for pair in pairs:
        function, separator, file = pair.partition("=")
        if not separator or not function or not file:
            raise ValueError(f"--lambda {pair!r}: expected ARN=FILE (or NAME=FILE)")
        answer = json.loads(Path(file).read_text(encoding="utf-8"))
        if not isinstance(answer, dict):
            raise ValueError(f"--lambda {pair!r}: {file} must hold a JSON object, the function's answer")
        answers[function] = answer
    return answers


def cli_simulate(
    paths: Sequence[str],
    *,
    template: str = "template.yaml",
    caller: str | None = None,
    lambdas: Sequence[str] = (),
    centre: str | None = None,
    report: str | None = None,
    templated: bool = False,
) -> int:
    """Print each flow's outcome and the path it took; exit 0 when none ended in ``error`` or ``limit``."""
    files = [p for raw in paths for p in (sorted(Path(raw).rglob("*.json")) if Path(raw).is_dir() else [Path(raw)])]
    if not files:
        print("voicebridge flows simulate: no flow files", file=sys.stderr)
        return 2
    try:
        answers = _answers(lambdas)
        state = None if centre is None else LocalContactCentre.from_json(json.loads(Path(centre).read_text("utf-8")))
        steps = None if caller is None else SCENARIOS[caller].script(load_clips())
    except (OSError, ValueError, KeyError) as exc:
        print(f"voicebridge flows simulate: {exc}", file=sys.stderr)
        return 2
    runs = simulate_flows(
        files, template=Path(template), steps=steps, centre=state, answers=answers, templated=templated
    )
    for run in runs:
        ending = run.error if run.outcome in ("error", "limit") else run.detail
        print(f"{run.flow}: {run.outcome}" + (f" ({ending})" if ending else ""))
        for action in run.actions:
            print(f"  {action['identifier']} [{action['type']}] -> {action['outcome']}")
    if report:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps([asdict(run) for run in runs], indent=2) + "\n", encoding="utf-8")
    return 1 if any(run.outcome in ("error", "limit") for run in runs) else 0
