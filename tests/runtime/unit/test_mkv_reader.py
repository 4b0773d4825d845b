"""The incremental Matroska reader and ``mkv dump``, on Connect-shaped GetMedia payloads."""

from __future__ import annotations

import dataclasses
import io
import json
import struct
import time
from pathlib import Path

import pytest

from tests.fixtures.mkv import (
    AGENT,
    BLOCK_GROUP,
    CLUSTER,
    CONNECT_TRACKS,
    CUSTOMER,
    SEGMENT,
    SIMPLE_BLOCK,
    TIMECODE,
    TRACK_ENTRY,
    TRACK_NUMBER,
    TRACKS,
    Block,
    Fragment,
    Lacing,
    Stream,
    Track,
    connect_stream,
    ebml_header,
    element,
    master,
    pcm_frame,
    size_vint,
    tags,
    text,
    uint,
)
from voicebridge.kvs.mkv import (
    EBML_MAGIC,
    MAX_ELEMENT_SIZE,
    AudioFrame,
    ClusterStart,
    DocumentStart,
    Event,
    MalformedInput,
    MatroskaError,
    MatroskaReader,
    Tags,
    TrackInfo,
    TracksChanged,
)
from voicebridge_dev.cli import main
from voicebridge_dev.mkv_dump import DAMAGED, DumpError, MalformedStreamError, TrackNotFoundError, dump


def read(data: bytes, chunk: int | None = None) -> list[Event]:
    reader = MatroskaReader()
    step = chunk or max(1, len(data))
    events: list[Event] = []
    for at in range(0, len(data), step):
        events.extend(reader.feed(data[at : at + step]))
    events.extend(reader.close())
    return events


def frames(events: list[Event], name: str | None = None) -> list[AudioFrame]:
    return [e for e in events if isinstance(e, AudioFrame) and (name is None or e.track_name == name)]


def pcm(events: list[Event], name: str) -> bytes:
    return b"".join(f.pcm for f in frames(events, name))


def problems(events: list[Event]) -> list[MalformedInput]:
    return [e for e in events if isinstance(e, MalformedInput)]


def one_fragment(blocks: list[Block], timecode_scale: int = 1_000_000) -> bytes:
    return Fragment(blocks, cluster_timecode=5000, timecode_scale=timecode_scale).encode()


def last_frame_of_first_fragment(stream: Stream) -> AudioFrame:
    return [f for f in frames(read(stream.data)) if f.offset < stream.offsets[1]][-1]


def frames_from(events: list[Event], start: int, moved_by: int = 0) -> list[tuple[str, int, bytes, int]]:
    """The frames at ``start`` or later, at the offsets they had before the stream was cut ``moved_by`` bytes."""
    return [(f.track_name, f.timecode_ms, f.pcm, f.offset + moved_by) for f in frames(events) if f.offset >= start]


# Documents and tracks


def test_each_fragment_starts_a_document_at_its_ebml_header_offset() -> None:
    stream = connect_stream(3)
    starts = [e.offset for e in read(stream.data) if isinstance(e, DocumentStart)]
    assert starts == stream.offsets


def test_tracks_map_numbers_to_names_codec_and_audio_format() -> None:
    changes = [e for e in read(connect_stream(1).data) if isinstance(e, TracksChanged)]
    assert changes == [
        TracksChanged(
            {
                1: TrackInfo(1, CUSTOMER, "A_AAC", 1, 8000.0, 1, 16),
                2: TrackInfo(2, AGENT, "A_AAC", 2, 8000.0, 1, 16),
            }
        )
    ]


def test_identical_tracks_in_later_fragments_change_nothing() -> None:
    changes = [e for e in read(connect_stream(4).data) if isinstance(e, TracksChanged)]
    assert len(changes) == 1


def test_renumbered_tracks_are_mapped_by_name_in_every_fragment() -> None:
    stream = connect_stream(3, renumber=True)
    events = read(stream.data)
    numbers = [sorted(e.tracks) for e in events if isinstance(e, TracksChanged)]
    assert numbers == [[1, 2], [7, 200], [3, 16389]]
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)
    assert pcm(events, AGENT) == stream.pcm(AGENT)


