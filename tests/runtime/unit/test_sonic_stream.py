"""Sonic's newline-delimited JSON stream, decoded whatever the PayloadPart boundaries."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.sonic.stream import (
    Chunk,
    Done,
    SonicStreamDecoder,
    SonicStreamError,
    StreamError,
    Timestamps,
)


def _line(obj: dict[str, object]) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _chunk(audio: bytes) -> bytes:
    return _line(
        {
            "type": "chunk",
            "context_id": "c1",
            "status_code": 206,
            "done": False,
            "data": base64.b64encode(audio).decode(),
            "step_time": 12.5,
        }
    )


RECORDED = b"".join(
    [_chunk(bytes([i]) * 320) for i in range(1, 40)]
    + [_line({"type": "timestamps", "context_id": "c1", "word_timestamps": {"words": ["hi"], "start": [0.0]}})]
    + [_line({"type": "done", "context_id": "c1", "status_code": 200, "done": True})]
)


def _audio(events: Sequence[object]) -> bytes:
    return b"".join(e.audio for e in events if isinstance(e, Chunk))


def _decode_in_parts(data: bytes, cuts: list[int]) -> list[object]:
    decoder = SonicStreamDecoder()
    events: list[object] = []
    bounds = [0, *sorted(set(cuts)), len(data)]
    for start, end in itertools.pairwise(bounds):
        events.extend(decoder.feed(data[start:end]))
    events.extend(decoder.close())
    return events


def test_whole_stream_yields_every_chunk_then_done() -> None:
    events = _decode_in_parts(RECORDED, [])
    assert [type(e) for e in events[-2:]] == [Timestamps, Done]
    assert _audio(events) == b"".join(bytes([i]) * 320 for i in range(1, 40))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(RECORDED)), max_size=60))
def test_any_split_of_the_stream_yields_the_same_events(cuts: list[int]) -> None:
    assert _decode_in_parts(RECORDED, cuts) == _decode_in_parts(RECORDED, [])


def test_single_byte_parts_yield_the_same_audio() -> None:
    assert _audio(_decode_in_parts(RECORDED, list(range(len(RECORDED))))) == _audio(_decode_in_parts(RECORDED, []))


def test_several_objects_in_one_part_are_all_yielded() -> None:
    decoder = SonicStreamDecoder()
    events = list(decoder.feed(_chunk(b"\x01\x02") + _chunk(b"\x03\x04")))
    assert _audio(events) == b"\x01\x02\x03\x04"


def test_an_event_is_yielded_as_soon_as_its_newline_arrives() -> None:
    decoder = SonicStreamDecoder()
    line = _chunk(b"\x05\x06")
    assert list(decoder.feed(line[:-1])) == []
    assert _audio(list(decoder.feed(b"\n"))) == b"\x05\x06"


def test_a_final_object_without_newline_counts_at_close() -> None:
    decoder = SonicStreamDecoder()
    assert list(decoder.feed(b'{"type":"done","done":true}')) == []
    assert list(decoder.close()) == [Done(None)]


def test_error_event_carries_the_models_reason_and_status() -> None:
    events = _decode_in_parts(_line({"type": "error", "status_code": 422, "error": "transcript is empty"}), [])
    assert events == [StreamError("transcript is empty", 422)]


@pytest.mark.parametrize(
    "payload",
    [
        b"not json\n",
        b"[1,2]\n",
        b'{"type":"chunk","data":"***"}\n',
        b'{"type":"chunk"}\n',
        b'{"type":"mystery"}\n',
    ],
)
def test_malformed_lines_raise_a_typed_error(payload: bytes) -> None:
    with pytest.raises(SonicStreamError):
        _decode_in_parts(payload, [])


def test_a_line_that_never_ends_is_refused_before_it_exhausts_memory() -> None:
    decoder = SonicStreamDecoder()
    with pytest.raises(SonicStreamError):
        for _ in range(20):
            list(decoder.feed(b"x" * 100_000))
