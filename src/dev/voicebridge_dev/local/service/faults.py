"""The queue of injected faults every emulator keeps: faults wait in the order they were injected, and each
strikes a number of calls before it is spent.

What a fault does, and which calls it strikes, is each emulator's own; the queue only keeps the order and the
counts, under a lock, so a test thread can inject while the server's threads take. A fault that strikes
twice is taken by two calls, then the queue is empty::

    queue.push(Fault(FaultKind.THROTTLE, count=2))
    queue.take(), queue.take(), queue.take()   # the fault, the fault, None
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Final, Generic, Protocol, Self, TypeVar

from voicebridge_dev.local.service.errors import ApiError, finite_number, unknown_names


class FaultSpecError(ValueError):
    """A fault description (from Python or ``POST /_emulator/faults``) is malformed."""


class InjectableFault(Protocol):
    """What the queue needs to know of a fault: how many calls it strikes."""

    @property
    def uses(self) -> int:
        """How many calls the fault strikes before it is spent."""
        ...

    def with_uses(self, uses: int) -> Self:
        """This fault with ``uses`` calls left to strike (how pending faults are shown)."""
        ...


F = TypeVar("F", bound=InjectableFault)


class Counted:
    """The uses of a dataclass fault that strikes the next ``count`` calls, as the queue counts them."""

    # Declared for the type checker only: the dataclass a fault is sets them.
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]
    count: int

    @property
    def uses(self) -> int:
        return self.count

    def with_uses(self, uses: int) -> Self:
        return dataclasses.replace(self, count=uses)


class Cut:
    """What a fault kind marked :data:`CUT` does to a struck call: its connection is cut with no answer."""

    def __repr__(self) -> str:
        return "CUT"


CUT: Final = Cut()


class FaultKinds(StrEnum):
    """An emulator's table of fault kinds, one row a member: ``NAME = "json name"``, or ``NAME = "json name",
    effect`` where the effect is what the kind does to a call it strikes in the kit's hands: the
    :class:`~voicebridge_dev.local.service.errors.ApiError` the call is answered with in place of the service's answer
    (:attr:`refusal`, in the service's own words), or :data:`CUT` (:attr:`cuts`). A row with no effect is the
    emulator's own to act on (a stall, an error mid-stream).
    """

    refusal: ApiError | None
    cuts: bool

    def __new__(cls, value: str, effect: ApiError | Cut | None = None) -> Self:
        member = str.__new__(cls, value)
        member._value_ = value
        member.refusal = effect if isinstance(effect, ApiError) else None
        member.cuts = effect is CUT
        return member


K = TypeVar("K", bound=FaultKinds)


@dataclass(frozen=True)
class CountedFault(Counted, Generic[K]):
    """What the faults of the AWS-shaped emulators share: a ``kind`` of the emulator's :class:`FaultKinds` table
    (``kinds``), the ``count`` of calls it strikes and the ``message`` it carries in place of the service's words;
    their checks, the error a refusing kind answers with (:meth:`refusal`), the JSON round trip of the fault's
    fields, and the uses the queue counts. An emulator's fault is a frozen dataclass adding its own fields::

        @dataclass(frozen=True)
        class Fault(CountedFault[FaultKind]):
            kinds = FaultKind
            injected_by = "the Bedrock emulator"

            after_tokens: int = 3

    Its ``__post_init__`` calls this one before checking its own fields.
    """

    kinds: ClassVar[type[FaultKinds]]
    injected_by: ClassVar[str]
    """What the message of an injected error names as its source (``the Lex emulator``)."""

    kind: K
    count: int = 1
    message: str | None = None

    def __post_init__(self) -> None:
        try:
            # The dataclass is frozen: a kind given as its JSON text is turned into the enum member in place.
            object.__setattr__(self, "kind", self.kinds(self.kind))
        except ValueError as exc:
            names = ", ".join(kind.value for kind in self.kinds)
            raise FaultSpecError(f"unknown fault kind {self.kind!r}; one of {names}") from exc
        check_whole("count", self.count, positive=True)
        if self.message is not None and not isinstance(self.message, str):
            raise FaultSpecError(f"message must be a string, got {self.message!r}")

    def refusal(self) -> ApiError | None:
        """The error a struck call is answered with (its kind's :attr:`~FaultKinds.refusal`), ``message`` in place
        of the service's own words; None for a kind that is no refusal."""
        error = self.kind.refusal
        if error is None:
            return None
        message = self.message or f"{error.message} (injected by {self.injected_by})"
        return ApiError(error.status, error.error_type, message, error.extra)

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """A fault from its JSON form (the ``POST /_emulator/faults`` body); a field the fault has not is refused."""
        if not isinstance(data, dict) or "kind" not in data:
            raise FaultSpecError("a fault is an object with at least a 'kind'")
        if unknown := unknown_names(data, cls.__dataclass_fields__):
            raise FaultSpecError(f"unknown fault fields: {unknown}")
        return cls(**data)

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class RequestFault(CountedFault[K]):
    """A fault of an emulator that answers each request with one whole answer (Comprehend, Connect, Lex): it strikes
    the next ``count`` calls the service would answer; a refusing kind answers in the service's place, a kind that
    :attr:`~FaultKinds.cuts` cuts the connection, and any other holds the answer back ``seconds`` (a stall). An
    emulator's fault names its table and itself::

        class Fault(RequestFault[FaultKind]):
            kinds = FaultKind
            injected_by = "the Lex emulator"

    and its handler takes it with :meth:`~voicebridge_dev.local.service.server.AnsweringHandler.strike`.
    """

    seconds: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        check_seconds(self.seconds)


def check_whole(name: str, value: Any, *, positive: bool = False) -> None:
    """Refuse a fault's field ``name`` unless it is an integer (not a bool), not negative, or ``positive``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < (1 if positive else 0):
        raise FaultSpecError(f"{name} must be a {'positive' if positive else 'non-negative'} integer, got {value!r}")


def check_seconds(seconds: Any) -> None:
    """Refuse a fault's ``seconds`` unless it is a finite number, not negative."""
    if not finite_number(seconds) or seconds < 0:
        raise FaultSpecError(f"seconds must be a non-negative number, got {seconds!r}")


@dataclass(eq=False)
class _Pending(Generic[F]):
    fault: F
    left: int


class FaultQueue(Generic[F]):
    """Pending faults, oldest first; taking a fault spends one of its uses, and a spent fault leaves the queue."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[_Pending[F]] = []

    def push(self, fault: F) -> None:
        with self._lock:
            self._pending.append(_Pending(fault, fault.uses))

    def take(self, strikes: Callable[[F], bool] = lambda fault: True) -> F | None:
        """The oldest fault that ``strikes`` says applies to this call, one use spent; None when there is none."""
        with self._lock:
            for entry in self._pending:
                if strikes(entry.fault):
                    self._spend(entry)
                    return entry.fault
            return None

    def take_all(self, strikes: Callable[[F], bool]) -> list[F]:
        """Every fault that ``strikes`` says applies to this call, oldest first, one use of each spent."""
        with self._lock:
            taken = [entry for entry in self._pending if strikes(entry.fault)]
            for entry in taken:
                self._spend(entry)
            return [entry.fault for entry in taken]

    def pending(self) -> list[F]:
        """Snapshot of the queue, each fault with the uses it has left."""
        with self._lock:
            return [entry.fault.with_uses(entry.left) for entry in self._pending]

    def clear(self) -> int:
        """Drop every pending fault; returns how many calls they would still have struck."""
        with self._lock:
            remaining = sum(entry.left for entry in self._pending)
            self._pending.clear()
            return remaining

    def __len__(self) -> int:
        with self._lock:
            return len(self._pending)

    def _spend(self, entry: _Pending[F]) -> None:
        entry.left -= 1
        if entry.left == 0:
            self._pending.remove(entry)
