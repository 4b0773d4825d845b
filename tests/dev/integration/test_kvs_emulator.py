"""The Kinesis Video Streams emulator, spoken to by real botocore over loopback HTTP.

Control plane, GetMedia start selectors, live timing, faults and GetMedia's limits go through unmodified
``kinesisvideo`` / ``kinesis-video-media`` clients. The Matroska the emulator writes is read back by ffmpeg
and mkvtoolnix (independent readers) and, for what they cannot express (tags, timing, block layout), by the
small EBML walker below, which shares nothing with the project's parser.

A whole contact is read as a client should read it: with a PRODUCER_TIMESTAMP selector from Connect's
StartTimestamp (``FRAGMENT_NUMBER`` with the StartFragmentNumber skips the contact's first fragment).
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
import time
import urllib.error
import urllib.request
import wave
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError, ResponseStreamingError

from voicebridge_dev.local.kvs import ContactStart, ContactStateError, Fault, KvsEmulator
from voicebridge_dev.local.kvs.emulator import CONTACT_GAP_MS, IDLE_CLOSE_SECONDS
from voicebridge_dev.local.kvs.matroska import AGENT_TRACK, CODEC_AAC, CODEC_PCM, CUSTOMER_TRACK, EBML_MAGIC

pytestmark = pytest.mark.timeout(30)

CONTACT_ID = "4a573372-1f28-4e26-b97b-4a7d3c0b5e01"
INSTANCE_ID = "c8c0e68d-9a3f-4a2b-8f55-0c6c7c0f1d2e"
BLOCK_SECONDS = 0.064
ARN_SHAPE = r"arn:aws:kinesisvideo:us-east-1:111111111111:stream/{name}/\d{{13}}"


# -- clients and emulators --


def _client(service: str, endpoint: str, read_timeout: float = 5) -> Any:
    # Any service name, so not one of the stubs' per-service overloads.
    make: Any = boto3.client
    return make(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=read_timeout, connect_timeout=2),
    )


def _media(kvs: KvsEmulator, arn: str, read_timeout: float = 5) -> Any:
    control = _client("kinesisvideo", kvs.url)
    endpoint = control.get_data_endpoint(StreamARN=arn, APIName="GET_MEDIA")["DataEndpoint"]
    return _client("kinesis-video-media", endpoint, read_timeout)


@pytest.fixture
def make_emulator() -> Iterator[Callable[..., KvsEmulator]]:
    started: list[KvsEmulator] = []

    def make(**kwargs: Any) -> KvsEmulator:
        kwargs.setdefault("idle_close_seconds", 0.2)
        emulator = KvsEmulator(**kwargs).start()
        started.append(emulator)
        return emulator

    yield make
    for emulator in started:
        emulator.stop()


@pytest.fixture
def kvs(make_emulator: Callable[..., KvsEmulator]) -> KvsEmulator:
    return make_emulator(pace=0)


def _pcm(seconds: float, seed: int) -> bytes:
    samples = np.random.default_rng(seed).integers(-12000, 12000, round(seconds * 8000), dtype=np.int16)
    return samples.astype("<i2").tobytes()


def _write_wav(path: Path, pcm: bytes, rate: int = 8000, channels: int = 1) -> Path:
    with wave.open(str(path), "wb") as wav:
        wav.setnchannels(channels)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(pcm)
    return path


def _contact(kvs: KvsEmulator, name: str, customer: bytes, agent: bytes, **begin: Any) -> tuple[str, ContactStart]:
    """A whole contact on a new stream; returns (stream ARN, the contact's start)."""
    arn = kvs.create_stream(name)
    stream = kvs.stream(arn)
    start = stream.begin_contact(begin.pop("contact_id", CONTACT_ID), INSTANCE_ID, **begin)
    stream.append_tracks(customer, agent)
    stream.end_contact()
    return arn, start


def _after(number: str) -> dict[str, str]:
    return {"StartSelectorType": "FRAGMENT_NUMBER", "AfterFragmentNumber": number}


def _at(seconds: float, kind: str = "PRODUCER_TIMESTAMP") -> dict[str, Any]:
    return {"StartSelectorType": kind, "StartTimestamp": seconds}


def _from(start: ContactStart) -> dict[str, Any]:
    """The whole contact: the chunk containing Connect's StartTimestamp, and everything after it."""
    return _at(start.timestamp_ms / 1000)


def _post(kvs: KvsEmulator, route: str, body: dict[str, Any]) -> tuple[int, Any]:
    """POST to the emulator's control plane; (status, decoded answer)."""
    request = urllib.request.Request(f"{kvs.url}/_emulator/{route}", data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status), json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


_DEFAULT_CONFIG = {
    "fragment_number_selector": "exclusive",
    "idle_close_seconds": 0.2,
    "max_get_media_connections": 3,
    "max_get_media_calls_per_second": 5,
}


# -- a minimal EBML walker for what ffmpeg and mkvtoolnix cannot tell --

_MASTERS = {0x18538067, 0x1654AE6B, 0xAE, 0x1254C367, 0x7373, 0x67C8, 0x1F43B675}
_EBML_HEADER, _TRACK_NUMBER, _NAME, _CODEC_ID = 0x1A45DFA3, 0xD7, 0x536E, 0x86
_TAG_NAME, _TAG_STRING, _TIMECODE, _SIMPLE_BLOCK = 0x45A3, 0x4487, 0xE7, 0xA3


def _vint(data: bytes | bytearray, pos: int, keep_marker: bool) -> tuple[int, int] | None:
    if pos >= len(data):
        return None
    length = 9 - data[pos].bit_length()
    if pos + length > len(data):
        return None
    value = int.from_bytes(data[pos : pos + length], "big")
    return (value if keep_marker else value & ((1 << (7 * length)) - 1)), length


class _Walker:
    """Feeds on any chunking of a payload; yields (element id, payload) for leaves, flattening masters."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._buffer += data
        leaves: list[tuple[int, bytes]] = []
        pos = 0
        while (element := _vint(self._buffer, pos, keep_marker=True)) is not None:
            element_id, id_length = element
            size = _vint(self._buffer, pos + id_length, keep_marker=False)
            if size is None:
                break
            length, size_length = size
            start = pos + id_length + size_length
            if element_id in _MASTERS:
                pos = start
                continue
            if start + length > len(self._buffer):
                break
            leaves.append((element_id, bytes(self._buffer[start : start + length])))
            pos = start + length
        del self._buffer[:pos]
        return leaves


@dataclass
class _Fragment:
    tags: dict[str, str] = field(default_factory=dict)
    tracks: dict[int, str] = field(default_factory=dict)
    codecs: list[str] = field(default_factory=list)
    timecode: int = -1
    blocks: list[tuple[str, int, bytes]] = field(default_factory=list)
    order: list[str] = field(default_factory=list)

    @property
    def number(self) -> str:
        return self.tags["AWS_KINESISVIDEO_FRAGMENT_NUMBER"]

    def pcm(self, track: str) -> bytes:
        return b"".join(audio for name, _, audio in self.blocks if name == track)


class _Fragments:
    """Groups walker leaves into per-document fragments."""

    def __init__(self) -> None:
        self.walker = _Walker()
        self.fragments: list[_Fragment] = []
        self._track_number: int | None = None
        self._tag_name = ""
        self._blocks_per_track: dict[str, int] = {}

    def feed(self, data: bytes) -> list[tuple[str, int]]:
        """Returns the blocks completed by ``data`` as (track name, index of that track's block)."""
        completed: list[tuple[str, int]] = []
        for element_id, payload in self.walker.feed(data):
            if element_id == _EBML_HEADER:
                self.fragments.append(_Fragment())
                continue
            fragment = self.fragments[-1]
            if element_id == _TRACK_NUMBER:
                self._track_number = int.from_bytes(payload, "big")
            elif element_id == _NAME and self._track_number is not None:
                fragment.tracks[self._track_number] = payload.decode()
                self._track_number = None
            elif element_id == _CODEC_ID:
                fragment.codecs.append(payload.decode())
            elif element_id == _TAG_NAME:
                self._tag_name = payload.decode()
            elif element_id == _TAG_STRING:
                fragment.tags[self._tag_name] = payload.decode()
                fragment.order.append(self._tag_name)
            elif element_id == _TIMECODE:
                fragment.timecode = int.from_bytes(payload, "big")
            elif element_id == _SIMPLE_BLOCK:
                number, length = _vint(payload, 0, keep_marker=False) or (0, 0)
                offset = int.from_bytes(payload[length : length + 2], "big", signed=True)
                assert payload[length + 2] == 0x80, "every block is a keyframe"
                name = fragment.tracks[number]
                fragment.blocks.append((name, offset, payload[length + 3 :]))
                fragment.order.append("block")
                self._blocks_per_track[name] = self._blocks_per_track.get(name, 0) + 1
                completed.append((name, self._blocks_per_track[name]))
        return completed

    def pcm(self, track: str) -> bytes:
        return b"".join(fragment.pcm(track) for fragment in self.fragments)


def _read_all(payload: Any) -> _Fragments:
    fragments = _Fragments()
    fragments.feed(payload.read())
    return fragments


def _documents(data: bytes) -> list[bytes]:
    """The payload cut at each EBML header: one standalone Matroska file per fragment."""
    starts = [index for index in range(len(data)) if data.startswith(EBML_MAGIC, index)]
    return [data[start:end] for start, end in zip(starts, [*starts[1:], len(data)], strict=True)]


# -- control plane --


def test_get_data_endpoint_points_at_the_emulator_itself(kvs: KvsEmulator) -> None:
    arn = kvs.create_stream("connect-demo-contact")
    control = _client("kinesisvideo", kvs.url)

    endpoint = control.get_data_endpoint(StreamARN=arn, APIName="GET_MEDIA")["DataEndpoint"]

    assert endpoint == kvs.url


def test_create_stream_returns_an_arn_shaped_like_connects(kvs: KvsEmulator) -> None:
    control = _client("kinesisvideo", kvs.url)

    arn = control.create_stream(StreamName="connect-demo-contact-6855")["StreamARN"]
    info = control.describe_stream(StreamARN=arn)["StreamInfo"]

    assert re.fullmatch(ARN_SHAPE.format(name="connect-demo-contact-6855"), arn)
    assert (info["StreamName"], info["Status"]) == ("connect-demo-contact-6855", "ACTIVE")


def test_list_streams_filters_by_name_prefix(kvs: KvsEmulator) -> None:
    for name in ("connect-a", "connect-b", "other"):
        kvs.create_stream(name)
    control = _client("kinesisvideo", kvs.url)

    listed = control.list_streams(
        StreamNameCondition={"ComparisonOperator": "BEGINS_WITH", "ComparisonValue": "connect-"}
    )

    assert sorted(info["StreamName"] for info in listed["StreamInfoList"]) == ["connect-a", "connect-b"]


def test_creating_an_existing_stream_is_resource_in_use(kvs: KvsEmulator) -> None:
    control = _client("kinesisvideo", kvs.url)
    control.create_stream(StreamName="connect-twice")

    with pytest.raises(control.exceptions.ResourceInUseException):
        control.create_stream(StreamName="connect-twice")


def test_unknown_stream_raises_the_modeled_resource_not_found(kvs: KvsEmulator) -> None:
    control = _client("kinesisvideo", kvs.url)
    media = _client("kinesis-video-media", kvs.url)

    with pytest.raises(control.exceptions.ResourceNotFoundException):
        control.get_data_endpoint(StreamName="missing", APIName="GET_MEDIA")
    with pytest.raises(media.exceptions.ResourceNotFoundException):
        media.get_media(StreamName="missing", StartSelector={"StartSelectorType": "EARLIEST"})


# -- GetMedia payload --


def test_get_media_from_the_start_timestamp_returns_the_whole_contact(kvs: KvsEmulator, tmp_path: Path) -> None:
    customer, agent = _pcm(2.5, seed=1), _pcm(2.5, seed=2)
    arn = kvs.create_stream("connect-demo-contact")
    start = kvs.stream(arn).load_wavs(
        _write_wav(tmp_path / "caller.wav", customer), _write_wav(tmp_path / "agent.wav", agent), CONTACT_ID
    )

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))
    fragments = _read_all(response["Payload"])

    numbers = [fragment.number for fragment in fragments.fragments]
    assert numbers[0] == start.fragment_number
    assert all(len(number) == 47 and number.isdigit() for number in numbers)
    assert [int(number) for number in numbers] == sorted({int(number) for number in numbers})
    assert (fragments.pcm(CUSTOMER_TRACK), fragments.pcm(AGENT_TRACK)) == (customer, agent)