def test_a_track_without_audio_settings_gets_matroska_defaults() -> None:
    entry = master(TRACK_ENTRY, [uint(TRACK_NUMBER, 1), uint(0x73C5, 9), text(0x536E, CUSTOMER)])
    document = ebml_header() + element(SEGMENT, master(TRACKS, [entry]), unknown=True)
    (change,) = [e for e in read(document) if isinstance(e, TracksChanged)]
    assert change.tracks[1] == TrackInfo(1, CUSTOMER, "", 9, 8000.0, 1, None)


# Tags and timecodes


def test_producer_tags_and_getmedia_tags_are_separate_events_at_their_offsets() -> None:
    stream = connect_stream(1)
    data = stream.data
    events = [e for e in read(data) if isinstance(e, Tags)]
    assert [e.tags for e in events] == [stream.fragments[0].producer_tags, stream.fragments[0].trailing_tags]
    for event in events:
        assert data[event.offset : event.offset + 4] == b"\x12\x54\xc3\x67"


def test_tags_that_differ_from_an_earlier_fragments_only_in_their_values_are_read_with_their_own() -> None:
    names = ["AWS_KINESISVIDEO_FRAGMENT_NUMBER", "AWS_KINESISVIDEO_MILLIS_BEHIND_NOW", "ContactId"]
    written = [
        dict(zip(names, values, strict=True)) for values in [("1", "120", "a"), ("2", "95", "b"), ("3", "96", "")]
    ]
    data = b"".join(Fragment([], producer_tags={}, trailing_tags=values).encode() for values in written)
    assert [e.tags for e in read(data) if isinstance(e, Tags) and e.tags] == written


def test_getmedia_error_tags_arrive_as_tags() -> None:
    error = {"AWS_KINESISVIDEO_ERROR_CODE": "4000", "AWS_KINESISVIDEO_ERROR_ID": "7"}
    document = ebml_header() + element(SEGMENT, tags(error), unknown=True)
    assert [e.tags for e in read(document) if isinstance(e, Tags)] == [error]


def test_nested_simple_tags_are_flattened() -> None:
    inner = master(0x67C8, [text(0x45A3, "inner"), text(0x4487, "b")])
    outer = master(0x67C8, [text(0x45A3, "outer"), text(0x4487, "a"), inner])
    document = ebml_header() + element(SEGMENT, master(0x1254C367, [master(0x7373, [outer])]), unknown=True)
    assert [e.tags for e in read(document) if isinstance(e, Tags)] == [{"inner": "b", "outer": "a"}]


def test_cluster_start_reports_the_cluster_timecode_in_ms() -> None:
    stream = connect_stream(2)
    starts = [e.timecode_ms for e in read(stream.data) if isinstance(e, ClusterStart)]
    assert starts == [f.cluster_timecode for f in stream.fragments]


def test_frame_timecode_is_cluster_timecode_plus_block_timecode() -> None:
    blocks = [Block(1, 64, (b"\x01\x00" * 8,)), Block(2, -20, (b"\x02\x00" * 8,))]
    timecodes = [f.timecode_ms for f in frames(read(one_fragment(blocks)))]
    assert timecodes == [5064, 4980]


def test_timecode_scale_converts_ticks_to_ms() -> None:
    blocks = [Block(1, 640, (b"\x01\x00" * 8,))]
    events = read(one_fragment(blocks, timecode_scale=100_000))
    assert [e.timecode_ms for e in events if isinstance(e, ClusterStart)] == [500]
    assert [f.timecode_ms for f in frames(events)] == [564]


def test_frames_carry_the_block_payload_unchanged_at_its_offset() -> None:
    stream = connect_stream(2)
    found = frames(read(stream.data))
    assert len(found) == 16
    for frame in found:
        assert stream.data[frame.offset : frame.offset + len(frame.pcm)] == frame.pcm
    assert pcm(read(stream.data), CUSTOMER) == stream.pcm(CUSTOMER)


