"""``voicebridge flows simulate``: run exported flows on the local cloud before importing them, and say how each ends.

Each flow is one simulated inbound call on a virtual clock, on one local cloud started for the run: the template's
functions run in the Lambda emulator, any other function answers from a file (``--lambda ARN=FILE``, the ARN or the
function's name) or with ``{}``, and the contact centre's state comes from :class:`~.standins.LocalContactCentre`
(``--centre FILE``). ``--flows DIR`` holds the flows and modules the call may move to (:mod:`~.library`); Lex V2
bots are the Lex emulator's (its bank bot, or ``--lex FILE``, a bot file of :mod:`voicebridge_dev.local.lex.bot`);
``--prompts DIR`` is the prompt library (WAVs named by prompt ID). The caller says nothing unless ``--caller`` names
a caller script file (:func:`~.caller.load_script`: words, key presses, silences, a hang-up, and the result each
view gives) or one of the demo's scenarios.

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

import contextlib
import json
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from voicebridge_dev.flows.errors import FlowError, InvalidFlowError
from voicebridge_dev.flows.rules import FLOW_FAMILIES
from voicebridge_dev.local.agent import LocalAgent
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.lex.bot import Bot
from voicebridge_dev.local.lex.errors import BotDefinitionError
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator.agent import StreamingHandoff
from voicebridge_dev.simulator.caller import (
    SCENARIOS,
    CallerScript,
    CallerScriptError,
    Over,
    Say,
    SimulatedCaller,
    load_clips,
    load_script,
)
from voicebridge_dev.simulator.clock import VirtualClock
from voicebridge_dev.simulator.engine import CallResult, SimulatorError, flow_library, simulate_call
from voicebridge_dev.simulator.events import BOT, CALLER, ActionRun, Noted
from voicebridge_dev.simulator.lexbot import LexBotRef
from voicebridge_dev.simulator.library import FlowLibrary
from voicebridge_dev.simulator.standins import LocalContactCentre

__all__ = ["OUTCOMES", "FlowRun", "Setting", "cli_simulate", "outcome_of", "simulate_flows"]

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
    """What the flow said to the caller, in order."""
    heard: list[str] = field(default_factory=list)
    """What the caller said and pressed, in order."""
    noted: list[dict[str, Any]] = field(default_factory=list)
    """Recorded actions' parameters, views shown, Lex turns, flows and modules entered (:class:`~.events.Noted`)."""


def outcome_of(result: CallResult) -> str:
    """The run's outcome (see the module's docstring)."""
    if result.ended_by == "caller hung up":
        return "caller-hung-up"
    if result.ended_by == "error":
        return "limit" if any(limit in (result.detail or "") for limit in _LIMITS) else "error"
    return result.ended_by


@dataclass(frozen=True)
class Setting:
    """What every run of one ``flows simulate`` shares: the caller, the contact centre, the answers, the folders."""

    script: CallerScript = field(default_factory=lambda: CallerScript(()))
    centre: LocalContactCentre | None = None
    answers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    templated: bool = False
    flows: tuple[Path, ...] = ()
    prompts: Path | None = None
    lex_bot: Bot | None = None
    flow_type: str | None = None
    """The flow type (``CUSTOMER_HOLD``…) of a flow that does not say its own."""
    agent: bool = False
    """A Lex block that hands the call to an AI agent talks to voicebridge's streaming agent, run on the simulation's
    local cloud (:mod:`~.agent`)."""


def simulate_flows(paths: Sequence[Path], *, template: Path, setting: Setting | None = None) -> list[FlowRun]:
    """Each flow in ``paths`` as one simulated call on one local cloud; its run, in order."""
    chosen = setting if setting is not None else Setting()
    runs = []
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    with contextlib.ExitStack() as stack:
        cloud = stack.enter_context(LocalCloud(template=template, engine=StandInSpeechEngine(), media_pace=0))
        if chosen.lex_bot is not None:
            cloud.lex.bot = chosen.lex_bot
        handoff = stack.enter_context(_agent(cloud, template, chosen)) if chosen.agent else None
        region = cloud.env().get("AWS_DEFAULT_REGION", "us-east-1")
        library = (
            flow_library(chosen.flows, template, region=region, templated=chosen.templated) if chosen.flows else None
        )
        for path in paths:
            cloud.lex.sessions.clear()
            runs.append(_run(path, cloud, template, chosen, library, handoff))
    return runs


@contextlib.contextmanager
def _agent(cloud: LocalCloud, template: Path, setting: Setting) -> Iterator[StreamingHandoff]:
    """voicebridge's streaming agent on the simulation's cloud; the caller's lines registered with Ink, so the agent
    hears them as written."""
    for step in setting.script.steps:
        if isinstance(step, Say | Over):
            for clip in step.clip.registered:
                cloud.ink.register(clip.pcm, clip.transcript)
    with LocalAgent(cloud, template) as agent:
        yield StreamingHandoff(agent.url, agent.api_key)


