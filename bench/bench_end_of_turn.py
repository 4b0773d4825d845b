"""End of turn: how soon our model calls a caller's turn complete, and how often it cuts a mid-sentence pause.

Each line of ``bench/end_of_turn/<language>.txt`` is a caller's sentence with one or more ``|``, places the caller
pauses mid-sentence; each ``|`` makes one utterance, paused there only. The sentence is spoken by the local engine
(English: piper's en_US voice; Spanish: espeak-ng's ``es``) with a comma at the pause, so the voice keeps the
rising, unfinished tone of a clause; the gap the comma leaves (the silence nearest where the comma falls) is
stretched to a pause of 300–900 ms (seeded, uniform). The audio is what a telephone line carries: 8 kHz, through
G.711 µ-law and back, with noise at -60 dBFS under it, 0.4 s of it before the caller starts and 2.5 s after.

The product's pipeline then runs on it as on a call, in 20 ms frames: the voice detector
(:class:`~voicebridge.audio.vad.VoiceActivity` with ``VOICE_DETECTOR``'s default) and the
:class:`~voicebridge.audio.end_of_turn.TurnEndWatch` that asks Smart Turn about each stop (upsampled to 16 kHz).
The figures per language:

- ``median_ms``, ``p90_ms``: from the caller's last voiced frame (the last 10 ms within 40 dB of the utterance's
  peak, in the clean synthesis) to "complete": the stream position of the verdict plus the CPU time the verdict took
  in this process (resampling, features, the model). An end the model calls incomplete counts as the silence that
  ends a turn without it (``MANUAL_END_SILENCE_MS`` after the detector's end), as manual mode does;
- ``incomplete_ends``: the share of real ends the model called incomplete;
- ``cut_off_rate``: the share of mid-sentence pauses called complete (the caller would be cut off);
- ``inner_stops_called_complete``: the share of utterances with another stop before the end (a gap between words the
  detector took for a stop) called complete;
- ``score_cpu_ms``: the median CPU time of one verdict, and ``model_cpu_ms_per_audio_min`` what the product's watch
  spends on the model per minute of this audio (every stop asked about until it is called complete);
- ``silence_alone``: the peer, manual mode without the model (a turn ends after 700 ms of silence).

A sweep gives the same figures for a watch that starts asking later or needs a higher probability; the model's
answers are kept under ``out/end_of_turn/`` (by the audio's and the models' hashes), so a rerun only replays them.

The sentences were written for this benchmark alongside the code that judges them, so the figures are an upper
bound on what an independent set would show. Run ``voicebridge bench --only end-of-turn`` or
``python bench/bench_end_of_turn.py [--json] [--limit N]``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from voicebridge.audio import onnx
from voicebridge.audio.end_of_turn import TurnEndWatch
from voicebridge.audio.mulaw import mulaw_decode, mulaw_encode
from voicebridge.audio.vad import VoiceActivity, detector
from voicebridge.config import Settings
from voicebridge_dev.local.speech_engine import EspeakSpeechEngine, PiperSpeechEngine, SpeechEngine

SETS = Path(__file__).resolve().parent / "end_of_turn"
RATE = 8000
FRAME_BYTES = 320
PAUSE_MS = (300.0, 900.0)
LEAD_MS = 400
TAIL_MS = 2500
MANUAL_END_SILENCE_MS = 700.0
"""How long a silence ends a turn in manual mode without the model (the transcriber's ``manual_end_silence_ms``)."""

ASKED_AT_MS = (0.0, 150.0, 300.0, 500.0, 700.0)
"""The silences the benchmark asks the model at; a watch asking at any of them is judged from these answers."""
DEFAULT = TurnEndWatch()
"""The watch as the product makes it: where it starts asking, and its threshold."""

Pcm = npt.NDArray[np.int16]


class Case(NamedTuple):
    spoken: str
    """The sentence as the engine reads it: a comma at the pause."""
    pause_at: float
    """Where the pause falls, as a share of the sentence's characters."""
    pause_ms: float


class Rendered(NamedTuple):
    pcm: bytes
    pause: tuple[float, float]
    """The mid-sentence pause, ms from the stream's start."""
    end_ms: float


def cases(language: str, seed: int = 5) -> list[Case]:
    rng = np.random.default_rng(seed)
    found = []
    for line in (SETS / f"{language}.txt").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split("|")]
        for mark in range(1, len(parts)):
            before, after = " ".join(parts[:mark]), " ".join(parts[mark:])
            spoken = f"{before}, {after}"
            found.append(Case(spoken, len(before) / len(spoken), float(rng.uniform(*PAUSE_MS))))
    return found


