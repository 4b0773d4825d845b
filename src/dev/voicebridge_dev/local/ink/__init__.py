"""Ink (Cartesia speech-to-text) WebSocket EMULATOR for the local cloud.

This is an emulator, not a speech model. It speaks Ink's two realtime WebSocket protocols closely enough for
the official ``cartesia`` SDK to drive it unmodified (:mod:`~.sessions` states them), detects turns from signal
energy (:mod:`~.turns`), and transcribes with clips registered alongside their audio (:mod:`~.clips`), with an
optional embedded recogniser (PocketSphinx, :mod:`~.recognisers`), or with deterministic stand-ins such as
``[speech 1.23 s]``. Handshakes and the ``/_emulator/...`` control plane share one port (:mod:`~.server`);
faults are :mod:`~.faults`, what tests inspect :mod:`~.records`, errors :mod:`~.errors`.

It is as strict as the service's documentation allows: audio no faster than real time (:mod:`~.pacing`; refused
by default), turns that end only while audio flows, errors that end the session, the ranges the SDK documents;
where the sources are silent or disagree, the module says so and the choice is a setting (:mod:`~.emulator`).

Usage::

    with InkEmulator(api_key="test-key") as ink:
        ink.register(pcm, "check my balance")
        client = Cartesia(api_key="test-key", base_url=ink.url)
"""

from voicebridge_dev.local.ink.emulator import IDLE_TIMEOUT_S, InkEmulator
from voicebridge_dev.local.ink.errors import (
    EmulatorNotRunningError,
    InkEmulatorError,
    InvalidClipError,
    InvalidTurnSettingsError,
    RecogniserFailedError,
    RecogniserUnavailableError,
)
from voicebridge_dev.local.ink.faults import DropFault, ErrorFault, Fault, RejectFault, StallFault
from voicebridge_dev.local.ink.pacing import REALTIME_MODES, REALTIME_TOLERANCE_MS, RealtimeMode
from voicebridge_dev.local.ink.recognisers import PocketsphinxRecogniser, Recogniser, load_recogniser
from voicebridge_dev.local.ink.records import HandshakeRecord, InkSession, SentEvent, TurnRecord
from voicebridge_dev.local.ink.server import MANUAL_PATH, TURNS_PATH
from voicebridge_dev.local.ink.turns import END_DELAY_MS, TurnDetector, TurnSettings, TurnSignal
from voicebridge_dev.local.service import FaultSpecError

__all__ = [
    "END_DELAY_MS",
    "IDLE_TIMEOUT_S",
    "MANUAL_PATH",
    "REALTIME_MODES",
    "REALTIME_TOLERANCE_MS",
    "TURNS_PATH",
    "DropFault",
    "EmulatorNotRunningError",
    "ErrorFault",
    "Fault",
    "FaultSpecError",
    "HandshakeRecord",
    "InkEmulator",
    "InkEmulatorError",
    "InkSession",
    "InvalidClipError",
    "InvalidTurnSettingsError",
    "PocketsphinxRecogniser",
    "RealtimeMode",
    "Recogniser",
    "RecogniserFailedError",
    "RecogniserUnavailableError",
    "RejectFault",
    "SentEvent",
    "StallFault",
    "TurnDetector",
    "TurnRecord",
    "TurnSettings",
    "TurnSignal",
    "load_recogniser",
]
