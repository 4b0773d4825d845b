"""The Ink emulator itself: its clips, faults and sessions, and the asyncio loop, on a thread of its own, that
serves them.

Its settings stand for what the sources leave open (each module says where they come from):

    realtime                reject | delay | off      audio faster than real time (:mod:`~.pacing`)
    realtime_tolerance_ms   500                       how far audio may run ahead of the session's clock
    end_delay_ms            700                       when the emulated model ends a turn (:mod:`~.turns`)
    idle_timeout_s          20                        a session with no message is closed (:mod:`~.sessions`)

They are given to the constructor (``end_delay_ms`` within ``turn_settings``), or changed on a running emulator
with :meth:`InkEmulator.configure` or over the control plane, and apply to sessions opened afterwards::

    POST /_emulator/config  {"realtime": "delay", "end_delay_ms": 900}  -> {"config": {...every setting...}}
    GET  /_emulator/config                                               -> {"config": {...}}

How late its event loop has woken, the worst since the last reset (:class:`~.server.LoopLag`; a load run reads it)::

    GET    /_emulator/loop-lag  -> {"worst_ms": 12.5}
    DELETE /_emulator/loop-lag  -> the same, and starts again
"""

from __future__ import annotations

import base64
import dataclasses
import logging
import math
import time
from http import HTTPStatus
from typing import Any, ClassVar, Unpack, cast

from pydantic import BaseModel, ConfigDict, Field

from voicebridge_dev.local.ink.clips import ClipRegistry
from voicebridge_dev.local.ink.errors import EmulatorNotRunningError, InkEmulatorError
from voicebridge_dev.local.ink.faults import DropFault, ErrorFault, Fault, RejectFault, StallFault, fault_from_json
from voicebridge_dev.local.ink.pacing import REALTIME_TOLERANCE_MS, RealtimeMode, check_realtime
from voicebridge_dev.local.ink.recognisers import Recogniser
from voicebridge_dev.local.ink.records import HandshakeRecord, InkSession
from voicebridge_dev.local.ink.server import MAX_RATE, MIN_RATE, InkServer, LoopLag
from voicebridge_dev.local.ink.turns import TurnSettings
from voicebridge_dev.local.service import Address, ControlAnswer, ControlPlane, ServedEmulator

logger = logging.getLogger(__name__)

IDLE_TIMEOUT_S = 20.0


class InkEmulator(ServedEmulator[DropFault | ErrorFault | RejectFault | StallFault]):
    """Ink WebSocket emulator on loopback, run by its own asyncio loop in a background thread.

    ``recogniser`` is the embedded engine used when no registered clip matches (pass :func:`load_recogniser`'s
    result for PocketSphinx); without one, unmatched speech gets a deterministic stand-in transcript.
    ``realtime`` and ``realtime_tolerance_ms`` say what happens to audio sent faster than real time (refused by
    default), ``turn_settings.end_delay_ms`` when a turn ends, ``idle_timeout_s`` when a silent session is
    closed. :meth:`wait_idle` waits until no connection is being served (open sessions included). ``url``
    (``http://host:port``) is the SDK's ``base_url``: it derives ``ws://`` from it.
    """

    label: ClassVar[str] = "Ink emulator"
    service: ClassVar[str] = "Ink"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        recogniser: Recogniser | None = None,
        turn_settings: TurnSettings | None = None,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        update_interval_ms: float = 300.0,
        realtime: RealtimeMode = "reject",
        realtime_tolerance_ms: float = REALTIME_TOLERANCE_MS,
        **address: Unpack[Address],
    ) -> None:
        check_realtime(realtime, realtime_tolerance_ms)
        _check_idle_timeout(idle_timeout_s)
        super().__init__(**address)
        self.api_key = api_key
        self.recogniser = recogniser
        self.turn_settings = turn_settings or TurnSettings()
        self.idle_timeout_s = idle_timeout_s
        self.update_interval_ms = update_interval_ms
        self.realtime: RealtimeMode = realtime
        self.realtime_tolerance_ms = realtime_tolerance_ms
        self.clips = ClipRegistry(self.turn_settings)
        self._sessions: list[InkSession] = []
        self._handshakes: list[HandshakeRecord] = []
        self.loop_lag = LoopLag()

    # ---- lifecycle

    def _make_server(self, address: tuple[str, int]) -> InkServer:
        try:
            return InkServer(address, self, self.control_plane())
        except OSError as exc:
            raise InkEmulatorError(f"Ink emulator failed to start: {exc}") from exc

    def control_plane(self) -> ControlPlane:
        return _control_routes(self)

    def _not_running(self) -> Exception:
        return EmulatorNotRunningError("the Ink emulator is not running")

    # ---- settings

    def configure(
        self,
        *,
        realtime: RealtimeMode | None = None,
        realtime_tolerance_ms: float | None = None,
        end_delay_ms: float | None = None,
        idle_timeout_s: float | None = None,
    ) -> dict[str, Any]:
        """Change the settings sessions opened from now on get; returns them all (:meth:`settings`).

        >>> ink.configure(realtime="delay", end_delay_ms=900)  # doctest: +SKIP

        Raises ValueError (:class:`InvalidTurnSettingsError` for ``end_delay_ms``), changing nothing, for a
        value out of range.
        """
        mode = self.realtime if realtime is None else realtime
        tolerance = self.realtime_tolerance_ms if realtime_tolerance_ms is None else float(realtime_tolerance_ms)
        idle = self.idle_timeout_s if idle_timeout_s is None else float(idle_timeout_s)
        check_realtime(mode, tolerance)
        _check_idle_timeout(idle)
        turn_settings = self.turn_settings
        if end_delay_ms is not None:
            turn_settings = dataclasses.replace(turn_settings, end_delay_ms=float(end_delay_ms))
        self.realtime, self.realtime_tolerance_ms, self.idle_timeout_s = mode, tolerance, idle
        self.turn_settings = turn_settings
        logger.info("Ink emulator: settings now %s", self.settings())
        return self.settings()

    def settings(self) -> dict[str, Any]:
        """The settings :meth:`configure` changes, by name."""
        return {
            "realtime": self.realtime,
            "realtime_tolerance_ms": self.realtime_tolerance_ms,
            "end_delay_ms": self.turn_settings.end_delay_ms,
            "idle_timeout_s": self.idle_timeout_s,
        }

    # ---- test-facing API

    def register(self, pcm: bytes, transcript: str, sample_rate: int = 8000) -> None:
        """Register the transcript of a mono s16le clip; any turn that carries the clip's audio gets it."""
        self.clips.register(pcm, transcript, sample_rate)

    @property
    def sessions(self) -> list[InkSession]:
        return list(self._sessions)

    @property
    def handshakes(self) -> list[HandshakeRecord]:
        return list(self._handshakes)

    @property
    def connect_count(self) -> int:
        """WebSocket handshakes attempted, accepted or not."""
        return len(self._handshakes)

    def wait_for_sessions(self, count: int, timeout: float) -> list[InkSession]:
        """The first ``count`` sessions once that many have connected and finished; raises TimeoutError."""
        deadline = time.monotonic() + timeout
        while len(self._sessions) < count:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"{len(self._sessions)} of {count} sessions connected")
            time.sleep(0.01)
        sessions = self._sessions[:count]
        for session in sessions:
            if not session.wait_closed(max(0.0, deadline - time.monotonic())):
                raise TimeoutError(f"session {session.request_id} still open")
        return sessions

    # ---- what the server tells and asks

    def note_handshake(self, record: HandshakeRecord) -> None:
        self._handshakes.append(record)

    def note_session(self, session: InkSession) -> None:
        self._sessions.append(session)

    def take_faults(self, session: InkSession, turn_ends: int) -> list[DropFault | ErrorFault | StallFault]:
        """The session faults whose trigger ``session`` has reached after ``turn_ends`` turn.end events."""
        audio_ms = session.audio_ms

        def due(fault: Fault) -> bool:
            if isinstance(fault, RejectFault):
                return False
            if isinstance(fault, DropFault) and fault.after_turn_end is not None:
                return turn_ends >= fault.after_turn_end
            threshold = fault.after_audio_ms
            return threshold is not None and audio_ms >= threshold and len(session.received_audio) > 0

        return cast(list[DropFault | ErrorFault | StallFault], self.faults.take_all(due))

    def take_reject(self) -> RejectFault | None:
        """The oldest handshake rejection armed, one of its connections spent."""
        return cast(RejectFault | None, self.faults.take(lambda fault: isinstance(fault, RejectFault)))


