"""The KVS emulator's HTTP server: the control plane and GetMedia, as botocore speaks them.

Both services are ``rest-json`` (every operation is ``POST /<operation>`` with a JSON body), so botocore talks to
the emulator unmodified::

    kinesisvideo         POST /createStream     {"StreamName"}                  -> {"StreamARN"}
                         POST /describeStream   {"StreamName" | "StreamARN"}    -> {"StreamInfo": {...}}
                         POST /listStreams      {"StreamNameCondition"?}        -> {"StreamInfoList": [...]}
                         POST /getDataEndpoint  {"StreamARN" | ..., "APIName"}  -> {"DataEndpoint": own URL}
    kinesis-video-media  POST /getMedia         {"StreamARN" | "StreamName", "StartSelector": {...}}
                                                -> 200, Content-Type video/webm, chunked Matroska payload

Errors are ``{"Message": ...}`` with the exception name in the ``x-amzn-ErrorType`` header, which is where
botocore looks for the code of a rest-json error, and the statuses of botocore's service models:
ResourceNotFoundException (404), InvalidArgumentException, ResourceInUseException, ClientLimitExceededException
(past five GetMedia calls per second per stream) and ConnectionLimitExceededException (past three open GetMedia
connections per stream), all 400. GetMedia's status comes at once; its errors after that are tags in the
payload (:mod:`~voicebridge_dev.local.kvs.media`).

The emulator's own control plane (:class:`~voicebridge_dev.local.service.ControlPlane`)::

    POST   /_emulator/faults    {"fault": "cut", "after_bytes": 4096, "count": 1}  -> {"PendingFaults": [...]}
    DELETE /_emulator/faults    drop pending faults                               -> {"PendingFaults": []}
    GET    /_emulator/streams   per-stream figures                                -> {"Streams": [...]}
    POST   /_emulator/config    {"fragment_number_selector": "inclusive", ...}    -> {"Config": {...}}
    GET    /_emulator/config    the settings GetMedia calls read                  -> {"Config": {...}}

and the contact routes through which another process feeds a stream as Amazon Connect does (``voicebridge local
call``); the stream is named in the body as the kinesisvideo operations name it, audio is base64 s16le, 8 kHz mono::

    POST   /_emulator/contacts        {"StreamName" | "StreamARN", "ContactId", "InstanceId"?}
                                      -> 201 {"StreamARN", "ContactId", "StartFragmentNumber", "StartTimestamp"}
    POST   /_emulator/contacts/audio  {"StreamName" | "StreamARN", "AUDIO_FROM_CUSTOMER"?, "AUDIO_TO_CUSTOMER"?}
                                      -> 200 the stream's figures; the audio plays out on the emulator's clock
    POST   /_emulator/contacts/end    {"StreamName" | "StreamARN", "Drain"?: true}  -> 200 the stream's figures

``StartTimestamp`` is the contact's first producer timestamp in epoch milliseconds, as Connect's event gives it. A
refused contact request is answered like a refused fault (400), an unknown stream with ResourceNotFoundException.
"""

from __future__ import annotations

import base64
import json
import logging
import uuid
from collections.abc import Mapping
from dataclasses import asdict
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from voicebridge_dev.local.kvs.errors import (
    ApiError,
    ConnectionLost,
    KvsEmulatorError,
    StreamExistsError,
    StreamNotFoundError,
)
from voicebridge_dev.local.kvs.faults import Fault
from voicebridge_dev.local.kvs.matroska import AGENT_TRACK, CUSTOMER_TRACK
from voicebridge_dev.local.kvs.media import MediaResponse
from voicebridge_dev.local.kvs.streams import EMULATED_INSTANCE_ID, STREAM_NAME, EmulatedStream
from voicebridge_dev.local.service import ControlAnswer, ControlPlane, TrackedHandler, TrackingHTTPServer

if TYPE_CHECKING:
    from voicebridge_dev.local.kvs.emulator import KvsEmulator

__all__ = ["Handler", "Server"]

logger = logging.getLogger(__name__)

MEDIA_CONTENT_TYPE = "video/webm"
_OPERATIONS = frozenset({"createStream", "describeStream", "getDataEndpoint", "listStreams"})


