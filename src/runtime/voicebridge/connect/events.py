"""Connect's Lambda contract: ContactFlowEvent in, flat string map out (docs/protocols.md, *Amazon Connect → Lambda*).

Every value Connect sends is a string or null, and every field the product reads is checked against its documented
shape before anything reaches AWS; a field that does not fit is ``InvalidInput`` with a short message naming the
field, never echoing its value. The shapes, and where they are documented:

- ``ContactId``, ``InitialContactId``, ``PreviousContactId``: the Connect API reference gives a contact id as a
  string of 1 to 256 characters (``ContactId`` of DescribeContact, StopContact, UpdateContactAttributes), with no
  pattern. Connect issues UUIDs (``4a573372-1f28-4e26-b97b-…``); the product takes letters, digits and hyphens, the
  alphabet of every id Connect issues and what TranscribeStreamFunction's event takes.
- ``InstanceARN``: ``^arn:aws[-a-z0-9]*:connect:[-a-z0-9]*:[0-9]{12}:instance/[-a-zA-Z0-9]*$``, 1 to 256 characters
  (``InstanceArn`` of CloudFormation's AWS::Connect::ContactFlow); the instance id is 1 to 100 characters
  (``InstanceId`` in the Connect API reference).
- ``MediaStreams.Customer.Audio.StreamARN``: the Kinesis Video Streams API reference's stream ARN (DescribeStream,
  GetMedia), ``arn:[a-z\\d-]+:kinesisvideo:[a-z0-9-]+:[0-9]+:[a-z]+/[a-zA-Z0-9_.-]+/[0-9]+`` of 1 to 1024
  characters, whose stream name is ``[a-zA-Z0-9_.-]+`` of 1 to 256; read here as an AWS partition, a 12-digit
  account and the ``stream`` resource: ``arn:aws[-a-z]*:kinesisvideo:<region>:<account>:stream/<name>/<creation ms>``.
- ``StartFragmentNumber``, ``StopFragmentNumber``: ``^[0-9]+$``, 1 to 128 characters (``AfterFragmentNumber`` of
  GetMedia's StartSelector, to which the consumer passes them on).
- ``StartTimestamp``, ``StopTimestamp``: epoch milliseconds as ASCII digits (docs/protocols.md); at most 13, a bound of
  the product's own that lasts until 2286.
- ``Attributes``: names of letters, digits, ``-`` and ``_``, at most 32,768 UTF-8 bytes across all names and values
  (UpdateContactAttributes: "up to 32,768 UTF-8 bytes across all attributes for a contact. Attribute keys can
  include only alphanumeric, dash, and underscore characters"); each value a string or null.
- ``Parameters``: each value a string or null. Connect documents no size; the product takes at most 32,768 UTF-8
  bytes (the most a flow can hand over: an attribute or a Lambda result), and names of at most 256 characters.

A string holding a lone surrogate (JSON ``"\\ud800"``) is not valid Unicode: no UTF-8 carries it, so no log line,
DynamoDB item or response could, and it is refused wherever it appears. ``null``, an absent field and, for optional
fields, the empty string (how Connect renders a reference to nothing) all mean "not given".

A response is a flat object of string → string (STRING_MAP validation) smaller than 32 KB of UTF-8, with ``Result``
always set and, on errors, ``ErrorCode`` and ``ErrorMessage``; :func:`fit` makes an answer fit.

The event is read with the standard library: every Connect-facing function imports this module while Lambda
initializes it, and a validation library would cost more import time than such a function's whole budget::

    >>> event = {"Details": {"ContactData": {"ContactId": "4a573372-1f28-4e26-b97b-1c4d5e6f7a80"}}}
    >>> ContactFlowEvent.parse(event).contact_id
    '4a573372-1f28-4e26-b97b-1c4d5e6f7a80'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from voicebridge.errors import InvalidInput

ResultValue = Literal["OK", "Turn", "Speak", "Timeout", "Listening", "Thinking", "Error", "Fallback"]
_Read = TypeVar("_Read")

MAX_RESPONSE_BYTES = 32 * 1024
"""Connect refuses a response that is not smaller than this, counted in UTF-8 (see :func:`response_size`)."""
MAX_ATTRIBUTES_BYTES = 32_768
"""All of a contact's attribute names and values together, in UTF-8 (UpdateContactAttributes)."""
MAX_PARAMETER_BYTES = 32_768
"""One function input parameter's value, in UTF-8: the most an attribute or a Lambda result can hand it."""
MAX_PARAMETER_NAME_CHARS = 256
TRUNCATED = "Truncated"
"""The key an answer carries, set to ``true``, when :func:`fit` shortened one of its fields."""


