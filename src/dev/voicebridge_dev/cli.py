"""``voicebridge`` — the command line: the local cloud, Docker-free invokes, the demo, benchmarks and tools.

voicebridge local up                         run the local cloud in the foreground, print its exports
voicebridge local call --caller WAV          feed a running local cloud a contact's audio, as Connect would
voicebridge invoke LOGICAL_ID --event FILE   run a template function locally (a Docker-free sam local invoke)
voicebridge demo [--report FILE]             the product on the local cloud, end to end
voicebridge bench [--json]                   benchmarks against named peers
voicebridge flows validate [PATH...|DIR]     check exported contact flows
voicebridge flows render PATH --stack NAME   fill ARNs from a deployed stack for a console import
voicebridge flows simulate FLOW...           run flows on the local cloud; how each ends, and the path it took
voicebridge sonic preflight HOSTING …        check what a Sonic deployment needs before it is tried
voicebridge sonic manifests OVERLAY          render deploy/eks/ (kustomize-compatible) to one YAML stream
voicebridge a2a register …                   make Connect's side of the streaming transport (idempotent)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from voicebridge_dev.local.cloud import LocalCall

_ENGINES = ("auto", "standin", "piper")
STOP_CHECK_S = 0.25
"""How often ``local up`` looks whether Ctrl-C or SIGTERM has asked it to stop: the longest a stop can go unseen."""


def _choice(parser: argparse.ArgumentParser, flag: str, choices: tuple[str, ...], help: str | None = None) -> None:
    """An option taking one of ``choices``; the first is the default."""
    parser.add_argument(flag, choices=choices, default=choices[0], help=help)


def _pause_ms(raw: str) -> int:
    """A pause of ``--text``, in ms (100-5000)."""
    try:
        value = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of ms: {raw!r}") from None
    if not 100 <= value <= 5000:
        raise argparse.ArgumentTypeError(f"{value} is not from 100 to 5000")
    return value


def _assignments(option: str, values: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` arguments as a mapping; ValueError, naming the option, for one that is not."""
    assignments = {}
    for value in values:
        name, equals, setting = value.partition("=")
        if not equals or not name.strip():
            raise ValueError(f"{option} takes NAME=VALUE, got {value!r}")
        assignments[name.strip()] = setting
    return assignments


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="voicebridge", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    local = commands.add_parser("local", help="the local cloud").add_subparsers(dest="local_command", required=True)
    up = local.add_parser("up", help="run moto and the emulators in the foreground; Ctrl-C stops them")
    up.add_argument("--port-base", type=int, default=4566, help="moto on this port, emulators on the next ones")
    up.add_argument("--template", default="template.yaml")
    _choice(up, "--engine", _ENGINES)
    _choice(
        up,
        "--recogniser",
        ("auto", "pocketsphinx", "none"),
        "the Ink emulator's recogniser for speech no registered transcript matches (auto: pocketsphinx when "
        "installed, else stand-ins)",
    )
    up.add_argument("--sonic-ttfb-ms", type=float, default=40.0, help="emulated Sonic time to first byte")
    up.add_argument("--sonic-speed", type=float, default=20.0, help="emulated generation speed, x real time")
    up.add_argument(
        "--bedrock-ttft-ms", type=float, default=300.0, help="the Bedrock emulator's time to first token, in ms"
    )
    up.add_argument(
        "--bedrock-tokens-per-s", type=float, default=60.0, help="the Bedrock emulator's words streamed per second"
    )
    call = local.add_parser(
        "call",
        help="stream WAV files to a running local up's KVS emulator in real time, as Connect would; print the "
        "StartListeningFunction event on stdout once streaming has started",
    )
    call.add_argument("--caller", required=True, metavar="WAV", help="what the caller says (AUDIO_FROM_CUSTOMER)")
    call.add_argument("--agent", metavar="WAV", help="what the caller hears (AUDIO_TO_CUSTOMER); silence without it")
    call.add_argument("--contact-id", help="the contact's id (default: a new UUID)")
    call.add_argument("--stream-name", help="the stream to use or create (default: connect-local-contact-<id>)")

    inv = commands.add_parser("invoke", help="run a template function locally with an event file")
    inv.add_argument("logical_id")
    inv.add_argument("--event", "-e", required=True, help="event JSON file, or - for standard input")
    inv.add_argument("--template", "-t", default="template.yaml")
    inv.add_argument("--env-vars", "-n", help="JSON overrides in sam local invoke's --env-vars format")
    inv.add_argument("--parameter-overrides", nargs="*", default=[], metavar="KEY=VALUE")

    from voicebridge_dev.simulator.line import LINE_NOISES

    demo = commands.add_parser("demo", help="the product end to end on the local cloud")
    demo.add_argument("--report", help="write a JSON report to this file")
    demo.add_argument("--out", default="out", help="folder for the files the demo writes")
    _choice(demo, "--engine", _ENGINES)
    _choice(demo, "--scenario", ("normal", "lex", "silence", "model-failure", "transfer", "barge-in"))
    _choice(
        demo,
        "--transport",
        ("flows", "a2a"),
        help="how Connect and the product talk: the contact flow's Lambda blocks and S3 prompts (flows), or "
        "Connect's external-AI-agent voice streaming (a2a)",
    )
    demo.add_argument(
        "--line-noise",
        choices=LINE_NOISES,
        help="noise on the caller's line, under everything they send (white noise or babble 20 or 10 dB below "
        "their speech, or comfort noise at -50 dBov); the report counts what it set off",
    )
    demo.add_argument(
        "--calls",
        type=int,
        default=1,
        metavar="N",
        help="place N calls of the scenario at once, in real time, and report whether every turn was "
        "delivered exactly once and the latencies' percentiles",
    )
    demo.add_argument(
        "--interval-ms",
        type=float,
        default=3000.0,
        metavar="MS",
        help="with --calls, between one call's start and the next's (default 3000: ten calls are all on the line "
        "at once, without every container starting cold in the same second)",
    )
    demo.add_argument(
        "--service-processes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="run moto and each emulator in a process of its own, as the real services run on machines of their "
        "own (default: with --calls only); --no-service-processes keeps them all in the demo's process",
    )
    demo.add_argument(
        "--function-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a variable on every function, over the template's (a setting of docs/configuration.md, e.g. "
        "CONVERSE_FAST_POLL_MS=25); repeat for more",
    )
    demo.add_argument(
        "--text",
        default=None,
        help="a sentence the caller says first (spoken by the local speech engine); each | is a pause",
    )
    demo.add_argument(
        "--pause-ms",
        type=_pause_ms,
        metavar="MS",
        default=None,
        help="how long each | of --text is (100-5000; default 500)",
    )
    _choice(
        demo,
        "--recognition",
        ("auto", "pocketsphinx", "registered"),
        "how the Ink emulator hears the caller: PocketSphinx (auto, when installed), or each clip's registered "
        "transcript, the --text sentence included, so a scripted sentence is heard exactly and at once",
    )
    _choice(
        demo,
        "--language",
        ("en", "es"),
        "the caller's language: es makes a whole Spanish call (one call, either transport): the caller's lines and "
        "the emulated Sonic in espeak-ng's Spanish, the flow's or the agent's lines and the bank agent in Spanish, "
        "every turn ended by the product on Ink's manual endpoint, registered recognition",
    )
    _choice(
        demo,
        "--sonic-hosting",
        ("sagemaker", "self-managed", "cartesia-api"),
        "how the functions reach the Sonic emulator: its SageMaker endpoint, its container contract "
        "(POST /invocations) or its Cartesia API",
    )

    bench = commands.add_parser("bench", help="benchmarks against named peers (run from the repository root)")
    bench.add_argument("--json", action="store_true", help="print the figures as JSON")
    bench.add_argument("--only", nargs="*", default=None, help="bench names to run (default: all)")

    mkv = commands.add_parser("mkv", help="Kinesis Video Streams payloads").add_subparsers(
        dest="mkv_command", required=True
    )
    dump = mkv.add_parser("dump", help="raw s16le PCM of one track on stdout; exit 2 on malformed input")
    dump.add_argument("file", help="a GetMedia payload, or - for standard input")
    dump.add_argument("--track", required=True, help="track name, e.g. AUDIO_FROM_CUSTOMER")
    dump.add_argument("--tags", help="write each fragment's tags as JSON lines to this file")

    flows = commands.add_parser("flows", help="exported contact flows").add_subparsers(
        dest="flows_command", required=True
    )
    check = flows.add_parser("validate", help="exit 0 when every flow is valid; each problem as file: action: reason")
    check.add_argument(
        "paths", nargs="*", help="flow files or folders (every *.json under them; default: contact_flows/*.json)"
    )
    check.add_argument("--template", default="template.yaml")
    check.add_argument(
        "--templated",
        action="store_true",
        help="the files are templates: their tokens and blank references are filled in before import",
    )
    simulate = flows.add_parser(
        "simulate", help="run flows on the local cloud, one call each; exit 0 when none ends in error or limit"
    )
    simulate.add_argument("paths", nargs="+", help="flow files or folders (every *.json under them)")
    simulate.add_argument("--template", default="template.yaml")
    simulate.add_argument(
        "--caller",
        metavar="SCRIPT",
        help="a caller script file (words, keys pressed, silences, a hang-up, views' results; JSON) or a demo "
        "scenario's name (normal, lex, silence, model-failure, transfer); by default the caller says nothing",
    )
    simulate.add_argument(
        "--flows",
        metavar="DIR",
        action="append",
        default=[],
        help="a folder of the flows and modules the call may be transferred to or invoke (by file name or exported "
        "name); may be given more than once",
    )
    simulate.add_argument("--lex", metavar="FILE", help="the bot the Lex emulator serves (its bot file; JSON)")
    simulate.add_argument("--prompts", metavar="DIR", help="the prompt library: 8 kHz mono WAVs named by prompt ID")
    simulate.add_argument(
        "--lambda",
        dest="lambdas",
        action="append",
        default=[],
        metavar="ARN=FILE",
        help="what a function that is not the template's answers (a JSON object; by ARN or name); others answer {}",
    )
    simulate.add_argument("--centre", metavar="FILE", help="the contact centre's state: hours, queue metrics (JSON)")
    simulate.add_argument("--report", metavar="FILE", help="write each run as JSON")
    simulate.add_argument("--templated", action="store_true", help="the files are templates (as for validate)")
    simulate.add_argument(
        "--type",
        dest="flow_type",
        metavar="TYPE",
        help="the flow type of files that do not say theirs (CUSTOMER_QUEUE, CUSTOMER_HOLD, AGENT_HOLD, "
        "CUSTOMER_WHISPER, AGENT_WHISPER, OUTBOUND_WHISPER…, as CreateContactFlow names them)",
    )
    simulate.add_argument(
        "--agent",
        action="store_true",
        help="a Lex block that hands the call to an AI agent talks to voicebridge's streaming agent (run on the "
        "simulation's local cloud), the caller's remaining lines said to it",
    )
    render = flows.add_parser("render", help="print a flow with its placeholders filled, for a console import")
    render.add_argument("path")
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="name of the deployed stack whose outputs fill the placeholders")
    source.add_argument("--output", nargs="+", metavar="KEY=VALUE", help="outputs given by hand")
    render.add_argument("--set", nargs="*", default=[], metavar="NAME=VALUE", help="values for other placeholders")

    sonic = commands.add_parser("sonic", help="where Sonic runs").add_subparsers(dest="sonic_command", required=True)
    preflight = sonic.add_parser(
        "preflight", help="check what a Sonic deployment needs before it is tried; exit 0 when every check passes"
    ).add_subparsers(dest="hosting", required=True)
    managed = preflight.add_parser("sagemaker", help="the Marketplace model package and the endpoint instance quota")
    managed.add_argument("--model-package", required=True, metavar="ARN", help="SonicModelPackageArn")
    managed.add_argument("--instance-type", default="ml.g6e.xlarge", help="SonicInstanceType")
    managed.add_argument(
        "--instances", type=int, default=2, help="most instances the endpoint may run (SonicMaxInstanceCount)"
    )
    fleet = preflight.add_parser("self-managed", help="the ECR image, the GPU instance type and its vCPU quota")
    fleet.add_argument("--image-repository", required=True, help="ImageRepositoryName (private ECR repository)")
    fleet.add_argument("--image-tag", required=True, help="ImageTag")
    fleet.add_argument("--instance-type", default="g6e.xlarge", help="InstanceType")
    fleet.add_argument("--instances", type=int, default=8, help="most GPU instances the stack may run (MaxInstances)")
    fleet.add_argument(
        "--eks", action="store_true", help="the fleet runs on Amazon EKS (deploy/eks/), not the ECS stack"
    )
    fleet.add_argument("--cluster", help="the EKS cluster's name (with --eks)")
    for hosting in (managed, fleet):
        hosting.add_argument("--region", help="the deployment's region (default: the AWS CLI's)")
    manifests = sonic.add_parser(
        "manifests", help="render an EKS overlay (deploy/eks/overlays/nlb or alb) as kubectl apply -k would"
    )
    manifests.add_argument("overlay", help="folder holding the overlay's kustomization.yaml")
    manifests.add_argument(
        "--allow-placeholders", action="store_true", help="render even with REPLACE values left (to inspect or scan)"
    )

    a2a = commands.add_parser("a2a", help="the streaming transport").add_subparsers(dest="a2a_command", required=True)
    register = a2a.add_parser(
        "register",
        help="the A2A_SERVER application, its association, the AI agent and its version, the security profile; "
        "creates or updates only what differs",
    )
    register.add_argument("--instance-arn", required=True, help="the Connect instance (ConnectInstanceArn)")
    register.add_argument("--assistant", required=True, help="the Q in Connect assistant's id or ARN")
    register.add_argument("--url", required=True, help="the server's wss:// URL (the stack's StreamingUrl)")
    register.add_argument("--secret-arn", required=True, help="the API key's secret (StreamingApiKeySecretArn)")
    register.add_argument("--security-profile-id", required=True, help="the security profile the AI agent gets")
    register.add_argument("--orchestration-prompt-id", required=True, help="an ORCHESTRATION AI prompt's id")
    register.add_argument("--name", default="voicebridge-streaming", help="the application's and AI agent's name")
    register.add_argument("--locale", default="", help="the AI agent's locale (e.g. en_US); empty leaves it unset")
    register.add_argument("--region", help="the instance's region (default: the AWS CLI's)")
    register.add_argument("--dry-run", action="store_true", help="print each call with its parameters; make none")

    records = commands.add_parser("records", help="the call records a deployment wrote").add_subparsers(
        dest="records_command", required=True
    )
    turn_ends = records.add_parser(
        "turn-ends",
        help="per language and per who ended them: how soon caller turns ended after the caller stopped, and how "
        "often the caller went on at once (docs/redaction.md, the call record)",
    )
    turn_ends.add_argument("sources", nargs="+", help="record files, folders of them, or s3://bucket/prefix")
    turn_ends.add_argument(
        "--within-ms",
        type=float,
        default=None,
        help="a caller whose voice came back this soon after the turn's end went on (default: the record's 1000)",
    )
    turn_ends.add_argument("--json", action="store_true", help="print the figures as JSON")
    turn_ends.add_argument("--region", help="the bucket's region (default: the AWS CLI's)")

    args = parser.parse_args(argv)
    runs: dict[str, Callable[[argparse.Namespace], int]] = {
        "a2a": _a2a_register,
        "sonic": lambda args: (_sonic_manifests if args.sonic_command == "manifests" else _sonic_preflight)(args),
        "mkv": _mkv_dump,
        "flows": _flows,
        "local": lambda args: (_local_call if args.local_command == "call" else _local_up)(args),
        "invoke": _invoke,
        "demo": _demo,
        "bench": _bench,
        "records": _records_turn_ends,
    }
    return runs[args.command](args)


