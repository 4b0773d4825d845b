"""End of turn: how soon our model calls a caller's turn complete, and how often it cuts a mid-sentence pause.

Each line of ``bench/end_of_turn/<language>.txt`` (the development set, written with this code) and of
``bench/end_of_turn/held_out/<language>.txt`` (the held-out set, written apart from it without reading it, and not
used to choose any setting) is a caller's sentence with one or more ``|``, places the caller pauses mid-sentence; each
``|`` makes one utterance, paused there only. The local engine (English: piper's en_US voice; Spanish: espeak-ng's
``es``) speaks the sentence unbroken, at 16 kHz, and the pause (300–900 ms, seeded, uniform) is cut in where the words
before it end. The engines give no word timings: the words before the pause and those after it are spoken alone and
aligned to the whole by dynamic time warping, and the cut is the quietest 10 ms between the two estimates. So the
voice runs on through the pause as a sentence does, with none of the clause-final tone a comma gives it (``--causes``
measures both). The audio is what a telephone line carries: 8 kHz, through G.711 µ-law and back, with noise at
-60 dBFS under it, 0.4 s of it before the caller starts and 2.5 s after.

The product's pipeline then runs on it as on a call, in 20 ms frames: the voice detector
(:class:`~voicebridge.audio.vad.VoiceActivity` with ``VOICE_DETECTOR``'s default) and the
:class:`~voicebridge.audio.end_of_turn.TurnEndWatch` that asks Smart Turn about each stop (upsampled to 16 kHz).
The figures per set and language:

- ``median_ms``, ``p90_ms``: from the caller's last voiced frame (the last 10 ms within 40 dB of the utterance's
  peak, in the clean synthesis) to "complete": the stream position of the verdict plus the CPU time the verdict took
  in this process (resampling, features, the model). An end the model calls incomplete counts as the silence that
  ends a turn without it (``MANUAL_END_SILENCE_MS`` after the detector's end), as manual mode does;
- ``incomplete_ends``: the share of real ends the model called incomplete;
- ``cut_off_rate``: the share of mid-sentence pauses called complete (the caller would be cut off);
- ``inner_stops_called_complete``: the share of utterances with another stop before the end (a gap between words the
  detector took for a stop) called complete;
- ``score_cpu_ms``: the median CPU time of one verdict, and ``model_cpu_ms_per_audio_min`` what the product's watch
  spends on the model per minute of this audio;
- ``asked_again_as_silence_grows``: the watch as it was (asked at 0, 150, 300 and 500 ms of silence until an answer
  was complete), on the same answers;
- ``silence_alone``: the peer, manual mode without the model (a turn ends after 700 ms of silence).

The turn-end policy (:class:`~voicebridge.language.TurnEndPolicy`): the model asked once per stop at a silence,
"complete" above a threshold ending the turn once the caller has been quiet a while, and a silence ending it whatever
the model says. The bench sweeps it on the development set — silence alone at 700–1,200 ms, and every threshold,
silence asked at, quiet (0–800 ms) and silence — and chooses per language the fastest median with at most 5 % of
pauses cut off there, the model only where it gains at least 50 ms over silence alone (``policy``: the choice, the
best of each kind and the front of the sweep). Each set then gives, per language, the figures of that point, of the
product's policy (``TURN_END_POLICY``'s default) and of manual mode before (complete above 0.5 at the stop, after
200 ms of quiet, or 700 ms of silence). English on Ink's turns endpoint has an eager point instead: the fastest whose
speculative replies later cancelled (pauses and other stops called complete) stay within a quarter of the
utterances, an end it does not call complete waiting for Ink's (``MANUAL_END_SILENCE_MS``, the emulator's);
``cancelled_speculations`` is that rate. Rendered lines are kept under ``out/end_of_turn/lines/``, so English
utterances are the same from run to run.

A sweep gives the same figures for a watch asking once at another silence or with another threshold; the model's
answers are kept under ``out/end_of_turn/`` (by the audio's and the models' hashes), so a rerun only replays them.
Piper draws its voice's variation at random on every synthesis: before the lines were kept, English figures moved by a
few points between runs.

``--causes`` separates what moves the figures: the model asked directly (no voice detector) about each case's pause
and end, 100–300 ms into the silence after it, with one change at a time — the telephone band or 16 kHz straight
from the engine, a comma at the pause or the sentence unbroken, piper or espeak-ng for English. ``--features`` checks
our features against the reference's own extractor (from the wheel the model ships in) on the bench's audio.
``--human`` asks the model about recorded human speech cut the way the bench cuts its pauses: the LibriVox clips in
the tests of PocketSphinx's source package (one reader, 71 words with their alignment), cut after every word.

Run ``voicebridge bench --only end-of-turn`` or ``python bench/bench_end_of_turn.py [--json] [--limit N]
[--set dev|held-out] [--causes] [--features] [--human]``.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import io
import itertools
import json
import math
import statistics
import subprocess
import sys
import tarfile
import time
import types
import wave
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import soxr

from voicebridge.audio import onnx
from voicebridge.audio.end_of_turn import EndOfTurnModel, TurnEndWatch, last_window, log_mel, telephone_to_model
from voicebridge.audio.mulaw import mulaw_decode, mulaw_encode
from voicebridge.audio.vad import VoiceActivity, detector
from voicebridge.config import Settings
from voicebridge.language import TurnEndPolicy, turn_end_policy
from voicebridge_dev.local.speech_engine import EspeakSpeechEngine, PiperSpeechEngine, SpeechEngine

SETS = Path(__file__).resolve().parent / "end_of_turn"
SET_FILES = {"dev": "{language}.txt", "held-out": "held_out/{language}.txt"}
"""The development set (written with the code) and the held-out set (written apart from it, without reading it)."""
RATE = 8000
WIDE_RATE = 16000
FRAME_BYTES = 320
PAUSE_MS = (300.0, 900.0)
LEAD_MS = 400
TAIL_MS = 2500
MANUAL_END_SILENCE_MS = 700.0
"""How long a silence ends a turn in manual mode without the model (the transcriber's ``manual_end_silence_ms``)."""

ASKED_AT_MS = (0.0, 150.0, 200.0, 300.0, 500.0)
"""The silences the benchmark asks the model at; a watch asking at any of them is judged from these answers."""
BEFORE = (0.0, 150.0, 300.0, 500.0)
"""Where the watch asked before it asked once: again and again as the silence grew, until an answer was complete."""
DEFAULT = TurnEndWatch()
"""The watch as the product makes it: where it asks, and its threshold."""

Pcm = npt.NDArray[np.int16]


class Case(NamedTuple):
    before: str
    """The words before the pause."""
    after: str
    pause_ms: float


class Rendered(NamedTuple):
    pcm: bytes
    """The line: 8 kHz s16le, through µ-law, with the noise floor."""
    wide: npt.NDArray[np.float32]
    """The same utterance at 16 kHz straight from the engine (no band limit, no noise), scaled to ±1."""
    pause: tuple[float, float]
    """The mid-sentence pause, ms from the stream's start."""
    end_ms: float


def cases(language: str, which: str = "dev", seed: int = 5) -> list[Case]:
    rng = np.random.default_rng(seed)
    found = []
    text = (SETS / SET_FILES[which].format(language=language)).read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        parts = [part.strip() for part in line.split("|")]
        for mark in range(1, len(parts)):
            before, after = " ".join(parts[:mark]), " ".join(parts[mark:])
            found.append(Case(before, after, float(rng.uniform(*PAUSE_MS))))
    return found


HOP = WIDE_RATE // 100
"""10 ms at 16 kHz: the step of the alignment and of the voicing marks."""


def _energy_10ms(samples: Pcm) -> npt.NDArray[np.float64]:
    whole = len(samples) - len(samples) % HOP
    energy: npt.NDArray[np.float64] = np.mean(np.square(samples[:whole].astype(np.float64).reshape(-1, HOP)), axis=1)
    return energy


def _voiced_10ms(samples: Pcm) -> npt.NDArray[np.bool_]:
    power = _energy_10ms(samples)
    voiced: npt.NDArray[np.bool_] = power > power.max() * 1e-4
    return voiced


def _spectra(samples: Pcm) -> npt.NDArray[np.float64]:
    """Per 10 ms, a unit vector of log band energies (30 bands, mean removed): what the alignment compares."""
    padded = np.pad(samples.astype(np.float64), (0, 400))
    frames = np.lib.stride_tricks.sliding_window_view(padded, 400)[: len(samples) // HOP * HOP : HOP]
    power = np.abs(np.fft.rfft(frames * np.hanning(400), axis=1)) ** 2
    bands = np.log(np.add.reduceat(power, np.unique(np.geomspace(1, 200, 30).astype(int)), axis=1) + 1e-2)
    bands -= bands.mean(axis=1, keepdims=True)
    unit: npt.NDArray[np.float64] = bands / (np.linalg.norm(bands, axis=1, keepdims=True) + 1e-9)
    return unit


def _where_it_ends(part: Pcm, whole: Pcm) -> int:
    """The 10 ms step of ``whole`` where ``part``, spoken alone, ends when ``whole`` begins with it: dynamic time
    warping from both starts, free at the end (the path's mean cost decides where)."""
    voiced = np.flatnonzero(_voiced_10ms(part))
    query = _spectra(part)[voiced[0] : voiced[-1] + 1]
    first = int(np.argmax(_voiced_10ms(whole)))
    target = _spectra(whole)[first:]
    cost = 1.0 - query @ target.T
    rows, columns = cost.shape
    total = np.full((rows + 1, columns + 1), np.inf)
    total[0, 0] = 0.0
    for i in range(1, rows + 1):
        # Diagonal and vertical steps at once; the horizontal step runs along the row.
        from_above = np.minimum(total[i - 1, :-1], total[i - 1, 1:]) + cost[i - 1]
        row = total[i]
        for j in range(1, columns + 1):
            row[j] = min(from_above[j - 1], row[j - 1] + cost[i - 1, j - 1])
    mean_cost = total[rows, 1:] / (rows + np.arange(1, columns + 1))
    return first + int(np.argmin(mean_cost)) + 1


def word_boundary(engine: SpeechEngine, case: Case, whole: Pcm) -> int:
    """Where the words before the pause end in the sentence spoken unbroken, in samples at 16 kHz.

    The engines give no word timings, so the two halves are spoken alone and aligned to the whole: the first from
    its start, the second from its end (backwards); the cut is the quietest 10 ms between the two estimates (30 ms
    either side), a word's edge rather than a vowel's middle."""
    before = engine.synthesize(case.before, sample_rate=WIDE_RATE, speed=1.0)
    after = engine.synthesize(case.after, sample_rate=WIDE_RATE, speed=1.0)
    from_front = _where_it_ends(before, whole)
    from_back = len(whole) // HOP - _where_it_ends(after[::-1].copy(), whole[::-1].copy())
    low, high = max(0, min(from_front, from_back) - 3), max(from_front, from_back) + 3
    return (low + int(np.argmin(_energy_10ms(whole)[low : high + 1]))) * HOP


def comma_gap(case: Case, whole: Pcm) -> tuple[int, int] | None:
    """The silence the engine left at the comma (the gap nearest where the comma falls), in samples at 16 kHz."""
    voiced = _voiced_10ms(whole)
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
    expected = first + len(case.before) / (len(case.before) + len(case.after) + 2) * (last - first)
    gap_start, gap_end = min(gaps, key=lambda gap: abs((gap[0] + gap[1]) / 2 - expected))
    return gap_start * HOP, gap_end * HOP


PAUSE_STYLES = ("word", "comma")
"""``word``: the sentence spoken unbroken, the pause cut in where the word before it ends (the bench's figures);
``comma``: spoken with a comma at the pause, the gap the comma leaves stretched (the voice's clause-final tone)."""


def render(case: Case, engine: SpeechEngine, seed: int, style: str = "word") -> Rendered | None:
    """The case as a telephone line carries it (and as the engine made it), or None when a comma left no gap."""
    if style == "comma":
        speech = engine.synthesize(f"{case.before}, {case.after}", sample_rate=WIDE_RATE, speed=1.0)
        gap = comma_gap(case, speech)
        if gap is None:
            return None
        cut, resume = gap
    else:
        speech = engine.synthesize(f"{case.before} {case.after}", sample_rate=WIDE_RATE, speed=1.0)
        cut = resume = word_boundary(engine, case, speech)
    voiced = _voiced_10ms(speech)
    first, last = int(np.argmax(voiced)) * HOP, (len(voiced) - int(np.argmax(voiced[::-1]))) * HOP
    lead, pause = np.zeros(LEAD_MS * 16, np.int16), np.zeros(int(case.pause_ms * 16), np.int16)
    wide = np.concatenate((lead, speech[first:cut], pause, speech[resume:last], np.zeros(TAIL_MS * 16, np.int16)))
    end_ms = LEAD_MS + (cut - first + len(pause) + last - resume) / 16
    pause_start = LEAD_MS + (cut - first) / 16
    return Rendered(
        on_the_line(wide, seed),
        wide.astype(np.float32) / 32768.0,
        (pause_start, pause_start + case.pause_ms),
        end_ms,
    )


def on_the_line(wide: Pcm, seed: int) -> bytes:
    """16 kHz speech as a telephone line carries it: 8 kHz s16le through G.711 µ-law, noise at -60 dBFS under it."""
    narrow = soxr.resample(wide.astype(np.float32) / 32768.0, WIDE_RATE, RATE, quality="HQ") * 32768.0
    noise = np.random.default_rng(seed).normal(0, 32768 * 10 ** (-60 / 20), len(narrow))
    noisy = np.clip(np.rint(narrow + noise), -32768, 32767).astype(np.int16)
    return bytes(mulaw_decode(mulaw_encode(noisy)).tobytes())


class Stop(NamedTuple):
    """One stop of the caller's voice and the model's answers as the silence after it grew."""

    voice_end_ms: float
    final: bool
    """No voice followed (kept for reference: the figures place a stop by where it falls in the sentence)."""
    asked: list[tuple[float, float, float, float]]
    """Per silence asked at: that silence, the stream position, the probability, the CPU ms the verdict took."""
    silence_ms: float
    """The longest the silence after it grew before the voice came back (or the stream ended)."""


def listen(rendered: Rendered) -> list[Stop]:
    """The pipeline on one utterance, fed 20 ms at a time, the model asked at every silence of ``ASKED_AT_MS``."""
    vad = VoiceActivity(detector=detector(Settings().voice_detector), close_ms=300)
    watch = TurnEndWatch(ask_at_ms=ASKED_AT_MS, threshold=1.0)
    stops: dict[float, list[tuple[float, float, float, float]]] = {}
    silences: dict[float, float] = {}
    for offset in range(0, len(rendered.pcm), FRAME_BYTES):
        chunk = rendered.pcm[offset : offset + FRAME_BYTES]
        vad.feed(chunk)
        if vad.last_voiced_end_ms is not None:
            silences[vad.last_voiced_end_ms] = vad.silent_for_ms
        started = time.process_time()
        verdict = watch.feed(chunk, vad)
        if verdict is not None:
            cpu_ms = (time.process_time() - started) * 1000
            asked = stops.setdefault(verdict.voice_end_ms, [])
            asked.append((ASKED_AT_MS[len(asked)], verdict.at_ms, verdict.probability, cpu_ms))
    ends = sorted(stops)
    return [Stop(end, end == ends[-1], stops[end], silences[end]) for end in ends]


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
    reached = {_where(rendered, stop) for stop in stops if stop.silence_ms >= MANUAL_END_SILENCE_MS}
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


def _espeak_english() -> SpeechEngine:
    return EspeakSpeechEngine("en-us")


ENGINES: dict[str, Callable[[], SpeechEngine]] = {"en": PiperSpeechEngine, "es": _spanish}


CACHE = Path(__file__).resolve().parents[1] / "out" / "end_of_turn"


@functools.cache
def _models_digest() -> bytes:
    digest = hashlib.sha256()
    for name in (onnx.SILERO_VAD, onnx.SMART_TURN):
        digest.update((onnx.FOLDER / name).read_bytes())
    return digest.digest()


def _listened(folder: str, index: int, rendered: Rendered) -> list[Stop]:
    """The model's answers for one utterance, kept under out/ by the audio's and the models' hashes: a sweep of the
    watch's settings, or a rerun, asks the model nothing it has been asked before."""
    key = hashlib.sha256(rendered.pcm + _models_digest() + repr(ASKED_AT_MS).encode()).hexdigest()[:16]
    path = CACHE / folder / f"{index:03d}-{key}.json"
    if path.is_file():
        return [
            Stop(s["voice_end_ms"], s["final"], [tuple(a) for a in s["asked"]], s["silence_ms"])
            for s in json.loads(path.read_text())
        ]
    stops = listen(rendered)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([stop._asdict() for stop in stops]))
    return stops


THRESHOLDS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


# The turn-end policy: the model's "complete" above a threshold, asked at one silence, ends the turn after a quiet;
# a silence ends it whatever the model says. Swept on the development set; the point chosen per language is reported
# on both sets.

QUIETS_MS = (0, 150, 200, 300, 400, 500, 600, 700, 800)
"""The quiet after a stop before the model's "complete" ends the turn (never before the model was asked)."""
SILENCES_MS = (700, 750, 800, 850, 900, 950, 1000, 1100, 1200)
"""The silence that ends a turn whatever the model says."""
CUT_OFF_BOUND = 0.05
"""The most mid-sentence pauses a chosen point may cut off on the development set (other stops, gaps between words
the detector took for a stop, are reported beside it: silence alone ends about as many of them as the model)."""
MODEL_GAIN_MS = 50
"""The median a point with the model must gain over the best point of silence alone to be chosen: less, and the
model adds nothing worth its CPU (about 100 ms a verdict) and its risk on voices it was not measured on."""
EAGER_CANCEL_BOUND = 0.25
"""English on Ink's turns endpoint: the most utterances whose pause (or another stop) the eager point may call
complete. Each is a speculative reply started and cancelled when the caller goes on: a responder request spent and
one of the turn's attempts (``SPECULATIVE_MAX_PER_TURN``, 2 by default), so at one in four the real end keeps its
attempt unless two false ends fall in one turn. No point within it: no eager end of ours."""
EAGER_END_POLICY_BEFORE = TurnEndPolicy(silence_ms=0, threshold=0.5)
"""The eager end as it was: "complete" above 0.5 at the first unvoiced frame."""
BEFORE_MANUAL = TurnEndPolicy(silence_ms=700, threshold=0.5, ask_at_ms=0, quiet_ms=200)
"""Manual mode as it was: "complete" above 0.5, asked at the first unvoiced frame, ended the turn after 200 ms of
quiet; 700 ms of silence ended the rest."""


def under_policy(rendered: Rendered, stops: list[Stop], policy: TurnEndPolicy, *, eager: bool = False) -> Outcome:
    """What ``policy`` makes of the utterance. ``eager``: the policy places an eager end on Ink's turns endpoint, so
    only the model's "complete" cuts (a speculative reply is cancelled) and an end it does not call complete waits
    for Ink's end (the emulator's ``MANUAL_END_SILENCE_MS``)."""
    called: dict[str, bool] = {"pause": False, "inner": False}
    latency, by_model = None, False
    silence_ms = MANUAL_END_SILENCE_MS if eager else policy.silence_ms
    for stop in stops:
        ends_at, model = None, False
        if policy.threshold is not None and stop.silence_ms >= policy.quiet_ms:
            for silence, at_ms, probability, cpu_ms in stop.asked:
                if silence == policy.ask_at_ms and probability > policy.threshold:
                    ends_at, model = max(at_ms + cpu_ms, stop.voice_end_ms + policy.quiet_ms), True
        if stop.silence_ms >= silence_ms and (ends_at is None or stop.voice_end_ms + silence_ms < ends_at):
            ends_at, model = stop.voice_end_ms + silence_ms, False
        if ends_at is None:
            continue
        where = _where(rendered, stop)
        if where == "end":
            if latency is None:
                latency, by_model = ends_at - rendered.end_ms, model
        elif model or not eager:
            called[where] = True
    if latency is None:
        return Outcome(called["pause"], called["inner"], TAIL_MS, True)
    return Outcome(called["pause"], called["inner"], latency, not by_model)


def policy_points(eager: bool = False) -> list[TurnEndPolicy]:
    """The sweep: silence alone at each bound, and the model at each threshold, silence asked at, quiet and bound;
    an eager point has no quiet of its own and no bound (Ink ends the turn)."""
    if eager:
        return [
            TurnEndPolicy(silence_ms=0, threshold=threshold, ask_at_ms=int(at_ms), quiet_ms=int(at_ms))
            for at_ms in ASKED_AT_MS
            for threshold in THRESHOLDS
        ]
    alone = [TurnEndPolicy(silence_ms=silence) for silence in SILENCES_MS]
    return alone + [
        TurnEndPolicy(silence_ms=silence, threshold=threshold, ask_at_ms=int(at_ms), quiet_ms=quiet)
        for at_ms in ASKED_AT_MS
        for threshold in THRESHOLDS
        for quiet in QUIETS_MS
        if quiet >= at_ms
        for silence in SILENCES_MS
        if silence > quiet
    ]


def policy_figures(
    heard: list[tuple[Rendered, list[Stop]]], policy: TurnEndPolicy, *, eager: bool = False
) -> dict[str, Any]:
    outcomes = [under_policy(r, stops, policy, eager=eager) for r, stops in heard]
    found = figures_of(outcomes)
    found["ended_by_model"] = round(sum(not o.incomplete_end for o in outcomes) / len(outcomes), 3)
    if eager:
        found["cancelled_speculations"] = round(sum(o.cut_off or o.inner for o in outcomes) / len(outcomes), 3)
    return found


def _policy_json(policy: TurnEndPolicy) -> dict[str, Any]:
    return {"threshold": policy.threshold, "ask_at_ms": policy.ask_at_ms, "quiet_ms": policy.quiet_ms,
            "silence_ms": policy.silence_ms}  # fmt: skip


def choose(heard: list[tuple[Rendered, list[Stop]]]) -> dict[str, Any]:
    """On the development set: the fastest point cutting off at most ``CUT_OFF_BOUND`` of pauses, the fastest of
    silence alone, and the front of the sweep (the fastest point at each cut-off rate)."""
    scored = [(policy, policy_figures(heard, policy)) for policy in policy_points()]
    allowed = [(policy, found) for policy, found in scored if found["cut_off_rate"] <= CUT_OFF_BOUND]

    def speed(point: tuple[TurnEndPolicy, dict[str, Any]]) -> tuple[float, float, float]:
        return (point[1]["median_ms"], point[1]["p90_ms"], point[1]["cut_off_rate"])

    alone = min((point for point in allowed if not point[0].uses_model), key=speed)
    with_model = min((point for point in allowed if point[0].uses_model), key=speed, default=None)
    gains = with_model is not None and with_model[1]["median_ms"] <= alone[1]["median_ms"] - MODEL_GAIN_MS
    chosen = with_model if gains and with_model is not None else alone
    front: dict[float, tuple[TurnEndPolicy, dict[str, Any]]] = {}
    for point in scored:
        rate = point[1]["cut_off_rate"]
        if rate not in front or speed(point) < speed(front[rate]):
            front[rate] = point
    frontier, fastest = [], math.inf
    for rate in sorted(front):
        if front[rate][1]["median_ms"] < fastest:
            fastest = front[rate][1]["median_ms"]
            frontier.append({**_policy_json(front[rate][0]), **front[rate][1]})
    return {
        "points": len(scored),
        "chosen": _policy_json(chosen[0]),
        "model_adds_nothing": not gains,
        "silence_alone_best": {**_policy_json(alone[0]), **alone[1]},
        "model_best": None if with_model is None else {**_policy_json(with_model[0]), **with_model[1]},
        "front": frontier,
    }


def choose_eager(heard: list[tuple[Rendered, list[Stop]]]) -> dict[str, Any]:
    """On the development set: the fastest eager point whose cancelled speculations stay within the bound."""
    scored = [(policy, policy_figures(heard, policy, eager=True)) for policy in policy_points(eager=True)]
    allowed = [point for point in scored if point[1]["cancelled_speculations"] <= EAGER_CANCEL_BOUND]
    chosen = min(allowed, key=lambda point: (point[1]["median_ms"], point[1]["cancelled_speculations"]), default=None)
    return {
        "chosen": None if chosen is None else _policy_json(chosen[0]),
        "points": [{**_policy_json(policy), **found} for policy, found in scored],
    }


def _figures(heard: list[tuple[Rendered, list[Stop]]], skipped: int) -> dict[str, Any]:
    cpu = [ms for _, stops in heard for stop in stops for *_, ms in stop.asked]
    audio_min = sum(len(r.pcm) for r, _ in heard) / 2 / RATE / 60
    return {
        "utterances": len(heard),
        "skipped": skipped,
        **figures_of([decide(r, stops, DEFAULT.ask_at_ms, DEFAULT.threshold) for r, stops in heard]),
        "score_cpu_ms": round(statistics.median(cpu), 1),
        "model_cpu_ms_per_audio_min": round(
            sum(model_cpu_ms(stops, DEFAULT.ask_at_ms, DEFAULT.threshold) for _, stops in heard) / audio_min
        ),
        "asked_again_as_silence_grows": figures_of([decide(r, stops, BEFORE, 0.5) for r, stops in heard]),
        "silence_alone": figures_of([by_silence(r, stops) for r, stops in heard]),
    }


def _rendered(folder: str, index: int, case: Case, engine: Callable[[], SpeechEngine]) -> Rendered | None:
    """The case rendered, kept under out/ by its words, pause and engine: piper's voice varies at random from one
    synthesis to the next, so a rerun (or a sweep of new settings) hears the utterances, and replays the model's
    answers to them, that the first run made."""
    key = hashlib.sha256(repr((case, engine.__name__, WIDE_RATE)).encode()).hexdigest()[:16]
    path = CACHE / "lines" / folder / f"{index:03d}-{key}.npz"
    if path.is_file():
        kept = np.load(path)
        if not kept["pcm"].size:
            return None
        return Rendered(kept["pcm"].tobytes(), kept["wide"], tuple(kept["pause"]), float(kept["end_ms"]))
    rendered = render(case, _engine(engine), seed=index)
    path.parent.mkdir(parents=True, exist_ok=True)
    if rendered is None:
        np.savez(path, pcm=np.zeros(0, np.int16))
        return None
    np.savez(path, pcm=np.frombuffer(rendered.pcm, np.int16), wide=rendered.wide, pause=rendered.pause,
             end_ms=rendered.end_ms)  # fmt: skip
    return rendered


@functools.cache
def _engine(make: Callable[[], SpeechEngine]) -> SpeechEngine:
    return make()


def _heard(which: str, language: str, limit: int | None) -> tuple[list[tuple[Rendered, list[Stop]]], int]:
    heard, skipped = [], 0
    for index, case in enumerate(cases(language, which)[:limit]):
        rendered = _rendered(f"{which}/{language}", index, case, ENGINES[language])
        if rendered is None:
            skipped += 1
            continue
        heard.append((rendered, _listened(f"{which}/{language}", index, rendered)))
    return heard, skipped


def run(limit: int | None = None, sets: tuple[str, ...] = tuple(SET_FILES)) -> dict[str, Any]:
    """The product's watch on every utterance of ``sets`` (``limit`` per language and set), with the sweep; the
    turn-end policy chosen per language on the development set (whatever ``sets`` are), and the figures of that
    point, of the product's policy, and of the policy before, on each set."""
    figures: dict[str, Any] = {"detector": Settings().voice_detector, "pauses": "word"}
    dev = {language: _heard("dev", language, limit)[0] for language in ENGINES}
    chosen = {language: choose(dev[language]) for language in ENGINES}
    eager = choose_eager(dev["en"])
    figures["policy"] = {
        "rule": f"the fastest median with at most {CUT_OFF_BOUND:.0%} of pauses and of other stops cut off on the "
        f"development set; the model only where it gains at least {MODEL_GAIN_MS} ms over silence alone",
        "chosen": chosen,
        "eager_en": {
            "rule": f"the fastest median with at most {EAGER_CANCEL_BOUND:.0%} of utterances cancelling a speculative "
            "reply on the development set",
            **eager,
        },
    }
    for which in sets:
        heard: dict[str, list[tuple[Rendered, list[Stop]]]] = {}
        figures[which] = {}
        for language in ENGINES:
            heard[language], skipped = _heard(which, language, limit)
            figures[which][language] = _figures(heard[language], skipped)
            pick = TurnEndPolicy(**chosen[language]["chosen"])
            product = turn_end_policy(Settings().turn_end_policy, language)
            figures[which][language]["policy"] = {
                "chosen": policy_figures(heard[language], pick),
                "product": {**_policy_json(product), **policy_figures(heard[language], product)},
                "before": {**_policy_json(BEFORE_MANUAL), **policy_figures(heard[language], BEFORE_MANUAL)},
            }
        product_eager = Settings().languages.listening("en").policy
        figures[which]["en"]["eager"] = {
            "product": {**_policy_json(product_eager), **policy_figures(heard["en"], product_eager, eager=True)},
            "before": policy_figures(heard["en"], EAGER_END_POLICY_BEFORE, eager=True),
        }
        figures[which]["sweep"] = [
            {
                "ask_at_ms": at_ms,
                "threshold": threshold,
                **{
                    language: figures_of([decide(r, stops, (at_ms,), threshold) for r, stops in heard[language]])
                    for language in ENGINES
                },
            }
            for at_ms in ASKED_AT_MS
            for threshold in THRESHOLDS
        ]
    return figures


def _point(found: dict[str, Any]) -> str:
    return (
        f"median {found['median_ms']} ms, p90 {found['p90_ms']} ms, pauses cut off {found['cut_off_rate']:.1%}, "
        f"other stops {found['inner_stops_called_complete']:.1%}, ended by the model {found['ended_by_model']:.1%}"
    )


def report(figures: dict[str, Any]) -> str:
    lines = [
        f"voice detector: {figures['detector']}; the watch figures: asked once, at "
        f"{DEFAULT.ask_at_ms[0]:.0f} ms of silence, complete above {DEFAULT.threshold}; "
        "targets: median <= 400 ms, cut-offs <= 5 %"
    ]
    for language in ENGINES:
        chosen = figures["policy"]["chosen"][language]
        lines.append(
            f"{language}: chosen on the development set ({chosen['points']} points): {chosen['chosen']}"
            + ("; the model adds nothing over silence alone" if chosen["model_adds_nothing"] else "")
        )
    lines.append(f"en eager end chosen on the development set: {figures['policy']['eager_en']['chosen']}")
    for which in SET_FILES:
        if which not in figures:
            continue
        lines.append(f"{which} set:")
        for language in ENGINES:
            row = figures[which][language]
            before, alone = row["asked_again_as_silence_grows"], row["silence_alone"]
            lines.append(
                f"  {language}: {row['utterances']} utterances ({row['skipped']} skipped): median "
                f"{row['median_ms']} ms, p90 {row['p90_ms']} ms, ends called incomplete {row['incomplete_ends']:.1%}, "
                f"pauses cut off {row['cut_off_rate']:.1%}, {row['score_cpu_ms']} ms CPU per verdict; asked again "
                f"as the silence grows (before): median {before['median_ms']} ms, cut-offs "
                f"{before['cut_off_rate']:.1%}; {MANUAL_END_SILENCE_MS:.0f} ms of silence alone: median "
                f"{alone['median_ms']} ms, cut-offs {alone['cut_off_rate']:.1%}"
            )
        for language in ENGINES:
            policy = figures[which][language]["policy"]
            lines.append(
                f"  {language} turn ends: before (complete above 0.5 at the stop, after 200 ms; or 700 ms) "
                f"{_point(policy['before'])}; the product's {_point(policy['product'])}; chosen on dev "
                f"{_point(policy['chosen'])}"
            )
        eager = figures[which]["en"]["eager"]
        lines.append(
            f"  en eager end: before (above 0.5 at the stop) median {eager['before']['median_ms']} ms, cancelled "
            f"speculations {eager['before']['cancelled_speculations']:.1%}; the product's median "
            f"{eager['product']['median_ms']} ms, cancelled {eager['product']['cancelled_speculations']:.1%}"
        )
        lines.append("  sweep (asked once at, threshold): per language median ms / cut-offs")
        for point in figures[which]["sweep"]:
            cells = "  ".join(
                f"{lang} {point[lang]['median_ms']:>4} / {point[lang]['cut_off_rate']:.1%}" for lang in ENGINES
            )
            lines.append(f"    {point['ask_at_ms']:>4.0f} ms  {point['threshold']:<5}  {cells}")
    return "\n".join(lines)


# The causes: the model asked directly (no voice detector) about each case's pause and end under one change at a
# time, so a figure moves with that change alone.

CAUSE_SILENCES_MS = (100.0, 200.0, 300.0)
"""Silence after the last voiced 10 ms of the clean synthesis, at the pause or the end, when the model is asked; no
more than the shortest pause, so a pause's answer never hears the words after it."""


class Variant(NamedTuple):
    name: str
    language: str
    engine: Callable[[], SpeechEngine]
    style: str
    band: str
    """``telephone`` (8 kHz, µ-law, noise floor; upsampled for the model) or ``wide`` (16 kHz from the engine)."""


VARIANTS = (
    Variant("piper, comma, telephone (the bench before)", "en", PiperSpeechEngine, "comma", "telephone"),
    Variant("piper, comma, wideband", "en", PiperSpeechEngine, "comma", "wide"),
    Variant("piper, word boundary, telephone (the bench now)", "en", PiperSpeechEngine, "word", "telephone"),
    Variant("piper, word boundary, wideband", "en", PiperSpeechEngine, "word", "wide"),
    Variant("espeak-ng en-us, comma, telephone", "en", _espeak_english, "comma", "telephone"),
    Variant("espeak-ng en-us, word boundary, telephone", "en", _espeak_english, "word", "telephone"),
    Variant("espeak-ng es, comma, telephone (the bench before)", "es", _spanish, "comma", "telephone"),
    Variant("espeak-ng es, comma, wideband", "es", _spanish, "comma", "wide"),
    Variant("espeak-ng es, word boundary, telephone (the bench now)", "es", _spanish, "word", "telephone"),
    Variant("espeak-ng es, word boundary, wideband", "es", _spanish, "word", "wide"),
)


def _heard_up_to(rendered: Rendered, band: str, voice_end_ms: float, silence_ms: float) -> npt.NDArray[np.float32]:
    """What the model hears when asked ``silence_ms`` after a voice end: the utterance so far, at 16 kHz."""
    until_ms = voice_end_ms + silence_ms
    if band == "wide":
        return rendered.wide[: int(until_ms * WIDE_RATE / 1000)]
    return telephone_to_model(rendered.pcm[: int(until_ms * RATE / 1000) * 2])


SCORES = CACHE / "scores.json"
"""The model's answers the direct questions (``--causes``, ``--human``) got, by the audio's and the models' hashes."""


def _kept_scores() -> dict[str, float]:
    return json.loads(SCORES.read_text()) if SCORES.is_file() else {}


def _keep_scores(scores: dict[str, float]) -> None:
    SCORES.parent.mkdir(parents=True, exist_ok=True)
    SCORES.write_text(json.dumps(scores))


def _scored(scores: dict[str, float], audio: npt.NDArray[np.float32]) -> float:
    key = hashlib.sha256(audio.tobytes() + _models_digest()).hexdigest()[:20]
    if key not in scores:
        scores[key] = EndOfTurnModel().score(audio)
    return scores[key]


def causes(limit: int | None = 40, which: str = "dev") -> dict[str, Any]:
    """Per variant and silence: the share of pauses and of ends the model calls complete (above 0.5)."""
    scores = _kept_scores()
    table: dict[str, Any] = {}
    for variant in VARIANTS:
        engine = variant.engine()
        pauses: dict[float, list[float]] = {ms: [] for ms in CAUSE_SILENCES_MS}
        ends: dict[float, list[float]] = {ms: [] for ms in CAUSE_SILENCES_MS}
        for index, case in enumerate(cases(variant.language, which)[:limit]):
            rendered = render(case, engine, seed=index, style=variant.style)
            if rendered is None:
                continue
            for silence_ms in CAUSE_SILENCES_MS:
                heard = _heard_up_to(rendered, variant.band, rendered.pause[0], silence_ms)
                pauses[silence_ms].append(_scored(scores, heard))
                heard = _heard_up_to(rendered, variant.band, rendered.end_ms, silence_ms)
                ends[silence_ms].append(_scored(scores, heard))
        table[variant.name] = {
            "cases": len(pauses[CAUSE_SILENCES_MS[0]]),
            **{
                f"{silence_ms:.0f}_ms": {
                    "pauses_complete": round(float(np.mean(np.array(pauses[silence_ms]) > 0.5)), 3),
                    "ends_complete": round(float(np.mean(np.array(ends[silence_ms]) > 0.5)), 3),
                }
                for silence_ms in CAUSE_SILENCES_MS
            },
        }
        _keep_scores(scores)
    return table


def causes_report(table: dict[str, Any]) -> str:
    header = " | ".join(f"{ms:.0f} ms" for ms in CAUSE_SILENCES_MS)
    lines = [f"pauses / ends called complete, asked after {header} of silence"]
    for name, row in table.items():
        cells = "  ".join(
            f"{row[f'{ms:.0f}_ms']['pauses_complete']:>5.0%} / {row[f'{ms:.0f}_ms']['ends_complete']:>4.0%}"
            for ms in CAUSE_SILENCES_MS
        )
        lines.append(f"  {name:<55} n={row['cases']:<4} {cells}")
    return "\n".join(lines)


def _downloaded(requirement: str, folder_name: str, kind: str, pattern: str) -> Path:
    """A package from the registry (``kind``: pip's ``--only-binary`` or ``--no-binary`` flag), downloaded once under
    out/ and read from there; nothing of it is part of the product."""
    folder = CACHE / folder_name
    if not list(folder.glob(pattern)):
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps", kind,
             "--dest", str(folder), requirement],
            check=True,
        )  # fmt: skip
    (found,) = folder.glob(pattern)
    return found


