"""The Ink emulator's one port: WebSocket handshakes that open sessions, and the control plane, on asyncio.

A handshake is admitted as the service admits it: a known path, the API key (``Authorization: Bearer <key>``
or ``X-API-Key: <key>``) when the emulator has one, a supported model, encoding and sample rate, turn settings
within the service's ranges, and on the manual endpoint a language the model transcribes; the API version arrives
as the ``Cartesia-Version`` header (or the ``cartesia_version`` query parameter) and is recorded per session. A
refused handshake is answered with its status and ``{"error", "status_code"}``.

Languages (``language``, ISO 639-1, default ``en``), manual endpoint only (docs/protocols.md, "Languages"):

- ``ink-whisper``: the 100 codes the cartesia SDK (4.2.0) lists for the ink-whisper model
  (``cartesia.resources.stt.STT.transcribe``'s ``language``; LiveKit's Cartesia page lists the same for
  ``cartesia/ink-whisper``);
- ``ink-2``: English, French, Hindi, Japanese and Spanish (Cartesia's *Languages* page: "`ink-2` supports English,
  French, Hindi, Japanese, and Spanish, and detects them automatically").

**Unsourced**: how the service refuses a language its model does not serve (status and message); the emulator
refuses the handshake with 400, as it does any other bad query value. The turns endpoint takes no ``language`` here:
the product never sends one there.

A model the endpoint does not serve is not refused at the handshake: the socket opens and its first and only event
is the error Cartesia's *Realtime Speech-to-Text (Auto)* reference shows for it, ``{"type": "error", "title":
"Invalid model", "message": "The model is not valid, make sure it is a valid model ID.", "error_code":
"model_not_found", "doc_url": …, "status_code": 400, "request_id": …}``, then the socket closes (whether
``connected`` comes first is not documented: it does not here).

Keyterms arrive as repeated ``keyterm`` query parameters, as the SDK sends them (``keyterm=Acme&keyterm=Zorblax``),
"up to 100 keyterms per connection, up to a total of 1200 characters across all keyterms" (Cartesia, *Keyterm
Prompting*); they are recorded on the session. What the service answers a connection past those limits is not
documented: the emulator refuses the handshake with 400.

Control plane, JSON over plain HTTP on the same port (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/transcripts  {"pcm_base64", "transcript", "sample_rate"?}  register a clip
    POST   /_emulator/faults       {"kind": "drop" | "error" | "reject" | "stall", ...}  arm a fault
    DELETE /_emulator/faults                                                   disarm all faults
    GET    /_emulator/sessions                                                 session summaries
    POST   /_emulator/config       {"realtime"?, "realtime_tolerance_ms"?, "end_delay_ms"?, "idle_timeout_s"?}
    GET    /_emulator/config                                                   the settings new sessions get
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, fields
from http import HTTPStatus
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl, urlsplit

from websockets.http11 import Request, Response
from websockets.server import ServerProtocol

from voicebridge_dev.local.ink.audio import BYTES_PER_SAMPLE
from voicebridge_dev.local.ink.errors import EndSession, HandshakeRejected
from voicebridge_dev.local.ink.faults import RejectFault
from voicebridge_dev.local.ink.records import HandshakeRecord, InkSession
from voicebridge_dev.local.ink.sessions import ManualRunner, SessionHost, SessionRunner, TurnsRunner
from voicebridge_dev.local.ink.turns import CLIENT_RANGES, TurnSettings
from voicebridge_dev.local.ink.websocket import WebSocket
from voicebridge_dev.local.service import CONTROL_PREFIX, ClientGone, ControlPlane, InFlight

logger = logging.getLogger(__name__)

TURNS_PATH = "/stt/turns/websocket"
MANUAL_PATH = "/stt/websocket"
_TURN_MODELS = ("ink-2",)
_MANUAL_MODELS = ("ink-2", "ink-whisper")
_WHISPER_CODES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml "
    "cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am "
    "yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
)
WHISPER_LANGUAGES = frozenset(_WHISPER_CODES.split())
INK_2_LANGUAGES = frozenset({"en", "fr", "hi", "ja", "es"})
MAX_KEYTERMS = 100
MAX_KEYTERM_CHARS = 1200
MODEL_NOT_FOUND = {
    "title": "Invalid model",
    "message": "The model is not valid, make sure it is a valid model ID.",
    "error_code": "model_not_found",
    "doc_url": "https://docs.cartesia.ai/build-with-cartesia/stt/latest",
    "status_code": 400,
}
"""The in-socket error of a model the endpoint does not serve, as Cartesia's reference shows it."""
MIN_RATE, MAX_RATE = 8000, 48000
_MAX_HTTP_BODY = 64 * 1024 * 1024
_MAX_WS_MESSAGE = 4 * 1024 * 1024


