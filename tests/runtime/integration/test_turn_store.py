"""The turn table on moto's DynamoDB over HTTP: conditional writes make replays and stale consumers harmless,
and AwaitTurn sees a turn within a poll interval of its write."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from tests.fixtures.cloud import Invoker
from voicebridge import container
from voicebridge.errors import NotListening, Superseded
from voicebridge.listening import await_turn
from voicebridge.store.turns import CUSTOMER, Turn, TurnStore
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.template import local_physical_id


@pytest.fixture
def store(cloud_env: LocalCloud) -> TurnStore:
    return TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))


def turn(contact: str, seq: int, text: str = "hello") -> Turn:
    return Turn(contact, CUSTOMER, seq, text, seq * 1000, seq * 1000 + 800, int(time.time() * 1000))


def test_a_contact_is_claimed_once(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    assert store.claim(contact, "arn:stream", "123", [CUSTOMER])
    assert not store.claim(contact, "arn:stream", "123", [CUSTOMER])


def test_a_turn_is_stored_once_whatever_replays_it(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    assert store.put_turn(turn(contact, 0, "first"))
    assert not store.put_turn(turn(contact, 0, "first, heard again"))
    assert [t.transcript for t in store.turns_after(contact, after=-1)] == ["first"]


def test_turns_after_an_index_in_order(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    for seq in (2, 0, 1):
        store.put_turn(turn(contact, seq, f"t{seq}"))
    assert [t.seq for t in store.turns_after(contact, after=0)] == [1, 2]
    assert store.turns_after(contact, after=2) == []


def test_a_stale_generation_cannot_overwrite_its_successor(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "100", [CUSTOMER])
    mine = store.load(contact)
    stale = store.load(contact)
    assert mine is not None and stale is not None
    store.save(mine, new_generation=1)
    with pytest.raises(Superseded):
        store.save(stale)
    assert store.load(contact).generation == 1  # type: ignore[union-attr]


def test_await_turn_returns_a_turn_written_while_it_waits(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "100", [CUSTOMER])
    writer = threading.Timer(0.3, lambda: store.put_turn(turn(contact, 0, "pay my bill")))
    writer.start()
    started = time.monotonic()
    found, waited_ms = await_turn(
        contact, {"AfterTurn": "-1"}, store=store, max_wait_ms=5000, poll_interval_ms=40, remaining_ms=None
    )
    writer.join()
    assert found is not None and found.transcript == "pay my bill"
    assert time.monotonic() - started < 1.5
    assert waited_ms >= 250


def test_await_turn_times_out_inside_its_bound(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "100", [CUSTOMER])
    started = time.monotonic()
    found, _ = await_turn(
        contact, {"MaxWaitMs": "400"}, store=store, max_wait_ms=7000, poll_interval_ms=40, remaining_ms=None
    )
    assert found is None
    assert 0.35 < time.monotonic() - started < 1.5


def test_await_turn_for_a_contact_nobody_listens_to_is_an_error(store: TurnStore) -> None:
    with pytest.raises(NotListening):
        await_turn(str(uuid.uuid4()), {}, store=store, max_wait_ms=200, poll_interval_ms=40, remaining_ms=None)


def test_await_turn_function_answers_connect(invoke_function: Invoker, cloud_env: LocalCloud, store: TurnStore) -> None:
    import copy

    from tests.fixtures.cloud import EVENT

    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "100", [CUSTOMER])
    store.put_turn(turn(contact, 0, "check my balance"))
    event = copy.deepcopy(EVENT)
    event["Details"]["ContactData"]["ContactId"] = contact
    event["Details"]["Parameters"] = {"AfterTurn": "-1"}
    assert invoke_function("AwaitTurnFunction", event) == {
        "Result": "Turn",
        "Transcript": "check my balance",
        "TurnIndex": "0",
    }
    event["Details"]["Parameters"] = {"AfterTurn": "0", "MaxWaitMs": "200"}
    assert invoke_function("AwaitTurnFunction", event) == {"Result": "Timeout"}
    event["Details"]["Parameters"] = {"AfterTurn": "zero"}
    result = invoke_function("AwaitTurnFunction", event)
    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
