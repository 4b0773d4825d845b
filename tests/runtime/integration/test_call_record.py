"""The call record on the local cloud: S3 (moto), the turn table (moto's DynamoDB) and the default event bus
(moto's EventBridge, delivering to an SQS queue as a subscriber's rule would), read back by botocore."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures import ROOT
from tests.fixtures.cloud import Invoker
from voicebridge import container
from voicebridge.call.record import (
    ANNOUNCED,
    DETAIL_TYPE,
    RECORD,
    SOURCE,
    WRITING,
    CallRecorder,
    RecordSettings,
    record_after_failure,
)
from voicebridge.redaction import BuiltinRedactor
from voicebridge.store.replies import ReplyStore, Segment, speculative_keys
from voicebridge.store.turns import CUSTOMER, STOPPED, Turn, TurnStore, typed_item
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.template import local_physical_id

pytestmark = pytest.mark.timeout(60)

CARD_TURN = "My card number is 4111 1111 1111 1111, expiry 04/29"
BUCKET = local_physical_id("CallRecordBucket")


@pytest.fixture
def store(cloud_env: LocalCloud) -> TurnStore:
    return TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))


@pytest.fixture
def subscriber(cloud_env: LocalCloud) -> Iterator[str]:
    """An SQS queue a rule on the default bus sends voicebridge's Call Record Ready events to."""
    events, sqs = container.client("events"), cloud_env.client("sqs")
    name = f"records-{uuid.uuid4().hex[:8]}"
    queue = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    pattern = {"source": [SOURCE], "detail-type": [DETAIL_TYPE]}
    events.put_rule(Name=name, EventPattern=json.dumps(pattern), EventBusName="default")
    events.put_targets(Rule=name, EventBusName="default", Targets=[{"Id": "queue", "Arn": arn}])
    yield queue
    events.remove_targets(Rule=name, EventBusName="default", Ids=["queue"])
    events.delete_rule(Name=name, EventBusName="default")


def recorder(store: TurnStore, kms_key_id: str = "") -> CallRecorder:
    return CallRecorder(
        RecordSettings(bucket=BUCKET, kms_key_id=kms_key_id),
        store,
        container.client("s3"),
        container.client("events"),
        BuiltinRedactor(),
    )


def _texts(value: Any, *, leave: str) -> list[str]:
    """Every string in ``value`` (items, maps and lists, however nested), with ``leave`` taken out of each."""
    if isinstance(value, str):
        return [value.replace(leave, "")]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return [text for inner in value for text in _texts(inner, leave=leave)]
    return []


def a_call(store: TurnStore, *, state: str = STOPPED) -> str:
    """A contact whose listening has ended: a card number said, and the agent's reply to it."""
    contact = str(uuid.uuid4())
    store.claim(contact, "arn:stream", "1", [CUSTOMER], start_timestamp_ms=1_796_000_000_000, converse=True)
    checkpoint = store.load(contact)
    assert checkpoint is not None
    checkpoint.state, checkpoint.stop_reason = state, "stream ended"
    store.save(checkpoint)
    now = int(time.time() * 1000)
    store.put_turn(Turn(contact, CUSTOMER, 0, CARD_TURN, 1000, 4000, now, latency_ms=640))
    replies = ReplyStore(store)
    replies.put_segment(Segment(contact, 0, 0, "Thanks, I have 4111 1111 1111 1111.", "s3://p/0", CARD_TURN, now))
    replies.finish(contact, 0, 1, container_action("Continue"), {})
    return contact


def container_action(name: str) -> Any:
    from voicebridge.conversation import Action

    return Action.parse(name)


def received(queue: str, cloud: LocalCloud, *, wait_s: float = 3.0) -> list[dict[str, Any]]:
    sqs = cloud.client("sqs")
    bodies: list[dict[str, Any]] = []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        answer = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        bodies.extend(json.loads(m["Body"]) for m in answer.get("Messages", []))
    return bodies


def test_a_record_is_stored_redacted_encrypted_and_announced_on_the_default_bus(
    store: TurnStore, subscriber: str, cloud_env: LocalCloud
) -> None:
    contact = a_call(store)

    written = recorder(store).write(contact, generation=0)

    assert written.outcome == "written"
    key = f"records/2026/11/30/{contact}.json"
    assert written.uri == f"s3://{BUCKET}/{key}"
    stored = container.client("s3").get_object(Bucket=BUCKET, Key=key)
    assert stored["ServerSideEncryption"] == "aws:kms"
    record = json.loads(stored["Body"].read())
    turn = record["turns"][0]
    assert turn["heard"] == "My card number is [CARD], expiry [EXPIRY]"
    assert turn["reply"]["said"] == ["Thanks, I have [CARD]."]
    assert turn["reply"]["action"] == "Continue" and turn["latencyMs"]["turnEnd"] == 640
    assert record["listening"]["ended"] == "stream ended"
    assert record["redaction"] == {"mode": "builtin", "found": {"CARD": 2, "EXPIRY": 1}}
    (event,) = received(subscriber, cloud_env)
    assert (event["source"], event["detail-type"]) == (SOURCE, DETAIL_TYPE)
    assert event["detail"]["uri"] == written.uri and event["detail"]["contactId"] == contact


