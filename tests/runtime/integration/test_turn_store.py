"""The turn table on moto's DynamoDB over HTTP: conditional writes make replays and stale consumers harmless,
and AwaitTurn sees a turn within a poll interval of its write."""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid

import pytest

from tests.fixtures.cloud import Invoker
from voicebridge import container
from voicebridge.conversation import Action
from voicebridge.errors import NotListening, Superseded
from voicebridge.polls.next_turn import await_turn
from voicebridge.store.replies import ReplyStore, Segment, speculative_keys
from voicebridge.store.turns import CUSTOMER, LISTENING, STARTING, STOPPED, Claim, Turn, TurnStore
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.template import local_physical_id


@pytest.fixture
def store(cloud_env: LocalCloud) -> TurnStore:
    return TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))


def turn(contact: str, seq: int, text: str = "hello") -> Turn:
    return Turn(contact, CUSTOMER, seq, text, seq * 1000, seq * 1000 + 800, int(time.time() * 1000))


def test_a_contact_is_claimed_once(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    assert store.claim(contact, "arn:stream", "123", [CUSTOMER]) == (Claim.CLAIMED, 0)
    assert store.claim(contact, "arn:stream", "123", [CUSTOMER]) == (Claim.ALIVE, 0)


def test_a_stopped_claim_is_taken_over_under_the_next_generation_keeping_the_turn_numbers(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "123", [CUSTOMER])
    checkpoint = store.load(contact)
    assert checkpoint is not None
    checkpoint.tracks[CUSTOMER].next_seq = 4
    checkpoint.state = STOPPED
    store.save(checkpoint)
    assert store.claim(contact, "arn:stream-2", "456", [CUSTOMER]) == (Claim.TAKEN_OVER, 1)
    taken = store.load(contact)
    assert taken is not None
    assert (taken.stream_arn, taken.state, taken.tracks[CUSTOMER].next_seq) == ("arn:stream-2", STARTING, 4)


def test_a_claim_whose_consumer_stopped_beating_is_dead_and_taken_over(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "123", [CUSTOMER], lease_ms=50)
    time.sleep(0.1)
    assert store.claim(contact, "arn:stream", "123", [CUSTOMER], lease_ms=50) == (Claim.TAKEN_OVER, 1)


def test_a_released_claim_records_why_and_is_not_alive(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "123", [CUSTOMER])
    store.release(contact, 0, "could not start the transcriber (ClientError)")
    checkpoint = store.load(contact)
    assert checkpoint is not None and not checkpoint.alive(store.now_ms())
    assert checkpoint.why_not_listening == "listening stopped: could not start the transcriber (ClientError)"


def test_a_heartbeat_from_a_superseded_generation_is_refused(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "123", [CUSTOMER])
    stale = store.load(contact)
    assert stale is not None
    store.save(stale, new_generation=1)
    stale.generation = 0
    with pytest.raises(Superseded):
        store.heartbeat(stale, LISTENING)


def test_a_turn_is_stored_once_whatever_replays_it(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    assert store.put_turn(turn(contact, 0, "first"))
    assert not store.put_turn(turn(contact, 0, "first, heard again"))
    assert [t.transcript for t in store.turns_after(contact, after=-1)] == ["first"]


def test_a_backchannel_is_read_back_as_one(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.put_turn(dataclasses.replace(turn(contact, 0, "uh huh"), backchannel=True))
    store.put_turn(turn(contact, 1, "what is my balance"))
    assert [t.backchannel for t in store.turns_after(contact, after=-1)] == [True, False]


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
    awaited = await_turn(
        contact, {"AfterTurn": "-1"}, store=store, max_wait_ms=5000, poll_interval_ms=40, remaining_ms=None
    )
    writer.join()
    assert awaited.turn is not None and awaited.turn.transcript == "pay my bill"
    assert time.monotonic() - started < 1.5
    assert awaited.waited_ms >= 250


def test_await_turn_times_out_inside_its_bound(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "100", [CUSTOMER])
    started = time.monotonic()
    awaited = await_turn(
        contact, {"MaxWaitMs": "400"}, store=store, max_wait_ms=7000, poll_interval_ms=40, remaining_ms=None
    )
    assert awaited.turn is None
    assert 0.35 < time.monotonic() - started < 1.5


def test_await_turn_for_a_contact_nobody_listens_to_is_an_error(store: TurnStore) -> None:
    with pytest.raises(NotListening):
        await_turn(str(uuid.uuid4()), {}, store=store, max_wait_ms=200, poll_interval_ms=40, remaining_ms=None)


def test_await_turn_says_why_when_listening_stopped(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "123", [CUSTOMER])
    checkpoint = store.load(contact)
    assert checkpoint is not None
    checkpoint.state, checkpoint.stop_reason = STOPPED, "media unavailable for 600 s"
    store.save(checkpoint)
    with pytest.raises(NotListening, match="media unavailable"):
        await_turn(contact, {}, store=store, max_wait_ms=200, poll_interval_ms=40, remaining_ms=None)


def test_await_turn_still_returns_the_turns_heard_before_listening_stopped(store: TurnStore) -> None:
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "123", [CUSTOMER])
    store.put_turn(turn(contact, 0, "goodbye"))
    store.release(contact, 0, "stream ended")
    found = await_turn(contact, {}, store=store, max_wait_ms=200, poll_interval_ms=40, remaining_ms=None).turn
    assert found is not None and found.transcript == "goodbye"


def test_an_attempts_eager_end_is_taken_back_by_that_attempt_only(store: TurnStore) -> None:
    replies, contact = ReplyStore(store), str(uuid.uuid4())
    replies.expect(contact, 0, speculative_keys(0, 0))
    replies.expect(contact, 0, speculative_keys(0, 1))
    # The first attempt, cancelled, takes back its eager end after the second attempt said its own: it stays.
    replies.unexpect(contact, 0, speculative_keys(0, 0))
    status = replies.status(contact)
    assert status is not None and status.expecting == 0
    replies.unexpect(contact, 0, speculative_keys(0, 1))
    status = replies.status(contact)
    assert status is not None and status.expecting is None and status.turn == -1


def test_the_due_time_of_a_reply_is_said_by_each_mark_of_its_making_and_dropped_once_its_first_segment_is_stored(
    store: TurnStore,
) -> None:
    replies, contact = ReplyStore(store), str(uuid.uuid4())

    def due() -> int:
        status = replies.status(contact)
        assert status is not None
        return status.due_at_ms

    replies.expect(contact, 0, speculative_keys(0, 0), due_at_ms=1_000)
    assert due() == 1_000
    replies.unexpect(contact, 0, speculative_keys(0, 0))
    assert due() == 0
    replies.begin(contact, 0, due_at_ms=2_000)
    assert due() == 2_000
    replies.synthesizing_soon(contact, 0, due_at_ms=2_500).result()
    assert due() == 2_500
    replies.synthesizing_soon(contact, 0).result()
    assert due() == 0
    replies.begin(contact, 1, due_at_ms=3_000)
    replies.put_segment(Segment(contact, 1, 0, "Hello.", "s3://bucket/hello.wav"))
    assert due() == 0


def test_the_calls_least_lead_is_kept_by_every_later_write_of_the_reply_status(store: TurnStore) -> None:
    replies, contact = ReplyStore(store), str(uuid.uuid4())
    replies.begin(contact, 0, due_at_ms=2_000, lead_ms=400)
    replies.put_segment(Segment(contact, 0, 0, "Hello.", "s3://bucket/hello.wav"))
    replies.finish(contact, 0, 1, Action.CONTINUE, {})
    replies.synthesizing_soon(contact, 1).result()
    replies.mark_speaking(contact, 1_000)
    status = replies.status(contact)
    assert status is not None and status.done and status.lead_ms == 400
    replies.expect(contact, 1, speculative_keys(1, 0), due_at_ms=3_000, lead_ms=300)
    status = replies.status(contact)
    assert status is not None and status.lead_ms == 300


def test_the_reply_status_carries_the_segment_stored_before_the_last_until_a_newer_reply_begins(
    store: TurnStore,
) -> None:
    replies, contact = ReplyStore(store), str(uuid.uuid4())
    first, second = (Segment(contact, 0, index, f"Sentence {index}.", f"s3://bucket/{index}.wav") for index in (0, 1))
    replies.put_segment(first)
    replies.put_segment(second, earlier=first)
    status = replies.status(contact)
    assert status is not None and status.latest is not None and status.earlier is not None
    assert (status.earlier.index, status.earlier.text, status.latest.index) == (0, "Sentence 0.", 1)
    replies.begin(contact, 1)
    status = replies.status(contact)
    assert status is not None and status.latest is None and status.earlier is None


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
