"""Server scaffolding the local cloud's emulators share, and no protocol of any service they emulate.

- :class:`LocalService` — a ``with`` block around start and stop; :class:`InFlight` — work in flight and a wait
  for none (:mod:`~voicebridge_dev.local.service.lifecycle`).
- :class:`Emulator` — the face every emulator shows its tests: ``inject``, ``pending_faults``, ``clear_faults``,
  ``wait_idle`` (:mod:`~voicebridge_dev.local.service.emulator`).
- :class:`FaultQueue` — injected faults in order, each striking a number of calls; :class:`FaultSpecError`
  (:mod:`~voicebridge_dev.local.service.faults`).
- :class:`ControlPlane` — the ``/_emulator/...`` routes (:mod:`~voicebridge_dev.local.service.control`).
- :class:`TrackingHTTPServer` / :class:`TrackedHandler` — an ``http.server`` that can cut its keep-alive
  connections when it stops (:mod:`~voicebridge_dev.local.service.server`).
"""

from voicebridge_dev.local.service.control import CONTROL_PREFIX, ControlAction, ControlAnswer, ControlPlane
from voicebridge_dev.local.service.emulator import Emulator, ServedEmulator
from voicebridge_dev.local.service.faults import FaultQueue, FaultSpecError, InjectableFault
from voicebridge_dev.local.service.lifecycle import InFlight, LocalService
from voicebridge_dev.local.service.server import TrackedHandler, TrackingHTTPServer

__all__ = [
    "CONTROL_PREFIX",
    "ControlAction",
    "ControlAnswer",
    "ControlPlane",
    "Emulator",
    "FaultQueue",
    "FaultSpecError",
    "InFlight",
    "InjectableFault",
    "LocalService",
    "ServedEmulator",
    "TrackedHandler",
    "TrackingHTTPServer",
]
