"""Voice detection on telephone lines: Silero VAD next to the energy detector, each alone and held to the line's
noise floor as the product runs them, on the caller's clips in noise.

The simulated caller's clips (``src/dev/voicebridge_dev/simulator/clips/``: speech from the local engines, 8 kHz) are
laid end to end, three rounds in a seeded order with 0.8–2.0 s between them, after 20 s with no speech, and the whole
stream is mixed with one noise per condition: ``clean`` (none) and the simulated caller's line noises
(:mod:`voicebridge_dev.simulator.line`: white noise and babble at 20 and 10 dB below the speech's active level,
comfort noise at -50 dBov). Each clip's true span runs from its first to its last frame above -50 dBFS in the clean
clip. The detectors: ``energy`` and ``silero`` alone, and ``energy+floor`` and ``silero+floor``, each held to the
line's noise floor (:class:`~voicebridge.audio.vad.AboveNoiseFloor`, what ``VOICE_DETECTOR`` gives). Each feeds
:class:`~voicebridge.audio.vad.VoiceActivity` (20 ms frames, 60 ms to start, ``close_ms`` 300) the whole stream,
in 20 ms chunks as a call delivers it, and the figures per condition are:

- ``false_starts_per_min``: detected utterances that overlap no clip, per minute of the stream's non-speech;
- ``noise_judged_speech``: the share of non-speech time inside a detected utterance;
- ``missed_clips``: clips no detected utterance overlaps, of 24;
- ``missed_speech``: the share of the clips' speech time outside every detected utterance;
- ``end_late_ms``: median, over the clips found, of the detected end minus the true end (what the caller waits
  before any end of turn can start);
- ``cpu_ms_per_min``: the detector's CPU time per minute of audio (this process, one thread).

Run ``voicebridge bench --only vad`` or ``python bench/bench_vad.py [--json]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import wave
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from voicebridge.audio.silero import SileroDetector
from voicebridge.audio.vad import EnergyDetector, FrameDetector, Utterance, VoiceActivity, detector
from voicebridge_dev.simulator.line import LINE_NOISES, active_power, noise

ROOT = Path(__file__).resolve().parents[1]
CLIPS = ROOT / "src" / "dev" / "voicebridge_dev" / "simulator" / "clips"
RATE = 8000
FRAME = 160
ROUNDS = 3
LEAD_S = 20.0
CLOSE_MS = 300
DETECTORS: dict[str, Callable[[], FrameDetector]] = {
    "energy": EnergyDetector,
    "silero": SileroDetector,
    "energy+floor": lambda: detector("energy"),
    "silero+floor": lambda: detector("silero"),
}
CONDITIONS = ("clean", *LINE_NOISES)

Signal = npt.NDArray[np.float64]


class Stream(NamedTuple):
    audio: Signal
    """Samples scaled to ±1."""
    spans: list[tuple[float, float]]
    """Each clip's true speech, in ms."""
    speech_power: float


