"""Kinesis Video Streams emulator: the control plane and GetMedia over loopback HTTP, fed like Amazon Connect.

This is an emulator for local runs and tests, not AWS. botocore talks to it unmodified, both services being
``rest-json`` (every operation is ``POST /<operation>`` with a JSON body)::

    kinesisvideo         POST /createStream     {"StreamName"}                  -> {"StreamARN"}
                         POST /describeStream   {"StreamName" | "StreamARN"}    -> {"StreamInfo": {...}}
                         POST /listStreams      {"StreamNameCondition"?}        -> {"StreamInfoList": [...]}
                         POST /getDataEndpoint  {"StreamARN" | ..., "APIName"}  -> {"DataEndpoint": own URL}
    kinesis-video-media  POST /getMedia         {"StreamARN" | "StreamName", "StartSelector": {...}}
                                                -> 200, Content-Type video/webm, chunked Matroska payload

Errors are ``{"Message": ...}`` with the exception name in the ``x-amzn-ErrorType`` header, which is where
botocore looks for the code of a rest-json error: ResourceNotFoundException (404), InvalidArgumentException,
ResourceInUseException, ClientLimitExceededException and ConnectionLimitExceededException (400).

Media. Each stream carries Connect-shaped fragments (see :mod:`voicebridge_dev.local.mkv_writer`). A contact is
live between :meth:`EmulatedStream.begin_contact` and :meth:`EmulatedStream.end_contact`: the producer clock
then advances in real time scaled by ``pace`` and emits, every 64 ms of audio, one 1024-byte SimpleBlock per
track, from what was :meth:`EmulatedStream.append`-ed or silence when a track has nothing queued, as Connect
does. ``pace`` 0 means as fast as the appended audio allows: a tick happens as soon as a track holds a whole
block, and a last partial block at the contact's end. Sixteen block pairs (1.024 s) make a fragment.
GetMedia writes and flushes each block the moment its audio exists, and the trailing GetMedia tags when its
fragment ends; once no contact is live and everything was sent, it ends the response after
``idle_close_seconds``.

StartSelector choices, where the documentation leaves room:

- ``FRAGMENT_NUMBER`` starts *at* ``AfterFragmentNumber`` (inclusive; consumers de-duplicate by number). A
  number the stream does not hold ends the payload with the error tags of code 4000 (fragment not found).
- ``CONTINUATION_TOKEN`` resumes *after* the fragment whose trailing tags carried the token.
- ``NOW`` starts with the next fragment to begin (or one begun without audio yet), so the rest of an ongoing
  fragment is not sent.
- ``EARLIEST`` starts with the oldest fragment held (the emulator keeps every fragment).
- ``PRODUCER_TIMESTAMP`` / ``SERVER_TIMESTAMP`` start with the fragment containing ``StartTimestamp``, or
  the first one after it.

At most ``max_get_media_connections`` (3) GetMedia responses are open per stream; one more is refused with
ConnectionLimitExceededException.

Faults, from Python (:meth:`KvsEmulator.inject_fault`) or ``POST /_emulator/faults`` with a JSON body such as
``{"fault": "cut", "after_bytes": 4096, "count": 1}``; each applies to the next ``count`` GetMedia calls
(optionally only on ``"stream"``, a name or ARN):

- ``cut``: close the connection once ``after_bytes`` bytes of payload were sent, mid-fragment.
- ``stall``: send nothing for ``seconds`` once ``after_bytes`` were sent (the client's read times out).
- ``error_tag``: at the first element boundary past ``after_bytes``, send the error Tags
  (``error_code``, ``error_id``) and end the payload.
- ``throttle``: refuse the call with ClientLimitExceededException.

``DELETE /_emulator/faults`` drops pending faults; ``GET /_emulator/streams`` returns per-stream figures.

>>> with KvsEmulator(pace=0) as kvs:
...     arn = kvs.create_stream("connect-demo-contact")
...     start = kvs.stream(arn).load_wavs("caller.wav", None, contact_id="c-1")  # doctest: +SKIP
"""

from __future__ import annotations

import bisect
import contextlib
import json
import logging
import math
import re
import select
import socket
import threading
import time
import uuid
import wave
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from os import PathLike
from pathlib import Path
from typing import Any, Literal, Self, cast, get_args

import numpy as np
import soxr

