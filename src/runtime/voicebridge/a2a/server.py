"""The agent server: Connect's WebSocket per voice contact, the health check, and draining.

- ``GET /health``: 200 ``{"status": "ok", "sessions": N}`` while serving, 503 once draining (the load balancer stops
  sending new contacts).
- The WebSocket (any other path): the upgrade must carry ``Authorization: Bearer <key>`` with a key
  :class:`~voicebridge.a2a.auth.ApiKeys` accepts, or it gets 401 and nothing else; the ``A2A-Extensions`` header is
  echoed on the 101; ``traceparent`` is kept for the first turn's trace. One :class:`AgentSession` per socket.
- Frames above :data:`~voicebridge.a2a.protocol.MAX_INBOUND_FRAME` close that socket (1009), never another.
- ``SIGTERM`` (a deployment, a scale-in): health turns 503, new upgrades get 503, the live sessions run to their end
  for up to ``drain_s``, then what remains is closed.
- Every 15 s, ``StreamingSessions`` (the sessions this task holds: what the service scales on) and the metrics the
  sessions added are flushed (Embedded Metric Format, in the task's log), with ``StreamingLoopLag``: the longest the
  event loop was late in those 15 s. Every session's frames in and out go through the one loop, so a loop kept busy
  (or starved of the interpreter by the sessions' threads) delays every call's audio at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import threading
from collections.abc import Callable
from http import HTTPStatus
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from websockets.asyncio.server import ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from voicebridge.a2a import protocol
from voicebridge.a2a.auth import ApiKeys
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings
from voicebridge.errors import ConfigurationError
from voicebridge.ink.transcriber import MetricSink
from voicebridge.telemetry import logger, metrics

METRICS_EVERY_S = 15.0
PING_INTERVAL_S = 20.0
PING_TIMEOUT_S = 60.0
"""WebSocket keepalive: a ping every 20 s, and a peer that answers none within 60 s is gone. Connect's text names no
keepalive (docs/protocols.md, *What the sources leave open*); a pong is the peer's duty (RFC 6455 §5.5.2), and the
timeout is long enough that a slow pong never drops a live call."""
LAG_EVERY_S = 0.05
"""How often the event loop's lateness is sampled: a sleep this long that wakes later than asked."""


