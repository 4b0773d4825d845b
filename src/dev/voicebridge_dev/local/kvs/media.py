"""One GetMedia payload on the wire: fragments written as they are produced, with the call's faults applied.

The payload is a chunked HTTP response of ``Content-Type: video/webm`` whose bytes are Matroska documents, one per
fragment (:mod:`voicebridge_dev.local.kvs.matroska`); each block is written and flushed the moment its audio exists,
and the trailing GetMedia tags when its fragment ends. Faults (:mod:`voicebridge_dev.local.kvs.faults`) cut the
connection, stall it, or end the payload with error tags, at a byte offset.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
from typing import Any

from voicebridge_dev.local.kvs.errors import ERROR_FRAGMENT_NOT_FOUND, ConnectionLost
from voicebridge_dev.local.kvs.faults import Fault
from voicebridge_dev.local.kvs.matroska import error_document, error_tags
from voicebridge_dev.local.kvs.streams import EmulatedStream
from voicebridge_dev.local.service import EmulatorHandler

logger = logging.getLogger(__name__)


class MediaResponse:
    """One GetMedia payload being written: fragments as they are produced, with this call's faults applied.

    Making one counts a GetMedia response open on ``stream`` (refused past the stream's limit); :meth:`release`
    counts it closed, once.
    """

    def __init__(
        self, handler: EmulatorHandler[Any], stream: EmulatedStream, faults: list[Fault], stopping: threading.Event
    ) -> None:
        stream.open_get_media()
        self.handler = handler
        self.stream = stream
        self.faults = [fault for fault in faults if fault.kind != "throttle"]
        self.sent = 0
        self.document_open = False
        self.stopping = stopping
        self._open = True

    def run(self, start: int | None) -> None:
        if start is None:
            self._write(error_document("Requested fragment is not found", ERROR_FRAGMENT_NOT_FOUND))
            self._finish()
            return
        position = [start, 0]
        while True:
            if self._error_tag_due():
                return
            piece = self.stream.wait_for_piece(position, self.stopping, self._client_gone)
            if piece is None:
                self._finish()
                return
            self._send_piece(piece)
            self.document_open = True

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
                raise ConnectionLost("KVS emulator stopping")
        self._write(piece)

    def _write(self, data: bytes) -> None:
        if not data:
            return
        self.handler.write_chunk(data)
        self.sent += len(data)
        self.stream.count_sent(len(data))

    def release(self) -> None:
        """Count the response closed on its stream, unless it already is."""
        if self._open:
            self._open = False
            self.stream.close_get_media()

    def _finish(self) -> None:
        # Closed before the last chunk leaves, so the stream's figures agree with a client that read it all.
        self.release()
        self.handler.end_chunks()

    def _abort(self) -> None:
        """Close the connection without the final chunk, so the client sees a broken payload."""
        logger.info("KVS emulator: connection cut after %d bytes on %s (fault)", self.sent, self.stream.name)
        with contextlib.suppress(OSError):
            self.handler.connection.shutdown(socket.SHUT_RDWR)
        raise ConnectionLost("cut by fault")

    def _client_gone(self) -> bool:
        connection = self.handler.connection
        try:
            readable, _, _ = select.select([connection], [], [], 0)
            return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True
