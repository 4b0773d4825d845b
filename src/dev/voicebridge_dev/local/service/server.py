"""An HTTP server that knows its open connections, so stopping it can cut its keep-alive ones, and the request
handler that registers with it."""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import cast


class TrackingHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that knows its open connections, so stopping it can cut idle keep-alive ones
    (a client's connection pool would otherwise keep their handler threads reading)."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
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


class TrackedHandler(BaseHTTPRequestHandler):
    """Registers its connection with a :class:`TrackingHTTPServer` for as long as it is open."""

    protocol_version = "HTTP/1.1"
    # Idle keep-alive connections from a client's pool are dropped after this many seconds.
    timeout = 60

    def setup(self) -> None:
        super().setup()
        # Answers go out as several small writes (status line and headers, then the body or each streamed part):
        # with Nagle's algorithm each one after the first waits for the client's delayed ACK, about 40 ms a time.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server = cast(TrackingHTTPServer, self.server)
        with server.connections_lock:
            server.connections.add(self.connection)

    def finish(self) -> None:
        server = cast(TrackingHTTPServer, self.server)
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