from voicebridge_dev.local.mkv_writer import (
    AGENT_TRACK,
    BLOCK_BYTES,
    BLOCK_MS,
    CODEC_AAC,
    CUSTOMER_TRACK,
    FragmentInfo,
    FragmentWriter,
    error_document,
    error_tags,
)
from voicebridge_dev.local.service import LocalService

__all__ = [
    "EMULATED_ACCOUNT_ID",
    "EMULATED_INSTANCE_ID",
    "AudioFormatError",
    "ContactStateError",
    "EmulatedStream",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "KvsEmulator",
    "KvsEmulatorError",
    "StreamExistsError",
    "StreamNotFoundError",
]

logger = logging.getLogger(__name__)

EMULATED_ACCOUNT_ID = "111111111111"
EMULATED_INSTANCE_ID = "c8c0e68d-5d8a-4b2e-9a51-6f1f0e6c0000"
MEDIA_CONTENT_TYPE = "video/webm"
SAMPLE_RATE = 8000
BLOCKS_PER_FRAGMENT = 16
ERROR_FRAGMENT_NOT_FOUND = 4000
ERROR_INTERNAL = 5000

FaultKind = Literal["cut", "stall", "error_tag", "throttle"]

_TRACKS = (CUSTOMER_TRACK, AGENT_TRACK)
# Real fragment numbers are 47-digit decimals; this prefix keeps ours the same length and shape.
_FRAGMENT_PREFIX = 91343852333 * 10**36
_STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.\-]{1,256}$")
_POLL_SECONDS = 0.2


class KvsEmulatorError(Exception):
    """Base class of the KVS emulator's errors."""


class StreamNotFoundError(KvsEmulatorError):
    """No stream has that name or ARN."""


class StreamExistsError(KvsEmulatorError):
    """A stream of that name already exists."""


class ContactStateError(KvsEmulatorError):
    """The call does not fit the stream's contact: none is live, or one is still producing."""


class AudioFormatError(KvsEmulatorError):
    """Audio handed to the emulator is not 16-bit PCM (or a WAV file it can turn into 8 kHz mono)."""


class FaultSpecError(KvsEmulatorError):
    """A fault description is not understood."""


class _ApiError(Exception):
    """An error answered to a client in the service's own shape."""

    def __init__(self, code: str, message: str, status: int = HTTPStatus.BAD_REQUEST) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


@dataclass
class Fault:
    """A fault to inject into the next ``count`` GetMedia calls (on ``stream`` only, when given)."""

    kind: FaultKind
    after_bytes: int = 0
    count: int = 1
    seconds: float = 5.0
    error_code: str = "INTERNAL_ERROR"
    error_id: int = ERROR_INTERNAL
    stream: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in get_args(FaultKind):
            raise FaultSpecError(f"unknown fault {self.kind!r}; expected one of {get_args(FaultKind)}")
        if self.after_bytes < 0 or self.count < 1 or self.seconds < 0:
            raise FaultSpecError("after_bytes and seconds must not be negative, count must be at least 1")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        """Build a fault from ``{"fault": kind, "after_bytes": ..., ...}`` as posted to the HTTP API."""
        fields = {"after_bytes": int, "count": int, "seconds": float, "error_code": str, "error_id": int}
        unknown = set(data) - {"fault", "stream", *fields}
        if unknown:
            raise FaultSpecError(f"unknown fault fields {sorted(unknown)}")
        try:
            kwargs: dict[str, Any] = {name: kind(data[name]) for name, kind in fields.items() if name in data}
            stream = data.get("stream")
            return cls(kind=data["fault"], stream=None if stream is None else str(stream), **kwargs)
        except (KeyError, TypeError, ValueError) as exc:
            raise FaultSpecError(f"bad fault description: {exc}") from exc