def _run(
    path: Path,
    cloud: LocalCloud,
    template: Path,
    setting: Setting,
    library: FlowLibrary | None,
    agent: StreamingHandoff | None = None,
) -> FlowRun:
    try:
        result = simulate_call(
            path,
            template_path=template,
            env=cloud.env(),
            kvs=cloud.kvs,
            voice=StandInSpeechEngine(),
            caller=SimulatedCaller(list(setting.script.steps)),
            clock=VirtualClock(),
            centre=setting.centre,
            local_answers=dict(setting.answers),
            templated=setting.templated,
            flows=library or (),
            views=setting.script.views,
            prompts=setting.prompts,
            flow_type=setting.flow_type,
            lex_standin=LexBotRef(
                cloud.lex.bot.bot_id, cloud.lex.bot.alias_ids[0], cloud.env().get("AWS_DEFAULT_REGION", "us-east-1")
            ),
            agent=agent,
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
            {
                "identifier": e.identifier,
                "type": e.type,
                "outcome": e.outcome,
                "flow": e.flow,
                **({"why": e.why} if e.why else {}),
            }
            for e in result.events
            if isinstance(e, ActionRun)
        ],
        said=[s.text for s in sorted(result.segments, key=lambda s: s.start) if s.track == BOT and s.text],
        heard=[s.text for s in sorted(result.segments, key=lambda s: s.start) if s.track == CALLER and s.text],
        noted=[
            {"at": round(e.at, 3), "identifier": e.identifier, "type": e.type, **e.detail}
            for e in result.events
            if isinstance(e, Noted)
        ],
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
    flows: Sequence[str] = (),
    lex: str | None = None,
    prompts: str | None = None,
    flow_type: str | None = None,
    agent: bool = False,
) -> int:
    """Print each flow's outcome and the path it took; exit 0 when none ended in ``error`` or ``limit``."""
    files = [p for raw in paths for p in (sorted(Path(raw).rglob("*.json")) if Path(raw).is_dir() else [Path(raw)])]
    if not files:
        print("voicebridge flows simulate: no flow files", file=sys.stderr)
        return 2
    try:
        for folder in (*flows, *([prompts] if prompts else [])):
            if not Path(folder).is_dir():
                raise ValueError(f"{folder}: not a folder")
        if flow_type is not None and flow_type not in FLOW_FAMILIES:
            raise ValueError(f"--type {flow_type}: not a flow type ({', '.join(sorted(set(FLOW_FAMILIES)))})")
        setting = Setting(
            script=_caller(caller),
            centre=None
            if centre is None
            else LocalContactCentre.from_json(json.loads(Path(centre).read_text("utf-8"))),
            answers=_answers(lambdas),
            templated=templated,
            flows=tuple(Path(folder) for folder in flows),
            prompts=None if prompts is None else Path(prompts),
            lex_bot=None if lex is None else Bot.from_json(json.loads(Path(lex).read_text("utf-8"))),
            flow_type=flow_type,
            agent=agent,
        )
    except (OSError, ValueError, CallerScriptError, BotDefinitionError) as exc:
        print(f"voicebridge flows simulate: {exc}", file=sys.stderr)
        return 2
    runs = simulate_flows(files, template=Path(template), setting=setting)
    for run in runs:
        ending = run.error if run.outcome in ("error", "limit") else run.detail
        print(f"{run.flow}: {run.outcome}" + (f" ({ending})" if ending else ""))
        flow = run.actions[0]["flow"] if run.actions else ""
        for action in run.actions:
            if action["flow"] != flow:
                flow = action["flow"]
                print(f"  in {flow or 'the first flow'}:")
            why = f" ({action['why']})" if action.get("why") else ""
            print(f"  {action['identifier']} [{action['type']}] -> {action['outcome']}{why}")
    if report:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps([asdict(run) for run in runs], indent=2) + "\n", encoding="utf-8")
    return 1 if any(run.outcome in ("error", "limit") for run in runs) else 0


def _caller(given: str | None) -> CallerScript:
    """The caller: a script file, else a demo scenario's name; silent when not given."""
    if given is None:
        return CallerScript(())
    if given in SCENARIOS and not Path(given).is_file():
        return CallerScript(tuple(SCENARIOS[given].script(load_clips())))
    if not Path(given).is_file():
        raise CallerScriptError(f"--caller {given}: neither a caller script file nor one of {', '.join(SCENARIOS)}")
    return load_script(given)