def test_every_fragment_carries_connects_tags(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-tags", _pcm(1.5, 1), _pcm(1.5, 2))

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    for fragment in fragments.fragments:
        assert fragment.tags["ContactId"] == CONTACT_ID
        assert fragment.tags["InstanceId"] == INSTANCE_ID
        assert fragment.tags["MimeType"] == "audio/L16;rate=8000;channels=1;"
        assert (fragment.tags[CUSTOMER_TRACK], fragment.tags[AGENT_TRACK]) == ("1", "2")
        assert fragment.tags["AWS_KINESISVIDEO_PRODUCER_TIMESTAMP"] == f"{fragment.timecode / 1000:.3f}"
        assert fragment.tags["AWS_KINESISVIDEO_CONTINUATION_TOKEN"] == fragment.number
        assert int(fragment.tags["AWS_KINESISVIDEO_MILLIS_BEHIND_NOW"]) >= 0
        assert float(fragment.tags["AWS_KINESISVIDEO_SERVER_TIMESTAMP"]) > 1.6e9


def test_fragments_hold_one_second_of_interleaved_64_ms_blocks(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-blocks", _pcm(2.048, 1), _pcm(2.048, 2))

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    assert len(fragments.fragments) == 2
    first, second = fragments.fragments
    assert [(name, offset, len(pcm)) for name, offset, pcm in first.blocks] == [
        (track, 64 * index, 1024) for index in range(16) for track in (CUSTOMER_TRACK, AGENT_TRACK)
    ]
    assert second.timecode - first.timecode == 16 * 64


def test_load_wavs_resamples_and_downmixes_to_8khz_mono(kvs: KvsEmulator, tmp_path: Path) -> None:
    stereo_16k = _write_wav(tmp_path / "caller.wav", _pcm(2.0, 3), rate=16000, channels=2)
    arn = kvs.create_stream("connect-resampled")

    start = kvs.stream(arn).load_wavs(stereo_16k, None, CONTACT_ID)
    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    assert len(fragments.pcm(CUSTOMER_TRACK)) == 8000  # 0.5 s at 8 kHz, 16-bit
    assert fragments.pcm(AGENT_TRACK) == bytes(8000)


def test_a_contacts_first_audio_carries_the_producer_time_connect_stamped_it_with(kvs: KvsEmulator) -> None:
    stamped = int(time.time() * 1000) - 450
    arn, start = _contact(kvs, "connect-stamped", _pcm(0.5, 1), _pcm(0.5, 2), start_ms=stamped)

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    assert start.timestamp_ms == stamped
    assert fragments.fragments[0].timecode == stamped


def test_a_track_with_nothing_appended_carries_silence(kvs: KvsEmulator) -> None:
    arn = kvs.create_stream("connect-one-sided")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(1.0, 4))
    stream.end_contact()

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    assert fragments.pcm(AGENT_TRACK) == bytes(len(fragments.pcm(CUSTOMER_TRACK)))


def test_track_numbers_may_differ_per_contact_while_names_stay(kvs: KvsEmulator) -> None:
    customer, agent = _pcm(1.2, 5), _pcm(1.2, 6)
    arn, start = _contact(kvs, "connect-renumbered", customer, agent, track_numbers=(7, 3))

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    assert fragments.fragments[0].tracks == {7: CUSTOMER_TRACK, 3: AGENT_TRACK}
    assert (fragments.pcm(CUSTOMER_TRACK), fragments.pcm(AGENT_TRACK)) == (customer, agent)


def test_tags_come_in_the_order_connect_writes_them(kvs: KvsEmulator) -> None:
    """Fragment number and timestamps before the Cluster; the contact's tags after it; GetMedia's last."""
    arn, start = _contact(kvs, "connect-tag-order", _pcm(0.5, 1), _pcm(0.5, 2))

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])
    order = fragments.fragments[0].order
    blocks = [index for index, item in enumerate(order) if item == "block"]

    assert order[: blocks[0]] == [
        "AWS_KINESISVIDEO_FRAGMENT_NUMBER",
        "AWS_KINESISVIDEO_SERVER_TIMESTAMP",
        "AWS_KINESISVIDEO_PRODUCER_TIMESTAMP",
    ]
    assert order[blocks[-1] + 1 :] == [
        "ContactId",
        "InstanceId",
        "MimeType",
        CUSTOMER_TRACK,
        AGENT_TRACK,
        "AWS_KINESISVIDEO_MILLIS_BEHIND_NOW",
        "AWS_KINESISVIDEO_CONTINUATION_TOKEN",
    ]


