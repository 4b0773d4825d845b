"""The HTTP server every emulator's API is served by: a server that knows its open connections, so stopping it can
cut its keep-alive ones, and a handler base that reads requests, writes JSON answers, serves the control plane and
lets a client go quietly when it hangs up.

An emulator's handler keeps only its protocol: its routes (``do_POST`` and what it calls), how it renders an error,
and what it answers a path it has no operation for (:meth:`EmulatorHandler.unknown_operation`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import sys
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Final, Generic, Protocol, Self, TypedDict, TypeVar, Unpack, cast
from urllib.parse import urlsplit

from voicebridge_dev.local.service.control import ControlPlane
from voicebridge_dev.local.service.emulator import Emulator
from voicebridge_dev.local.service.errors import ApiError, ClientGone, Stopping
from voicebridge_dev.local.service.faults import F, FaultQueue, RequestFault
from voicebridge_dev.local.service.lifecycle import InFlight
from voicebridge_dev.local.service.records import AnswerState, CallLog, CallRecord, CallState

E = TypeVar("E")


class Serving(Protocol[F]):
    """What every emulator's handler needs of it: its fault queue, its count of work in flight, and whether it is
    stopping. A handler's own ``Backend`` protocol adds what its protocol needs."""

    @property
    def faults(self) -> FaultQueue[F]: ...
    @property
    def in_flight(self) -> InFlight: ...
    @property
    def stopping(self) -> threading.Event: ...


class EmulatorServer(ThreadingHTTPServer, Generic[E]):
    """The server of one emulator: its handlers reach the emulator (``E``) and its control plane through it. A
    handler types the emulator as only what it needs of it, so the server module need not import the emulator's.

    It knows its open connections, so stopping it can cut idle keep-alive ones (a client's connection pool would
    otherwise keep their handler threads reading).
    """

    daemon_threads = False
    block_on_close = True

    def __init__(
        self, address: tuple[str, int], handler: type[EmulatorHandler[Any]], emulator: E, control: ControlPlane
    ) -> None:
        self.emulator = emulator
        self.control = control
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, handler)

    def close_all(self) -> None:
        """Stop serving, cut every open connection and close the listening socket."""
        self.shutdown()
        with self.connections_lock:
            open_connections = list(self.connections)
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self.server_close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up (a pool dropping a connection, a call cancelled mid-answer) is the client's doing:
        # socketserver would print a traceback for each, one per call under load.
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)


class EmulatorHandler(BaseHTTPRequestHandler, Generic[E]):
    """The handler of an :class:`EmulatorServer`, its connection registered with the server for as long as it is
    open; ``label`` names the emulator in its log lines."""

    label: ClassVar[str]
    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections from a client's pool are dropped after this many seconds.
    timeout = 60

    def setup(self) -> None:
        super().setup()
        # Answers go out as several small writes (status line and headers, then the body or each streamed part):
        # with Nagle's algorithm each one after the first waits for the client's delayed ACK, about 40 ms a time.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server = cast(EmulatorServer[E], self.server)
        with server.connections_lock:
            server.connections.add(self.connection)

    def finish(self) -> None:
        server = cast(EmulatorServer[E], self.server)
        with server.connections_lock:
            server.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def read_body(self) -> bytes:
        """The request's body as its Content-Length announces it; empty without one."""
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            return b""
        return self.rfile.read(int(length))

    @property
    def emulator(self) -> E:
        return cast(EmulatorServer[E], self.server).emulator

    @property
    def control(self) -> ControlPlane:
        return cast(EmulatorServer[E], self.server).control

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except ClientGone:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        logging.getLogger(type(self).__module__).debug("%s: " + format, self.label, *args)

    def write(self, data: bytes) -> None:
        """Write ``data`` to the client; :class:`ClientGone` when it has hung up."""
        try:
            self.wfile.write(data)
        except OSError as exc:
            raise ClientGone from exc

    def write_chunk(self, data: bytes) -> None:
        """One HTTP chunk of a ``Transfer-Encoding: chunked`` body, sent at once."""
        self.write(f"{len(data):x}\r\n".encode("ascii") + data + b"\r\n")

    def end_chunks(self) -> None:
        """The last chunk, ending a chunked body."""
        self.write(b"0\r\n\r\n")

    def send_head(self, status: int, headers: Mapping[str, str]) -> None:
        """The status line and ``headers``, sent at once; :class:`ClientGone` when the client has hung up."""
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
        except OSError as exc:
            raise ClientGone from exc

    def send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None) -> None:
        """A whole JSON answer, with a request id unless ``headers`` carries one."""
        length = str(len(body))
        fields = {"Content-Type": "application/json", "Content-Length": length, "x-amzn-RequestId": str(uuid.uuid4())}
        self.send_head(status, {**fields, **(headers or {})})
        self.write(body)

    def send_json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        self.send(status, json.dumps(payload).encode("utf-8"), headers)

    def cut(self) -> None:
        """Cut the connection with no more bytes, as a connection lost mid-answer."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        self.serve_control(self.read_body())

    def do_DELETE(self) -> None:
        self.serve_control(self.read_body())

    def serve_control(self, body: bytes) -> None:
        """Answer a ``/_emulator/...`` request, or, on a path the plane has no route for, the emulator's own way."""
        answer = self.control.dispatch(self.command, self.path, body)
        if answer is None:
            self.unknown_operation()
        else:
            self.send_json(answer.status, answer.payload, answer.headers)

    def unknown_operation(self) -> None:
        """Answer a request for an operation the emulator does not serve: 404 UnknownOperationException in the AWS
        JSON shape, unless the emulator's protocol says otherwise (each emulator answers as its service does)."""
        message = f"{self.command} {urlsplit(self.path).path} is not an operation of the {self.label}"
        self.send_json(404, {"message": message}, {"x-amzn-ErrorType": "UnknownOperationException"})