def _demo(args: argparse.Namespace) -> int:
    from voicebridge_dev.demo import run_demo

    try:
        function_env = _assignments("--function-env", args.function_env)
    except ValueError as exc:
        print(f"voicebridge demo: {exc}", file=sys.stderr)
        return 2
    return run_demo(
        out=Path(args.out),
        report=args.report,
        engine=args.engine,
        scenario=args.scenario,
        text=args.text,
        pause_ms=args.pause_ms,
        recognition=args.recognition,
        sonic_hosting=args.sonic_hosting,
        calls=args.calls,
        interval_ms=args.interval_ms,
        own_processes=args.service_processes,
        function_env=function_env,
        transport=args.transport,
        line_noise=args.line_noise,
        language=args.language,
    )


def _a2a_register(args: argparse.Namespace) -> int:
    from voicebridge_dev.a2a_register import Registrar, Registration, RegistrationError, boto3_api, dry_run_api

    try:
        registration = Registration(
            instance_arn=args.instance_arn,
            assistant=args.assistant,
            url=args.url,
            secret_arn=args.secret_arn,
            security_profile_id=args.security_profile_id,
            orchestration_prompt_id=args.orchestration_prompt_id,
            name=args.name,
            locale=args.locale,
        )
        if args.dry_run:
            print("dry run: each call a first registration makes; none is made")
            api = dry_run_api(print)
        else:
            api = boto3_api(_clients(args.region), print)
        registered = Registrar(api).register(registration)
    except RegistrationError as exc:
        print(f"a2a register: {exc}", file=sys.stderr)
        return 2
    print(f"application: {registered.application_arn}")
    print(f"AI agent version (StreamingAIAgentVersionArn): {registered.agent_version_arn}")
    if not args.dry_run:
        print("changed" if registered.changed else "unchanged: everything was in place")
    return 0


