"""The Sonic emulator itself: its settings, faults and statistics, and the server that answers on its port."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from http import HTTPStatus
from typing import Any, Unpack

from voicebridge_dev.local.service import Address, ControlAnswer, ControlPlane, RecordingEmulator, config_changes
from voicebridge_dev.local.sonic.errors import EmulatorConfigError
from voicebridge_dev.local.sonic.faults import Fault
from voicebridge_dev.local.sonic.records import LABEL, InvocationRecord
from voicebridge_dev.local.sonic.requests import DEFAULT_MODEL, ENCODINGS, PACKAGE_MODELS
from voicebridge_dev.local.sonic.server import Handler
from voicebridge_dev.local.speech_engine import SpeechEngine, load_engine

logger = logging.getLogger(__name__)


class SonicEmulator(RecordingEmulator[Fault, InvocationRecord]):
    """A local Sonic, as a SageMaker runtime endpoint and as the Cartesia API (an emulator, not the model).

    ``endpoint_name`` — when set, other names get SageMaker's ValidationError; None serves every name.
    ``time_to_first_byte_ms`` — delay from request to the first audio chunk (synthesis counts towards it).
    ``realtime_factor`` — seconds of audio produced per wall-clock second after the first chunk.
    ``engine`` — the speech engine; by default piper when installed, else the deterministic stand-in.
    ``api_key`` — when set, ``POST /tts/sse`` answers 401 unless called with this key; None accepts any.
    ``accepted_encodings`` — the raw encodings the model produces; others get a 422 on either transport.
    ``model`` — the Sonic model package the SageMaker endpoint runs, ``"sonic-3"``, ``"sonic-3.5"`` (the default) or
    ``"sonic-3.6"``, the packages ``cartesia-ai/cartesia-aws`` documents. It decides the name of 16-bit PCM, what
    ``language`` must be and whether ``pronunciation_map`` is taken (:mod:`~.requests`); the Cartesia API names its
    model in each request and is not affected.
    ``ready`` — whether the container has loaded its model: ``GET /ping`` answers 200 then, 503 before, and
    ``POST /invocations`` 503 too (the SageMaker and Cartesia API transports are not affected).
    ``api_key``, ``accepted_encodings``, ``model`` and ``ready`` may be changed while the emulator runs.
    :meth:`wait_idle` waits until no invocation is being served (e.g. a stalled stream its client gave up on).
    """

    service = "Sonic"
    label = LABEL
    handler = Handler

    def __init__(
        self,
        *,
        endpoint_name: str | None = None,
        time_to_first_byte_ms: float = 40.0,
        realtime_factor: float = 20.0,
        engine: SpeechEngine | None = None,
        api_key: str | None = None,
        accepted_encodings: Iterable[str] = ENCODINGS,
        model: str = DEFAULT_MODEL,
        ready: bool = True,
        **address: Unpack[Address],
    ) -> None:
        if time_to_first_byte_ms < 0:
            raise ValueError(f"time_to_first_byte_ms must be >= 0, got {time_to_first_byte_ms}")
        if not realtime_factor > 0:
            raise ValueError(f"realtime_factor must be > 0, got {realtime_factor}")
        super().__init__(InvocationRecord, limit=None, **address)
        self.endpoint_name = endpoint_name
        self.time_to_first_byte_ms = time_to_first_byte_ms
        self.realtime_factor = realtime_factor
        self.engine: SpeechEngine = engine if engine is not None else load_engine("auto")
        self.api_key = api_key
        self._accepted_encodings = _encodings(accepted_encodings)
        self._model = _model(model)
        self.ready = ready

    def _serving(self) -> str:
        return f"engine: {self.engine.name}"

    @property
    def accepted_encodings(self) -> frozenset[str]:
        """The raw encodings the emulated model produces (all four by default)."""
        return self._accepted_encodings

    @accepted_encodings.setter
    def accepted_encodings(self, encodings: Iterable[str]) -> None:
        self._accepted_encodings = _encodings(encodings)

    @property
    def model(self) -> str:
        """The Sonic model package the SageMaker endpoint runs."""
        return self._model

    @model.setter
    def model(self, model: str) -> None:
        self._model = _model(model)

    def config(self) -> dict[str, Any]:
        """The settings ``/_emulator/config`` reads and writes; the API key itself is never shown."""
        return {
            "accepted_encodings": [name for name in ENCODINGS if name in self._accepted_encodings],
            "api_key_required": self.api_key is not None,
            "model": self._model,
            "ready": self.ready,
        }

    def configure(self, changes: Any) -> None:
        """Apply a ``POST /_emulator/config`` body; a bad one raises :class:`EmulatorConfigError`, changing nothing."""
        changes = config_changes(changes, {"accepted_encodings", "model", "ready"})
        encodings = self._accepted_encodings
        if "accepted_encodings" in changes:
            if not isinstance(changes["accepted_encodings"], list):
                raise EmulatorConfigError("accepted_encodings is a list of encoding names")
            encodings = _encodings(changes["accepted_encodings"])
        model = _model(changes["model"]) if "model" in changes else self._model
        ready = changes.get("ready", self.ready)
        if not isinstance(ready, bool):
            raise EmulatorConfigError("ready is true or false")
        self._accepted_encodings, self._model, self.ready = encodings, model, ready
        if "accepted_encodings" in changes:
            accepted = ", ".join(self.config()["accepted_encodings"])
            logger.info("%s: accepted encodings now %s", self.label, accepted)
        if "model" in changes:
            logger.info("%s: the endpoint now runs %s", self.label, model)
        if "ready" in changes:
            logger.info("%s: the container is %s", self.label, "ready" if ready else "not ready")

    @property
    def stats(self) -> list[InvocationRecord]:
        """Invocations so far, oldest first (a copy)."""
        return self.invocations

    def _log(self, record: InvocationRecord) -> None:
        ttfb = f"{(record.first_byte_at - record.started) * 1000:.0f}ms" if record.first_byte_at else "-"
        target = {"cartesia-api": "/tts/sse", "container": "/invocations"}.get(
            record.transport, f"/endpoints/{record.endpoint_name}"
        )
        logger.info(
            "%s: POST %s -> %d %s context_id=%s chunks=%d parts=%d audio=%.2fs ttfb=%s total=%.0fms",
            self.label,
            target,
            record.http_status,
            record.outcome,
            record.context_id or "-",
            record.chunks,
            record.payload_parts,
            record.audio_seconds,
            ttfb,
            (record.finished - record.started) * 1000,
        )

    def control_plane(self) -> ControlPlane:
        """The ``/_emulator/...`` routes: faults, statistics and the model's configuration."""
        control = ControlPlane(refusal=lambda reason: ControlAnswer(HTTPStatus.BAD_REQUEST, {"message": reason}))
        control.add_fault_routes(self, Fault.from_json, Fault.to_json)

        def stats(_: bytes) -> ControlAnswer:
            invocations = [record.to_json() for record in self.stats]
            payload = {"emulator": self.label, "engine": self.engine.name, "invocations": invocations}
            return ControlAnswer(HTTPStatus.OK, payload)

        control.route("GET", "stats", stats)
        control.add_config_routes(self.configure, self.config)
        return control


def _encodings(names: Iterable[str]) -> frozenset[str]:
    if isinstance(names, str):
        raise EmulatorConfigError("accepted encodings are a collection of names, not one string")
    listed = list(names)
    unknown = sorted({repr(name) for name in listed if not isinstance(name, str) or name not in ENCODINGS})
    if unknown:
        known = ", ".join(ENCODINGS)
        raise EmulatorConfigError(f"unknown encodings {', '.join(unknown)}; the model knows {known}")
    chosen = frozenset(listed)
    if not chosen:
        raise EmulatorConfigError("a model accepts at least one encoding")
    return chosen


def _model(name: Any) -> str:
    if not isinstance(name, str) or name not in PACKAGE_MODELS:
        raise EmulatorConfigError(f"unknown model {name!r}; one of {', '.join(PACKAGE_MODELS)}")
    return name
