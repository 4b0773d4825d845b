"""Ink (Cartesia speech-to-text) WebSocket EMULATOR for the local cloud.

This is an emulator, not a speech model. It speaks Ink's two realtime WebSocket protocols closely enough for
the official ``cartesia`` SDK to drive it unmodified, detects turns from signal energy, and transcribes with
clips registered alongside their audio, with an optional embedded recogniser (PocketSphinx), or with
deterministic stand-ins such as ``[speech 1.23 s]``.

Turn detection — ``GET /stt/turns/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=8000``::

    client → binary audio frames; text {"type": "config", "turn": {...}} | {"type": "close"}
    server → connected, then per turn: turn.start → turn.update* → (turn.eager_end → turn.resume)* → turn.end;
             error {message, status_code, title, error_code} at any time

Manual finalize — ``GET /stt/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=8000``::

    client → binary audio frames; text "finalize" | "close" (or the older "done")
    server → transcript {text (a delta), is_final, duration, language, words}* → flush_done per finalize;
             on close: the remaining finals → done → the socket closes

Every event carries ``request_id``. Event fields are exactly those of the SDK's ``cartesia.types.stt`` models.
Auth is ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``; the API version arrives as the
``Cartesia-Version`` header (or the ``cartesia_version`` query parameter) and is recorded per session. A
session with no audio for ``idle_timeout_s`` (20 s, as the service) receives an ``error`` and is closed.

Control plane, JSON over plain HTTP on the same port::

    POST   /_emulator/transcripts  {"pcm_base64", "transcript", "sample_rate"?}  register a clip
    POST   /_emulator/faults       {"kind": "drop" | "error" | "reject" | "stall", ...}  arm a fault
    DELETE /_emulator/faults                                                   disarm all faults
    GET    /_emulator/sessions                                                 session summaries

Usage::

    with InkEmulator(api_key="test-key") as ink:
        ink.register(pcm, "check my balance")
        client = Cartesia(api_key="test-key", base_url=ink.url)
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import collections
import contextlib
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Annotated, Any, Literal, Protocol, Self
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator
from websockets.frames import Frame, Opcode
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.server import ServerProtocol

from voicebridge_dev.local.service import LocalService

logger = logging.getLogger(__name__)

Samples = npt.NDArray[np.float32]

TURNS_PATH = "/stt/turns/websocket"
MANUAL_PATH = "/stt/websocket"
IDLE_TIMEOUT_S = 20.0

_BYTES_PER_SAMPLE: dict[str, int] = {
    "pcm_s16le": 2,
    "pcm_s32le": 4,
    "pcm_f16le": 2,
    "pcm_f32le": 4,
    "pcm_mulaw": 1,
    "pcm_alaw": 1,
}
_TURN_MODELS = ("ink-2",)
_MANUAL_MODELS = ("ink-2", "ink-whisper")
_MIN_RATE, _MAX_RATE = 8000, 48000
_MAX_HTTP_BODY = 64 * 1024 * 1024
_MAX_WS_MESSAGE = 4 * 1024 * 1024
_CLOSE_GRACE_S = 2.0
# Context around a turn's voiced span that the matcher and recogniser see: the detector decides on 20 ms
# frames, so a clip's first or last syllable may sit just outside the voiced frames.
_PREROLL_MS = 100.0
_TAIL_MS = 200.0
_ANCHOR_MS = 200.0


# ---------------------------------------------------------------------------------------------- errors


class InkEmulatorError(Exception):
    """Base class of the Ink emulator's errors."""


class EmulatorNotRunningError(InkEmulatorError):
    """The emulator was asked for its address before start() or after stop()."""


class RecogniserUnavailableError(InkEmulatorError):
    """The requested embedded recogniser is not installed (it comes with the ``speech`` extra)."""


class InvalidClipError(InkEmulatorError, ValueError):
    """A clip offered for registration holds no voiced audio to recognise it by."""


class InvalidTurnSettingsError(InkEmulatorError, ValueError):
    """Turn-detection settings outside the ranges the service accepts."""


# ----------------------------------------------------------------------------------------- recognisers


class Recogniser(Protocol):
    """Speech recogniser embedded in the emulator: mono 16-bit little-endian PCM in, text out."""

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str: ...


