"""Ink's two realtime WebSocket protocols, one session at a time, as the official ``cartesia`` SDK speaks them.

Turn detection — ``GET /stt/turns/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=8000``::

    client → binary audio frames; text {"type": "config", "turn": {...}} | {"type": "close"}
    server → connected, then per turn: turn.start → turn.update* → (turn.eager_end → turn.resume)* → turn.end;
             error {message, status_code, title, error_code} at any time

Manual finalize — ``GET /stt/websocket?model=ink-2&encoding=pcm_s16le&sample_rate=8000``::

    client → binary audio frames; text "finalize" | "close" (or the older "done")
    server → transcript {text (a delta), is_final, duration, language, words}* → flush_done per finalize;
             on close: the remaining finals → done → the socket closes

Every event carries ``request_id``. Event fields are exactly those of the SDK's ``cartesia.types.stt`` models.
A session with no audio for ``idle_timeout_s`` (20 s, as the service) receives an ``error`` and is closed.
Transcripts come from clips registered alongside their audio, then the embedded recogniser, then a
deterministic stand-in such as ``[speech 1.23 s]``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import TYPE_CHECKING, Any

from voicebridge_dev.local.ink.audio import BYTES_PER_SAMPLE, as_s16le, decode
from voicebridge_dev.local.ink.errors import ConnectionLost, EndSession
from voicebridge_dev.local.ink.faults import DropFault, ErrorFault, StallFault
from voicebridge_dev.local.ink.records import InkSession, SentEvent, TurnRecord
from voicebridge_dev.local.ink.turns import CLIENT_RANGES, TurnDetector, TurnSettings, TurnSignal, voiced_span
from voicebridge_dev.local.ink.websocket import WebSocket

if TYPE_CHECKING:
    from voicebridge_dev.local.ink.emulator import InkEmulator

__all__ = ["ManualRunner", "SessionRunner", "TurnsRunner"]

logger = logging.getLogger(__name__)

# Context around a turn's voiced span that the matcher and recogniser see: the detector decides on 20 ms
# frames, so a clip's first or last syllable may sit just outside the voiced frames.
_PREROLL_MS = 100.0
_TAIL_MS = 200.0


class SessionRunner:
    """What both endpoints share: audio accounting, event delivery, faults, the idle timeout."""

    def __init__(self, emulator: InkEmulator, session: InkSession, socket: WebSocket) -> None:
        self.emulator = emulator
        self.session = session
        self.socket = socket
        self._width = BYTES_PER_SAMPLE[session.encoding]
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
                    raise EndSession("client_closed" if self.socket.peer_closed else "connection_lost")
                if isinstance(message, bytes):
                    self.session.received_audio += message
                    idle_deadline = loop.time() + self.emulator.idle_timeout_s
                    await self.on_audio(message)
                    await self._apply_faults()
                else:
                    self.session.commands.append(message)
                    await self.on_command(message)
                await self._release_held()
        except EndSession as end:
            self.session.ended_by = end.reason
        except ConnectionLost:
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
        raise EndSession(ended_by)

    async def _fail_idle(self) -> None:
        seconds = self.emulator.idle_timeout_s
        await self.emit_error(
            408, "Request Timeout", f"No audio received for {seconds:g} s; session closed.", "idle_timeout"
        )
        logger.info("Ink emulator: session %s idle for %g s, closing", self.session.request_id, seconds)
        await self.finish(1000, "idle timeout", "idle_timeout")

    # ---- faults

    async def _apply_faults(self) -> None:
        for fault in self.emulator.take_faults(self.session, self._turn_ends):
            logger.info("Ink emulator: session %s hit injected fault %s", self.session.request_id, fault.kind)
            if isinstance(fault, DropFault):
                self.socket.abort()
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

    def __init__(self, emulator: InkEmulator, session: InkSession, socket: WebSocket, settings: TurnSettings) -> None:
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
        for signal in self.detector.feed(decode(self.session.encoding, data[:whole])):
            await self._on_signal(signal)
        if self.detector.in_turn and self.detector.samples_seen >= self._next_update:
            self._next_update = self.detector.samples_seen + self._update_every
            await self._update()

    async def _update(self) -> None:
        d = self.detector
        pcm = self.region(max(0, d.speech_start_sample - self._preroll), d.samples_seen)
        text = self.emulator.clips.partial_transcript(pcm)
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
        allowed = set(CLIENT_RANGES)
        if not isinstance(turn, dict) or not set(turn) <= allowed:
            await self.emit_error(400, "Bad Request", f"config.turn accepts {sorted(allowed)}", "invalid_config")
            return
        try:
            values = {name: float(value) for name, value in turn.items() if value is not None}
            self.detector.settings = self.detector.settings.with_client_values(values)
        except (TypeError, ValueError) as exc:
            await self.emit_error(400, "Bad Request", str(exc), "invalid_config")


class ManualRunner(SessionRunner):
    """``/stt/websocket``: audio is transcribed when the client says ``finalize`` or ``close``."""

    def __init__(self, emulator: InkEmulator, session: InkSession, socket: WebSocket) -> None:
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
        samples = decode(self.session.encoding, bytes(self.session.received_audio[start * self._width :]))
        span = voiced_span(samples, self.emulator.turn_settings, rate)
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
