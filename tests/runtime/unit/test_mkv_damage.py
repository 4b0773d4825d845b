"""The Matroska reader trusts element sizes and scans for the next EBML header only once damage shows.

Each kind of damage it can see (an invalid ID, an invalid size VINT, a block for an unknown track or with
reserved flag bits set, a child whose size overruns its parent) costs at most the fragment it is in: every
frame of the fragments after it is delivered, whatever the chunking. Well-formed input never makes it scan.
"""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures.mkv import Stream, connect_stream, ebml_header
from voicebridge.kvs.mkv import EBML_MAGIC, AudioFrame, DocumentStart, Event, MalformedInput, MatroskaReader, Tags

Frame = tuple[str, int, int, bytes, int]

DAMAGEABLE = {
    "connect": {},
    "known-sizes": {"unknown_sizes": False},
    "block-groups": {"group": True},
    "void-crc": {"noise": True, "crc": True},
}
KINDS = ("invalid-id", "invalid-size", "unknown-track", "reserved-flags", "overrun")
# A child can overrun only a parent of known size: the Cluster of known size, or a BlockGroup (Block inside).
OVERRUNNABLE = ("known-sizes", "block-groups")
CASES = [(name, kind) for name in DAMAGEABLE for kind in KINDS if kind != "overrun" or name in OVERRUNNABLE]


@cache
def damageable(name: str) -> Stream:
    return connect_stream(4, blocks_per_track=2, **DAMAGEABLE[name])  # type: ignore[arg-type]


def read(data: bytes, cuts: list[int] | None = None) -> tuple[list[Event], MatroskaReader]:
    reader = MatroskaReader()
    events: list[Event] = []
    previous = 0
    for cut in [*sorted(set(cuts or [])), len(data)]:
        events.extend(reader.feed(data[previous:cut]))
        previous = cut
    events.extend(reader.close())
    return events, reader


def chunked(data: bytes, step: int) -> list[int]:
    return list(range(step, len(data), step))


def rows(events: list[Event]) -> list[Frame]:
    return [(e.track_name, e.track_number, e.timecode_ms, e.pcm, e.offset) for e in events if isinstance(e, AudioFrame)]


def problems(events: list[Event]) -> list[MalformedInput]:
    return [e for e in events if isinstance(e, MalformedInput)]


def fragment_end(stream: Stream, index: int) -> int:
    return stream.offsets[index + 1] if index + 1 < len(stream.offsets) else len(stream.data)


def blocks_of(stream: Stream, index: int) -> list[int]:
    """Where the blocks of fragment ``index`` start: each fixture block is its ID, a 2-byte size, then 4 bytes of
    block header (track number, timecode, flags) before the frame."""
    start, end = stream.offsets[index], fragment_end(stream, index)
    return [f[4] - 7 for f in rows(read(stream.data)[0]) if start <= f[4] < end]


def damage(data: bytes, block: int, kind: str) -> tuple[bytes, str]:
    """``data`` with the block at ``block`` damaged as ``kind`` says, and the reason the reader gives."""
    damaged = bytearray(data)
    name = "SimpleBlock" if data[block] == 0xA3 else "Block"
    if kind == "invalid-id":
        damaged[block] = 0x00
        return bytes(damaged), "invalid element ID byte 0x00"
    if kind == "invalid-size":
        damaged[block + 1] = 0x00
        return bytes(damaged), "invalid element size"
    if kind == "unknown-track":
        damaged[block + 3] = 0x85
        return bytes(damaged), "block for unknown track 5"
    if kind == "reserved-flags":
        damaged[block + 6] |= 0x10
        return bytes(damaged), f"block with reserved flag bits set (0x{damaged[block + 6]:02x})"
    # The largest 2-byte size: more than a Cluster of this fixture or a BlockGroup holds.
    damaged[block + 1 : block + 3] = b"\x7f\xfe"
    return bytes(damaged), f"{name} overruns its parent"


def check_costs_at_most_its_fragment(stream: Stream, index: int, at: int, data: bytes, events: list[Event]) -> None:
    """Damage at ``at`` in fragment ``index`` (sizes unchanged) cost that fragment's frames from ``at`` on only."""
    start, end = stream.offsets[index], fragment_end(stream, index)
    expected = rows(read(stream.data)[0])
    read_rows = rows(events)
    assert [f for f in read_rows if not start <= f[4] < end] == [f for f in expected if not start <= f[4] < end]
    assert [f for f in read_rows if start <= f[4] < end] == [f for f in expected if start <= f[4] < at]
    # None of the damaged fragment's frames holds the next document's header: the damage showed before.
    assert all(EBML_MAGIC not in f[3] for f in read_rows if start <= f[4] < end)
    if index + 1 < len(stream.offsets):
        assert DocumentStart(end) in events
    assert data[:start] == stream.data[:start]


