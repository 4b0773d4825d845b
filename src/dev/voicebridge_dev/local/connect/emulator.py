"""The Connect emulator itself: the instance it serves, its contacts, faults and records, and its server."""

from __future__ import annotations

import json
import logging
from http import HTTPStatus
from typing import Unpack

from voicebridge_dev.local.connect.contacts import Contact, Contacts, UpdateRequest
from voicebridge_dev.local.connect.faults import Fault
from voicebridge_dev.local.connect.records import LABEL, InvocationRecord
from voicebridge_dev.local.connect.server import Handler
from voicebridge_dev.local.kvs import EMULATED_INSTANCE_ID
from voicebridge_dev.local.service import Address, ControlAnswer, ControlPlane, RecordingEmulator

logger = logging.getLogger(__name__)


def _refusal(reason: str) -> ControlAnswer:
    return ControlAnswer(HTTPStatus.BAD_REQUEST, {"Message": reason}, {"x-amzn-ErrorType": "InvalidParameterException"})


class ConnectEmulator(RecordingEmulator[Fault, InvocationRecord]):
    """A local Amazon Connect serving the contact attributes of one instance (an emulator, not Amazon Connect).

    ``instance_id`` — the instance it serves (the local cloud's :data:`~voicebridge_dev.local.kvs.EMULATED_INSTANCE_ID`
    by default); ``known_contacts_only`` — refuse every contact not begun with :meth:`begin_contact`, as Connect
    refuses a contact it does not have. :meth:`wait_idle` waits until no call is being served.
    """

    service = "Connect"
    label = LABEL
    handler = Handler

    def __init__(
        self,
        *,
        instance_id: str = EMULATED_INSTANCE_ID,
        known_contacts_only: bool = False,
        **address: Unpack[Address],
    ) -> None:
        super().__init__(InvocationRecord, **address)
        self.contacts = Contacts(instance_id, known_contacts_only=known_contacts_only)

    def _serving(self) -> str:
        return f"instance {self.instance_id}"

    @property
    def instance_id(self) -> str:
        return self.contacts.instance_id

    def begin_contact(self, contact_id: str) -> None:
        """Know ``contact_id`` as a contact of the instance, as Connect does once a contact begins."""
        self.contacts.begin(contact_id)

    def attributes(self, contact_id: str) -> dict[str, str]:
        """The attributes set on ``contact_id`` so far (empty for a contact the emulator does not know)."""
        contact = self.contacts.get(contact_id)
        return dict(contact.attributes) if contact else {}

    def contact(self, contact_id: str) -> Contact | None:
        """The contact with each update applied to it, if the emulator knows it."""
        return self.contacts.get(contact_id)

    # -- what the handler asks

    def check(self, request: UpdateRequest) -> None:
        self.contacts.check(request)

    def update(self, request: UpdateRequest) -> None:
        self.contacts.update(request)

    def read(self, instance_id: str, contact_id: str) -> dict[str, str]:
        return self.contacts.attributes(instance_id, contact_id)

    # -- records

    def _log(self, record: InvocationRecord) -> None:
        logger.info(
            "%s: %s contact=%s -> %d %s total=%.0fms",
            LABEL,
            record.operation,
            record.contact_id or "-",
            record.http_status,
            record.error_type or record.outcome,
            (record.finished - record.started) * 1000,
        )

    def control_plane(self) -> ControlPlane:
        """The ``/_emulator/...`` routes: faults, the calls so far, and the contacts with their attributes."""

        def begin(body: bytes) -> ControlAnswer:
            decoded = json.loads(body or b"null")
            if not isinstance(decoded, dict) or "ContactId" not in decoded:
                raise ValueError('a contact is {"ContactId": "<contact ID>"}')
            self.begin_contact(decoded["ContactId"])
            return ControlAnswer(HTTPStatus.CREATED, {"ContactId": decoded["ContactId"]})

        def listing(_: bytes) -> ControlAnswer:
            return ControlAnswer(HTTPStatus.OK, {"InstanceId": self.instance_id, "Contacts": self.contacts.snapshot()})

        control = ControlPlane(refusal=_refusal)
        control.add_fault_routes(self, Fault.from_json, Fault.to_json)
        control.add_invocation_routes(LABEL, lambda: self.invocations)
        control.route("POST", "contacts", begin)
        control.route("GET", "contacts", listing)
        control.route("DELETE", "contacts", lambda _: ControlAnswer(HTTPStatus.OK, {"Cleared": self.contacts.clear()}))
        return control