def test_frames_are_frozen_values() -> None:
    frame = frames(read(connect_stream(1).data))[0]
    assert frame == dataclasses.replace(frame)
    assert frame.pcm == connect_stream(1).fragments[0].blocks[0].frames[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        frame.pcm = b""  # type: ignore[misc]


def test_events_follow_the_stream_order() -> None:
    kinds = [type(e).__name__ for e in read(connect_stream(1, blocks_per_track=1).data)]
    assert kinds == [
        "DocumentStart",
        "TracksChanged",
        "Tags",
        "ClusterStart",
        "AudioFrame",
        "AudioFrame",
        "Tags",
    ]


# Variants a robust reader accepts


def test_unknown_size_cluster_ends_when_the_getmedia_tags_arrive() -> None:
    stream = connect_stream(2)
    events = read(stream.data)
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("Tags", kinds.index("AudioFrame")) < kinds.index("DocumentStart", 1)
    assert not problems(events)


def test_known_sizes_read_like_unknown_sizes() -> None:
    known = read(connect_stream(2, unknown_sizes=False).data)
    unknown = read(connect_stream(2).data)
    assert not problems(known)
    assert [(f.track_name, f.timecode_ms, f.pcm) for f in frames(known)] == [
        (f.track_name, f.timecode_ms, f.pcm) for f in frames(unknown)
    ]
    assert [e.tags for e in known if isinstance(e, Tags)] == [e.tags for e in unknown if isinstance(e, Tags)]


def test_block_groups_yield_their_blocks() -> None:
    stream = connect_stream(2, group=True)
    events = read(stream.data)
    assert not problems(events)
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)
    assert pcm(events, AGENT) == stream.pcm(AGENT)


@pytest.mark.parametrize("lacing", ["xiph", "ebml", "fixed"])
def test_laced_blocks_yield_each_frame(lacing: Lacing) -> None:
    stream = connect_stream(2, lacing=lacing)
    events = read(stream.data)
    expected = [f for fragment in stream.fragments for b in fragment.blocks if b.track == 1 for f in b.frames]
    assert [f.pcm for f in frames(events, CUSTOMER)] == expected
    assert not problems(events)


def test_laced_frames_are_timed_by_the_pcm_before_them() -> None:
    block = Block(1, 0, (b"\x00" * 160, b"\x00" * 320, b"\x00" * 16), "ebml")
    assert [f.timecode_ms for f in frames(read(one_fragment([block])))] == [5000, 5010, 5030]


def test_void_and_crc32_elements_are_ignored_everywhere() -> None:
    noisy = connect_stream(2, noise=True, crc=True)
    events = read(noisy.data)
    assert not problems(events)
    assert pcm(events, CUSTOMER) == noisy.pcm(CUSTOMER)
    assert [e.tags for e in events if isinstance(e, Tags)] == [
        t for f in noisy.fragments for t in (f.producer_tags, f.trailing_tags)
    ]


def test_void_between_documents_is_ignored() -> None:
    stream = connect_stream(2)
    data = stream.data[: stream.offsets[1]] + element(0xEC, b"\x00" * 5) + stream.data[stream.offsets[1] :]
    events = read(data)
    assert not problems(events)
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)


def test_multi_byte_track_number_vints_are_read() -> None:
    stream = connect_stream(2, track_vint_length=4)
    assert pcm(read(stream.data), AGENT) == stream.pcm(AGENT)


def test_overlong_size_vints_are_read() -> None:
    frame = pcm_frame(1, 64)
    block = element(SIMPLE_BLOCK, b"\x81" + struct.pack(">hB", 0, 0x80) + frame, size_length=8)
    cluster = element(CLUSTER, element(TIMECODE, b"\x00\x10", size_length=3) + block, size_length=5)
    tracks = master(TRACKS, [master(TRACK_ENTRY, [uint(TRACK_NUMBER, 1), text(0x536E, CUSTOMER)])])
    document = ebml_header() + element(SEGMENT, tracks + cluster, size_length=8)
    events = read(document)
    assert not problems(events)
    assert [(f.timecode_ms, f.pcm) for f in frames(events)] == [(16, frame)]


# Latency and memory


def test_a_frame_is_yielded_as_soon_as_its_last_byte_arrives() -> None:
    stream = connect_stream(1)
    first = frames(read(stream.data))[0]
    block_end = first.offset + len(first.pcm)
    reader = MatroskaReader()
    before = list(reader.feed(stream.data[: block_end - 1]))
    assert not frames(before)
    assert list(reader.feed(stream.data[block_end - 1 : block_end])) == [first]


def test_tags_are_yielded_as_soon_as_the_tags_element_ends() -> None:
    stream = connect_stream(1)
    reader = MatroskaReader()
    events = list(reader.feed(stream.data))
    assert isinstance(events[-1], Tags)
    assert events[-1].tags == stream.fragments[0].trailing_tags


def test_the_last_fragment_needs_no_close_and_close_adds_nothing() -> None:
    stream = connect_stream(2)
    reader = MatroskaReader()
    events = list(reader.feed(stream.data))
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)
    assert list(reader.close()) == []


