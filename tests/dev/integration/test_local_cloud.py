"""The local cloud's own server: moto, as the functions reach it."""

from __future__ import annotations

import threading

from voicebridge_dev.local.cloud import LocalCloud

WRITERS = 48
SIZE = 1_000_000


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
