"""The local cloud's own server: moto, as the functions reach it."""

from __future__ import annotations

import threading
import uuid

from voicebridge.store.replies import ReplyStatus, ReplyStore
from voicebridge.store.turns import TurnStore
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.template import local_physical_id

WRITERS = 48
SIZE = 1_000_000
RACES = 100


def test_many_writers_of_one_s3_key_at_once_all_succeed_and_the_last_write_stands(local_cloud: LocalCloud) -> None:
    # Ten calls greeting their callers with one prompt put one key at once; S3 takes every write, the last winning.
    s3 = local_cloud.client("s3")
    bucket = str(s3.list_buckets()["Buckets"][0]["Name"])
    barrier = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def put(n: int) -> None:
        try:
            barrier.wait(timeout=10)
            s3.put_object(Bucket=bucket, Key="load/same-prompt.wav", Body=bytes([n]) * SIZE)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=put, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    assert failures == []
    body = s3.get_object(Bucket=bucket, Key="load/same-prompt.wav")["Body"].read()
    assert len(body) == SIZE and len(set(body)) == 1


def test_a_reply_committed_while_its_status_is_being_made_is_never_refused(local_cloud: LocalCloud) -> None:
    # The first reply of a contact: its commit races the mark saying it is expected, which makes the status item
    # when there is none. DynamoDB applies each update to an item atomically, so whichever goes first the commit
    # passes; a store that let the commit see the item half made (its key alone) refused it and lost the turn.
    replies = ReplyStore(TurnStore(local_physical_id("TurnTable"), local_cloud.client("dynamodb")))
    refused: list[str] = []

    def race(contact: str) -> None:
        barrier = threading.Barrier(2)

        def expect() -> None:
            barrier.wait(timeout=10)
            replies.expect(contact, 0, "spec#0#1")

        racer = threading.Thread(target=expect)
        racer.start()
        barrier.wait(timeout=10)
        if not replies.commit(ReplyStatus(0, 1, done=False, keys="spec#0#1"), contact):
            refused.append(contact)
        racer.join(timeout=30)

    for _ in range(RACES):
        race(str(uuid.uuid4()))

    assert refused == []
