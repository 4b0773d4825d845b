"""Amazon Connect's Lambda contract: the ContactFlowEvent in, a flat string map out (PROTOCOLS.md §1).

Every value Connect sends is a string or null. A response is a flat object of string → string (STRING_MAP
validation), smaller than 32 KB, with ``Result`` always set and, on errors, ``ErrorCode`` and ``ErrorMessage``.

The event is read with the standard library: every Connect-facing function imports this module while Lambda
initializes it, and a validation library would cost more import time than such a function's whole budget::

    >>> ContactFlowEvent.parse({"Details": {"ContactData": {"ContactId": "c-1"}}}).contact_id
    'c-1'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from voicebridge.errors import InvalidInput

ResultValue = Literal["OK", "Turn", "Speak", "Timeout", "Error", "Fallback"]
MAX_RESPONSE_BYTES = 32 * 1024


class _Malformed(Exception):
    """Where the event breaks the contract, and how."""

    def __init__(self, where: tuple[str, ...], problem: str) -> None:
        super().__init__(problem)
        self.where = where
        self.problem = problem


_ABSENT = object()


class _Object:
    """One JSON object of the event, read field by field; a field is found under Connect's name or under ours."""

    def __init__(self, raw: Any, where: tuple[str, ...]) -> None:
        if not isinstance(raw, Mapping):
            raise _Malformed(where, "must be an object")
        self._raw = raw
        self._where = where

    def _get(self, name: str, alias: str) -> tuple[Any, tuple[str, ...]]:
        """The field's value (``_ABSENT`` when missing) and where it is, as Connect names it."""
        for key in (alias, name):
            if key in self._raw:
                return self._raw[key], (*self._where, key)
        return _ABSENT, (*self._where, alias)

    def text(self, name: str, alias: str, default: str | None = None) -> str:
        """A string field; required unless it has a default."""
        value, where = self._get(name, alias)
        if value is _ABSENT and default is not None:
            return default
        if value is _ABSENT:
            raise _Malformed(where, "field required")
        if not isinstance(value, str):
            raise _Malformed(where, "must be a string")
        return value

    def optional_text(self, name: str, alias: str) -> str | None:
        """A string field that may be absent or null."""
        value, where = self._get(name, alias)
        if value is _ABSENT or value is None:
            return None
        if not isinstance(value, str):
            raise _Malformed(where, "must be a string")
        return value

    def child(self, name: str, alias: str) -> _Object:
        """A required object field."""
        value, where = self._get(name, alias)
        if value is _ABSENT:
            raise _Malformed(where, "field required")
        return _Object(value, where)

    def optional_child(self, name: str, alias: str) -> _Object | None:
        """An object field that may be absent or null."""
        value, where = self._get(name, alias)
        return None if value is _ABSENT or value is None else _Object(value, where)

    def mapping(self, name: str, alias: str) -> dict[str, Any]:
        """An object field of free-form values, empty when absent."""
        value, where = self._get(name, alias)
        return {} if value is _ABSENT else dict(_Object(value, where)._raw)

    def text_map(self, name: str, alias: str) -> dict[str, str | None]:
        """An object field of string (or null) values, empty when absent."""
        values = self.mapping(name, alias)
        for key, value in values.items():
            if value is not None and not isinstance(value, str):
                raise _Malformed((*self._where, alias, str(key)), "must be a string")
        return values


@dataclass(frozen=True, slots=True)
class AudioStream:
    """A contact's audio in Kinesis Video Streams, and where Connect started (or stopped) streaming it."""

    stream_arn: str
    start_fragment_number: str | None = None
    start_timestamp: str | None = None
    stop_fragment_number: str | None = None
    stop_timestamp: str | None = None

    @classmethod
    def _read(cls, raw: _Object) -> AudioStream:
        return cls(
            stream_arn=raw.text("stream_arn", "StreamARN"),
            start_fragment_number=raw.optional_text("start_fragment_number", "StartFragmentNumber"),
            start_timestamp=raw.optional_text("start_timestamp", "StartTimestamp"),
            stop_fragment_number=raw.optional_text("stop_fragment_number", "StopFragmentNumber"),
            stop_timestamp=raw.optional_text("stop_timestamp", "StopTimestamp"),
        )


@dataclass(frozen=True, slots=True)
class ParticipantStreams:
    """One participant's media streams."""

    audio: AudioStream | None = None

    @classmethod
    def _read(cls, raw: _Object) -> ParticipantStreams:
        audio = raw.optional_child("audio", "Audio")
        return cls(audio=AudioStream._read(audio) if audio else None)


@dataclass(frozen=True, slots=True)
class MediaStreams:
    """The contact's media streams, once the flow has started streaming."""

    customer: ParticipantStreams | None = None

    @classmethod
    def _read(cls, raw: _Object) -> MediaStreams:
        customer = raw.optional_child("customer", "Customer")
        return cls(customer=ParticipantStreams._read(customer) if customer else None)


@dataclass(frozen=True, slots=True)
class ContactData:
    """The contact the flow is handling."""

    contact_id: str
    initial_contact_id: str | None = None
    instance_arn: str | None = None
    channel: str | None = None
    language_code: str | None = None
    attributes: dict[str, str | None] = field(default_factory=dict)
    media_streams: MediaStreams | None = None

    @classmethod
    def _read(cls, raw: _Object) -> ContactData:
        streams = raw.optional_child("media_streams", "MediaStreams")
        return cls(
            contact_id=raw.text("contact_id", "ContactId"),
            initial_contact_id=raw.optional_text("initial_contact_id", "InitialContactId"),
            instance_arn=raw.optional_text("instance_arn", "InstanceARN"),
            channel=raw.optional_text("channel", "Channel"),
            language_code=raw.optional_text("language_code", "LanguageCode"),
            attributes=raw.text_map("attributes", "Attributes"),
            media_streams=MediaStreams._read(streams) if streams else None,
        )


@dataclass(frozen=True, slots=True)
class Details:
    """The contact and the Invoke-Lambda block's parameters (all strings)."""

    contact_data: ContactData
    parameters: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def _read(cls, raw: _Object) -> Details:
        return cls(
            contact_data=ContactData._read(raw.child("contact_data", "ContactData")),
            parameters=raw.mapping("parameters", "Parameters"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ContactFlowEvent:
    """The event an Invoke-Lambda block sends; fields Connect adds that the product does not read are ignored."""

    name: str = "ContactFlowEvent"
    details: Details

    @property
    def contact_id(self) -> str:
        return self.details.contact_data.contact_id

    @property
    def parameters(self) -> dict[str, Any]:
        return self.details.parameters

    @classmethod
    def parse(cls, event: Any) -> ContactFlowEvent:
        """Validate a raw event; a malformed one is InvalidInput with the first problem named."""
        try:
            raw = _Object(event, ())
            name = raw.text("name", "Name", default="ContactFlowEvent")
            return cls(name=name, details=Details._read(raw.child("details", "Details")))
        except _Malformed as exc:
            where = ".".join(exc.where) or "event"
            raise InvalidInput(f"not a Connect contact flow event: {where}: {exc.problem}") from None


def response(result: ResultValue, **values: object) -> dict[str, str]:
    """A flat string map for Connect; None values are left out."""
    out: dict[str, str] = {"Result": result}
    out.update({key: _text(value) for key, value in values.items() if value is not None})
    return out


def error_response(code: str, message: str, **values: object) -> dict[str, str]:
    return response("Error", ErrorCode=code, ErrorMessage=message[:240], **values)


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
    return str(value)