def test_what_the_table_keeps_of_the_call_is_redacted_once_it_is_recorded(store: TurnStore) -> None:
    contact = a_call(store)

    recorder(store).write(contact, generation=0)

    # Every text the table keeps; its numbers (times) and the contact's random id may hold any four digits.
    kept = json.dumps(_texts(store.contact_items(contact), leave=contact))
    assert "4111" not in kept and "04/29" not in kept
    assert store.turns_after(contact, after=-1)[0].transcript == "My card number is [CARD], expiry [EXPIRY]"


def test_a_contact_is_recorded_once_however_many_writers_end_it(
    store: TurnStore, subscriber: str, cloud_env: LocalCloud
) -> None:
    contact = a_call(store)

    outcomes = [recorder(store).write(contact, generation=0).outcome for _ in range(3)]

    assert outcomes == ["written", "already", "already"]
    assert len(received(subscriber, cloud_env)) == 1


def test_a_writer_that_died_after_storing_the_object_leaves_it_and_the_next_announces_it(
    store: TurnStore, subscriber: str, cloud_env: LocalCloud
) -> None:
    contact = a_call(store)
    key = f"records/2026/11/30/{contact}.json"
    container.client("s3").put_object(Bucket=BUCKET, Key=key, Body=b'{"first": true}', ServerSideEncryption="aws:kms")
    stale = {"ContactId": contact, "TurnKey": RECORD, "State": WRITING, "Generation": 0, "Key": key, "Until": 1}
    store.call("put_item", TableName=store.table, Item=typed_item(stale))

    written = recorder(store).write(contact, generation=0)

    assert written.outcome == "written"
    body = container.client("s3").get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert json.loads(body) == {"first": True}
    assert len(received(subscriber, cloud_env)) == 1


def test_a_live_writer_holds_the_record(store: TurnStore) -> None:
    contact = a_call(store)
    held = {
        "ContactId": contact,
        "TurnKey": RECORD,
        "State": WRITING,
        "Generation": 0,
        "Key": "k",
        "Until": int(time.time() * 1000) + 60_000,
    }
    store.call("put_item", TableName=store.table, Item=typed_item(held))

    assert recorder(store).write(contact, generation=0).outcome == "already"


def test_listening_started_again_after_the_record_gets_a_record_of_its_own(store: TurnStore) -> None:
    contact = a_call(store)
    recorder(store).write(contact, generation=0)

    written = recorder(store).write(contact, generation=1)

    assert written.uri.endswith(f"/{contact}-1.json")
    marker = next(item for item in store.contact_items(contact) if item["TurnKey"] == RECORD)
    assert (marker["State"], marker["Generation"]) == (ANNOUNCED, 1)


def test_a_customer_key_encrypts_the_record(store: TurnStore, cloud_env: LocalCloud) -> None:
    key_id = cloud_env.client("kms").create_key(Description="records")["KeyMetadata"]["Arn"]
    contact = a_call(store)

    written = recorder(store, kms_key_id=key_id).write(contact, generation=0)

    head = container.client("s3").head_object(Bucket=BUCKET, Key=written.uri.split("/", 3)[3])
    assert (head["ServerSideEncryption"], head["SSEKMSKeyId"]) == ("aws:kms", key_id)


def test_a_dead_consumer_is_recorded_once_its_lease_has_run_out(store: TurnStore) -> None:
    contact = a_call(store, state="listening")
    checkpoint = store.load(contact)
    assert checkpoint is not None
    checkpoint.heartbeat_at_ms = store.now_ms() - 19_000
    store.save(checkpoint)
    began = time.monotonic()

    outcome = record_after_failure(
        store, recorder(store), contact, 0, why="RetriesExhausted", remaining_ms=lambda: 60_000
    )

    assert outcome == "written"
    assert time.monotonic() - began >= 0.9
    stopped = store.load(contact)
    assert stopped is not None and stopped.state == STOPPED
    assert "RetriesExhausted" in stopped.stop_reason


def test_a_dead_consumer_with_a_successor_is_left_to_the_successor(store: TurnStore) -> None:
    contact = a_call(store)
    checkpoint = store.load(contact)
    assert checkpoint is not None
    store.save(checkpoint, new_generation=1)

    outcome = record_after_failure(store, recorder(store), contact, 0, why="x", remaining_ms=lambda: 60_000)

    assert outcome == "successor"
    assert not any(item["TurnKey"] == RECORD for item in store.contact_items(contact))


def test_a_lease_longer_than_the_time_left_is_not_waited_out(store: TurnStore) -> None:
    contact = a_call(store, state="listening")

    outcome = record_after_failure(store, recorder(store), contact, 0, why="x", remaining_ms=lambda: 5_000)

    assert outcome == "lease-running"