# The loop-lag probe's sleep: short enough to catch a late wake of a few tens of ms, at twenty wakes a second.
_LAG_PROBE_S = 0.05


class LoopLag:
    """How late the emulator's event loop has woken, the worst since the last :meth:`reset`: a probe sleeps
    :data:`_LAG_PROBE_S` at a time. Under load it says whether the emulator was itself behind its sessions' audio
    (every session is served by this one loop), or the audio came late."""

    def __init__(self) -> None:
        self.worst_ms = 0.0

    def reset(self) -> float:
        """The worst so far, then start again."""
        worst, self.worst_ms = self.worst_ms, 0.0
        return worst

    async def watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            due = loop.time() + _LAG_PROBE_S
            await asyncio.sleep(_LAG_PROBE_S)
            self.worst_ms = max(self.worst_ms, (loop.time() - due) * 1000.0)


class Backend(SessionHost, Protocol):
    """What the server needs of the emulator it serves (:class:`~.emulator.InkEmulator`)."""

    in_flight: InFlight
    api_key: str | None
    loop_lag: LoopLag

    def note_handshake(self, record: HandshakeRecord) -> None: ...
    def note_session(self, session: InkSession) -> None: ...
    def take_reject(self) -> RejectFault | None: ...


@dataclass(frozen=True)
class _HttpRequest:
    method: str
    target: str
    headers: dict[str, str]
    head: bytes


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
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\nConnection: close\r\nServer: ink-emulator\r\n\r\n"
    )
    return head.encode() + payload


