"""A prompt on the virtual clock gives the product the time a line gives it: while the reply's next sentence is not
yet stored, the prompt plays in real time (at most its length), and only the rest is skipped."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import EndpointConnectionError

from tests.fixtures.flows import flow_document
from voicebridge_dev.flows import parse_flow
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.simulator.call import Call
from voicebridge_dev.simulator.caller import SimulatedCaller
from voicebridge_dev.simulator.clock import RealClock, VirtualClock
from voicebridge_dev.simulator.contact import Contact
from voicebridge_dev.simulator.loaded import LoadedFlow
from voicebridge_dev.simulator.records import next_sentence_stored

TABLE = "turns"


def a_call(clock: Any) -> Call:
    return Call(
        LoadedFlow(parse_flow(flow_document()), {}),
        lambda_client=None,
        s3_client=None,
        kvs=None,  # type: ignore[arg-type]  # nothing streams in these calls
        voice=StandInSpeechEngine(),
        caller=SimulatedCaller([]),
        clock=clock,
    )


def test_a_prompt_on_the_virtual_clock_lets_real_time_pass_until_the_next_sentence_is_made() -> None:
    clock = VirtualClock()
    call = a_call(clock)
    began = clock.now()
    asked: list[float] = []

    def made() -> bool:
        asked.append(clock.now())
        return len(asked) > 3

    call.pass_time(began + 30.0, made=made)

    # Asked while real time passed, until it said yes, and no more; the prompt still ends where it ends.
    assert len(asked) == 4 and asked == sorted(asked) and asked[-1] > began
    assert asked[-1] < began + 30.0 <= clock.now()


def test_a_prompt_whose_next_sentence_never_comes_ends_at_its_length() -> None:
    clock = VirtualClock()
    call = a_call(clock)
    began = clock.now()

    call.pass_time(began + 0.2, made=lambda: False)

    assert clock.now() >= began + 0.2


def test_a_real_clock_asks_nothing_of_the_backends() -> None:
    call = a_call(RealClock())
    asked: list[float] = []

    def made() -> bool:
        asked.append(call.clock.now())
        return True

    call.pass_time(call.clock.now() + 0.05, made=made)

    assert asked == []


class Status:
    """A turn table holding one reply status item (or none), or failing every read."""

    def __init__(self, item: dict[str, Any] | None = None, *, fails: bool = False) -> None:
        self.item, self.fails, self.reads = item, fails, 0

    def get_item(self, **request: Any) -> dict[str, Any]:
        self.reads += 1
        assert request["TableName"] == TABLE and request["Key"]["TurnKey"] == {"S": "reply"}
        if self.fails:
            raise EndpointConnectionError(endpoint_url="http://127.0.0.1:1")
        return {} if self.item is None else {"Item": self.item}


def status(turn: int, segments: int, *, done: bool = False) -> dict[str, Any]:
    return {"Turn": {"N": str(turn)}, "Segments": {"N": str(segments)}, "Done": {"BOOL": done}}


def answered(**external: str) -> Contact:
    return Contact(external=dict(external))


@pytest.mark.parametrize(
    ("item", "ready"),
    [
        (status(2, 2), False),  # segments 0 and 1 stored: the flow just played 1, and 2 is not made yet
        (status(2, 3), True),  # segment 2 stored
        (status(2, 2, done=True), True),  # the reply ended: the flow's next answer says so
        (status(3, 0), True),  # a newer turn's reply is named
        (None, True),  # no status: nothing to wait for
    ],
)
def test_the_next_sentence_is_read_from_the_reply_status(item: dict[str, Any] | None, ready: bool) -> None:
    table = Status(item)
    stored = next_sentence_stored(table, TABLE)

    assert stored(answered(Result="Speak", TurnIndex="2", Segment="1", More="true")) is ready
    assert table.reads == 1


def test_only_an_answer_with_more_to_come_is_waited_on_and_a_table_that_fails_waits_for_nothing() -> None:
    table = Status(status(2, 2))
    stored = next_sentence_stored(table, TABLE)

    assert stored(answered(Result="Speak", TurnIndex="2", Segment="1", More="false"))
    assert stored(answered(Result="Thinking", TurnIndex="2"))
    assert stored(answered(More="true", TurnIndex="two", Segment="1"))
    assert table.reads == 0
    assert next_sentence_stored(Status(fails=True), TABLE)(answered(TurnIndex="2", Segment="1", More="true"))
