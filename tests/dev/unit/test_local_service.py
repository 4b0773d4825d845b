"""The scaffolding the local cloud's emulators share: the fault queue, the control plane's routing, the count of
work in flight. No server runs here; the emulators' own tests drive these over HTTP."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, replace
from http import HTTPStatus
from typing import Any, ClassVar, Self

import pytest

from voicebridge_dev.local.service import (
    CUT,
    ApiError,
    ControlAnswer,
    ControlPlane,
    Emulator,
    FaultKinds,
    FaultQueue,
    FaultSpecError,
    InFlight,
    RequestFault,
)


@dataclass(frozen=True)
class Throttle:
    count: int = 1
    target: str | None = None

    @property
    def uses(self) -> int:
        return self.count

    def with_uses(self, uses: int) -> Self:
        return replace(self, count=uses)


class _Emulator(Emulator[Throttle]):
    label: ClassVar[str] = "test emulator"

    def start(self) -> Self:
        return self

    def stop(self) -> None:
        pass


def _parse(data: Any) -> Throttle:
    if not isinstance(data, dict) or set(data) - {"count", "target"}:
        raise FaultSpecError("not a throttle")
    return Throttle(**data)


def _plane(emulator: _Emulator) -> ControlPlane:
    control = ControlPlane(refusal=lambda reason: ControlAnswer(HTTPStatus.BAD_REQUEST, {"message": reason}))
    control.add_fault_routes(emulator, _parse, lambda fault: {"count": fault.count, "target": fault.target})
    return control


class _Kind(FaultKinds):
    BUSY = "busy", ApiError(429, "ThrottlingException", "Rate exceeded", {"Reason": "Busy"})
    GONE = "gone", CUT
    SLOW = "slow"


class _Fault(RequestFault[_Kind]):
    kinds = _Kind
    injected_by = "the test emulator"


# -- the table of fault kinds --


def test_a_refusing_kind_answers_with_its_rows_error_marked_as_injected() -> None:
    refusal = _Fault(_Kind.BUSY).refusal()
    assert refusal is not None
    assert (refusal.status, refusal.error_type, refusal.extra) == (429, "ThrottlingException", {"Reason": "Busy"})
    assert refusal.message == "Rate exceeded (injected by the test emulator)"


def test_a_faults_message_takes_the_place_of_the_services_words() -> None:
    refusal = _Fault(_Kind.BUSY, message="slow down").refusal()
    assert refusal is not None and refusal.message == "slow down"


def test_a_kind_marked_cut_cuts_and_refuses_nothing() -> None:
    assert _Kind.GONE.cuts and _Fault(_Kind.GONE).refusal() is None


def test_a_kind_with_no_effect_is_neither_a_refusal_nor_a_cut() -> None:
    assert not _Kind.SLOW.cuts and _Fault(_Kind.SLOW).refusal() is None


def test_a_kind_is_read_from_its_json_name() -> None:
    fault = _Fault.from_json({"kind": "gone", "count": 2})
    assert (fault.kind, fault.count) == (_Kind.GONE, 2)
    assert fault.to_json() == {"kind": "gone", "count": 2, "message": None, "seconds": 1.0}


def test_an_unknown_kind_is_refused_naming_the_tables_kinds() -> None:
    with pytest.raises(FaultSpecError, match="one of busy, gone, slow"):
        _Fault.from_json({"kind": "late"})


# -- the fault queue --


def test_a_fault_strikes_as_many_calls_as_it_has_uses_then_leaves_the_queue() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle(count=2))

    assert [queue.take(), queue.take(), queue.take()] == [Throttle(count=2), Throttle(count=2), None]
    assert len(queue) == 0


def test_faults_are_taken_oldest_first() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle(target="first"))
    queue.push(Throttle(target="second"))

    assert [fault.target for fault in (queue.take(), queue.take()) if fault] == ["first", "second"]


def test_take_skips_faults_that_do_not_strike_the_call() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle(target="other"))
    queue.push(Throttle(target="mine"))

    assert queue.take(lambda fault: fault.target == "mine") == Throttle(target="mine")
    assert queue.pending() == [Throttle(target="other")]


def test_take_all_spends_one_use_of_every_fault_that_strikes() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle(count=2, target="mine"))
    queue.push(Throttle(target="other"))
    queue.push(Throttle(target="mine"))

    taken = queue.take_all(lambda fault: fault.target == "mine")

    assert taken == [Throttle(count=2, target="mine"), Throttle(target="mine")]
    assert queue.pending() == [Throttle(count=1, target="mine"), Throttle(target="other")]


def test_two_equal_faults_are_two_entries() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle())
    queue.push(Throttle())

    queue.take()

    assert queue.pending() == [Throttle()]


def test_pending_faults_show_the_uses_they_have_left() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle(count=3))
    queue.take()

    assert queue.pending() == [Throttle(count=2)]


def test_clearing_tells_how_many_calls_the_faults_would_still_have_struck() -> None:
    queue = FaultQueue[Throttle]()
    queue.push(Throttle(count=3))
    queue.push(Throttle(count=2))
    queue.take()

    assert queue.clear() == 4
    assert queue.pending() == []


# -- the emulator's face --


def test_an_emulator_injects_lists_and_clears_its_faults() -> None:
    emulator = _Emulator()
    emulator.inject(Throttle(count=2))

    assert emulator.pending_faults == [Throttle(count=2)]
    assert emulator.clear_faults() == 2
    assert emulator.pending_faults == []


def test_an_emulator_is_idle_once_its_work_in_flight_is_done() -> None:
    emulator = _Emulator()
    emulator.in_flight.begin()
    done = threading.Timer(0.05, emulator.in_flight.end)
    done.start()

    assert not emulator.wait_idle(0)
    assert emulator.wait_idle(5)


def test_work_in_flight_is_counted_for_the_length_of_a_with_block() -> None:
    work = InFlight()
    with work.serving():
        assert work.count == 1
    assert work.count == 0


# -- the control plane --


def test_a_routed_request_gets_its_action_s_answer() -> None:
    control = ControlPlane(refusal=lambda reason: ControlAnswer(400, reason))
    control.route("GET", "figures", lambda body: ControlAnswer(200, {"body": body.decode()}))

    assert control.dispatch("GET", "/_emulator/figures?x=1", b"hi") == ControlAnswer(200, {"body": "hi"})


def test_a_request_no_route_matches_is_left_to_the_emulator() -> None:
    control = ControlPlane(refusal=lambda reason: ControlAnswer(400, reason))
    control.route("GET", "figures", lambda body: ControlAnswer(200, None))

    assert control.dispatch("POST", "/_emulator/figures", b"") is None
    assert control.dispatch("GET", "/_emulator/other", b"") is None


def test_a_request_the_action_refuses_gets_the_emulator_s_refusal() -> None:
    def refuse(body: bytes) -> ControlAnswer:
        raise ValueError("no such setting")

    control = ControlPlane(refusal=lambda reason: ControlAnswer(400, {"message": reason}, {"X-Why": "refused"}))
    control.route("POST", "config", refuse)

    assert control.dispatch("POST", "/_emulator/config", b"{}") == ControlAnswer(
        400, {"message": "no such setting"}, {"X-Why": "refused"}
    )


def test_faults_posted_one_or_several_at_a_time_are_injected_in_order() -> None:
    emulator = _Emulator()
    control = _plane(emulator)

    one = control.dispatch("POST", "/_emulator/faults", json.dumps({"target": "a"}).encode())
    several = control.dispatch("POST", "/_emulator/faults", json.dumps([{"count": 2}, {"target": "b"}]).encode())

    assert one is not None and one.status == HTTPStatus.CREATED
    assert several is not None and several.payload == {
        "pending": [{"count": 1, "target": "a"}, {"count": 2, "target": None}, {"count": 1, "target": "b"}]
    }


@pytest.mark.parametrize("body", [b"not json", b'{"kind": "meteor"}', b'[{"count": 1}, "throttle"]'])
def test_a_malformed_fault_is_refused_and_none_of_its_batch_is_injected(body: bytes) -> None:
    emulator = _Emulator()

    answer = _plane(emulator).dispatch("POST", "/_emulator/faults", body)

    assert answer is not None and answer.status == HTTPStatus.BAD_REQUEST
    assert emulator.pending_faults == []


def test_pending_faults_are_listed_and_cleared_over_the_control_plane() -> None:
    emulator = _Emulator()
    emulator.inject(Throttle(count=3))
    control = _plane(emulator)

    assert control.dispatch("GET", "/_emulator/faults", b"") == ControlAnswer(
        HTTPStatus.OK, {"pending": [{"count": 3, "target": None}]}
    )
    assert control.dispatch("DELETE", "/_emulator/faults", b"") == ControlAnswer(HTTPStatus.OK, {"cleared": 3})
    assert emulator.pending_faults == []
