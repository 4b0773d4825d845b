"""The KVS emulator itself: its streams, their faults and the server, on a loopback HTTP port.

Its settings are the choices of :mod:`~voicebridge_dev.local.kvs.fragments` (how ``FRAGMENT_NUMBER`` reads)
and the limits of :mod:`~voicebridge_dev.local.kvs.streams`, each defaulting to what AWS documents. They are
given to the constructor, or changed on a running emulator with :meth:`KvsEmulator.configure` (from Python) or
``POST /_emulator/config`` (from another process), and apply to the next GetMedia call::

    POST /_emulator/config   {"fragment_number_selector": "inclusive"}   -> {"Config": {...every setting...}}
    GET  /_emulator/config                                              -> {"Config": {...}}
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from http import HTTPStatus
from typing import Any, ClassVar, Unpack

from voicebridge_dev.local.kvs.errors import KvsEmulatorError, StreamExistsError, StreamNotFoundError
from voicebridge_dev.local.kvs.faults import Fault
from voicebridge_dev.local.kvs.fragments import FragmentNumbers, FragmentNumberSelector
from voicebridge_dev.local.kvs.matroska import AGENT_TRACK, CODEC_AAC, CUSTOMER_TRACK
from voicebridge_dev.local.kvs.server import Handler, json_object, resolve_stream
from voicebridge_dev.local.kvs.streams import EMULATED_INSTANCE_ID, STREAM_NAME, EmulatedStream, Settings, epoch_ms
from voicebridge_dev.local.service import Address, ApiError, ControlAnswer, ControlPlane, ServedEmulator

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


class KvsEmulator(ServedEmulator[Fault]):
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
    service: ClassVar[str] = "KVS"
    handler: ClassVar[type[Handler]] = Handler

    def __init__(
        self,
        *,
        region: str = "us-east-1",
        pace: float = 1.0,
        codec_id: str = CODEC_AAC,
        blocks_per_fragment: int = BLOCKS_PER_FRAGMENT,
        contact_gap_ms: int = CONTACT_GAP_MS,
        fragment_number_selector: FragmentNumberSelector = "exclusive",
        idle_close_seconds: float = IDLE_CLOSE_SECONDS,
        max_get_media_connections: int = GET_MEDIA_CONNECTIONS,
        max_get_media_calls_per_second: int = GET_MEDIA_CALLS_PER_SECOND,
        **address: Unpack[Address],
    ) -> None:
        super().__init__(**address)
        self.region = region
        self._settings = Settings(
            pace=pace,
            codec_id=codec_id,
            blocks_per_fragment=blocks_per_fragment,
            contact_gap_ms=contact_gap_ms,
            fragment_number_selector=fragment_number_selector,
            idle_close_seconds=idle_close_seconds,
            max_get_media_connections=max_get_media_connections,
            max_get_media_calls_per_second=max_get_media_calls_per_second,
        )
        self._numbers = FragmentNumbers()
        self._lock = threading.Lock()
        self._streams: dict[str, EmulatedStream] = {}

    # -- lifecycle --

    def control_plane(self) -> ControlPlane:
        return _control_routes(self)

    def _wind_down(self) -> None:
        """Open GetMedia responses end and live contacts stop producing, for good."""
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()

    def _not_running(self) -> Exception:
        return KvsEmulatorError("the KVS emulator is not running")

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
            self._settings = dataclasses.replace(self._settings, **changes)
            settings = self._settings
        logger.info("KVS emulator: settings changed: %s", changes)
        return settings

    def runtime_settings(self) -> dict[str, Any]:
        """The settings :meth:`configure` can change, by name."""
        return {name: getattr(self._settings, name) for name in _RUNTIME_SETTINGS}

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


def _control_routes(emulator: KvsEmulator) -> ControlPlane:
    """The ``/_emulator/...`` routes: faults and the streams' figures."""

    def refused(reason: str) -> ControlAnswer:
        logger.info("KVS emulator: control request refused: %s", reason)
        return ControlAnswer(
            HTTPStatus.BAD_REQUEST, {"Message": reason}, {"x-amzn-ErrorType": "InvalidArgumentException:"}
        )

    def pending() -> list[dict[str, Any]]:
        return [asdict(fault) for fault in emulator.pending_faults]

    def inject(body: bytes) -> ControlAnswer:
        emulator.inject(Fault.from_json(json_object(body)))
        return ControlAnswer(HTTPStatus.OK, {"PendingFaults": pending()})

    def clear(_: bytes) -> ControlAnswer:
        emulator.clear_faults()
        return ControlAnswer(HTTPStatus.OK, {"PendingFaults": []})

    def streams(_: bytes) -> ControlAnswer:
        return ControlAnswer(HTTPStatus.OK, {"Streams": [stream.stats() for stream in emulator.streams]})

    def config(_: bytes) -> ControlAnswer:
        return ControlAnswer(HTTPStatus.OK, {"Config": emulator.runtime_settings()})

    def configure(raw: bytes) -> ControlAnswer:
        """:meth:`KvsEmulator.configure` from the body, each value read as its setting's type."""
        try:
            changes = {name: _RUNTIME_SETTINGS.get(name, str)(value) for name, value in json_object(raw).items()}
        except ApiError as exc:
            raise ValueError(exc.message) from None
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad settings: {exc}") from exc
        emulator.configure(**changes)
        return config(raw)

    control = ControlPlane(refusal=refused)
    control.route("POST", "faults", inject)
    control.route("DELETE", "faults", clear)
    control.route("GET", "streams", streams)
    control.route("POST", "config", configure)
    control.route("GET", "config", config)
    _add_contact_routes(control, emulator)
    return control


