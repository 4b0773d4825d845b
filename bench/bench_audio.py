"""Speak-path audio benchmark: Sonic's raw chunks → 8 kHz mono µ-law WAV, chunk by chunk.

Sonic streams ≤ 20 ms chunks; the synthesizer converts each one as it arrives with
:class:`voicebridge.audio.MulawConverter`. This measures, for 24 kHz ``pcm_s16le`` fed in 20 ms chunks:

- throughput in × real time (audio seconds converted per second of the converting thread's CPU time, so
  other load on the machine does not distort it; best of a few runs) and the cost of one chunk, for the two
  resampler peers (``numpy`` polyphase FIR, ``soxr``) and for 8 kHz input that needs no resampling
  (``pcm_mulaw`` copied through, ``pcm_s16le`` encoded only);
- each resampler's quality on the int16 samples it delivers: SNR against an exact reference (a multi-tone
  signal with tones inside the telephone band and tones above 4 kHz that must not fold back, evaluated
  analytically at 8 kHz), and the worst alias rejection over a sweep of full-scale tones above 4 kHz;
- the same figures for libsoxr's quality presets, which is how the preset used by ``SoxrResampler`` is chosen.

Run ``python bench/bench_audio.py [--seconds N] [--json]``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from voicebridge.audio.convert import MulawConverter
from voicebridge.audio.mulaw import mulaw_encode
from voicebridge.audio.resample import NumpyResampler, SoxrResampler, StreamResampler, make_resampler

SOURCE_RATE = 24000
TARGET_RATE = 8000
CHUNK_MS = 20
REPEATS = 3
IN_BAND_HZ = (130, 310, 520, 770, 1010, 1370, 1730, 2110, 2490, 2870, 3230)
ABOVE_BAND_HZ = (4400, 5100, 6300, 7700, 9100, 10900)
ALIAS_SWEEP_HZ = (4100, 4400, 5000, 6000, 7500, 9000, 11000)
SOXR_PRESETS = ("QQ", "LQ", "MQ", "HQ", "VHQ")
SOXR_DEFAULT_PRESET = inspect.signature(SoxrResampler).parameters["quality"].default


def _tones(frequencies: tuple[int, ...], amplitude: float, rate: int, samples: int, seed: int) -> np.ndarray:
    phases = np.random.default_rng(seed).uniform(0, 2 * np.pi, len(frequencies))
    t = np.arange(samples) / rate
    return sum(
        (amplitude * np.sin(2 * np.pi * f * t + p) for f, p in zip(frequencies, phases, strict=True)),
        start=np.zeros(samples),
    )


def _test_signal(seconds: float, rate: int) -> np.ndarray:
    """Speech-band tones plus noise at about -12 dBFS, as int16."""
    samples = round(seconds * rate)
    noise = np.random.default_rng(1).normal(0, 1000, samples)
    return np.rint(_tones(IN_BAND_HZ, 900, rate, samples, 2) + noise).astype(np.int16)


def _chunks(data: bytes, rate: int, width: int) -> list[bytes]:
    step = rate * CHUNK_MS // 1000 * width
    return [data[i : i + step] for i in range(0, len(data), step)]


def _throughput(make: Callable[[], MulawConverter], chunks: list[bytes], audio_seconds: float) -> dict[str, float]:
    best = float("inf")
    for _ in range(REPEATS):
        converter = make()
        start = time.thread_time()
        for chunk in chunks:
            converter.feed(chunk)
        converter.finish()
        best = min(best, time.thread_time() - start)
    return {"x_realtime": audio_seconds / best, "us_per_chunk": best / len(chunks) * 1e6}


def _run_resampler(resampler: StreamResampler, pcm: np.ndarray) -> np.ndarray:
    step = resampler.in_rate * CHUNK_MS // 1000
    parts = [resampler.process(pcm[i : i + step]) for i in range(0, len(pcm), step)]
    return np.concatenate([*parts, resampler.flush()]).astype(np.float64)


def _snr_db(make: Callable[[], StreamResampler]) -> float:
    """SNR of a resampled multi-tone signal against its exact band-limited value at 8 kHz."""
    seconds = 2.0
    amplitude = 1400.0
    source_len = round(seconds * SOURCE_RATE)
    in_band = _tones(IN_BAND_HZ, amplitude, SOURCE_RATE, source_len, 3)
    above = _tones(ABOVE_BAND_HZ, amplitude, SOURCE_RATE, source_len, 4)
    out = _run_resampler(make(), np.rint(in_band + above).astype(np.int16))
    reference = _tones(IN_BAND_HZ, amplitude, TARGET_RATE, len(out), 3)
    margin = TARGET_RATE // 10  # the ends see the silence around the stream
    signal = reference[margin:-margin]
    error = out[margin:-margin] - signal
    return float(10 * np.log10(np.sum(signal**2) / np.sum(error**2)))


def _alias_rejection_db(make: Callable[[], StreamResampler]) -> float:
    """The smallest attenuation of a full-scale tone above 4 kHz folding into the 8 kHz output.

    An output that rounds to silence counts as attenuated down to the int16 rounding noise (about 98 dB below
    the tone): int16 samples cannot show more.
    """
    samples = SOURCE_RATE // 2
    floor_rms = 1 / np.sqrt(12)
    worst = float("inf")
    for frequency in ALIAS_SWEEP_HZ:
        source = np.rint(_tones((frequency,), 32000, SOURCE_RATE, samples, 5)).astype(np.int16)
        out = _run_resampler(make(), source)[TARGET_RATE // 20 : -TARGET_RATE // 20]
        out_rms = max(float(np.sqrt(np.mean(out**2))), floor_rms)
        worst = min(worst, float(20 * np.log10(np.sqrt(np.mean(source.astype(np.float64) ** 2)) / out_rms)))
    return worst


def _resampler_speed(make: Callable[[], StreamResampler], pcm: np.ndarray, audio_seconds: float) -> float:
    step = SOURCE_RATE * CHUNK_MS // 1000
    chunks = [pcm[i : i + step] for i in range(0, len(pcm), step)]
    best = float("inf")
    for _ in range(REPEATS):
        resampler = make()
        start = time.thread_time()
        for chunk in chunks:
            resampler.process(chunk)
        resampler.flush()
        best = min(best, time.thread_time() - start)
    return audio_seconds / best


def run(seconds: float = 30.0) -> dict[str, Any]:
    """Throughput and quality figures for converting ``seconds`` of audio delivered in 20 ms chunks."""
    pcm = _test_signal(seconds, SOURCE_RATE)
    pcm_8k = _test_signal(seconds, TARGET_RATE)
    cases = {
        "numpy": (partial(MulawConverter, "pcm_s16le", SOURCE_RATE, "numpy"), pcm.astype("<i2").tobytes(), 2),
        "soxr": (partial(MulawConverter, "pcm_s16le", SOURCE_RATE, "soxr"), pcm.astype("<i2").tobytes(), 2),
        "passthrough_mulaw_8k": (partial(MulawConverter, "pcm_mulaw", TARGET_RATE), mulaw_encode(pcm_8k), 1),
        "s16le_8k_encode_only": (
            partial(MulawConverter, "pcm_s16le", TARGET_RATE),
            pcm_8k.astype("<i2").tobytes(),
            2,
        ),
    }
    converters: dict[str, dict[str, float]] = {}
    for name, (make, data, width) in cases.items():
        rate = SOURCE_RATE if name in ("numpy", "soxr") else TARGET_RATE
        converters[name] = _throughput(make, _chunks(data, rate, width), seconds)

    factories: dict[str, Callable[[], StreamResampler]] = {
        "numpy": partial(NumpyResampler, SOURCE_RATE, TARGET_RATE),
        **{f"soxr {preset}": partial(SoxrResampler, SOURCE_RATE, TARGET_RATE, preset) for preset in SOXR_PRESETS},
    }
    resamplers = {
        name: {
            "x_realtime": _resampler_speed(factory, pcm, seconds),
            "snr_db": _snr_db(factory),
            "alias_rejection_db": _alias_rejection_db(factory),
        }
        for name, factory in factories.items()
    }
    for kind, name in (("numpy", "numpy"), ("soxr", f"soxr {SOXR_DEFAULT_PRESET}")):
        converters[kind]["snr_db"] = resamplers[name]["snr_db"]
        converters[kind]["alias_rejection_db"] = resamplers[name]["alias_rejection_db"]

    winner, loser = sorted(("numpy", "soxr"), key=lambda kind: -converters[kind]["x_realtime"])
    return {
        "audio_seconds": seconds,
        "source": f"pcm_s16le @ {SOURCE_RATE} Hz in {CHUNK_MS} ms chunks -> µ-law WAV @ {TARGET_RATE} Hz",
        "converters": converters,
        "resamplers": resamplers,
        "winner": winner,
        "speedup": converters[winner]["x_realtime"] / converters[loser]["x_realtime"],
        "winner_quality_at_least_equal": converters[winner]["snr_db"] >= converters[loser]["snr_db"]
        and converters[winner]["alias_rejection_db"] >= converters[loser]["alias_rejection_db"],
        "default_kind": inspect.signature(make_resampler).parameters["kind"].default,
    }


def report(figures: dict[str, Any]) -> str:
    """The figures of :func:`run` as a table."""
    lines = [
        f"{figures['source']}, {figures['audio_seconds']:g} s of audio",
        f"{'converter':<24}{'x real time':>12}{'us/chunk':>10}{'SNR dB':>9}{'alias dB':>10}",
    ]
    for name, row in figures["converters"].items():
        quality = f"{row['snr_db']:>9.1f}{row['alias_rejection_db']:>10.1f}" if "snr_db" in row else ""
        lines.append(f"{name:<24}{row['x_realtime']:>12.0f}{row['us_per_chunk']:>10.1f}{quality}")
    lines += ["", f"{'resampler alone':<24}{'x real time':>12}{'SNR dB':>19}{'alias dB':>10}"]
    for name, row in figures["resamplers"].items():
        lines.append(f"{name:<24}{row['x_realtime']:>12.0f}{row['snr_db']:>19.1f}{row['alias_rejection_db']:>10.1f}")
    lines += [
        "",
        f"winner: {figures['winner']} ({figures['speedup']:.1f}x faster), quality at least equal: "
        f"{figures['winner_quality_at_least_equal']}; make_resampler default: {figures['default_kind']}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="audio converted per run")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    arguments = parser.parse_args()
    result = run(arguments.seconds)
    if arguments.json:
        print(json.dumps(result, indent=2))
    else:
        print(report(result))