class Recording(Protocol):
    """What a :class:`CallHandler` needs of its emulator: the count of work in flight, and where records go."""

    @property
    def in_flight(self) -> InFlight: ...

    def record(self, state: Any) -> None: ...


B = TypeVar("B", bound=Recording)


class CallHandler(EmulatorHandler[B]):
    """A handler whose calls are counted in flight and recorded once each, however they end."""

    def serve_call(self, state: CallState, serve: Callable[[], None]) -> None:
        """Run ``serve``; a client that hangs up or an emulator that stops ends the call with that outcome."""
        with self.emulator.in_flight.serving():
            try:
                serve()
            except ClientGone:
                state.outcome = "client_disconnected"
                self.close_connection = True
            except Stopping:
                state.outcome = "emulator_stopped"
                self.close_connection = True
            finally:
                self.complete(state)

    def json_body(self, state: CallState, raw: bytes) -> Any:
        """``raw`` as JSON (an empty body as ``{}``), kept as ``state.body``; a body that is not JSON is kept as text
        and refused as AWS's JSON services refuse it, with a SerializationException (400)."""
        try:
            state.body = json.loads(raw) if raw else {}
        except ValueError:
            state.body = raw.decode("utf-8", errors="replace")
            raise ApiError(400, "SerializationException", "The request body is not valid JSON.") from None
        return state.body

    def complete(self, state: CallState) -> None:
        """Records the call once, just before its last bytes go out, so the record exists once a client has read
        the whole answer."""
        if not state.recorded:
            state.recorded = True
            self.emulator.record(state)


class Answering(Protocol):
    """What an :class:`AnsweringHandler` needs of its emulator: a :class:`CallHandler`'s needs, its queue of
    :class:`~voicebridge_dev.local.service.faults.RequestFault`, and whether it is stopping (a stall ends then)."""

    @property
    def in_flight(self) -> InFlight: ...
    @property
    def faults(self) -> FaultQueue[Any]: ...
    @property
    def stopping(self) -> threading.Event: ...

    def record(self, state: Any) -> None: ...


A = TypeVar("A", bound=Answering)


class AnsweringHandler(CallHandler[A]):
    """A handler of calls each answered with one whole JSON body, as the AWS JSON services answer (Comprehend,
    Connect, Lex): :meth:`answer` runs an operation and puts its answer, or its refusal in the emulator's own words
    (:meth:`error_answer`), on the wire; :meth:`strike` takes the injected fault a call the service would answer
    meets."""

    content_type: ClassVar[str] = "application/json"
    """The ``Content-Type`` of every answer, an error's too."""

    @abstractmethod
    def error_answer(self, error: ApiError) -> tuple[Any, Mapping[str, str]]:
        """The JSON body ``error`` is answered with, and the headers it adds (the error's type, where the protocol
        puts it in a header)."""

    def answer(self, state: AnswerState, operation: Callable[[], Any]) -> None:
        """Answer with what ``operation`` returns (200), with no answer at all where it returns None (a fault cut
        the connection), or with the :class:`ApiError` it raises; the call is recorded first, its outcome ``error``
        for a refusal no fault or quota has named already."""
        headers = {"x-amzn-RequestId": state.request_id, "Content-Type": self.content_type}
        try:
            answer = operation()
        except ApiError as error:
            state.http_status, state.error_type, state.error_message = error.status, error.error_type, error.message
            if state.outcome == "ok":
                state.outcome = "error"
            self.complete(state)
            body, error_headers = self.error_answer(error)
            self.send_json(error.status, body, {**headers, **error_headers})
            return
        state.answer = answer
        self.complete(state)
        if answer is None:
            self.cut()
        else:
            self.send_json(200, answer, headers)

    def strike(self, state: CallState) -> RequestFault[Any] | None:
        """The oldest injected fault, taken for a call the service would answer and named in ``state``: a refusing
        kind's error is raised (the outcome ``fault_<kind>``); a kind that cuts is returned with that outcome, for
        the operation to return None; any other (a stall) is returned for the operation to hold its answer back
        ``seconds``. None when no fault is pending."""
        fault: RequestFault[Any] | None = self.emulator.faults.take()
        if fault is None:
            return None
        state.fault = fault.kind.value
        refusal = fault.refusal()
        if refusal is not None or fault.kind.cuts:
            state.outcome = f"fault_{fault.kind.value}"
        if refusal is not None:
            raise refusal
        return fault


