"""Encoder for the AWS event-stream binary framing (``application/vnd.amazon.eventstream``).

Written from the format description, for the local emulators only; it shares nothing with any decoder, so
botocore (the real client) stays an independent judge of what is produced here.

One message on the wire::

    +----------------+-----------------+--------------+-----------+---------+-------------+
    | total length   | headers length  | prelude CRC  | headers   | payload | message CRC |
    | u32 big-endian | u32 big-endian  | CRC32 of the | ...       | ...     | CRC32 of    |
    |                |                 | first 8 bytes|           |         | all before  |
    +----------------+-----------------+--------------+-----------+---------+-------------+

``total length`` counts every byte of the message, both CRCs included (so it is 16 + headers + payload).

Each header is ``name length (u8) | name (UTF-8) | value type (u8) | value``, the value depending on its type:

    ====  ==========  =============================================
    type  meaning     value bytes
    ====  ==========  =============================================
    0     true        none
    1     false       none
    2     byte        i8
    3     short       i16 big-endian
    4     integer     i32 big-endian
    5     long        i64 big-endian
    6     byte array  u16 big-endian length, then the bytes
    7     string      u16 big-endian length, then UTF-8 bytes
    8     timestamp   i64 big-endian, milliseconds since the epoch
    9     uuid        16 bytes
    ====  ==========  =============================================

Python values map to types as: ``True``/``False`` → 0/1, ``int`` → 4 (use :class:`Int8`, :class:`Int16` or
:class:`Int64` for the other widths), ``bytes`` → 6, ``str`` → 7, an aware ``datetime`` → 8, ``UUID`` → 9.

Services put their meaning in three headers: ``:message-type`` (``event``, ``exception`` or ``error``), then
``:event-type`` + ``:content-type`` for events, ``:exception-type`` + ``:content-type`` for modelled
exceptions, and ``:error-code`` + ``:error-message`` for unmodelled errors.

>>> frame = encode_event("PayloadPart", b'{"type":"done"}\\n')
>>> len(frame) == int.from_bytes(frame[:4], "big")
True
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

__all__ = [
    "EventStreamEncodeError",
    "HeaderValue",
    "Int8",
    "Int16",
    "Int64",
    "encode_error",
    "encode_event",
    "encode_exception",
    "encode_headers",
    "encode_message",
]

# Limits of the format: a prelude length field can say more, but readers refuse bigger messages.
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MAX_HEADERS_BYTES = 128 * 1024
MAX_HEADER_NAME_BYTES = 255
MAX_HEADER_VALUE_BYTES = 32_767

_PRELUDE_BYTES = 12
_CRC_BYTES = 4


class EventStreamEncodeError(ValueError):
    """A header or payload cannot be represented in an event-stream message."""


@dataclass(frozen=True)
class Int8:
    """A header value encoded as a signed byte (type 2)."""

    value: int


@dataclass(frozen=True)
class Int16:
    """A header value encoded as a signed 16-bit integer (type 3)."""

    value: int


@dataclass(frozen=True)
class Int64:
    """A header value encoded as a signed 64-bit integer (type 5)."""

    value: int


HeaderValue = bool | int | Int8 | Int16 | Int64 | bytes | str | datetime | UUID


def _crc32(data: bytes, start: int = 0) -> int:
    return zlib.crc32(data, start) & 0xFFFFFFFF


def _pack_int(fmt: str, value: int, type_byte: int, name: str) -> bytes:
    try:
        return bytes([type_byte]) + struct.pack(fmt, value)
    except struct.error as exc:
        raise EventStreamEncodeError(f"header {name!r}: {value} does not fit type {type_byte}") from exc


def _length_prefixed(type_byte: int, data: bytes, name: str) -> bytes:
    if len(data) > MAX_HEADER_VALUE_BYTES:
        raise EventStreamEncodeError(f"header {name!r}: value of {len(data)} bytes exceeds {MAX_HEADER_VALUE_BYTES}")
    return bytes([type_byte]) + struct.pack(">H", len(data)) + data


def _encode_value(name: str, value: HeaderValue) -> bytes:
    # bool is tested before int because it is a subclass of int.
    if isinstance(value, bool):
        return bytes([0 if value else 1])
    if isinstance(value, Int8):
        return _pack_int(">b", value.value, 2, name)
    if isinstance(value, Int16):
        return _pack_int(">h", value.value, 3, name)
    if isinstance(value, int):
        return _pack_int(">i", value, 4, name)
    if isinstance(value, Int64):
        return _pack_int(">q", value.value, 5, name)
    if isinstance(value, bytes):
        return _length_prefixed(6, value, name)
    if isinstance(value, str):
        return _length_prefixed(7, value.encode("utf-8"), name)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise EventStreamEncodeError(f"header {name!r}: timestamp must be timezone-aware")
        millis = round(value.timestamp() * 1000)
        return _pack_int(">q", millis, 8, name)
    if isinstance(value, UUID):
        return bytes([9]) + value.bytes
    raise EventStreamEncodeError(f"header {name!r}: unsupported value type {type(value).__name__}")


def encode_headers(headers: Mapping[str, HeaderValue]) -> bytes:
    """Serialise headers in mapping order into the headers section of a message."""
    out = bytearray()
    for name, value in headers.items():
        raw_name = name.encode("utf-8")
        if not 0 < len(raw_name) <= MAX_HEADER_NAME_BYTES:
            raise EventStreamEncodeError(f"header name {name!r} must be 1..{MAX_HEADER_NAME_BYTES} bytes of UTF-8")
        out.append(len(raw_name))
        out += raw_name
        out += _encode_value(name, value)
    if len(out) > MAX_HEADERS_BYTES:
        raise EventStreamEncodeError(f"headers of {len(out)} bytes exceed {MAX_HEADERS_BYTES}")
    return bytes(out)


def encode_message(headers: Mapping[str, HeaderValue], payload: bytes = b"") -> bytes:
    """Frame one event-stream message: prelude, prelude CRC, headers, payload, message CRC."""
    header_bytes = encode_headers(headers)
    total = _PRELUDE_BYTES + len(header_bytes) + len(payload) + _CRC_BYTES
    if total > MAX_MESSAGE_BYTES:
        raise EventStreamEncodeError(f"message of {total} bytes exceeds {MAX_MESSAGE_BYTES}")
    lengths = struct.pack(">II", total, len(header_bytes))
    prelude = lengths + struct.pack(">I", _crc32(lengths))
    body = prelude + header_bytes + payload
    return body + struct.pack(">I", _crc32(body))


def encode_event(event_type: str, payload: bytes, content_type: str = "application/octet-stream") -> bytes:
    """An ``event`` message, e.g. a SageMaker ``PayloadPart`` carrying raw bytes."""
    return encode_message({":message-type": "event", ":event-type": event_type, ":content-type": content_type}, payload)


def encode_exception(exception_type: str, payload: bytes, content_type: str = "application/json") -> bytes:
    """A modelled ``exception`` message, e.g. ``ModelStreamError`` with a JSON body."""
    return encode_message(
        {":message-type": "exception", ":exception-type": exception_type, ":content-type": content_type},
        payload,
    )


def encode_error(error_code: str, error_message: str) -> bytes:
    """An unmodelled ``error`` message: the code and text travel in headers, the payload is empty."""
    return encode_message({":message-type": "error", ":error-code": error_code, ":error-message": error_message})