class InkServer:
    """Serves one emulator's connections, each a WebSocket session or a control request, from an asyncio loop of
    its own: bound to ``address`` when made, run by :meth:`serve_forever` on the emulator's serving thread
    (a :class:`~voicebridge_dev.local.service.Front`)."""

    def __init__(self, address: tuple[str, int], emulator: Backend, control: ControlPlane) -> None:
        self.emulator = emulator
        self.control = control
        self._tasks: set[asyncio.Task[None]] = set()
        self._sockets: set[WebSocket] = set()
        self._loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        try:
            self._server = self._loop.run_until_complete(asyncio.start_server(self.on_connection, *address))
        except OSError:
            self._loop.close()
            raise
        self.server_address = self._server.sockets[0].getsockname()[:2]

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Serve until :meth:`close_all`; the loop wakes on its own events, so ``poll_interval`` is unused."""
        try:
            self._loop.run_until_complete(self._run())
        finally:
            self._loop.close()

    def close_all(self) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)

    async def _run(self) -> None:
        watch = asyncio.create_task(self.emulator.loop_lag.watch())
        async with self._server:
            await self._stop.wait()
            watch.cancel()
            self._server.close()
            # End every open session and connection: the emulator is stopping.
            for socket in list(self._sockets):
                socket.close_now(1001, "Ink emulator stopping")
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def on_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            with self.emulator.in_flight.serving():
                await self._serve(reader, writer)
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(10):
                head = await reader.readuntil(b"\r\n\r\n")
            request = _parse_head(head)
            if request is None:
                writer.write(_http_response(400, {"message": "malformed request"}))
            elif request.target.startswith(CONTROL_PREFIX):
                writer.write(await self._control(request, reader))
            elif request.headers.get("upgrade", "").lower() == "websocket":
                await self._websocket(request, reader, writer)
            else:
                writer.write(_http_response(404, {"message": f"no route for {request.target}"}))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass

    # ---- control plane

    async def _control(self, request: _HttpRequest, reader: asyncio.StreamReader) -> bytes:
        try:
            length = int(request.headers.get("content-length", "0") or 0)
        except ValueError:
            return _http_response(400, {"message": "invalid Content-Length"})
        if not 0 <= length <= _MAX_HTTP_BODY:
            return _http_response(400, {"message": "body too large"})
        body = await reader.readexactly(length) if length else b""
        answer = self.control.dispatch(request.method, request.target, body)
        if answer is None:
            return _http_response(404, {"message": f"no route for {request.method} {request.target}"})
        return _http_response(answer.status, answer.payload)

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
        pairs = parse_qsl(target.query)
        query = dict(pairs)
        keyterms = tuple(value for name, value in pairs if name == "keyterm")
        version = handshake.headers.get("Cartesia-Version") or query.get("cartesia_version")
        try:
            endpoint, settings, model_known = self._admit(target.path, query, keyterms, handshake)
            response = protocol.accept(handshake)
        except HandshakeRejected as rejected:
            response = self._reject(protocol, rejected)
        response.headers["Server"] = "ink-emulator"
        self.emulator.note_handshake(HandshakeRecord(target.path, query, response.status_code, version))
        protocol.send_response(response)
        socket = WebSocket(protocol, reader, writer)
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
            keyterms=keyterms,
        )
        self.emulator.note_session(session)
        runner: SessionRunner
        if endpoint == "turns":
            runner = TurnsRunner(self.emulator, session, socket, settings)
        else:
            runner = ManualRunner(self.emulator, session, socket)
        logger.info("Ink emulator: session %s opened on %s", session.request_id, target.path)
        self._sockets.add(socket)
        try:
            if model_known:
                await runner.run()
            else:
                await runner.refuse(MODEL_NOT_FOUND)
        except asyncio.CancelledError:
            session.ended_by = "emulator_stopped"
            raise
        except Exception:
            logger.exception("Ink emulator: session %s failed", session.request_id)
            session.ended_by = "emulator_error"
            with contextlib.suppress(ClientGone, EndSession):
                await runner.emit_error(500, "Internal Server Error", "Ink emulator failure", "internal_error")
                await socket.close(1011, "emulator failure")
        finally:
            self._sockets.discard(socket)
            logger.info("Ink emulator: session %s ended (%s)", session.request_id, session.ended_by)
            session.mark_closed()

    def _admit(
        self, path: str, query: Mapping[str, str], keyterms: tuple[str, ...], handshake: Request
    ) -> tuple[Literal["turns", "manual"], TurnSettings, bool]:
        """The endpoint, its turn settings, and whether it serves the model asked for (an in-socket error if not)."""
        if path not in (TURNS_PATH, MANUAL_PATH):
            raise HandshakeRejected(404, f"No route for {path}")
        if self.emulator.api_key is not None:
            bearer = handshake.headers.get("Authorization", "")
            keys = {handshake.headers.get("X-API-Key"), bearer.removeprefix("Bearer ").strip() or None}
            if self.emulator.api_key not in keys:
                raise HandshakeRejected(401, "Invalid API key")
        reject = self.emulator.take_reject()
        if reject is not None:
            raise HandshakeRejected(reject.status_code, "Concurrency limit exceeded (injected by the Ink emulator)")
        endpoint: Literal["turns", "manual"] = "turns" if path == TURNS_PATH else "manual"
        models = _TURN_MODELS if endpoint == "turns" else _MANUAL_MODELS
        if "model" not in query:
            raise HandshakeRejected(400, "model is required")
        model = query["model"]
        model_known = model.startswith(models)
        if endpoint == "manual" and model_known:
            language = query.get("language", "en")
            served = WHISPER_LANGUAGES if model.startswith("ink-whisper") else INK_2_LANGUAGES
            if language not in served:
                raise HandshakeRejected(400, f"Unsupported language {language!r} for model {model!r}")
        if len(keyterms) > MAX_KEYTERMS:
            raise HandshakeRejected(400, f"keyterm: at most {MAX_KEYTERMS} keyterms per connection")
        if sum(len(term) for term in keyterms) > MAX_KEYTERM_CHARS:
            raise HandshakeRejected(400, f"keyterm: at most {MAX_KEYTERM_CHARS} characters across all keyterms")
        if query.get("encoding") not in BYTES_PER_SAMPLE:
            raise HandshakeRejected(400, f"encoding must be one of {sorted(BYTES_PER_SAMPLE)}")
        try:
            rate = int(query.get("sample_rate", ""))
        except ValueError:
            rate = 0
        if not MIN_RATE <= rate <= MAX_RATE:
            raise HandshakeRejected(400, f"sample_rate must be an integer in [{MIN_RATE}, {MAX_RATE}]")
        settings = self.emulator.turn_settings
        if endpoint == "turns":
            names = {f"turn_{f.name}": f.name for f in fields(TurnSettings) if f.name in CLIENT_RANGES}
            try:
                values = {names[key]: float(value) for key, value in query.items() if key in names}
                settings = settings.with_client_values(values)
            except ValueError as exc:
                raise HandshakeRejected(400, str(exc)) from exc
        return endpoint, settings, model_known

    @staticmethod
    def _reject(protocol: ServerProtocol, rejected: HandshakeRejected) -> Response:
        response = protocol.reject(rejected.status, "")
        body = json.dumps({"error": rejected.message, "status_code": rejected.status}).encode()
        response.headers["Content-Type"] = "application/json"
        del response.headers["Content-Length"]
        response.headers["Content-Length"] = str(len(body))
        response.body = body
        return response
