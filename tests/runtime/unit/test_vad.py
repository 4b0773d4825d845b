"""Voice-activity figures: utterance boundaries found in PCM, whatever the chunking, by either detector; two trackers of
one stream sharing one detector's decisions."""

from __future__ import annotations

import itertools
import wave
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.audio.vad import DetectorName, SharedDetector, Utterance, VoiceActivity, detector
from voicebridge_dev.simulator import load_clips
from voicebridge_dev.simulator.events import sound_span
from voicebridge_dev.simulator.line import LineNoise

CLIPS = Path(__file__).resolve().parents[3] / "src" / "dev" / "voicebridge_dev" / "simulator" / "clips"


def tone(ms: int, amplitude: int = 8000) -> bytes:
    t = np.arange(ms * 8) / 8000
    return (amplitude * np.sin(2 * np.pi * 440 * t)).astype("<i2").tobytes()


def silence(ms: int) -> bytes:
    return bytes(ms * 16)


SPEECH = silence(200) + tone(600) + silence(500) + tone(400) + silence(400)


def utterances(chunks: list[bytes]) -> list[Utterance]:
    vad = VoiceActivity(close_ms=300)
    for chunk in chunks:
        vad.feed(chunk)
    return list(vad.closed)


def test_utterances_are_found_with_their_bounds() -> None:
    assert utterances([SPEECH]) == [Utterance(200, 800), Utterance(1300, 1700)]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(SPEECH) - 1), max_size=20))
def test_any_chunking_finds_the_same_utterances(cuts: list[int]) -> None:
    bounds = [0, *sorted(set(cuts)), len(SPEECH)]
    assert utterances([SPEECH[a:b] for a, b in itertools.pairwise(bounds)]) == utterances([SPEECH])


def test_a_click_is_not_an_utterance() -> None:
    assert utterances([silence(100) + tone(20) + silence(600)]) == []


def test_an_utterance_still_open_can_be_taken_whole_so_far() -> None:
    vad = VoiceActivity(close_ms=300)
    vad.feed(silence(100) + tone(300))
    assert vad.speaking
    assert vad.take() == Utterance(100, 400)
    assert vad.take() is None


# -- the detectors behind it


def clip(name: str) -> bytes:
    with wave.open(str(CLIPS / f"{name}.wav"), "rb") as wav:
        return wav.readframes(wav.getnframes())


def white_noise(ms: int, dbfs: float, seed: int = 1) -> bytes:
    noise = np.random.default_rng(seed).normal(0, 32768 * 10 ** (dbfs / 20), ms * 8)
    return np.clip(np.rint(noise), -32768, 32767).astype("<i2").tobytes()


