"""An emulated stream: the contact that produces its fragments in real time, as Amazon Connect does, and the
bookkeeping of the GetMedia calls that read them.

A contact is live between :meth:`EmulatedStream.begin_contact` and :meth:`EmulatedStream.end_contact`: the
producer clock then advances in real time scaled by ``pace`` and emits, every 64 ms of audio, one 1024-byte
SimpleBlock per track, from what was :meth:`EmulatedStream.append`-ed or silence when a track has nothing queued,
as Connect does. ``pace`` 0 means as fast as the appended audio allows: a tick happens as soon as a track holds a
whole block, and a last partial block at the contact's end. Sixteen block pairs (1.024 s) make a fragment
(:mod:`voicebridge_dev.local.kvs.matroska` writes them). A GetMedia reader gets each block the moment its audio
exists, and the trailing tags when its fragment ends.

Where a contact starts, and what Connect tells the flow of it:

- :meth:`EmulatedStream.begin_contact` answers a :class:`ContactStart`: ``fragment_number`` is Connect's
  ``StartFragmentNumber`` ("the fragment in which the customer audio stream started") and ``timestamp_ms`` its
  ``StartTimestamp`` ("the time at which the customer audio stream started"; Connect admin guide,
  media-streaming-attributes), which the Lambda event carries as epoch milliseconds in a string
  (``"1571360125131"`` in N. Neudeck's example event). No source says which clock that time is on; the
  emulator gives the producer time of the contact's first fragment, the clock a ``PRODUCER_TIMESTAMP``
  selector reads.
- Connect's producer timestamps are its wall clock. Streams are reused across contacts, and the next contact's
  audio starts when that call reached its streaming block, seconds after the previous call's audio ended. So a
  contact starts at ``max(now, previous contact's end + contact_gap_ms)``: the gap (3 s by default: the call
  ringing, the flow starting) keeps a stream's producer clock increasing, with a gap between contacts, even when
  the previous contact was produced faster than real time. No source gives the gap's length.

GetMedia's limits, from AWS's GetMedia reference (https://docs.aws.amazon.com/kinesisvideostreams/latest/dg/
API_dataplane_GetMedia.html) and botocore's ``kinesis-video-media`` model (errors, HTTP 400):

- "A client can call GetMedia up to five times per second per stream": a call past
  ``max_get_media_calls_per_second`` (5) within the last second is refused with ClientLimitExceededException.
  The reference does not say whether refused calls count; the emulator counts the calls it served, so a client
  that backs off gets through.
- "If you attempt more than three concurrent GetMedia connections, Kinesis Video Streams throttles the latest
  connections with a ConnectionLimitExceededException error": at most ``max_get_media_connections`` (3) open
  responses per stream.
- "The GetMedia HTTP response status code will be returned immediately, but the reading of the HTTP response
  payload will timeout after 3 seconds if there are no ingested fragments available for playback": once no
  contact is live and a reader has everything, its payload ends after ``idle_close_seconds`` (3 s). The
  reference does not say how it ends; the emulator ends the chunked body cleanly. While a contact is live
  Connect produces a fragment about every second, so a live stream never idles (at ``pace`` 0 the emulator has
  no clock and waits for the next audio instead).
"""

from __future__ import annotations

import collections
import logging
import math
import re
import threading
import time
import uuid
import wave
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np
import soxr

from voicebridge_dev.local.kvs.errors import ConnectionLost, ContactStateError, UnplayableAudioError
from voicebridge_dev.local.kvs.fragments import (
    FRAGMENT_NUMBER_SELECTORS,
    Fragment,
    FragmentNumbers,
    FragmentNumberSelector,
    start_index,
)
from voicebridge_dev.local.kvs.matroska import (
    AGENT_TRACK,
    BLOCK_BYTES,
    BLOCK_MS,
    CUSTOMER_TRACK,
    SAMPLE_RATE,
    FragmentInfo,
    FragmentWriter,
)
from voicebridge_dev.local.service import ApiError

logger = logging.getLogger(__name__)

EMULATED_INSTANCE_ID = "c8c0e68d-5d8a-4b2e-9a51-6f1f0e6c0000"
STREAM_NAME = re.compile(r"^[a-zA-Z0-9_.\-]{1,256}$")
_TRACKS = (CUSTOMER_TRACK, AGENT_TRACK)
_POLL_SECONDS = 0.2


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
    fragment: Fragment | None = None
    blocks_in_fragment: int = 0


