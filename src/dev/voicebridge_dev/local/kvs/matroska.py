"""Matroska writer for Connect-shaped Kinesis Video Streams fragments (the KVS emulator's output).

Written from the EBML/Matroska specifications and public dumps of what Amazon Connect puts on a stream, for
the local emulator only. It shares no code with any Matroska parser in the project, so an independent reader
(ffmpeg, mkvtoolnix, the project's own parser) is a real judge of what is written here.

A GetMedia payload is a concatenation of Matroska documents, one per fragment, in this order::

    EBML header                      DocType "matroska", DocTypeVersion 2
    Segment (size unknown)           0x18538067 01 FF FF FF FF FF FF FF
      Info                           TimecodeScale 1000000 (ms), MuxingApp, WritingApp[, SegmentUID]
      Tracks                         TrackEntry AUDIO_FROM_CUSTOMER (TrackUID 1),
                                     TrackEntry AUDIO_TO_CUSTOMER (TrackUID 2)
      Tags                           AWS_KINESISVIDEO_FRAGMENT_NUMBER, AWS_KINESISVIDEO_SERVER_TIMESTAMP,
                                     AWS_KINESISVIDEO_PRODUCER_TIMESTAMP
      Cluster (size unknown)         Timecode = producer time in ms
        SimpleBlock*                 track VINT | int16 relative ms | flags 0x80 | 1024 bytes s16le (64 ms)
      Tags * 5                       one each: ContactId, InstanceId, MimeType, AUDIO_FROM_CUSTOMER "1",
                                     AUDIO_TO_CUSTOMER "2" (Connect's, after the Cluster)
      Tags                           added by GetMedia: AWS_KINESISVIDEO_MILLIS_BEHIND_NOW,
                                     AWS_KINESISVIDEO_CONTINUATION_TOKEN

The order is the one of a dump of a real Connect fragment (N. Neudeck, "Building Python Audio Consumers for
Amazon Connect Kinesis Media Streams", 2024, https://nicolasneudeck.com/blog/python-kvs-audio-consumer): the
fragment number and both timestamps in a Tags element before the Cluster, Connect's contact tags in separate
Tags elements after it, GetMedia's own tags last. So a reader learns which contact a fragment belongs to only
once it has read the fragment's audio, as it does on a real stream. The names of GetMedia's tags are those of
botocore's ``kinesis-video-media`` model (``GetMediaOutput.Payload``); it gives no order.

Both sizes are unknown so a fragment can be sent while it is produced: :meth:`FragmentWriter.header` first,
then each :meth:`FragmentWriter.block` the moment its audio exists, then :meth:`FragmentWriter.trailer`.
A level-1 element (the trailing Tags, or the next document's EBML header) ends the open Cluster.

Connect labels the tracks ``A_AAC`` although they carry 16-bit little-endian PCM at 8 kHz (same dump);
``A_PCM/INT/LIT`` is available so that general-purpose readers decode the audio. Track *numbers* differ
between calls, which is why they are a parameter while the TrackUIDs stay 1 and 2.

Errors that end a GetMedia response mid-stream are a Tags element carrying ``AWS_KINESISVIDEO_ERROR_CODE`` and
``AWS_KINESISVIDEO_ERROR_ID`` (:func:`error_tags`; :func:`error_document` when no document is open yet), as
botocore's ``GetMediaOutput.Payload`` documentation lists them.

>>> info = FragmentInfo("91343852333181452199722691208580038832309429352", 1641312355374, 1641312355374,
...                     contact_id="c-1", instance_id="i-1")
>>> writer = FragmentWriter(info)
>>> data = writer.header() + writer.block(CUSTOMER_TRACK, 0, bytes(1024)) + writer.trailer(0, "token")
>>> data[:4] == EBML_MAGIC
True
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CUSTOMER_TRACK = "AUDIO_FROM_CUSTOMER"
AGENT_TRACK = "AUDIO_TO_CUSTOMER"
CODEC_AAC = "A_AAC"
CODEC_PCM = "A_PCM/INT/LIT"
MIME_TYPE = "audio/L16;rate=8000;channels=1;"
SAMPLE_RATE = 8000
BLOCK_BYTES = 1024
BLOCK_MS = BLOCK_BYTES // 2 * 1000 // SAMPLE_RATE
APP_NAME = "voicebridge KVS emulator"
EBML_MAGIC = bytes.fromhex("1A45DFA3")

# The AudioSpecificConfig a real AAC-LC 8 kHz mono track would carry; Connect's tracks declare one although
# their blocks hold PCM.
_AAC_CODEC_PRIVATE = bytes.fromhex("1588")
_TRACK_UIDS = {CUSTOMER_TRACK: 1, AGENT_TRACK: 2}

_EBML = 0x1A45DFA3
_EBML_VERSION = 0x4286
_EBML_READ_VERSION = 0x42F7
_EBML_MAX_ID_LENGTH = 0x42F2
_EBML_MAX_SIZE_LENGTH = 0x42F3
_DOC_TYPE = 0x4282
_DOC_TYPE_VERSION = 0x4287
_DOC_TYPE_READ_VERSION = 0x4285
_SEGMENT = 0x18538067
_INFO = 0x1549A966
_SEGMENT_UID = 0x73A4
_TIMECODE_SCALE = 0x2AD7B1
_MUXING_APP = 0x4D80
_WRITING_APP = 0x5741
_TRACKS = 0x1654AE6B
_TRACK_ENTRY = 0xAE
_TRACK_NUMBER = 0xD7
_TRACK_UID = 0x73C5
_TRACK_TYPE = 0x83
_NAME = 0x536E
_CODEC_ID = 0x86
_CODEC_PRIVATE = 0x63A2
_AUDIO = 0xE1
_SAMPLING_FREQUENCY = 0xB5
_CHANNELS = 0x9F
_BIT_DEPTH = 0x6264
_TAGS = 0x1254C367
_TAG = 0x7373
_SIMPLE_TAG = 0x67C8
_TAG_NAME = 0x45A3
_TAG_STRING = 0x4487
_CLUSTER = 0x1F43B675
_TIMECODE = 0xE7
_SIMPLE_BLOCK = 0xA3

_TRACK_TYPE_AUDIO = 2
_KEYFRAME = 0x80
_UNKNOWN_SIZE = bytes.fromhex("01FFFFFFFFFFFFFF")
_MAX_VINT_VALUE = 2**56 - 2


class MkvWriteError(ValueError):
    """A value cannot be represented in the fragment being written."""


def _element_id(element_id: int) -> bytes:
    return element_id.to_bytes((element_id.bit_length() + 7) // 8, "big")


def _vint(value: int) -> bytes:
    """Encode ``value`` as an EBML variable-length integer in as few bytes as possible.

    The all-ones pattern of each length means "unknown", so such values take one more byte.
    """
    if not 0 <= value <= _MAX_VINT_VALUE:
        raise MkvWriteError(f"{value} does not fit an EBML variable-length integer")
    length = 1
    while value >= (1 << (7 * length)) - 1:
        length += 1
    return ((1 << (7 * length)) | value).to_bytes(length, "big")


def _element(element_id: int, payload: bytes) -> bytes:
    return _element_id(element_id) + _vint(len(payload)) + payload


def _uint(element_id: int, value: int) -> bytes:
    if value < 0:
        raise MkvWriteError(f"element {element_id:#x} takes an unsigned integer, got {value}")
    return _element(element_id, value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big"))


def _float(element_id: int, value: float) -> bytes:
    return _element(element_id, struct.pack(">d", value))


def _string(element_id: int, value: str) -> bytes:
    return _element(element_id, value.encode("utf-8"))


def _master(element_id: int, children: Iterable[bytes]) -> bytes:
    return _element(element_id, b"".join(children))


def _open_segment() -> bytes:
    """A document's EBML header, then its Segment, of unknown size."""
    header = (
        _uint(_EBML_VERSION, 1),
        _uint(_EBML_READ_VERSION, 1),
        _uint(_EBML_MAX_ID_LENGTH, 4),
        _uint(_EBML_MAX_SIZE_LENGTH, 8),
        _string(_DOC_TYPE, "matroska"),
        _uint(_DOC_TYPE_VERSION, 2),
        _uint(_DOC_TYPE_READ_VERSION, 2),
    )
    return _master(_EBML, header) + _element_id(_SEGMENT) + _UNKNOWN_SIZE