def _voiced_10ms(samples: Pcm) -> npt.NDArray[np.bool_]:
    whole = len(samples) - len(samples) % 80
    power = np.mean(np.square(samples[:whole].astype(np.float64).reshape(-1, 80)), axis=1)
    voiced: npt.NDArray[np.bool_] = power > power.max() * 1e-4
    return voiced


def render(case: Case, engine: SpeechEngine, seed: int) -> Rendered | None:
    """The case as a telephone line carries it, or None when the engine left no gap where the comma is."""
    speech = engine.synthesize(case.spoken, sample_rate=RATE, speed=1.0)
    voiced = _voiced_10ms(speech)
    first, last = int(np.argmax(voiced)), len(voiced) - int(np.argmax(voiced[::-1]))
    gaps, start = [], None
    for index in range(first, last):
        if not voiced[index] and start is None:
            start = index
        elif voiced[index] and start is not None:
            if index - start >= 4:
                gaps.append((start, index))
            start = None
    if not gaps:
        return None
    expected = first + case.pause_at * (last - first)
    gap_start, gap_end = min(gaps, key=lambda gap: abs((gap[0] + gap[1]) / 2 - expected))
    pause = np.zeros(int(case.pause_ms * RATE / 1000), dtype=np.int16)
    line = np.concatenate(
        (np.zeros(LEAD_MS * 8, np.int16), speech[: gap_start * 80], pause, speech[gap_end * 80 : last * 80])
    )
    end_ms = len(line) / 8
    line = np.concatenate((line, np.zeros(TAIL_MS * 8, np.int16)))
    noise = np.random.default_rng(seed).normal(0, 32768 * 10 ** (-60 / 20), len(line))
    noisy = np.clip(np.rint(line + noise), -32768, 32767).astype(np.int16)
    pause_start = LEAD_MS + (gap_start - first) * 10 + first * 10
    return Rendered(mulaw_decode(mulaw_encode(noisy)).tobytes(), (pause_start, pause_start + case.pause_ms), end_ms)


class Stop(NamedTuple):
    """One stop of the caller's voice and the model's answers as the silence after it grew."""

    voice_end_ms: float
    final: bool
    """No voice followed (kept for reference: the figures place a stop by where it falls in the sentence)."""
    asked: list[tuple[float, float, float, float]]
    """Per silence asked at: that silence, the stream position, the probability, the CPU ms the verdict took."""


def listen(rendered: Rendered) -> list[Stop]:
    """The pipeline on one utterance, fed 20 ms at a time, the model asked at every silence of ``ASKED_AT_MS``."""
    vad = VoiceActivity(detector=detector(Settings().voice_detector), close_ms=300)
    watch = TurnEndWatch(ask_at_ms=ASKED_AT_MS, threshold=1.0)
    stops: dict[float, list[tuple[float, float, float, float]]] = {}
    for offset in range(0, len(rendered.pcm), FRAME_BYTES):
        chunk = rendered.pcm[offset : offset + FRAME_BYTES]
        vad.feed(chunk)
        started = time.process_time()
        verdict = watch.feed(chunk, vad)
        if verdict is not None:
            cpu_ms = (time.process_time() - started) * 1000
            asked = stops.setdefault(verdict.voice_end_ms, [])
            asked.append((ASKED_AT_MS[len(asked)], verdict.at_ms, verdict.probability, cpu_ms))
    ends = sorted(stops)
    return [Stop(end, end == ends[-1], stops[end]) for end in ends]


