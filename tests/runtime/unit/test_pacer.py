"""Ink's pace: at most one second of audio per second, live audio never held back, backlogs caught up by dropping
long silences and never a word."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.ink.pacer import FINALIZE, Pacer

BLOCK_MS = 64


def voice(ms: int) -> bytes:
    t = np.arange(ms * 8) / 8000
    return (8000 * np.sin(2 * np.pi * 300 * t)).astype("<i2").tobytes()


def silence(ms: int) -> bytes:
    return bytes(ms * 16)


def due(pacer: Pacer, now: float, **options: bool) -> list[bytes]:
    """The audio the pacer lets out now (these tests queue no commands)."""
    return [chunk for chunk in pacer.due(now, **options) if isinstance(chunk, bytes)]


def blocks(pcm: bytes) -> list[bytes]:
    size = BLOCK_MS * 16
    return [pcm[i : i + size] for i in range(0, len(pcm), size)]


def test_live_audio_goes_out_as_it_arrives() -> None:
    pacer = Pacer()
    pacer.open(0.0)
    now = 0.0
    for block in blocks(voice(2000)):
        now += BLOCK_MS / 1000
        pacer.push(block)
        assert due(pacer, now) == [block]


def test_audio_delayed_by_jitter_goes_out_at_once_when_it_arrives() -> None:
    pacer = Pacer()
    pacer.open(0.0)
    late = blocks(voice(640))
    for block in late:
        pacer.push(block)
    assert b"".join(due(pacer, 0.7)) == b"".join(late)


def test_a_backlog_of_speech_is_sent_no_faster_than_real_time() -> None:
    pacer = Pacer()
    pacer.open(0.0)
    for block in blocks(voice(5000)):
        pacer.push(block)
    sent_ms = 0.0
    for step in range(1, 51):
        now = step * 0.1
        sent_ms += sum(len(chunk) for chunk in due(pacer, now)) / 16
        assert sent_ms <= now * 1000 + pacer.burst_ms
    assert pacer.waiting_ms == 0


def test_a_backlog_catches_up_with_live_by_dropping_long_silences() -> None:
    pacer = Pacer()
    pacer.open(0.0)
    # Three seconds of backlog (mostly the caller listening to the greeting), then live speech.
    for block in blocks(silence(2500) + voice(500)):
        pacer.push(block)
    now, sent = 0.0, bytearray()
    for block in blocks(voice(1000) + silence(2500)):
        now += BLOCK_MS / 1000
        pacer.push(block)
        sent += b"".join(due(pacer, now))
    assert pacer.waiting_ms < 200
    assert pacer.skipped_ms > 1500


@settings(max_examples=80, deadline=None)
@given(
    parts=st.lists(st.tuples(st.booleans(), st.integers(64, 1500)), min_size=1, max_size=12),
    backlog_ms=st.integers(0, 4000),
)
def test_every_voiced_block_is_sent_in_order_whatever_is_skipped(
    parts: list[tuple[bool, int]], backlog_ms: int
) -> None:
    pacer = Pacer()
    pacer.open(0.0)
    stream = b"".join(voice(ms) if voiced else silence(ms) for voiced, ms in parts)
    everything = blocks(stream)
    voiced_blocks = [b for b in everything if any(b)]
    sent: list[bytes] = []
    backlog = int(backlog_ms / BLOCK_MS)
    for block in everything[:backlog]:
        pacer.push(block)
    now = 0.0
    for block in everything[backlog:]:
        now += BLOCK_MS / 1000
        pacer.push(block)
        sent += due(pacer, now)
    for _ in range(200):
        now += 0.1
        sent += due(pacer, now)
    assert [b for b in sent if any(b)] == voiced_blocks
    remaining = iter(everything)
    assert all(any(block == candidate for candidate in remaining) for block in sent), "sent out of order"


def test_no_silence_is_dropped_while_a_turn_is_open_in_ink() -> None:
    pacer = Pacer()
    pacer.open(0.0)
    for block in blocks(voice(500) + silence(2000) + voice(500)):
        pacer.push(block)
    sent = []
    for step in range(1, 60):
        sent += due(pacer, step * 0.1, may_skip=False)
    assert pacer.skipped_ms == 0
    assert sum(len(b) for b in sent) == (500 + 2000 + 500) * 16


def test_a_finalize_goes_out_right_after_the_audio_queued_before_it() -> None:
    pacer = Pacer(catch_up_after_ms=float("inf"))
    pacer.open(0.0)
    speech = blocks(voice(1000))
    for block in speech:
        pacer.push(block)
    pacer.push_marker(FINALIZE)
    assert FINALIZE not in pacer.due(0.5)
    assert pacer.due(1.0)[-1] == FINALIZE
