"""The failures the KVS emulator injects into GetMedia calls.

From Python (:meth:`~voicebridge_dev.local.kvs.KvsEmulator.inject`) or ``POST /_emulator/faults`` with a JSON body
such as ``{"fault": "cut", "after_bytes": 4096, "count": 1}``; each applies to the next ``count`` GetMedia calls
(optionally only on ``"stream"``, a name or ARN):

- ``cut``: close the connection once ``after_bytes`` bytes of payload were sent, mid-fragment.
- ``stall``: send nothing for ``seconds`` once ``after_bytes`` were sent (the client's read times out).
- ``error_tag``: at the first element boundary past ``after_bytes``, send the error Tags
  (``error_code``, ``error_id``) and end the payload.
- ``throttle``: refuse the call with ClientLimitExceededException.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from voicebridge_dev.local.kvs.errors import ERROR_INTERNAL
from voicebridge_dev.local.service import Counted, FaultSpecError

FaultKind = Literal["cut", "stall", "error_tag", "throttle"]


@dataclass
class Fault(Counted):
    """A fault to inject into the next ``count`` GetMedia calls (on ``stream`` only, when given)."""

    kind: FaultKind
    after_bytes: int = 0
    count: int = 1
    seconds: float = 5.0
    error_code: str = "INTERNAL_ERROR"
    error_id: int = ERROR_INTERNAL
    stream: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in get_args(FaultKind):
            raise FaultSpecError(f"unknown fault {self.kind!r}; expected one of {get_args(FaultKind)}")
        if self.after_bytes < 0 or self.count < 1 or self.seconds < 0:
            raise FaultSpecError("after_bytes and seconds must not be negative, count must be at least 1")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Fault:
        """Build a fault from ``{"fault": kind, "after_bytes": ..., ...}`` as posted to the HTTP API."""
        fields = {"after_bytes": int, "count": int, "seconds": float, "error_code": str, "error_id": int}
        unknown = set(data) - {"fault", "stream", *fields}
        if unknown:
            raise FaultSpecError(f"unknown fault fields {sorted(unknown)}")
        try:
            kwargs: dict[str, Any] = {name: kind(data[name]) for name, kind in fields.items() if name in data}
            stream = data.get("stream")
            return cls(kind=data["fault"], stream=None if stream is None else str(stream), **kwargs)
        except FaultSpecError:
            # The fault's own check already says what is wrong.
            raise
        except (KeyError, TypeError, ValueError) as exc:
            raise FaultSpecError(f"bad fault description: {exc}") from exc

    def strikes(self, name: str, arn: str) -> bool:
        """Whether the fault applies to a GetMedia call on the stream of that name and ARN."""
        return self.stream in (None, name, arn)