class Outcome(NamedTuple):
    cut_off: bool
    """The mid-sentence pause was called complete."""
    inner: bool
    """Another stop before the end (a gap between words) was called complete."""
    latency_ms: float
    incomplete_end: bool


END_SLACK_MS = 100.0
"""A stop whose voice end is this close to the sentence's end, or after it, is the sentence's end."""


def _where(rendered: Rendered, stop: Stop) -> str:
    if stop.voice_end_ms >= rendered.end_ms - END_SLACK_MS:
        return "end"
    if rendered.pause[0] - END_SLACK_MS <= stop.voice_end_ms < rendered.pause[1]:
        return "pause"
    return "inner"


def decide(rendered: Rendered, stops: list[Stop], ask_at_ms: tuple[float, ...], threshold: float) -> Outcome:
    """What a watch asking at the silences ``ask_at_ms`` (some of ``ASKED_AT_MS``), with ``threshold``, makes of the
    utterance."""
    called: dict[str, bool] = {"pause": False, "inner": False}
    latency = None
    for stop in stops:
        complete = next(
            (
                at_ms + cpu_ms
                for silence_ms, at_ms, p, cpu_ms in stop.asked
                if silence_ms in ask_at_ms and p > threshold
            ),
            None,
        )
        if complete is None:
            continue
        where = _where(rendered, stop)
        if where == "end":
            latency = complete - rendered.end_ms if latency is None else latency
        else:
            called[where] = True
    if latency is None:
        ends = [stop.voice_end_ms for stop in stops if _where(rendered, stop) == "end"]
        voice_end = ends[0] if ends else rendered.end_ms
        return Outcome(called["pause"], called["inner"], voice_end + MANUAL_END_SILENCE_MS - rendered.end_ms, True)
    return Outcome(called["pause"], called["inner"], latency, False)


def by_silence(rendered: Rendered, stops: list[Stop]) -> Outcome:
    """The peer: manual mode without the model, a turn ending after ``MANUAL_END_SILENCE_MS`` of silence."""
    reached = {
        _where(rendered, stop)
        for stop in stops
        if any(silence_ms >= MANUAL_END_SILENCE_MS for silence_ms, *_ in stop.asked)
    }
    ends = [stop.voice_end_ms for stop in stops if _where(rendered, stop) == "end"]
    voice_end = ends[0] if ends else rendered.end_ms
    return Outcome("pause" in reached, "inner" in reached, voice_end + MANUAL_END_SILENCE_MS - rendered.end_ms, False)


def model_cpu_ms(stops: list[Stop], ask_at_ms: tuple[float, ...], threshold: float) -> float:
    """The CPU the watch spends on one utterance: each answer it asks for, up to the first complete per stop."""
    spent = 0.0
    for stop in stops:
        for silence_ms, _, probability, cpu_ms in stop.asked:
            if silence_ms in ask_at_ms:
                spent += cpu_ms
                if probability > threshold:
                    break
    return spent


def figures_of(outcomes: list[Outcome]) -> dict[str, float]:
    latencies = sorted(outcome.latency_ms for outcome in outcomes)
    return {
        "median_ms": round(statistics.median(latencies)),
        "p90_ms": round(latencies[int(0.9 * (len(latencies) - 1))]),
        "incomplete_ends": round(sum(o.incomplete_end for o in outcomes) / len(outcomes), 3),
        "cut_off_rate": round(sum(o.cut_off for o in outcomes) / len(outcomes), 3),
        "inner_stops_called_complete": round(sum(o.inner for o in outcomes) / len(outcomes), 3),
    }


def _spanish() -> SpeechEngine:
    return EspeakSpeechEngine("es")


ENGINES: dict[str, Callable[[], SpeechEngine]] = {"en": PiperSpeechEngine, "es": _spanish}


CACHE = Path(__file__).resolve().parents[1] / "out" / "end_of_turn"


@functools.cache
def _models_digest() -> bytes:
    digest = hashlib.sha256()
    for name in (onnx.SILERO_VAD, onnx.SMART_TURN):
        digest.update((onnx.FOLDER / name).read_bytes())
    return digest.digest()