def _clips() -> list[Signal]:
    clips = []
    for path in sorted(CLIPS.glob("*.wav")):
        with wave.open(str(path), "rb") as wav:
            assert wav.getframerate() == RATE and wav.getnchannels() == 1 and wav.getsampwidth() == 2
            clips.append(np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2") / 32768.0)
    return clips


def _frame_power(signal: Signal) -> Signal:
    whole = len(signal) - len(signal) % FRAME
    power: Signal = np.mean(np.square(signal[:whole].reshape(-1, FRAME)), axis=1)
    return power


def _speech_bounds_ms(clip: Signal) -> tuple[float, float]:
    loud = np.flatnonzero(_frame_power(clip) > 10 ** (-50 / 10))
    return float(loud[0] * 20), float((loud[-1] + 1) * 20)


def speech_stream(clips: list[Signal], seed: int = 7) -> Stream:
    """The clips end to end after a lead of non-speech, with their true spans and active speech power."""
    rng = np.random.default_rng(seed)
    parts: list[Signal] = [np.zeros(int(LEAD_S * RATE))]
    spans = []
    position = LEAD_S * 1000
    for _ in range(ROUNDS):
        for index in rng.permutation(len(clips)):
            gap = np.zeros(int(rng.uniform(0.8, 2.0) * RATE))
            parts.append(gap)
            position += len(gap) / 8
            start, end = _speech_bounds_ms(clips[index])
            spans.append((position + start, position + end))
            parts.append(clips[index])
            position += len(clips[index]) / 8
    parts.append(np.zeros(2 * RATE))
    return Stream(np.concatenate(parts), spans, active_power(clips))


def detect(name: str, audio: Signal) -> tuple[list[Utterance], float]:
    """The utterances the detector finds in the stream fed in 20 ms chunks, and the CPU seconds it took."""
    pcm = np.clip(np.rint(audio * 32768), -32768, 32767).astype("<i2").tobytes()
    vad = VoiceActivity(detector=DETECTORS[name](), close_ms=CLOSE_MS)
    started = time.process_time()
    for offset in range(0, len(pcm), FRAME * 2):
        vad.feed(pcm[offset : offset + FRAME * 2])
    cpu = time.process_time() - started
    found = list(vad.closed)
    if (last := vad.take()) is not None:
        found.append(last)
    return found, cpu


def _overlaps(a: tuple[float, float], b: Utterance) -> bool:
    return a[0] < b.end_ms and b.start_ms < a[1]


def score(stream: Stream, found: list[Utterance], cpu_s: float) -> dict[str, float]:
    total_ms = len(stream.audio) / 8
    speech_ms = sum(end - start for start, end in stream.spans)
    false_starts = sum(1 for u in found if not any(_overlaps(span, u) for span in stream.spans))
    speech_mask = np.zeros(int(total_ms), dtype=bool)
    for start, end in stream.spans:
        speech_mask[int(start) : int(end)] = True
    found_mask = np.zeros(int(total_ms), dtype=bool)
    for u in found:
        found_mask[int(u.start_ms) : int(u.end_ms)] = True
    late = []
    for span in stream.spans:
        hits = [u for u in found if _overlaps(span, u)]
        if hits:
            late.append(max(u.end_ms for u in hits) - span[1])
    return {
        "false_starts_per_min": round(false_starts / ((total_ms - speech_ms) / 60000), 2),
        "noise_judged_speech": round(float(np.mean(found_mask[~speech_mask])), 3),
        "missed_clips": len(stream.spans) - len(late),
        "missed_speech": round(float(np.mean(~found_mask[speech_mask])), 3),
        "end_late_ms": round(statistics.median(late)) if late else float("nan"),
        "cpu_ms_per_min": round(cpu_s * 1000 / (total_ms / 60000), 1),
    }


def run() -> dict[str, Any]:
    clips = _clips()
    stream = speech_stream(clips)
    figures: dict[str, Any] = {"clips": len(stream.spans), "stream_s": round(len(stream.audio) / RATE, 1)}
    for condition in CONDITIONS:
        noisy = stream.audio + noise(condition, len(stream.audio), clips, stream.speech_power)
        figures[condition] = {name: score(stream, *detect(name, noisy)) for name in DETECTORS}
    return figures


def report(figures: dict[str, Any]) -> str:
    keys = ("false_starts_per_min", "noise_judged_speech", "missed_clips", "missed_speech", "end_late_ms",
            "cpu_ms_per_min")  # fmt: skip
    lines = [f"{figures['clips']} clips in {figures['stream_s']} s of audio per condition"]
    lines.append(f"{'condition':<15}{'detector':<14}" + "".join(f"{key:>22}" for key in keys))
    for condition in CONDITIONS:
        for name in DETECTORS:
            row = figures[condition][name]
            lines.append(f"{condition:<15}{name:<14}" + "".join(f"{row[key]:>22}" for key in keys))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = run()
    print(json.dumps(figures, indent=2) if args.json else report(figures))


if __name__ == "__main__":
    main()
