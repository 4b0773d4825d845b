"""The caller's line: noise under everything the caller sends, and what the report says it set off."""

from __future__ import annotations

import numpy as np
import pytest

from voicebridge_dev.simulator.caller import load_clips
from voicebridge_dev.simulator.clock import VirtualClock
from voicebridge_dev.simulator.engine import CallResult
from voicebridge_dev.simulator.events import BOT, CALLER, CallLog, LambdaCall, Segment
from voicebridge_dev.simulator.line import LINE_NOISES, LineNoise
from voicebridge_dev.simulator.media import MediaPlane
from voicebridge_dev.simulator.report import line_effects, turn_figures

CLIPS = load_clips()
SAMPLES = [clip.samples for clip in CLIPS.values()]


def level_db(samples: np.ndarray) -> float:
    return float(10 * np.log10(np.mean(np.square(samples.astype(np.float64) / 32768))))


@pytest.mark.parametrize("condition", LINE_NOISES)
def test_a_lines_noise_is_the_same_wherever_a_stretch_of_it_is_asked_for(condition: str) -> None:
    line = LineNoise.of(condition, SAMPLES)
    whole = line.samples(0, 400_000)
    assert np.array_equal(line.samples(123_456, 8000), whole[123_456:131_456])
    assert level_db(whole) < -20


def test_noise_ten_db_below_the_speech_is_ten_db_louder_than_noise_twenty_db_below() -> None:
    loud, quiet = LineNoise.of("white-10db", SAMPLES), LineNoise.of("white-20db", SAMPLES)
    assert level_db(loud.samples(0, 80_000)) - level_db(quiet.samples(0, 80_000)) == pytest.approx(10, abs=0.2)


def test_a_line_noise_not_known_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="line noise 'pink'"):
        LineNoise.of("pink", SAMPLES)


def test_the_line_carries_its_noise_under_the_callers_silence_and_speech_and_not_the_bots() -> None:
    clock = VirtualClock()
    line = LineNoise.of("comfort-noise", SAMPLES)
    media = MediaPlane(clock, CallLog(), line=line)
    clip = CLIPS["balance"]
    media.play(CALLER, clip.samples, "speech", at=1.0)
    media.play(BOT, clip.samples, "prompt", at=1.0)
    recording = media.recording(4.0)
    caller, bot = recording[:, 0], recording[:, 1]
    assert np.array_equal(caller[:8000], line.samples(0, 8000))
    assert np.array_equal(caller[8000 : 8000 + clip.samples.size], line.added(clip.samples, 8000))
    assert np.array_equal(bot[8000 : 8000 + clip.samples.size], clip.samples) and not bot[:8000].any()


def a_call(listening_at: list[float]) -> CallResult:
    """A call in which the caller said "balance" from 5.0 s, and ConverseFunction answered Listening at each time."""
    clip = CLIPS["balance"]
    said = Segment(CALLER, 5.0, clip.samples, "speech", text=clip.transcript, clip="balance")
    calls = [
        LambdaCall("converse", "ConverseFunction", at - 7.0, at, {}, "ok", response={"Result": "Listening"})
        for at in listening_at
    ]
    return CallResult("c-1", "ended", None, 30.0, [*calls], [said], np.zeros((8000, 2), np.int16), True, 0.0)


def test_listening_while_the_caller_speaks_or_just_after_is_their_turns_and_any_other_is_the_lines() -> None:
    end = 5.0 + CLIPS["balance"].samples.size / 8000
    result = a_call([5.5, end + 1.5, end + 4.0, 2.0])
    assert line_effects(result, turn_figures(result)) == {"listening_without_speech": 2, "turns_without_speech": 0}


def test_a_quiet_line_sets_nothing_off() -> None:
    result = a_call([])
    assert line_effects(result, turn_figures(result))["listening_without_speech"] == 0


class Captured:
    """A contact stream that keeps what it is sent."""

    def __init__(self) -> None:
        self.customer = b""

    def append_tracks(self, customer: bytes = b"", agent: bytes = b"") -> None:
        self.customer += customer


class HeldClock(VirtualClock):
    """A virtual clock whose real time stands still: every moment is one the test chose."""

    def __init__(self, at: float) -> None:
        super().__init__()
        self._at = at

    def now(self) -> float:
        return self._at

    def sleep_until(self, moment: float) -> None:
        self._at = max(self._at, moment)


@pytest.mark.parametrize("start", [0.0, 0.6 / 8000, 0.4 / 8000, 12.7 / 8000])
def test_streaming_sends_the_call_from_the_moment_it_started_however_late_the_stream_was_ready(start: float) -> None:
    clock = HeldClock(start)  # the contact began a fraction of a sample in (the edge CI once met by chance)
    media = MediaPlane(clock, CallLog())
    clip = CLIPS["balance"]
    media.play(CALLER, clip.samples, "speech", at=0.0)
    started = clock.now()
    clock.sleep_until(started + 0.3)  # the stream took 300 ms to begin the contact
    stream = Captured()
    media.start_streaming(stream, customer=True, agent=True, at=started)  # type: ignore[arg-type]
    media.pump()
    first = round(started * 8000)
    sent = np.frombuffer(stream.customer, dtype="<i2")
    # The 300 ms to within a sample: the plane places a moment at its nearest sample and streams up to the last whole
    # sample now has reached.
    assert sent.size >= 2399 and np.array_equal(sent, clip.samples[first : first + sent.size])