@dataclass(frozen=True, slots=True)
class _Shape:
    """What a string field must look like: at most ``max_chars`` characters matching ``pattern``."""

    pattern: re.Pattern[str] | None
    max_chars: int
    expected: str
    """How the field's error message says what it must be."""


CONTACT_ID = _Shape(re.compile(r"[A-Za-z0-9-]{1,256}"), 256, "a Connect contact id (1-256 letters, digits, hyphens)")
INSTANCE_ARN = _Shape(
    re.compile(r"arn:aws[-a-z0-9]*:connect:[-a-z0-9]*:[0-9]{12}:instance/[-a-zA-Z0-9]{1,100}"),
    256,
    "a Connect instance ARN",
)
STREAM_ARN = _Shape(
    re.compile(r"arn:aws[-a-z]*:kinesisvideo:[a-z0-9-]+:[0-9]{12}:stream/[a-zA-Z0-9_.-]{1,256}/[0-9]+"),
    1024,
    "a Kinesis Video stream ARN",
)
FRAGMENT_NUMBER = _Shape(re.compile(r"[0-9]{1,128}"), 128, "a fragment number (1-128 digits)")
EPOCH_MS = _Shape(re.compile(r"[0-9]{1,13}"), 13, "epoch milliseconds (1-13 digits)")
SHORT_TEXT = _Shape(None, 64, "at most 64 characters")
"""The fields the product reads but Connect gives no shape for (``Name``, ``Channel``, ``LanguageCode``)."""

_ATTRIBUTE_NAME = re.compile(r"[A-Za-z0-9_-]+")
_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]{1,18}")
"""A whole-number parameter as a flow writes one (``7``, ``-1``); ASCII digits only, and few enough to be cheap."""
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def is_unicode(text: str) -> bool:
    """False when ``text`` holds a lone surrogate, which no UTF-8 (a log line, a DynamoDB item, a response) carries."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def unicode_safe(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, so it can be logged and answered."""
    return text if is_unicode(text) else _LONE_SURROGATE.sub("\ufffd", text)


class _Malformed(Exception):
    """Which field breaks the contract, and how; ``field`` is already safe to show."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


_ABSENT = object()


def _label(name: str) -> str:
    """A name from the event as a message may show it: itself when short and printable, else its length only."""
    return name if len(name) <= 64 and name.isprintable() else f"<a name of {len(name)} characters>"


class _Object:
    """One JSON object of the event, read field by field; a field is found under Connect's name or under ours."""

    def __init__(self, raw: Any, where: str) -> None:
        if not isinstance(raw, Mapping):
            raise _Malformed(where or "the event", "must be an object")
        self._raw = raw
        self._where = where

    def _get(self, name: str, alias: str) -> tuple[Any, str]:
        """The field's value (``_ABSENT`` when missing) and where it is, as Connect names it."""
        where = f"{self._where}.{alias}" if self._where else alias
        for key in (alias, name):
            if key in self._raw:
                return self._raw[key], where
        return _ABSENT, where

    def text(self, name: str, alias: str, shape: _Shape) -> str:
        """A required string field of the given shape."""
        value, where = self._get(name, alias)
        if value is _ABSENT or value is None:
            raise _Malformed(where, "is required")
        return _checked(value, where, shape)

    def optional_text(self, name: str, alias: str, shape: _Shape) -> str | None:
        """A string field of the given shape that may be absent, null or empty."""
        value, where = self._get(name, alias)
        if value is _ABSENT or value is None or value == "":
            return None
        return _checked(value, where, shape)

    def child(self, name: str, alias: str, read: Callable[[_Object], _Read]) -> _Read:
        """A required object field, as ``read`` makes it."""
        value, where = self._get(name, alias)
        if value is _ABSENT or value is None:
            raise _Malformed(where, "is required")
        return read(_Object(value, where))

    def optional_child(self, name: str, alias: str, read: Callable[[_Object], _Read]) -> _Read | None:
        """An object field that may be absent or null, as ``read`` makes it."""
        value, where = self._get(name, alias)
        return None if value is _ABSENT or value is None else read(_Object(value, where))

    def attributes(self, name: str, alias: str) -> dict[str, str | None]:
        """The contact's attributes: documented names, string (or null) values, 32,768 UTF-8 bytes in all."""
        values, where = self._text_values(name, alias)
        total = 0
        for key, value in values.items():
            if not _ATTRIBUTE_NAME.fullmatch(key):
                raise _Malformed(where, f"has a name that is not letters, digits, '-' and '_': {_label(key)}")
            # Names and values together, as Connect counts them; a name is ASCII, so its length is its size.
            total += len(key) + (len(value.encode()) if value else 0)
            if total > MAX_ATTRIBUTES_BYTES:
                raise _Malformed(where, f"hold more than {MAX_ATTRIBUTES_BYTES} bytes")
        return values

    def parameters(self, name: str, alias: str) -> dict[str, str | None]:
        """The block's function input parameters: string (or null) values, each at most 32,768 UTF-8 bytes.

        A problem is named by the parameter alone, as the flow's author wrote it (``Text is not valid Unicode``)."""
        values, where = self._text_values(name, alias, own_names=True)
        for key, value in values.items():
            if not key or len(key) > MAX_PARAMETER_NAME_CHARS:
                raise _Malformed(where, f"has a name that is empty or over {MAX_PARAMETER_NAME_CHARS} characters")
            if value is not None and (len(value) > MAX_PARAMETER_BYTES or len(value.encode()) > MAX_PARAMETER_BYTES):
                raise _Malformed(_label(key), f"is longer than {MAX_PARAMETER_BYTES} bytes")
        return values

    def _text_values(self, name: str, alias: str, *, own_names: bool = False) -> tuple[dict[str, str | None], str]:
        """An object field of string (or null) values with valid names, empty when absent or null."""
        raw, where = self._get(name, alias)
        if raw is _ABSENT or raw is None:
            return {}, where
        values = dict(_Object(raw, where)._raw)
        for key, value in values.items():
            if not isinstance(key, str) or not is_unicode(key):
                raise _Malformed(where, "has a name that is not valid Unicode")
            at = _label(key) if own_names else f"{where}.{_label(key)}"
            if value is None:
                continue
            if not isinstance(value, str):
                raise _Malformed(at, "must be a string or null")
            if not is_unicode(value):
                raise _Malformed(at, "is not valid Unicode")
        return values, where


