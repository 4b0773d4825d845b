"""Voice-activity figures: utterance boundaries found in PCM, whatever the chunking."""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.audio.vad import Utterance, VoiceActivity


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
