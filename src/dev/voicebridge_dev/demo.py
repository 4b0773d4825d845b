"""``voicebridge demo``: one simulated inbound call through ``contact_flows/voice-agent.json``, in real time.

Everything runs on loopback from this process: the local cloud (moto; the Sonic, KVS, Ink, Bedrock, Lex and Lambda
emulators, the last running the template's functions in worker processes) and the flow simulator playing
Amazon Connect with a scripted caller (:mod:`voicebridge_dev.simulator`). Every production code path is
used: the flow invokes StartListening (``Converse=true``), Synthesize (the agent's own lines) and ConverseFunction
through ``lambda.invoke``; the caller's audio streams through the KVS emulator to the consumer, on to the Ink
emulator; on each turn end the consumer asks the responder (the Bedrock emulator's bank agent; the Lex emulator's
bank bot with ``--scenario lex``) and speaks each sentence of the reply with the Sonic emulator into S3, and the flow
plays the segments ConverseFunction hands it.

The terminal shows the live timeline, then the per-turn latencies. ``out/`` receives ``call.wav`` (stereo
8 kHz: the caller left, the bot right), ``transcript.txt`` and ``timeline.png``, ``call-record.json`` (the record
the stack stored in S3 when listening ended) and ``function-logs.txt`` (what every function logged); ``--report``
writes the JSON report. The transcript and the report are redacted as the stack redacts (``REDACT_TRANSCRIPTS``).
With the ``speech`` extra installed the bot speaks with piper and the Ink emulator recognises the caller with
PocketSphinx; otherwise deterministic stand-ins do both. None of them is Sonic or Ink.

``--calls N`` places N calls at once on one local cloud, in real time (:mod:`voicebridge_dev.simulator.load`),
and reports whether every caller turn was delivered exactly once and the percentiles of the turns' latencies.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from voicebridge.audio.wav import pcm16_wav_bytes
from voicebridge.config import AGENT_LINES, Settings
from voicebridge.redaction import BuiltinRedactor, NoRedaction, Redactor
from voicebridge_dev.local.bedrock import Fault as BedrockFault
from voicebridge_dev.local.bedrock import FaultKind as BedrockFaultKind
from voicebridge_dev.local.cloud import CloudBase, LocalCloud
from voicebridge_dev.local.ink import PocketsphinxRecogniser, Recogniser, RecogniserUnavailableError, load_recogniser
from voicebridge_dev.local.lambda_ import InvocationRecord, InvocationStatus, InvocationType, KeptInvocation
from voicebridge_dev.local.lambda_.emulator import DEFAULT_CONCURRENCY
from voicebridge_dev.local.lex import Fault as LexFault
from voicebridge_dev.local.lex import FaultKind as LexFaultKind
from voicebridge_dev.local.processes import ProcessCloud
from voicebridge_dev.local.sonic import Fault, FaultKind
from voicebridge_dev.local.speech_engine import SpeechEngine, engine_choice, engine_for, load_engine
from voicebridge_dev.simulator import (
    CallerScriptError,
    CallLog,
    CallResult,
    Clip,
    Clock,
    LiveTimeline,
    RealClock,
    Say,
    Scenario,
    SimulatedCaller,
    Step,
    build_report,
    find_scenario,
    latency_table,
    load_clips,
    simulate_call,
    timeline_png,
    transcript,
)
from voicebridge_dev.simulator.caller import Over
from voicebridge_dev.simulator.line import LineNoise
from voicebridge_dev.simulator.load import FailedInvocation, LoadRun, load_figures, load_table, simulate_calls
from voicebridge_dev.simulator.report import line_effects, talked_over_lines, turn_figures

TEMPLATE = Path("template.yaml")
FLOW = Path("contact_flows/voice-agent.json")
SONIC_BACKENDS = {"sagemaker": "sagemaker", "self-managed": "container", "cartesia-api": "cartesia-api"}
"""The functions' SONIC_BACKEND for each of the template's SonicHosting choices."""
DEFAULT_INTERVAL_MS = 3000.0
"""Between one call's start and the next's with ``--calls``: ten calls of a minute and a half are all on the line at
once from the 28th second, and the machine is spared every container of every function starting cold in one second
(in AWS each would start on hardware of its own; here all share a machine's few cores)."""
# More throttled model calls than a whole call makes: Sonic stays unavailable from start to end.
_UNAVAILABLE_CALLS = 10_000
# What a Lex bot's closed intents ask of the flow (LexIntentActions): the bank bot's hand-over and goodbye.
_LEX_INTENT_ACTIONS = "TransferToAgent=Transfer,Goodbye=Hangup"
_LATENCY_HEADER = (
    "per-turn latency: the caller stops -> Ink ends the turn (stop->turn end, Ink's) -> the responder's first "
    "sentence (responder) -> Sonic makes its prompt (sonic) -> Connect plays segment 0 (stop->play); bridge = "
    "stop->play less those three, what the project adds; gaps: the silences between segments as Connect plays them"
)

_SERVICE_NAMES = {
    "s3": "moto for S3",
    "dynamodb": "moto for DynamoDB",
    "moto": "moto for the rest",
    "sonic": "Sonic emulator",
    "kvs": "KVS emulator",
    "ink": "Ink emulator",
    "bedrock": "Bedrock emulator",
    "lex": "Lex emulator",
    "comprehend": "Comprehend emulator",
    "connect": "Connect emulator",
}


def run_demo(
    *,
    out: Path,
    report: str | None,
    engine: str = "auto",
    scenario: str = "normal",
    text: str | None = None,
    recognition: str = "auto",
    sonic_hosting: str = "sagemaker",
    calls: int = 1,
    interval_ms: float = DEFAULT_INTERVAL_MS,
    own_processes: bool | None = None,
    function_env: Mapping[str, str] | None = None,
    transport: str = "flows",
    line_noise: str | None = None,
    language: str = "en",
    pause_ms: int | None = None,
) -> int:
    """Run the demo call; returns the exit status (0 when the flow ended the call or the caller hung up).

    ``language`` is the caller's: ``es`` makes the call Spanish (:func:`spoken_in`; on the flows transport
    :func:`flow_in`, on the streaming one :data:`SPANISH_AGENT_LINES`), one call, with registered recognition (the
    local recogniser knows English only).

    ``transport`` is how Connect and the product talk: ``flows`` (the contact flow's Lambda blocks and S3 prompts)
    or ``a2a`` (Connect's external-AI-agent voice streaming, :mod:`voicebridge_dev.a2a_demo`).

    ``text``, when given, replaces the caller's first utterance: the local speech engine speaks it, each ``|`` a pause
    of ``pause_ms`` (:data:`PAUSE_MS` by default).
    ``recognition`` is how the Ink emulator hears the caller: ``pocketsphinx`` (``auto``: when installed) or
    ``registered`` (each clip's own transcript, heard exactly; what a run with many calls always uses).
    ``calls`` above 1 places that many calls at once instead (:func:`run_load`).
    ``sonic_hosting`` is where the functions find Sonic, as the template's ``SonicHosting`` says: ``sagemaker`` (the
    emulator's endpoint), ``self-managed`` (its container contract, ``POST /invocations``) or ``cartesia-api``.
    ``own_processes`` runs moto and each emulator in a process of its own (None: for ``calls`` above 1 only).
    ``function_env`` sets variables on every function (a setting of docs/configuration.md), over the template's.
    ``line_noise`` puts one of :data:`~voicebridge_dev.simulator.line.LINE_NOISES` on the caller's line.
    """
    own_processes = calls > 1 if own_processes is None else own_processes
    speech = load_engine(engine)
    try:
        chosen = find_scenario(scenario)
        clips = load_clips()
        steps = chosen.script(clips)
        line = None if line_noise is None else LineNoise.of(line_noise, [clip.samples for clip in clips.values()])
    except (CallerScriptError, ValueError) as exc:
        print(f"voicebridge demo: {exc}", file=sys.stderr)
        return 2
    flow, attributes = FLOW, {}
    if language != "en":
        if calls > 1:
            print("voicebridge demo: --language es places one call", file=sys.stderr)
            return 2
        try:
            steps = spoken_in(language, steps, speech)
        except CallerScriptError as exc:
            print(f"voicebridge demo: {exc}", file=sys.stderr)
            return 2
        out.mkdir(parents=True, exist_ok=True)
        attributes, recognition = {"Language": language}, "registered"
        if transport == "flows":
            flow = flow_in(language, out)
        else:
            function_env = {**SPANISH_AGENT_LINES, **(function_env or {})}
    if text:
        steps = _with_first_utterance(
            steps, text, engine_for(language, speech), PAUSE_MS if pause_ms is None else pause_ms
        )
    if transport == "a2a":
        return _run_streaming(
            chosen,
            steps,
            speech,
            out=out,
            report=report,
            recognition=recognition,
            sonic_hosting=sonic_hosting,
            function_env=function_env,
            line=line,
            attributes=attributes,
            language=language,
        )
    if calls > 1:
        return run_load(
            calls,
            chosen,
            steps,
            speech,
            report=report,
            sonic_backend=SONIC_BACKENDS[sonic_hosting],
            interval_ms=interval_ms,
            own_processes=own_processes,
            function_env=function_env,
            line=line,
        )
    try:
        embedded = (
            None
            if recognition == "registered"
            else load_recogniser("pocketsphinx" if recognition == "pocketsphinx" else "auto")
        )
    except RecogniserUnavailableError as exc:
        print(f"voicebridge demo: {exc}", file=sys.stderr)
        return 2
    # In a cloud of processes the Ink emulator's own process loads its recogniser; in this one the emulator takes
    # the one loaded here, whose decoders run in processes of their own.
    recogniser = None if own_processes else embedded
    cloud = local_cloud(
        speech,
        own_processes=own_processes,
        recognition="registered" if embedded is None else "pocketsphinx",
        recogniser=recogniser,
    )
    # moto's web server logs every request; the timeline is what a person should read.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    out.mkdir(parents=True, exist_ok=True)
    print(f"scenario {chosen.name}: {chosen.description}")
    print(
        "local cloud (emulators, not the real services): moto, Sonic emulator "
        f"(as {sonic_hosting}; voice: {speech.name}), KVS emulator, Ink emulator (recognition: "
        f"{'PocketSphinx' if embedded is not None else 'registered transcripts'}), Lambda emulator, "
        "and the flow simulator playing Amazon Connect"
        + ("; each service in a process of its own" if own_processes else "")
    )
    try:
        result, emulated, kept = _call(
            chosen,
            steps,
            cloud,
            speech,
            registered=embedded is None,
            sonic_backend=SONIC_BACKENDS[sonic_hosting],
            function_env=function_env,
            line=line,
            flow=flow,
            attributes=attributes,
        )
    finally:
        if isinstance(embedded, PocketsphinxRecogniser):
            embedded.close()
    print(f"\n{_LATENCY_HEADER}")
    print(latency_table(result))
    for over in talked_over_lines(result):
        print(over)
    if line is not None:
        _print_line_effects(line, line_effects(result, turn_figures(result)))
    redactor = demo_redactor(function_env)
    files = _write_files(result, out, redactor)
    files.update(_write_kept(kept, out))
    if report:
        context = _report_context(chosen, emulated, sonic_hosting, speech, embedded, files)
        written = build_report(result, **context, service_processes=own_processes, line_noise=line_noise)
        written = with_turn_ending(written, kept.record, language)
        files["report"] = _write_report(report, redacted_report(written, redactor))
    for name, path in files.items():
        print(f"{name:>10}: {path}")
    if result.ended_by == "error":
        print(f"voicebridge demo: the call stopped: {result.detail}", file=sys.stderr)
        return 1
    return 0


SPANISH_CLIPS: Final[Mapping[str, str]] = {
    "balance": "Quiero saber el saldo de mi cuenta.",
    "pay-bill": "Quiero pagar mi factura hoy.",
    "order-help": "Necesito ayuda con mi pedido.",
    "thanks": "Muchas gracias por su ayuda.",
    "yes-please": "Sí por favor adelante.",
    "dispute": (
        "Quiero reclamar un cargo que no reconozco en mi tarjeta cuatro uno uno uno uno uno uno uno uno uno uno uno "
        "uno uno uno uno."
    ),
    "person": "Quiero hablar con una persona por favor.",
    "amount": "Ochenta y cuatro dólares.",
    "uh-huh": "Ajá.",
}
"""What the caller says in Spanish in place of each shipped clip (the dispute with a card number said aloud, which
the record must not keep). No commas: espeak-ng pauses at each, and the end-of-turn model takes most such pauses for
the end of the turn (docs/benchmarks.md, "End of turn")."""
SPANISH_LINES: Final[Mapping[str, str]] = {
    "Hello! Thanks for calling. How can I help you today?": "¡Hola! Gracias por llamar. ¿En qué puedo ayudarle hoy?",
    "Thank you, I have your card details.": "Gracias, ya tengo los datos de su tarjeta.",
    "I didn't get a card number, so no payment was taken.": (
        "No he recibido ningún número de tarjeta, así que no se ha hecho ningún pago."
    ),
    "A colleague will take your card details. Please hold.": (
        "Un compañero tomará los datos de su tarjeta. Por favor, espere."
    ),
    "One moment.": "Un momento.",
    "Are you still there? I'm listening.": "¿Sigue ahí? Le escucho.",
    "I haven't heard anything for a while, so I'll hang up now. Goodbye!": (
        "Hace un rato que no le oigo, así que voy a colgar. ¡Adiós!"
    ),
    "All of our colleagues are busy right now. Please call again later. Goodbye.": (
        "Todos nuestros compañeros están ocupados. Por favor, vuelva a llamar más tarde. Adiós."
    ),
    "Sorry, I can't connect you with a colleague right now. Please call again later. Goodbye.": (
        "Lo siento, ahora no puedo pasarle con un compañero. Por favor, vuelva a llamar más tarde. Adiós."
    ),
    "Sorry, we're having technical difficulties. Please call again later. Goodbye.": (
        "Lo sentimos, tenemos dificultades técnicas. Por favor, vuelva a llamar más tarde. Adiós."
    ),
}
"""The voice agent flow's own lines in Spanish, as a Spanish-speaking contact centre would write them."""
_AGENT_DEFAULTS: Final = Settings.from_env({})
SPANISH_AGENT_LINES: Final[Mapping[str, str]] = {
    "A2A_LINES": json.dumps(
        {"es": {name: SPANISH_LINES[getattr(_AGENT_DEFAULTS, f"a2a_{name}_text")] for name in AGENT_LINES}},
        ensure_ascii=False,
    )
}
"""The streaming agent's own lines in Spanish (``A2A_LINES``), for the Spanish call on the streaming transport: the
deployment's stay English, as a contact centre serving both would set it."""


def spoken_in(language: str, steps: list[Step], speech: SpeechEngine) -> list[Step]:
    """``steps`` with each utterance said in ``language`` (espeak-ng's Spanish voice); CallerScriptError when a
    line has no translation or no local voice speaks the language."""
    voice = engine_for(language, speech)
    if voice is speech:
        raise CallerScriptError(f"no local voice speaks {language!r}: install espeak-ng")
    spoken: list[Step] = []
    for step in steps:
        if isinstance(step, Say | Over):
            words = SPANISH_CLIPS.get(step.clip.name)
            if words is None:
                raise CallerScriptError(f"the clip {step.clip.name!r} has no {language} line")
            step = replace(step, clip=Clip(step.clip.name, words, voice.synthesize(words, 8000, 1.0)))
        spoken.append(step)
    return spoken


def flow_in(language: str, out: Path) -> Path:
    """The voice agent flow with its lines in ``language``, written beside the demo's files; CallerScriptError when
    the flow holds a line the translation does not know (the flow changed)."""
    text = FLOW.read_text(encoding="utf-8")
    for english, translated in SPANISH_LINES.items():
        quoted = json.dumps(english)
        if quoted not in text:
            raise CallerScriptError(f"{FLOW} no longer says {english!r}: the demo's {language} lines need updating")
        text = text.replace(quoted, json.dumps(translated, ensure_ascii=False))
    path = out / f"{FLOW.stem}-{language}.json"
    path.write_text(text, encoding="utf-8")
    return path


def with_turn_ending(report: dict[str, Any], record: bytes | None, language: str) -> dict[str, Any]:
    """The report with the call's ``language`` and each turn's ``turn_end_by`` (``ink`` or ``voicebridge``) and
    ``next_voice_after_ms`` (how soon after its end the caller spoke again; under a second, they went on), as the
    call record the stack wrote says (the language asked for, and neither, when no record came)."""
    stored = json.loads(record) if record else {}
    kept = {
        int(turn["turn"]): turn
        for turn in stored.get("turns", [])
        if turn.get("track") == "customer" and "turn" in turn
    }
    return {
        **report,
        "language": stored.get("listening", {}).get("language") or language,
        "turns": [
            {
                **turn,
                "turn_end_by": kept.get(turn.get("index", -1), {}).get("endedBy"),
                "next_voice_after_ms": kept.get(turn.get("index", -1), {}).get("nextVoiceAfterMs"),
            }
            for turn in report.get("turns", [])
        ],
    }


PAUSE_MARK = "|"
"""In ``--text``, where the caller pauses mid-turn (``"Yes, | please go ahead"``): :data:`PAUSE_MS` of silence, or
``--pause-ms``."""
PAUSE_MS = 500


def spoken_with_pauses(text: str, speech: SpeechEngine, sample_rate: int = 8000, pause_ms: int = PAUSE_MS) -> Clip:
    """``text`` in the local speech engine's voice, each ``|`` a pause of ``pause_ms``; the clip's transcript is the
    text without the marks, and each part between them is one of its :attr:`~Clip.parts`."""
    texts = [part.strip() for part in text.split(PAUSE_MARK) if part.strip()]
    pause = np.zeros(pause_ms * sample_rate // 1000, dtype=np.int16)
    parts = [
        Clip(f"custom-{index}", part, speech.synthesize(part, sample_rate, 1.0)) for index, part in enumerate(texts)
    ]
    pieces: list[Any] = []
    for index, part in enumerate(parts):
        pieces += [pause] if index else []
        pieces.append(part.samples)
    said_apart = tuple(parts) if len(parts) > 1 else ()
    return Clip("custom", " ".join(texts), np.concatenate(pieces) if pieces else pause, said_apart)


def _with_first_utterance(steps: list[Step], text: str, speech: SpeechEngine, pause_ms: int) -> list[Step]:
    """``steps`` with the first utterance replaced by ``text`` in the local speech engine's voice."""
    clip = spoken_with_pauses(text, speech, pause_ms=pause_ms)
    for index, step in enumerate(steps):
        if isinstance(step, Say):
            return [*steps[:index], replace(step, clip=clip), *steps[index + 1 :]]
    return [Say(clip), *steps]


def _write_files(result: CallResult, out: Path, redactor: Redactor) -> dict[str, Path]:
    files = {
        "recording": out / "call.wav",
        "transcript": out / "transcript.txt",
        "timeline": out / "timeline.png",
    }
    files["recording"].write_bytes(pcm16_wav_bytes(result.recording, result.sample_rate, channels=2))
    files["transcript"].write_text(redacted_transcript(transcript(result), redactor), encoding="utf-8")
    files["timeline"].write_bytes(timeline_png(result))
    return files


def redacted_transcript(text: str, redactor: Redactor) -> str:
    """:func:`~voicebridge_dev.simulator.report.transcript` redacted as the stack redacts: the words of each line, not
    its time. The header names the contact: an id, no one's words, kept exactly as operators search for it; and a
    line's time read with its words is digits beside a card's mention (``[00:10.683] BOT To dispute a card…``), which
    the redactor rightly takes for part of a card number."""
    header, *lines = text.splitlines(keepends=True)
    redacted = [header]
    for line in lines:
        stamp, bracket, said = line.partition("] ")
        redacted.append(stamp + bracket + redactor.redact(said).text if bracket else redactor.redact(line).text)
    return "".join(redacted)


def _write_kept(kept: Kept, out: Path) -> dict[str, Path]:
    """The call record the stack stored (``call-record.json``) and what the functions logged (``function-logs.txt``),
    as they were written: nothing here is redacted again."""
    files: dict[str, Path] = {}
    if kept.record is not None:
        files["record"] = out / "call-record.json"
        files["record"].write_bytes(kept.record)
    files["logs"] = out / "function-logs.txt"
    files["logs"].write_text(kept.logs, encoding="utf-8")
    return files


def demo_redactor(function_env: Mapping[str, str] | None) -> Redactor:
    """The redactor the functions use (REDACT_TRANSCRIPTS, builtin by default), for what the demo itself writes;
    ``comprehend`` stands as ``builtin`` here, since the demo asks no service of its own."""
    mode = (function_env or {}).get("REDACT_TRANSCRIPTS", "builtin").strip().lower()
    return NoRedaction() if mode == "off" else BuiltinRedactor()


_REPORT_TEXT = frozenset({"said", "heard", "reply", "text", "transcript", "detail", "line"})
"""The report's keys (in any case: ``Transcript`` in a function's answer too) that hold what someone said."""


def _report_context(
    chosen: Scenario,
    emulated: Mapping[str, Any],
    sonic_hosting: str,
    speech: SpeechEngine,
    embedded: Recogniser | None,
    files: Mapping[str, Path],
) -> dict[str, Any]:
    """What a call's report says of the run besides the call, under the same keys on either transport."""
    return {
        "scenario": chosen.name,
        "responder": chosen.responder,
        "emulated": emulated,
        "sonic_hosting": sonic_hosting,
        "speech_engine": speech.name,
        "recogniser": "pocketsphinx" if embedded is not None else "registered transcripts",
        "files": {name: str(path) for name, path in files.items()},
    }


def _write_report(report: str, document: Mapping[str, Any]) -> Path:
    """``document`` written as the JSON report at ``report``, its folder made if need be."""
    path = Path(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return path


def redacted_report(value: Any, redactor: Redactor, key: str = "") -> Any:
    """The report with every text a caller or the agent said redacted."""
    if isinstance(value, dict):
        return {k: redacted_report(v, redactor, k) for k, v in value.items()}
    if isinstance(value, list):
        return [redacted_report(v, redactor, key) for v in value]
    if isinstance(value, str) and key.lower() in _REPORT_TEXT:
        return redactor.redact(value).text
    return value


def local_cloud(
    speech: SpeechEngine,
    *,
    own_processes: bool,
    recognition: str = "registered",
    recogniser: Recogniser | None = None,
    calls: int = 1,
) -> CloudBase:
    """The demo's local cloud (media at the pace the simulator streams it), its services in this process or each
    in one of its own. ``recognition`` names how a cloud of processes' Ink emulator hears the caller; in this
    process ``recogniser`` does (None: the registered transcripts). The Lambda emulator runs containers enough
    for ``calls`` calls at once (:func:`containers_for`)."""
    concurrency = containers_for(calls)
    if own_processes:
        # Each service's warnings and errors still reach this terminal.
        return ProcessCloud(
            template=TEMPLATE,
            engine=engine_choice(speech),
            media_pace=0,
            recognition=recognition,
            lambda_concurrency=concurrency,
        )
    return LocalCloud(
        template=TEMPLATE, engine=speech, media_pace=0, recogniser=recogniser, lambda_concurrency=concurrency
    )


def containers_for(calls: int) -> int:
    """Containers per function for ``calls`` calls at once, as docs/deploying.md (*Capacity*) sizes a deployment:
    a call holds one consumer the whole time and at most one long poll, and a consumer's hand-over holds two for a
    moment; so the calls and two more, and never fewer than the Lambda emulator's own default. Fewer would leave
    the latest calls' consumers queued as Event invocations, and those calls with no transcriber."""
    return max(DEFAULT_CONCURRENCY, calls + 2)


def _print_line_effects(line: LineNoise, effects: Mapping[str, int]) -> None:
    said = ", ".join(f"{name.replace('_', ' ')} {count}" for name, count in effects.items())
    print(f"line noise {line.condition}, what it set off with nobody speaking: {said}")


def _call(
    chosen: Scenario,
    steps: list[Step],
    cloud: CloudBase,
    speech: SpeechEngine,
    *,
    registered: bool,
    sonic_backend: str = "sagemaker",
    function_env: Mapping[str, str] | None = None,
    line: LineNoise | None = None,
    flow: Path = FLOW,
    attributes: Mapping[str, str] | None = None,
) -> tuple[CallResult, dict[str, Any], Kept]:
    with cloud:
        emulated = _prepare(
            cloud, chosen, steps, registered=registered, sonic_backend=sonic_backend, function_env=function_env
        )
        log = CallLog()
        log.subscribe(LiveTimeline())
        print(f"\n{'time':>10}  event")
        result = simulate_call(
            flow,
            template_path=TEMPLATE,
            env=cloud.env(),
            kvs=cloud.media,
            voice=speech,
            caller=SimulatedCaller(steps, line=line),
            clock=RealClock(),
            log=log,
            attributes=attributes,
        )
        kept = _await_kept(cloud, result.contact_id)
        # A consumer still making sure the stream has ended when the emulator stops is cancelled: expected, not
        # worth a warning on the demo's screen.
        logging.getLogger("voicebridge_dev.local.lambda_").setLevel(logging.ERROR)
    return result, emulated, kept


@dataclass(frozen=True)
class Kept:
    """What the stack kept of the call: its record's bytes as stored (None if none came), and the functions' logs."""

    record: bytes | None
    logs: str


RECORD_WAIT_S = 20.0
"""How long the demo waits after the call for its record: the consumer ends listening once the stream has been
quiet for its read timeout and a second (3 s and 1 s by default), then writes it."""


CONSUMER_EXIT_WAIT_S = 10.0
"""How long the demo waits, once the record is stored, for the consumer's invocation to end."""


def _await_kept(cloud: CloudBase, contact_id: str, *, wait_s: float = RECORD_WAIT_S) -> Kept:
    """Wait for the consumer to store the call's record (``records/…/<contact-id>.json``), then read it and the logs
    of every function invocation."""
    record = cloud.call_record(contact_id, wait_s=wait_s)
    if record is None:
        print(f"voicebridge demo: no call record came within {wait_s:.0f} s", file=sys.stderr)
    assert cloud.lambdas is not None
    # The consumer writes the record last, then returns: its logs (the turns it stored, its metrics) are kept once
    # its invocation has ended.
    cloud.lambdas.wait_for_idle(CONSUMER_EXIT_WAIT_S)
    logs = "".join(f"--- {r.function} {r.request_id} ({r.status.value})\n{r.logs}" for r in cloud.lambdas.invocations)
    return Kept(record, logs)


def _prepare(
    cloud: CloudBase,
    chosen: Scenario,
    steps: list[Step],
    *,
    registered: bool,
    sonic_backend: str,
    function_env: Mapping[str, str] | None,
) -> dict[str, Any]:
    """Ready a started cloud for the scenario's calls; what the emulators' timings are (:func:`_answer_with`).

    Every function (the prompts, and the consumer's replies) asks Sonic through ``sonic_backend``; with
    ``registered`` the Ink emulator hears each of the caller's clips as its own transcript, exactly."""
    assert cloud.lambdas is not None
    cloud.lambdas.env["SONIC_BACKEND"] = sonic_backend
    if registered:
        for step in steps:
            if isinstance(step, Say | Over):
                for clip in step.clip.registered:
                    cloud.register_transcript(clip.pcm, clip.transcript)
    return _answer_with(cloud, chosen, function_env)


def scenario_settings(chosen: Scenario) -> dict[str, str]:
    """The functions' settings a scenario needs: its responder (and, for the Lex bot, what its intents ask)."""
    settings = {"RESPONDER": chosen.responder}
    if chosen.responder == "lex":
        settings["LEX_INTENT_ACTIONS"] = _LEX_INTENT_ACTIONS
    return settings


def inject_scenario_faults(cloud: CloudBase, chosen: Scenario) -> None:
    """Make Sonic and the responder fail the way the scenario says (until the faults are cleared)."""
    if chosen.sonic_unavailable:
        cloud.inject("sonic", Fault(FaultKind.THROTTLE, count=_UNAVAILABLE_CALLS))
    if chosen.responder_failures:
        if chosen.responder == "bedrock":
            # However many calls those turns make (retries; a reply started at Ink's eager end, and one at the turn
            # end), every one of them is throttled, and none of a later turn's.
            fault = BedrockFault(
                BedrockFaultKind.THROTTLE, count=_UNAVAILABLE_CALLS, first_turns=chosen.responder_failures
            )
            cloud.inject("bedrock", fault)
        else:
            # Lex is asked once per turn, never speculatively, and never again.
            cloud.inject("lex", LexFault(LexFaultKind.THROTTLE, count=chosen.responder_failures))


def _answer_with(cloud: CloudBase, chosen: Scenario, function_env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Point the consumer at the scenario's responder, set ``function_env`` on every function, inject the scenario's
    faults; what the emulators' timings are."""
    assert cloud.lambdas is not None
    cloud.lambdas.env.update(scenario_settings(chosen))
    cloud.lambdas.env.update(function_env or {})
    inject_scenario_faults(cloud, chosen)
    emulated = cloud.emulated_timings()
    env = cloud.service_env()
    responder = {
        "bedrock": f"the Bedrock emulator's bank agent ({env['BEDROCK_MODEL_ID']}): first token after "
        f"{emulated['bedrock_time_to_first_token_ms']:g} ms, then {emulated['bedrock_tokens_per_second']:g} "
        "words a second",
        "lex": f"the Lex emulator's bank bot ({env['LEX_BOT_ID']})",
        "scripted": "the template's rules (scripted)",
    }[chosen.responder]
    print(
        f"responder: {responder}\nemulated timings: Ink ends a turn {emulated['ink_end_of_turn_delay_ms']:g} ms "
        "after the caller's last voiced audio (plus its recogniser's decode); Sonic's first audio after "
        f"{emulated['sonic_time_to_first_byte_ms']:g} ms, then {emulated['sonic_realtime_factor']:g}x real time"
    )
    return emulated


def place_calls(
    calls: int,
    chosen: Scenario,
    steps: list[Step],
    speech: SpeechEngine,
    *,
    sonic_backend: str = "sagemaker",
    interval_s: float = DEFAULT_INTERVAL_MS / 1000,
    own_processes: bool = True,
    clock: Callable[[], Clock] = RealClock,
    function_env: Mapping[str, str] | None = None,
    line: LineNoise | None = None,
    max_call_s: float = 1800.0,
) -> tuple[LoadRun, dict[str, Any]]:
    """``calls`` calls of the scenario on one new local cloud, the caller's clips registered with the Ink emulator so
    each turn can be checked; the run, and what the emulators' timings were.

    With ``own_processes`` moto and each emulator run in a process of their own, as the real services run on
    machines of their own, and the run's CPU is told per process. Each call runs on a ``clock()``: real time by
    default, as calls on a line do. A virtual clock skips the prompts, and the silence Connect streams under them
    then reaches the consumer faster than real time; Ink takes audio no faster than real time, so each skipped
    prompt puts Ink further behind the call, and a later turn ends seconds late on the call's clock (the last of
    the bank scenario's five, 6.6 s after the caller stopped on a 20-call run, against 0.7 s in real time). A call
    still going after ``max_call_s`` on its clock ends as an error.
    """
    with local_cloud(speech, own_processes=own_processes, calls=calls) as cloud:
        assert cloud.lambdas is not None
        emulated = _prepare(
            cloud, chosen, steps, registered=True, sonic_backend=sonic_backend, function_env=function_env
        )
        cloud.lambdas.keep(failed_invocation)
        services_cpu = cloud.cpu_seconds()
        table_requests = cloud.table_requests()
        process_cpu = time.process_time()
        run = simulate_calls(
            calls,
            lambda _: SimulatedCaller(steps, line=line),
            flow=FLOW,
            template_path=TEMPLATE,
            env=cloud.env(),
            kvs=cloud.media,
            voice=speech,
            clock=clock,
            interval_s=interval_s,
            max_call_s=max_call_s,
        )
        process_cpu = time.process_time() - process_cpu
        # Each consumer ends a few seconds after its call (the stream quiet, the record written): its CPU is counted
        # when its invocation ends, and the last calls' would be missing.
        if not cloud.lambdas.wait_for_idle(RECORD_WAIT_S):
            print(f"voicebridge demo: a function was still running {RECORD_WAIT_S:.0f} s after the calls ended")
        cpu = {f"{name} (its containers)": seconds for name, seconds in cloud.lambdas.cpu_seconds.items()}
        for name, seconds in cloud.cpu_seconds().items():
            cpu[f"{_SERVICE_NAMES[name]} (its process)"] = seconds - services_cpu[name]
        if own_processes:
            cpu["this process: the simulated calls and the Lambda emulator's front"] = process_cpu
        else:
            # moto, the emulators, the calls' flows and callers share this process, so its CPU is one figure.
            cpu["this process: moto, the emulators, the simulated calls"] = process_cpu
        served = cloud.table_requests()
        requests = {name: count - table_requests.get(name, 0) for name, count in served.items()}
        failed = tuple(failed_report(kept) for kept in cloud.lambdas.kept)
        counted = {name: count for name, count in requests.items() if count}
        run = replace(run, cpu_s=cpu, table_requests=counted, failed=failed)
        logging.getLogger("voicebridge_dev.local.lambda_").setLevel(logging.ERROR)
    return run, emulated


CONNECT_WAIT_MS = 8000
"""The longest Connect waits for a synchronous function (a block's ``InvocationTimeLimitSeconds`` is at most 8):
an answer later than that reaches no one, whatever it says."""


def failed_invocation(record: InvocationRecord, answer: bytes) -> bool:
    """An invocation a load run keeps the logs of: one that failed, whose answer told the flow ``Result=Error``, or
    that answered later than Connect waits."""
    return (
        record.status is not InvocationStatus.OK
        or _answer_error(answer) is not None
        or (record.invocation_type is InvocationType.REQUEST_RESPONSE and record.duration_ms > CONNECT_WAIT_MS)
    )


def _answer_error(answer: bytes) -> str | None:
    """``ErrorCode: ErrorMessage`` of an answer saying ``Result=Error``; None for any other answer."""
    try:
        parsed = json.loads(answer or b"null")
    except ValueError:
        return None
    if not isinstance(parsed, dict) or parsed.get("Result") != "Error":
        return None
    return f"{parsed.get('ErrorCode', '')}: {parsed.get('ErrorMessage', '')}"


def failed_report(kept: KeptInvocation) -> FailedInvocation:
    """What a load run reports of an invocation it kept."""
    record = kept.record
    if record.status is not InvocationStatus.OK:
        error = f"{(record.error or {}).get('errorType', '')}: {(record.error or {}).get('errorMessage', '')}"
    else:
        # Kept with an ok status: it answered Result=Error, or too late.
        late = f"late: answered {record.duration_ms:.0f} ms after it was invoked (Connect waits {CONNECT_WAIT_MS} ms)"
        error = _answer_error(kept.answer) or late
    return FailedInvocation(record.function, record.request_id, record.status.value, error, record.logs)


def run_load(
    calls: int,
    chosen: Scenario,
    steps: list[Step],
    speech: SpeechEngine,
    *,
    report: str | None = None,
    sonic_backend: str = "sagemaker",
    interval_ms: float = DEFAULT_INTERVAL_MS,
    own_processes: bool = True,
    function_env: Mapping[str, str] | None = None,
    line: LineNoise | None = None,
) -> int:
    """``calls`` calls of the scenario at once on one local cloud, in real time; exit status 0 when
    every caller turn was delivered exactly once and no call stopped on an error."""
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    print(
        f"scenario {chosen.name}, {calls} calls at once on one local cloud (in real time, placed "
        f"{interval_ms:g} ms apart): {chosen.description}"
    )
    print("recognition: the caller's clips' registered transcripts, so each turn can be checked against what was said")
    print(
        "services: moto and each emulator in a process of its own"
        if own_processes
        else "services: moto and every emulator in this process, with the simulated calls"
    )
    print(f"Lambda emulator: at most {containers_for(calls)} containers per function (the calls, and two more)")
    if function_env:
        print("function settings: " + ", ".join(f"{name}={value}" for name, value in function_env.items()))
    run, emulated = place_calls(
        calls,
        chosen,
        steps,
        speech,
        sonic_backend=sonic_backend,
        interval_s=interval_ms / 1000,
        own_processes=own_processes,
        function_env=function_env,
        line=line,
    )
    figures = load_figures(run)
    print(f"\n{figures['calls']} calls in {figures['wall_s']} s of wall time; ended: {figures['ended_by']}")
    print(load_table(figures))
    if report:
        context = {
            "scenario": chosen.name,
            "responder": chosen.responder,
            "emulated": emulated,
            "service_processes": own_processes,
            "function_env": dict(function_env or {}),
            "line_noise": None if line is None else line.condition,
        }
        print(f"{'report':>10}: {_write_report(report, {**context, **figures})}")
    turns = figures["turns"]
    if turns["exactly_once"] != turns["utterances"] or "error" in figures["ended_by"]:
        print("voicebridge demo: not every turn was delivered exactly once", file=sys.stderr)
        return 1
    return 0


def _run_streaming(
    chosen: Scenario,
    steps: list[Step],
    speech: SpeechEngine,
    *,
    out: Path,
    report: str | None,
    recognition: str,
    sonic_hosting: str,
    function_env: Mapping[str, str] | None,
    line: LineNoise | None = None,
    attributes: Mapping[str, str] | None = None,
    language: str = "en",
) -> int:
    """The demo's call on the streaming transport: the same scenario, cloud and services, Connect's A2A client
    emulator instead of the flow simulator; ``attributes`` are the contact's as a flow before the agent set them."""
    from voicebridge_dev import a2a_demo

    if recognition != "registered":
        embedded = load_recogniser("pocketsphinx" if recognition == "pocketsphinx" else "auto")
    else:
        embedded = None
    cloud = local_cloud(speech, own_processes=False, recogniser=embedded)
    print(f"scenario {chosen.name} on the streaming transport: {chosen.description}")
    with cloud:
        emulated = _prepare(
            cloud,
            chosen,
            steps,
            registered=embedded is None,
            sonic_backend=SONIC_BACKENDS[sonic_hosting],
            function_env=function_env,
        )
        assert cloud.lambdas is not None
        call = a2a_demo.place_streaming_call(
            cloud, steps, dict(cloud.lambdas.env), template=TEMPLATE, line=line, attributes=attributes
        )
    a2a_demo.print_summary(call)
    if line is not None:
        _print_line_effects(line, a2a_demo.line_effects(call, a2a_demo.turn_figures(call)))
    redactor = demo_redactor(function_env)
    files = a2a_demo.write_outputs(call, out, redactor)
    if report:
        context = _report_context(chosen, emulated, sonic_hosting, speech, embedded, files)
        written = a2a_demo.build_report(call, **context, line_noise=None if line is None else line.condition)
        written = with_turn_ending(written, call.record, language)
        files["report"] = _write_report(report, redacted_report(written, redactor))
    for name, path in files.items():
        print(f"{name:>10}: {path}")
    if call.violations:
        return 1
    return 0
