"""The position ledger: each byte of a track is admitted once, whatever the chunking, repeats and reconnects, and
what is unsettled is exactly what a new session must replay."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.ink.ledger import PositionLedger
from voicebridge.store.turns import TrackProgress

FIRST_FRAGMENT = 91343852333181452199722691208580038832309429352


@dataclass(frozen=True)
class Frame:
    fragment: str
    offset: int
    pcm: bytes


def _stream(sizes: list[int]) -> list[tuple[str, bytes]]:
    """Fragments of distinct bytes, so any misplaced byte shows."""
    fragments, counter = [], 0
    for index, size in enumerate(sizes):
        data = bytes((counter + i) % 251 for i in range(size))
        counter += size
        fragments.append((str(FIRST_FRAGMENT + 7 * index), data))
    return fragments


def _frames(fragments: list[tuple[str, bytes]], cuts: list[int], start_fragment: int, stop_after: int) -> list[Frame]:
    """What one GetMedia read delivers: from ``start_fragment`` on, each fragment's audio cut into blocks."""
    frames: list[Frame] = []
    for number, data in fragments[start_fragment:]:
        offset, i = 0, 0
        while offset < len(data):
            size = max(2, cuts[i % len(cuts)])
            frames.append(Frame(number, offset, data[offset : offset + size]))
            offset += size
            i += 1
    return frames[:stop_after]


fragment_sizes = st.lists(st.integers(min_value=0, max_value=3000), min_size=1, max_size=6)
block_sizes = st.lists(st.integers(min_value=1, max_value=1200), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(
    sizes=fragment_sizes,
    cuts=block_sizes,
    reads=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 400)), min_size=1, max_size=6),
)
def test_any_chunking_and_any_reconnect_point_admits_each_byte_exactly_once(
    sizes: list[int], cuts: list[int], reads: list[tuple[int, int]]
) -> None:
    fragments = _stream(sizes)
    whole = b"".join(data for _, data in fragments)
    ledger = PositionLedger(TrackProgress(), max_unsettled_bytes=10**9)
    admitted = bytearray()
    progress_fragment = 0
    for attempt, (back, stop_after) in enumerate(reads):
        # A reconnect resumes at the fragment in progress or earlier, a read may be cut anywhere, and a repeat need
        # not be cut into the same blocks.
        start = max(0, progress_fragment - back % 2)
        rotated = cuts[attempt % len(cuts) :] + cuts[: attempt % len(cuts)]
        for frame in _frames(fragments, rotated, start, stop_after):
            admitted += ledger.admit(frame.fragment, frame.offset, frame.pcm, None)
            progress_fragment = next(i for i, (n, _) in enumerate(fragments) if n == frame.fragment)
    for frame in _frames(fragments, cuts, max(0, progress_fragment - 1), 10**9):
        admitted += ledger.admit(frame.fragment, frame.offset, frame.pcm, None)
    assert bytes(admitted) == whole


@settings(max_examples=200, deadline=None)
@given(sizes=fragment_sizes, cuts=block_sizes, settle_at=st.lists(st.integers(0, 20000), max_size=6))
def test_the_unsettled_audio_is_exactly_what_lies_between_settled_and_sent(
    sizes: list[int], cuts: list[int], settle_at: list[int]
) -> None:
    fragments = _stream(sizes)
    whole = b"".join(data for _, data in fragments)
    ledger = PositionLedger(TrackProgress(), max_unsettled_bytes=10**9)
    frames = _frames(fragments, cuts, 0, 10**9)
    for i, frame in enumerate(frames):
        ledger.admit(frame.fragment, frame.offset, frame.pcm, None)
        if settle_at and i % len(settle_at) == 0:
            ledger.settle_to(settle_at[i % len(settle_at)])
        settled = ledger.settled.stream_bytes
        assert ledger.unsettled == whole[settled : ledger.sent_bytes]


@settings(max_examples=200, deadline=None)
@given(sizes=fragment_sizes, cuts=block_sizes, settle_to=st.integers(0, 20000), handover_after=st.integers(0, 60))
def test_a_successor_started_from_the_settled_position_admits_exactly_the_rest(
    sizes: list[int], cuts: list[int], settle_to: int, handover_after: int
) -> None:
    fragments = _stream(sizes)
    whole = b"".join(data for _, data in fragments)
    first = PositionLedger(TrackProgress(), max_unsettled_bytes=10**9)
    for frame in _frames(fragments, cuts, 0, handover_after):
        first.admit(frame.fragment, frame.offset, frame.pcm, None)
    first.settle_to(settle_to)
    checkpoint = first.settled

    successor = PositionLedger(checkpoint, max_unsettled_bytes=10**9)
    resumed = bytearray()
    # The successor reads from the checkpoint's fragment, or from the start when nothing was settled.
    start = next((i for i, (n, _) in enumerate(fragments) if n == checkpoint.fragment), 0)
    for frame in _frames(fragments, cuts, max(0, start - 1), 10**9):
        resumed += successor.admit(frame.fragment, frame.offset, frame.pcm, None)
    assert bytes(resumed) == whole[checkpoint.stream_bytes :]


def test_a_long_utterance_settles_its_oldest_audio_past_the_window() -> None:
    ledger = PositionLedger(TrackProgress(), max_unsettled_bytes=1000)
    ledger.admit(str(FIRST_FRAGMENT), 0, bytes(1500), None)
    assert (ledger.settled.stream_bytes, ledger.unsettled_bytes) == (500, 1000)
    assert (ledger.settled.fragment, ledger.settled.offset) == (str(FIRST_FRAGMENT), 500)


def test_a_silent_point_settles_only_once_ink_has_had_time_to_react() -> None:
    ledger = PositionLedger(TrackProgress(), max_unsettled_bytes=10**6)
    ledger.admit(str(FIRST_FRAGMENT), 0, bytes(800), None)
    ledger.mark_silent_point(now=10.0)
    assert not ledger.settle_acknowledged(now=10.3, ack_s=0.4)
    assert ledger.settle_acknowledged(now=10.4, ack_s=0.4)
    assert ledger.quiet


def test_a_turn_start_forgets_the_silent_points_before_it() -> None:
    ledger = PositionLedger(TrackProgress(), max_unsettled_bytes=10**6)
    ledger.admit(str(FIRST_FRAGMENT), 0, bytes(800), None)
    ledger.mark_silent_point(now=10.0)
    ledger.forget_silent_points()
    assert not ledger.settle_acknowledged(now=20.0, ack_s=0.4)
    assert ledger.unsettled_bytes == 800


def test_produced_time_is_read_from_the_chunk_holding_the_position() -> None:
    ledger = PositionLedger(TrackProgress(), max_unsettled_bytes=10**6)
    ledger.admit(str(FIRST_FRAGMENT), 0, bytes(1600), produced_end_ms=5_000.0)
    assert ledger.produced_at(50.0) == 5_000.0 - 50.0
    assert ledger.produced_at(500.0) is None
