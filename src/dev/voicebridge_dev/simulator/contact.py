"""The simulated contact: identity, attributes, the last Lambda result, and the event a function receives.

JSONPath references (docs/protocols.md, *The flow language*; Connect's *How to reference contact attributes* and
*List of available contact attributes and their JSONPath references*): ``$.Attributes.X`` (contact attributes),
``$.External.X`` (the latest Invoke-Lambda result), ``$.FlowAttributes.X`` (set by *Set flow attributes*, alive for
the flow), ``$.Lex.…`` and ``$.Metrics.…`` (what a Lex block or *Get queue metrics* left), ``$.StoredCustomerInput``,
``$.AwsRegion``, and the contact's own fields (``$.ContactId``, ``$.Channel``, ``$.LanguageCode``,
``$.CustomerEndpoint.Address``, ``$.Queue.ARN``, ``$.Queue.Name``, ``$.Queue.OutboundCallerId.Address``,
``$.MediaStreams.Customer.Audio.StreamARN``, …). A name with spaces
or other special characters goes in brackets and single quotes, after a dot or not: ``$.Attributes.['user name']``,
``$['AwsRegion']``. A parameter whose whole value is one reference takes the referenced value; prompt text may also
hold references inline ("You said: $.Attributes.LastTranscript"). A reference to nothing is the empty string, as
Connect renders it.

The event (docs/protocols.md, *Amazon Connect → Lambda*)::

    {"Name": "ContactFlowEvent",
     "Details": {"ContactData": {"Attributes": {...}, "Channel": "VOICE", "ContactId": "...", ...,
                                 "MediaStreams": {"Customer": {"Audio": null | {
                                     "StreamARN", "StartFragmentNumber", "StartTimestamp", "Stop..."}}}},
                 "Parameters": {...}}}
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from voicebridge_dev.local.kvs import EMULATED_ACCOUNT_ID, EMULATED_INSTANCE_ID

__all__ = ["LOCAL_QUEUE_ID", "MAX_ATTRIBUTES_BYTES", "Contact", "is_reference", "local_queue_arn"]

MAX_ATTRIBUTES_BYTES = 32_768
LOCAL_QUEUE_ID = "0a1b2c3d-0000-4000-8000-000000000001"
"""The queue of the emulated Connect instance that a flow's transfers reach when the template names none."""
_REFERENCE = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_-]*|\.?\['[^']*'\])+")
_SEGMENT = re.compile(r"\.([A-Za-z_][A-Za-z0-9_-]*)|\.?\['([^']*)'\]")


def local_queue_arn(region: str = "us-east-1") -> str:
    """The ARN of the emulated instance's queue (:data:`LOCAL_QUEUE_ID`) in ``region``."""
    return f"arn:aws:connect:{region}:{EMULATED_ACCOUNT_ID}:instance/{EMULATED_INSTANCE_ID}/queue/{LOCAL_QUEUE_ID}"


def is_reference(value: str) -> bool:
    """True when ``value`` is exactly one reference (``$.External.Result``)."""
    return _REFERENCE.fullmatch(value) is not None


@dataclass
class Contact:
    """One inbound voice contact as a flow sees it."""

    contact_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    region: str = "us-east-1"
    customer_number: str = "+15555550100"
    system_number: str = "+15555550199"
    language: str = "en-US"
    attributes: dict[str, str] = field(default_factory=dict)
    external: dict[str, Any] = field(default_factory=dict)
    audio_stream: dict[str, str] | None = None
    queue: str | None = None
    queue_name: str | None = None
    queue_caller_id: str | None = None
    flow_attributes: dict[str, str] = field(default_factory=dict)
    lex: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    stored_input: str | None = None

    @property
    def instance_arn(self) -> str:
        return f"arn:aws:connect:{self.region}:{EMULATED_ACCOUNT_ID}:instance/{EMULATED_INSTANCE_ID}"

    def contact_data(self) -> dict[str, Any]:
        return {
            "Attributes": dict(self.attributes),
            "Channel": "VOICE",
            "ContactId": self.contact_id,
            "InitialContactId": self.contact_id,
            "PreviousContactId": self.contact_id,
            "InitiationMethod": "INBOUND",
            "LanguageCode": self.language,
            "InstanceARN": self.instance_arn,
            "CustomerEndpoint": {"Address": self.customer_number, "Type": "TELEPHONE_NUMBER"},
            "SystemEndpoint": {"Address": self.system_number, "Type": "TELEPHONE_NUMBER"},
            "Queue": None if self.queue is None else self._queue(),
            "MediaStreams": {"Customer": {"Audio": None if self.audio_stream is None else dict(self.audio_stream)}},
        }

    def _queue(self) -> dict[str, Any]:
        queue: dict[str, Any] = {"ARN": self.queue}
        if self.queue_name is not None:
            queue["Name"] = self.queue_name
        if self.queue_caller_id is not None:
            queue["OutboundCallerId"] = {"Address": self.queue_caller_id, "Type": "TELEPHONE_NUMBER"}
        return queue

    def event(self, parameters: Mapping[str, str]) -> dict[str, Any]:
        """The event an Invoke-Lambda block sends with these function input parameters."""
        return {
            "Name": "ContactFlowEvent",
            "Details": {"ContactData": self.contact_data(), "Parameters": dict(parameters)},
        }

    def lookup(self, reference: str) -> Any:
        """The value ``reference`` names (None when it names nothing)."""
        path = [plain if plain else quoted for plain, quoted in _SEGMENT.findall(reference[1:])]
        if not path:
            return None
        head, rest = path[0], path[1:]
        namespaces: dict[str, Any] = {
            "External": self.external,
            "Attributes": self.attributes,
            "FlowAttributes": self.flow_attributes,
            "Lex": self.lex,
            "Metrics": self.metrics,
        }
        current: Any
        if head in namespaces:
            current = namespaces[head]
        elif head == "AwsRegion" and not rest:
            return self.region
        elif head == "StoredCustomerInput" and not rest:
            return self.stored_input
        else:
            current, rest = self.contact_data(), path
        for name in rest:
            if not isinstance(current, Mapping):
                return None
            current = current.get(name)
        return current

    def value(self, raw: str) -> str:
        """A parameter's value: the referenced value when ``raw`` is one reference, else ``raw`` itself."""
        return self._text(self.lookup(raw)) if is_reference(raw) else raw

    def interpolate(self, text: str) -> str:
        """``text`` with each reference in it replaced by its value."""
        return _REFERENCE.sub(lambda match: self._text(self.lookup(match.group(0))), text)

    @staticmethod
    def _text(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        return json.dumps(value)