class _FragmentNumbers:
    """Strictly increasing fragment numbers, shared by all streams of one emulator."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0

    def next(self, epoch_ms: int) -> int:
        with self._lock:
            self._last = max(self._last + 1, _FRAGMENT_PREFIX + epoch_ms * 10**20)
            return self._last


@dataclass
class _Fragment:
    number: int
    info: FragmentInfo
    writer: FragmentWriter
    pieces: list[bytes]
    end_ms: int
    complete: bool = False

    @property
    def server_end_ms(self) -> int:
        return self.info.server_ms + self.end_ms - self.info.producer_ms


@dataclass
class _Session:
    contact_id: str
    instance_id: str
    customer_track_number: int
    agent_track_number: int
    start_ms: int
    started: float
    buffers: dict[str, bytearray] = field(default_factory=lambda: {track: bytearray() for track in _TRACKS})
    ticks: int = 0
    ending: bool = False
    drain: bool = True
    fragment: _Fragment | None = None
    blocks_in_fragment: int = 0


@dataclass(frozen=True)
class _Settings:
    pace: float
    codec_id: str
    blocks_per_fragment: int
    contact_tags_after_cluster: bool
    idle_close_seconds: float
    max_get_media_connections: int


class EmulatedStream:
    """One stream: its fragments, the live contact that produces them, and GetMedia bookkeeping."""

    def __init__(self, name: str, arn: str, creation_ms: int, settings: _Settings, numbers: _FragmentNumbers) -> None:
        self.name = name
        self.arn = arn
        self.creation_ms = creation_ms
        self.media_type = "audio/x-matroska"
        self._settings = settings
        self._numbers = numbers
        self._segment_uid = uuid.uuid4().bytes
        self._cond = threading.Condition()
        self._fragments: list[_Fragment] = []
        self._session: _Session | None = None
        self._producer: threading.Thread | None = None
        self._closed = False
        self._active_get_media = 0
        self._get_media_calls = 0
        self._bytes_sent = 0

    # -- contact lifecycle --

    def begin_contact(self, contact_id: str, instance_id: str, track_numbers: tuple[int, int] = (1, 2)) -> str:
        """Start media streaming for a contact; returns the StartFragmentNumber Connect would report.

        ``track_numbers`` are the TrackNumbers of AUDIO_FROM_CUSTOMER and AUDIO_TO_CUSTOMER in this contact's
        fragments.
        """
        with self._cond:
            if self._closed:
                raise ContactStateError(f"stream {self.name} is closed")
            if self._session is not None:
                raise ContactStateError(
                    f"contact {self._session.contact_id} is live on {self.name}; end it and wait_idle() first"
                )
            # A stream's producer clock never goes back, even after a contact produced faster than real time.
            start_ms = max(_epoch_ms(), self._fragments[-1].end_ms if self._fragments else 0)
            session = _Session(contact_id, instance_id, *track_numbers, start_ms=start_ms, started=time.monotonic())
            fragment = self._open_fragment(session)
            self._session = session
            self._producer = threading.Thread(
                target=self._produce, args=(session,), name=f"kvs-emulator-producer-{self.name}", daemon=True
            )
            self._producer.start()
            self._cond.notify_all()
        logger.info("KVS emulator: contact %s live on %s from fragment %s", contact_id, self.name, fragment.number)
        return str(fragment.number)

    def append(self, track: str, pcm: bytes) -> None:
        """Queue live audio (s16le, 8 kHz, mono) on ``track``; it plays out on the emulator's clock."""
        if track not in _TRACKS:
            raise AudioFormatError(f"unknown track {track!r}; expected {CUSTOMER_TRACK} or {AGENT_TRACK}")
        if len(pcm) % 2:
            raise AudioFormatError("s16le audio has an even number of bytes")
        with self._cond:
            self._live_session().buffers[track] += pcm
            self._cond.notify_all()

    def append_tracks(self, customer: bytes = b"", agent: bytes = b"") -> None:
        """Queue audio on both tracks at once, so no tick falls between the two and shifts one of them."""
        for pcm in (customer, agent):
            if len(pcm) % 2:
                raise AudioFormatError("s16le audio has an even number of bytes")
        with self._cond:
            session = self._live_session()
            session.buffers[CUSTOMER_TRACK] += customer
            session.buffers[AGENT_TRACK] += agent
            self._cond.notify_all()

    def end_contact(self, drain: bool = True) -> None:
        """Stop media streaming; with ``drain`` the queued audio still plays out before the last fragment."""
        with self._cond:
            session = self._live_session()
            session.ending = True
            session.drain = drain
            self._cond.notify_all()

    def load_wavs(
        self,
        customer_wav: str | PathLike[str],
        agent_wav: str | PathLike[str] | None,
        contact_id: str,
        instance_id: str = EMULATED_INSTANCE_ID,
    ) -> str:
        """Play a whole recording as one contact; returns its start fragment number at once.

        The recording is begun, appended and ended here; it then plays out on the emulator's clock.
        """
        customer = _read_wav(customer_wav)
        agent = b"" if agent_wav is None else _read_wav(agent_wav)
        start = self.begin_contact(contact_id, instance_id)
        self.append_tracks(customer, agent)
        self.end_contact()
        return start

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no contact is live (the last one fully produced); False on timeout."""
        with self._cond:
            return self._cond.wait_for(lambda: self._session is None, timeout)

    @property
    def live(self) -> bool:
        with self._cond:
            return self._session is not None

    @property
    def fragment_numbers(self) -> list[str]:
        """Numbers of every fragment produced so far, oldest first."""
        with self._cond:
            return [str(fragment.number) for fragment in self._fragments]

    def stats(self) -> dict[str, Any]:
        with self._cond:
            session = self._session
            return {
                "StreamName": self.name,
                "StreamARN": self.arn,
                "Fragments": len(self._fragments),
                "LiveContactId": None if session is None else session.contact_id,
                "ActiveGetMedia": self._active_get_media,
                "GetMediaCalls": self._get_media_calls,
                "BytesSent": self._bytes_sent,
            }

    def stream_info(self) -> dict[str, Any]:
        return {
            "StreamName": self.name,
            "StreamARN": self.arn,
            "MediaType": self.media_type,
            "Version": "1",
            "Status": "ACTIVE",
            "CreationTime": self.creation_ms / 1000,
            "DataRetentionInHours": 24,
        }

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            producer = self._producer
        if producer is not None:
            producer.join(timeout=2)

    # -- producer --

    def _live_session(self) -> _Session:
        if self._session is None or self._session.ending:
            raise ContactStateError(f"no live contact on {self.name}")
        return self._session

    def _open_fragment(self, session: _Session) -> _Fragment:
        producer_ms = session.start_ms + session.ticks * BLOCK_MS
        number = self._numbers.next(_epoch_ms())
        info = FragmentInfo(
            fragment_number=str(number),
            producer_ms=producer_ms,
            server_ms=max(_epoch_ms(), self._fragments[-1].info.server_ms if self._fragments else 0),
            contact_id=session.contact_id,
            instance_id=session.instance_id,
            customer_track_number=session.customer_track_number,
            agent_track_number=session.agent_track_number,
            codec_id=self._settings.codec_id,
            segment_uid=self._segment_uid,
            contact_tags_after_cluster=self._settings.contact_tags_after_cluster,
        )
        writer = FragmentWriter(info)
        fragment = _Fragment(number, info, writer, [writer.header()], end_ms=producer_ms)
        self._fragments.append(fragment)
        session.fragment = fragment
        session.blocks_in_fragment = 0
        return fragment

    def _produce(self, session: _Session) -> None:
        """Advance the producer clock one 64 ms tick at a time until the contact ends."""
        pace = self._settings.pace
        with self._cond:
            while not self._closed:
                if session.ending and (not session.drain or not any(session.buffers.values())):
                    break
                if pace == 0:
                    # Without a clock, a partial block waits for the rest of its audio (or the contact's end)
                    # rather than being padded with silence in the middle of the recording.
                    if not session.ending and max(map(len, session.buffers.values())) < BLOCK_BYTES:
                        self._cond.wait()
                        continue
                else:
                    due = session.started + (session.ticks + 1) * BLOCK_MS / 1000 / pace
                    delay = due - time.monotonic()
                    if delay > 0:
                        self._cond.wait(delay)
                        continue
                self._tick(session)
            if session.fragment is not None:
                session.fragment.complete = True
            self._session = None
            self._cond.notify_all()
        logger.info("KVS emulator: contact %s ended on %s", session.contact_id, self.name)

    def _tick(self, session: _Session) -> None:
        size = BLOCK_BYTES
        if session.ending:
            # The recording's last block is as long as the longest track still has, not padded to 64 ms.
            size = min(BLOCK_BYTES, max(len(buffer) for buffer in session.buffers.values()))
        fragment = session.fragment if session.fragment is not None else self._open_fragment(session)
        offset_ms = session.blocks_in_fragment * BLOCK_MS
        for track in _TRACKS:
            buffer = session.buffers[track]
            pcm = bytes(buffer[:size]).ljust(size, b"\x00")
            del buffer[:size]
            fragment.pieces.append(fragment.writer.block(track, offset_ms, pcm))
        session.ticks += 1
        session.blocks_in_fragment += 1
        fragment.end_ms = fragment.info.producer_ms + offset_ms + size // 2 * 1000 // SAMPLE_RATE
        if session.blocks_in_fragment >= self._settings.blocks_per_fragment:
            fragment.complete = True
            session.fragment = None
        self._cond.notify_all()

    # -- GetMedia --

    def _start_index(self, selector: Mapping[str, Any]) -> int | None:
        """Index of the first fragment to send, or None when the requested fragment does not exist."""
        kind = selector.get("StartSelectorType")
        fragments = self._fragments
        if kind == "EARLIEST":
            return 0
        if kind == "NOW":
            session = self._session
            if session is not None and session.fragment is not None and not session.fragment.pieces[1:]:
                return len(fragments) - 1
            return len(fragments)
        if kind == "FRAGMENT_NUMBER":
            return self._index_of(_fragment_number(selector, "AfterFragmentNumber"))
        if kind == "CONTINUATION_TOKEN":
            index = self._index_of(_fragment_number(selector, "ContinuationToken"))
            return None if index is None else index + 1
        if kind in ("PRODUCER_TIMESTAMP", "SERVER_TIMESTAMP"):
            return self._index_at(_timestamp_ms(selector), producer=kind == "PRODUCER_TIMESTAMP")
        raise _ApiError("InvalidArgumentException", f"StartSelectorType {kind!r} is not valid")

    def _index_at(self, at_ms: int, producer: bool) -> int:
        """The fragment whose time span holds ``at_ms``, else the first one after it."""

        def start(fragment: _Fragment) -> int:
            return fragment.info.producer_ms if producer else fragment.info.server_ms

        fragments = self._fragments
        index = bisect.bisect_right(fragments, at_ms, key=start) - 1
        if index < 0:
            return 0
        # Fragments ingested faster than real time share a server timestamp: take the first of them.
        while index > 0 and start(fragments[index - 1]) == start(fragments[index]):
            index -= 1
        fragment = fragments[index]
        end = fragment.end_ms if producer else fragment.server_end_ms
        return index + 1 if fragment.complete and end <= at_ms else index

    def _index_of(self, number: int) -> int | None:
        index = bisect.bisect_left(self._fragments, number, key=lambda fragment: fragment.number)
        if index < len(self._fragments) and self._fragments[index].number == number:
            return index
        return None

    def _millis_behind_now(self, fragment: _Fragment) -> int:
        return max(0, self._fragments[-1].end_ms - fragment.end_ms)

    def _next_piece(self, position: list[int]) -> bytes | None:
        """The next bytes for a reader at ``position`` ([fragment index, piece index]), if any exist yet."""
        fragment_index, piece_index = position
        if fragment_index >= len(self._fragments):
            return None
        fragment = self._fragments[fragment_index]
        if piece_index < len(fragment.pieces):
            position[1] += 1
            return fragment.pieces[piece_index]
        if fragment.complete:
            position[0], position[1] = fragment_index + 1, 0
            return fragment.writer.trailer(self._millis_behind_now(fragment), str(fragment.number))
        return None


def _epoch_ms() -> int:
    return time.time_ns() // 1_000_000


def _fragment_number(selector: Mapping[str, Any], key: str) -> int:
    value = selector.get(key)
    if not isinstance(value, str) or not value.isdigit():
        raise _ApiError("InvalidArgumentException", f"{key} must be a fragment number, got {value!r}")
    return int(value)


def _timestamp_ms(selector: Mapping[str, Any]) -> int:
    value = selector.get("StartTimestamp")
    try:
        seconds = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise _ApiError("InvalidArgumentException", f"StartTimestamp must be epoch seconds, got {value!r}") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise _ApiError("InvalidArgumentException", f"StartTimestamp {value!r} is out of range")
    return round(seconds * 1000)


def _read_wav(path: str | PathLike[str]) -> bytes:
    """A PCM WAV file as s16le, 8 kHz, mono (channels averaged, other rates resampled)."""
    try:
        with wave.open(str(Path(path)), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as exc:
        raise AudioFormatError(f"{path}: not a PCM WAV file ({exc})") from exc
    if width != 2:
        raise AudioFormatError(f"{path}: {8 * width}-bit samples; the emulator reads 16-bit PCM WAV")
    if channels == 1 and rate == SAMPLE_RATE:
        return frames
    samples = np.frombuffer(frames, dtype="<i2").reshape(-1, channels)
    mono = samples.astype(np.float32).mean(axis=1) / 32768.0
    if rate != SAMPLE_RATE:
        mono = np.asarray(soxr.resample(mono, rate, SAMPLE_RATE), dtype=np.float32)
    return cast(bytes, (np.clip(mono, -1.0, 32767 / 32768) * 32768).astype("<i2").tobytes())


class KvsEmulator(LocalService):
    """Kinesis Video Streams emulator (control plane + GetMedia) on a loopback HTTP port.

    >>> with KvsEmulator(pace=0) as kvs:  # doctest: +SKIP
    ...     arn = kvs.create_stream("connect-demo")
    ...     control = boto3.client("kinesisvideo", endpoint_url=kvs.url)
    ...     control.get_data_endpoint(StreamARN=arn, APIName="GET_MEDIA")["DataEndpoint"] == kvs.url
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        region: str = "us-east-1",
        pace: float = 1.0,
        *,
        codec_id: str = CODEC_AAC,
        blocks_per_fragment: int = BLOCKS_PER_FRAGMENT,
        contact_tags_after_cluster: bool = False,
        idle_close_seconds: float = 0.5,
        max_get_media_connections: int = 3,
    ) -> None:
        if pace < 0 or not math.isfinite(pace):
            raise ValueError(f"pace must be a finite number >= 0, got {pace}")
        if blocks_per_fragment < 1:
            raise ValueError("a fragment holds at least one block")
        self.host = host
        self.region = region
        self._requested_port = port
        self._settings = _Settings(
            pace=pace,
            codec_id=codec_id,
            blocks_per_fragment=blocks_per_fragment,
            contact_tags_after_cluster=contact_tags_after_cluster,
            idle_close_seconds=idle_close_seconds,
            max_get_media_connections=max_get_media_connections,
        )
        self._numbers = _FragmentNumbers()
        self._lock = threading.Lock()
        self._streams: dict[str, EmulatedStream] = {}
        self._faults: list[Fault] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # -- lifecycle --

    def start(self) -> Self:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server((self.host, self._requested_port), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="kvs-emulator", daemon=True
        )
        self._thread.start()
        logger.info("KVS emulator listening on %s", self.url)
        return self

    def stop(self) -> None:
        """Stop serving; open GetMedia responses end and live contacts stop producing, for good."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()
        server.shutdown()
        server.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None
        logger.info("KVS emulator stopped")

    @property
    def url(self) -> str:
        if self._server is None:
            raise KvsEmulatorError("the KVS emulator is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def pace(self) -> float:
        return self._settings.pace

    # -- streams --

    def create_stream(self, name: str) -> str:
        """Create a stream; returns its ARN, shaped like the ones Connect creates."""
        if not _STREAM_NAME.match(name):
            raise ValueError(f"invalid stream name {name!r}")
        with self._lock:
            if any(stream.name == name for stream in self._streams.values()):
                raise StreamExistsError(f"stream {name} already exists")
            creation_ms = _epoch_ms()
            arn = f"arn:aws:kinesisvideo:{self.region}:{EMULATED_ACCOUNT_ID}:stream/{name}/{creation_ms}"
            self._streams[arn] = EmulatedStream(name, arn, creation_ms, self._settings, self._numbers)
        logger.info("KVS emulator: created stream %s", arn)
        return arn

    def stream(self, name_or_arn: str) -> EmulatedStream:
        """The stream with that ARN (or name)."""
        with self._lock:
            found = self._streams.get(name_or_arn) or next(
                (stream for stream in self._streams.values() if stream.name == name_or_arn), None
            )
        if found is None:
            raise StreamNotFoundError(f"no stream {name_or_arn}")
        return found

    @property
    def streams(self) -> list[EmulatedStream]:
        with self._lock:
            return list(self._streams.values())

    # -- faults --

    def inject_fault(self, fault: Fault) -> None:
        """Arm ``fault`` for the next ``fault.count`` GetMedia calls."""
        with self._lock:
            self._faults.append(replace(fault))
        logger.info("KVS emulator: fault armed %s", fault)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    @property
    def pending_faults(self) -> list[Fault]:
        with self._lock:
            return [replace(fault) for fault in self._faults]

    def _take_faults(self, stream: EmulatedStream) -> list[Fault]:
        """The faults this GetMedia call suffers; each use counts against the fault's ``count``."""
        taken: list[Fault] = []
        with self._lock:
            for fault in list(self._faults):
                if fault.stream not in (None, stream.name, stream.arn):
                    continue
                taken.append(fault)
                fault.count -= 1
                if fault.count == 0:
                    self._faults.remove(fault)
        return sorted(taken, key=lambda fault: fault.after_bytes)

    # -- request handling (called from the HTTP handler) --

    def _resolve(self, body: Mapping[str, Any]) -> EmulatedStream:
        arn, name = body.get("StreamARN"), body.get("StreamName")
        if arn is None and name is None:
            raise _ApiError("InvalidArgumentException", "StreamName or StreamARN is required")
        try:
            stream = self.stream(str(arn if arn is not None else name))
        except StreamNotFoundError:
            raise _ApiError(
                "ResourceNotFoundException", f"The stream {arn or name} does not exist.", HTTPStatus.NOT_FOUND
            ) from None
        if arn is not None and name is not None and stream.name != name:
            raise _ApiError("InvalidArgumentException", "StreamName and StreamARN name different streams")
        return stream

    def _control(self, operation: str, body: Mapping[str, Any]) -> dict[str, Any]:
        if operation == "createStream":
            name = body.get("StreamName")
            if not isinstance(name, str) or not _STREAM_NAME.match(name):
                raise _ApiError("InvalidArgumentException", f"invalid StreamName {name!r}")
            try:
                return {"StreamARN": self.create_stream(name)}
            except StreamExistsError as exc:
                raise _ApiError("ResourceInUseException", str(exc)) from None
        if operation == "describeStream":
            return {"StreamInfo": self._resolve(body).stream_info()}
        if operation == "getDataEndpoint":
            api = body.get("APIName")
            if api != "GET_MEDIA":
                raise _ApiError("InvalidArgumentException", f"the KVS emulator serves GET_MEDIA only, not {api!r}")
            self._resolve(body)
            return {"DataEndpoint": self.url}
        if operation == "listStreams":
            condition = body.get("StreamNameCondition") or {}
            prefix = condition.get("ComparisonValue", "") if isinstance(condition, dict) else ""
            infos = [s.stream_info() for s in self.streams if s.name.startswith(str(prefix))]
            return {"StreamInfoList": infos}
        raise _ApiError("UnknownOperationException", f"unknown operation {operation}", HTTPStatus.NOT_FOUND)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[_Handler], emulator: KvsEmulator) -> None:
        self.emulator = emulator
        super().__init__(address, handler)


