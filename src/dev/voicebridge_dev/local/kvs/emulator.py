"""The KVS emulator itself: its streams, their faults and the server, on a loopback HTTP port."""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import ClassVar, Self

from voicebridge_dev.local.kvs.errors import KvsEmulatorError, StreamExistsError, StreamNotFoundError
from voicebridge_dev.local.kvs.faults import Fault
from voicebridge_dev.local.kvs.fragments import FragmentNumbers
from voicebridge_dev.local.kvs.matroska import CODEC_AAC
from voicebridge_dev.local.kvs.server import Server
from voicebridge_dev.local.kvs.streams import STREAM_NAME, EmulatedStream, Settings, epoch_ms
from voicebridge_dev.local.service import Emulator

__all__ = ["BLOCKS_PER_FRAGMENT", "EMULATED_ACCOUNT_ID", "KvsEmulator"]

logger = logging.getLogger(__name__)

EMULATED_ACCOUNT_ID = "111111111111"
BLOCKS_PER_FRAGMENT = 16


class KvsEmulator(Emulator[Fault]):
    """Kinesis Video Streams emulator (control plane + GetMedia) on a loopback HTTP port.

    Faults strike GetMedia calls; :meth:`wait_idle` waits until no GetMedia response is open and no contact is
    live on any stream.

    >>> with KvsEmulator(pace=0) as kvs:  # doctest: +SKIP
    ...     arn = kvs.create_stream("connect-demo")
    ...     control = boto3.client("kinesisvideo", endpoint_url=kvs.url)
    ...     control.get_data_endpoint(StreamARN=arn, APIName="GET_MEDIA")["DataEndpoint"] == kvs.url
    """

    label: ClassVar[str] = "KVS emulator"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        region: str = "us-east-1",
        pace: float = 1.0,
        *,
        codec_id: str = CODEC_AAC,
        blocks_per_fragment: int = BLOCKS_PER_FRAGMENT,
        contact_tags_after_cluster: bool = False,
        idle_close_seconds: float = 0.5,
        max_get_media_connections: int = 3,
    ) -> None:
        if pace < 0 or not math.isfinite(pace):
            raise ValueError(f"pace must be a finite number >= 0, got {pace}")
        if blocks_per_fragment < 1:
            raise ValueError("a fragment holds at least one block")
        super().__init__()
        self.host = host
        self.region = region
        self._requested_port = port
        self._settings = Settings(
            pace=pace,
            codec_id=codec_id,
            blocks_per_fragment=blocks_per_fragment,
            contact_tags_after_cluster=contact_tags_after_cluster,
            idle_close_seconds=idle_close_seconds,
            max_get_media_connections=max_get_media_connections,
        )
        self._numbers = FragmentNumbers()
        self._lock = threading.Lock()
        self._streams: dict[str, EmulatedStream] = {}
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()

    # -- lifecycle --

    def start(self) -> Self:
        if self._server is not None:
            return self
        self.stopping.clear()
        self._server = Server((self.host, self._requested_port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="kvs-emulator", daemon=True
        )
        self._thread.start()
        logger.info("KVS emulator listening on %s", self.url)
        return self

    def stop(self) -> None:
        """Stop serving; open GetMedia responses end and live contacts stop producing, for good."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self.stopping.set()
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()
        server.close_all()
        if thread is not None:
            thread.join(timeout=5)
        self._server = self._thread = None
        logger.info("KVS emulator stopped")

    @property
    def url(self) -> str:
        if self._server is None:
            raise KvsEmulatorError("the KVS emulator is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def pace(self) -> float:
        return self._settings.pace

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no GetMedia response is open and no contact is live; False on timeout."""
        deadline = time.monotonic() + timeout
        if not self.in_flight.wait_idle(timeout):
            return False
        return all(stream.wait_idle(max(0.0, deadline - time.monotonic())) for stream in self.streams)

    # -- streams --

    def create_stream(self, name: str) -> str:
        """Create a stream; returns its ARN, shaped like the ones Connect creates."""
        if not STREAM_NAME.match(name):
            raise ValueError(f"invalid stream name {name!r}")
        with self._lock:
            if any(stream.name == name for stream in self._streams.values()):
                raise StreamExistsError(f"stream {name} already exists")
            creation_ms = epoch_ms()
            arn = f"arn:aws:kinesisvideo:{self.region}:{EMULATED_ACCOUNT_ID}:stream/{name}/{creation_ms}"
            self._streams[arn] = EmulatedStream(name, arn, creation_ms, self._settings, self._numbers)
        logger.info("KVS emulator: created stream %s", arn)
        return arn

    def stream(self, name_or_arn: str) -> EmulatedStream:
        """The stream with that ARN (or name)."""
        with self._lock:
            found = self._streams.get(name_or_arn) or next(
                (stream for stream in self._streams.values() if stream.name == name_or_arn), None
            )
        if found is None:
            raise StreamNotFoundError(f"no stream {name_or_arn}")
        return found

    @property
    def streams(self) -> list[EmulatedStream]:
        with self._lock:
            return list(self._streams.values())

    # -- faults --

    def inject_fault(self, fault: Fault) -> None:
        """:meth:`inject` by the name this emulator's callers have armed faults with."""
        self.inject(fault)