class PocketsphinxRecogniser:
    """CMU PocketSphinx with the en-us model shipped in its wheel; offline, modest accuracy.

    The acoustic model is trained on 16 kHz audio and refuses narrower input, so audio is resampled to 16 kHz.
    """

    model_rate = 16000

    def __init__(self) -> None:
        try:
            from pocketsphinx import Decoder
        except ImportError as exc:
            raise RecogniserUnavailableError("pocketsphinx is not installed (install the 'speech' extra)") from exc
        self._decoder = Decoder(samprate=self.model_rate, loglevel="FATAL")
        # One decoder serves every session; its utterance state is not re-entrant.
        self._lock = threading.Lock()

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        import soxr

        samples = np.frombuffer(pcm_s16le[: len(pcm_s16le) // 2 * 2], "<i2")
        if samples.size == 0:
            return ""
        if sample_rate != self.model_rate:
            resampled = soxr.resample(samples.astype(np.float32) / 32768.0, sample_rate, self.model_rate)
            samples = (np.clip(resampled, -1.0, 1.0) * 32767.0).astype("<i2")
        with self._lock:
            self._decoder.start_utt()
            self._decoder.process_raw(samples.tobytes(), full_utt=True)
            self._decoder.end_utt()
            hypothesis = self._decoder.hyp()
        return str(hypothesis.hypstr) if hypothesis is not None else ""


def load_recogniser(prefer: Literal["auto", "pocketsphinx", "none"] = "auto") -> Recogniser | None:
    """The embedded recogniser to hand to :class:`InkEmulator`.

    ``"auto"`` gives PocketSphinx when it is importable and ``None`` otherwise; ``"pocketsphinx"`` insists
    (raising :class:`RecogniserUnavailableError`); ``"none"`` always gives ``None`` (stand-in transcripts).
    """
    if prefer == "none":
        return None
    try:
        return PocketsphinxRecogniser()
    except RecogniserUnavailableError:
        if prefer == "pocketsphinx":
            raise
        logger.info("Ink emulator: pocketsphinx not installed; transcripts are registered clips or stand-ins")
        return None


# ----------------------------------------------------------------------------------------------- audio


def _g711_tables() -> tuple[Samples, Samples]:
    codes = np.arange(256, dtype=np.int32)
    inverted = ~codes & 0xFF
    exponent = (inverted >> 4) & 0x07
    mantissa = inverted & 0x0F
    magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84
    mulaw = np.where(inverted & 0x80, -magnitude, magnitude)
    toggled = codes ^ 0x55
    exponent = (toggled >> 4) & 0x07
    mantissa = toggled & 0x0F
    magnitude = np.where(exponent == 0, (mantissa << 4) + 8, ((mantissa << 4) + 0x108) << np.maximum(exponent - 1, 0))
    alaw = np.where(toggled & 0x80, magnitude, -magnitude)
    return (mulaw / 32768.0).astype(np.float32), (alaw / 32768.0).astype(np.float32)


_MULAW, _ALAW = _g711_tables()


def _decode(encoding: str, data: bytes) -> Samples:
    """Whole samples of ``data`` as float32 in [-1, 1]."""
    width = _BYTES_PER_SAMPLE[encoding]
    data = data[: len(data) // width * width]
    if encoding == "pcm_s16le":
        return np.frombuffer(data, "<i2").astype(np.float32) / np.float32(32768.0)
    if encoding == "pcm_s32le":
        return (np.frombuffer(data, "<i4").astype(np.float64) / 2.0**31).astype(np.float32)
    if encoding == "pcm_f16le":
        return np.frombuffer(data, "<f2").astype(np.float32)
    if encoding == "pcm_f32le":
        return np.frombuffer(data, "<f4").astype(np.float32)
    table = _MULAW if encoding == "pcm_mulaw" else _ALAW
    return table[np.frombuffer(data, np.uint8)]


def _as_s16le(encoding: str, data: bytes) -> bytes:
    """The audio as 16-bit PCM; s16le passes through byte for byte so registered clips still match exactly."""
    if encoding == "pcm_s16le":
        return data[: len(data) // 2 * 2]
    return (np.clip(_decode(encoding, data), -1.0, 1.0) * 32767.0).astype("<i2").tobytes()


def _level_dbfs(frame: Samples) -> float:
    if frame.size == 0:
        return -120.0
    rms = math.sqrt(float(np.mean(np.square(frame, dtype=np.float64))))
    return 20.0 * math.log10(rms) if rms > 1e-6 else -120.0


# -------------------------------------------------------------------------------------- turn detection

_CLIENT_RANGES: dict[str, tuple[float, float]] = {
    "start_threshold": (0.5, 0.9),
    "eager_end_threshold": (0.3, 0.6),
    "end_threshold": (0.05, 0.5),
    "end_timeout_ms": (640.0, 11200.0),
}


@dataclass(frozen=True)
class TurnSettings:
    """How the emulator finds turns in the signal.

    A frame is voiced at or above ``voiced_dbfs`` and silent below ``silence_dbfs``; frames in between
    continue whatever is happening (hysteresis). The service's thresholds act on an emulated speaking
    probability: it rises by one per ``start_ramp_ms`` of consecutive voiced audio (turn.start once it reaches
    ``start_threshold``: 100 ms with the defaults) and, after the last voiced frame, falls linearly so that it
    crosses ``end_threshold`` exactly ``end_timeout_ms`` later (turn.end); turn.eager_end fires when it
    crosses ``eager_end_threshold``. The service defaults end_timeout_ms to 5600 ms, an upper bound its model
    rarely needs; the emulator, having no model, ends turns after 500 ms of silence unless a client asks
    otherwise.
    """

    start_threshold: float = 0.8
    eager_end_threshold: float = 0.4
    end_threshold: float = 0.2
    end_timeout_ms: float = 500.0
    voiced_dbfs: float = -40.0
    silence_dbfs: float = -50.0
    start_ramp_ms: float = 125.0
    frame_ms: float = 20.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.end_threshold < self.start_threshold <= 1.0:
            raise InvalidTurnSettingsError("end_threshold must lie below start_threshold, both within [0, 1]")
        if not 0.0 < self.eager_end_threshold < 1.0:
            raise InvalidTurnSettingsError("eager_end_threshold must lie within (0, 1)")
        if self.end_timeout_ms <= 0 or self.start_ramp_ms <= 0 or self.frame_ms <= 0:
            raise InvalidTurnSettingsError("durations must be positive")
        if self.silence_dbfs > self.voiced_dbfs:
            raise InvalidTurnSettingsError("silence_dbfs must not exceed voiced_dbfs")

    def with_client_values(self, values: Mapping[str, float]) -> TurnSettings:
        """These settings as updated by a client (query or config command), within the service's ranges."""
        for name, value in values.items():
            low, high = _CLIENT_RANGES[name]
            if not low <= value <= high:
                raise InvalidTurnSettingsError(f"{name} must be within [{low:g}, {high:g}], got {value:g}")
        updated = replace(self, **values)
        if not updated.end_threshold < updated.eager_end_threshold < updated.start_threshold:
            raise InvalidTurnSettingsError("eager_end_threshold must stay between end_threshold and start_threshold")
        return updated


@dataclass(frozen=True)
class TurnSignal:
    """A decision of the detector, at a sample offset of the received audio."""

    kind: Literal["start", "eager_end", "resume", "end"]
    at_sample: int


class TurnDetector:
    """Sans-I/O energy turn detector: ``feed(samples)`` returns the turn signals those samples complete."""

    def __init__(self, settings: TurnSettings, sample_rate: int) -> None:
        self.settings = settings
        self._rate = sample_rate
        self._frame_len = max(1, round(sample_rate * settings.frame_ms / 1000.0))
        self._pending: Samples = np.zeros(0, np.float32)
        self.samples_seen = 0
        self.in_turn = False
        self.speech_start_sample = 0
        self.speech_end_sample = 0
        self._run_frames = 0
        self._run_start = 0
        self._silent_frames = 0
        self._eager = False

    def feed(self, samples: Samples) -> list[TurnSignal]:
        buffered = np.concatenate((self._pending, samples)) if self._pending.size else samples
        whole = buffered.size // self._frame_len * self._frame_len
        self._pending = buffered[whole:].copy()
        signals: list[TurnSignal] = []
        for begin in range(0, whole, self._frame_len):
            signal = self._frame(buffered[begin : begin + self._frame_len])
            if signal is not None:
                signals.append(signal)
        return signals

    def end_turn(self) -> None:
        """Leave the current turn without a decision of the signal (the client closed the session)."""
        self.in_turn = False
        self._run_frames = 0

    def _frame(self, frame: Samples) -> TurnSignal | None:
        s = self.settings
        frame_start = self.samples_seen
        self.samples_seen += frame.size
        frame_ms = frame.size * 1000.0 / self._rate
        level = _level_dbfs(frame)
        if not self.in_turn:
            if level < s.voiced_dbfs:
                self._run_frames = 0
                return None
            if self._run_frames == 0:
                self._run_start = frame_start
            self._run_frames += 1
            if self._run_frames * frame_ms / s.start_ramp_ms < s.start_threshold:
                return None
            self.in_turn = True
            self.speech_start_sample = self._run_start
            self.speech_end_sample = self.samples_seen
            self._silent_frames = 0
            self._eager = False
            return TurnSignal("start", self.samples_seen)
        if level >= s.silence_dbfs:
            self.speech_end_sample = self.samples_seen
            self._silent_frames = 0
            if self._eager:
                self._eager = False
                return TurnSignal("resume", self.samples_seen)
            return None
        self._silent_frames += 1
        silence_ms = self._silent_frames * frame_ms
        if silence_ms >= s.end_timeout_ms:
            self.end_turn()
            return TurnSignal("end", self.samples_seen)
        probability = 1.0 - (1.0 - s.end_threshold) * silence_ms / s.end_timeout_ms
        if not self._eager and probability <= s.eager_end_threshold:
            self._eager = True
            return TurnSignal("eager_end", self.samples_seen)
        return None


def _voiced_span(samples: Samples, settings: TurnSettings, sample_rate: int) -> tuple[int, int] | None:
    """First and one-past-last sample of the voiced frames, or None when nothing is voiced."""
    frame_len = max(1, round(sample_rate * settings.frame_ms / 1000.0))
    usable = samples.size // frame_len * frame_len
    if usable == 0:
        return None
    frames = samples[:usable].astype(np.float64).reshape(-1, frame_len)
    rms = np.sqrt(np.mean(np.square(frames), axis=1))
    levels = 20.0 * np.log10(np.maximum(rms, 1e-6))
    voiced = np.flatnonzero(levels >= settings.voiced_dbfs)
    if voiced.size == 0:
        return None
    return int(voiced[0]) * frame_len, (int(voiced[-1]) + 1) * frame_len


# ----------------------------------------------------------------------------------------------- clips


@dataclass(frozen=True)
class _Clip:
    transcript: str
    middle: bytes
    head: bytes
    head_offset: int
    voiced_end: int
    length: int


class _ClipRegistry:
    """Transcripts registered with their audio, found again in a stream by exact byte search.

    The audio reaches the emulator byte-exact through the pipeline, so a ~200 ms slice of a clip's voiced
    middle identifies it inside a turn; a raw byte search finds the slice at either byte alignment of the
    stream.
    """

    def __init__(self, settings: TurnSettings) -> None:
        self._settings = settings
        self._clips: list[_Clip] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._clips)

    def register(self, pcm_s16le: bytes, transcript: str, sample_rate: int) -> None:
        pcm = pcm_s16le[: len(pcm_s16le) // 2 * 2]
        span = _voiced_span(_decode("pcm_s16le", pcm), self._settings, sample_rate)
        if span is None:
            raise InvalidClipError("the clip has no voiced audio to recognise it by")
        first, end = span
        anchor = min(end - first, max(1, round(sample_rate * _ANCHOR_MS / 1000.0)))
        centre = (first + end) // 2
        middle_start = min(max(first, centre - anchor // 2), end - anchor)
        clip = _Clip(
            transcript=transcript,
            middle=pcm[middle_start * 2 : (middle_start + anchor) * 2],
            head=pcm[first * 2 : (first + anchor) * 2],
            head_offset=first * 2,
            voiced_end=end * 2,
            length=len(pcm),
        )
        with self._lock:
            self._clips.append(clip)

    def final_transcript(self, region: bytes) -> str | None:
        """Transcripts of every clip whose middle lies in ``region``, in stream order."""
        found: list[tuple[int, str]] = []
        with self._lock:
            clips = list(self._clips)
        for clip in clips:
            found.extend((at, clip.transcript) for at in _occurrences(region, clip.middle, clip.length))
        return " ".join(text for _, text in sorted(found)) if found else None

    def partial_transcript(self, region: bytes) -> str | None:
        """The words of each clip begun in ``region``, in proportion to how much of it has arrived."""
        found: list[tuple[int, str]] = []
        with self._lock:
            clips = list(self._clips)
        for clip in clips:
            words = clip.transcript.split()
            for at in _occurrences(region, clip.head, clip.length):
                arrived = len(region) - at
                progress = min(1.0, arrived / max(1, clip.voiced_end - clip.head_offset))
                found.append((at, " ".join(words[: math.floor(progress * len(words))])))
        return " ".join(text for _, text in sorted(found) if text) if found else None


def _occurrences(haystack: bytes, needle: bytes, stride: int) -> list[int]:
    """Where ``needle`` occurs, at most once per ``stride`` bytes: one playback of a clip is one occurrence
    even when its audio repeats itself."""
    positions: list[int] = []
    at = haystack.find(needle)
    while at >= 0:
        positions.append(at)
        at = haystack.find(needle, at + max(stride, len(needle)))
    return positions


# ---------------------------------------------------------------------------------------------- faults


class _FaultBase(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class DropFault(_FaultBase):
    """Close the socket abruptly (no close frame, the client sees 1006) after ``after_audio_ms`` of received
    audio or right after the session's ``after_turn_end``-th turn.end."""

    kind: Literal["drop"] = "drop"
    after_audio_ms: float | None = Field(default=None, ge=0)
    after_turn_end: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_trigger(self) -> Self:
        if (self.after_audio_ms is None) == (self.after_turn_end is None):
            raise ValueError("a drop needs exactly one of after_audio_ms and after_turn_end")
        return self


class ErrorFault(_FaultBase):
    """Send an ``error`` event, then close with ``close_code``, after ``after_audio_ms`` of audio."""

    kind: Literal["error"] = "error"
    after_audio_ms: float = Field(default=0.0, ge=0)
    message: str = "Internal server error (injected by the Ink emulator)"
    status_code: int = 500
    title: str = "Internal Server Error"
    error_code: str | None = "internal_error"
    close_code: int = 1011


class RejectFault(_FaultBase):
    """Refuse the next ``connections`` WebSocket handshakes with ``status_code`` (429: past the plan's
    concurrency)."""

    kind: Literal["reject"] = "reject"
    connections: int = Field(default=1, ge=1)
    status_code: int = Field(default=429, ge=400, le=599)


class StallFault(_FaultBase):
    """Hold every event for ``seconds`` once ``after_audio_ms`` of audio has arrived, then deliver them."""

    kind: Literal["stall"] = "stall"
    seconds: float = Field(gt=0)
    after_audio_ms: float = Field(default=0.0, ge=0)


Fault = Annotated[DropFault | ErrorFault | RejectFault | StallFault, Field(discriminator="kind")]
_FAULT_ADAPTER: TypeAdapter[DropFault | ErrorFault | RejectFault | StallFault] = TypeAdapter(Fault)


class _RegisterRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pcm_base64: str
    transcript: str
    sample_rate: int = Field(default=8000, ge=_MIN_RATE, le=_MAX_RATE)


# --------------------------------------------------------------------------------------------- records


@dataclass(frozen=True)
class SentEvent:
    """An event written to a client; ``audio_ms`` is how much audio had been received when it was decided."""

    type: str
    payload: dict[str, Any]
    audio_ms: float


@dataclass
class TurnRecord:
    """One detected turn, in milliseconds of the session's received audio."""

    speech_start_ms: float
    start_ms: float
    speech_end_ms: float | None = None
    end_ms: float | None = None
    transcript: str | None = None


@dataclass(frozen=True)
class HandshakeRecord:
    """One WebSocket handshake attempt and the status it was answered with."""

    path: str
    query: dict[str, str]
    status_code: int
    cartesia_version: str | None


@dataclass(eq=False)
class InkSession:
    """Accounting of one accepted WebSocket session, for tests to inspect."""

    request_id: str
    endpoint: Literal["turns", "manual"]
    model: str
    encoding: str
    sample_rate: int
    query: dict[str, str]
    cartesia_version: str | None
    received_audio: bytearray = field(default_factory=bytearray)
    events: list[SentEvent] = field(default_factory=list)
    turns: list[TurnRecord] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    ended_by: str | None = None
    _finished: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def audio_ms(self) -> float:
        return self.ms_of(len(self.received_audio) // _BYTES_PER_SAMPLE[self.encoding])

    def ms_of(self, sample: int) -> float:
        return sample * 1000.0 / self.sample_rate

    def events_of(self, event_type: str) -> list[SentEvent]:
        return [event for event in self.events if event.type == event_type]

    def wait_closed(self, timeout: float) -> bool:
        """Wait until the emulator is done with this session; False on timeout."""
        return self._finished.wait(timeout)

    def summary(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "endpoint": self.endpoint,
            "model": self.model,
            "encoding": self.encoding,
            "sample_rate": self.sample_rate,
            "cartesia_version": self.cartesia_version,
            "received_audio_bytes": len(self.received_audio),
            "events": [{"type": e.type, "audio_ms": e.audio_ms} for e in self.events],
            "turns": [vars(turn) for turn in self.turns],
            "ended_by": self.ended_by,
        }


# ------------------------------------------------------------------------------------------ socket I/O


class _ConnectionLost(Exception):
    """The peer went away mid-write."""


class _Socket:
    """Asyncio stream I/O around websockets' sans-I/O server protocol, one message at a time."""

    def __init__(self, protocol: ServerProtocol, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._protocol = protocol
        self._reader = reader
        self._writer = writer
        self._messages: collections.deque[str | bytes] = collections.deque()
        self._fragments: list[bytes] = []
        self._fragment_opcode: Opcode | None = None
        self._eof = False
        self._peer_closed = False

    @property
    def open(self) -> bool:
        return self._protocol.state is State.OPEN

    @property
    def peer_closed(self) -> bool:
        """The peer sent a close frame (as opposed to vanishing)."""
        return self._peer_closed

    async def flush(self) -> None:
        for data in self._protocol.data_to_send():
            if data:
                self._writer.write(data)
            elif self._writer.can_write_eof():
                self._writer.write_eof()
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as exc:
            raise _ConnectionLost(str(exc)) from exc

    async def receive(self, deadline: float) -> str | bytes | None:
        """The next message, or None once the peer has closed; TimeoutError at ``deadline`` (loop time)."""
        async with asyncio.timeout_at(deadline):
            while not self._messages:
                if self._eof or self._peer_closed:
                    return None
                try:
                    data = await self._reader.read(65536)
                except (ConnectionError, OSError):
                    data = b""
                if data:
                    self._protocol.receive_data(data)
                else:
                    self._protocol.receive_eof()
                    self._eof = True
                for event in self._protocol.events_received():
                    if isinstance(event, Frame):
                        self._on_frame(event)
                with contextlib.suppress(_ConnectionLost):
                    await self.flush()
            return self._messages.popleft()

    def _on_frame(self, frame: Frame) -> None:
        if frame.opcode is Opcode.CLOSE:
            self._peer_closed = True
            return
        if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
            self._fragment_opcode = frame.opcode
            self._fragments = [bytes(frame.data)]
        elif frame.opcode is Opcode.CONT:
            self._fragments.append(bytes(frame.data))
        else:
            return
        if frame.fin:
            data = b"".join(self._fragments)
            self._fragments = []
            if self._fragment_opcode is Opcode.TEXT:
                self._messages.append(data.decode("utf-8", errors="replace"))
            else:
                self._messages.append(data)

    async def send_json(self, payload: Mapping[str, Any]) -> None:
        if not self.open:
            return
        self._protocol.send_text(json.dumps(payload, separators=(",", ":")).encode())
        await self.flush()

    async def close(self, code: int, reason: str) -> None:
        """Close handshake initiated by the emulator, then the TCP connection."""
        if self.open:
            self._protocol.send_close(code, reason)
            with contextlib.suppress(_ConnectionLost):
                await self.flush()
            loop = asyncio.get_running_loop()
            with contextlib.suppress(TimeoutError):
                while await self.receive(loop.time() + _CLOSE_GRACE_S) is not None:
                    pass
        self._writer.close()

    def close_now(self, code: int, reason: str) -> None:
        """Best-effort close frame without waiting for the peer (the emulator is stopping)."""
        if self.open:
            self._protocol.send_close(code, reason)
            for data in self._protocol.data_to_send():
                if data:
                    self._writer.write(data)
        self._writer.close()

    def abort(self) -> None:
        self._writer.transport.abort()


# -------------------------------------------------------------------------------------------- sessions


class _EndSession(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _SessionRunner:
    """What both endpoints share: audio accounting, event delivery, faults, the idle timeout."""

    def __init__(self, emulator: InkEmulator, session: InkSession, socket: _Socket) -> None:
        self.emulator = emulator
        self.session = session
        self.socket = socket
        self._width = _BYTES_PER_SAMPLE[session.encoding]
        self._held: list[dict[str, Any]] = []
        self._stall_until = 0.0
        self._turn_ends = 0
        self._transcripts: dict[tuple[int, int], str] = {}

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        idle_deadline = loop.time() + self.emulator.idle_timeout_s
        try:
            await self.on_open()
            while True:
                deadline = idle_deadline
                if self._held:
                    deadline = min(deadline, self._stall_until)
                try:
                    message = await self.socket.receive(deadline)
                except TimeoutError:
                    if loop.time() >= idle_deadline:
                        await self._fail_idle()
                    await self._release_held()
                    continue
                if message is None:
                    raise _EndSession("client_closed" if self.socket.peer_closed else "connection_lost")
                if isinstance(message, bytes):
                    self.session.received_audio += message
                    idle_deadline = loop.time() + self.emulator.idle_timeout_s
                    await self.on_audio(message)
                    await self._apply_faults()
                else:
                    self.session.commands.append(message)
                    await self.on_command(message)
                await self._release_held()
        except _EndSession as end:
            self.session.ended_by = end.reason
        except _ConnectionLost:
            self.session.ended_by = "connection_lost"
        finally:
            self.on_end()

    # ---- overridden per endpoint

    async def on_open(self) -> None:
        return None

    async def on_audio(self, data: bytes) -> None:
        return None

    async def on_command(self, text: str) -> None:
        return None

    def on_end(self) -> None:
        return None

    # ---- events

    async def emit(self, payload: dict[str, Any]) -> None:
        payload = {**payload, "request_id": self.session.request_id}
        self.session.events.append(SentEvent(payload["type"], payload, self.session.audio_ms))
        if asyncio.get_running_loop().time() < self._stall_until:
            self._held.append(payload)
            return
        await self.socket.send_json(payload)

    async def emit_error(self, status_code: int, title: str, message: str, error_code: str | None) -> None:
        payload: dict[str, Any] = {
            "type": "error",
            "message": message,
            "status_code": status_code,
            "title": title,
        }
        if error_code is not None:
            payload["error_code"] = error_code
        await self.emit(payload)

    async def _release_held(self) -> None:
        if self._held and asyncio.get_running_loop().time() >= self._stall_until:
            held, self._held = self._held, []
            for payload in held:
                await self.socket.send_json(payload)

    async def finish(self, code: int, reason: str, ended_by: str) -> None:
        """Deliver anything still held, close the WebSocket cleanly and end the session."""
        self._stall_until = 0.0
        await self._release_held()
        await self.socket.close(code, reason)
        raise _EndSession(ended_by)

    async def _fail_idle(self) -> None:
        seconds = self.emulator.idle_timeout_s
        await self.emit_error(
            408, "Request Timeout", f"No audio received for {seconds:g} s; session closed.", "idle_timeout"
        )
        logger.info("Ink emulator: session %s idle for %g s, closing", self.session.request_id, seconds)
        await self.finish(1000, "idle timeout", "idle_timeout")

    # ---- faults

    async def _apply_faults(self) -> None:
        for fault in self.emulator._take_faults(self.session, self._turn_ends):
            logger.info("Ink emulator: session %s hit injected fault %s", self.session.request_id, fault.kind)
            if isinstance(fault, DropFault):
                self.socket.abort()
                raise _EndSession("fault_drop")
            if isinstance(fault, ErrorFault):
                await self.emit_error(fault.status_code, fault.title, fault.message, fault.error_code)
                await self.finish(fault.close_code, fault.title, "fault_error")
            if isinstance(fault, StallFault):
                self._stall_until = asyncio.get_running_loop().time() + fault.seconds

    async def note_turn_end(self) -> None:
        self._turn_ends += 1
        await self._apply_faults()

    # ---- transcripts

    def region(self, start_sample: int, end_sample: int) -> bytes:
        audio = bytes(self.session.received_audio[start_sample * self._width : end_sample * self._width])
        return _as_s16le(self.session.encoding, audio)

    def stand_in(self, voiced_samples: int) -> str:
        return f"[speech {voiced_samples / self.session.sample_rate:.2f} s]"

    async def recognise(self, pcm_s16le: bytes) -> str | None:
        recogniser = self.emulator.recogniser
        if recogniser is None:
            return None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, recogniser.transcribe, pcm_s16le, self.session.sample_rate)

    async def transcribe(self, start_sample: int, end_sample: int, voiced_samples: int) -> str:
        """Final text: registered clips first, then the embedded recogniser, then a stand-in."""
        key = (start_sample, end_sample)
        if key not in self._transcripts:
            pcm = self.region(start_sample, end_sample)
            text = self.emulator._clips.final_transcript(pcm)
            if text is None:
                text = await self.recognise(pcm)
            self._transcripts[key] = self.stand_in(voiced_samples) if text is None else text
        return self._transcripts[key]


class _TurnsRunner(_SessionRunner):
    """``/stt/turns/websocket``: turns from the energy detector, events as the SDK's auto-finalize types."""

    def __init__(self, emulator: InkEmulator, session: InkSession, socket: _Socket, settings: TurnSettings) -> None:
        super().__init__(emulator, session, socket)
        self.detector = TurnDetector(settings, session.sample_rate)
        self._carry = b""
        self._turn: TurnRecord | None = None
        self._next_update = 0
        self._last_update = ""
        self._recognising: asyncio.Task[None] | None = None
        rate = session.sample_rate
        self._preroll = round(rate * _PREROLL_MS / 1000.0)
        self._tail = round(rate * _TAIL_MS / 1000.0)
        self._update_every = max(1, round(rate * emulator.update_interval_ms / 1000.0))

    async def on_open(self) -> None:
        await self.emit({"type": "connected"})

    async def on_audio(self, data: bytes) -> None:
        data = self._carry + data
        whole = len(data) // self._width * self._width
        self._carry = data[whole:]
        for signal in self.detector.feed(_decode(self.session.encoding, data[:whole])):
            await self._on_signal(signal)
        if self.detector.in_turn and self.detector.samples_seen >= self._next_update:
            self._next_update = self.detector.samples_seen + self._update_every
            await self._update()

    async def _update(self) -> None:
        d = self.detector
        pcm = self.region(max(0, d.speech_start_sample - self._preroll), d.samples_seen)
        text = self.emulator._clips.partial_transcript(pcm)
        if text is not None:
            await self._emit_update(text)
        elif self.emulator.recogniser is None:
            await self._emit_update(self.stand_in(d.speech_end_sample - d.speech_start_sample))
        elif self._recognising is None or self._recognising.done():
            # Recognising the turn so far costs a good fraction of its duration: done inline it would delay
            # the audio behind it and turn.end, so one runs at a time beside the session.
            self._recognising = asyncio.create_task(self._recognise_update(pcm))

    async def _recognise_update(self, pcm: bytes) -> None:
        turn = self._turn
        try:
            text = await self.recognise(pcm)
        except Exception:
            logger.exception("Ink emulator: recogniser failed on a partial turn")
            return
        if text is not None and turn is not None and turn is self._turn:
            await self._emit_update(text)

    async def _emit_update(self, text: str) -> None:
        if text and text != self._last_update:
            self._last_update = text
            await self.emit({"type": "turn.update", "transcript": text})

    def on_end(self) -> None:
        if self._recognising is not None:
            self._recognising.cancel()

    async def _on_signal(self, signal: TurnSignal) -> None:
        ms = self.session.ms_of
        if signal.kind == "start":
            self._turn = TurnRecord(
                speech_start_ms=ms(self.detector.speech_start_sample), start_ms=ms(signal.at_sample)
            )
            self.session.turns.append(self._turn)
            # The first update waits until a clip's head anchor can have arrived.
            self._next_update = signal.at_sample + self._update_every
            self._last_update = ""
            await self.emit({"type": "turn.start"})
        elif signal.kind == "eager_end":
            await self.emit({"type": "turn.eager_end", "transcript": await self._final_transcript(signal.at_sample)})
        elif signal.kind == "resume":
            await self.emit({"type": "turn.resume"})
        else:
            await self._end_turn(signal.at_sample)

    async def _final_transcript(self, at_sample: int) -> str:
        d = self.detector
        start = max(0, d.speech_start_sample - self._preroll)
        end = min(at_sample, d.speech_end_sample + self._tail)
        return await self.transcribe(start, end, d.speech_end_sample - d.speech_start_sample)

    async def _end_turn(self, at_sample: int) -> None:
        turn = self._turn
        if turn is None:
            return
        transcript = await self._final_transcript(at_sample)
        turn.speech_end_ms = self.session.ms_of(self.detector.speech_end_sample)
        turn.end_ms = self.session.ms_of(at_sample)
        turn.transcript = transcript
        self._turn = None
        await self.emit({"type": "turn.end", "transcript": transcript})
        await self.note_turn_end()

    async def on_command(self, text: str) -> None:
        try:
            command = json.loads(text)
        except json.JSONDecodeError:
            command = None
        kind = command.get("type") if isinstance(command, dict) else None
        if kind == "close":
            if self.detector.in_turn:
                self.detector.end_turn()
                await self._end_turn(self.detector.samples_seen)
            await self.finish(1000, "", "close_command")
        elif kind == "config":
            await self._configure(command.get("turn") or {})
        else:
            await self.emit_error(400, "Bad Request", f"Unknown command: {text[:200]}", "invalid_command")

    async def _configure(self, turn: Any) -> None:
        allowed = set(_CLIENT_RANGES)
        if not isinstance(turn, dict) or not set(turn) <= allowed:
            await self.emit_error(400, "Bad Request", f"config.turn accepts {sorted(allowed)}", "invalid_config")
            return
        try:
            values = {name: float(value) for name, value in turn.items() if value is not None}
            self.detector.settings = self.detector.settings.with_client_values(values)
        except (TypeError, ValueError) as exc:
            await self.emit_error(400, "Bad Request", str(exc), "invalid_config")


class _ManualRunner(_SessionRunner):
    """``/stt/websocket``: audio is transcribed when the client says ``finalize`` or ``close``."""

    def __init__(self, emulator: InkEmulator, session: InkSession, socket: _Socket) -> None:
        super().__init__(emulator, session, socket)
        self._segment_start = 0
        self._spoken = False

    async def on_command(self, text: str) -> None:
        command = text.strip()
        if command == "finalize":
            await self._finalize()
            await self.emit({"type": "flush_done"})
        elif command in ("close", "done"):
            await self._finalize()
            await self.emit({"type": "done"})
            await self.finish(1000, "", "close_command")
        else:
            await self.emit_error(400, "Bad Request", f"Unknown command: {command[:200]}", "invalid_command")

    async def _finalize(self) -> None:
        start = self._segment_start
        end = len(self.session.received_audio) // self._width
        self._segment_start = end
        rate = self.session.sample_rate
        samples = _decode(self.session.encoding, bytes(self.session.received_audio[start * self._width :]))
        span = _voiced_span(samples, self.emulator.turn_settings, rate)
        if span is None:
            return
        text = await self.transcribe(start, end, span[1] - span[0])
        if not text:
            return
        # Finals are deltas joined verbatim by clients, so every final after the first carries its own space.
        delta = f" {text}" if self._spoken else text
        self._spoken = True
        words = text.split()
        first_s, last_s = (start + span[0]) / rate, (start + span[1]) / rate
        step = (last_s - first_s) / len(words)
        await self.emit(
            {
                "type": "transcript",
                "text": delta,
                "is_final": True,
                "duration": round((end - start) / rate, 3),
                "language": self.session.query.get("language", "en"),
                "words": [
                    {
                        "words": words,
                        "start": [round(first_s + i * step, 3) for i in range(len(words))],
                        "end": [round(first_s + (i + 1) * step, 3) for i in range(len(words))],
                    }
                ],
            }
        )


# ------------------------------------------------------------------------------------------ HTTP front


@dataclass(frozen=True)
class _HttpRequest:
    method: str
    target: str
    headers: dict[str, str]
    head: bytes


class _HandshakeRejected(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _parse_head(head: bytes) -> _HttpRequest | None:
    try:
        text = head.decode("latin-1")
        request_line, *header_lines = text.split("\r\n")
        method, target, _version = request_line.split(" ", 2)
    except ValueError:
        return None
    headers: dict[str, str] = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return _HttpRequest(method.upper(), target, headers, head)


def _http_response(status: int, body: Mapping[str, Any] | list[Any]) -> bytes:
    payload = json.dumps(body).encode()
    reason = {200: "OK", 201: "Created", 400: "Bad Request", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\nServer: ink-emulator\r\n\r\n"
    )
    return head.encode() + payload


# -------------------------------------------------------------------------------------------- emulator


class InkEmulator(LocalService):
    """Ink WebSocket emulator on loopback, run by its own asyncio loop in a background thread.

    ``recogniser`` is the embedded engine used when no registered clip matches (pass :func:`load_recogniser`'s
    result for PocketSphinx); without one, unmatched speech gets a deterministic stand-in transcript.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        recogniser: Recogniser | None = None,
        *,
        turn_settings: TurnSettings | None = None,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        update_interval_ms: float = 300.0,
    ) -> None:
        self.host = host
        self.api_key = api_key
        self.recogniser = recogniser
        self.turn_settings = turn_settings or TurnSettings()
        self.idle_timeout_s = idle_timeout_s
        self.update_interval_ms = update_interval_ms
        self._requested_port = port
        self._port: int | None = None
        self._clips = _ClipRegistry(self.turn_settings)
        self._faults: list[DropFault | ErrorFault | StallFault] = []
        self._rejects: list[RejectFault] = []
        self._fault_lock = threading.Lock()
        self._sessions: list[InkSession] = []
        self._handshakes: list[HandshakeRecord] = []
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._sockets: set[_Socket] = set()
        self._startup_error: BaseException | None = None

    # ---- lifecycle

    def start(self) -> Self:
        if self._thread is not None:
            return self
        ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(ready,), name="ink-emulator", daemon=True)
        self._thread.start()
        ready.wait()
        if self._startup_error is not None:
            self._thread.join()
            self._thread = None
            raise InkEmulatorError(f"Ink emulator failed to start: {self._startup_error}") from self._startup_error
        logger.info("Ink emulator listening on %s", self.url)
        return self

    def stop(self) -> None:
        thread, loop, stop_event = self._thread, self._loop, self._stop_event
        if thread is None or loop is None or stop_event is None:
            return
        loop.call_soon_threadsafe(stop_event.set)
        thread.join(timeout=10)
        self._thread = None
        self._port = None
        logger.info("Ink emulator stopped")

    @property
    def port(self) -> int:
        if self._port is None:
            raise EmulatorNotRunningError("the Ink emulator is not running")
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port``: the SDK's ``base_url`` (it derives ``ws://`` from it)."""
        return f"http://{self.host}:{self.port}"

    # ---- test-facing API

    def register(self, pcm: bytes, transcript: str, sample_rate: int = 8000) -> None:
        """Register the transcript of a mono s16le clip; any turn that carries the clip's audio gets it."""
        self._clips.register(pcm, transcript, sample_rate)

    def inject(self, fault: DropFault | ErrorFault | RejectFault | StallFault) -> None:
        """Arm a one-shot fault: the first session to reach its trigger consumes it."""
        with self._fault_lock:
            if isinstance(fault, RejectFault):
                self._rejects.append(fault)
            else:
                self._faults.append(fault)
        logger.info("Ink emulator: armed fault %s", fault.model_dump())

    def clear_faults(self) -> None:
        with self._fault_lock:
            self._faults.clear()
            self._rejects.clear()

    @property
    def sessions(self) -> list[InkSession]:
        return list(self._sessions)

    @property
    def handshakes(self) -> list[HandshakeRecord]:
        return list(self._handshakes)

    @property
    def connect_count(self) -> int:
        """WebSocket handshakes attempted, accepted or not."""
        return len(self._handshakes)

    def wait_for_sessions(self, count: int, timeout: float) -> list[InkSession]:
        """The first ``count`` sessions once that many have connected and finished; raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while len(self._sessions) < count:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(self._sessions)} of {count} sessions connected")
            time.sleep(0.01)
        sessions = self._sessions[:count]
        for session in sessions:
            if not session.wait_closed(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"session {session.request_id} still open")
        return sessions

    def _take_faults(self, session: InkSession, turn_ends: int) -> list[DropFault | ErrorFault | StallFault]:
        audio_ms = session.audio_ms
        taken: list[DropFault | ErrorFault | StallFault] = []
        with self._fault_lock:
            for fault in list(self._faults):
                if isinstance(fault, DropFault) and fault.after_turn_end is not None:
                    due = turn_ends >= fault.after_turn_end
                else:
                    threshold = fault.after_audio_ms
                    due = threshold is not None and audio_ms >= threshold and len(session.received_audio) > 0
                if due:
                    self._faults.remove(fault)
                    taken.append(fault)
        return taken

    def _take_reject(self) -> RejectFault | None:
        with self._fault_lock:
            if not self._rejects:
                return None
            fault = self._rejects[0]
            if fault.connections <= 1:
                self._rejects.pop(0)
            else:
                self._rejects[0] = fault.model_copy(update={"connections": fault.connections - 1})
            return fault

    # ---- server

    def _run(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._serve(ready))
        except OSError as exc:
            self._startup_error = exc
            ready.set()
        finally:
            loop.close()

    async def _serve(self, ready: threading.Event) -> None:
        self._stop_event = asyncio.Event()
        server = await asyncio.start_server(self._on_connection, self.host, self._requested_port)
        self._port = int(server.sockets[0].getsockname()[1])
        ready.set()
        async with server:
            await self._stop_event.wait()
            server.close()
            for socket in list(self._sockets):
                socket.close_now(1001, "Ink emulator stopping")
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            async with asyncio.timeout(10):
                head = await reader.readuntil(b"\r\n\r\n")
            request = _parse_head(head)
            if request is None:
                writer.write(_http_response(400, {"message": "malformed request"}))
            elif request.target.startswith("/_emulator/"):
                writer.write(await self._control(request, reader))
            elif request.headers.get("upgrade", "").lower() == "websocket":
                await self._websocket(request, reader, writer)
            else:
                writer.write(_http_response(404, {"message": f"no route for {request.target}"}))
            with contextlib.suppress(ConnectionError, OSError):
                await writer.drain()
        except (
            TimeoutError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            ConnectionError,
            OSError,
        ):
            pass
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    # ---- control plane

    async def _control(self, request: _HttpRequest, reader: asyncio.StreamReader) -> bytes:
        try:
            length = int(request.headers.get("content-length", "0") or 0)
        except ValueError:
            return _http_response(400, {"message": "invalid Content-Length"})
        if not 0 <= length <= _MAX_HTTP_BODY:
            return _http_response(400, {"message": "body too large"})
        body = await reader.readexactly(length) if length else b""
        route = (request.method, urlsplit(request.target).path)
        try:
            if route == ("POST", "/_emulator/transcripts"):
                registration = _RegisterRequest.model_validate_json(body)
                pcm = base64.b64decode(registration.pcm_base64, validate=True)
                self.register(pcm, registration.transcript, registration.sample_rate)
                return _http_response(201, {"registered": len(self._clips)})
            if route == ("POST", "/_emulator/faults"):
                fault = _FAULT_ADAPTER.validate_json(body)
                self.inject(fault)
                return _http_response(201, {"armed": fault.model_dump()})
            if route == ("DELETE", "/_emulator/faults"):
                self.clear_faults()
                return _http_response(200, {"cleared": True})
            if route == ("GET", "/_emulator/sessions"):
                return _http_response(200, [session.summary() for session in self._sessions])
        except (ValidationError, binascii.Error, InvalidClipError) as exc:
            return _http_response(400, {"message": str(exc)})
        return _http_response(404, {"message": f"no route for {request.method} {request.target}"})

    # ---- WebSocket

    async def _websocket(
        self, request: _HttpRequest, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        protocol = ServerProtocol(max_size=_MAX_WS_MESSAGE)
        protocol.receive_data(request.head)
        events = protocol.events_received()
        handshake = events[0] if events and isinstance(events[0], Request) else None
        if handshake is None:
            for data in protocol.data_to_send():
                writer.write(data)
            return
        target = urlsplit(handshake.path)
        query = dict(parse_qsl(target.query))
        version = handshake.headers.get("Cartesia-Version") or query.get("cartesia_version")
        try:
            endpoint, settings = self._admit(target.path, query, handshake)
            response = protocol.accept(handshake)
        except _HandshakeRejected as rejected:
            response = self._reject(protocol, rejected)
        response.headers["Server"] = "ink-emulator"
        self._handshakes.append(HandshakeRecord(target.path, query, response.status_code, version))
        protocol.send_response(response)
        socket = _Socket(protocol, reader, writer)
        await socket.flush()
        if response.status_code != 101:
            logger.info("Ink emulator: refused %s with %d", target.path, response.status_code)
            return
        session = InkSession(
            request_id=str(uuid.uuid4()),
            endpoint=endpoint,
            model=query["model"],
            encoding=query["encoding"],
            sample_rate=int(query["sample_rate"]),
            query=query,
            cartesia_version=version,
        )
        self._sessions.append(session)
        runner: _SessionRunner
        if endpoint == "turns":
            runner = _TurnsRunner(self, session, socket, settings)
        else:
            runner = _ManualRunner(self, session, socket)
        logger.info("Ink emulator: session %s opened on %s", session.request_id, target.path)
        self._sockets.add(socket)
        try:
            await runner.run()
        except asyncio.CancelledError:
            session.ended_by = "emulator_stopped"
            raise
        except Exception:
            logger.exception("Ink emulator: session %s failed", session.request_id)
            session.ended_by = "emulator_error"
            with contextlib.suppress(_ConnectionLost, _EndSession):
                await runner.emit_error(500, "Internal Server Error", "Ink emulator failure", "internal_error")
                await socket.close(1011, "emulator failure")
        finally:
            self._sockets.discard(socket)
            logger.info("Ink emulator: session %s ended (%s)", session.request_id, session.ended_by)
            session._finished.set()

    def _admit(
        self, path: str, query: Mapping[str, str], handshake: Request
    ) -> tuple[Literal["turns", "manual"], TurnSettings]:
        if path not in (TURNS_PATH, MANUAL_PATH):
            raise _HandshakeRejected(404, f"No route for {path}")
        if self.api_key is not None:
            bearer = handshake.headers.get("Authorization", "")
            keys = {handshake.headers.get("X-API-Key"), bearer.removeprefix("Bearer ").strip() or None}
            if self.api_key not in keys:
                raise _HandshakeRejected(401, "Invalid API key")
        reject = self._take_reject()
        if reject is not None:
            raise _HandshakeRejected(reject.status_code, "Concurrency limit exceeded (injected by the Ink emulator)")
        endpoint: Literal["turns", "manual"] = "turns" if path == TURNS_PATH else "manual"
        models = _TURN_MODELS if endpoint == "turns" else _MANUAL_MODELS
        model = query.get("model", "")
        if not model.startswith(models):
            raise _HandshakeRejected(400, f"Unsupported model {model!r} for {path}")
        if query.get("encoding") not in _BYTES_PER_SAMPLE:
            raise _HandshakeRejected(400, f"encoding must be one of {sorted(_BYTES_PER_SAMPLE)}")
        try:
            rate = int(query.get("sample_rate", ""))
        except ValueError:
            rate = 0
        if not _MIN_RATE <= rate <= _MAX_RATE:
            raise _HandshakeRejected(400, f"sample_rate must be an integer in [{_MIN_RATE}, {_MAX_RATE}]")
        settings = self.turn_settings
        if endpoint == "turns":
            names = {f"turn_{f.name}": f.name for f in fields(TurnSettings) if f.name in _CLIENT_RANGES}
            try:
                values = {names[key]: float(value) for key, value in query.items() if key in names}
                settings = settings.with_client_values(values)
            except ValueError as exc:
                raise _HandshakeRejected(400, str(exc)) from exc
        return endpoint, settings

    @staticmethod
    def _reject(protocol: ServerProtocol, rejected: _HandshakeRejected) -> Response:
        response = protocol.reject(rejected.status, "")
        body = json.dumps({"error": rejected.message, "status_code": rejected.status}).encode()
        response.headers["Content-Type"] = "application/json"
        del response.headers["Content-Length"]
        response.headers["Content-Length"] = str(len(body))
        response.body = body
        return response