class _ConnectionLost(Exception):
    """The client went away (or a cut fault closed the connection)."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    _CONTROL = frozenset({"createStream", "describeStream", "getDataEndpoint", "listStreams"})

    @property
    def emulator(self) -> KvsEmulator:
        return self.server.emulator

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("KVS emulator: " + format, *args)

    # -- routing --

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            body = self._read_json()
            if path == "/getMedia":
                self._get_media(body)
            elif path == "/_emulator/faults":
                self.emulator.inject_fault(Fault.from_json(body))
                self._send_json({"PendingFaults": [asdict(f) for f in self.emulator.pending_faults]})
            elif path.lstrip("/") in self._CONTROL:
                self._send_json(self.emulator._control(path.lstrip("/"), body))
            else:
                raise _ApiError("UnknownOperationException", f"no operation at {path}", HTTPStatus.NOT_FOUND)
        except _ApiError as exc:
            self._send_error(exc)
        except FaultSpecError as exc:
            self._send_error(_ApiError("InvalidArgumentException", str(exc)))

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] == "/_emulator/streams":
            self._send_json({"Streams": [stream.stats() for stream in self.emulator.streams]})
        else:
            self._send_error(_ApiError("UnknownOperationException", "not found", HTTPStatus.NOT_FOUND))

    def do_DELETE(self) -> None:
        if self.path.split("?", 1)[0] == "/_emulator/faults":
            self.emulator.clear_faults()
            self._send_json({"PendingFaults": []})
        else:
            self._send_error(_ApiError("UnknownOperationException", "not found", HTTPStatus.NOT_FOUND))

    def _read_json(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return {}
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise _ApiError("SerializationException", f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise _ApiError("SerializationException", "body must be a JSON object")
        return body

    def _send_json(self, payload: Mapping[str, Any], status: int = HTTPStatus.OK, code: str | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        if code is not None:
            self.send_header("x-amzn-ErrorType", f"{code}:")
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: _ApiError) -> None:
        logger.info("KVS emulator: %s %s: %s", self.path, error.code, error.message)
        self._send_json({"Message": error.message}, error.status, error.code)

    # -- GetMedia --

    def _get_media(self, body: Mapping[str, Any]) -> None:
        emulator = self.emulator
        stream = emulator._resolve(body)
        selector = body.get("StartSelector")
        if not isinstance(selector, dict):
            raise _ApiError("InvalidArgumentException", "StartSelector is required")
        with stream._cond:
            start = stream._start_index(selector)
        faults = emulator._take_faults(stream)
        if any(fault.kind == "throttle" for fault in faults):
            raise _ApiError("ClientLimitExceededException", "The KVS emulator throttled this GetMedia call (fault).")
        with stream._cond:
            if stream._active_get_media >= stream._settings.max_get_media_connections:
                raise _ApiError(
                    "ConnectionLimitExceededException",
                    f"{stream._active_get_media} GetMedia connections are already open on {stream.name}",
                )
            stream._active_get_media += 1
            stream._get_media_calls += 1
        try:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", MEDIA_CONTENT_TYPE)
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
            self.end_headers()
            self.wfile.flush()
            _MediaResponse(self, stream, faults).run(start)
        except (_ConnectionLost, OSError):
            self.close_connection = True
        finally:
            with stream._cond:
                stream._active_get_media -= 1
                stream._cond.notify_all()


class _MediaResponse:
    """One GetMedia payload being written: fragments as they are produced, with this call's faults applied."""

    def __init__(self, handler: _Handler, stream: EmulatedStream, faults: list[Fault]) -> None:
        self.handler = handler
        self.stream = stream
        self.faults = [fault for fault in faults if fault.kind != "throttle"]
        self.sent = 0
        self.document_open = False
        self.stopping = handler.emulator._stopping

    def run(self, start: int | None) -> None:
        if start is None:
            self._write(error_document("Requested fragment is not found", ERROR_FRAGMENT_NOT_FOUND))
            self._finish()
            return
        position = [start, 0]
        while True:
            if self._error_tag_due():
                return
            piece = self._wait_for_piece(position)
            if piece is None:
                self._finish()
                return
            self._send_piece(piece)
            self.document_open = True

    def _wait_for_piece(self, position: list[int]) -> bytes | None:
        """Next piece for this reader; None when the stream has been idle for ``idle_close_seconds``."""
        stream = self.stream
        idle_since: float | None = None
        with stream._cond:
            while True:
                if self.stopping.is_set() or stream._closed:
                    raise _ConnectionLost("KVS emulator stopping")
                piece = stream._next_piece(position)
                if piece is not None:
                    return piece
                if stream._session is None:
                    idle_since = time.monotonic() if idle_since is None else idle_since
                    remaining = idle_since + stream._settings.idle_close_seconds - time.monotonic()
                    if remaining <= 0:
                        return None
                    stream._cond.wait(min(remaining, _POLL_SECONDS))
                else:
                    idle_since = None
                    stream._cond.wait(_POLL_SECONDS)
                if self._client_gone():
                    raise _ConnectionLost("client closed the GetMedia connection")

    def _error_tag_due(self) -> bool:
        for fault in self.faults:
            if fault.kind == "error_tag" and self.sent >= fault.after_bytes:
                tags = error_tags if self.document_open else error_document
                self._write(tags(fault.error_code, fault.error_id))
                self._finish()
                logger.info("KVS emulator: error tag %s sent on %s (fault)", fault.error_id, self.stream.name)
                return True
        return False

    def _send_piece(self, piece: bytes) -> None:
        """Write ``piece``, splitting it where a cut or stall fault falls inside it."""
        for fault in list(self.faults):
            if fault.kind not in ("cut", "stall") or self.sent + len(piece) < fault.after_bytes:
                continue
            head = fault.after_bytes - self.sent
            self._write(piece[:head])
            piece = piece[head:]
            self.faults.remove(fault)
            if fault.kind == "cut":
                self._abort()
            logger.info(
                "KVS emulator: stalling %.1f s after %d bytes on %s (fault)",
                fault.seconds,
                self.sent,
                self.stream.name,
            )
            if self.stopping.wait(fault.seconds):
                raise _ConnectionLost("KVS emulator stopping")
        self._write(piece)

    def _write(self, data: bytes) -> None:
        if not data:
            return
        wfile = self.handler.wfile
        wfile.write(b"%x\r\n%b\r\n" % (len(data), data))
        wfile.flush()
        self.sent += len(data)
        with self.stream._cond:
            self.stream._bytes_sent += len(data)

    def _finish(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()

    def _abort(self) -> None:
        """Close the connection without the final chunk, so the client sees a broken payload."""
        logger.info("KVS emulator: connection cut after %d bytes on %s (fault)", self.sent, self.stream.name)
        with contextlib.suppress(OSError):
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        raise _ConnectionLost("cut by fault")

    def _client_gone(self) -> bool:
        connection = self.handler.connection
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