def test_a_live_reader_learns_the_contact_only_after_the_fragments_audio(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=4.0)
    arn = kvs.create_stream("connect-contact-last")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(1.5, 1))
    stream.end_contact()
    raw = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]._raw_stream
    fragments = _Fragments()

    while "ContactId" not in (fragments.fragments[0].tags if fragments.fragments else {}):
        chunk = raw.read1(65536)
        assert chunk, "the payload ended before the first fragment's contact tags"
        fragments.feed(chunk)
        assert "ContactId" in fragments.fragments[0].tags or len(fragments.fragments[0].blocks) <= 32

    first = fragments.fragments[0]
    assert len(first.blocks) == 32
    assert first.order.index("ContactId") > first.order.index("block") + 31


def test_payload_content_type_is_the_one_getmedia_reports(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-content-type", _pcm(0.2, 1), b"")

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))
    response["Payload"].read()

    assert response["ContentType"] == "video/webm"


# -- start selectors --


def test_fragment_number_selector_starts_after_that_fragment(kvs: KvsEmulator) -> None:
    """Exclusive, as AWS's StartSelector reference says ("Start with the chunk after a specific fragment").

    This test used to expect the payload to start *at* AfterFragmentNumber: that inclusive belief was the
    emulator's, shared by a consumer that passed every test and lost a contact's first second on AWS.
    """
    arn, _ = _contact(kvs, "connect-selector", _pcm(3.0, 1), _pcm(3.0, 2))
    assert kvs.stream(arn).wait_idle(5)
    numbers = kvs.stream(arn).fragment_numbers

    fragments = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_after(numbers[1]))["Payload"])

    assert [fragment.number for fragment in fragments.fragments] == numbers[2:]


