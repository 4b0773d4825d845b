"""Reading back what the product recorded of a call: a speculative reply it has not yet noted is waited for."""

from __future__ import annotations

from typing import Any

from voicebridge_dev.simulator.clock import RealClock
from voicebridge_dev.simulator.records import read_records

CONTACT = "c-1"


def segment(turn: int, keys: str, index: int = 0) -> dict[str, Any]:
    key = f"reply#{turn:09d}#{index:03d}" if keys == "reply" else f"{keys}#{index:03d}"
    return {
        "ContactId": {"S": CONTACT},
        "TurnKey": {"S": key},
        "Turn": {"N": str(turn)},
        "Segment": {"N": str(index)},
        "Text": {"S": "Of course."},
        "ReadyAt": {"N": "1000"},
    }


def speculation(turn: int, **attributes: Any) -> dict[str, Any]:
    item = {"ContactId": {"S": CONTACT}, "TurnKey": {"S": f"spec#{turn:09d}"}, "Turn": {"N": str(turn)}}
    for name, value in attributes.items():
        item[name] = {"N": str(value)} if isinstance(value, int) else {"S": value}
    return item


class Table:
    """A turn table whose contents move on one read at a time, as the product writes behind the simulator."""

    def __init__(self, *reads: list[dict[str, Any]]) -> None:
        self._reads = list(reads)
        self.queries = 0

    def query(self, **_: Any) -> dict[str, Any]:
        self.queries += 1
        return {"Items": self._reads[min(self.queries, len(self._reads)) - 1]}


SPEC = "spec#000000004#00"


def test_a_speculative_reply_committed_but_not_yet_noted_is_read_again_until_it_is() -> None:
    table = Table([segment(4, SPEC)], [segment(4, SPEC)], [segment(4, SPEC), speculation(4, Outcome="hit", Keys=SPEC)])

    records = read_records(table, "turns", CONTACT, RealClock(), settle_s=5)

    assert table.queries == 3
    assert [s.text for s in records.reply(4)] == ["Of course."]


def test_a_turn_answered_by_its_own_reply_is_read_once() -> None:
    table = Table([segment(4, SPEC), segment(4, "reply")])

    read_records(table, "turns", CONTACT, RealClock(), settle_s=5)

    assert table.queries == 1


def test_a_cancelled_attempt_counted_as_a_miss_is_not_waited_for() -> None:
    table = Table([segment(4, SPEC), speculation(4, Misses=1)])

    records = read_records(table, "turns", CONTACT, RealClock(), settle_s=5)

    assert table.queries == 1 and records.unsettled() == []


def test_a_note_that_never_comes_is_waited_for_only_so_long() -> None:
    table = Table([segment(4, SPEC)])

    records = read_records(table, "turns", CONTACT, RealClock(), settle_s=0.5)

    assert records.unsettled() == [4]
    assert 2 <= table.queries <= 5
