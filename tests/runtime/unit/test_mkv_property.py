"""Properties of the Matroska reader: chunking never changes what it reads, no input makes it raise, and a
damaged fragment costs at most itself and the fragment after it (only itself, for damage the reader sees where
it is: see test_mkv_damage.py)."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.mkv import CONNECT_TRACKS, LACINGS, Block, Fragment, Stream, Track, connect_stream
from voicebridge.kvs.mkv import AudioFrame, DocumentStart, Event, MalformedInput, MatroskaReader, Tags

Frame = tuple[str, int, int, bytes, int]

VARIANTS = {
    "connect": {},
    "known-sizes": {"unknown_sizes": False},
    "xiph": {"lacing": "xiph"},
    "ebml-lacing": {"lacing": "ebml"},
    "fixed-lacing": {"lacing": "fixed"},
    "block-groups": {"group": True},
    "void-crc": {"noise": True, "crc": True},
    "renumbered": {"renumber": True},
    "long-track-vints": {"track_vint_length": 3},
    "large-blocks": {},
}


@cache
def variant(name: str) -> Stream:
    if name == "large-blocks":
        # Blocks above the size the reader searches for a following EBML header.
        return connect_stream(2, blocks_per_track=1, frame_bytes=17_000)
    return connect_stream(3, blocks_per_track=2, frame_bytes=96, **VARIANTS[name])  # type: ignore[arg-type]


def read_chunked(data: bytes, cuts: list[int]) -> list[Event]:
    reader = MatroskaReader()
    events: list[Event] = []
    previous = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        events.extend(reader.feed(data[previous:cut]))
        previous = cut
    events.extend(reader.close())
    return events


def read_whole(data: bytes) -> list[Event]:
    reader = MatroskaReader()
    return [*reader.feed(data), *reader.close()]


def cuts_in(data: bytes) -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, len(data)), max_size=40)


names = st.sampled_from(sorted(VARIANTS))
common = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_feeding_one_byte_at_a_time_yields_the_same_events(name: str) -> None:
    data = variant(name).data
    assert read_chunked(data, list(range(len(data)))) == read_whole(data)


@common
@given(data=st.data(), name=names)
def test_any_chunking_yields_the_same_events(data: st.DataObject, name: str) -> None:
    stream = variant(name).data
    cuts = data.draw(cuts_in(stream))
    assert read_chunked(stream, cuts) == read_whole(stream)


@st.composite
def corrupted(draw: st.DrawFn) -> bytes:
    stream = bytearray(variant(draw(names)).data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(stream) - 1))
        action = draw(st.sampled_from(["overwrite", "insert", "delete"]))
        junk = draw(st.binary(min_size=1, max_size=12))
        if action == "overwrite":
            stream[at : at + len(junk)] = junk
        elif action == "insert":
            stream[at:at] = junk
        else:
            del stream[at : at + len(junk)]
    return bytes(stream)


@common
@given(data=st.data(), stream=corrupted())
def test_corrupted_input_reads_the_same_under_any_chunking(data: st.DataObject, stream: bytes) -> None:
    assert read_chunked(stream, data.draw(cuts_in(stream))) == read_whole(stream)


@common
@given(stream=corrupted())
def test_every_frame_read_from_corrupted_input_is_bytes_of_the_input(stream: bytes) -> None:
    for event in read_whole(stream):
        if isinstance(event, AudioFrame):
            assert stream[event.offset : event.offset + len(event.pcm)] == event.pcm


@common
@given(data=st.data(), noise=st.binary(max_size=600), prefix=st.booleans())
def test_arbitrary_bytes_never_raise_and_read_the_same_under_any_chunking(
    data: st.DataObject, noise: bytes, prefix: bool
) -> None:
    stream = (variant("connect").data[:200] if prefix else b"") + noise
    events = read_chunked(stream, data.draw(cuts_in(stream)))
    assert events == read_whole(stream)
    assert all(0 <= e.offset <= len(stream) for e in events if isinstance(e, MalformedInput))


@common
@given(data=st.data())
def test_a_document_cut_short_anywhere_reads_the_same_under_any_chunking(data: st.DataObject) -> None:
    stream = variant("large-blocks")
    cut = data.draw(st.integers(1, stream.offsets[1] - 1))
    spliced = stream.data[:cut] + stream.data[stream.offsets[1] :]
    assert read_chunked(spliced, data.draw(cuts_in(spliced))) == read_whole(spliced)


@common
@given(data=st.data(), name=st.sampled_from(["connect", "large-blocks"]))
def test_the_next_document_is_found_wherever_a_block_is_cut_short(data: st.DataObject, name: str) -> None:
    stream = variant(name)
    blocks = [e for e in read_whole(stream.data[: stream.offsets[1]]) if isinstance(e, AudioFrame)]
    block = data.draw(st.sampled_from(blocks))
    cut = data.draw(st.integers(block.offset, block.offset + len(block.pcm) - 1))
    spliced = stream.data[:cut] + stream.data[stream.offsets[1] :]
    events = read_chunked(spliced, data.draw(cuts_in(spliced)))
    # Sizes are trusted: a cut that leaves the block's size ending on an element boundary of the next document
    # (its Tags, its Cluster, its first block) reads as well-formed input. Wherever the damage shows, the next
    # document is found.
    damage_shows = any(isinstance(e, MalformedInput) for e in events)
    assert cut in [e.offset for e in events if isinstance(e, DocumentStart)] or not damage_shows


DAMAGEABLE = {
    "connect": {},
    "known-sizes": {"unknown_sizes": False},
    "block-groups": {"group": True},
    "void-crc": {"noise": True, "crc": True},
}


@cache
def damageable(name: str) -> Stream:
    # Connect's own frame size, so that damage lands inside blocks as often as it does in real streams.
    return connect_stream(4, blocks_per_track=2, **DAMAGEABLE[name])  # type: ignore[arg-type]


def fragment_end(stream: Stream, index: int) -> int:
    return stream.offsets[index + 1] if index + 1 < len(stream.offsets) else len(stream.data)


@st.composite
def one_fragment_damaged(draw: st.DrawFn) -> tuple[Stream, int, bytes]:
    """A stream, one of its fragments, and the stream with damage inside that fragment."""
    stream = damageable(draw(st.sampled_from(sorted(DAMAGEABLE))))
    index = draw(st.integers(0, len(stream.offsets) - 1))
    start, end = stream.offsets[index], fragment_end(stream, index)
    at = draw(st.integers(start, end - 1))
    damaged = bytearray(stream.data)
    damage = draw(st.sampled_from(["cut", "overwrite", "insert", "delete"]))
    if damage == "cut":
        del damaged[at:end]
    elif damage == "overwrite":
        junk = draw(st.binary(min_size=1, max_size=min(64, end - at)))
        damaged[at : at + len(junk)] = junk
    elif damage == "insert":
        damaged[at:at] = draw(st.binary(min_size=1, max_size=64))
    else:
        del damaged[at : draw(st.integers(at + 1, min(end, at + 64)))]
    return stream, index, bytes(damaged)


def frame_rows(events: list[Event]) -> list[Frame]:
    return [(e.track_name, e.track_number, e.timecode_ms, e.pcm, e.offset) for e in events if isinstance(e, AudioFrame)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), damaged=one_fragment_damaged())
def test_a_damaged_fragment_costs_at_most_itself_and_the_next_under_any_chunking(
    data: st.DataObject, damaged: tuple[Stream, int, bytes]
) -> None:
    stream, index, damaged_data = damaged
    start, end = stream.offsets[index], fragment_end(stream, index)
    moved = len(damaged_data) - len(stream.data)
    after = end + moved  # where the next fragment starts in the damaged stream
    later = fragment_end(stream, index + 1) if index + 1 < len(stream.offsets) else end  # and the one after it
    read = frame_rows(read_chunked(damaged_data, data.draw(cuts_in(damaged_data))))
    expected = frame_rows(read_whole(stream.data))
    assert [f for f in read if f[4] < start] == [f for f in expected if f[4] < start]
    assert [(*f[:4], f[4] - moved) for f in read if f[4] >= later + moved] == [f for f in expected if f[4] >= later]
    # Sizes are trusted, so the damage may show only after the next document's first bytes are read: one block
    # whose size ran over them (its fragment was cut short inside it) may hold them. Any other frame of the
    # damaged fragment stops short of the next document's magic, or ends in its first bytes, which no reader
    # can tell from chance before the bytes after them arrive.
    assert len([f for f in read if start <= f[4] <= after and f[4] + len(f[3]) >= after + 4]) <= 1


tag_values = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=6)


@common
@given(data=st.data(), written=st.lists(st.lists(tag_values, min_size=3, max_size=3), min_size=2, max_size=5))
def test_tags_read_as_written_when_only_their_values_change(data: st.DataObject, written: list[list[str]]) -> None:
    names = ["AWS_KINESISVIDEO_FRAGMENT_NUMBER", "AWS_KINESISVIDEO_SERVER_TIMESTAMP", "ContactId"]
    tags = [dict(zip(names, values, strict=True)) for values in written]
    stream = b"".join(Fragment([], producer_tags={}, trailing_tags=values).encode() for values in tags)
    events = read_chunked(stream, data.draw(cuts_in(stream)))
    assert [e.tags for e in events if isinstance(e, Tags) and e.tags] == tags


track_numbers = st.sampled_from([1, 2, 126, 127, 200, 16383, 16384, 1 << 20])


@st.composite
def fragments(draw: st.DrawFn) -> Fragment:
    numbers = draw(st.lists(track_numbers, min_size=2, max_size=2, unique=True))
    tracks = [Track(n, t.name, t.uid) for n, t in zip(numbers, CONNECT_TRACKS, strict=True)]
    blocks = []
    for _ in range(draw(st.integers(1, 6))):
        lacing = draw(st.sampled_from(LACINGS))
        count = 1 if lacing == "none" else draw(st.integers(1, 5))
        if lacing == "fixed":
            size = draw(st.integers(0, 300)) * 2
            frames = tuple(draw(st.binary(min_size=size, max_size=size)) for _ in range(count))
        else:
            frames = tuple(draw(st.binary(max_size=700)) for _ in range(count))
        blocks.append(
            Block(
                draw(st.sampled_from(numbers)),
                draw(st.integers(-32768, 32767)),
                frames,
                lacing,
                group=draw(st.booleans()),
                track_vint_length=draw(st.sampled_from([None, 8])),
            )
        )
    return Fragment(
        blocks,
        cluster_timecode=draw(st.integers(0, 1 << 40)),
        tracks=tracks,
        unknown_segment=draw(st.booleans()),
        unknown_cluster=draw(st.booleans()),
        noise=draw(st.booleans()),
        crc=draw(st.booleans()),
    )


@common
@given(written=st.lists(fragments(), min_size=1, max_size=3))
def test_the_reader_returns_exactly_the_frames_written(written: list[Fragment]) -> None:
    events = read_whole(b"".join(f.encode() for f in written))
    expected = [
        (next(t.name for t in f.tracks if t.number == b.track), frame)
        for f in written
        for b in f.blocks
        for frame in b.frames
    ]
    assert not [e for e in events if isinstance(e, MalformedInput)]
    assert [(e.track_name, e.pcm) for e in events if isinstance(e, AudioFrame)] == expected