def test_after_the_start_fragment_number_the_contacts_first_fragment_is_skipped(kvs: KvsEmulator) -> None:
    customer = _pcm(2.0, 1)
    arn, start = _contact(kvs, "connect-skipped-start", customer, b"")

    fragments = _read_all(
        _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_after(start.fragment_number))["Payload"]
    )

    assert fragments.fragments[0].number != start.fragment_number
    assert fragments.pcm(CUSTOMER_TRACK) == customer[16 * 1024 :]


def test_the_inclusive_reading_of_fragment_number_is_a_constructor_switch(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=0, fragment_number_selector="inclusive")
    arn, start = _contact(kvs, "connect-inclusive", _pcm(2.0, 1), b"")

    fragments = _read_all(
        _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_after(start.fragment_number))["Payload"]
    )

    assert [fragment.number for fragment in fragments.fragments] == kvs.stream(arn).fragment_numbers


def test_the_fragment_number_reading_can_be_switched_over_http(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-switched", _pcm(2.0, 1), b"")
    media = _media(kvs, arn)

    config = _post(kvs, "config", {"fragment_number_selector": "inclusive"})
    inclusive = _read_all(media.get_media(StreamARN=arn, StartSelector=_after(start.fragment_number))["Payload"])
    _post(kvs, "config", {"fragment_number_selector": "exclusive"})
    exclusive = _read_all(media.get_media(StreamARN=arn, StartSelector=_after(start.fragment_number))["Payload"])

    assert config == (200, {"Config": {**_DEFAULT_CONFIG, "fragment_number_selector": "inclusive"}})
    assert inclusive.fragments[0].number == start.fragment_number
    assert exclusive.fragments[0].number != start.fragment_number


def test_settings_are_read_and_refused_over_http_like_the_service_refuses_arguments(kvs: KvsEmulator) -> None:
    with urllib.request.urlopen(f"{kvs.url}/_emulator/config", timeout=5) as response:
        assert json.load(response) == {"Config": _DEFAULT_CONFIG}

    for body in ({"fragment_number_selector": "sometimes"}, {"idle_close_seconds": "soon"}, {"pace": 2}):
        status, answer = _post(kvs, "config", body)
        assert status == 400, body
        assert answer["Message"]
    assert kvs.settings.fragment_number_selector == "exclusive"


def _continue(token: str) -> dict[str, str]:
    return {"StartSelectorType": "CONTINUATION_TOKEN", "ContinuationToken": token}


def test_continuation_token_resumes_after_the_fragment_that_carried_it(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-continue", _pcm(3.0, 1), _pcm(3.0, 2))
    media = _media(kvs, arn)
    first = _read_all(media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]).fragments

    for index, fragment in enumerate(first):
        resumed = media.get_media(
            StreamARN=arn, StartSelector=_continue(fragment.tags["AWS_KINESISVIDEO_CONTINUATION_TOKEN"])
        )
        assert [f.number for f in _read_all(resumed["Payload"]).fragments] == [f.number for f in first[index + 1 :]]


def test_the_last_fragments_continuation_token_waits_for_the_next_fragment(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=0)
    arn = kvs.create_stream("connect-continue-live")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(1.024, 1))
    media = _media(kvs, arn)
    raw = media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]._raw_stream
    first = _Fragments()
    while "AWS_KINESISVIDEO_CONTINUATION_TOKEN" not in (first.fragments[0].tags if first.fragments else {}):
        first.feed(raw.read1(65536))
    raw.close()

    resumed = media.get_media(
        StreamARN=arn, StartSelector=_continue(first.fragments[0].tags["AWS_KINESISVIDEO_CONTINUATION_TOKEN"])
    )
    stream.append(CUSTOMER_TRACK, _pcm(0.5, 2))
    stream.end_contact()

    assert [f.number for f in _read_all(resumed["Payload"]).fragments] == stream.fragment_numbers[1:]