def _simple_tags(tags: Sequence[tuple[str, str]]) -> bytes:
    """One Tags element holding one Tag of SimpleTags; like KVS, it carries no Targets (whole segment)."""
    simple = [_master(_SIMPLE_TAG, (_string(_TAG_NAME, name), _string(_TAG_STRING, value))) for name, value in tags]
    return _master(_TAGS, (_master(_TAG, simple),))


def format_timestamp(epoch_ms: int) -> str:
    """KVS tag timestamps are seconds since the epoch with three decimals (``"1641312355.374"``)."""
    return f"{epoch_ms // 1000}.{epoch_ms % 1000:03d}"


@dataclass(frozen=True)
class FragmentInfo:
    """What one fragment says about itself: identity, clocks, the contact and how its tracks are laid out."""

    fragment_number: str
    producer_ms: int
    server_ms: int
    contact_id: str
    instance_id: str
    customer_track_number: int = 1
    agent_track_number: int = 2
    codec_id: str = CODEC_AAC
    segment_uid: bytes | None = None

    def __post_init__(self) -> None:
        numbers = (self.customer_track_number, self.agent_track_number)
        if numbers[0] == numbers[1] or min(numbers) < 1:
            raise MkvWriteError(f"track numbers must be distinct and positive, got {numbers}")
        if self.segment_uid is not None and len(self.segment_uid) != 16:
            raise MkvWriteError("a SegmentUID is 16 bytes")
        if self.producer_ms < 0 or self.server_ms < 0:
            raise MkvWriteError("timestamps are epoch milliseconds, never negative")

    def track_number(self, track: str) -> int:
        """The TrackNumber used in this fragment for the track named ``track``."""
        if track == CUSTOMER_TRACK:
            return self.customer_track_number
        if track == AGENT_TRACK:
            return self.agent_track_number
        raise MkvWriteError(f"unknown track {track!r}; expected {CUSTOMER_TRACK} or {AGENT_TRACK}")


