"""EMULATOR of Amazon Comprehend's ``DetectPiiEntities`` and ``ContainsPiiEntities`` — rules, not Comprehend's model.

It speaks JSON 1.1 over loopback HTTP/1.1 (``POST /`` with ``X-Amz-Target: Comprehend_20171127.<Operation>``), so an
unmodified boto3 ``comprehend`` client pointed at it with ``AWS_ENDPOINT_URL_COMPREHEND`` calls
``detect_pii_entities`` and botocore parses the answers and errors itself. The wire format is botocore's
``comprehend`` service model (``botocore/data/comprehend/2017-11-27/service-2.json``): the request and its validation
in :mod:`~.requests`, the route, error bodies and ``/_emulator/...`` control plane in :mod:`~.server`, the
per-second quota in :mod:`~.quota`, the detector in :mod:`~.detector`.

What it holds the service to, and the source of each rule:

- Languages: DetectPiiEntities takes ``en`` and ``es``, ContainsPiiEntities ``en``; any other code is a
  ValidationException (Comprehend API Reference, *DetectPiiEntities* and *ContainsPiiEntities*; Developer Guide,
  *PII real-time analysis (API)*; boto/boto3 issue 4673 for the error the service gives).
- Size: at most 100,000 bytes of UTF-8, else TextSizeLimitExceededException (400) in the service's words
  (``DetectPiiEntitiesRequest.Text``: "The maximum string size is 100 KB"; Developer Guide, *Guidelines and
  quotas*: maximum document size 100 KB; the message as edenai/edenai-apis matches it).
- Text: required, at least one character (shape ``String``, ``min`` 1; botocore refuses an empty one before
  sending, the emulator answers a ValidationException to any other client).
- Quota: ``requests_per_second`` calls per operation in any second, beyond it 429 TooManyRequestsException
  (:mod:`~.quota`; default 20, the Developer Guide's figure for single-document operations).
- Offsets: ``BeginOffset`` and ``EndOffset`` count Unicode code points, ``EndOffset`` exclusive. The ``PiiEntity``
  shape says only "the zero-based offset from the beginning of the source text to the first character"; the same
  API's ``KeyPhrase`` and ``Entity`` offsets are documented as "the position of each UTF-8 code point in the string
  ... a multi-byte UTF-8 character maps to a single code point" (Comprehend API Reference, *KeyPhrase*), and the
  Developer Guide's DetectPiiEntities example (``1111-0000-1111-0000`` at 69–88 of its sentence) ends one past the
  entity's last character.
- ``Score`` is in [0, 1] and ``Type`` one of the model's ``PiiEntityType`` values.

The detector is the emulator's own (:mod:`~.detector`): card numbers (Luhn-checked), card expiry dates and security
codes in context, US Social Security numbers, e-mail addresses and phone numbers, in written digits. It never reports
``NAME``, ``ADDRESS``, ``DATE_TIME``, ``AGE``, ``USERNAME``, ``PASSWORD``, ``PIN``, ``BANK_ACCOUNT_NUMBER``,
``BANK_ROUTING``, ``URL``, ``IP_ADDRESS`` or any other type. Comprehend's model is a learnt one, so what it does is
not a rule anyone can read: whether it hears digits spoken as words ("four one one one …") as a card number,
whether a number failing the Luhn check is still a ``CREDIT_DEBIT_NUMBER``, how far context reaches for an expiry
date or a security code, its scores, and the exact ends it draws (its own example's ``NAME`` takes in the full stop
after "Paul Santos") cannot be checked against it; a client tested here is tested against these rules.

Faults (:mod:`~.faults`: throttling, internal errors, a stall, a dropped connection) go through the shared fault
queue; each call is recorded with the text it sent (:mod:`~.records`). Errors are :mod:`~.errors`; the emulator
itself, :class:`ComprehendEmulator`, is :mod:`~.emulator`.

>>> with ComprehendEmulator() as emu:  # doctest: +SKIP
...     comprehend = boto3.client("comprehend", endpoint_url=emu.url, region_name="us-east-1")
...     comprehend.detect_pii_entities(Text="My card is 4111 1111 1111 1111", LanguageCode="en")["Entities"]
[{'Score': 0.99, 'Type': 'CREDIT_DEBIT_NUMBER', 'BeginOffset': 11, 'EndOffset': 30}]
"""

from voicebridge_dev.local.comprehend.detector import CONTEXT_CHARS, DETECTED_TYPES, Detected, detect, luhn_valid
from voicebridge_dev.local.comprehend.emulator import ComprehendEmulator
from voicebridge_dev.local.comprehend.errors import EmulatorConfigError, FaultSpecError
from voicebridge_dev.local.comprehend.faults import Fault, FaultKind
from voicebridge_dev.local.comprehend.quota import DEFAULT_REQUESTS_PER_SECOND, RequestQuota
from voicebridge_dev.local.comprehend.records import LABEL, InvocationRecord
from voicebridge_dev.local.comprehend.requests import LANGUAGES, MAX_TEXT_BYTES, PiiRequest, parse_pii_request

__all__ = [
    "CONTEXT_CHARS",
    "DEFAULT_REQUESTS_PER_SECOND",
    "DETECTED_TYPES",
    "LABEL",
    "LANGUAGES",
    "MAX_TEXT_BYTES",
    "ComprehendEmulator",
    "Detected",
    "EmulatorConfigError",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "InvocationRecord",
    "PiiRequest",
    "RequestQuota",
    "detect",
    "luhn_valid",
    "parse_pii_request",
]