REFERENCE_WHEEL = "pipecat-ai==1.14.0"
"""The wheel the model comes from (src/runtime/fetch_models.py); its numpy feature extractor is the reference."""
REFERENCE_MODULE = "pipecat/audio/turn/smart_turn/_whisper_features.py"


def features(limit: int | None = 8, which: str = "dev") -> dict[str, Any]:
    """Our features against the reference's own extractor on the bench's inputs (each case's pause and end, 200 ms
    into the silence, both bands): the largest difference anywhere. The reference module is read from the wheel the
    model ships in, downloaded once under out/, and run here only: nothing of it is part of the product."""
    with zipfile.ZipFile(_downloaded(REFERENCE_WHEEL, "reference", "--only-binary=:all:", "*.whl")) as archive:
        source = archive.read(REFERENCE_MODULE).decode()
    reference = types.ModuleType("reference_features")
    # The reference, run to compare with: read from the wheel, not copied into the repository.
    exec(compile(source, REFERENCE_MODULE, "exec"), reference.__dict__)
    largest, inputs = 0.0, 0
    for language, make in ENGINES.items():
        engine = make()
        for index, case in enumerate(cases(language, which)[:limit]):
            rendered = render(case, engine, seed=index)
            if rendered is None:
                continue
            for band, at_ms in itertools.product(("wide", "telephone"), (rendered.pause[0], rendered.end_ms)):
                audio = _heard_up_to(rendered, band, at_ms, 200.0)
                theirs = reference.compute_whisper_log_mel_features(last_window(audio), do_normalize=True)
                largest = max(largest, float(np.abs(log_mel(audio) - theirs).max()))
                inputs += 1
    return {"reference": f"{REFERENCE_WHEEL}: {REFERENCE_MODULE}", "inputs": inputs, "largest_difference": largest}