def test_memory_stays_bounded_by_one_element_whatever_the_chunking() -> None:
    stream = connect_stream(2)
    for step in (1, 7, 1500, 64 * 1024):
        reader = MatroskaReader()
        peak = 0
        for at in range(0, len(stream.data), step):
            for _ in reader.feed(stream.data[at : at + step]):
                pass
            peak = max(peak, reader.buffered_bytes)
        assert peak <= 1024 + 4


def test_polling_buffered_bytes_after_every_feed_costs_the_same_however_much_is_collected() -> None:
    # A 1 MiB block 16 bytes a feed, polled each time: 65 536 polls, which summing the parts made quadratic.
    big = pcm_frame(9, 1 << 20)
    data = one_fragment([Block(1, 0, (big,))])
    reader = MatroskaReader()
    started = time.process_time()
    for at in range(0, len(data), 16):
        list(reader.feed(data[at : at + 16]))
        assert reader.buffered_bytes <= len(big) + 4
        assert time.process_time() - started < 20
    assert frames([*reader.close()]) == []


def test_bytearray_and_memoryview_chunks_are_accepted() -> None:
    stream = connect_stream(1)
    reader = MatroskaReader()
    half = len(stream.data) // 2
    events = [*reader.feed(bytearray(stream.data[:half])), *reader.feed(memoryview(stream.data)[half:])]
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)


# Malformed input


def test_a_truncated_block_is_reported_at_close() -> None:
    stream = connect_stream(1)
    last = frames(read(stream.data))[-1]
    reader = MatroskaReader()
    list(reader.feed(stream.data[: last.offset + 10]))
    (problem,) = reader.close()
    assert isinstance(problem, MalformedInput)
    assert stream.data[problem.offset] == SIMPLE_BLOCK
    assert "ends inside SimpleBlock" in problem.reason


def test_a_truncated_known_size_master_is_reported_at_close() -> None:
    data = connect_stream(1, unknown_sizes=False).data
    (problem,) = problems(read(data[:-3]))
    assert problem.offset == len(ebml_header())
    assert "Segment" in problem.reason


def test_garbage_between_fragments_is_reported_and_skipped() -> None:
    stream = connect_stream(3)
    cut = stream.offsets[1]
    data = stream.data[:cut] + b"\x00garbage\xff" + stream.data[cut:]
    events = read(data)
    assert [p.offset for p in problems(events)] == [cut]
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)


def test_an_invalid_vint_resynchronises_at_the_next_fragment() -> None:
    stream = connect_stream(3)
    first_block = frames(read(stream.data))[0].offset - 7
    data = bytearray(stream.data)
    data[first_block + 1] = 0x00
    events = read(bytes(data))
    (problem,) = problems(events)
    assert problem.offset == first_block
    assert "size" in problem.reason
    assert len(frames(events)) == 16
    assert frames(events)[0].offset > stream.offsets[1]


def test_an_element_larger_than_the_limit_is_malformed() -> None:
    head = ebml_header() + element(SEGMENT, b"", unknown=True)
    oversized = b"\xec" + size_vint(MAX_ELEMENT_SIZE + 1)
    stream = connect_stream(1)
    events = read(head + oversized + stream.data)
    (problem,) = problems(events)
    assert problem.offset == len(head)
    assert "exceeds the size limit" in problem.reason
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)


def test_a_block_for_an_unknown_track_is_malformed() -> None:
    stream = connect_stream(2)
    data = bytearray(stream.data)
    data[frames(read(stream.data))[0].offset - 4] = 0x85
    events = read(bytes(data))
    (problem,) = problems(events)
    assert problem.reason == "block for unknown track 5"
    assert len(frames(events)) == 8


def test_a_corrupt_fragment_does_not_end_the_stream() -> None:
    stream = connect_stream(4)
    data = bytearray(stream.data)
    middle = (stream.offsets[1] + stream.offsets[2]) // 2
    data[middle : middle + 40] = bytes(range(200, 240))
    events = read(bytes(data))
    assert problems(events)
    assert stream.offsets[3] in [e.offset for e in events if isinstance(e, DocumentStart)]
    assert len([f for f in frames(events) if f.offset > stream.offsets[3]]) == 8