class Front(Protocol):
    """The server an emulator runs: an :class:`EmulatorServer`, or a front of its own (an asyncio one) with the
    same three members."""

    @property
    def server_address(self) -> Any:
        """Where it listens, bound: ``(host, port)``."""
        ...

    def serve_forever(self, poll_interval: float = 0.5) -> None: ...

    def close_all(self) -> None:
        """Stop serving, cut every open connection and close the listening socket."""
        ...


LOOPBACK: Final = "127.0.0.1"
"""Where every emulator listens unless told otherwise: this machine only."""


class Address(TypedDict, total=False):
    """Where an emulator listens, given by keyword to any of them: ``host`` (:data:`LOOPBACK` unless given) and
    ``port`` (unless given, 0: one the system picks, read from :attr:`ServedEmulator.port` once started)."""

    host: str
    port: int


class ServedEmulator(Emulator[F], ABC):
    """An emulator serving on ``host``:``port`` (its :class:`Front`, from :meth:`_make_server`) from a thread of its
    own; ``service`` names it in messages."""

    service: ClassVar[str]
    """The real service's short name (``Sonic``, ``Bedrock``…), for the serving thread and errors."""
    handler: ClassVar[type[EmulatorHandler[Any]]]
    """What answers the requests of an emulator served by an :class:`EmulatorServer`."""

    def __init__(self, *, host: str = LOOPBACK, port: int = 0) -> None:
        super().__init__()
        self.host = host
        self.port = port
        self.stopping = threading.Event()
        self._server: Front | None = None
        self._thread: threading.Thread | None = None

    def _make_server(self, address: tuple[str, int]) -> Front:
        """The emulator's server, bound to ``address``: an :class:`EmulatorServer` of its ``handler`` and
        :meth:`control_plane`, unless the emulator has a front of its own."""
        return EmulatorServer(address, self.handler, self, self.control_plane())

    @abstractmethod
    def control_plane(self) -> ControlPlane:
        """The emulator's ``/_emulator/...`` routes: every emulator has them (faults, figures, its own settings)."""

    def _serving(self) -> str:
        """What the start log line says the emulator serves (empty: nothing more than its URL)."""
        return ""

    def _wind_down(self) -> None:
        """End the emulator's own work (streams, containers) once ``stopping`` is set, before the server cuts its
        connections; nothing more by default."""

    def _not_running(self) -> Exception:
        """What asking a stopped emulator for its URL raises."""
        return RuntimeError(f"the {self.service} emulator is not running; call start() first")

    def start(self) -> Self:
        if self._server is not None:
            return self
        self.stopping.clear()
        self._server = self._make_server((self.host, self.port))
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.service.lower()}-emulator",
            daemon=True,
        )
        self._thread.start()
        serving = self._serving()
        logger = logging.getLogger(type(self).__module__)
        logger.info("%s listening on %s%s", self.label, self.url, f" ({serving})" if serving else "")
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        self._wind_down()
        server.close_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        logging.getLogger(type(self).__module__).info("%s stopped", self.label)

    @property
    def url(self) -> str:
        if self._server is None:
            raise self._not_running()
        return f"http://{self.host}:{self.port}"


CR = TypeVar("CR", bound=CallRecord)

RECORD_LIMIT: Final = 1000
"""Calls a :class:`RecordingEmulator` keeps by default (oldest dropped first)."""


class RecordingEmulator(ServedEmulator[F], Generic[F, CR]):
    """A served emulator that keeps the record (a ``record_type``) of each call its :class:`CallHandler` served:
    the last ``limit`` of them, all without one."""

    def __init__(self, record_type: type[CR], limit: int | None = RECORD_LIMIT, **address: Unpack[Address]) -> None:
        super().__init__(**address)
        self._record_type = record_type
        self._records: CallLog[CR] = CallLog(limit)

    @property
    def invocations(self) -> list[CR]:
        """The calls recorded so far, oldest first (a copy)."""
        return self._records.snapshot()

    def record(self, state: CallState) -> None:
        """Keep the record of a finished call, and :meth:`_log` it."""
        record = self._record_type.of(state, finished=time.perf_counter())
        self._records.append(record)
        self._log(record)

    def _log(self, record: CR) -> None:
        """Log a call's record: nothing by default."""
