"""WebSocket I/O for the Ink emulator: asyncio streams around websockets' sans-I/O server protocol.

The ``websockets`` package frames and unframes (RFC 6455); the Ink protocols on top are the sessions' own
(:mod:`voicebridge_dev.local.ink.sessions`).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
from collections.abc import Mapping
from typing import Any

from websockets.frames import Frame, Opcode
from websockets.protocol import State
from websockets.server import ServerProtocol

from voicebridge_dev.local.service import ClientGone

_CLOSE_GRACE_S = 2.0


class WebSocket:
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
            raise ClientGone(str(exc)) from exc

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
                with contextlib.suppress(ClientGone):
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
            with contextlib.suppress(ClientGone):
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

    async def drop(self) -> None:
        """End the connection without a close frame (the client sees 1006), once what was written has left.

        The write side is shut first, so the events already sent reach the client ahead of the end of the
        stream; the connection is cut once the client lets go of it, or after a grace period. Cutting it at
        once could reset it with those events still in flight.
        """
        with contextlib.suppress(OSError, RuntimeError):
            if self._writer.can_write_eof():
                self._writer.write_eof()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            async with asyncio.timeout_at(loop.time() + _CLOSE_GRACE_S):
                while await self._reader.read(65536):
                    pass
        self._writer.transport.abort()
