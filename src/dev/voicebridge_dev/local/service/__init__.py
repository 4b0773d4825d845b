"""Server scaffolding the local cloud's emulators share, and no protocol of any service they emulate.

- :class:`LocalService` — a ``with`` block around start and stop; :class:`InFlight` — work in flight and a wait
  for none (:mod:`~voicebridge_dev.local.service.lifecycle`).
- :class:`Emulator` — the face every emulator shows its tests: ``inject``, ``pending_faults``, ``clear_faults``,
  ``wait_idle`` (:mod:`~voicebridge_dev.local.service.emulator`).
- :class:`FaultQueue` — injected faults in order, each striking a number of calls; :class:`FaultSpecError`
  (:mod:`~voicebridge_dev.local.service.faults`).
- :class:`ControlPlane` — the ``/_emulator/...`` routes (:mod:`~voicebridge_dev.local.service.control`).
- :class:`Record` / :class:`CallLog` — a call's record as JSON, and a bounded log of them
  (:mod:`~voicebridge_dev.local.service.records`).
- :class:`ApiError` — an error answered in place of an operation; :class:`ClientGone` — a client that hung up
  mid-answer (:mod:`~voicebridge_dev.local.service.errors`).
- :class:`CountedFault` — the checks, JSON round trip and use counting of a fault striking ``count`` calls
  (:mod:`~voicebridge_dev.local.service.faults`).
- :class:`EmulatorServer` / :class:`EmulatorHandler` — an ``http.server`` that can cut its keep-alive connections
  when it stops, and a handler that writes JSON answers and serves the control plane; :class:`CallHandler` — one
  that also counts its calls in flight and records each once; :class:`ServedEmulator` — the lifecycle of an
  emulator served from a thread of its own (:mod:`~voicebridge_dev.local.service.server`).
"""

from voicebridge_dev.local.service.control import (
    CONTROL_PREFIX,
    ControlAction,
    ControlAnswer,
    ControlPlane,
    validation_refusal,
)
from voicebridge_dev.local.service.emulator import Emulator
from voicebridge_dev.local.service.errors import ApiError, ClientGone, Stopping, validation_error
from voicebridge_dev.local.service.faults import (
    Counted,
    CountedFault,
    FaultQueue,
    FaultSpecError,
    InjectableFault,
    check_seconds,
)
from voicebridge_dev.local.service.lifecycle import InFlight, LocalService
from voicebridge_dev.local.service.records import CallLog, Record
from voicebridge_dev.local.service.server import (
    CallHandler,
    CallState,
    EmulatorHandler,
    EmulatorServer,
    Front,
    Recording,
    ServedEmulator,
    Serving,
    TrackedHandler,
    TrackingHTTPServer,
)

__all__ = [
    "CONTROL_PREFIX",
    "ApiError",
    "CallHandler",
    "CallLog",
    "CallState",
    "ClientGone",
    "ControlAction",
    "ControlAnswer",
    "ControlPlane",
    "Counted",
    "CountedFault",
    "Emulator",
    "EmulatorHandler",
    "EmulatorServer",
    "FaultQueue",
    "FaultSpecError",
    "Front",
    "InFlight",
    "InjectableFault",
    "LocalService",
    "Record",
    "Recording",
    "ServedEmulator",
    "Serving",
    "Stopping",
    "TrackedHandler",
    "TrackingHTTPServer",
    "check_seconds",
    "validation_error",
    "validation_refusal",
]
