"""The contacts the Connect emulator knows and their user-defined attributes, and an ``UpdateContactAttributes``
request read and checked as the package's docstring says Connect checks it."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from voicebridge_dev.local.service import ApiError

MAX_ATTRIBUTE_BYTES: Final = 32_768
"""UTF-8 bytes across all of a contact's attributes (botocore's ``connect`` model, ``Attributes``)."""
_MAX_NAME = _MAX_VALUE = 32_767
_MAX_CONTACT_ID, _MAX_INSTANCE_ID = 256, 100
_NAME: Final = re.compile(r"[A-Za-z0-9_-]+")
_CONTACT_ID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def invalid(message: str) -> ApiError:
    return ApiError(400, "InvalidParameterException", message)


def not_found(message: str) -> ApiError:
    return ApiError(404, "ResourceNotFoundException", message)


def _serialization(message: str) -> ApiError:
    return ApiError(400, "SerializationException", message)


@dataclass(frozen=True)
class UpdateRequest:
    """An ``UpdateContactAttributes`` request whose members are all within the model's constraints."""

    instance_id: str
    contact_id: str
    attributes: Mapping[str, str]

    @classmethod
    def of(cls, body: Any) -> UpdateRequest:
        """The request ``body`` (decoded JSON) makes; :class:`ApiError` otherwise."""
        if not isinstance(body, dict):
            raise _serialization("The request body must be a JSON object.")
        contact_id = _identifier(body, "InitialContactId", _MAX_CONTACT_ID)
        instance_id = _identifier(body, "InstanceId", _MAX_INSTANCE_ID)
        attributes = body.get("Attributes")
        if attributes is None:
            raise invalid("Attributes is required.")
        if not isinstance(attributes, dict) or not all(isinstance(v, str) for v in attributes.values()):
            raise _serialization("Attributes must be a map of strings to strings.")
        for name, value in attributes.items():
            if not 1 <= len(name) <= _MAX_NAME:
                raise invalid(f"Attribute names must be 1 to {_MAX_NAME} characters long.")
            if not _NAME.fullmatch(name):
                raise invalid(
                    f"Attribute name '{name[:64]}' is not valid: keys can include only alphanumeric, dash, and "
                    "underscore characters."
                )
            if len(value) > _MAX_VALUE:
                raise invalid(f"The value of attribute '{name}' is longer than {_MAX_VALUE} characters.")
        return cls(instance_id, contact_id, attributes)


def _identifier(body: Mapping[str, Any], member: str, longest: int) -> str:
    value = body.get(member)
    if value is None:
        raise invalid(f"{member} is required.")
    if not isinstance(value, str):
        raise _serialization(f"{member} must be a string.")
    if not 1 <= len(value) <= longest:
        raise invalid(f"{member} must be 1 to {longest} characters long.")
    return value


def attribute_bytes(attributes: Mapping[str, str]) -> int:
    """The UTF-8 bytes of every name and value."""
    return sum(len(name.encode()) + len(value.encode()) for name, value in attributes.items())


@dataclass
class Contact:
    """A contact of the instance: its attributes, and each update applied to them (epoch seconds, what it set)."""

    contact_id: str
    attributes: dict[str, str] = field(default_factory=dict)
    updates: list[tuple[float, dict[str, str]]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "ContactId": self.contact_id,
            "Attributes": dict(self.attributes),
            "Updates": [{"At": at, "Attributes": dict(given)} for at, given in self.updates],
        }


class Contacts:
    """The contacts of one instance, written by the server's threads and read by a test's."""

    def __init__(self, instance_id: str, *, known_contacts_only: bool = False) -> None:
        self.instance_id = instance_id
        self.known_contacts_only = known_contacts_only
        self._lock = threading.Lock()
        self._contacts: dict[str, Contact] = {}

    def begin(self, contact_id: str) -> None:
        """Know ``contact_id`` as a contact of the instance (idempotent)."""
        if not isinstance(contact_id, str) or not 1 <= len(contact_id) <= _MAX_CONTACT_ID:
            raise ValueError(f"a contact ID is 1 to {_MAX_CONTACT_ID} characters, got {contact_id!r}")
        with self._lock:
            self._contacts.setdefault(contact_id, Contact(contact_id))

    def update(self, request: UpdateRequest) -> None:
        """Apply ``request`` to its contact, whole or not at all."""
        self._instance(request.instance_id)
        with self._lock:
            contact = self._contact(request.contact_id, create=True)
            merged = {**contact.attributes, **request.attributes}
            merged = {name: value for name, value in merged.items() if value}
            if attribute_bytes(merged) > MAX_ATTRIBUTE_BYTES:
                raise invalid(
                    f"The contact's attributes would take {attribute_bytes(merged)} UTF-8 bytes; "
                    f"up to {MAX_ATTRIBUTE_BYTES} are allowed across all attributes for a contact."
                )
            contact.attributes = merged
            contact.updates.append((time.time(), dict(request.attributes)))

    def check(self, request: UpdateRequest) -> None:
        """Refuse ``request`` as :meth:`update` would for its instance or contact, changing nothing."""
        self._instance(request.instance_id)
        with self._lock:
            self._contact(request.contact_id, create=False)

    def attributes(self, instance_id: str, contact_id: str) -> dict[str, str]:
        """The contact's attributes (``GetContactAttributes``)."""
        self._instance(instance_id)
        with self._lock:
            contact = self._contacts.get(contact_id)
            if contact is None and self._acceptable(contact_id):
                return {}
            if contact is None:
                raise not_found(f"Contact not found: {contact_id}")
            return dict(contact.attributes)

    def get(self, contact_id: str) -> Contact | None:
        """A copy of the contact, if the emulator knows it."""
        with self._lock:
            contact = self._contacts.get(contact_id)
            if contact is None:
                return None
            return Contact(contact.contact_id, dict(contact.attributes), list(contact.updates))

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [contact.to_json() for contact in self._contacts.values()]

    def clear(self) -> int:
        with self._lock:
            forgotten = len(self._contacts)
            self._contacts.clear()
            return forgotten

    def _instance(self, instance_id: str) -> None:
        if instance_id != self.instance_id:
            raise not_found(f"Instance not found: {instance_id}")

    def _acceptable(self, contact_id: str) -> bool:
        return not self.known_contacts_only and bool(_CONTACT_ID.fullmatch(contact_id))

    def _contact(self, contact_id: str, *, create: bool) -> Contact:
        contact = self._contacts.get(contact_id)
        if contact is not None:
            return contact
        if not self._acceptable(contact_id):
            raise not_found(f"Contact not found: {contact_id}")
        contact = Contact(contact_id)
        if create:
            self._contacts[contact_id] = contact
        return contact
