"""Kinesis Video Streams emulator: the control plane and GetMedia over loopback HTTP, fed like Amazon Connect.

This is an emulator for local runs and tests, not AWS. botocore talks to it unmodified, both services being
``rest-json``; the operations, their errors and the emulator's own ``/_emulator/...`` endpoints are stated in
:mod:`~.server`. Each stream carries Connect-shaped fragments, produced in real time while a contact is live
(:mod:`~.streams`) and written as Matroska (:mod:`~.matroska`); GetMedia honours the start selectors as
:mod:`~.fragments` states and writes the payload as :mod:`~.media` does, with the faults of :mod:`~.faults`.
Errors are :mod:`~.errors`; the emulator itself, :class:`KvsEmulator`, is :mod:`~.emulator`.

Every behaviour follows AWS's documentation where it says something (FRAGMENT_NUMBER is exclusive, five GetMedia
calls per second and three connections per stream, the payload ending 3 s after the last fragment); where the
sources are silent or disagree the module that implements it says so and the choice is a setting.

>>> with KvsEmulator(pace=0) as kvs:
...     arn = kvs.create_stream("connect-demo-contact")
...     start = kvs.stream(arn).load_wavs("caller.wav", None, contact_id="c-1")  # doctest: +SKIP
...     start.fragment_number, start.start_timestamp  # Connect's StartFragmentNumber and StartTimestamp
"""

from voicebridge_dev.local.kvs.emulator import EMULATED_ACCOUNT_ID, KvsEmulator
from voicebridge_dev.local.kvs.errors import (
    ContactStateError,
    KvsEmulatorError,
    StreamExistsError,
    StreamNotFoundError,
    UnplayableAudioError,
)
from voicebridge_dev.local.kvs.faults import Fault, FaultKind
from voicebridge_dev.local.kvs.fragments import FragmentNumberSelector
from voicebridge_dev.local.kvs.matroska import AGENT_TRACK, CODEC_AAC, CODEC_PCM, CUSTOMER_TRACK
from voicebridge_dev.local.kvs.streams import (
    EMULATED_INSTANCE_ID,
    ContactStart,
    ContactStream,
    EmulatedStream,
    Settings,
    StreamHost,
)
from voicebridge_dev.local.service import FaultSpecError

__all__ = [
    "AGENT_TRACK",
    "CODEC_AAC",
    "CODEC_PCM",
    "CUSTOMER_TRACK",
    "EMULATED_ACCOUNT_ID",
    "EMULATED_INSTANCE_ID",
    "ContactStart",
    "ContactStateError",
    "ContactStream",
    "EmulatedStream",
    "Fault",
    "FaultKind",
    "FaultSpecError",
    "FragmentNumberSelector",
    "KvsEmulator",
    "KvsEmulatorError",
    "Settings",
    "StreamExistsError",
    "StreamHost",
    "StreamNotFoundError",
    "UnplayableAudioError",
]