def test_earliest_selector_starts_with_the_oldest_fragment_of_a_reused_stream(kvs: KvsEmulator) -> None:
    arn, _ = _contact(kvs, "connect-reused", _pcm(1.0, 1), b"", contact_id="first-contact")
    stream = kvs.stream(arn)
    assert stream.wait_idle(5)
    stream.begin_contact("second-contact", INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(1.0, 2))
    stream.end_contact()

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector={"StartSelectorType": "EARLIEST"})
    contacts = [fragment.tags["ContactId"] for fragment in _read_all(response["Payload"]).fragments]

    assert contacts[0] == "first-contact"
    assert contacts[-1] == "second-contact"


def test_producer_timestamp_selector_starts_at_the_fragment_containing_it(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-producer-time", _pcm(3.0, 1), _pcm(3.0, 2))
    media = _media(kvs, arn)
    everything = _read_all(media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]).fragments

    for offset_ms, expected in ((0, 1), (500, 1), (1023, 1), (1024, 2)):
        response = media.get_media(StreamARN=arn, StartSelector=_at((everything[1].timecode + offset_ms) / 1000))
        assert _read_all(response["Payload"]).fragments[0].number == everything[expected].number, offset_ms


def test_the_start_timestamp_is_the_first_fragments_producer_timestamp(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-start-time", _pcm(1.5, 1), b"")

    first = _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]).fragments[0]

    assert first.number == start.fragment_number
    assert first.timecode == start.timestamp_ms
    assert first.tags["AWS_KINESISVIDEO_PRODUCER_TIMESTAMP"] == f"{start.timestamp_ms / 1000:.3f}"
    assert start.start_timestamp == str(start.timestamp_ms)


def test_a_timestamp_before_the_first_fragment_starts_with_the_first(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-early-time", _pcm(2.0, 1), b"")

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_at(start.timestamp_ms / 1000 - 60))

    assert [f.number for f in _read_all(response["Payload"]).fragments] == kvs.stream(arn).fragment_numbers


def test_a_timestamp_between_two_contacts_starts_with_the_second(kvs: KvsEmulator) -> None:
    arn, first = _contact(kvs, "connect-between", _pcm(1.0, 1), b"", contact_id="first-contact")
    stream = kvs.stream(arn)
    assert stream.wait_idle(5)
    second = stream.begin_contact("second-contact", INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(1.0, 2))
    stream.end_contact()

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_at((first.timestamp_ms + 2500) / 1000))
    fragments = _read_all(response["Payload"]).fragments

    assert fragments[0].number == second.fragment_number
    assert {fragment.tags["ContactId"] for fragment in fragments} == {"second-contact"}


def test_a_timestamp_after_the_last_fragment_waits_for_the_next_one(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=0, idle_close_seconds=2.0)
    arn, first = _contact(kvs, "connect-late-time", _pcm(1.0, 1), b"", contact_id="first-contact")
    stream = kvs.stream(arn)
    assert stream.wait_idle(5)
    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_at((first.timestamp_ms + 1500) / 1000))
    second = stream.begin_contact("second-contact", INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(0.5, 2))
    stream.end_contact()

    fragments = _read_all(response["Payload"]).fragments

    assert [fragment.number for fragment in fragments] == [second.fragment_number]


def test_a_timestamp_after_the_last_fragment_of_an_ended_stream_ends_the_payload_empty(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-after-the-end", _pcm(1.0, 1), b"")
    assert kvs.stream(arn).wait_idle(5)

    data = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_at(start.timestamp_ms / 1000 + 60))["Payload"]

    assert data.read() == b""


def test_server_timestamp_selector_starts_at_the_fragment_containing_it(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=8.0)
    arn, start = _contact(kvs, "connect-server-time", _pcm(3.0, 1), _pcm(3.0, 2))
    media = _media(kvs, arn)
    everything = _read_all(media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]).fragments
    last_server_time = float(everything[-1].tags["AWS_KINESISVIDEO_SERVER_TIMESTAMP"])

    response = media.get_media(StreamARN=arn, StartSelector=_at(last_server_time, "SERVER_TIMESTAMP"))

    # Fragments ingested faster than real time (the producer late on a loaded machine) share the last one's server
    # timestamp: the selector starts at the first of them.
    sharing = [f.number for f in everything if float(f.tags["AWS_KINESISVIDEO_SERVER_TIMESTAMP"]) == last_server_time]
    assert [f.number for f in _read_all(response["Payload"]).fragments] == sharing
    assert sharing[-1] == everything[-1].number


def test_now_selector_starts_with_the_next_fragment(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=8.0)
    arn = kvs.create_stream("connect-now")
    stream = kvs.stream(arn)
    stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(6.0, 1))
    deadline = time.monotonic() + 5
    while len(stream.fragment_numbers) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    before = set(stream.fragment_numbers)

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector={"StartSelectorType": "NOW"})
    stream.end_contact()
    fragments = _read_all(response["Payload"]).fragments

    assert fragments
    assert fragments[0].number not in before
    assert int(fragments[0].number) > max(int(number) for number in before)