def test_an_oversized_element_is_searched_for_the_next_document() -> None:
    stream = connect_stream(3)
    last = [f for f in frames(read(stream.data)) if f.offset < stream.offsets[1]][-1]
    cluster_end = last.offset + len(last.pcm)
    garbage = b"\xba" + size_vint(3_000_000) + b"\x00" * 100
    events = read(stream.data[:cluster_end] + garbage + stream.data[stream.offsets[1] :], 4096)
    (problem,) = problems(events)
    assert problem == MalformedInput(cluster_end, "element 0xba runs into an EBML header")
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)


def test_an_element_overrunning_its_parent_is_malformed() -> None:
    entry = element(TRACK_ENTRY, uint(TRACK_NUMBER, 1) + b"\xd7\x85\x01")
    document = ebml_header() + element(SEGMENT, master(TRACKS, [entry]), unknown=True)
    (problem,) = problems(read(document))
    assert "overruns its parent" in problem.reason


def test_a_misplaced_element_is_malformed() -> None:
    document = ebml_header() + element(SEGMENT, master(TRACKS, [uint(TIMECODE, 1)]), unknown=True)
    (problem,) = problems(read(document))
    assert problem.reason == "element 0xe7 cannot appear inside Tracks"


def test_a_new_document_inside_a_known_size_segment_reports_the_short_one() -> None:
    cut_short = connect_stream(1, unknown_sizes=False)
    trailing = tags(cut_short.fragments[0].trailing_tags or {})
    stream = connect_stream(1)
    events = read(cut_short.data[: -len(trailing)] + stream.data)
    (problem,) = problems(events)
    assert problem.offset == len(ebml_header())
    assert problem.reason == "document ends inside Segment"
    assert pcm(events, CUSTOMER) == cut_short.pcm(CUSTOMER) + stream.pcm(CUSTOMER)


@pytest.mark.parametrize("step", [1, 100, 1 << 20])
def test_a_large_block_cut_short_by_the_next_document_loses_only_that_block(step: int) -> None:
    big = pcm_frame(7, 40_000)
    cut_short = Fragment([Block(1, 0, (pcm_frame(6, 64),)), Block(1, 8, (big,))]).encode()[:-30_000]
    stream = connect_stream(1)
    events = read(cut_short + stream.data, step)
    (problem,) = problems(events)
    assert cut_short[problem.offset] == SIMPLE_BLOCK
    assert problem.reason == "SimpleBlock runs into an EBML header"
    assert [e.offset for e in events if isinstance(e, DocumentStart)] == [0, len(cut_short)]
    assert pcm(events, CUSTOMER) == pcm_frame(6, 64) + stream.pcm(CUSTOMER)


@pytest.mark.parametrize("step", [1, 100, 1 << 20])
def test_a_small_block_cut_short_by_the_next_document_costs_only_its_own_fragment(step: int) -> None:
    stream = connect_stream(3)
    last = last_frame_of_first_fragment(stream)
    cut = last.offset + 100
    events = read(stream.data[:cut] + stream.data[stream.offsets[1] :], step)
    (problem,) = problems(events)
    assert problem == MalformedInput(last.offset - 7, "SimpleBlock runs into an EBML header")
    assert frames_from(events, cut, stream.offsets[1] - cut) == frames_from(read(stream.data), stream.offsets[1])


def test_a_block_that_runs_over_the_next_documents_header_is_read_by_its_size() -> None:
    # Sizes are trusted: the frame is out before any byte can tell that its fragment was cut short inside it.
    stream = connect_stream(3)
    last = last_frame_of_first_fragment(stream)
    cut = last.offset + 100
    data = stream.data[:cut] + stream.data[stream.offsets[1] :]
    events = read(data)
    (over,) = [f for f in frames(events) if f.offset <= cut < f.offset + len(f.pcm)]
    assert over.pcm == data[over.offset : over.offset + len(last.pcm)]
    assert over.pcm[cut - over.offset :].startswith(EBML_MAGIC)
    assert DocumentStart(cut) in events


@pytest.mark.parametrize("step", [1, 1000, 1 << 20])
def test_a_skipped_element_cut_short_by_the_next_document_costs_only_its_own_fragment(step: int) -> None:
    stream = connect_stream(3)
    last = last_frame_of_first_fragment(stream)
    cluster_end = last.offset + len(last.pcm)
    cut_short = element(0xEC, b"\x00" * 2000)[:20]
    events = read(stream.data[:cluster_end] + cut_short + stream.data[stream.offsets[1] :], step)
    (problem,) = problems(events)
    assert problem == MalformedInput(cluster_end, "element 0xec runs into an EBML header")
    assert pcm(events, CUSTOMER) == stream.pcm(CUSTOMER)
    assert pcm(events, AGENT) == stream.pcm(AGENT)


