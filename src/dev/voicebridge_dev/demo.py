"""``voicebridge demo``: one simulated inbound call through ``contact_flows/voice-agent.json``, in real time.

Everything runs on loopback from this process: the local cloud (moto; the Sonic, KVS, Ink and Lambda
emulators, the last running the template's functions in worker processes) and the flow simulator playing
Amazon Connect with a scripted caller (:mod:`voicebridge_dev.simulator`). Every production code path is
used: the flow invokes StartListening, Synthesize and AwaitTurn through ``lambda.invoke``; the caller's audio
streams through the KVS emulator to the consumer, on to the Ink emulator and into DynamoDB; prompts come from
S3.

The terminal shows the live timeline, then the per-turn latencies. ``out/`` receives ``call.wav`` (stereo
8 kHz: the caller left, the bot right), ``transcript.txt`` and ``timeline.png``; ``--report`` writes the JSON
report. With the ``speech`` extra installed the bot speaks with piper and the Ink emulator recognises the
caller with PocketSphinx; otherwise deterministic stand-ins do both. None of them is Sonic or Ink.
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

from voicebridge.audio.wav import pcm16_wav_bytes
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.ink import Recogniser, RecogniserUnavailableError, load_recogniser
from voicebridge_dev.local.sonic import Fault, FaultKind
from voicebridge_dev.local.speech_engine import SpeechEngine, load_engine
from voicebridge_dev.simulator import (
    CallerScriptError,
    CallLog,
    CallResult,
    Clip,
    LiveTimeline,
    RealClock,
    Say,
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

TEMPLATE = Path("template.yaml")
FLOW = Path("contact_flows/voice-agent.json")
# More throttled model calls than a whole call makes: Sonic stays unavailable from start to end.
_UNAVAILABLE_CALLS = 10_000
_RECOGNISE_TIMEOUT_S = 30.0

_worker_recogniser: Recogniser | None = None


def _start_worker() -> None:
    global _worker_recogniser
    _worker_recogniser = load_recogniser("pocketsphinx")


def _recognise_in_worker(pcm_s16le: bytes, sample_rate: int) -> str:
    if _worker_recogniser is None:
        raise RecogniserUnavailableError("the recogniser process did not start its recogniser")
    return _worker_recogniser.transcribe(pcm_s16le, sample_rate)


class _ChildProcessRecogniser:
    """PocketSphinx in a child process of its own.

    A decode holds the interpreter lock for about half a second per sentence; in this process it would stall
    the media streamed to KVS in real time, and the consumer would pad the caller's speech with silence.
    """

    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker
        )
        # Start the worker and load its model while the local cloud starts, not during the first turn.
        self._pool.submit(_recognise_in_worker, b"", 16000)

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        return self._pool.submit(_recognise_in_worker, pcm_s16le, sample_rate).result(_RECOGNISE_TIMEOUT_S)

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)


def run_demo(
    *,
    out: Path,
    report: str | None,
    engine: str = "auto",
    scenario: str = "normal",
    text: str | None = None,
) -> int:
    """Run the demo call; returns the exit status (0 when the flow ended the call or the caller hung up).

    ``text``, when given, replaces the caller's first utterance: the local speech engine speaks it.
    """
    speech = load_engine(engine)
    try:
        chosen = find_scenario(scenario)
        steps = chosen.script(load_clips())
    except CallerScriptError as exc:
        print(f"voicebridge demo: {exc}", file=sys.stderr)
        return 2
    if text:
        steps = _with_first_utterance(steps, text, speech)
    recogniser = _ChildProcessRecogniser() if load_recogniser("auto") is not None else None
    # moto's web server logs every request; the timeline is what a person should read.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    out.mkdir(parents=True, exist_ok=True)
    print(f"scenario {chosen.name}: {chosen.description}")
    print(
        "local cloud (emulators, not the real services): moto, Sonic endpoint emulator "
        f"(voice: {speech.name}), KVS emulator, Ink emulator (recognition: "
        f"{'PocketSphinx' if recogniser is not None else 'registered transcripts'}), Lambda emulator, "
        "and the flow simulator playing Amazon Connect"
    )
    try:
        result = _call(chosen.sonic_unavailable, steps, speech, recogniser)
    finally:
        if recogniser is not None:
            recogniser.close()
    print(
        "\nper-turn latency (caller stops speaking -> turn available to the flow -> reply prompt ready -> "
        "reply starts playing)"
    )
    print(latency_table(result))
    files = _write_files(result, out)
    context: dict[str, Any] = {
        "scenario": chosen.name,
        "speech_engine": speech.name,
        "recogniser": "pocketsphinx" if recogniser is not None else "registered transcripts",
        "files": {name: str(path) for name, path in files.items()},
    }
    if report:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps(build_report(result, **context), indent=2) + "\n", encoding="utf-8")
        files["report"] = Path(report)
    for name, path in files.items():
        print(f"{name:>10}: {path}")
    if result.ended_by == "error":
        print(f"voicebridge demo: the call stopped: {result.detail}", file=sys.stderr)
        return 1
    return 0


def _with_first_utterance(steps: list[Step], text: str, speech: SpeechEngine) -> list[Step]:
    """``steps`` with the first utterance replaced by ``text`` in the local speech engine's voice."""
    clip = Clip("custom", text, speech.synthesize(text, 8000, 1.0))
    for index, step in enumerate(steps):
        if isinstance(step, Say):
            return [*steps[:index], replace(step, clip=clip), *steps[index + 1 :]]
    return [Say(clip), *steps]


def _write_files(result: CallResult, out: Path) -> dict[str, Path]:
    files = {
        "recording": out / "call.wav",
        "transcript": out / "transcript.txt",
        "timeline": out / "timeline.png",
    }
    files["recording"].write_bytes(pcm16_wav_bytes(result.recording, result.sample_rate, channels=2))
    files["transcript"].write_text(transcript(result), encoding="utf-8")
    files["timeline"].write_bytes(timeline_png(result))
    return files


def _call(
    sonic_unavailable: bool, steps: list[Step], speech: SpeechEngine, recogniser: Recogniser | None
) -> CallResult:
    with LocalCloud(template=TEMPLATE, engine=speech, media_pace=0, recogniser=recogniser) as cloud:
        if recogniser is None:
            for step in steps:
                if isinstance(step, Say):
                    cloud.ink.register(step.clip.pcm, step.clip.transcript)
        if sonic_unavailable:
            cloud.sonic.faults.push(Fault(FaultKind.THROTTLE, count=_UNAVAILABLE_CALLS))
        log = CallLog()
        log.subscribe(LiveTimeline())
        print(f"\n{'time':>10}  event")
        result = simulate_call(
            FLOW,
            template_path=TEMPLATE,
            env=cloud.env(),
            kvs=cloud.kvs,
            voice=speech,
            caller=SimulatedCaller(steps),
            clock=RealClock(),
            log=log,
        )
        # The consumer is still making sure the stream has ended (it retries GetMedia for a few seconds) when
        # the emulator stops: its cancellation is expected, not worth a warning on the demo's screen.
        logging.getLogger("voicebridge_dev.local.lambda_").setLevel(logging.ERROR)
    return result