def test_the_turn_a_flow_has_read_is_redacted_and_a_newer_one_is_not(store: TurnStore) -> None:
    contact = a_call(store)
    store.put_turn(Turn(contact, CUSTOMER, 1, "call me on 555-234-5678", 5000, 7000, store.now_ms()))

    redacted = store.redact_read_turns(contact, 0, lambda text: BuiltinRedactor().redact(text).text)

    assert redacted == 1
    first, second = store.turns_after(contact, after=-1)
    assert first.transcript == "My card number is [CARD], expiry [EXPIRY]"
    assert second.transcript == "call me on 555-234-5678"
    assert store.redact_read_turns(contact, 0, lambda text: "changed") == 0


SAMPLE_FAILURE = json.loads((ROOT / "events" / "call-record-failure.json").read_text(encoding="utf-8"))


def test_call_record_function_records_a_dead_consumers_contact_from_lambdas_failure_record(
    store: TurnStore, invoke_function: Invoker
) -> None:
    contact = a_call(store, state="listening")
    checkpoint = store.load(contact)
    assert checkpoint is not None
    checkpoint.heartbeat_at_ms = store.now_ms() - 60_000
    store.save(checkpoint)
    event = {**SAMPLE_FAILURE, "requestPayload": {"ContactId": contact, "Generation": 0}}

    answer = invoke_function("CallRecordFunction", event)

    assert answer == {"Result": "OK", "Outcome": "written"}
    marker = next(item for item in store.contact_items(contact) if item["TurnKey"] == RECORD)
    assert marker["State"] == ANNOUNCED


def test_call_record_function_refuses_a_record_without_a_consumer_event(invoke_function: Invoker) -> None:
    answer = invoke_function("CallRecordFunction", {**SAMPLE_FAILURE, "requestPayload": {"Generation": 0}})

    assert (answer["Result"], answer["ErrorCode"]) == ("Error", "InvalidInput")


def test_the_sample_failure_record_names_no_session_here(invoke_function: Invoker) -> None:
    assert invoke_function("CallRecordFunction", SAMPLE_FAILURE) == {"Result": "OK", "Outcome": "no-session"}


def test_a_number_said_across_two_turns_is_redacted_in_both_once_listening_ends(store: TurnStore) -> None:
    contact = a_call(store)
    store.put_turn(Turn(contact, CUSTOMER, 1, "my other one is 4111 1111", 5000, 7000, store.now_ms()))
    store.put_turn(Turn(contact, CUSTOMER, 2, "1111 1111 thanks", 8000, 9000, store.now_ms()))
    # Read one by one, each turn alone holds no card number: the long polls leave them as they are.
    store.redact_read_turns(contact, 2, lambda text: BuiltinRedactor().redact(text).text)

    written = recorder(store).write(contact, generation=0)

    assert written.record is not None
    heard = [turn["heard"] for turn in written.record["turns"]]
    assert heard[1:] == ["my other one is [CARD]", "[CARD] thanks"]
    kept = [turn.transcript for turn in store.turns_after(contact, after=0)]
    assert kept == ["my other one is [CARD]", "[CARD] thanks"]


def test_the_agents_question_says_what_the_digits_of_the_answer_are(store: TurnStore) -> None:
    contact = a_call(store)
    now = store.now_ms()
    store.put_turn(Turn(contact, CUSTOMER, 1, "yes that's the one", 5000, 6000, now))
    replies = ReplyStore(store)
    replies.put_segment(Segment(contact, 1, 0, "And the three digit code on the back?", "s3://p/1", "", now))
    replies.finish(contact, 1, 1, container_action("Continue"), {})
    store.put_turn(Turn(contact, CUSTOMER, 2, "nine one seven", 8000, 9000, now))

    written = recorder(store).write(contact, generation=0)

    assert written.record is not None
    assert [turn["heard"] for turn in written.record["turns"]][1:] == ["yes that's the one", "[CVV]"]


def test_a_speculative_reply_committed_but_not_yet_noted_when_the_call_ends_is_recorded_as_the_turns(
    store: TurnStore,
) -> None:
    # The caller hung up while the reply committed at their turn's end was still being made: its thread had not yet
    # noted it as the turn's (spec#n) when the session wrote the record.
    contact = a_call(store)
    now = store.now_ms()
    store.put_turn(Turn(contact, CUSTOMER, 1, "let me talk to a person", 5000, 6000, now))
    keys = speculative_keys(1, 0)
    replies = ReplyStore(store)
    replies.put_segment(Segment(contact, 1, 0, "Of course.", "s3://p/1", "let me talk to a person", now, keys=keys))
    replies.finish(contact, 1, 1, container_action("Transfer"), {}, keys=keys)

    written = recorder(store).write(contact, generation=0)

    assert written.record is not None
    answered = next(turn for turn in written.record["turns"] if turn.get("turn") == 1 and turn["track"] == CUSTOMER)
    assert answered["reply"]["said"] == ["Of course."]
    assert answered["reply"]["speculative"] == "hit"