HUMAN_SOURCE = "pocketsphinx==5.1.1"
"""The source package whose tests carry recorded human speech: five LibriVox clips (public domain) of one reader of
*Sense and Sensibility*, chapter 1, each with its word alignment (``test/data/librivox/``)."""
HUMAN_CLIPS: dict[str, tuple[str, frozenset[str]]] = {
    "0870": ("them.", frozenset()),
    "0880": ("man,", frozenset()),
    "0890": ("ill-disposed:", frozenset()),
    "0920": ("was:", frozenset({"woman"})),
    "0930": ("himself;", frozenset()),
}
"""Per clip: its last word as the novel prints it (the punctuation the reader stopped at: the clips are cut at the
reader's pauses), and the words inside it the novel follows with punctuation. Only the first clip ends a sentence."""


class HumanCut(NamedTuple):
    clip: str
    word: str
    where: str
    """``inside a clause`` (no punctuation after the word), ``comma``, or the clip's end (``end .``, ``end ,``…)."""
    scores: dict[float, float]
    """Per silence asked at: the probability that the turn is complete."""


def _human_source() -> tarfile.TarFile:
    return tarfile.open(_downloaded(HUMAN_SOURCE, "human", "--no-binary=:all:", "*.tar.gz"))


def human() -> list[HumanCut]:
    """The model on a human voice, built as the bench builds its pauses: each clip is cut after each of its words
    (silence replacing what follows, the line's noise under it) and the model asked 100–300 ms into the silence."""
    scores = _kept_scores()
    found = []
    with _human_source() as source:
        root = source.getnames()[0].split("/")[0]
        for clip, (last, commas) in HUMAN_CLIPS.items():
            name = f"{root}/test/data/librivox/sense_and_sensibility_01_austen_64kb-{clip}"
            alignment = json.loads(_member(source, f"{name}.json").splitlines()[0])
            with wave.open(io.BytesIO(_member(source, f"{name}.wav"))) as audio:
                if (audio.getframerate(), audio.getnchannels(), audio.getsampwidth()) != (WIDE_RATE, 1, 2):
                    raise SystemExit(f"{name}.wav is not 16 kHz mono 16-bit")
                speech = np.frombuffer(audio.readframes(audio.getnframes()), "<i2")
            words = [word for word in alignment["w"] if word["t"] != "<sil>"]
            first = int(words[0]["b"] * WIDE_RATE)
            for index, word in enumerate(words):
                text = word["t"].split("(")[0]
                cut = int((word["b"] + word["d"]) * WIDE_RATE)
                lead = np.zeros(LEAD_MS * 16, np.int16)
                pcm = on_the_line(np.concatenate((lead, speech[first:cut], np.zeros(WIDE_RATE, np.int16))), index)
                voice_end_ms = LEAD_MS + (cut - first) / 16
                where = (
                    f"end {last[-1]}" if index == len(words) - 1 else "comma" if text in commas else "inside a clause"
                )
                asked = {}
                for silence_ms in CAUSE_SILENCES_MS:
                    heard = telephone_to_model(pcm[: int((voice_end_ms + silence_ms) * RATE / 1000) * 2])
                    asked[silence_ms] = _scored(scores, heard)
                found.append(HumanCut(clip, text, where, asked))
    _keep_scores(scores)
    return found