def test_stream_name_selects_the_stream_like_its_arn(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-by-name", _pcm(1.0, 1), b"")

    response = _media(kvs, arn).get_media(StreamName="connect-by-name", StartSelector=_from(start))

    assert _read_all(response["Payload"]).fragments[0].number == start.fragment_number


def test_fragment_number_selector_without_a_number_is_an_invalid_argument(kvs: KvsEmulator) -> None:
    arn = kvs.create_stream("connect-invalid")
    media = _media(kvs, arn)

    for selector in ({"StartSelectorType": "FRAGMENT_NUMBER"}, _after("12a4"), _continue("not/a/token")):
        with pytest.raises(media.exceptions.InvalidArgumentException) as caught:
            media.get_media(StreamARN=arn, StartSelector=selector)
        assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


@pytest.mark.parametrize("reading", ["exclusive", "inclusive"])
def test_unknown_fragment_number_ends_the_payload_with_error_4000(
    reading: str, make_emulator: Callable[..., KvsEmulator]
) -> None:
    kvs = make_emulator(pace=0, fragment_number_selector=reading)
    arn, _ = _contact(kvs, "connect-not-found", _pcm(1.0, 1), b"")
    media = _media(kvs, arn)

    for selector in (_after("1" * 47), _continue("1" * 47)):
        response = media.get_media(StreamARN=arn, StartSelector=selector)
        tags = _read_all(response["Payload"]).fragments[-1].tags
        assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
        assert (tags["AWS_KINESISVIDEO_ERROR_ID"], tags["AWS_KINESISVIDEO_ERROR_CODE"]) == (
            "4000",
            "Requested fragment is not found",
        )


# -- live contacts --


def test_live_blocks_arrive_as_soon_as_their_audio_exists(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=1.0)
    arn = kvs.create_stream("connect-live")
    stream = kvs.stream(arn)
    media = _media(kvs, arn)
    begun = time.monotonic()
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(2.0, 1))
    stream.end_contact()
    response = media.get_media(StreamARN=arn, StartSelector=_from(start))

    # StreamingBody.read(n) waits for n bytes; read1 hands over each chunk the moment it arrives.
    raw = response["Payload"]._raw_stream
    fragments, lateness = _Fragments(), []
    while chunk := raw.read1(65536):
        arrived = time.monotonic()
        for track, index in fragments.feed(chunk):
            if track == CUSTOMER_TRACK:
                lateness.append(arrived - (begun + index * BLOCK_SECONDS))

    median_ms, max_ms = statistics.median(lateness) * 1000, max(lateness) * 1000
    print(f"block lateness: median {median_ms:.1f} ms, max {max_ms:.1f} ms")
    assert len(lateness) == round(2.0 / BLOCK_SECONDS + 0.5)
    assert min(lateness) > -0.02, "a block was sent before its audio existed"
    assert max(lateness) < 0.5


def test_the_next_contact_on_a_stream_starts_a_gap_after_the_last_one_ended(kvs: KvsEmulator) -> None:
    """A new call reaches its streaming block seconds after the previous call's audio ended, even when the
    emulator produced that one faster than real time."""
    arn, first = _contact(kvs, "connect-next-call", _pcm(1.0, 1), b"", contact_id="first-contact")
    stream = kvs.stream(arn)
    assert stream.wait_idle(5)

    second = stream.begin_contact("second-contact", INSTANCE_ID)

    assert second.timestamp_ms == first.timestamp_ms + 1000 + CONTACT_GAP_MS
    stream.end_contact()


def test_the_gap_between_contacts_is_a_setting(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=0, contact_gap_ms=250)
    arn, first = _contact(kvs, "connect-short-gap", _pcm(1.0, 1), b"", contact_id="first-contact")
    stream = kvs.stream(arn)
    assert stream.wait_idle(5)

    second = stream.begin_contact("second-contact", INSTANCE_ID)
    stream.end_contact()

    assert second.timestamp_ms == first.timestamp_ms + 1000 + 250


def test_a_stream_carries_one_live_contact_at_a_time(kvs: KvsEmulator) -> None:
    stream = kvs.stream(kvs.create_stream("connect-single"))
    with pytest.raises(ContactStateError):
        stream.append(CUSTOMER_TRACK, bytes(1024))
    stream.begin_contact(CONTACT_ID, INSTANCE_ID)

    with pytest.raises(ContactStateError):
        stream.begin_contact("another-contact", INSTANCE_ID)
    stream.end_contact()
    assert stream.wait_idle(5)
    stream.begin_contact("another-contact", INSTANCE_ID)


def test_end_contact_closes_the_payload_once_the_audio_is_out(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=4.0)
    arn = kvs.create_stream("connect-ending")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    customer = _pcm(2.0, 1)
    stream.append(CUSTOMER_TRACK, customer)
    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))
    began = time.monotonic()
    stream.end_contact()

    fragments = _read_all(response["Payload"])

    assert fragments.pcm(CUSTOMER_TRACK) == customer
    assert "AWS_KINESISVIDEO_CONTINUATION_TOKEN" in fragments.fragments[-1].tags
    assert time.monotonic() - began < 2.0 / 4 + 1.5


def test_end_contact_without_drain_drops_the_queued_audio(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=1.0)
    arn = kvs.create_stream("connect-hangup")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    stream.append(CUSTOMER_TRACK, _pcm(10.0, 1))
    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))
    time.sleep(0.3)
    stream.end_contact(drain=False)

    fragments = _read_all(response["Payload"])

    assert 0 < len(fragments.pcm(CUSTOMER_TRACK)) < 8000 * 2


# -- faults --


def test_cut_fault_breaks_the_payload_after_the_given_bytes(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-cut", _pcm(2.0, 1), _pcm(2.0, 2))
    kvs.inject_fault(Fault("cut", after_bytes=5000))
    payload = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]

    received = payload.read(5000)

    assert len(received) == 5000
    with pytest.raises(ResponseStreamingError):
        payload.read()


def test_stall_fault_makes_the_client_read_time_out(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-stall", _pcm(2.0, 1), _pcm(2.0, 2))
    kvs.inject_fault(Fault("stall", after_bytes=3000, seconds=3))
    payload = _media(kvs, arn, read_timeout=0.5).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]

    assert len(payload.read(3000)) == 3000
    with pytest.raises(ReadTimeoutError):
        payload.read()