def _check_idle_timeout(seconds: float) -> None:
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"idle_timeout_s must be a positive number, got {seconds}")


class _RegisterRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pcm_base64: str
    transcript: str
    sample_rate: int = Field(default=8000, ge=MIN_RATE, le=MAX_RATE)


class _ConfigRequest(BaseModel):
    """The settings :meth:`InkEmulator.configure` changes; each one left out stays as it is."""

    model_config = ConfigDict(extra="forbid")

    realtime: RealtimeMode | None = None
    realtime_tolerance_ms: float | None = None
    end_delay_ms: float | None = None
    idle_timeout_s: float | None = None


def _control_routes(emulator: InkEmulator) -> ControlPlane:
    """The ``/_emulator/...`` routes: clips, faults, the sessions' summaries, the settings and the loop's lag."""

    def register(body: bytes) -> ControlAnswer:
        registration = _RegisterRequest.model_validate_json(body)
        pcm = base64.b64decode(registration.pcm_base64, validate=True)
        emulator.register(pcm, registration.transcript, registration.sample_rate)
        return ControlAnswer(HTTPStatus.CREATED, {"registered": len(emulator.clips)})

    def inject(body: bytes) -> ControlAnswer:
        fault = fault_from_json(body)
        emulator.inject(fault)
        return ControlAnswer(HTTPStatus.CREATED, {"armed": fault.model_dump()})

    def clear(_: bytes) -> ControlAnswer:
        emulator.clear_faults()
        return ControlAnswer(HTTPStatus.OK, {"cleared": True})

    def sessions(_: bytes) -> ControlAnswer:
        return ControlAnswer(HTTPStatus.OK, [session.summary() for session in emulator.sessions])

    def configure(body: bytes) -> ControlAnswer:
        changes = _ConfigRequest.model_validate_json(body or b"{}")
        return ControlAnswer(HTTPStatus.OK, {"config": emulator.configure(**changes.model_dump())})

    control = ControlPlane(refusal=lambda reason: ControlAnswer(HTTPStatus.BAD_REQUEST, {"message": reason}))
    control.route("POST", "transcripts", register)
    control.route("POST", "faults", inject)
    control.route("DELETE", "faults", clear)
    control.route("GET", "sessions", sessions)
    control.route("POST", "config", configure)
    control.route("GET", "config", lambda _: ControlAnswer(HTTPStatus.OK, {"config": emulator.settings()}))
    control.route("GET", "loop-lag", lambda _: ControlAnswer(HTTPStatus.OK, {"worst_ms": emulator.loop_lag.worst_ms}))
    control.route("DELETE", "loop-lag", lambda _: ControlAnswer(HTTPStatus.OK, {"worst_ms": emulator.loop_lag.reset()}))
    return control
