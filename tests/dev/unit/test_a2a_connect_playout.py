"""Connect's playback of the agent's audio in the emulator: blocks at 1×, flushes, underruns, the recording."""

from __future__ import annotations

import numpy as np

from voicebridge_dev.local.a2a.audio import Playout, Recording, StreamResampler
from voicebridge_dev.local.a2a.timeline import Timeline

BLOCK = 160  # 20 ms at 8 kHz


def playout(rate: int = 8000) -> tuple[Playout, Timeline, Recording]:
    timeline, recording = Timeline(), Recording()
    return Playout(rate, timeline, recording), timeline, recording


def ramp(samples: int) -> bytes:
    return (np.arange(1, samples + 1) % 1000 + 1).astype("<i2").tobytes()


def test_audio_is_heard_block_by_block_then_silence() -> None:
    p, timeline, recording = playout()
    p.add("a-1", ramp(250), last=True)

    for n in range(3):
        p.tick(n * 0.02)

    assert [b.agent_samples for b in recording.blocks] == [160, 90, 0]
    assert bytes(recording.pcm[:500]) == ramp(250)
    assert [(e.kind, e.at) for e in timeline.events] == [("playback_start", 0.0), ("playback_stop", 0.02 + 90 / 8000)]


def test_a_flush_drops_what_was_not_heard() -> None:
    p, timeline, recording = playout()
    p.add("a-1", ramp(800), last=False)
    p.tick(0.0)

    p.flush(0.01, "agent_interruption")
    p.tick(0.02)

    assert [b.agent_samples for b in recording.blocks] == [160, 0]
    assert timeline.events[-1].detail == {"artifact": "a-1", "reason": "agent_interruption"}
    assert not p.busy


def test_an_artifact_that_runs_dry_before_its_last_chunk_is_an_underrun() -> None:
    p, timeline, _ = playout()
    p.add("a-1", ramp(100), last=False)
    p.tick(0.0)
    p.tick(0.02)
    p.add("a-1", ramp(100), last=True)
    p.tick(0.04)

    assert [e.kind for e in timeline.events] == ["playback_start", "underrun", "playback_stop"]


def test_the_audio_stops_at_the_end_of_the_last_agent_sample_after_a_time() -> None:
    p, _, recording = playout()
    p.add("a-1", ramp(400), last=True)
    for n in range(4):
        p.tick(n * 0.02)

    assert recording.audio_stopped_after(0.005) == 400 / 8000
    assert recording.audio_stopped_after(0.07) == 0.07
    assert recording.audio_stopped_after(0.08) is None


def test_audio_still_playing_when_the_recording_ends_stops_at_its_end() -> None:
    p, _, recording = playout()
    p.add("a-1", ramp(800), last=True)
    for n in range(2):
        p.tick(n * 0.02)

    assert recording.audio_stopped_after(0.01) == 0.04


def test_a_24_khz_chunk_is_heard_as_a_third_as_many_samples() -> None:
    p, _, recording = playout(24000)
    p.add("a-1", ramp(2400), last=True)
    for n in range(6):
        p.tick(n * 0.02)

    assert sum(b.agent_samples for b in recording.blocks) == 800


def test_the_callers_resampler_returns_each_slice_at_once() -> None:
    resample = StreamResampler(8000, 16000)

    sizes = [len(resample(ramp(160))) for _ in range(5)]

    assert sizes[1:] == [640] * 4