def mixed(speech: bytes, noise: bytes) -> bytes:
    total = np.frombuffer(speech, "<i2").astype(np.int32) + np.frombuffer(noise, "<i2")[: len(speech) // 2]
    return bytes(np.clip(total, -32768, 32767).astype("<i2").tobytes())


def silero_utterances(stream: bytes) -> list[Utterance]:
    vad = VoiceActivity(detector=detector("silero"), close_ms=300)
    vad.feed(stream)
    return list(vad.closed)


def test_silero_finds_a_spoken_sentence_as_one_utterance() -> None:
    speech = clip("balance")
    [found] = silero_utterances(silence(500) + speech + silence(800))
    assert 500 <= found.start_ms <= 700
    assert 500 + len(speech) / 16 - 400 <= found.end_ms <= 500 + len(speech) / 16 + 300


def test_silero_takes_loud_white_noise_for_no_one_speaking() -> None:
    assert silero_utterances(white_noise(3000, -25)) == []


def test_the_energy_detector_held_to_the_lines_floor_takes_white_noise_for_no_one_speaking() -> None:
    # Above the energy detector's own threshold (-40 dBFS), but no louder than the line is anyway.
    vad = VoiceActivity(detector=detector("energy"), close_ms=300)
    vad.feed(white_noise(3000, -35))
    assert (vad.speaking, list(vad.closed)) == (False, [])


def test_silero_finds_speech_ten_db_above_white_noise() -> None:
    speech = silence(500) + clip("pay-bill") + silence(800)
    level = np.sqrt(np.mean(np.square(np.frombuffer(clip("pay-bill"), "<i2") / 32768.0)))
    noisy = mixed(speech, white_noise(len(speech) // 16, 20 * np.log10(level) - 10))
    assert len(silero_utterances(noisy)) == 1


def test_silero_never_hears_speech_in_digital_silence() -> None:
    vad = VoiceActivity(detector=detector("silero"), close_ms=300)
    vad.feed(silence(5000))
    assert (vad.speaking, vad.silent_for_ms, list(vad.closed)) == (False, 5000, [])


@settings(max_examples=10, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=2 * 8000 * 2), max_size=8))
def test_silero_finds_the_same_utterances_whatever_the_chunking(cuts: list[int]) -> None:
    stream = silence(300) + clip("thanks") + silence(400)
    bounds = [0, *sorted({cut - cut % 2 for cut in cuts if cut < len(stream)}), len(stream)]
    vad = VoiceActivity(detector=detector("silero"), close_ms=300)
    for a, b in itertools.pairwise(bounds):
        vad.feed(stream[a:b])
    assert list(vad.closed) == silero_utterances(stream)


def test_silero_keeps_the_utterance_open_through_a_short_pause() -> None:
    vad = VoiceActivity(detector=detector("silero"), close_ms=300)
    vad.feed(silence(200) + clip("amount")[:8000] + silence(100))
    assert vad.speaking
    assert vad.next_start_ms() is not None


@pytest.mark.parametrize("name", ["balance", "dispute", "order-help", "person", "yes-please"])
def test_silero_dates_a_voice_from_where_its_sound_begins_and_ends(name: str) -> None:
    # A frame is judged by a 32 ms window ending inside it: the voice is dated from the window that found it, and to
    # the end of the last window sure of it, wherever the windows fall against the sound.
    samples = np.frombuffer(clip(name), "<i2")
    sound_start, sound_end = (s * 1000 for s in sound_span(samples, 8000))
    starts, ends = [], []
    for lead_ms in range(1000, 1032, 4):
        [found] = silero_utterances(silence(lead_ms) + clip(name) + silence(800))
        starts.append(found.start_ms - lead_ms - sound_start)
        ends.append(found.end_ms - lead_ms - sound_end)
    assert min(starts) >= -20 and max(starts) <= 75, starts
    assert max(ends) <= 100, ends


# -- one detector's decisions, shared by two trackers of the same stream


def tracked(chunks: list[bytes], barge_in: VoiceActivity, turns: VoiceActivity) -> list[tuple[object, ...]]:
    """What the streaming agent's two trackers of the caller's voice show after each chunk of it: barge-in's (its
    closed utterances taken at once), then the transcriber's (fed 100 ms at a time)."""

    def state(vad: VoiceActivity) -> tuple[object, ...]:
        return (vad.position_ms, vad.speaking, vad.next_start_ms(), vad.last_voiced_end_ms, tuple(vad.closed))

    states = []
    for chunk in chunks:
        barge_in.feed(chunk)
        states.append(state(barge_in))
        while barge_in.closed:
            barge_in.take()
        for start in range(0, len(chunk), 1600):
            turns.feed(chunk[start : start + 1600])
            states.append(state(turns))
    return states


@pytest.mark.parametrize(("name", "condition"), [("silero", None), ("silero", "babble-10db"), ("energy", "white-10db")])
def test_trackers_sharing_one_detector_go_through_the_states_each_goes_through_with_its_own(
    name: DetectorName, condition: str | None
) -> None:
    said = silence(400) + clip("balance") + silence(300) + clip("uh-huh") + silence(900) + clip("person") + silence(500)
    if condition is not None:
        clips = load_clips()
        noise = LineNoise.of(condition, [c.samples for c in clips.values()])
        said = noise.added(np.frombuffer(said, "<i2"), 0).astype("<i2").tobytes()
    cuts = np.random.default_rng(7).integers(1, 2000, size=len(said) // 1000).cumsum() * 2
    chunks = [said[a:b] for a, b in itertools.pairwise([0, *cuts[cuts < len(said)].tolist(), len(said)])]

    shared = SharedDetector(detector(name))
    together = tracked(
        chunks,
        VoiceActivity(detector=shared.reader(), close_ms=200),
        VoiceActivity(detector=shared.reader(), close_ms=300, position_ms=2500),
    )
    apart = tracked(
        chunks,
        VoiceActivity(detector=detector(name), close_ms=200),
        VoiceActivity(detector=detector(name), close_ms=300, position_ms=2500),
    )

    assert together == apart
    assert any(state[4] for state in apart), "no utterance was found"


@dataclass
class Counting:
    """Judges a frame voiced when it is loud, and counts the frames it judged."""

    judged: int = 0
    change_lead_ms: float = 0.0

    def voiced(self, frames: npt.NDArray[np.float32]) -> list[bool]:
        self.judged += len(frames)
        return [bool(np.abs(frame).max() > 0.1) for frame in frames]


def test_a_shared_detector_judges_each_frame_once_whichever_reader_reaches_it_first() -> None:
    counting = Counting()
    shared = SharedDetector(counting)
    ahead, behind = VoiceActivity(detector=shared.reader()), VoiceActivity(detector=shared.reader())
    stream = silence(200) + tone(600) + silence(600)

    ahead.feed(stream[:8000])
    behind.feed(stream[:3000])
    ahead.feed(stream[8000:])
    behind.feed(stream[3000:])

    assert counting.judged == len(stream) // 320
    assert list(ahead.closed) == list(behind.closed) == [Utterance(200, 800)]


def test_a_reader_fed_other_audio_than_the_frame_judged_at_its_place_is_refused() -> None:
    shared = SharedDetector(Counting())
    first, second = VoiceActivity(detector=shared.reader()), VoiceActivity(detector=shared.reader())
    first.feed(tone(100))

    with pytest.raises(ValueError, match="other audio"):
        second.feed(silence(100))


def test_a_reader_made_after_the_first_frame_was_judged_is_refused() -> None:
    shared = SharedDetector(Counting())
    VoiceActivity(detector=shared.reader()).feed(tone(20))

    with pytest.raises(ValueError, match="before its first frame"):
        shared.reader()