def _checked(value: Any, where: str, shape: _Shape) -> str:
    if not isinstance(value, str):
        raise _Malformed(where, "must be a string")
    # Length first: a huge value costs nothing more to refuse, and is never matched or echoed.
    if len(value) > shape.max_chars:
        raise _Malformed(where, f"must be {shape.expected}")
    if not is_unicode(value):
        raise _Malformed(where, "is not valid Unicode")
    if shape.pattern is not None and not shape.pattern.fullmatch(value):
        raise _Malformed(where, f"must be {shape.expected}")
    return value


@dataclass(frozen=True, slots=True)
class AudioStream:
    """A contact's audio in Kinesis Video Streams, and where Connect started (or stopped) streaming it.

    ``stream_arn`` is empty when Connect names no stream (the flow is not streaming)."""

    stream_arn: str
    start_fragment_number: str | None = None
    start_timestamp: str | None = None
    stop_fragment_number: str | None = None
    stop_timestamp: str | None = None

    @classmethod
    def _read(cls, raw: _Object) -> AudioStream:
        return cls(
            stream_arn=raw.optional_text("stream_arn", "StreamARN", STREAM_ARN) or "",
            start_fragment_number=raw.optional_text("start_fragment_number", "StartFragmentNumber", FRAGMENT_NUMBER),
            start_timestamp=raw.optional_text("start_timestamp", "StartTimestamp", EPOCH_MS),
            stop_fragment_number=raw.optional_text("stop_fragment_number", "StopFragmentNumber", FRAGMENT_NUMBER),
            stop_timestamp=raw.optional_text("stop_timestamp", "StopTimestamp", EPOCH_MS),
        )


@dataclass(frozen=True, slots=True)
class ParticipantStreams:
    """One participant's media streams."""

    audio: AudioStream | None = None

    @classmethod
    def _read(cls, raw: _Object) -> ParticipantStreams:
        return cls(audio=raw.optional_child("audio", "Audio", AudioStream._read))


@dataclass(frozen=True, slots=True)
class MediaStreams:
    """The contact's media streams, once the flow has started streaming."""

    customer: ParticipantStreams | None = None

    @classmethod
    def _read(cls, raw: _Object) -> MediaStreams:
        return cls(customer=raw.optional_child("customer", "Customer", ParticipantStreams._read))


@dataclass(frozen=True, slots=True)
class ContactData:
    """The contact the flow is handling."""

    contact_id: str
    initial_contact_id: str | None = None
    previous_contact_id: str | None = None
    instance_arn: str | None = None
    channel: str | None = None
    language_code: str | None = None
    attributes: dict[str, str | None] = field(default_factory=dict)
    media_streams: MediaStreams | None = None

    @classmethod
    def _read(cls, raw: _Object) -> ContactData:
        # A MediaStreams that is not an object is named before any other field's problem, one inside it after them.
        streams = raw.optional_child("media_streams", "MediaStreams", lambda found: found)
        return cls(
            contact_id=raw.text("contact_id", "ContactId", CONTACT_ID),
            initial_contact_id=raw.optional_text("initial_contact_id", "InitialContactId", CONTACT_ID),
            previous_contact_id=raw.optional_text("previous_contact_id", "PreviousContactId", CONTACT_ID),
            instance_arn=raw.optional_text("instance_arn", "InstanceARN", INSTANCE_ARN),
            channel=raw.optional_text("channel", "Channel", SHORT_TEXT),
            language_code=raw.optional_text("language_code", "LanguageCode", SHORT_TEXT),
            attributes=raw.attributes("attributes", "Attributes"),
            media_streams=MediaStreams._read(streams) if streams else None,
        )


