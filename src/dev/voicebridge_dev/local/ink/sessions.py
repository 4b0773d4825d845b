"""Ink's two realtime WebSocket protocols, one session at a time, as the official ``cartesia`` SDK speaks them.

Turn detection — ``GET /stt/turns/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=8000``::

    client → binary audio frames; text {"type": "config", "turn": {...}} | {"type": "close"}
    server → connected, then per turn: turn.start → turn.update* → (turn.eager_end → turn.resume)* → turn.end;
             error {message, status_code, title, error_code, done} at any time, then the socket closes

Manual finalize — ``GET /stt/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=8000``::

    client → binary audio frames; text "finalize" | "close" (or the older "done")
    server → transcript {text (a delta), is_final, duration, language, words}* → flush_done per finalize;
             on close: the remaining finals → done → the socket closes

Every event carries ``request_id``. Event fields are those of the SDK's ``cartesia.types.stt`` models
(cartesia-python), and the turns page (https://docs.cartesia.ai/use-the-api/stt/turns) gives their order. What
else each session does, and where it comes from:

- Audio is accepted no faster than real time (:mod:`~voicebridge_dev.local.ink.pacing`: reject, delay or off).
  Messages are handled in the order they arrived; in ``delay`` mode a command waits behind the audio before it.
- A turn ends only while audio keeps arriving (:mod:`~voicebridge_dev.local.ink.turns`). ``{"type": "close"}``
  flushes: the open turn ends with its transcript, then the socket closes with 1000. Cartesia's troubleshooting
  page for turn detection (https://docs.cartesia.ai/ja-jp/use-the-api/stt/troubleshooting/auto) says that on
  close the server processes the audio it holds and sends the remaining events before it closes the socket,
  and that a client skipping ``close`` loses that audio.
- Manual finalize closes on ``close`` (the SDK's ``Literal["finalize", "close"]``) and on ``done``, the name in
  Cartesia's older STT reference (API version 2025-04-16) that pipecat still sends.
- Error events have the shape of Cartesia's API-errors page for ``Cartesia-Version`` 2026-03-01 and newer (the
  SDK sends 2026-08-14): ``type``, ``status_code``, ``error_code``, ``title``, ``message``, ``request_id`` and
  ``done: true`` — "Currently always true for error events" — so every error ends the session: the emulator
  sends it, then closes the socket (1008 for a client's mistake; no source documents close codes).
- A session that receives no message for ``idle_timeout_s`` gets an ``error`` (408, ``idle_timeout``) and is
  closed. The sources disagree on the timeout: Cartesia's STT reference (API version 2025-04-16) says 20 s, "The
  timeout resets with each message (audio data or text command)"; pipecat (``services/cartesia/stt.py``) says
  Cartesia disconnects "after 3 minutes of inactivity". The default is the stricter 20 s
  (:data:`~voicebridge_dev.local.ink.emulator.IDLE_TIMEOUT_S`), configurable; a session still working through
  a ``delay`` backlog is not idle.

Transcripts come from clips registered alongside their audio, then the embedded recogniser, then a
deterministic stand-in such as ``[speech 1.23 s]``.

On the turns endpoint the embedded recogniser hears a turn as a streaming recogniser does: each stretch of speech
is fed to a decoder of its own as its audio arrives, beside the session, finished when a pause closes it
(:data:`_TAIL_MS` of silence), and its words are added to the turn's; ``turn.update``, ``turn.eager_end`` and
``turn.end`` carry the words heard so far, and an eager end or a turn end decodes only audio not yet decoded.
Cartesia's turns page (https://docs.cartesia.ai/use-the-api/stt/turns/turns): "All emitted text is final. Later events
only append to the transcript; the model never revises text it has already sent", and ``turn.update`` fires
"Repeatedly, as the model transcribes the user's speech"; its API reference: "only high-accuracy transcripts are sent
by this API". Cartesia calls Ink 2 a streaming model (https://docs.cartesia.ai/build-with-cartesia/stt-models/latest),
and its product page (https://cartesia.ai/ink) has the agent start replying on ``turn.eager_end``. So a turn's
transcripts only grow, and an eager end's words are ready when it fires: a caller who says nothing more ends the turn
with the eager end's words. The sources are silent on how the service cuts a turn into pieces to decode; the pause is
the emulator's choice, so a word is never cut in two. A stretch's words arrive only once it is closed: the emulator
sends no words it might revise, and feeds a decoder no audio past the stretch's tail. Decoding while the caller speaks
leaves only the last piece of audio to decode at the pause (PocketSphinx, in the demo's call: its words 60-150 ms
after the pause closed stretches of 0.6-2.3 s, where decoding a stretch whole after it took a quarter to a third of
its duration), so the eager end no longer waits for words the service would have ready. A recogniser with no decoder
free, or one that cannot stream, has the stretch decoded whole after its pause. Decoding never holds up the audio:
feeding a stretch only queues its audio for the decoder.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import math
from http import HTTPStatus
from typing import Any, NoReturn, Protocol

from voicebridge_dev.local.ink.audio import BYTES_PER_SAMPLE, as_s16le, decode
from voicebridge_dev.local.ink.clips import ClipRegistry
from voicebridge_dev.local.ink.errors import EndSession
from voicebridge_dev.local.ink.faults import DropFault, ErrorFault, StallFault
from voicebridge_dev.local.ink.pacing import RealtimeBudget, RealtimeMode
from voicebridge_dev.local.ink.recognisers import Recogniser, RecognitionStream, StreamingRecogniser
from voicebridge_dev.local.ink.records import InkSession, SentEvent, TurnRecord
from voicebridge_dev.local.ink.turns import CLIENT_RANGES, TurnDetector, TurnSettings, TurnSignal, voiced_turns
from voicebridge_dev.local.ink.websocket import WebSocket
from voicebridge_dev.local.service import ClientGone

logger = logging.getLogger(__name__)


class SessionHost(Protocol):
    """What a session needs of the emulator it runs in (:class:`~.emulator.InkEmulator`); it only reads them."""

    recogniser: Recogniser | None
    clips: ClipRegistry
    turn_settings: TurnSettings
    idle_timeout_s: float
    update_interval_ms: float
    realtime: RealtimeMode
    realtime_tolerance_ms: float

    def take_faults(self, session: InkSession, turn_ends: int) -> list[DropFault | ErrorFault | StallFault]: ...


# Context around a turn's voiced span that the matcher and recogniser see: the detector decides on 20 ms
# frames, so a clip's first or last syllable may sit just outside the voiced frames.
_PREROLL_MS = 100.0
_TAIL_MS = 200.0
# A delayed backlog is processed in pieces of at most this much audio, so events come out at their pace.
_BACKLOG_STEP_MS = 20.0
# WebSocket close code after an error the client caused (RFC 6455: policy violation).
_CLIENT_ERROR_CLOSE = 1008


class SessionRunner:
    """What both endpoints share: message order, pacing, audio accounting, events, faults, the idle timeout."""

    def __init__(self, emulator: SessionHost, session: InkSession, socket: WebSocket) -> None:
        self.emulator = emulator
        self.session = session
        self.socket = socket
        self._width = BYTES_PER_SAMPLE[session.encoding]
        self._held: list[dict[str, Any]] = []
        self._stall_until = 0.0
        self._turn_ends = 0
        self._transcripts: dict[tuple[int, int], str] = {}
        self._idle_timeout_s = emulator.idle_timeout_s
        # Messages received and not yet handled, oldest first; only a delay-mode backlog keeps any here.
        self._pending: collections.deque[bytes | str] = collections.deque()
        self._arrived = 0
        self._active_at = 0.0
        self._opened_at = 0.0

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self._opened_at = loop.time()
        budget = RealtimeBudget(
            self.emulator.realtime,
            self.emulator.realtime_tolerance_ms,
            bytes_per_second=self.session.sample_rate * self._width,
            opened_at=self._opened_at,
        )
        self._active_at = loop.time()
        try:
            await self.on_open()
            while True:
                try:
                    message = await self.socket.receive(self._next_wake(budget))
                except TimeoutError:
                    if not self._pending and loop.time() >= self._active_at + self._idle_timeout_s:
                        await self._fail_idle()
                else:
                    if message is None:
                        raise EndSession("client_closed" if self.socket.peer_closed else "connection_lost")
                    self._active_at = loop.time()
                    if isinstance(message, bytes):
                        self._arrived += len(message)
                        if not budget.admits(self._arrived, loop.time()):
                            await self._fail_realtime(budget)
                    self._pending.append(message)
                await self._drain(budget)
                await self._release_held()
        except EndSession as end:
            self.session.ended_by = end.reason
        except ClientGone:
            self.session.ended_by = "connection_lost"
        finally:
            self.on_end()

    def _next_wake(self, budget: RealtimeBudget) -> float:
        """When the loop must act without a message: idle timeout, held events, the next backlog step."""
        deadline = math.inf if self._pending else self._active_at + self._idle_timeout_s
        if self._held:
            deadline = min(deadline, self._stall_until)
        if self._pending and isinstance(self._pending[0], bytes):
            step = max(self._width, round(budget.bytes_per_second * _BACKLOG_STEP_MS / 1000.0))
            wanted = min(len(self._pending[0]), step)
            deadline = min(deadline, budget.due(len(self.session.received_audio), wanted))
        return deadline

    async def _drain(self, budget: RealtimeBudget) -> None:
        """Handle the pending messages, in order, as far as real time allows (audio waits in ``delay`` mode)."""
        loop = asyncio.get_running_loop()
        while self._pending:
            message = self._pending[0]
            if isinstance(message, str):
                self._pending.popleft()
                self.session.commands.append(message)
                await self.on_command(message)
                continue
            allowed = budget.processable(len(self.session.received_audio), loop.time())
            take = len(message) if allowed >= len(message) else int(allowed) // self._width * self._width
            if take == 0:
                return
            if take == len(message):
                self._pending.popleft()
            else:
                self._pending[0] = message[take:]
            piece = message[:take]
            self.session.received_audio += piece
            self._active_at = loop.time()
            await self.on_audio(piece)
            await self._apply_faults()

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
        now = asyncio.get_running_loop().time()
        audio_ms = self.session.audio_ms
        behind_ms = (now - self._opened_at) * 1000.0 - audio_ms
        self.session.events.append(SentEvent(payload["type"], payload, audio_ms, behind_ms))
        if now < self._stall_until:
            self._held.append(payload)
            return
        await self.socket.send_json(payload)

    async def emit_error(self, status_code: int, title: str, message: str, error_code: str | None) -> None:
        payload: dict[str, Any] = {
            "type": "error",
            "done": True,
            "status_code": status_code,
            "error_code": error_code,
            "title": title,
            "message": message,
        }
        await self.emit(payload)

    async def refuse(self, error: dict[str, Any]) -> None:
        """End a session the service cannot serve before it starts: ``error`` (an ``error`` event's fields) is its
        only event, then the socket closes."""
        logger.info("Ink emulator: session %s refused: %s", self.session.request_id, error["error_code"])
        await self.emit({"type": "error", "done": True, **error})
        try:
            await self.finish(_CLIENT_ERROR_CLOSE, error["title"], error["error_code"])
        except EndSession as ended:
            self.session.ended_by = ended.reason

    async def fail(self, message: str, error_code: str, ended_by: str | None = None, status: int = 400) -> NoReturn:
        """End the session for a client's mistake: the error event, titled with the status's HTTP phrase, then the
        socket closes; ``ended_by`` is the ``error_code`` unless given."""
        logger.info("Ink emulator: session %s: %s", self.session.request_id, message)
        title = HTTPStatus(status).phrase
        await self.emit_error(status, title, message, error_code)
        await self.finish(_CLIENT_ERROR_CLOSE, title, ended_by or error_code)

    async def _release_held(self) -> None:
        if self._held and asyncio.get_running_loop().time() >= self._stall_until:
            held, self._held = self._held, []
            for payload in held:
                await self.socket.send_json(payload)

    async def finish(self, code: int, reason: str, ended_by: str) -> NoReturn:
        """Deliver anything still held, close the WebSocket cleanly and end the session."""
        self._stall_until = 0.0
        await self._release_held()
        await self.socket.close(code, reason)
        raise EndSession(ended_by)

    async def _fail_idle(self) -> NoReturn:
        seconds = self._idle_timeout_s
        await self.emit_error(
            408, "Request Timeout", f"No message received for {seconds:g} s; session closed.", "idle_timeout"
        )
        logger.info("Ink emulator: session %s idle for %g s, closing", self.session.request_id, seconds)
        await self.finish(1000, "idle timeout", "idle_timeout")

    async def _fail_realtime(self, budget: RealtimeBudget) -> NoReturn:
        ahead_ms = budget.ahead_ms(self._arrived, asyncio.get_running_loop().time())
        await self.fail(
            f"Audio arrived {ahead_ms:.0f} ms ahead of real time (allowed: {budget.tolerance_ms:g} ms); realtime "
            "endpoints accept one second of audio per second (Ink emulator).",
            "audio_faster_than_realtime",
            "realtime_exceeded",
            429,
        )

    # ---- faults

    async def _apply_faults(self) -> None:
        for fault in self.emulator.take_faults(self.session, self._turn_ends):
            logger.info("Ink emulator: session %s hit injected fault %s", self.session.request_id, fault.kind)
            if isinstance(fault, DropFault):
                await self.socket.drop()
                raise EndSession("fault_drop")
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
        return as_s16le(self.session.encoding, audio)

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
            text = self.emulator.clips.final_transcript(pcm)
            if text is None:
                text = await self.recognise(pcm)
            self._transcripts[key] = self.stand_in(voiced_samples) if text is None else text
        return self._transcripts[key]


class TurnsRunner(SessionRunner):
    """``/stt/turns/websocket``: turns from the energy detector, events as the SDK's auto-finalize types."""

    def __init__(self, emulator: SessionHost, session: InkSession, socket: WebSocket, settings: TurnSettings) -> None:
        super().__init__(emulator, session, socket)
        self.detector = TurnDetector(settings, session.sample_rate)
        self._carry = b""
        self._turn: TurnRecord | None = None
        self._next_update = 0
        self._last_update = ""
        self._recognising: asyncio.Task[None] | None = None
        self._heard = ""
        """The embedded recogniser's words for this turn so far: final, only ever added to."""
        self._heard_through = 0
        """The sample up to which this turn's audio is decoded."""
        self._hears_stretches = emulator.recogniser is not None
        """The recogniser decodes this turn (no registered clip was heard in it)."""
        self._stream: RecognitionStream | None = None
        """The stretch being decoded as it arrives, from :attr:`_heard_through`, when the recogniser streams."""
        self._fed_through = 0
        """The sample up to which the open stream has been fed."""
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
        for signal in self.detector.feed(decode(self.session.encoding, data[:whole])):
            await self._on_signal(signal)
        if self.detector.in_turn and self.detector.samples_seen >= self._next_update:
            self._next_update = self.detector.samples_seen + self._update_every
            await self._update()
        if self.detector.in_turn and self._hears_stretches:
            self._hear_as_spoken()
            if self._stretch_closed():
                self._decode_stretch()

    async def _update(self) -> None:
        d = self.detector
        pcm = self.region(max(0, d.speech_start_sample - self._preroll), d.samples_seen)
        text = self.emulator.clips.partial_transcript(pcm)
        if text is not None:
            self._hears_stretches = False
            self._drop_stream()
            await self._emit_update(text)
        elif self.emulator.recogniser is None:
            await self._emit_update(self.stand_in(d.speech_end_sample - d.speech_start_sample))

    def _stretch_closed(self) -> bool:
        """Speech not yet decoded is followed by a pause: its words can be final."""
        d = self.detector
        return d.speech_end_sample > self._heard_through and d.samples_seen >= d.speech_end_sample + self._tail

    def _hear_as_spoken(self) -> None:
        """Feed the stretch being spoken to a decoder of its own as its audio arrives, when the recogniser streams and
        has one free, so that its words are ready when a pause closes it.

        A stretch opens once the previous one's words are in (it starts where they end) and is fed no further than
        :data:`_TAIL_MS` past its voiced audio: the audio after that is the next stretch's."""
        d = self.detector
        recogniser = self.emulator.recogniser
        idle = self._recognising is None or self._recognising.done()
        unheard = d.speech_end_sample > self._heard_through
        if self._stream is None and idle and unheard and isinstance(recogniser, StreamingRecogniser):
            self._stream = recogniser.open_stream(self.session.sample_rate)
            self._fed_through = self._heard_through
        self._feed_stream(min(d.samples_seen, d.speech_end_sample + self._tail))

    def _feed_stream(self, end_sample: int) -> None:
        if self._stream is not None and end_sample > self._fed_through:
            self._stream.feed(self.region(self._fed_through, end_sample))
            self._fed_through = end_sample

    def _take_stream(self, end_sample: int) -> RecognitionStream | None:
        """The open stream, fed through ``end_sample`` and no longer fed by the session."""
        self._feed_stream(end_sample)
        stream, self._stream = self._stream, None
        return stream

    def _drop_stream(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.abandon()

    def _decode_stretch(self) -> None:
        """Finish decoding the stretch a pause just closed, unless one is being finished: checked on every piece of
        audio, not only at updates, so the words are ready as soon as they can be."""
        if self._recognising is None or self._recognising.done():
            # Decoding a stretch whole costs a good fraction of its duration, and a stream's last audio a little:
            # done inline either would delay the audio behind it and turn.end, so it runs beside the session.
            end = self.detector.speech_end_sample + self._tail
            self._recognising = asyncio.create_task(self._recognise_update(end, self._finish_stream(end)))

    def _finish_stream(self, end_sample: int) -> asyncio.Future[str] | None:
        """The open stream's words, fed through ``end_sample``, being finished beside the loop; started at once, so
        the decoder is given back even if the session ends before they are read."""
        stream = self._take_stream(end_sample)
        return None if stream is None else asyncio.get_running_loop().run_in_executor(None, stream.finish)

    async def _recognise_update(self, end_sample: int, finishing: asyncio.Future[str] | None) -> None:
        turn = self._turn
        try:
            await self._decode_through(end_sample, finishing)
        except Exception:
            logger.exception("Ink emulator: recogniser failed on a stretch of a turn")
            return
        if turn is not None and turn is self._turn:
            await self._emit_update(self._heard)

    async def _decode_through(self, end_sample: int, finishing: asyncio.Future[str] | None = None) -> None:
        """Add the words of the turn's audio from where decoding stopped up to ``end_sample``, if any was voiced:
        the open stream's (``finishing``, or finished now), or else the region's decoded whole."""
        if finishing is None:
            # A stream opens only on voiced audio not yet heard, so none is open when there is none.
            if self.detector.speech_end_sample <= self._heard_through or end_sample <= self._heard_through:
                return
            finishing = self._finish_stream(end_sample)
        turn, start = self._turn, self._heard_through
        if finishing is not None:
            words = await finishing
        else:
            words = await self.recognise(self.region(start, end_sample)) or ""
        if turn is self._turn and self._heard_through == start:
            self._heard = " ".join(part for part in (self._heard, words) if part)
            self._heard_through = end_sample

    async def _heard_through_sample(self, end_sample: int) -> str:
        """The turn's words through ``end_sample``: a stretch being decoded is waited for, the words heard are kept
        and only audio after them is decoded."""
        if self._recognising is not None and not self._recognising.done():
            await asyncio.wait({self._recognising})
        await self._decode_through(end_sample)
        return self._heard

    async def _emit_update(self, text: str) -> None:
        if text and text != self._last_update:
            self._last_update = text
            await self.emit({"type": "turn.update", "transcript": text})

    def on_end(self) -> None:
        if self._recognising is not None:
            self._recognising.cancel()
        self._drop_stream()

    async def _on_signal(self, signal: TurnSignal) -> None:
        ms = self.session.ms_of
        if signal.kind == "start":
            self._turn = TurnRecord(
                speech_start_ms=ms(self.detector.speech_start_sample), start_ms=ms(signal.at_sample)
            )
            self.session.turns.append(self._turn)
            self._drop_stream()
            # The first update waits until a clip's head anchor can have arrived.
            self._next_update = signal.at_sample + self._update_every
            self._last_update = ""
            self._heard, self._heard_through = "", max(0, self.detector.speech_start_sample - self._preroll)
            self._hears_stretches = self.emulator.recogniser is not None
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
        if self.emulator.recogniser is None:
            return await self.transcribe(start, end, d.speech_end_sample - d.speech_start_sample)
        clip = self.emulator.clips.final_transcript(self.region(start, end))
        return clip if clip is not None else await self._heard_through_sample(end)

    async def _end_turn(self, at_sample: int) -> None:
        turn = self._turn
        if turn is None:
            return
        transcript = await self._final_transcript(at_sample)
        turn.speech_end_ms = self.session.ms_of(self.detector.speech_end_sample)
        turn.end_ms = self.session.ms_of(at_sample)
        turn.transcript = transcript
        self._turn = None
        # A registered clip's turn ends without the words of the stretch a decoder was fed.
        self._drop_stream()
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
            await self.fail(f"Unknown command: {text[:200]}", "invalid_command")

    async def _configure(self, turn: Any) -> None:
        allowed = set(CLIENT_RANGES)
        if not isinstance(turn, dict) or not set(turn) <= allowed:
            await self.fail(f"config.turn accepts {sorted(allowed)}", "invalid_config")
        try:
            values = {name: float(value) for name, value in turn.items() if value is not None}
            self.detector.settings = self.detector.settings.with_client_values(values)
        except (TypeError, ValueError) as exc:
            await self.fail(str(exc), "invalid_config")


class ManualRunner(SessionRunner):
    """``/stt/websocket``: audio is transcribed when the client says ``finalize`` or ``close``."""

    def __init__(self, emulator: SessionHost, session: InkSession, socket: WebSocket) -> None:
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
            await self.fail(f"Unknown command: {command[:200]}", "invalid_command")

    async def _finalize(self) -> None:
        start = self._segment_start
        end = len(self.session.received_audio) // self._width
        self._segment_start = end
        rate = self.session.sample_rate
        # The detector learns the line's noise from what came before the segment too (up to its window).
        context = max(0, start - round(rate * self.emulator.turn_settings.noise_window_ms / 1000.0))
        samples = decode(self.session.encoding, bytes(self.session.received_audio[context * self._width :]))
        spans = [
            (max(start, context + first), context + last)
            for first, last in voiced_turns(samples, self.emulator.turn_settings, rate)
            if context + last > start
        ]
        if not spans:
            return
        first, last = spans[0][0], spans[-1][1]
        text = await self.transcribe(start, end, last - first)
        if not text:
            return
        # Finals are deltas joined verbatim by clients, so every final after the first carries its own space.
        delta = f" {text}" if self._spoken else text
        self._spoken = True
        words = text.split()
        first_s, last_s = first / rate, last / rate
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
