"""The face every emulator of the local cloud shows its tests: faults are injected, listed and cleared, and a
test can wait until nothing is in flight.

    emulator.inject(fault)          queue a fault for the calls it strikes
    emulator.pending_faults         the faults not yet spent, each with the uses it has left
    emulator.clear_faults()         drop them all; how many calls they would still have struck
    emulator.wait_idle(timeout)     True once nothing is being served, False on timeout

:class:`~voicebridge_dev.local.service.server.ServedEmulator` adds the lifecycle of one served over HTTP.
"""

from __future__ import annotations

import logging
from typing import ClassVar, Generic

from voicebridge_dev.local.service.faults import F, FaultQueue
from voicebridge_dev.local.service.lifecycle import InFlight, LocalService


class Emulator(LocalService, Generic[F]):
    """A loopback stand-in for a real service, labelled as one (``label``) wherever it speaks of itself."""

    label: ClassVar[str]

    def __init__(self) -> None:
        self._faults: FaultQueue[F] = FaultQueue()
        self.in_flight = InFlight()

    @property
    def faults(self) -> FaultQueue[F]:
        """The faults injected and not yet spent."""
        return self._faults

    def inject(self, fault: F) -> None:
        """Queue ``fault`` behind those already injected."""
        self._faults.push(fault)
        logging.getLogger(type(self).__module__).info("%s: fault injected: %s", self.label, fault)

    @property
    def pending_faults(self) -> list[F]:
        return self._faults.pending()

    def clear_faults(self) -> int:
        """Drop every pending fault; returns how many calls they would still have struck."""
        return self._faults.clear()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until nothing is in flight; False on timeout."""
        return self.in_flight.wait_idle(timeout)