def test_error_tag_fault_ends_the_payload_with_the_error_tags(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-error", _pcm(2.0, 1), _pcm(2.0, 2))
    kvs.inject_fault(Fault("error_tag", after_bytes=3000, error_code="INTERNAL_ERROR", error_id=5000))

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))
    fragments = _read_all(response["Payload"]).fragments

    assert len(fragments) == 1
    assert fragments[0].tags["AWS_KINESISVIDEO_ERROR_CODE"] == "INTERNAL_ERROR"
    assert fragments[0].tags["AWS_KINESISVIDEO_ERROR_ID"] == "5000"
    assert 0 < len(fragments[0].blocks) < 32


def test_error_tag_fault_before_any_fragment_is_a_whole_document(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-error-first", _pcm(1.0, 1), b"")
    kvs.inject_fault(Fault("error_tag", after_bytes=0, error_code="INTERNAL_ERROR", error_id=5000))

    data = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"].read()
    fragments = _Fragments()
    fragments.feed(data)

    assert data.startswith(EBML_MAGIC)
    assert fragments.fragments[0].tags["AWS_KINESISVIDEO_ERROR_ID"] == "5000"


def test_throttle_fault_raises_client_limit_exceeded_once(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-throttle", _pcm(0.5, 1), b"")
    kvs.inject_fault(Fault("throttle"))
    media = _media(kvs, arn)

    with pytest.raises(media.exceptions.ClientLimitExceededException):
        media.get_media(StreamARN=arn, StartSelector=_from(start))
    assert _read_all(media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]).fragments


def _post_fault(kvs: KvsEmulator, body: dict[str, Any]) -> int:
    return _post(kvs, "faults", body)[0]


def test_faults_can_be_armed_over_http_for_a_number_of_calls(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-http-fault", _pcm(0.5, 1), b"")
    media = _media(kvs, arn)

    assert _post_fault(kvs, {"fault": "throttle", "count": 2, "stream": "connect-http-fault"}) == 200

    for _ in range(2):
        with pytest.raises(media.exceptions.ClientLimitExceededException):
            media.get_media(StreamARN=arn, StartSelector=_from(start))
    assert _read_all(media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]).fragments


def test_a_fault_for_another_stream_leaves_this_one_alone(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-spared", _pcm(0.5, 1), b"")
    kvs.inject_fault(Fault("throttle", stream="some-other-stream"))

    response = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))

    assert _read_all(response["Payload"]).fragments


def test_a_malformed_fault_is_refused_over_http(kvs: KvsEmulator) -> None:
    assert _post_fault(kvs, {"fault": "meteor"}) == 400
    assert _post_fault(kvs, {"fault": "cut", "after_bytes": "many"}) == 400
    assert kvs.pending_faults == []


# -- limits and figures --