class FragmentWriter:
    """Writes one fragment in pieces, so a server can send each piece as soon as it exists."""

    def __init__(self, info: FragmentInfo) -> None:
        self.info = info

    def header(self) -> bytes:
        """Everything up to and including the open Cluster's Timecode."""
        info = self.info
        return (
            _open_segment()
            + self._info()
            + self._tracks()
            + _simple_tags(self._fragment_tags())
            + _element_id(_CLUSTER)
            + _UNKNOWN_SIZE
            + _uint(_TIMECODE, info.producer_ms)
        )

    def block(self, track: str, offset_ms: int, pcm: bytes) -> bytes:
        """A keyframe SimpleBlock of ``pcm`` on ``track``, ``offset_ms`` after the Cluster's Timecode."""
        if not -(2**15) <= offset_ms < 2**15:
            raise MkvWriteError(f"block offset {offset_ms} ms does not fit a SimpleBlock's int16 timecode")
        header = _vint(self.info.track_number(track)) + struct.pack(">hB", offset_ms, _KEYFRAME)
        return _element(_SIMPLE_BLOCK, header + pcm)

    def trailer(self, millis_behind_now: int, continuation_token: str) -> bytes:
        """The Tags that close the fragment: Connect's contact tags, one Tags element each, then GetMedia's."""
        connect = b"".join(_simple_tags((tag,)) for tag in self._connect_tags())
        getmedia = [
            ("AWS_KINESISVIDEO_MILLIS_BEHIND_NOW", str(millis_behind_now)),
            ("AWS_KINESISVIDEO_CONTINUATION_TOKEN", continuation_token),
        ]
        return connect + _simple_tags(getmedia)

    def _info(self) -> bytes:
        children = [
            _uint(_TIMECODE_SCALE, 1_000_000),
            _string(_MUXING_APP, APP_NAME),
            _string(_WRITING_APP, APP_NAME),
        ]
        if self.info.segment_uid is not None:
            children.insert(0, _element(_SEGMENT_UID, self.info.segment_uid))
        return _master(_INFO, children)

    def _tracks(self) -> bytes:
        return _master(_TRACKS, (self._track_entry(CUSTOMER_TRACK), self._track_entry(AGENT_TRACK)))

    def _track_entry(self, track: str) -> bytes:
        children = [
            _uint(_TRACK_NUMBER, self.info.track_number(track)),
            _uint(_TRACK_UID, _TRACK_UIDS[track]),
            _uint(_TRACK_TYPE, _TRACK_TYPE_AUDIO),
            _string(_NAME, track),
            _string(_CODEC_ID, self.info.codec_id),
        ]
        if self.info.codec_id == CODEC_AAC:
            children.append(_element(_CODEC_PRIVATE, _AAC_CODEC_PRIVATE))
        children.append(
            _master(
                _AUDIO,
                (_float(_SAMPLING_FREQUENCY, float(SAMPLE_RATE)), _uint(_CHANNELS, 1), _uint(_BIT_DEPTH, 16)),
            )
        )
        return _master(_TRACK_ENTRY, children)

    def _connect_tags(self) -> list[tuple[str, str]]:
        return [
            ("ContactId", self.info.contact_id),
            ("InstanceId", self.info.instance_id),
            ("MimeType", MIME_TYPE),
            (CUSTOMER_TRACK, str(_TRACK_UIDS[CUSTOMER_TRACK])),
            (AGENT_TRACK, str(_TRACK_UIDS[AGENT_TRACK])),
        ]

    def _fragment_tags(self) -> list[tuple[str, str]]:
        return [
            ("AWS_KINESISVIDEO_FRAGMENT_NUMBER", self.info.fragment_number),
            ("AWS_KINESISVIDEO_SERVER_TIMESTAMP", format_timestamp(self.info.server_ms)),
            ("AWS_KINESISVIDEO_PRODUCER_TIMESTAMP", format_timestamp(self.info.producer_ms)),
        ]


def error_tags(error_code: str, error_id: int) -> bytes:
    """The Tags element GetMedia sends before it stops because of an error (e.g. ``5000``, internal error)."""
    return _simple_tags((("AWS_KINESISVIDEO_ERROR_CODE", error_code), ("AWS_KINESISVIDEO_ERROR_ID", str(error_id))))


def error_document(error_code: str, error_id: int) -> bytes:
    """An error reported before any fragment: an EBML header and open Segment around :func:`error_tags`."""
    return _open_segment() + error_tags(error_code, error_id)
