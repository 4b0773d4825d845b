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
- ``score_cpu_ms``: the median CPU time of one verdict.

The sentences were written for this benchmark alongside the code that judges them, so the figures are an upper
bound on what an independent set would show. Run ``voicebridge bench --only end-of-turn`` or
``python bench/bench_end_of_turn.py [--json] [--limit N]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

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


class Judged(NamedTuple):
    cut_off: bool
    latency_ms: float
    incomplete_end: bool
    score_cpu_ms: list[float]


def judge(rendered: Rendered) -> Judged:
    """The pipeline's verdicts on one utterance, fed 20 ms at a time."""
    vad = VoiceActivity(detector=detector(Settings().voice_detector), close_ms=300)
    watch = TurnEndWatch()
    cut_off, latency, cpu = False, None, []
    for offset in range(0, len(rendered.pcm), FRAME_BYTES):
        chunk = rendered.pcm[offset : offset + FRAME_BYTES]
        vad.feed(chunk)
        started = time.process_time()
        verdict = watch.feed(chunk, vad)
        if verdict is None:
            continue
        spent = (time.process_time() - started) * 1000
        cpu.append(spent)
        if not verdict.complete:
            continue
        if verdict.voice_end_ms <= rendered.pause[1] and verdict.at_ms < rendered.pause[1]:
            cut_off = True
        elif verdict.voice_end_ms > rendered.pause[1] and latency is None:
            latency = verdict.at_ms + spent - rendered.end_ms
    incomplete = latency is None
    if latency is None:
        voice_end = vad.last_voiced_end_ms if vad.last_voiced_end_ms is not None else rendered.end_ms
        latency = voice_end + MANUAL_END_SILENCE_MS - rendered.end_ms
    return Judged(cut_off, latency, incomplete, cpu)


ENGINES = {"en": PiperSpeechEngine, "es": lambda: EspeakSpeechEngine("es")}


def run(limit: int | None = None) -> dict[str, Any]:
    figures: dict[str, Any] = {"detector": Settings().voice_detector}
    for language, make in ENGINES.items():
        engine = make()
        judged, skipped = [], 0
        for index, case in enumerate(cases(language)[:limit]):
            rendered = render(case, engine, seed=index)
            if rendered is None:
                skipped += 1
                continue
            judged.append(judge(rendered))
        latencies = sorted(j.latency_ms for j in judged)
        figures[language] = {
            "utterances": len(judged),
            "skipped": skipped,
            "median_ms": round(statistics.median(latencies)),
            "p90_ms": round(latencies[int(0.9 * (len(latencies) - 1))]),
            "incomplete_ends": round(sum(j.incomplete_end for j in judged) / len(judged), 3),
            "cut_off_rate": round(sum(j.cut_off for j in judged) / len(judged), 3),
            "score_cpu_ms": round(statistics.median(ms for j in judged for ms in j.score_cpu_ms), 1),
        }
    return figures


def report(figures: dict[str, Any]) -> str:
    lines = [f"voice detector: {figures['detector']}; targets: median <= 400 ms, cut-offs <= 5 %"]
    for language in ENGINES:
        row = figures[language]
        lines.append(
            f"{language}: {row['utterances']} utterances ({row['skipped']} skipped): median {row['median_ms']} ms, "
            f"p90 {row['p90_ms']} ms, ends called incomplete {row['incomplete_ends']:.1%}, "
            f"pauses cut off {row['cut_off_rate']:.1%}, {row['score_cpu_ms']} ms CPU per verdict"
        )
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