def _sonic_manifests(args: argparse.Namespace) -> int:
    from voicebridge_dev.eks_manifests import KustomizationError, PlaceholderError, render, to_yaml

    try:
        resources = render(Path(args.overlay), allow_placeholders=args.allow_placeholders)
    except PlaceholderError as exc:
        print(f"{args.overlay}: {len(exc.found)} values still to fill in (REPLACE…):", file=sys.stderr)
        for found in exc.found:
            print(f"  {found}", file=sys.stderr)
        return 2
    except KustomizationError as exc:
        print(f"{args.overlay}: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(to_yaml(resources))
    return 0


def _clients(region: str | None) -> Callable[[str], Any]:
    """One boto3 client a service, made when first asked for, in ``region`` (default: the AWS CLI's)."""
    import boto3

    session = boto3.session.Session(region_name=region)
    # The service is named at run time, and boto3's typed overloads know services only by literal name.
    make_client: Callable[..., Any] = session.client
    built: dict[str, Any] = {}

    def clients(service: str) -> Any:
        if service not in built:
            built[service] = make_client(service)
        return built[service]

    return clients


def _sonic_preflight(args: argparse.Namespace) -> int:
    from voicebridge_dev.sonic_preflight import report, sagemaker_checks, self_managed_checks

    clients = _clients(args.region)
    if args.hosting == "sagemaker":
        checks = sagemaker_checks(
            clients, model_package=args.model_package, instance_type=args.instance_type, instances=args.instances
        )
    else:
        if args.eks and not args.cluster:
            print("sonic preflight self-managed --eks needs --cluster NAME", file=sys.stderr)
            return 2
        checks = self_managed_checks(
            clients,
            repository=args.image_repository,
            tag=args.image_tag,
            instance_type=args.instance_type,
            instances=args.instances,
            eks_cluster=args.cluster if args.eks else None,
        )
    print(report(checks))
    return 0 if all(check.ok for check in checks) else 1


def _local_up(args: argparse.Namespace) -> int:
    from voicebridge_dev.local.cloud import LocalCloud
    from voicebridge_dev.local.ink import RecogniserUnavailableError, load_recogniser
    from voicebridge_dev.local.speech_engine import SpeechEngineError, load_engine

    try:
        engine, recogniser = load_engine(args.engine), load_recogniser(args.recogniser)
    except (SpeechEngineError, RecogniserUnavailableError) as exc:
        print(f"voicebridge local up: {exc}", file=sys.stderr)
        return 2
    cloud = LocalCloud(
        template=args.template,
        port_base=args.port_base,
        engine=engine,
        recogniser=recogniser,
        sonic_time_to_first_byte_ms=args.sonic_ttfb_ms,
        sonic_realtime_factor=args.sonic_speed,
        bedrock_time_to_first_token_ms=args.bedrock_ttft_ms,
        bedrock_tokens_per_second=args.bedrock_tokens_per_s,
    )
    cloud.start()
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    from voicebridge_dev.local.agent import LocalAgent, LocalAgentError

    agent = LocalAgent(cloud, args.template, env=cloud.lambdas.env if cloud.lambdas else None)
    try:
        agent.start()
    except LocalAgentError as exc:
        cloud.stop()
        print(f"voicebridge local up: the streaming agent did not start: {exc}", file=sys.stderr)
        return 1
    try:
        print("# voicebridge local cloud (emulators, not the real services). Paste into another shell:")
        print("# BEDROCK_MODEL_ID and LEX_BOT_* name the emulators' scripted model and bot, not real ones.")
        exports = {**cloud.env(), "VOICEBRIDGE_A2A_URL": agent.url, "VOICEBRIDGE_A2A_API_KEY": agent.api_key}
        for name, value in sorted(exports.items()):
            print(f"export {name}={value}")
        print(
            "# The streaming agent (python -m voicebridge.a2a) answers Connect's A2A sessions at VOICEBRIDGE_A2A_URL."
        )
        print("# Ctrl-C stops it.", flush=True)
        # Polled, not one unbounded wait: Python runs a signal's handler on the main thread only, when it next runs
        # Python code, and an unbounded lock wait is woken only by a signal the kernel hands the main thread while it
        # sleeps. A SIGTERM that lands on one of the emulators' threads, or just before the wait blocks, would leave
        # the handler pending and the wait asleep for good; a bounded wait returns and lets the handler run.
        while not stop.wait(timeout=STOP_CHECK_S):
            pass
    finally:
        agent.stop()
        cloud.stop()
        print("local cloud stopped", file=sys.stderr)
    return 0


def _local_call(args: argparse.Namespace) -> int:
    import uuid

    from voicebridge_dev.local.cloud import LocalCall, LocalCallError, call_audio

    def progress(message: str) -> None:
        print(f"voicebridge local call: {message}", file=sys.stderr, flush=True)

    call: LocalCall | None = None
    try:
        caller = call_audio(args.caller)
        agent = call_audio(args.agent) if args.agent else b""
        call = LocalCall(caller, agent, contact_id=args.contact_id or str(uuid.uuid4()), stream_name=args.stream_name)
        event = call.begin()
        progress(f"contact {call.contact_id} live on {call.stream_name}, {call.duration_s:.1f} s of audio")

        def announce() -> None:
            # Flushed at once: the reader (a pipe into `voicebridge invoke --event -`) acts while the call goes on.
            print(json.dumps(event, indent=2), flush=True)

        call.play(on_started=announce)
        call.end()
    except LocalCallError as exc:
        progress(str(exc))
        return 2
    except KeyboardInterrupt:
        return _hang_up(call, progress)
    progress(f"contact {call.contact_id} ended")
    return 0


def _hang_up(call: LocalCall | None, progress: Callable[[str], None]) -> int:
    """Ctrl-C during a local call: the contact ends at once, its queued audio dropped, as a caller hanging up."""
    from voicebridge_dev.local.cloud import LocalCallError

    try:
        if call is not None:
            call.end(drain=False)
    except LocalCallError as exc:
        progress(f"hung up, but the contact may still be live: {exc}")
        return 130
    progress("hung up")
    return 130


def _invoke(args: argparse.Namespace) -> int:
    from voicebridge_dev.local.runner import invoke
    from voicebridge_dev.template import TemplateError, function_spec, load_template

    result_out: TextIO = sys.stdout
    # The handler's logs and metrics go to stderr, so stdout carries only the result, as with sam local invoke.
    sys.stdout = sys.stderr
    try:
        event = _read_json(args.event)
        overrides = _read_json(args.env_vars) if args.env_vars else {}
        parameters = _assignments("--parameter-overrides", args.parameter_overrides)
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        spec = function_spec(
            load_template(args.template),
            args.logical_id,
            region=region,
            parameters=parameters,
            overrides=overrides,
        )
        result = invoke(spec, event, region=region)
    except (OSError, ValueError, TemplateError) as exc:
        print(f"voicebridge invoke: {exc}", file=sys.stderr)
        return 2
    finally:
        sys.stdout = result_out
    print(json.dumps(result, indent=2), file=result_out)
    return 0


def _bench(args: argparse.Namespace) -> int:
    import importlib.util

    from voicebridge_dev.local.ink.errors import RecogniserUnavailableError
    from voicebridge_dev.local.speech_engine import SpeechEngineUnavailable

    folder = Path("bench")
    if not folder.is_dir():
        print("voicebridge bench: run it from the repository root (no bench/ folder here)", file=sys.stderr)
        return 2
    figures: dict[str, Any] = {}
    not_run: list[str] = []
    for path in sorted(folder.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_").replace("_", "-")
        if args.only and name not in args.only:
            continue
        spec = importlib.util.spec_from_file_location(f"voicebridge_bench_{name}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if not args.json:
            print(f"== {name}", flush=True)
        try:
            figures[name] = module.run()
        except (RecogniserUnavailableError, SpeechEngineUnavailable) as exc:
            # A bench that needs a speech engine this machine lacks says so, and the others still run.
            print(f"voicebridge bench: {name} not run: {exc}", file=sys.stderr, flush=True)
            not_run.append(name)
            continue
        if not args.json:
            text = module.report(figures[name]) if hasattr(module, "report") else json.dumps(figures[name], indent=2)
            print(text, flush=True)
    if args.json:
        print(json.dumps(figures, indent=2, default=str))
    return 2 if not_run else 0


def _mkv_dump(args: argparse.Namespace) -> int:
    import contextlib

    from voicebridge_dev.mkv_dump import DumpError, dump

    def report(problem: Exception) -> None:
        # One line per damaged region, as it is found: the dump goes on and exits 2 at the end.
        print(f"voicebridge mkv dump: {problem}", file=sys.stderr, flush=True)

    try:
        with contextlib.ExitStack() as stack:
            source = sys.stdin.buffer if args.file == "-" else stack.enter_context(open(args.file, "rb"))
            tags = stack.enter_context(open(args.tags, "w", encoding="utf-8")) if args.tags else None
            return dump(source, sys.stdout.buffer, args.track, tags, report)
    except (DumpError, OSError) as exc:
        report(exc)
        return 2


def _flows(args: argparse.Namespace) -> int:
    from voicebridge_dev.flows import FlowError
    from voicebridge_dev.flows.cli import cli_render, cli_validate

    if args.flows_command == "validate":
        return cli_validate(args.paths, args.template, templated=args.templated)
    if args.flows_command == "simulate":
        from voicebridge_dev.simulator.flowcheck import cli_simulate

        return cli_simulate(
            args.paths,
            template=args.template,
            caller=args.caller,
            lambdas=args.lambdas,
            centre=args.centre,
            report=args.report,
            templated=args.templated,
            flows=args.flows,
            lex=args.lex,
            prompts=args.prompts,
            flow_type=args.flow_type,
            agent=args.agent,
        )
    try:
        outputs = args.stack or _assignments("--output", args.output)
        print(cli_render(args.path, outputs, overrides=_assignments("--set", args.set)))
    except (FlowError, OSError, ValueError) as exc:
        print(f"voicebridge flows render: {exc}", file=sys.stderr)
        return 2
    return 0


def _records_turn_ends(args: argparse.Namespace) -> int:
    from botocore.exceptions import BotoCoreError, ClientError

    from voicebridge.call.record import CALLER_WENT_ON_MS
    from voicebridge_dev.turn_ends import NotARecord, as_json, as_table, read_records, summarise

    def skipped(where: str, why: str) -> None:
        print(f"voicebridge records turn-ends: skipped {where}: {why}", file=sys.stderr)

    within_ms = CALLER_WENT_ON_MS if args.within_ms is None else args.within_ms
    try:
        rows = summarise(read_records(args.sources, lambda: _clients(args.region)("s3"), skipped), within_ms)
    except (NotARecord, ClientError, BotoCoreError) as exc:
        print(f"voicebridge records turn-ends: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(as_json(rows, within_ms), indent=1) if args.json else as_table(rows, within_ms))
    return 0


def _read_json(path: str) -> Any:
    if path == "-":
        return _first_json_value(sys.stdin)
    with open(path, encoding="utf-8") as stream:
        return json.load(stream)


def _first_json_value(stream: TextIO) -> Any:
    """The first JSON value on ``stream``, read as soon as it is whole: a writer such as ``voicebridge local call``
    keeps the pipe open after it."""
    decoder = json.JSONDecoder()
    text = ""
    for line in stream:
        text += line
        if text.strip():
            try:
                return decoder.raw_decode(text.lstrip())[0]
            except json.JSONDecodeError:
                continue
    return json.loads(text)


if __name__ == "__main__":
    raise SystemExit(main())