def _member(source: tarfile.TarFile, name: str) -> bytes:
    member = source.extractfile(name)
    if member is None:
        raise SystemExit(f"{HUMAN_SOURCE} has no {name}")
    return member.read()


def human_report(cuts: list[HumanCut]) -> str:
    header = " | ".join(f"{ms:.0f} ms" for ms in CAUSE_SILENCES_MS)
    lines = [f"a human voice ({HUMAN_SOURCE}'s LibriVox clips), called complete after {header} of silence"]
    inside = [cut for cut in cuts if cut.where == "inside a clause"]
    cells = "  ".join(f"{np.mean([cut.scores[ms] > 0.5 for cut in inside]):>5.0%}" for ms in CAUSE_SILENCES_MS)
    label = "cut inside a clause (the bench's pauses)"
    lines.append(f"  {label:<48} n={len(inside):<4} {cells}")
    for cut in cuts:
        if cut.where != "inside a clause":
            place = f"{cut.clip} after {cut.word!r} ({cut.where})"
            lines.append(f"  {place:<55} " + "  ".join(f"{cut.scores[ms]:>5.2f}" for ms in CAUSE_SILENCES_MS))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--limit", type=int, default=None, help="utterances per language and set")
    parser.add_argument("--set", choices=tuple(SET_FILES), action="append", help="the sentence sets (default: both)")
    parser.add_argument(
        "--causes", action="store_true", help="the model asked directly under one change at a time (40 a language)"
    )
    parser.add_argument(
        "--features", action="store_true", help="our features against the reference extractor (8 a language)"
    )
    parser.add_argument(
        "--human", action="store_true", help="the model on recorded human speech cut as the bench cuts its pauses"
    )
    args = parser.parse_args()
    if args.human:
        cuts = human()
        print(json.dumps([cut._asdict() for cut in cuts], indent=2) if args.json else human_report(cuts))
        return
    if args.features:
        print(json.dumps(features(args.limit or 8, (args.set or ["dev"])[0]), indent=2))
        return
    if args.causes:
        table = causes(args.limit or 40, (args.set or ["dev"])[0])
        print(json.dumps(table, indent=2) if args.json else causes_report(table))
        return
    figures = run(args.limit, tuple(args.set or SET_FILES))
    print(json.dumps(figures, indent=2) if args.json else report(figures))


if __name__ == "__main__":
    main()
