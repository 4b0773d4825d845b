"""The face every emulator of the local cloud shows its tests: faults are injected, listed and cleared, and a
test can wait until nothing is in flight.

    emulator.inject(fault)          queue a fault for the calls it strikes
    emulator.pending_faults         the faults not yet spent, each with the uses it has left
    emulator.clear_faults()         drop them all; how many calls they would still have struck
    emulator.wait_idle(timeout)     True once nothing is being served, False on timeout

:class:`ServedEmulator` adds the lifecycle of an emulator whose HTTP server runs on a thread of its own: ``start``
binds (port 0 picks a free one) and serves, ``stop`` closes every connection and joins, ``url`` says where.
"""

from __future__ import annotations

import logging
import threading
from abc import abstractmethod
from typing import ClassVar, Generic, Self

from voicebridge_dev.local.service.faults import F, FaultQueue
from voicebridge_dev.local.service.lifecycle import InFlight, LocalService
from voicebridge_dev.local.service.server import TrackingHTTPServer


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


class ServedEmulator(Emulator[F]):
    """An emulator serving HTTP on ``host``:``port`` from a thread of its own; ``service`` names it in messages."""

    service: ClassVar[str]
    """The real service's short name (``Sonic``, ``Bedrock``…), for the serving thread and errors."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__()
        self.host = host
        self.port = port
        self.stopping = threading.Event()
        self._server: TrackingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @abstractmethod
    def _make_server(self, address: tuple[str, int]) -> TrackingHTTPServer:
        """The emulator's HTTP server, bound to ``address``."""

    def _serving(self) -> str:
        """What the start log line says the emulator serves (empty: nothing more than its URL)."""
        return ""

    def start(self) -> Self:
        if self._server is not None:
            return self
        self.stopping.clear()
        self._server = self._make_server((self.host, self.port))
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{self.service.lower()}-emulator",
            daemon=True,
        )
        self._thread.start()
        serving = self._serving()
        logger = logging.getLogger(type(self).__module__)
        logger.info("%s listening on %s%s", self.label, self.url, f" ({serving})" if serving else "")
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.close_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        logging.getLogger(type(self).__module__).info("%s stopped", self.label)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError(f"the {self.service} emulator is not running; call start() first")
        return f"http://{self.host}:{self.port}"
