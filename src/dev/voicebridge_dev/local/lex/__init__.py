"""EMULATOR of the Amazon Lex V2 runtime's ``RecognizeText`` serving a scripted bot — a stand-in, not Amazon Lex.

It speaks ``RecognizeText`` (rest-json) over loopback HTTP/1.1, so an unmodified boto3 ``lexv2-runtime`` client
pointed at it with ``AWS_ENDPOINT_URL_LEX_RUNTIME_V2`` calls ``recognize_text`` and botocore parses the answers
itself. The wire format is botocore's ``lexv2-runtime`` service model (``botocore/data/lexv2-runtime/2020-08-07/
service-2.json``): the request and its validation in :mod:`~.requests`, the answer and the dialog behind it in
:mod:`~.dialog`, the route, error answers and ``/_emulator/...`` control plane in :mod:`~.server`.

The bot is a small JSON file (:mod:`~.bot`): intents with sample utterances, slots elicited in turn and confirmed,
closing responses and session attributes; the default one a small bank's (CheckBalance, PayBill with an Amount slot,
TransferToAgent, Goodbye, FallbackIntent). Sessions keep their slots and attributes per ``sessionId``. Faults
(:mod:`~.faults`: throttling, internal errors, a stall, a dropped connection) go through the shared fault queue;
each call is recorded (:mod:`~.records`). Errors are :mod:`~.errors`; the emulator itself, :class:`LexEmulator`, is
:mod:`~.emulator`.

>>> with LexEmulator() as emu:  # doctest: +SKIP
...     lex = boto3.client("lexv2-runtime", endpoint_url=emu.url, region_name="us-east-1")
...     lex.recognize_text(botId=emu.bot_id, botAliasId=emu.bot_alias_id, localeId=emu.locale_id,
...                        sessionId="contact-1", text="I'd like to pay my bill")
"""

from voicebridge_dev.local.lex.bot import BANK_BOT, BUILTIN_SLOT_TYPES, FALLBACK_INTENT, Bot, parse_number
from voicebridge_dev.local.lex.emulator import LexEmulator
from voicebridge_dev.local.lex.errors import BotDefinitionError, FaultSpecError
from voicebridge_dev.local.lex.faults import Fault, FaultKind
from voicebridge_dev.local.lex.records import LABEL, InvocationRecord

__all__ = [
    "BANK_BOT",
    "BUILTIN_SLOT_TYPES",
    "FALLBACK_INTENT",
    "LABEL",
    "Bot",
    "BotDefinitionError",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "InvocationRecord",
    "LexEmulator",
    "parse_number",
]
