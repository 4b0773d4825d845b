"""The Bedrock emulator itself: the models it serves, its brain, its pacing, faults and records, and its server.

A model id served is also served by its foundation-model ARN, by a cross-Region inference profile id routing to it
(``us.`` + the id) and by that profile's ARN. The family a served id belongs to decides what a request to it may
carry (:mod:`~.families`): serve ``mistral.mistral-7b-instruct-v0:2`` and a request with a ``system`` prompt is
refused as Bedrock refuses it, while the default ``voicebridge.`` model takes everything.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from http import HTTPStatus
from typing import Any, Final, Unpack

from voicebridge_dev.local.bedrock.brain import BANK_AGENT, Brain
from voicebridge_dev.local.bedrock.errors import EmulatorConfigError
from voicebridge_dev.local.bedrock.families import base_model_id
from voicebridge_dev.local.bedrock.faults import Fault
from voicebridge_dev.local.bedrock.records import LABEL, InvocationRecord
from voicebridge_dev.local.bedrock.server import Handler
from voicebridge_dev.local.service import (
    Address,
    ControlAnswer,
    ControlPlane,
    RecordingEmulator,
    config_changes,
    finite_number,
    validation_refusal,
)

logger = logging.getLogger(__name__)

DEFAULT_MODEL_ID: Final = "voicebridge.emulated-bank-agent-v1:0"
"""The model id the emulator serves by default: shaped as Bedrock's model ids are, and named as what it is."""
_SETTINGS: Final = ("time_to_first_token_ms", "tokens_per_second")


class BedrockEmulator(RecordingEmulator[Fault, InvocationRecord]):
    """A local Bedrock Runtime ``ConverseStream`` answering from a scripted brain (an emulator, not a model).

    ``model_ids`` — the model ids served (each also by its ARN and inference profiles); others get
    ValidationException. Each is held to what its family takes (:mod:`~.families`).
    ``brain`` — the rules that answer (:mod:`~.brain`), a :class:`Brain` or its JSON document; the bank agent
    :data:`~.brain.BANK_AGENT` by default.
    ``time_to_first_token_ms`` — from the call to the first delta; ``tokens_per_second`` — deltas per second after.
    ``brain``, ``time_to_first_token_ms`` and ``tokens_per_second`` may be changed while the emulator runs.
    :meth:`wait_idle` waits until no call is being served.
    """

    service = "Bedrock"
    label = LABEL
    handler = Handler

    def __init__(
        self,
        *,
        model_ids: Iterable[str] = (DEFAULT_MODEL_ID,),
        brain: Brain | Mapping[str, Any] | None = None,
        time_to_first_token_ms: float = 300.0,
        tokens_per_second: float = 60.0,
        **address: Unpack[Address],
    ) -> None:
        super().__init__(InvocationRecord, **address)
        self.model_ids = tuple(model_ids)
        if not self.model_ids:
            raise EmulatorConfigError("the emulator serves at least one model id")
        self._brain = Brain.of(BANK_AGENT if brain is None else brain)
        self.time_to_first_token_ms, self.tokens_per_second = _pacing(time_to_first_token_ms, tokens_per_second)

    def _serving(self) -> str:
        return f"models: {', '.join(self.model_ids)}"

    @property
    def model_id(self) -> str:
        """The first model id served: the one ``voicebridge local up`` exports as ``BEDROCK_MODEL_ID``."""
        return self.model_ids[0]

    def serves(self, model_id: str) -> bool:
        """Whether ``model_id`` (an id, its foundation-model ARN, an inference profile id or ARN) names a model of
        this emulator."""
        return model_id in self.model_ids or base_model_id(model_id) in self.model_ids

    @property
    def brain(self) -> Brain:
        return self._brain

    @brain.setter
    def brain(self, brain: Brain | Mapping[str, Any]) -> None:
        self._brain = Brain.of(brain)
        logger.info("%s: a new brain of %d rules answers", LABEL, len(self._brain.rules))

    def config(self) -> dict[str, Any]:
        """The settings ``/_emulator/config`` reads and writes, and the model ids served."""
        return {
            "time_to_first_token_ms": self.time_to_first_token_ms,
            "tokens_per_second": self.tokens_per_second,
            "model_ids": list(self.model_ids),
        }

    def configure(self, changes: Any) -> None:
        """Apply a ``POST /_emulator/config`` body; a bad one raises :class:`EmulatorConfigError`, changing nothing."""
        changes = config_changes(changes, _SETTINGS)
        settings = {name: changes.get(name, getattr(self, name)) for name in _SETTINGS}
        self.time_to_first_token_ms, self.tokens_per_second = _pacing(**settings)
        logger.info("%s: pacing now %s", LABEL, settings)

    def _log(self, record: InvocationRecord) -> None:
        ttft = f"{(record.first_token_at - record.started) * 1000:.0f}ms" if record.first_token_at else "-"
        logger.info(
            "%s: ConverseStream %s -> %d %s stop=%s deltas=%d tool=%s ttft=%s total=%.0fms",
            LABEL,
            record.model_id,
            record.http_status,
            record.error_type or record.outcome,
            record.stop_reason or "-",
            record.deltas,
            record.tool or "-",
            ttft,
            (record.finished - record.started) * 1000,
        )

    def control_plane(self) -> ControlPlane:
        """The ``/_emulator/...`` routes: faults, the calls so far, the brain and the pacing."""

        def set_brain(body: bytes) -> ControlAnswer:
            self.brain = json.loads(body or b"null")
            return ControlAnswer(HTTPStatus.OK, {"emulator": LABEL, "rules": len(self.brain.rules)})

        control = ControlPlane(refusal=validation_refusal)
        control.add_fault_routes(self, Fault.from_json, Fault.to_json)
        control.add_invocation_routes(LABEL, lambda: self.invocations)
        control.route("POST", "brain", set_brain)
        control.route("GET", "brain", lambda _: ControlAnswer(HTTPStatus.OK, dict(self.brain.document)))
        control.add_config_routes(self.configure, self.config)
        return control


def _pacing(time_to_first_token_ms: Any, tokens_per_second: Any) -> tuple[float, float]:
    for name, value in (("time_to_first_token_ms", time_to_first_token_ms), ("tokens_per_second", tokens_per_second)):
        if not finite_number(value):
            raise EmulatorConfigError(f"{name} must be a number, got {value!r}")
    if time_to_first_token_ms < 0:
        raise EmulatorConfigError(f"time_to_first_token_ms must be >= 0, got {time_to_first_token_ms}")
    if tokens_per_second <= 0:
        raise EmulatorConfigError(f"tokens_per_second must be > 0, got {tokens_per_second}")
    return float(time_to_first_token_ms), float(tokens_per_second)
