"""The local cloud with each service in a process of its own: the children, their faces, and a whole call on them."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from voicebridge_dev.demo import FLOW, TEMPLATE, containers_for, scenario_settings
from voicebridge_dev.local.kvs import KvsEmulatorError
from voicebridge_dev.local.kvs.matroska import BLOCK_BYTES
from voicebridge_dev.local.processes import SERVICES, ProcessCloud, RemoteKvs, RemoteServiceError, ServiceProcess
from voicebridge_dev.local.sonic import Fault, FaultKind
from voicebridge_dev.local.speech_engine import load_engine
from voicebridge_dev.simulator import SimulatedCaller, VirtualClock, find_scenario, load_clips, simulate_call
from voicebridge_dev.simulator.load import delivery

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def kvs() -> Iterator[ServiceProcess]:
    with ServiceProcess("kvs", {"pace": 0}) as process:
        yield process


def test_a_service_process_says_where_it_serves_and_how_much_cpu_it_has_used(kvs: ServiceProcess) -> None:
    assert kvs.url.startswith("http://127.0.0.1:") and kvs.pid is not None
    first = kvs.cpu_seconds()
    with urllib.request.urlopen(f"{kvs.url}/_emulator/streams", timeout=5) as answer:
        assert "Streams" in json.load(answer)
    # Importing and starting the emulator took CPU, and serving a request takes more; the count never goes back.
    assert 0 < first <= kvs.cpu_seconds()


def test_a_stream_in_another_process_takes_a_contact_a_block_at_a_time_and_the_rest_at_its_end(
    kvs: ServiceProcess,
) -> None:
    media = RemoteKvs(kvs)
    stream = media.stream(media.create_stream("connect-local-contact-blocks"))
    start = stream.begin_contact("c-blocks", "instance")
    assert start.fragment_number and start.timestamp_ms > 0
    # Half a block on each track, then a block and a half: one whole block goes, half a block waits for the end.
    stream.append_tracks(b"\x01\x00" * (BLOCK_BYTES // 4), b"\x02\x00" * (BLOCK_BYTES // 4))
    stream.append_tracks(b"\x01\x00" * (BLOCK_BYTES * 3 // 4), b"\x02\x00" * (BLOCK_BYTES * 3 // 4))
    stream.end_contact(drain=True)
    assert stream.wait_idle(10)
    assert stream.last_fragment_number is not None
    with pytest.raises(KvsEmulatorError, match="even number"):
        stream.append_tracks(b"\x01")


def test_a_refusal_of_the_stream_is_the_kvs_emulators_error(kvs: ServiceProcess) -> None:
    media = RemoteKvs(kvs)
    with pytest.raises(KvsEmulatorError):
        media.stream("arn:aws:kinesisvideo:us-east-1:111111111111:stream/none/1").end_contact()


def test_an_unknown_service_or_options_it_cannot_take_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="unknown service"):
        ServiceProcess("sqs")
    with pytest.raises(RemoteServiceError, match="did not start"):
        ServiceProcess("kvs", {"no_such_setting": 1}).start()


def test_a_whole_call_runs_on_services_in_processes_of_their_own() -> None:
    speech = load_engine("standin")
    chosen = find_scenario("transfer")
    steps = chosen.script(load_clips())
    with ProcessCloud(template=TEMPLATE, engine="standin", media_pace=0, lambda_concurrency=containers_for(1)) as cloud:
        assert cloud.lambdas is not None and cloud.lambdas.concurrency == containers_for(1)
        cloud.lambdas.env.update(scenario_settings(chosen))
        for step in steps:
            clip = getattr(step, "clip", None)
            if clip is not None:
                cloud.register_transcript(clip.pcm, clip.transcript)
        cloud.inject("sonic", Fault(FaultKind.THROTTLE, count=2))
        faults = f"{cloud.processes['sonic'].url}/_emulator/faults"
        with urllib.request.urlopen(faults, timeout=5) as answer:
            assert [fault["count"] for fault in json.load(answer)["pending"]] == [2]
        urllib.request.urlopen(urllib.request.Request(faults, method="DELETE"), timeout=5).close()
        env = cloud.env()
        assert {env[name] for name in ("AWS_ENDPOINT_URL_KINESIS_VIDEO", "CARTESIA_BASE_URL")} == {
            cloud.processes["kvs"].url,
            cloud.processes["ink"].url,
        }
        before = cloud.cpu_seconds()
        result = simulate_call(
            FLOW,
            template_path=TEMPLATE,
            env=env,
            kvs=cloud.media,
            voice=speech,
            caller=SimulatedCaller(steps),
            clock=VirtualClock(),
        )
        after = cloud.cpu_seconds()
    assert result.ended_by == "transferred", result.detail
    delivered = delivery(result)
    assert delivered.utterances == delivered.once == 1 and delivered.lost == delivered.duplicates == 0
    assert set(after) == set(SERVICES)
    # The services the call used did work in their own processes.
    assert all(after[name] > before[name] for name in ("s3", "dynamodb", "kvs", "ink", "sonic", "bedrock"))
