"""Sonic's newline-delimited JSON stream, decoded whatever the PayloadPart boundaries."""

from __future__ import annotations

import base64
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from voicebridge.errors import InvalidInput, RetryableModelError
from voicebridge.sonic.backends import OutputFormat, SageMakerBackend
from voicebridge.sonic.request import SpeechRequest
from voicebridge.sonic.stream import (
    Chunk,
    Done,
    SonicStreamDecoder,
    SonicStreamError,
    StreamError,
    Timestamps,
)

if TYPE_CHECKING:
    from types_boto3_sagemaker_runtime.client import SageMakerRuntimeClient


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


def test_error_event_carries_its_message_in_data_as_cartesias_notebook_reads_it() -> None:
    events = _decode_in_parts(_line({"type": "error", "data": "voice not found"}), [])
    assert events == [StreamError("voice not found", None)]


def test_error_event_carries_the_models_status_when_it_gives_one() -> None:
    events = _decode_in_parts(_line({"type": "error", "status_code": 422, "data": "transcript is empty"}), [])
    assert events == [StreamError("transcript is empty", 422)]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        ({"data": "from data", "message": "from message", "error": "from error"}, "from data"),
        ({"title": "Model error", "message": "from message"}, "from message"),
        ({"error": "legacy"}, "legacy"),
        ({"data": {"reason": "nested"}}, '{"reason": "nested"}'),
        ({"data": ""}, "model error"),
    ],
)
def test_error_event_message_prefers_data_then_the_cartesia_api_shapes(error: dict[str, object], message: str) -> None:
    assert _decode_in_parts(_line({"type": "error", **error}), []) == [StreamError(message, None)]


class _Events:
    """What botocore's EventStream yields, as a list one can close."""

    def __init__(self, parts: Sequence[bytes]) -> None:
        self._events = [{"PayloadPart": {"Bytes": part}} for part in parts]

    def __iter__(self) -> Iterator[dict[str, dict[str, bytes]]]:
        return iter(self._events)

    def close(self) -> None:
        """Nothing to release."""


class _Runtime:
    def __init__(self, parts: Sequence[bytes]) -> None:
        self._parts = parts

    def invoke_endpoint_with_response_stream(self, **_: object) -> dict[str, object]:
        return {"Body": _Events(self._parts)}


def _stream(*lines: bytes) -> list[bytes]:
    backend = SageMakerBackend("sonic", cast("SageMakerRuntimeClient", _Runtime(list(lines))))
    request = SpeechRequest("Hello", "a0e99841-438c-4a64-b679-ae501e7d6091", "en")
    return list(backend.stream(request, OutputFormat("pcm_s16le", 8000), deadline=float("inf")))


def test_an_error_lines_data_is_the_retryable_errors_message() -> None:
    with pytest.raises(RetryableModelError) as caught:
        _stream(_chunk(b"\x01\x02"), _line({"type": "error", "data": "voice not found"}))

    assert caught.value.safe_message == "model reported an error: voice not found"


def test_an_error_lines_long_data_is_cut_to_a_models_reason() -> None:
    with pytest.raises(RetryableModelError) as caught:
        _stream(_line({"type": "error", "data": "why " * 500}))

    assert caught.value.safe_message == "model reported an error: " + ("why " * 50)[:200]


def test_an_error_line_with_status_422_is_invalid_input_with_its_data() -> None:
    with pytest.raises(InvalidInput) as caught:
        _stream(_line({"type": "error", "status_code": 422, "data": "voice not found"}))

    assert caught.value.safe_message == "model rejected the request: voice not found"


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
