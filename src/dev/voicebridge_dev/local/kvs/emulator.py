"""The KVS emulator itself: its streams, their faults and the server, on a loopback HTTP port.

Its settings are the choices of :mod:`~voicebridge_dev.local.kvs.fragments` (how ``FRAGMENT_NUMBER`` reads)
and the limits of :mod:`~voicebridge_dev.local.kvs.streams`, each defaulting to what AWS documents. They are
given to the constructor, or changed on a running emulator with :meth:`KvsEmulator.configure` (from Python) or
``POST /_emulator/config`` (from another process), and apply to the next GetMedia call::

    POST /_emulator/config   {"fragment_number_selector": "inclusive"}   -> {"Config": {...every setting...}}
    GET  /_emulator/config                                              -> {"Config": {...}}
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from voicebridge_dev.local.kvs.errors import KvsEmulatorError, StreamExistsError, StreamNotFoundError
from voicebridge_dev.local.kvs.faults import Fault
from voicebridge_dev.local.kvs.fragments import FRAGMENT_NUMBER_SELECTORS, FragmentNumbers, FragmentNumberSelector
from voicebridge_dev.local.kvs.matroska import CODEC_AAC
from voicebridge_dev.local.kvs.server import Server
from voicebridge_dev.local.kvs.streams import STREAM_NAME, EmulatedStream, Settings, epoch_ms
from voicebridge_dev.local.service import Emulator

__all__ = [
    "BLOCKS_PER_FRAGMENT",
    "CONTACT_GAP_MS",
    "EMULATED_ACCOUNT_ID",
    "GET_MEDIA_CALLS_PER_SECOND",
    "GET_MEDIA_CONNECTIONS",
    "IDLE_CLOSE_SECONDS",
    "KvsEmulator",
]

logger = logging.getLogger(__name__)

EMULATED_ACCOUNT_ID = "111111111111"
BLOCKS_PER_FRAGMENT = 16
CONTACT_GAP_MS = 3000
GET_MEDIA_CALLS_PER_SECOND = 5
GET_MEDIA_CONNECTIONS = 3
IDLE_CLOSE_SECONDS = 3.0
# What configure() may change while the emulator runs (what a GetMedia call reads, not how audio is produced),
# each with the type its JSON value is read as.
_RUNTIME_SETTINGS: dict[str, Callable[[Any], Any]] = {
    "fragment_number_selector": str,
    "idle_close_seconds": float,
    "max_get_media_connections": int,
    "max_get_media_calls_per_second": int,
}


class KvsEmulator(Emulator[Fault]):
    """Kinesis Video Streams emulator (control plane + GetMedia) on a loopback HTTP port.

    Faults strike GetMedia calls; :meth:`wait_idle` waits until no GetMedia response is open and no contact is
    live on any stream. ``fragment_number_selector`` is ``"exclusive"`` (AWS's reference) or ``"inclusive"``;
    ``contact_gap_ms`` is the producer time between two contacts on one stream; the other keywords are
    GetMedia's limits (see :mod:`~voicebridge_dev.local.kvs.streams` for the sources of each).

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
        contact_gap_ms: int = CONTACT_GAP_MS,
        fragment_number_selector: FragmentNumberSelector = "exclusive",
        idle_close_seconds: float = IDLE_CLOSE_SECONDS,
        max_get_media_connections: int = GET_MEDIA_CONNECTIONS,
        max_get_media_calls_per_second: int = GET_MEDIA_CALLS_PER_SECOND,
    ) -> None:
        if pace < 0 or not math.isfinite(pace):
            raise ValueError(f"pace must be a finite number >= 0, got {pace}")
        if blocks_per_fragment < 1:
            raise ValueError("a fragment holds at least one block")
        if contact_gap_ms < 0:
            raise ValueError(f"contact_gap_ms must not be negative, got {contact_gap_ms}")
        super().__init__()
        self.host = host
        self.region = region
        self._requested_port = port
        self._settings = _checked(
            Settings(
                pace=pace,
                codec_id=codec_id,
                blocks_per_fragment=blocks_per_fragment,
                contact_gap_ms=contact_gap_ms,
                fragment_number_selector=fragment_number_selector,
                idle_close_seconds=idle_close_seconds,
                max_get_media_connections=max_get_media_connections,
                max_get_media_calls_per_second=max_get_media_calls_per_second,
            )
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

    @property
    def settings(self) -> Settings:
        """The settings the next GetMedia call reads."""
        return self._settings

    def configure(self, **changes: Any) -> Settings:
        """Change settings of the running emulator (those of ``POST /_emulator/config``); returns them all.

        >>> kvs.configure(fragment_number_selector="inclusive")  # doctest: +SKIP

        Raises ValueError, changing nothing, for an unknown setting or a value out of range.
        """
        unknown = set(changes) - set(_RUNTIME_SETTINGS)
        if unknown:
            raise ValueError(f"unknown settings {sorted(unknown)}; the emulator's are {list(_RUNTIME_SETTINGS)}")
        with self._lock:
            self._settings = _checked(dataclasses.replace(self._settings, **changes))
            settings = self._settings
        logger.info("KVS emulator: settings changed: %s", changes)
        return settings

    def runtime_settings(self) -> dict[str, Any]:
        """The settings :meth:`configure` can change, by name."""
        return {name: getattr(self._settings, name) for name in _RUNTIME_SETTINGS}

    def configure_from_json(self, body: Mapping[str, Any]) -> Settings:
        """:meth:`configure` from a control-plane body, each value read as its setting's type."""
        try:
            changes = {name: _RUNTIME_SETTINGS.get(name, str)(value) for name, value in body.items()}
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad settings: {exc}") from exc
        return self.configure(**changes)

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
            self._streams[arn] = EmulatedStream(name, arn, creation_ms, lambda: self._settings, self._numbers)
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


def _checked(settings: Settings) -> Settings:
    """``settings`` once every value is in range; ValueError otherwise."""
    if settings.fragment_number_selector not in FRAGMENT_NUMBER_SELECTORS:
        raise ValueError(
            f"fragment_number_selector must be one of {FRAGMENT_NUMBER_SELECTORS}, "
            f"got {settings.fragment_number_selector!r}"
        )
    if settings.idle_close_seconds <= 0 or not math.isfinite(settings.idle_close_seconds):
        raise ValueError(f"idle_close_seconds must be a positive number, got {settings.idle_close_seconds}")
    if settings.max_get_media_connections < 1 or settings.max_get_media_calls_per_second < 1:
        raise ValueError("GetMedia's limits allow at least one call and one connection")
    return settings
