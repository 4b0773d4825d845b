"""Server scaffolding the local cloud's emulators share, and no protocol of any service they emulate.

- :class:`LocalService` — a ``with`` block around start and stop; :class:`InFlight` — work in flight and a wait
  for none (:mod:`~voicebridge_dev.local.service.lifecycle`).
- :class:`Emulator` — the face every emulator shows its tests: ``inject``, ``pending_faults``, ``clear_faults``,
  ``wait_idle`` (:mod:`~voicebridge_dev.local.service.emulator`).
- :class:`FaultQueue` — injected faults in order, each striking a number of calls; :class:`FaultSpecError`
  (:mod:`~voicebridge_dev.local.service.faults`).
- :class:`FaultKinds` — an emulator's table of fault kinds, each with what it does to a struck call (an error in
  the service's words, or :data:`CUT`); :class:`RequestFault` — the fault of an emulator answering each request whole
  (:mod:`~voicebridge_dev.local.service.faults`).
- :class:`Definition` — a brain or bot read from a JSON document, kept with it
  (:mod:`~voicebridge_dev.local.service.documents`).
- :class:`ControlPlane` — the ``/_emulator/...`` routes; :func:`config_changes` — a settings change checked for the
  names it may hold, or :class:`EmulatorConfigError` (:mod:`~voicebridge_dev.local.service.control`).
- :class:`Record` / :class:`CallLog` — a call's record as JSON, and a bounded log of them; :class:`CallState` /
  :class:`CallRecord` — what every served call keeps while it runs and once done; :class:`AnswerState` /
  :class:`AnswerRecord` — with the answer or the error of a call answered whole
  (:mod:`~voicebridge_dev.local.service.records`).
- :class:`ApiError` — an error answered in place of an operation; :class:`ClientGone` — a client that hung up
  mid-answer (:mod:`~voicebridge_dev.local.service.errors`).
- :class:`CountedFault` — the checks, JSON round trip and use counting of a fault striking ``count`` calls
  (:mod:`~voicebridge_dev.local.service.faults`).
- :class:`EmulatorServer` / :class:`EmulatorHandler` — an ``http.server`` that can cut its keep-alive connections
  when it stops, and a handler that writes JSON answers and serves the control plane; :class:`CallHandler` — one
  that also counts its calls in flight and records each once; :class:`AnsweringHandler` — one whose calls are each
  answered whole, or refused in the emulator's words, or struck by a fault; :class:`ServedEmulator` — the
  lifecycle of an emulator served from a thread of its own, on its :class:`Address` (:data:`LOOPBACK` by default);
  :class:`RecordingEmulator` — one that keeps a bounded log of the calls it served
  (:mod:`~voicebridge_dev.local.service.server`).
"""

from voicebridge_dev.local.service.control import (
    CONTROL_PREFIX,
    ControlAnswer,
    ControlPlane,
    EmulatorConfigError,
    config_changes,
    validation_refusal,
)
from voicebridge_dev.local.service.documents import Definition
from voicebridge_dev.local.service.emulator import Emulator
from voicebridge_dev.local.service.errors import (
    ApiError,
    ClientGone,
    Stopping,
    finite_number,
    unknown_names,
    validation_error,
)
from voicebridge_dev.local.service.faults import (
    CUT,
    Counted,
    CountedFault,
    FaultKinds,
    FaultQueue,
    FaultSpecError,
    RequestFault,
    check_seconds,
    check_whole,
)
from voicebridge_dev.local.service.lifecycle import InFlight, LocalService
from voicebridge_dev.local.service.records import AnswerRecord, AnswerState, CallLog, CallRecord, CallState, Record
from voicebridge_dev.local.service.server import (
    LOOPBACK,
    RECORD_LIMIT,
    Address,
    AnsweringHandler,
    CallHandler,
    EmulatorHandler,
    EmulatorServer,
    Front,
    RecordingEmulator,
    ServedEmulator,
    Serving,
)

__all__ = [
    "CONTROL_PREFIX",
    "CUT",
    "LOOPBACK",
    "RECORD_LIMIT",
    "Address",
    "AnswerRecord",
    "AnswerState",
    "AnsweringHandler",
    "ApiError",
    "CallHandler",
    "CallLog",
    "CallRecord",
    "CallState",
    "ClientGone",
    "ControlAnswer",
    "ControlPlane",
    "Counted",
    "CountedFault",
    "Definition",
    "Emulator",
    "EmulatorConfigError",
    "EmulatorHandler",
    "EmulatorServer",
    "FaultKinds",
    "FaultQueue",
    "FaultSpecError",
    "Front",
    "InFlight",
    "LocalService",
    "Record",
    "RecordingEmulator",
    "RequestFault",
    "ServedEmulator",
    "Serving",
    "Stopping",
    "check_seconds",
    "check_whole",
    "config_changes",
    "finite_number",
    "unknown_names",
    "validation_error",
    "validation_refusal",
]