def _add_contact_routes(control: ControlPlane, emulator: KvsEmulator) -> None:
    """``/_emulator/contacts...``: begin a contact on a stream, queue its audio, end it."""

    def on_stream(
        act: Callable[[EmulatedStream, Mapping[str, Any]], ControlAnswer],
    ) -> Callable[[bytes], ControlAnswer]:
        """The route that ``act``s on the stream its body names; the stream's refusal refuses the request."""

        def action(raw: bytes) -> ControlAnswer:
            body = json_object(raw)
            stream = resolve_stream(emulator, body)
            try:
                return act(stream, body)
            except KvsEmulatorError as exc:
                raise ValueError(str(exc)) from None

        return action

    def pcm(body: Mapping[str, Any], track: str) -> bytes:
        encoded = body.get(track, "")
        if not isinstance(encoded, str):
            raise ValueError(f"{track} must be base64 text")
        return base64.b64decode(encoded, validate=True)

    def begin(stream: EmulatedStream, body: Mapping[str, Any]) -> ControlAnswer:
        contact_id, instance_id = body.get("ContactId"), body.get("InstanceId", EMULATED_INSTANCE_ID)
        if not isinstance(contact_id, str) or not contact_id or not isinstance(instance_id, str):
            raise ValueError("ContactId (and InstanceId, when given) must be non-empty text")
        start_ms = body.get("StartTimestamp")
        if start_ms is not None and (not isinstance(start_ms, int) or isinstance(start_ms, bool) or start_ms < 0):
            raise ValueError("StartTimestamp, when given, is the first audio's producer time in epoch milliseconds")
        start = stream.begin_contact(contact_id, instance_id, start_ms=start_ms)
        answer = {
            "StreamARN": stream.arn,
            "ContactId": contact_id,
            "StartFragmentNumber": start.fragment_number,
            "StartTimestamp": start.start_timestamp,
        }
        return ControlAnswer(HTTPStatus.CREATED, answer)

    def audio(stream: EmulatedStream, body: Mapping[str, Any]) -> ControlAnswer:
        stream.append_tracks(customer=pcm(body, CUSTOMER_TRACK), agent=pcm(body, AGENT_TRACK))
        return ControlAnswer(HTTPStatus.OK, stream.stats())

    def end(stream: EmulatedStream, body: Mapping[str, Any]) -> ControlAnswer:
        drain = body.get("Drain", True)
        if not isinstance(drain, bool):
            raise ValueError("Drain must be true or false")
        stream.end_contact(drain=drain)
        return ControlAnswer(HTTPStatus.OK, stream.stats())

    control.route("POST", "contacts", on_stream(begin))
    control.route("POST", "contacts/audio", on_stream(audio))
    control.route("POST", "contacts/end", on_stream(end))