@dataclass(frozen=True, slots=True)
class Details:
    """The contact and the Invoke-Lambda block's parameters (all strings)."""

    contact_data: ContactData
    parameters: dict[str, str | None] = field(default_factory=dict)

    @classmethod
    def _read(cls, raw: _Object) -> Details:
        return cls(
            contact_data=raw.child("contact_data", "ContactData", ContactData._read),
            parameters=raw.parameters("parameters", "Parameters"),
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
    def parameters(self) -> dict[str, str | None]:
        return self.details.parameters

    @classmethod
    def parse(cls, event: Any) -> ContactFlowEvent:
        """Validate a raw event; a malformed one is InvalidInput naming the first field that breaks the contract."""
        try:
            raw = _Object(event, "")
            name = raw.optional_text("name", "Name", SHORT_TEXT) or "ContactFlowEvent"
            return cls(name=name, details=raw.child("details", "Details", Details._read))
        except _Malformed as exc:
            raise InvalidInput(f"{exc.field} {exc.problem}") from None


def whole_number(parameters: Mapping[str, Any], name: str, *, default: int, low: int, high: int | None = None) -> int:
    """The whole-number parameter ``name``: ``default`` when absent or empty, InvalidInput when not a whole number
    from ``low`` to ``high``::

        >>> whole_number({"AfterTurn": " 7 "}, "AfterTurn", default=-1, low=-1)
        7
    """
    raw = parameters.get(name)
    text = "" if raw is None else str(raw).strip()
    if text == "":
        return default
    if not _WHOLE_NUMBER.fullmatch(text):
        raise InvalidInput(f"{name} must be a whole number")
    value = int(text)
    if value < low:
        raise InvalidInput(f"{name} must be at least {low}")
    if high is not None and value > high:
        raise InvalidInput(f"{name} must be at most {high}")
    return value


def response(result: ResultValue, **values: object) -> dict[str, str]:
    """A flat string map for Connect; None values are left out."""
    out: dict[str, str] = {"Result": result}
    out.update({key: _text(value) for key, value in values.items() if value is not None})
    return out


def error_response(code: str, message: str, **values: object) -> dict[str, str]:
    return response("Error", ErrorCode=code, ErrorMessage=message[:240], **values)


def response_size(answer: Mapping[str, str]) -> int:
    """The answer's size as Connect receives it: its JSON in UTF-8, with no character escaped as ``\\uXXXX``.

    That is what the Lambda Python runtime sends on python3.12 and later (the template's python3.13): its
    marshaller (``awslambdaric.lambda_runtime_marshaller``) encodes with ``ensure_ascii=False`` and the default
    separators. An ASCII-escaped count would make a CJK character 6 bytes instead of 3 and refuse answers that fit.
    A lone surrogate counts 3 bytes, as the U+FFFD :func:`fit` puts in its place.
    """
    return len(json.dumps(answer, ensure_ascii=False).encode(errors="surrogatepass"))


def fit(answer: Mapping[str, str], truncate: Sequence[str] = ()) -> dict[str, str] | None:
    """``answer`` as Connect can take it, or None when it cannot fit.

    Lone surrogates become U+FFFD (no UTF-8 carries them). When the answer is too large, the fields named in
    ``truncate`` are shortened, in that order, on a character boundary, each only as far as needed, and the answer
    says ``Truncated=true``."""
    clean = {unicode_safe(key): unicode_safe(value) for key, value in answer.items()}
    if response_size(clean) < MAX_RESPONSE_BYTES:
        return clean
    clean[TRUNCATED] = "true"
    for key in truncate:
        whole = clean.get(key)
        if not whole:
            continue
        clean[key] = ""
        if response_size(clean) >= MAX_RESPONSE_BYTES:
            continue
        fits, too_long = 0, len(whole)
        while too_long - fits > 1:
            middle = (fits + too_long) // 2
            clean[key] = whole[:middle]
            if response_size(clean) < MAX_RESPONSE_BYTES:
                fits = middle
            else:
                too_long = middle
        clean[key] = whole[:fits]
        return clean
    return None


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.0f}" if value.is_integer() else f"{value:.1f}"
    return str(value)