@dataclass(frozen=True)
class Settings:
    """What every stream of one emulator shares: pacing, fragment layout, start selectors and GetMedia limits."""

    pace: float
    codec_id: str
    blocks_per_fragment: int
    contact_gap_ms: int
    fragment_number_selector: FragmentNumberSelector
    idle_close_seconds: float
    max_get_media_connections: int
    max_get_media_calls_per_second: int

    def __post_init__(self) -> None:
        """ValueError for a value out of range, so no emulator ever holds one."""
        if self.pace < 0 or not math.isfinite(self.pace):
            raise ValueError(f"pace must be a finite number >= 0, got {self.pace}")
        if self.blocks_per_fragment < 1:
            raise ValueError("a fragment holds at least one block")
        if self.contact_gap_ms < 0:
            raise ValueError(f"contact_gap_ms must not be negative, got {self.contact_gap_ms}")
        if self.fragment_number_selector not in FRAGMENT_NUMBER_SELECTORS:
            raise ValueError(
                f"fragment_number_selector must be one of {FRAGMENT_NUMBER_SELECTORS}, "
                f"got {self.fragment_number_selector!r}"
            )
        if self.idle_close_seconds <= 0 or not math.isfinite(self.idle_close_seconds):
            raise ValueError(f"idle_close_seconds must be a positive number, got {self.idle_close_seconds}")
        if self.max_get_media_connections < 1 or self.max_get_media_calls_per_second < 1:
            raise ValueError("GetMedia's limits allow at least one call and one connection")


@dataclass(frozen=True)
class ContactStart:
    """Where a contact's audio starts, as Connect tells a flow: ``StartFragmentNumber`` and ``StartTimestamp``.

    ``timestamp_ms`` is the producer time of the contact's first fragment, in epoch milliseconds (the event
    carries it as a string: :attr:`start_timestamp`).
    """

    fragment_number: str
    timestamp_ms: int

    @property
    def start_timestamp(self) -> str:
        """``StartTimestamp`` as the Lambda event carries it."""
        return str(self.timestamp_ms)


class ContactStream(Protocol):
    """A stream as Connect's media streaming feeds it: a contact begun, its audio queued, the contact ended.
    :class:`EmulatedStream` is one; :class:`~voicebridge_dev.local.processes.RemoteStream` is one in another
    process."""

    arn: str

    def begin_contact(self, contact_id: str, instance_id: str, *, start_ms: int | None = None) -> ContactStart: ...

    def append_tracks(self, customer: bytes = b"", agent: bytes = b"") -> None: ...

    def end_contact(self, drain: bool = True) -> None: ...

    def wait_idle(self, timeout: float | None = None) -> bool: ...

    @property
    def last_fragment_number(self) -> str | None: ...


class StreamHost(Protocol):
    """Where Connect creates a contact's stream and finds it again: the KVS emulator, here or in another process."""

    def create_stream(self, name: str) -> str: ...

    def stream(self, name_or_arn: str) -> ContactStream: ...