class AgentServer:
    """Serves Connect's sockets until stopped; ``sessions`` is how many are live."""

    def __init__(
        self,
        engine: Callable[[], Engine],
        settings: StreamSettings,
        keys: ApiKeys,
        *,
        host: str = "0.0.0.0",
        port: int = 8080,
        drain_s: float = 110.0,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._keys = keys
        self.host, self.port = host, port
        self._drain_s = drain_s
        self._sink = MetricSink(threading.Lock())
        self._sessions: set[AgentSession] = set()
        self.draining = False
        self._stopped = asyncio.Event()
        self.port_bound: int | None = None
        self._lag_ms = 0.0
        """The longest the loop was late since the last flush."""

    @property
    def sessions(self) -> int:
        return len(self._sessions)

    @property
    def loop_lag_ms(self) -> float:
        """The longest the event loop woke late since the metrics were last flushed."""
        return self._lag_ms

    async def serve(self, *, ready: asyncio.Event | None = None) -> None:
        """Serve until :meth:`stop` (or SIGTERM where signals can be handled), then drain."""
        async with serve(
            self._connection,
            self.host,
            self.port,
            process_request=self._process_request,
            process_response=self._process_response,
            max_size=protocol.MAX_INBOUND_FRAME,
            compression=None,
            ping_interval=PING_INTERVAL_S,
            ping_timeout=PING_TIMEOUT_S,
        ) as server:
            self.port_bound = next(iter(server.sockets)).getsockname()[1]
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, self.stop)
            reporter = asyncio.create_task(self._report())
            watcher = asyncio.create_task(self._watch_lag())
            logger.info("agent server listening", port=self.port_bound)
            if ready is not None:
                ready.set()
            await self._stopped.wait()
            await self._drain()
            reporter.cancel()
            watcher.cancel()
            self._flush()

    def stop(self) -> None:
        """Stop taking contacts and drain the live ones."""
        self.draining = True
        self._stopped.set()

    async def _drain(self) -> None:
        deadline = asyncio.get_running_loop().time() + self._drain_s
        while self._sessions and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.2)
        for session in list(self._sessions):
            await session.close("the agent server stopped")

    # -- HTTP before the upgrade

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?")[0] == "/health":
            status = HTTPStatus.SERVICE_UNAVAILABLE if self.draining else HTTPStatus.OK
            body = json.dumps({"status": "draining" if self.draining else "ok", "sessions": self.sessions})
            return _respond(connection, status, body, "application/json")
        if self.draining:
            return _respond(connection, HTTPStatus.SERVICE_UNAVAILABLE, "", None)
        try:
            accepted = self._keys.accepts(request.headers.get("Authorization"))
        except ConfigurationError as exc:
            logger.error("the A2A key could not be read; refusing the contact", reason=exc.safe_message)
            return _respond(connection, HTTPStatus.SERVICE_UNAVAILABLE, "", None)
        if not accepted:
            logger.warning("upgrade refused: wrong or missing bearer key")
            return _respond(connection, HTTPStatus.UNAUTHORIZED, "", None)
        return None

    def _process_response(self, connection: ServerConnection, request: Request, response: Response) -> None:
        if response.status_code == HTTPStatus.SWITCHING_PROTOCOLS and request.headers.get("A2A-Extensions"):
            # Echoed to confirm the extension is active.
            response.headers["A2A-Extensions"] = request.headers["A2A-Extensions"]

    # -- one socket

    async def _connection(self, connection: ServerConnection) -> None:
        async def send(frame: str) -> None:
            for fitting in protocol.fitted(frame):
                await connection.send(fitting)

        session = AgentSession(
            self._engine(),
            self._settings,
            send,
            sink=self._sink,
            trace_parent=connection.request.headers.get("traceparent") if connection.request else None,
        )
        self._sessions.add(session)
        reason = "the socket closed"
        try:
            finished = asyncio.create_task(session.wait_finished())
            async for frame in _frames(connection, finished):
                await session.feed(frame)
            if session.finished is not None:
                reason = f"finished: {session.finished[0]}"
                # After FINISH nothing more is sent; Connect closes, or the agent does.
                await connection.close()
            elif session.superseded:
                reason = "taken over by another session"
                # A socket that went quiet: closed normally, whether or not anyone is still at its other end.
                await connection.close()
        except ConnectionClosed:
            pass
        finally:
            self._sessions.discard(session)
            await session.close(reason)

    # -- metrics

    async def _report(self) -> None:
        while True:
            self._sink.add("StreamingSessions", MetricUnit.Count, self.sessions)
            lag, self._lag_ms = self._lag_ms, 0.0
            self._sink.add("StreamingLoopLag", MetricUnit.Milliseconds, round(lag, 1))
            self._flush()
            await asyncio.sleep(METRICS_EVERY_S)

    async def _watch_lag(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(LAG_EVERY_S)
            self._lag_ms = max(self._lag_ms, (loop.time() - asked - LAG_EVERY_S) * 1000)

    def _flush(self) -> None:
        with self._sink.lock:
            metrics.flush_metrics(raise_on_empty_metrics=False)


async def _frames(connection: ServerConnection, finished: asyncio.Task[None]) -> Any:
    """The socket's frames until it closes or the session has finished.

    Each frame is read straight from the socket, so frames already received come one after another without a turn of
    the event loop between them; ``finished`` cancels only a read that is waiting for the next frame. Each frame read
    by a task of its own, raced against ``finished``, cost three turns of the loop, and under load, when each turn
    took longer, the loop read twenty sessions' caller audio slower than real time (docs/benchmarks.md,
    streaming-load)."""
    reader = asyncio.current_task()
    waiting = False

    def stop(_: asyncio.Task[None]) -> None:
        if waiting and reader is not None:
            reader.cancel()

    finished.add_done_callback(stop)
    try:
        while not finished.done():
            waiting = True
            try:
                frame = await connection.recv()
            except asyncio.CancelledError:
                if not finished.done() or reader is None:
                    raise
                # The session's end stopped the read, not a cancellation of the connection.
                reader.uncancel()
                return
            finally:
                waiting = False
            yield frame
    finally:
        finished.remove_done_callback(stop)


def _respond(connection: ServerConnection, status: HTTPStatus, body: str, content_type: str | None) -> Response:
    response = connection.respond(status, body)
    if content_type is not None:
        response.headers["Content-Type"] = content_type
    elif not body:
        response.headers = Headers({"Content-Length": "0"})
    return response
