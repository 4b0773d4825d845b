"""SynthesizeFunction with ``SONIC_BACKEND=container``, end to end: the handler from template.yaml, urllib3 over HTTP
to the Sonic emulator's ``POST /invocations`` (SageMaker's container contract, as a self-managed fleet serves it),
the prompt in moto's S3."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import pytest

from tests.fixtures.cloud import Invoker, _fresh_container, event_with, fetch, prompt_location
from voicebridge.audio.wav import read_wav
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.sonic import Fault, FaultKind, InvocationRecord

pytestmark = pytest.mark.timeout(30)


@pytest.fixture
def container(cloud_env: LocalCloud) -> dict[str, str]:
    """Environment for the container backend: the emulator's root is the fleet's load balancer."""
    return {"SONIC_BACKEND": "container", "SONIC_BASE_URL": cloud_env.sonic.url}


def container_calls(cloud: LocalCloud, since: int = 0) -> list[InvocationRecord]:
    return [record for record in cloud.sonic.stats[since:] if record.transport == "container"]


def test_a_sentence_becomes_a_prompt_through_the_container(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    before = len(cloud_env.sonic.stats)
    result = invoke_function("SynthesizeFunction", event_with(Text="Your order has shipped."), env=container)

    assert result["Result"] == "OK", result
    assert result["CacheHit"] == "false"
    pcm, rate = read_wav(fetch(cloud_env, result["PromptUri"]))
    assert rate == 8000
    assert abs(len(pcm) / 8 - int(result["DurationMs"])) <= 1
    [call] = container_calls(cloud_env, before)
    assert (call.http_status, call.outcome) == (200, "ok")


def test_the_container_is_asked_what_the_endpoint_is_asked(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    event = event_with(Text="Un momento.", Language="es", Speed="0.9", Emotion="calm")
    invoke_function("SynthesizeFunction", event, env=container)
    through_container = container_calls(cloud_env)[-1]
    _fresh_container()
    invoke_function("SynthesizeFunction", event)
    through_endpoint = cloud_env.sonic.stats[-1]

    assert through_endpoint.transport == "sagemaker"
    assert through_container.accept == through_endpoint.accept == "text/event-stream"
    ignore_id = {"context_id": None}
    assert {**through_container.body, **ignore_id} == {**through_endpoint.body, **ignore_id}
    assert "model_id" not in through_container.body


def test_the_containers_prompt_is_the_endpoints_audio_under_its_own_key(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    event = event_with(Text="Same words, another host.")
    through_container = invoke_function("SynthesizeFunction", event, env=container)
    _fresh_container()
    through_endpoint = invoke_function("SynthesizeFunction", event)

    assert through_container["PromptUri"] != through_endpoint["PromptUri"]
    assert through_endpoint["CacheHit"] == "false"
    assert fetch(cloud_env, through_container["PromptUri"]) == fetch(cloud_env, through_endpoint["PromptUri"])


def test_a_repeated_request_is_a_cache_hit_with_no_call_to_the_container(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    event = event_with(Text="Thanks for waiting, again.")
    first = invoke_function("SynthesizeFunction", event, env=container)
    calls = len(cloud_env.sonic.stats)
    again = invoke_function("SynthesizeFunction", event, env=container)

    assert (first["CacheHit"], again["CacheHit"]) == ("false", "true")
    assert len(cloud_env.sonic.stats) == calls


def test_a_422_from_the_container_is_invalid_input_with_the_models_reason(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    assert invoke_function("SynthesizeFunction", event_with(Text="Warm up."), env=container)["Result"] == "OK"
    before = len(cloud_env.sonic.stats)
    result = invoke_function("SynthesizeFunction", event_with(Text="<emotion value='calm'/>"), env=container)

    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert result["ErrorMessage"] == "model rejected the request: transcript has no text to speak"
    assert [call.http_status for call in container_calls(cloud_env, before)] == [422]


def test_a_sonic_3_container_is_asked_for_pcm_once_it_refuses_pcm_s16le(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    saved, cloud_env.sonic.model = cloud_env.sonic.model, "sonic-3"
    try:
        before = len(cloud_env.sonic.stats)
        result = invoke_function("SynthesizeFunction", event_with(Text="Sonic three, in a box."), env=container)
    finally:
        cloud_env.sonic.model = saved

    assert result["Result"] == "OK", result
    asked = [(r.body["output_format"]["encoding"], r.http_status) for r in container_calls(cloud_env, before)]
    assert asked == [("pcm_s16le", 422), ("pcm", 200)]


def test_throttling_is_retried_until_the_container_answers(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.THROTTLE, count=2))
    before = len(cloud_env.sonic.stats)

    result = invoke_function("SynthesizeFunction", event_with(Text="Retry me in the box."), env=container)

    assert result["Result"] == "OK", result
    assert [call.http_status for call in container_calls(cloud_env, before)] == [429, 429, 200]


@pytest.mark.parametrize(
    "kind",
    [FaultKind.ERROR_BEFORE_AUDIO, FaultKind.ERROR_MID_STREAM, FaultKind.INTERNAL_FAILURE, FaultKind.ERROR_EVENT],
)
def test_a_broken_stream_is_retried_and_only_the_complete_prompt_is_stored(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str], kind: FaultKind
) -> None:
    cloud_env.sonic.faults.push(Fault(kind, count=1, after_chunks=2))
    event = event_with(Text=f"A container stream that fails once with {kind.value}.")
    before = len(cloud_env.sonic.stats)

    result = invoke_function("SynthesizeFunction", event, env=container)

    assert result["Result"] == "OK", result
    assert [call.outcome for call in container_calls(cloud_env, before)] == [f"fault_{kind.value}", "ok"]
    stored = fetch(cloud_env, result["PromptUri"])
    bucket, key = prompt_location(result["PromptUri"])
    cloud_env.client("s3").delete_object(Bucket=bucket, Key=key)
    _fresh_container()
    clean = invoke_function("SynthesizeFunction", event, env=container)
    assert clean["CacheHit"] == "false"
    assert fetch(cloud_env, clean["PromptUri"]) == stored


@pytest.mark.parametrize("kind", [FaultKind.THROTTLE, FaultKind.ERROR_MID_STREAM])
def test_a_persistent_failure_falls_back_to_connects_voice_within_the_deadline(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str], kind: FaultKind
) -> None:
    cloud_env.sonic.faults.push(Fault(kind, count=100, after_chunks=1))
    started = time.monotonic()

    result = invoke_function(
        "SynthesizeFunction",
        event_with(Text="Nobody in the box can say this."),
        env={**container, "SONIC_DEADLINE_MS": "1500", "SONIC_MAX_ATTEMPTS": "10"},
    )

    assert time.monotonic() - started < 3.0
    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")


def test_a_stalled_stream_falls_back_within_the_deadline_and_nothing_is_cached(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.STALL, count=100, after_chunks=1, seconds=2.0))
    event = event_with(Text="This container stream stalls.")
    started = time.monotonic()

    result = invoke_function("SynthesizeFunction", event, env={**container, "SONIC_DEADLINE_MS": "1500"})

    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")
    assert time.monotonic() - started < 2.5
    cloud_env.sonic.faults.clear()
    cloud_env.sonic.wait_idle(10)
    again = invoke_function("SynthesizeFunction", event, env=container)
    assert (again["Result"], again["CacheHit"]) == ("OK", "false")


def test_an_unreachable_fleet_falls_back_to_connects_voice(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    env = {"SONIC_BACKEND": "container", "SONIC_BASE_URL": f"http://127.0.0.1:{port}", "SONIC_DEADLINE_MS": "1500"}

    result = invoke_function("SynthesizeFunction", event_with(Text="Is anyone there?"), env=env)

    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")
    assert "Sonic container unreachable" in result["ErrorMessage"]


def test_a_base_url_with_no_invocations_under_it_is_a_configuration_error(
    invoke_function: Invoker, cloud_env: LocalCloud, container: dict[str, str]
) -> None:
    env = {**container, "SONIC_BASE_URL": cloud_env.sonic.url + "/not-the-root"}

    result = invoke_function("SynthesizeFunction", event_with(Text="Wrong door."), env=env)

    assert (result["Result"], result["ErrorCode"]) == ("Error", "ConfigurationError")
    assert "SONIC_BASE_URL" in result["ErrorMessage"]


def test_each_stream_is_counted_against_the_fleet_it_was_opened_on(
    invoke_function: Invoker,
    cloud_env: LocalCloud,
    container: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.THROTTLE, count=1))
    invoke_function("SynthesizeFunction", event_with(Text="Count my streams."), env=container)

    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"SonicStreamSeconds"' in line]
    # The throttled attempt held a stream too: both count against the fleet.
    assert len(blobs) == 2
    [directive] = blobs[0]["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "VoiceBridge"
    assert directive["Metrics"] == [{"Name": "SonicStreamSeconds", "Unit": "Seconds"}]
    assert sorted(directive["Dimensions"][0]) == ["SonicBackend", "SonicTarget", "service"]
    host = cloud_env.sonic.url.removeprefix("http://")
    assert {(blob["SonicBackend"], blob["SonicTarget"]) for blob in blobs} == {("container", host)}
    assert all(0 < blob["SonicStreamSeconds"][0] < 5 for blob in blobs)


@pytest.fixture
def not_ready(cloud_env: LocalCloud) -> Iterator[LocalCloud]:
    """The container, for this test only, is still loading its model."""
    cloud_env.sonic.ready = False
    yield cloud_env
    cloud_env.sonic.ready = True


def test_a_container_still_loading_its_model_is_retried_then_falls_back(
    invoke_function: Invoker, not_ready: LocalCloud, container: dict[str, str]
) -> None:
    before = len(not_ready.sonic.stats)
    result = invoke_function(
        "SynthesizeFunction", event_with(Text="Too early."), env={**container, "SONIC_DEADLINE_MS": "1000"}
    )

    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")
    assert {call.http_status for call in container_calls(not_ready, before)} == {503}