def _listened(language: str, index: int, rendered: Rendered) -> list[Stop]:
    """The model's answers for one utterance, kept under out/ by the audio's and the models' hashes: a sweep of the
    watch's settings, or a rerun, asks the model nothing it has been asked before."""
    key = hashlib.sha256(rendered.pcm + _models_digest()).hexdigest()[:16]
    path = CACHE / language / f"{index:03d}-{key}.json"
    if path.is_file():
        return [
            Stop(s["voice_end_ms"], s["final"], [tuple(a) for a in s["asked"]]) for s in json.loads(path.read_text())
        ]
    stops = listen(rendered)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([stop._asdict() for stop in stops]))
    return stops


THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.97)


def run(limit: int | None = None) -> dict[str, Any]:
    heard: dict[str, list[tuple[Rendered, list[Stop]]]] = {}
    figures: dict[str, Any] = {"detector": Settings().voice_detector}
    for language, make in ENGINES.items():
        engine = make()
        heard[language], skipped = [], 0
        for index, case in enumerate(cases(language)[:limit]):
            rendered = render(case, engine, seed=index)
            if rendered is None:
                skipped += 1
                continue
            heard[language].append((rendered, _listened(language, index, rendered)))
        cpu = [ms for _, stops in heard[language] for stop in stops for *_, ms in stop.asked]
        default = [decide(r, stops, DEFAULT.ask_at_ms, DEFAULT.threshold) for r, stops in heard[language]]
        figures[language] = {
            "utterances": len(heard[language]),
            "skipped": skipped,
            **figures_of(default),
            "score_cpu_ms": round(statistics.median(cpu), 1),
            "model_cpu_ms_per_audio_min": round(
                sum(model_cpu_ms(stops, DEFAULT.ask_at_ms, DEFAULT.threshold) for _, stops in heard[language])
                / (sum(len(r.pcm) for r, _ in heard[language]) / 2 / RATE / 60)
            ),
            "silence_alone": figures_of([by_silence(r, stops) for r, stops in heard[language]]),
        }
    figures["sweep"] = [
        {
            "first_ask_ms": ASKED_AT_MS[first],
            "threshold": threshold,
            **{
                language: figures_of([decide(r, stops, ASKED_AT_MS[first:], threshold) for r, stops in heard[language]])
                for language in ENGINES
            },
        }
        for first in range(len(ASKED_AT_MS))
        for threshold in THRESHOLDS
    ]
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"voice detector: {figures['detector']}; the product's watch: asked from {DEFAULT.ask_at_ms[0]:.0f} ms of "
        f"silence, complete above {DEFAULT.threshold}; targets: median <= 400 ms, cut-offs <= 5 %"
    ]
    for language in ENGINES:
        row = figures[language]
        lines.append(
            f"{language}: {row['utterances']} utterances ({row['skipped']} skipped): median {row['median_ms']} ms, "
            f"p90 {row['p90_ms']} ms, ends called incomplete {row['incomplete_ends']:.1%}, "
            f"pauses cut off {row['cut_off_rate']:.1%}, {row['score_cpu_ms']} ms CPU per verdict; the peer, "
            f"{MANUAL_END_SILENCE_MS:.0f} ms of silence alone: median {row['silence_alone']['median_ms']} ms, "
            f"cut-offs {row['silence_alone']['cut_off_rate']:.1%}"
        )
    lines.append("sweep (first ask, threshold): per language median ms / cut-offs")
    for point in figures["sweep"]:
        cells = "  ".join(
            f"{lang} {point[lang]['median_ms']:>4} / {point[lang]['cut_off_rate']:.1%}" for lang in ENGINES
        )
        lines.append(f"  {point['first_ask_ms']:>4.0f} ms  {point['threshold']:<5}  {cells}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="utterances per language")
    args = parser.parse_args()
    figures = run(args.limit)
    print(json.dumps(figures, indent=2) if args.json else report(figures))


if __name__ == "__main__":
    main()