def test_a_fourth_concurrent_get_media_is_refused(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=1.0)
    arn = kvs.create_stream("connect-busy")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    media = _media(kvs, arn)
    open_payloads = [media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"] for _ in range(3)]

    with pytest.raises(media.exceptions.ConnectionLimitExceededException) as caught:
        media.get_media(StreamARN=arn, StartSelector=_from(start))
    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400

    open_payloads.pop().close()
    deadline = time.monotonic() + 3
    while stream.stats()["ActiveGetMedia"] > 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"].read(100)
    stream.end_contact(drain=False)


def test_a_sixth_get_media_call_within_a_second_is_client_limit_exceeded(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=0, max_get_media_connections=10, idle_close_seconds=5.0)
    arn, start = _contact(kvs, "connect-five-a-second", _pcm(0.5, 1), b"")
    media = _media(kvs, arn)
    began = time.monotonic()
    payloads = [media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"] for _ in range(5)]

    with pytest.raises(media.exceptions.ClientLimitExceededException) as caught:
        media.get_media(StreamARN=arn, StartSelector=_from(start))
    assert time.monotonic() - began < 1.0, "the calls were too slow to test the limit"
    time.sleep(max(0.0, began + 1.05 - time.monotonic()))
    payloads.append(media.get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    assert caught.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "per second" in caught.value.response["Error"]["Message"]
    for payload in payloads:
        payload.close()


def test_the_call_rate_is_counted_per_stream(make_emulator: Callable[..., KvsEmulator]) -> None:
    kvs = make_emulator(pace=0, max_get_media_connections=10)
    arns = [_contact(kvs, f"connect-rate-{index}", _pcm(0.2, 1), b"")[0] for index in range(2)]
    media = _media(kvs, arns[0])

    payloads = [
        media.get_media(StreamARN=arn, StartSelector={"StartSelectorType": "EARLIEST"})["Payload"]
        for arn in arns
        for _ in range(5)
    ]

    assert len(payloads) == 10
    for payload in payloads:
        payload.close()


def test_the_payload_ends_three_seconds_after_the_last_fragment_by_default(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=0, idle_close_seconds=IDLE_CLOSE_SECONDS)
    arn, start = _contact(kvs, "connect-idle-close", _pcm(1.0, 1), b"")
    assert kvs.stream(arn).wait_idle(5)
    raw = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]._raw_stream
    fragments = _Fragments()

    last_data = time.monotonic()
    while chunk := raw.read1(65536):
        fragments.feed(chunk)
        last_data = time.monotonic()
    ended = time.monotonic()

    assert IDLE_CLOSE_SECONDS == 3.0
    assert len(fragments.fragments) == 1
    assert 2.8 < ended - last_data < 4.0


def test_stream_figures_are_served_over_http(kvs: KvsEmulator) -> None:
    arn, start = _contact(kvs, "connect-figures", _pcm(1.0, 1), b"")
    _read_all(_media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"])

    with urllib.request.urlopen(f"{kvs.url}/_emulator/streams", timeout=5) as response:
        streams = json.load(response)["Streams"]

    assert streams == [
        {
            "StreamName": "connect-figures",
            "StreamARN": arn,
            "Fragments": 1,
            "LastFragmentNumber": kvs.stream(arn).last_fragment_number,
            "LiveContactId": None,
            "ActiveGetMedia": 0,
            "GetMediaCalls": 1,
            "BytesSent": streams[0]["BytesSent"],
        }
    ]
    assert streams[0]["BytesSent"] > 16000 and streams[0]["LastFragmentNumber"] == start.fragment_number


def test_the_emulator_is_idle_once_every_payload_is_read_and_no_contact_is_live(
    make_emulator: Callable[..., KvsEmulator],
) -> None:
    kvs = make_emulator(pace=1.0)
    arn = kvs.create_stream("connect-idle")
    stream = kvs.stream(arn)
    start = stream.begin_contact(CONTACT_ID, INSTANCE_ID)
    payload = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"]

    assert not kvs.wait_idle(0.1)
    stream.end_contact()
    _read_all(payload)
    assert kvs.wait_idle(5)


# -- independent readers: ffmpeg and mkvtoolnix --

needs_ffmpeg = pytest.mark.skipif(
    not (shutil.which("ffmpeg") and shutil.which("ffprobe")), reason="ffmpeg is not installed"
)
needs_mkvtoolnix = pytest.mark.skipif(
    not (shutil.which("mkvmerge") and shutil.which("mkvextract")), reason="mkvtoolnix is not installed"
)


def _pcm_payload(make_emulator: Callable[..., KvsEmulator], customer: bytes, agent: bytes) -> tuple[list[bytes], int]:
    """A contact written with the PCM codec id and renumbered tracks, cut into one file per fragment."""
    kvs = make_emulator(pace=0, codec_id=CODEC_PCM)
    arn, start = _contact(kvs, "connect-pcm", customer, agent, track_numbers=(2, 1))
    data = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"].read()
    return _documents(data), len(kvs.stream(arn).fragment_numbers)


def _run(*args: str) -> bytes:
    return subprocess.run(args, check=True, capture_output=True, timeout=20).stdout


@needs_ffmpeg
def test_ffmpeg_decodes_each_fragment_to_the_appended_pcm(
    make_emulator: Callable[..., KvsEmulator], tmp_path: Path
) -> None:
    customer, agent = _pcm(2.3, 11), _pcm(2.3, 12)
    documents, fragment_count = _pcm_payload(make_emulator, customer, agent)
    decoded: dict[str, bytes] = {CUSTOMER_TRACK: b"", AGENT_TRACK: b""}

    for index, document in enumerate(documents):
        path = tmp_path / f"fragment-{index}.mkv"
        path.write_bytes(document)
        probe = json.loads(_run("ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)))
        outputs: list[str] = []
        for stream in probe["streams"]:
            assert (stream["codec_name"], int(stream["sample_rate"]), stream["channels"]) == (
                "pcm_s16le",
                8000,
                1,
            )
            outputs += [
                "-map",
                f"0:{stream['index']}",
                "-f",
                "s16le",
                str(tmp_path / stream["tags"]["title"]),
            ]
        _run("ffmpeg", "-v", "error", "-y", "-i", str(path), *outputs)
        for track in decoded:
            decoded[track] += (tmp_path / track).read_bytes()

    assert len(documents) == fragment_count == 3
    assert decoded == {CUSTOMER_TRACK: customer, AGENT_TRACK: agent}


@needs_mkvtoolnix
def test_mkvtoolnix_extracts_each_fragment_to_the_appended_pcm(
    make_emulator: Callable[..., KvsEmulator], tmp_path: Path
) -> None:
    customer, agent = _pcm(2.3, 13), _pcm(2.3, 14)
    documents, fragment_count = _pcm_payload(make_emulator, customer, agent)
    extracted: dict[str, bytes] = {CUSTOMER_TRACK: b"", AGENT_TRACK: b""}

    for index, document in enumerate(documents):
        path = tmp_path / f"fragment-{index}.mkv"
        path.write_bytes(document)
        identified = json.loads(_run("mkvmerge", "-J", str(path)))
        assert identified["errors"] == []
        targets = {track["properties"]["track_name"]: track["id"] for track in identified["tracks"]}
        wavs = {name: tmp_path / f"{index}-{name}.wav" for name in targets}
        _run("mkvextract", str(path), "tracks", *(f"{targets[name]}:{wav}" for name, wav in wavs.items()))
        for name, wav_path in wavs.items():
            with wave.open(str(wav_path), "rb") as wav:
                assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (8000, 1, 2)
                extracted[name] += wav.readframes(wav.getnframes())

    assert len(documents) == fragment_count == 3
    assert extracted == {CUSTOMER_TRACK: customer, AGENT_TRACK: agent}


@needs_mkvtoolnix
def test_default_tracks_are_labelled_a_aac_as_connect_does(kvs: KvsEmulator, tmp_path: Path) -> None:
    arn, start = _contact(kvs, "connect-aac-label", _pcm(0.5, 1), _pcm(0.5, 2))
    data = _media(kvs, arn).get_media(StreamARN=arn, StartSelector=_from(start))["Payload"].read()
    path = tmp_path / "fragment.mkv"
    path.write_bytes(_documents(data)[0])

    identified = json.loads(_run("mkvmerge", "-J", str(path)))

    assert [
        (track["properties"]["track_name"], track["properties"]["codec_id"], track["properties"]["uid"])
        for track in identified["tracks"]
    ] == [(CUSTOMER_TRACK, CODEC_AAC, 1), (AGENT_TRACK, CODEC_AAC, 2)]
