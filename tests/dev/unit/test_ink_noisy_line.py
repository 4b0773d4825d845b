"""The Ink emulator on a noisy line: turns found where the caller speaks, and registered clips heard through noise.

The audio is the simulated caller's clips under the demo's line noises (voicebridge_dev.simulator.line).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from voicebridge_dev.local.ink import TurnDetector, TurnSettings
from voicebridge_dev.local.ink.audio import Samples
from voicebridge_dev.local.ink.clips import ClipRegistry
from voicebridge_dev.local.ink.turns import voiced_span, voiced_turns
from voicebridge_dev.simulator.caller import load_clips
from voicebridge_dev.simulator.line import LINE_NOISES, LineNoise

RATE = 8000
CLIPS = load_clips()
SAMPLES = [clip.samples for clip in CLIPS.values()]
PAD = np.zeros(RATE // 2, np.int16)
Pcm = npt.NDArray[np.int16]

# How far a turn's start or end may move under each noise: babble 10 dB below the speech hides a clip's soft
# edges (a turn may start over a second late), as it would from any listener.
TOLERANCE_MS = {"white-20db": 100, "white-10db": 300, "babble-20db": 300, "babble-10db": 1200, "comfort-noise": 100}


def floats(pcm: Pcm) -> Samples:
    return pcm.astype(np.float32) / np.float32(32768)


def a_call() -> Pcm:
    """1.5 s of line, then every clip twice, each followed by 2 s of line."""
    parts = [np.zeros(3 * RATE // 2, np.int16)]
    for clip in [*SAMPLES, *SAMPLES]:
        parts += [clip, np.zeros(2 * RATE, np.int16)]
    return np.concatenate(parts)


def turns(pcm: Pcm, settings: TurnSettings | None = None) -> list[tuple[int, int]]:
    """Each turn as (start, end) in ms: from its first voiced frame to its last, as the detector saw them."""
    detector = TurnDetector(settings or TurnSettings(), RATE)
    found: list[tuple[int, int]] = []
    for begin in range(0, pcm.size, RATE // 10):
        for signal in detector.feed(floats(pcm[begin : begin + RATE // 10])):
            if signal.kind == "end":
                found.append((detector.speech_start_sample // 8, detector.speech_end_sample // 8))
    return found


def registry(*names: str) -> ClipRegistry:
    clips = ClipRegistry(TurnSettings())
    for name in names or CLIPS:
        clips.register(CLIPS[name].samples.tobytes(), CLIPS[name].transcript, RATE)
    return clips


def on_the_line(condition: str, pcm: Pcm, at: int = 0) -> Pcm:
    return LineNoise.of(condition, SAMPLES).added(pcm, at)


def test_a_clean_line_gives_the_turns_of_the_fixed_levels_alone() -> None:
    fixed_only = TurnSettings(voiced_above_noise_db=-200.0, silence_above_noise_db=-200.0)
    call = a_call()
    assert turns(call) == turns(call, fixed_only)
    assert len(turns(call)) == 2 * len(SAMPLES)


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_a_noisy_lines_turns_are_the_clean_lines_within_a_tolerance(condition: str) -> None:
    call = a_call()
    clean, noisy = turns(call), turns(on_the_line(condition, call))
    assert len(noisy) == len(clean)
    worst = max(max(abs(a - b), abs(c - d)) for (a, c), (b, d) in zip(noisy, clean, strict=True))
    assert worst <= TOLERANCE_MS[condition]


def with_keep_alive(pcm: Pcm) -> Pcm:
    """``pcm`` with 200 ms of zeros after every 400 ms, as a client sends while its source stalls."""
    chunks = pcm[: pcm.size // 3200 * 3200].reshape(-1, 3200)
    return np.concatenate([chunks, np.zeros((chunks.shape[0], 1600), np.int16)], axis=1).reshape(-1)


def test_a_clients_keep_alive_zeros_do_not_hide_the_lines_noise() -> None:
    call = a_call()
    clean, noisy = turns(with_keep_alive(call)), turns(with_keep_alive(on_the_line("white-20db", call)))
    assert len(noisy) == len(clean)
    worst = max(max(abs(a - b), abs(c - d)) for (a, c), (b, d) in zip(noisy, clean, strict=True))
    assert worst <= 2 * TOLERANCE_MS["white-20db"]


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_the_lines_noise_alone_starts_no_turn(condition: str) -> None:
    assert turns(LineNoise.of(condition, SAMPLES).samples(0, 60 * RATE)) == []


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_a_clip_on_a_noisy_line_is_voiced_where_it_is_on_a_clean_one(condition: str) -> None:
    said = np.concatenate([np.zeros(2 * RATE, np.int16), CLIPS["balance"].samples, PAD])
    clean = voiced_span(floats(said), TurnSettings(), RATE)
    [noisy] = voiced_turns(floats(on_the_line(condition, said)), TurnSettings(), RATE)
    assert clean is not None
    assert abs(noisy[0] - clean[0]) <= TOLERANCE_MS[condition] * RATE // 1000
    assert abs(noisy[1] - clean[1]) <= TOLERANCE_MS[condition] * RATE // 1000


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_each_clip_under_the_lines_noise_is_found_as_itself(condition: str) -> None:
    clips = registry()
    for at, (name, clip) in enumerate(CLIPS.items()):
        heard = on_the_line(condition, np.concatenate([PAD, clip.samples, PAD]), at * 13_579).tobytes()
        assert clips.final_transcript(heard) == clip.transcript, name
        assert clips.partial_transcript(heard) == clip.transcript, name


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_no_clip_under_the_lines_noise_is_found_as_another(condition: str) -> None:
    for at, name in enumerate(CLIPS):
        others = registry(*(other for other in CLIPS if other != name))
        heard = on_the_line(condition, np.concatenate([PAD, CLIPS[name].samples, PAD]), at * 13_579).tobytes()
        assert others.final_transcript(heard) is None, name
        assert others.partial_transcript(heard) is None, name


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_the_lines_noise_alone_is_no_clip(condition: str) -> None:
    clips = registry()
    noise = LineNoise.of(condition, SAMPLES).samples(0, 20 * RATE).tobytes()
    assert clips.final_transcript(noise) is None
    assert clips.partial_transcript(noise) is None


def test_silence_is_no_clip() -> None:
    silence = bytes(4 * RATE)
    assert registry().final_transcript(silence) is None
    assert registry().partial_transcript(silence) is None


def test_a_clip_said_twice_under_noise_is_heard_twice_in_order() -> None:
    balance, thanks = CLIPS["balance"], CLIPS["thanks"]
    said = np.concatenate([PAD, thanks.samples, PAD, balance.samples, PAD, thanks.samples, PAD])
    heard = on_the_line("white-10db", said).tobytes()
    assert registry().final_transcript(heard) == f"{thanks.transcript} {balance.transcript} {thanks.transcript}"


def test_a_partial_transcript_under_noise_grows_with_the_clip() -> None:
    clip = CLIPS["dispute"]
    heard = on_the_line("white-10db", np.concatenate([PAD, clip.samples]))
    half = registry().partial_transcript(heard[: PAD.size + clip.samples.size // 2].tobytes())
    assert half is not None and clip.transcript.startswith(half) and half != clip.transcript


def test_a_clip_with_a_long_pause_in_it_is_known_by_its_voice_not_its_silence() -> None:
    # A sentence said with a pause of 1.5 s: the middle of its voiced span is digital silence, which any quiet
    # stretch of a line would match.
    first, second = CLIPS["balance"].samples, CLIPS["person"].samples
    paused = np.concatenate([first, np.zeros(3 * RATE // 2, np.int16), second])
    clips = ClipRegistry(TurnSettings())
    clips.register(paused.tobytes(), "said with a pause", RATE)
    assert clips.final_transcript(bytes(4 * RATE)) is None
    assert clips.final_transcript(np.concatenate([PAD, paused, PAD]).tobytes()) == "said with a pause"