@pytest.mark.parametrize("step", [1, 1500, 1 << 20])
@pytest.mark.parametrize(("name", "kind"), CASES)
def test_each_kind_of_damage_costs_at_most_its_fragment(name: str, kind: str, step: int) -> None:
    stream = damageable(name)
    block = blocks_of(stream, 1)[2]
    data, reason = damage(stream.data, block, kind)
    events, reader = read(data, chunked(data, step))
    assert problems(events) == [MalformedInput(block, reason)]
    check_costs_at_most_its_fragment(stream, 1, block, data, events)
    assert reader.resynchronisations == 1


@pytest.mark.parametrize("step", [1, 1500, 1 << 20])
@pytest.mark.parametrize("which", [0, 1])
def test_an_invalid_id_on_a_fragments_tags_costs_at_most_that_fragment(which: int, step: int) -> None:
    stream = damageable("connect")
    start, end = stream.offsets[1], fragment_end(stream, 1)
    # The producer's Tags (before the Cluster) or GetMedia's (after it).
    at = [e.offset for e in read(stream.data)[0] if isinstance(e, Tags) and start <= e.offset < end][which]
    data = stream.data[:at] + b"\x00" + stream.data[at + 1 :]
    events, reader = read(data, chunked(data, step))
    assert problems(events) == [MalformedInput(at, "invalid element ID byte 0x00")]
    check_costs_at_most_its_fragment(stream, 1, at, data, events)
    assert reader.resynchronisations == 1


@st.composite
def damaged_blocks(draw: st.DrawFn) -> tuple[Stream, int, int, str]:
    """A stream, one of its fragments, one of that fragment's blocks and a kind of damage for it."""
    name, kind = draw(st.sampled_from(CASES))
    stream = damageable(name)
    index = draw(st.integers(0, len(stream.offsets) - 1))
    return stream, index, draw(st.sampled_from(blocks_of(stream, index))), kind


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), damaged=damaged_blocks())
def test_a_block_damaged_in_any_way_the_reader_sees_costs_at_most_its_fragment_under_any_chunking(
    data: st.DataObject, damaged: tuple[Stream, int, int, str]
) -> None:
    stream, index, block, kind = damaged
    damaged_data, reason = damage(stream.data, block, kind)
    events, reader = read(damaged_data, data.draw(st.lists(st.integers(0, len(damaged_data)), max_size=40)))
    assert problems(events) == [MalformedInput(block, reason)]
    check_costs_at_most_its_fragment(stream, index, block, damaged_data, events)
    assert reader.resynchronisations == 1


WELL_FORMED = {
    **DAMAGEABLE,
    "xiph": {"lacing": "xiph"},
    "ebml-lacing": {"lacing": "ebml"},
    "fixed-lacing": {"lacing": "fixed"},
    "renumbered": {"renumber": True},
    "long-track-vints": {"track_vint_length": 3},
}


@cache
def well_formed(name: str) -> bytes:
    return connect_stream(3, blocks_per_track=2, frame_bytes=96, **WELL_FORMED[name]).data  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), name=st.sampled_from(sorted(WELL_FORMED)))
def test_well_formed_input_never_makes_the_reader_scan(data: st.DataObject, name: str) -> None:
    stream = well_formed(name)
    events, reader = read(stream, data.draw(st.lists(st.integers(0, len(stream)), max_size=40)))
    assert not problems(events)
    assert reader.resynchronisations == 0


def test_each_damaged_region_is_one_scan() -> None:
    stream = damageable("connect")
    data = bytearray(stream.data)
    for index in (0, 2):
        data[blocks_of(stream, index)[1] + 3] = 0x85
    events, reader = read(bytes(data))
    assert len(problems(events)) == 2
    assert reader.resynchronisations == 2


@pytest.mark.parametrize("step", [1, 1 << 20])
def test_a_damaged_ebml_header_is_reported_once_and_reading_resumes_at_the_next(step: int) -> None:
    stream = damageable("connect")
    # Its children still look like an EBML header's, so the scan must not take it for the next one.
    header = ebml_header()
    damaged = header[:4] + b"\x01\xff\xff\xff\xff\xff\xff\xff" + header[5:]
    at = stream.offsets[1]
    data = stream.data[:at] + damaged + stream.data[at:]
    events, reader = read(data, chunked(data, step))
    assert problems(events) == [MalformedInput(at, "EBML header of unknown size")]
    assert [e.offset for e in events if isinstance(e, DocumentStart)] == [
        0,
        *(o + len(damaged) for o in stream.offsets[1:]),
    ]
    assert reader.resynchronisations == 1
