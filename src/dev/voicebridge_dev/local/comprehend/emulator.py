"""The Comprehend emulator itself: its detector, its quota, its faults and records, and its server."""

from __future__ import annotations

import logging
from typing import Any, Unpack

from voicebridge_dev.local.comprehend.detector import detect
from voicebridge_dev.local.comprehend.faults import Fault
from voicebridge_dev.local.comprehend.quota import DEFAULT_REQUESTS_PER_SECOND, RequestQuota
from voicebridge_dev.local.comprehend.records import LABEL, InvocationRecord
from voicebridge_dev.local.comprehend.requests import CONTAINS_PII_ENTITIES, PiiRequest
from voicebridge_dev.local.comprehend.server import Handler
from voicebridge_dev.local.service import Address, ControlPlane, RecordingEmulator, config_changes, validation_refusal

logger = logging.getLogger(__name__)

_SETTINGS = ("requests_per_second",)


class ComprehendEmulator(RecordingEmulator[Fault, InvocationRecord]):
    """A local Amazon Comprehend serving DetectPiiEntities and ContainsPiiEntities from rules (an emulator, not
    Comprehend's model: :mod:`~.detector`).

    ``requests_per_second`` — each operation's quota (:mod:`~.quota`), None for none; it may be changed while the
    emulator runs (:meth:`configure`). :meth:`wait_idle` waits until no call is being served.
    """

    service = "Comprehend"
    label = LABEL
    handler = Handler

    def __init__(
        self, *, requests_per_second: int | None = DEFAULT_REQUESTS_PER_SECOND, **address: Unpack[Address]
    ) -> None:
        super().__init__(InvocationRecord, **address)
        self.quota = RequestQuota(requests_per_second)

    def _serving(self) -> str:
        return f"DetectPiiEntities and ContainsPiiEntities, {self.quota.requests_per_second or 'no'} requests/s each"

    def answer(self, request: PiiRequest) -> dict[str, Any]:
        """The operation's answer: DetectPiiEntities' entities by offset, or ContainsPiiEntities' labels (each type
        found once, with its highest score, in the order first found)."""
        found = detect(request.text)
        if request.operation == CONTAINS_PII_ENTITIES:
            labels: dict[str, float] = {}
            for entity in found:
                labels[entity.type] = max(entity.score, labels.get(entity.type, 0.0))
            return {"Labels": [{"Name": name, "Score": score} for name, score in labels.items()]}
        return {
            "Entities": [
                {"Score": entity.score, "Type": entity.type, "BeginOffset": entity.begin, "EndOffset": entity.end}
                for entity in found
            ]
        }

    def config(self) -> dict[str, Any]:
        return {"requests_per_second": self.quota.requests_per_second}

    def configure(self, changes: Any) -> None:
        """Apply a ``POST /_emulator/config`` body; a bad one raises :class:`EmulatorConfigError`, changing nothing."""
        changes = config_changes(changes, _SETTINGS)
        if "requests_per_second" in changes:
            self.quota.requests_per_second = changes["requests_per_second"]
        logger.info("%s: settings now %s", LABEL, self.config())

    # -- records

    def _log(self, record: InvocationRecord) -> None:
        # The text is what the emulator is asked to find personal data in: the log gives its size, never the text.
        logger.info(
            "%s: %s %s chars=%s -> %d %s entities=%s total=%.0fms",
            LABEL,
            record.operation,
            record.language_code or "-",
            "-" if record.text is None else len(record.text),
            record.http_status,
            record.error_type or record.outcome,
            ",".join(record.entity_types) or "-",
            (record.finished - record.started) * 1000,
        )

    def control_plane(self) -> ControlPlane:
        """The ``/_emulator/...`` routes: faults, the calls so far, the quota."""
        control = ControlPlane(refusal=validation_refusal)
        control.add_fault_routes(self, Fault.from_json, Fault.to_json)
        control.add_invocation_routes(LABEL, lambda: self.invocations)
        control.add_config_routes(self.configure, self.config)
        return control