def test_an_ebml_header_that_begins_inside_a_block_header_is_found() -> None:
    stream = connect_stream(3)
    block = last_frame_of_first_fragment(stream).offset - 7
    # Cut two bytes into the block: its ID and the first byte of its size, which the magic then completes.
    cut = block + 2
    events = read(stream.data[:cut] + stream.data[stream.offsets[1] :])
    assert problems(events) == [MalformedInput(block, "SimpleBlock runs into an EBML header")]
    assert frames_from(events, cut, stream.offsets[1] - cut) == frames_from(read(stream.data), stream.offsets[1])


@pytest.mark.parametrize("into", [1, 2, 3])
@pytest.mark.parametrize("step", [1, 5, 1 << 20])
def test_a_block_that_ends_inside_the_next_documents_magic_costs_only_its_own_fragment(into: int, step: int) -> None:
    stream = connect_stream(3)
    last = last_frame_of_first_fragment(stream)
    # The block's size runs ``into`` bytes into the magic: its frame cannot wait for the bytes that finish it.
    cut = last.offset + len(last.pcm) - into
    events = read(stream.data[:cut] + stream.data[stream.offsets[1] :], step)
    assert problems(events) == [MalformedInput(cut, "EBML header begins inside the element before it")]
    (straddling,) = [f for f in frames(events) if f.offset < cut < f.offset + len(f.pcm)]
    assert straddling.pcm.endswith(EBML_MAGIC[:into])
    assert frames_from(events, cut, stream.offsets[1] - cut) == frames_from(read(stream.data), stream.offsets[1])


@pytest.mark.parametrize("step", [1, 3, 1 << 20])
def test_a_frame_that_ends_in_the_ebml_magic_by_chance_is_audio(step: int) -> None:
    frame = b"\x01\x00" * 6 + EBML_MAGIC
    document = one_fragment([Block(1, 0, (frame,))])
    # Told from a header by the bytes after it, or at the end of input by there being none.
    for data in (document + connect_stream(1).data, document):
        events = read(data, step)
        assert not problems(events)
        assert frames(events)[0].pcm == frame


def test_malformed_input_converts_to_a_matroska_error_with_its_offset() -> None:
    error = MalformedInput(42, "bad").error()
    assert isinstance(error, MatroskaError)
    assert (error.offset, error.reason, str(error)) == (42, "bad", "offset 42: bad")


def test_feeding_a_closed_reader_raises() -> None:
    reader = MatroskaReader()
    list(reader.close())
    with pytest.raises(MatroskaError):
        reader.feed(b"\x1a")


def test_track_entry_without_a_number_is_malformed() -> None:
    entry = master(TRACK_ENTRY, [text(0x536E, CUSTOMER)])
    document = ebml_header() + element(SEGMENT, master(TRACKS, [entry]), unknown=True)
    (problem,) = problems(read(document))
    assert problem.reason == "TrackEntry without a TrackNumber"


def test_block_group_outside_a_cluster_is_malformed() -> None:
    group = master(BLOCK_GROUP, [element(0xA1, b"\x81\x00\x00\x00")])
    document = ebml_header() + element(SEGMENT, group, unknown=True)
    (problem,) = problems(read(document))
    assert "BlockGroup cannot appear inside Segment" in problem.reason


# mkv dump


def no_damage(problem: MalformedStreamError) -> None:
    pytest.fail(f"a well-formed stream reported as damaged: {problem}")


def damaged_twice(stream: Stream) -> tuple[bytes, list[int]]:
    """The stream with garbage before its second and its third fragment, and the offsets of the garbage."""
    garbage = b"\x00garbage\xff"
    first, second = stream.offsets[1], stream.offsets[2]
    data = stream.data[:first] + garbage + stream.data[first:second] + garbage + stream.data[second:]
    return data, [first, second + len(garbage)]


def test_dump_writes_the_named_tracks_pcm() -> None:
    stream = connect_stream(3, renumber=True)
    out = io.BytesIO()
    assert dump(io.BytesIO(stream.data), out, AGENT, None, no_damage) == 0
    assert out.getvalue() == stream.pcm(AGENT)