def control_plane(emulator: KvsEmulator) -> ControlPlane:
    """The ``/_emulator/...`` routes: faults and the streams' figures."""

    def refused(reason: str) -> ControlAnswer:
        logger.info("KVS emulator: control request refused: %s", reason)
        return ControlAnswer(
            HTTPStatus.BAD_REQUEST, {"Message": reason}, {"x-amzn-ErrorType": "InvalidArgumentException:"}
        )

    def pending() -> list[dict[str, Any]]:
        return [asdict(fault) for fault in emulator.pending_faults]

    def inject(body: bytes) -> ControlAnswer:
        emulator.inject(Fault.from_json(_json_object(body)))
        return ControlAnswer(HTTPStatus.OK, {"PendingFaults": pending()})

    def clear(_: bytes) -> ControlAnswer:
        emulator.clear_faults()
        return ControlAnswer(HTTPStatus.OK, {"PendingFaults": []})

    def streams(_: bytes) -> ControlAnswer:
        return ControlAnswer(HTTPStatus.OK, {"Streams": [stream.stats() for stream in emulator.streams]})

    control = ControlPlane(refusal=refused)
    control.route("POST", "faults", inject)
    control.route("DELETE", "faults", clear)
    control.route("GET", "streams", streams)
    _add_config_routes(control, emulator)
    _add_contact_routes(control, emulator)
    return control


def _add_config_routes(control: ControlPlane, emulator: KvsEmulator) -> None:
    """``/_emulator/config``: the settings a GetMedia call reads (:meth:`KvsEmulator.configure`)."""

    def configure(raw: bytes) -> ControlAnswer:
        try:
            changes = _json_object(raw)
        except ApiError as exc:
            raise ValueError(exc.message) from None
        emulator.configure_from_json(changes)
        return ControlAnswer(HTTPStatus.OK, {"Config": emulator.runtime_settings()})

    control.route("POST", "config", configure)
    control.route("GET", "config", lambda _: ControlAnswer(HTTPStatus.OK, {"Config": emulator.runtime_settings()}))


def _add_contact_routes(control: ControlPlane, emulator: KvsEmulator) -> None:
    """``/_emulator/contacts...``: begin a contact on a stream, queue its audio, end it."""

    def stream_in(body: Mapping[str, Any]) -> EmulatedStream:
        named = body.get("StreamARN", body.get("StreamName"))
        if not isinstance(named, str) or not named:
            raise ValueError("StreamName or StreamARN is required")
        try:
            return emulator.stream(named)
        except StreamNotFoundError:
            raise ApiError(
                "ResourceNotFoundException", f"The stream {named} does not exist.", HTTPStatus.NOT_FOUND
            ) from None

    def pcm(body: Mapping[str, Any], track: str) -> bytes:
        encoded = body.get(track, "")
        if not isinstance(encoded, str):
            raise ValueError(f"{track} must be base64 text")
        return base64.b64decode(encoded, validate=True)

    def begin(raw: bytes) -> ControlAnswer:
        body = _json_object(raw)
        stream = stream_in(body)
        contact_id, instance_id = body.get("ContactId"), body.get("InstanceId", EMULATED_INSTANCE_ID)
        if not isinstance(contact_id, str) or not contact_id or not isinstance(instance_id, str):
            raise ValueError("ContactId (and InstanceId, when given) must be non-empty text")
        try:
            start = stream.begin_contact(contact_id, instance_id)
        except KvsEmulatorError as exc:
            raise ValueError(str(exc)) from None
        answer = {
            "StreamARN": stream.arn,
            "ContactId": contact_id,
            "StartFragmentNumber": start.fragment_number,
            "StartTimestamp": start.start_timestamp,
        }
        return ControlAnswer(HTTPStatus.CREATED, answer)

    def audio(raw: bytes) -> ControlAnswer:
        body = _json_object(raw)
        stream = stream_in(body)
        try:
            stream.append_tracks(customer=pcm(body, CUSTOMER_TRACK), agent=pcm(body, AGENT_TRACK))
        except KvsEmulatorError as exc:
            raise ValueError(str(exc)) from None
        return ControlAnswer(HTTPStatus.OK, stream.stats())

    def end(raw: bytes) -> ControlAnswer:
        body = _json_object(raw)
        stream, drain = stream_in(body), body.get("Drain", True)
        if not isinstance(drain, bool):
            raise ValueError("Drain must be true or false")
        try:
            stream.end_contact(drain=drain)
        except KvsEmulatorError as exc:
            raise ValueError(str(exc)) from None
        return ControlAnswer(HTTPStatus.OK, stream.stats())

    control.route("POST", "contacts", begin)
    control.route("POST", "contacts/audio", audio)
    control.route("POST", "contacts/end", end)