class EmulatedStream:
    """One stream: its fragments, the live contact that produces them, and GetMedia bookkeeping."""

    def __init__(
        self, name: str, arn: str, creation_ms: int, settings: Callable[[], Settings], numbers: FragmentNumbers
    ) -> None:
        self.name = name
        self.arn = arn
        self.creation_ms = creation_ms
        self._settings = settings
        self._numbers = numbers
        self._segment_uid = uuid.uuid4().bytes
        self._cond = threading.Condition()
        self._fragments: list[Fragment] = []
        self._session: _Session | None = None
        self._producer: threading.Thread | None = None
        self._closed = False
        self._active_get_media = 0
        self._get_media_calls = 0
        self._recent_calls: collections.deque[float] = collections.deque()
        self._bytes_sent = 0

    # -- contact lifecycle --

    def begin_contact(
        self,
        contact_id: str,
        instance_id: str,
        track_numbers: tuple[int, int] = (1, 2),
        *,
        start_ms: int | None = None,
    ) -> ContactStart:
        """Start media streaming for a contact; returns its start as Connect reports it to the flow.

        ``track_numbers`` are the TrackNumbers of AUDIO_FROM_CUSTOMER and AUDIO_TO_CUSTOMER in this contact's
        fragments. ``start_ms`` is the producer time (epoch ms) of the contact's first audio, as the producer (Connect,
        here the simulator) stamps it: the moment of the call its first sample was heard; now when not given.
        """
        with self._cond:
            if self._closed:
                raise ContactStateError(f"stream {self.name} is closed")
            if self._session is not None:
                raise ContactStateError(
                    f"contact {self._session.contact_id} is live on {self.name}; end it and wait_idle() first"
                )
            # A stream's producer clock never goes back, even after a contact produced faster than real time,
            # and the next call's audio begins a while after the last one's ended.
            start_ms = epoch_ms() if start_ms is None else start_ms
            if self._fragments:
                start_ms = max(start_ms, self._fragments[-1].end_ms + self._settings().contact_gap_ms)
            session = _Session(contact_id, instance_id, *track_numbers, start_ms=start_ms, started=time.monotonic())
            fragment = self._open_fragment(session)
            self._session = session
            self._producer = threading.Thread(
                target=self._produce, args=(session,), name=f"kvs-emulator-producer-{self.name}", daemon=True
            )
            self._producer.start()
            self._cond.notify_all()
        logger.info("KVS emulator: contact %s live on %s from fragment %s", contact_id, self.name, fragment.number)
        return ContactStart(str(fragment.number), fragment.info.producer_ms)

    def append(self, track: str, pcm: bytes) -> None:
        """Queue live audio (s16le, 8 kHz, mono) on ``track``; it plays out on the emulator's clock."""
        if track not in _TRACKS:
            raise UnplayableAudioError(f"unknown track {track!r}; expected {CUSTOMER_TRACK} or {AGENT_TRACK}")
        self._queue({track: pcm})

    def append_tracks(self, customer: bytes = b"", agent: bytes = b"") -> None:
        """Queue audio on both tracks at once, so no tick falls between the two and shifts one of them."""
        self._queue({CUSTOMER_TRACK: customer, AGENT_TRACK: agent})

    def _queue(self, audio: Mapping[str, bytes]) -> None:
        if any(len(pcm) % 2 for pcm in audio.values()):
            raise UnplayableAudioError("s16le audio has an even number of bytes")
        with self._cond:
            session = self._live_session()
            for track, pcm in audio.items():
                session.buffers[track] += pcm
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
    ) -> ContactStart:
        """Play a whole recording as one contact; returns its start at once.

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
    def fragment_numbers(self) -> list[str]:
        """Numbers of every fragment produced so far, oldest first."""
        with self._cond:
            return [str(fragment.number) for fragment in self._fragments]

    @property
    def last_fragment_number(self) -> str | None:
        """The number of the newest fragment, None before the first."""
        with self._cond:
            return str(self._fragments[-1].number) if self._fragments else None

    def stats(self) -> dict[str, Any]:
        with self._cond:
            session = self._session
            return {
                "StreamName": self.name,
                "StreamARN": self.arn,
                "Fragments": len(self._fragments),
                "LastFragmentNumber": str(self._fragments[-1].number) if self._fragments else None,
                "LiveContactId": None if session is None else session.contact_id,
                "ActiveGetMedia": self._active_get_media,
                "GetMediaCalls": self._get_media_calls,
                "BytesSent": self._bytes_sent,
            }

    def stream_info(self) -> dict[str, Any]:
        return {
            "StreamName": self.name,
            "StreamARN": self.arn,
            "MediaType": "audio/x-matroska",
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

    def _open_fragment(self, session: _Session) -> Fragment:
        producer_ms = session.start_ms + session.ticks * BLOCK_MS
        number = self._numbers.next(epoch_ms())
        info = FragmentInfo(
            fragment_number=str(number),
            producer_ms=producer_ms,
            server_ms=max(epoch_ms(), self._fragments[-1].info.server_ms if self._fragments else 0),
            contact_id=session.contact_id,
            instance_id=session.instance_id,
            customer_track_number=session.customer_track_number,
            agent_track_number=session.agent_track_number,
            codec_id=self._settings().codec_id,
            segment_uid=self._segment_uid,
        )
        writer = FragmentWriter(info)
        fragment = Fragment(number, info, writer, [writer.header()], end_ms=producer_ms)
        self._fragments.append(fragment)
        session.fragment = fragment
        session.blocks_in_fragment = 0
        return fragment

    def _produce(self, session: _Session) -> None:
        """Advance the producer clock one 64 ms tick at a time until the contact ends."""
        pace = self._settings().pace
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
        if session.blocks_in_fragment >= self._settings().blocks_per_fragment:
            fragment.complete = True
            session.fragment = None
        self._cond.notify_all()

    # -- GetMedia --

    def start_index(self, selector: Mapping[str, Any]) -> int | None:
        """Index of the first fragment a GetMedia with ``selector`` sends, None when that fragment does not exist."""
        with self._cond:
            session = self._session
            producing = None if session is None else session.fragment
            return start_index(self._fragments, producing, selector, self._settings().fragment_number_selector)

    def open_get_media(self) -> None:
        """Count a GetMedia response opening; refused past the calls per second or the open connections allowed."""
        settings = self._settings()
        with self._cond:
            now = time.monotonic()
            while self._recent_calls and now - self._recent_calls[0] >= 1.0:
                self._recent_calls.popleft()
            if len(self._recent_calls) >= settings.max_get_media_calls_per_second:
                raise ApiError(
                    400,
                    "ClientLimitExceededException",
                    f"GetMedia was called {len(self._recent_calls)} times in the last second on {self.name}; "
                    f"the limit is {settings.max_get_media_calls_per_second} per second per stream",
                )
            if self._active_get_media >= settings.max_get_media_connections:
                raise ApiError(
                    400,
                    "ConnectionLimitExceededException",
                    f"{self._active_get_media} GetMedia connections are already open on {self.name}",
                )
            self._recent_calls.append(now)
            self._active_get_media += 1
            self._get_media_calls += 1

    def close_get_media(self) -> None:
        with self._cond:
            self._active_get_media -= 1
            self._cond.notify_all()

    def count_sent(self, size: int) -> None:
        with self._cond:
            self._bytes_sent += size

    def wait_for_piece(
        self, position: list[int], stopping: threading.Event, client_gone: Callable[[], bool]
    ) -> bytes | None:
        """Next piece for a reader at ``position``; None when the stream has been idle for ``idle_close_seconds``.

        Raises :class:`~voicebridge_dev.local.kvs.errors.ConnectionLost` once the emulator stops, the stream
        closes or ``client_gone`` says the reader went away.
        """
        idle_since: float | None = None
        with self._cond:
            while True:
                if stopping.is_set() or self._closed:
                    raise ConnectionLost("KVS emulator stopping")
                piece = self._next_piece(position)
                if piece is not None:
                    return piece
                if self._session is None:
                    idle_since = time.monotonic() if idle_since is None else idle_since
                    remaining = idle_since + self._settings().idle_close_seconds - time.monotonic()
                    if remaining <= 0:
                        return None
                    self._cond.wait(min(remaining, _POLL_SECONDS))
                else:
                    idle_since = None
                    self._cond.wait(_POLL_SECONDS)
                if client_gone():
                    raise ConnectionLost("client closed the GetMedia connection")

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
            millis_behind_now = max(0, self._fragments[-1].end_ms - fragment.end_ms)
            return fragment.writer.trailer(millis_behind_now, str(fragment.number))
        return None


def epoch_ms() -> int:
    """Now, in milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def _read_wav(path: str | PathLike[str]) -> bytes:
    """A PCM WAV file as s16le, 8 kHz, mono (channels averaged, other rates resampled)."""
    try:
        with wave.open(str(Path(path)), "rb") as wav:
            channels, width, rate = wav.getnchannels(), wav.getsampwidth(), wav.getframerate()
            frames = wav.readframes(wav.getnframes())
    except (wave.Error, EOFError) as exc:
        raise UnplayableAudioError(f"{path}: not a PCM WAV file ({exc})") from exc
    if width != 2:
        raise UnplayableAudioError(f"{path}: {8 * width}-bit samples; the emulator reads 16-bit PCM WAV")
    if channels == 1 and rate == SAMPLE_RATE:
        return frames
    samples = np.frombuffer(frames, dtype="<i2").reshape(-1, channels)
    mono = samples.astype(np.float32).mean(axis=1) / 32768.0
    if rate != SAMPLE_RATE:
        mono = np.asarray(soxr.resample(mono, rate, SAMPLE_RATE), dtype=np.float32)
    return cast(bytes, (np.clip(mono, -1.0, 32767 / 32768) * 32768).astype("<i2").tobytes())
