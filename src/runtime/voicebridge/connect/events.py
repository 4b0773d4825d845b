"""Amazon Connect's Lambda contract: the ContactFlowEvent in, a flat string map out (PROTOCOLS.md §1).

Every value Connect sends is a string or null. A response is a flat object of string → string (STRING_MAP
validation), smaller than 32 KB, with ``Result`` always set and, on errors, ``ErrorCode`` and ``ErrorMessage``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from voicebridge.errors import InvalidInput

ResultValue = Literal["OK", "Turn", "Timeout", "Error", "Fallback"]
MAX_RESPONSE_BYTES = 32 * 1024


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True, frozen=True)


class AudioStream(_Model):
    stream_arn: str = Field(alias="StreamARN")
    start_fragment_number: str | None = Field(default=None, alias="StartFragmentNumber")
    start_timestamp: str | None = Field(default=None, alias="StartTimestamp")
    stop_fragment_number: str | None = Field(default=None, alias="StopFragmentNumber")
    stop_timestamp: str | None = Field(default=None, alias="StopTimestamp")


class ParticipantStreams(_Model):
    audio: AudioStream | None = Field(default=None, alias="Audio")


class MediaStreams(_Model):
    customer: ParticipantStreams | None = Field(default=None, alias="Customer")


class ContactData(_Model):
    contact_id: str = Field(alias="ContactId")
    initial_contact_id: str | None = Field(default=None, alias="InitialContactId")
    instance_arn: str | None = Field(default=None, alias="InstanceARN")
    channel: str | None = Field(default=None, alias="Channel")
    language_code: str | None = Field(default=None, alias="LanguageCode")
    attributes: dict[str, str | None] = Field(default_factory=dict, alias="Attributes")
    media_streams: MediaStreams | None = Field(default=None, alias="MediaStreams")


class Details(_Model):
    contact_data: ContactData = Field(alias="ContactData")
    parameters: dict[str, Any] = Field(default_factory=dict, alias="Parameters")


class ContactFlowEvent(_Model):
    """The event an Invoke-Lambda block sends."""

    name: str = Field(default="ContactFlowEvent", alias="Name")
    details: Details = Field(alias="Details")

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
            return cls.model_validate(event)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "event"
            raise InvalidInput(f"not a Connect contact flow event: {where}: {first['msg']}") from None


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
