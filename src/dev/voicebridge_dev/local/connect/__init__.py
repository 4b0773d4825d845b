"""EMULATOR of Amazon Connect's ``UpdateContactAttributes`` and ``GetContactAttributes`` — a stand-in, not Amazon
Connect.

It speaks the two operations (rest-json) over loopback HTTP/1.1, so an unmodified boto3 ``connect`` client pointed
at it with ``AWS_ENDPOINT_URL_CONNECT`` calls ``update_contact_attributes`` and ``get_contact_attributes`` and
botocore parses the answers itself. The agent server writes its handover note with the first; tests and the demo
read a contact's attributes back with the second, or with ``GET /_emulator/contacts``.

**Sources.** The wire format is botocore's ``connect`` service model (``botocore/data/connect/2017-08-08/
service-2.json``, API version 2017-08-08): ``UpdateContactAttributes`` is ``POST /contact/attributes`` with a JSON
body of ``InitialContactId`` (1 to 256 characters), ``InstanceId`` (1 to 100) and ``Attributes`` (a map of names of
1 to 32,767 characters to values of 0 to 32,767), all three required, answered with an empty object;
``GetContactAttributes`` is ``GET /contact/attributes/{InstanceId}/{InitialContactId}`` answered with
``{"Attributes": {...}}``. The model's documentation of ``Attributes``: "You can have up to 32,768 UTF-8 bytes
across all attributes for a contact. Attribute keys can include only alphanumeric, dash, and underscore
characters", and the operation's: it "creates or updates" attributes, of ongoing and completed contacts alike. The
errors the model lists: ``InvalidRequestException``, ``InvalidParameterException`` (400), ``ResourceNotFoundException``
(404), ``InternalServiceException`` (500), and ``ThrottlingException`` (429) on other operations of the service; each
has a ``Message`` member, which is the key the error body writes. botocore reads the code from
``x-amzn-ErrorType``.

**Where the sources are silent, the emulator's choice** (each as strict as it can be without being wrong in a way a
client would notice):

- which error a request outside the model's constraints (a missing member, a length, a key with other characters,
  more than 32,768 bytes) gets: ``InvalidParameterException``; a member of the wrong JSON type, or a body that is
  not JSON, ``SerializationException`` (as AWS's JSON services answer one);
- how the 32,768 bytes are counted: the UTF-8 bytes of every name and value the contact holds once the update is
  applied; "alphanumeric" is ASCII letters and digits;
- an empty value removes the attribute (the model's advice for a contact over the limit is "setting their values
  to empty");
- ``InstanceId`` is the instance's ID only: its ARN is an unknown instance (``ResourceNotFoundException``), so a
  client that passes the ID works on both;
- which contacts exist: Connect knows its own; the emulator knows those begun on it
  (:meth:`ConnectEmulator.begin_contact`, ``POST /_emulator/contacts``) and, unless ``known_contacts_only``, takes
  any other contact ID shaped as Connect's (a UUID) as a contact of the instance. A contact ID of another shape (a
  contact's ARN passed by mistake) is ``ResourceNotFoundException``. Whether ``InitialContactId`` is the first
  contact of a chain of transfers cannot be checked here;
- only the attributes set through this API are counted and returned: a flow's *Set contact attributes* blocks run
  in the flow simulator, not here.

Faults (:mod:`~.faults`: throttling, internal errors, a stall, a dropped connection) go through the shared fault
queue; each call is recorded (:mod:`~.records`). The routes and control plane are :mod:`~.server`, the contacts and
the validation :mod:`~.contacts`, the emulator itself :mod:`~.emulator`.

>>> with ConnectEmulator() as emu:  # doctest: +SKIP
...     connect = boto3.client("connect", endpoint_url=emu.url, region_name="us-east-1")
...     connect.update_contact_attributes(InstanceId=emu.instance_id, InitialContactId=contact_id,
...                                       Attributes={"voicebridgeHandover": "Caller disputes a charge"})
...     emu.attributes(contact_id)
"""

from voicebridge_dev.local.connect.contacts import MAX_ATTRIBUTE_BYTES, Contact, Contacts, UpdateRequest
from voicebridge_dev.local.connect.emulator import ConnectEmulator
from voicebridge_dev.local.connect.faults import Fault, FaultKind
from voicebridge_dev.local.connect.records import LABEL, InvocationRecord

__all__ = [
    "LABEL",
    "MAX_ATTRIBUTE_BYTES",
    "ConnectEmulator",
    "Contact",
    "Contacts",
    "Fault",
    "FaultKind",
    "InvocationRecord",
    "UpdateRequest",
]