def _json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ApiError("SerializationException", f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError("SerializationException", "body must be a JSON object")
    return body


class Server(TrackingHTTPServer):
    def __init__(self, address: tuple[str, int], emulator: KvsEmulator) -> None:
        self.emulator = emulator
        self.control = control_plane(emulator)
        super().__init__(address, Handler)


class Handler(TrackedHandler):
    server: Server

    @property
    def emulator(self) -> KvsEmulator:
        return self.server.emulator

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("KVS emulator: " + format, *args)

    # -- routing --

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            raw = self.read_body()
            answer = self.server.control.dispatch("POST", self.path, raw)
            if answer is not None:
                self._send_answer(answer)
                return
            body = _json_object(raw)
            if path == "/getMedia":
                self._get_media(body)
            elif path.lstrip("/") in _OPERATIONS:
                self._send_json(self._operation(path.lstrip("/"), body))
            else:
                raise ApiError("UnknownOperationException", f"no operation at {path}", HTTPStatus.NOT_FOUND)
        except ApiError as exc:
            self._send_error(exc)

    def do_GET(self) -> None:
        self._serve_control()

    def do_DELETE(self) -> None:
        self._serve_control()

    def _serve_control(self) -> None:
        answer = self.server.control.dispatch(self.command, self.path, self.read_body())
        if answer is None:
            self._send_error(ApiError("UnknownOperationException", "not found", HTTPStatus.NOT_FOUND))
        else:
            self._send_answer(answer)

    def _send_answer(self, answer: ControlAnswer) -> None:
        self._send_json(answer.payload, answer.status, answer.headers)

    def _send_json(
        self, payload: Mapping[str, Any], status: int = HTTPStatus.OK, headers: Mapping[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: ApiError) -> None:
        logger.info("KVS emulator: %s %s: %s", self.path, error.code, error.message)
        self._send_json({"Message": error.message}, error.status, {"x-amzn-ErrorType": f"{error.code}:"})

    # -- the kinesisvideo operations --

    def _resolve(self, body: Mapping[str, Any]) -> EmulatedStream:
        arn, name = body.get("StreamARN"), body.get("StreamName")
        if arn is None and name is None:
            raise ApiError("InvalidArgumentException", "StreamName or StreamARN is required")
        try:
            stream = self.emulator.stream(str(arn if arn is not None else name))
        except StreamNotFoundError:
            raise ApiError(
                "ResourceNotFoundException", f"The stream {arn or name} does not exist.", HTTPStatus.NOT_FOUND
            ) from None
        if arn is not None and name is not None and stream.name != name:
            raise ApiError("InvalidArgumentException", "StreamName and StreamARN name different streams")
        return stream

    def _operation(self, operation: str, body: Mapping[str, Any]) -> dict[str, Any]:
        emulator = self.emulator
        if operation == "createStream":
            name = body.get("StreamName")
            if not isinstance(name, str) or not STREAM_NAME.match(name):
                raise ApiError("InvalidArgumentException", f"invalid StreamName {name!r}")
            try:
                return {"StreamARN": emulator.create_stream(name)}
            except StreamExistsError as exc:
                raise ApiError("ResourceInUseException", str(exc)) from None
        if operation == "describeStream":
            return {"StreamInfo": self._resolve(body).stream_info()}
        if operation == "getDataEndpoint":
            api = body.get("APIName")
            if api != "GET_MEDIA":
                raise ApiError("InvalidArgumentException", f"the KVS emulator serves GET_MEDIA only, not {api!r}")
            self._resolve(body)
            return {"DataEndpoint": emulator.url}
        if operation == "listStreams":
            condition = body.get("StreamNameCondition") or {}
            prefix = condition.get("ComparisonValue", "") if isinstance(condition, dict) else ""
            infos = [s.stream_info() for s in emulator.streams if s.name.startswith(str(prefix))]
            return {"StreamInfoList": infos}
        raise ApiError("UnknownOperationException", f"unknown operation {operation}", HTTPStatus.NOT_FOUND)

    # -- GetMedia --

    def _get_media(self, body: Mapping[str, Any]) -> None:
        emulator = self.emulator
        stream = self._resolve(body)
        selector = body.get("StartSelector")
        if not isinstance(selector, dict):
            raise ApiError("InvalidArgumentException", "StartSelector is required")
        start = stream.start_index(selector)
        faults = emulator.faults.take_all(lambda fault: fault.strikes(stream.name, stream.arn))
        faults.sort(key=lambda fault: fault.after_bytes)
        if any(fault.kind == "throttle" for fault in faults):
            raise ApiError("ClientLimitExceededException", "The KVS emulator throttled this GetMedia call (fault).")
        response = MediaResponse(self, stream, faults, emulator.stopping)
        try:
            with emulator.in_flight.serving():
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", MEDIA_CONTENT_TYPE)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
                self.end_headers()
                self.wfile.flush()
                response.run(start)
        except (ConnectionLost, OSError):
            self.close_connection = True
        finally:
            response.release()