def test_dump_writes_one_json_line_of_tags_per_fragment() -> None:
    stream = connect_stream(2)
    tags_out = io.StringIO()
    dump(io.BytesIO(stream.data), io.BytesIO(), CUSTOMER, tags_out, no_damage)
    lines = [json.loads(line) for line in tags_out.getvalue().splitlines()]
    assert lines == [{**f.producer_tags, **(f.trailing_tags or {})} for f in stream.fragments]


def test_dump_writes_every_frame_it_recovers_from_a_damaged_stream_and_returns_2() -> None:
    stream = connect_stream(4)
    data, _ = damaged_twice(stream)
    out = io.BytesIO()
    assert dump(io.BytesIO(data), out, CUSTOMER, None, lambda _: None) == DAMAGED == 2
    assert out.getvalue() == stream.pcm(CUSTOMER)


def test_dump_names_each_damaged_region_in_one_line_as_soon_as_it_is_found() -> None:
    stream = connect_stream(4)
    data, offsets = damaged_twice(stream)
    out = io.BytesIO()
    reported: list[tuple[MalformedStreamError, int]] = []
    dump(io.BytesIO(data), out, CUSTOMER, None, lambda problem: reported.append((problem, out.tell())))
    assert [str(problem) for problem, _ in reported] == [
        f"malformed Matroska at byte {offset}: invalid element ID byte 0x00" for offset in offsets
    ]
    assert [(problem.offset, isinstance(problem, DumpError)) for problem, _ in reported] == [(o, True) for o in offsets]
    # Each region is named once the fragments before it are written, before those after it are read.
    fragment_pcm = [len(b"".join(b.frames[0] for b in f.blocks if b.track == 1)) for f in stream.fragments]
    assert [written for _, written in reported] == [fragment_pcm[0], fragment_pcm[0] + fragment_pcm[1]]


def test_dump_writes_the_tags_of_the_fragments_around_a_damaged_one() -> None:
    stream = connect_stream(3)
    last = last_frame_of_first_fragment(stream)
    data = stream.data[: last.offset + 100] + stream.data[stream.offsets[1] :]
    tags_out = io.StringIO()
    dump(io.BytesIO(data), io.BytesIO(), CUSTOMER, tags_out, lambda _: None)
    lines = [json.loads(line) for line in tags_out.getvalue().splitlines()]
    assert lines == [stream.fragments[0].producer_tags] + [
        {**f.producer_tags, **(f.trailing_tags or {})} for f in stream.fragments[1:]
    ]


def test_dump_of_a_stream_with_no_tracks_left_reports_only_the_damage() -> None:
    source = io.BytesIO(b"\x1aE\xdf\xa3\xff\xff\xff not matroska" * 4)
    reported: list[MalformedStreamError] = []
    assert dump(source, io.BytesIO(), CUSTOMER, None, reported.append) == DAMAGED
    assert [problem.offset for problem in reported] == [0]


def test_dump_reports_a_missing_track_with_the_names_present() -> None:
    with pytest.raises(TrackNotFoundError, match="AUDIO_FROM_CUSTOMER"):
        dump(io.BytesIO(connect_stream(1).data), io.BytesIO(), "Track_audio/L16", None, no_damage)


def test_dump_reads_the_legacy_customer_track_name() -> None:
    legacy = (Track(1, "Track_audio/L16", 1), CONNECT_TRACKS[1])
    frame = pcm_frame(3, 1024)
    data = Fragment([Block(1, 0, (frame,))], tracks=legacy).encode()
    out = io.BytesIO()
    dump(io.BytesIO(data), out, "Track_audio/L16", None, no_damage)
    assert out.getvalue() == frame


def test_the_dump_command_writes_what_it_recovers_names_each_damaged_region_and_exits_2(
    tmp_path: Path, capfdbinary: pytest.CaptureFixture[bytes]
) -> None:
    stream = connect_stream(4)
    data, offsets = damaged_twice(stream)
    path = tmp_path / "damaged.mkv"
    path.write_bytes(data)
    assert main(["mkv", "dump", str(path), "--track", CUSTOMER, "--tags", str(tmp_path / "tags.jsonl")]) == 2
    captured = capfdbinary.readouterr()
    assert captured.out == stream.pcm(CUSTOMER)
    assert captured.err.decode().splitlines() == [
        f"voicebridge mkv dump: malformed Matroska at byte {offset}: invalid element ID byte 0x00" for offset in offsets
    ]
    assert len((tmp_path / "tags.jsonl").read_text().splitlines()) == 4
