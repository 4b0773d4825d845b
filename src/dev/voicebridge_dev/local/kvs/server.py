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

import json
import logging
import uuid
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any, Protocol

from voicebridge_dev.local.kvs.errors import ConnectionLost, StreamExistsError, StreamNotFoundError
from voicebridge_dev.local.kvs.faults import Fault
from voicebridge_dev.local.kvs.media import MediaResponse
from voicebridge_dev.local.kvs.streams import STREAM_NAME, EmulatedStream
from voicebridge_dev.local.service import ApiError, EmulatorHandler, Serving

logger = logging.getLogger(__name__)

MEDIA_CONTENT_TYPE = "video/webm"


def json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ApiError(400, "SerializationException", f"body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "SerializationException", "body must be a JSON object")
    return body


class Backend(Serving[Fault], Protocol):
    """What the handler needs of the emulator it serves (:class:`~.emulator.KvsEmulator`)."""

    @property
    def url(self) -> str: ...
    @property
    def streams(self) -> list[EmulatedStream]: ...
    def stream(self, name_or_arn: str) -> EmulatedStream: ...
    def create_stream(self, name: str) -> str: ...


def resolve_stream(emulator: Backend, body: Mapping[str, Any]) -> EmulatedStream:
    """The stream a request's body names by ``StreamARN`` or ``StreamName`` (both: the same stream)."""
    arn, name = body.get("StreamARN"), body.get("StreamName")
    if arn is None and name is None:
        raise ApiError(400, "InvalidArgumentException", "StreamName or StreamARN is required")
    try:
        stream = emulator.stream(str(arn if arn is not None else name))
    except StreamNotFoundError:
        raise ApiError(404, "ResourceNotFoundException", f"The stream {arn or name} does not exist.") from None
    if arn is not None and name is not None and stream.name != name:
        raise ApiError(400, "InvalidArgumentException", "StreamName and StreamARN name different streams")
    return stream


class Handler(EmulatorHandler[Backend]):
    label = "KVS emulator"

    # -- routing --

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            raw = self.read_body()
            answer = self.control.dispatch("POST", self.path, raw)
            if answer is not None:
                self.send_json(answer.status, answer.payload, answer.headers)
                return
            body = json_object(raw)
            if path == "/getMedia":
                self._get_media(body)
            else:
                self.send_json(HTTPStatus.OK, self._operation(path, body))
        except ApiError as exc:
            self._send_error(exc)

    def unknown_operation(self) -> None:
        self._send_error(ApiError(404, "UnknownOperationException", "not found"))

    def _send_error(self, error: ApiError) -> None:
        logger.info("KVS emulator: %s %s: %s", self.path, error.error_type, error.message)
        self.send_json(error.status, {"Message": error.message}, {"x-amzn-ErrorType": f"{error.error_type}:"})

    # -- the kinesisvideo operations --

    def _operation(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        emulator, operation = self.emulator, path.lstrip("/")
        if operation == "createStream":
            name = body.get("StreamName")
            if not isinstance(name, str) or not STREAM_NAME.match(name):
                raise ApiError(400, "InvalidArgumentException", f"invalid StreamName {name!r}")
            try:
                return {"StreamARN": emulator.create_stream(name)}
            except StreamExistsError as exc:
                raise ApiError(400, "ResourceInUseException", str(exc)) from None
        if operation == "describeStream":
            return {"StreamInfo": resolve_stream(emulator, body).stream_info()}
        if operation == "getDataEndpoint":
            api = body.get("APIName")
            if api != "GET_MEDIA":
                raise ApiError(400, "InvalidArgumentException", f"the KVS emulator serves GET_MEDIA only, not {api!r}")
            resolve_stream(emulator, body)
            return {"DataEndpoint": emulator.url}
        if operation == "listStreams":
            condition = body.get("StreamNameCondition") or {}
            prefix = condition.get("ComparisonValue", "") if isinstance(condition, dict) else ""
            infos = [s.stream_info() for s in emulator.streams if s.name.startswith(str(prefix))]
            return {"StreamInfoList": infos}
        raise ApiError(404, "UnknownOperationException", f"no operation at {path}")

    # -- GetMedia --

    def _get_media(self, body: Mapping[str, Any]) -> None:
        emulator = self.emulator
        stream = resolve_stream(emulator, body)
        selector = body.get("StartSelector")
        if not isinstance(selector, dict):
            raise ApiError(400, "InvalidArgumentException", "StartSelector is required")
        start = stream.start_index(selector)
        faults = emulator.faults.take_all(lambda fault: fault.strikes(stream.name, stream.arn))
        faults.sort(key=lambda fault: fault.after_bytes)
        if any(fault.kind == "throttle" for fault in faults):
            raise ApiError(
                400, "ClientLimitExceededException", "The KVS emulator throttled this GetMedia call (fault)."
            )
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
