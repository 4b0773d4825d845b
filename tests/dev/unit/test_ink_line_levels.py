"""The Ink emulator's estimate of a line's noise: the levels it sets follow the module's percentile rule exactly.

The window is kept sorted as frames come and go; the rule it must give, frame after frame, is the one
voicebridge_dev.local.ink.turns states, written here once more with numpy over the whole window.
"""

from __future__ import annotations

import numpy as np

from voicebridge_dev.local.ink.audio import DIGITAL_SILENCE_DBFS
from voicebridge_dev.local.ink.turns import NOISE_RANGE_DB, NOISY_SHARE, YOUNG_FRAMES, LineLevels, TurnSettings

SETTINGS = TurnSettings()


def by_the_rule(heard: list[tuple[float, bool]]) -> tuple[float, float]:
    """The voiced and silent levels for the last window of ``heard`` (level, between turns), as the module says."""
    s = SETTINGS
    window = heard[-round(s.noise_window_ms / s.frame_ms) :]
    levels = np.array([level for level, _ in window])
    between = np.array([flag for _, flag in window])
    signal = levels > DIGITAL_SILENCE_DBFS
    if np.count_nonzero(signal & between) >= NOISY_SHARE * np.count_nonzero(between):
        levels = levels[signal]
    low, quarter = np.percentile(levels, [5.0, 25.0])
    top = float(quarter + s.noise_spread * (quarter - low))
    if levels.size < YOUNG_FRAMES:
        top = min(top, float(np.min(levels)) + NOISE_RANGE_DB)
    return max(s.voiced_dbfs, top + s.voiced_above_noise_db), max(s.silence_dbfs, top + s.silence_above_noise_db)


def a_line(seed: int, frames: int) -> list[tuple[float, bool]]:
    """Frames of a line: babble-like noise, a caller's voice in turns, and stretches of digital silence."""
    rng = np.random.default_rng(seed)
    heard = []
    for index in range(frames):
        in_turn = (index // 80) % 3 == 1
        voice_or_noise = float(rng.normal(-30.0 if in_turn else -48.0, 6.0))
        level = DIGITAL_SILENCE_DBFS if (index // 50) % 7 == 3 else voice_or_noise
        heard.append((level, not in_turn))
    return heard


def test_levels_at_every_frame_are_the_percentile_rule_over_the_window() -> None:
    for seed in range(3):
        line = LineLevels(SETTINGS)
        heard = a_line(seed, 900)
        for count, (level, between) in enumerate(heard, start=1):
            line.hear(level, in_turn=not between)
            assert line.thresholds() == by_the_rule(heard[:count])


def test_a_line_of_nothing_but_digital_silence_keeps_the_fixed_levels() -> None:
    line = LineLevels(SETTINGS)
    for _ in range(400):
        line.hear(DIGITAL_SILENCE_DBFS)
    assert line.thresholds() == (SETTINGS.voiced_dbfs, SETTINGS.silence_dbfs)


def test_a_line_heard_only_inside_a_turn_as_digital_silence_keeps_the_fixed_levels() -> None:
    line = LineLevels(SETTINGS)
    line.hear(DIGITAL_SILENCE_DBFS, in_turn=True)
    assert line.thresholds() == (SETTINGS.voiced_dbfs, SETTINGS.silence_dbfs)
