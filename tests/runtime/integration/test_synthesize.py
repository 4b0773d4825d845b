"""SynthesizeFunction end to end: the handler from template.yaml, botocore over HTTP to the Sonic endpoint emulator
and to moto's S3, the prompt checked by ffprobe."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.fixtures.cloud import ROOT, Invoker, event_with, fetch, prompt_location
from voicebridge.audio.wav import read_wav
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.sonic import Fault, FaultKind


def model_calls(cloud: LocalCloud) -> int:
    return len(cloud.sonic.stats)


def test_a_sentence_becomes_a_prompt_connect_can_play(
    invoke_function: Invoker, cloud_env: LocalCloud, tmp_path: Path
) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text="Your balance is forty two dollars."))

    assert result["Result"] == "OK", result
    assert result["CacheHit"] == "false"
    assert int(result["TimeToFirstByteMs"]) >= 15
    uri = urlparse(result["PromptUri"])
    assert uri.scheme == "https" and uri.hostname == "voicebridge-local-prompt-bucket.s3.us-east-1.amazonaws.com"
    wav = fetch(cloud_env, result["PromptUri"])
    pcm, rate = read_wav(wav)
    assert rate == 8000
    assert abs(len(pcm) / 8 - int(result["DurationMs"])) <= 1
    assert int(result["DurationMs"]) > 1000


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe (Debian ffmpeg) is installed by make test")
def test_ffprobe_reads_the_prompt_as_8khz_mono_mulaw(
    invoke_function: Invoker, cloud_env: LocalCloud, tmp_path: Path
) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text="Please hold while I check that."))
    path = tmp_path / "prompt.wav"
    path.write_bytes(fetch(cloud_env, result["PromptUri"]))
    probe = json.loads(
        subprocess.run(
            ["ffprobe", "-v", "error", "-show_streams", "-show_format", "-of", "json", str(path)],
            check=True,
            capture_output=True,
            timeout=30,
        ).stdout
    )
    stream = probe["streams"][0]
    assert (stream["codec_name"], stream["sample_rate"], stream["channels"]) == ("pcm_mulaw", "8000", 1)
    assert abs(float(probe["format"]["duration"]) * 1000 - int(result["DurationMs"])) < 5


def test_a_repeated_request_is_a_cache_hit_with_no_model_call(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    event = event_with(Text="Thanks for waiting.", Speed="1.1")
    first = invoke_function("SynthesizeFunction", event)
    calls = model_calls(cloud_env)
    again = invoke_function("SynthesizeFunction", event)
    assert (first["CacheHit"], again["CacheHit"]) == ("false", "true")
    assert again["PromptUri"] == first["PromptUri"] and again["DurationMs"] == first["DurationMs"]
    assert model_calls(cloud_env) == calls


def test_a_new_container_finds_the_prompt_in_s3_without_a_model_call(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    from tests.fixtures.cloud import _fresh_container

    event = event_with(Text="Goodbye, and thanks for calling.")
    first = invoke_function("SynthesizeFunction", event)
    _fresh_container()
    calls = model_calls(cloud_env)
    again = invoke_function("SynthesizeFunction", event)
    assert again["CacheHit"] == "true" and again["PromptUri"] == first["PromptUri"]
    assert again["DurationMs"] == first["DurationMs"]
    # A new container asks the model while it looks the prompt up, and drops the generation the moment the prompt
    # turns up: at most one stream reaches the model, abandoned — or, on a loaded machine where the lookup is slower
    # than this short sentence, finished first; either way the stored prompt is what the flow gets.
    assert cloud_env.sonic.wait_idle(10)
    assert [r.outcome for r in cloud_env.sonic.stats[calls:]] in ([], ["client_disconnected"], ["ok"])


def test_any_control_change_is_a_new_prompt(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    a = invoke_function("SynthesizeFunction", event_with(Text="One moment."))
    b = invoke_function("SynthesizeFunction", event_with(Text="One moment.", Volume="1.5"))
    assert a["PromptUri"] != b["PromptUri"] and b["CacheHit"] == "false"


def test_the_request_reaching_the_model_carries_the_flows_controls(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    invoke_function("SynthesizeFunction", event_with(Text="Hola.", Language="es", Speed="0.9", Emotion="calm"))
    body = next(r.body for r in reversed(cloud_env.sonic.stats) if r.body.get("transcript") == "Hola.")
    assert body["transcript"] == "Hola." and body["language"] == "es"
    assert body["generation_config"] == {"speed": 0.9, "volume": 1.0, "emotion": "calm"}
    assert body["output_format"] == {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}
    assert "model_id" not in body


@pytest.mark.parametrize(
    "parameters",
    [{}, {"Text": ""}, {"Text": "x" * 1001}, {"Text": "hi", "Speed": "9"}, {"Text": "hi", "Voice": "bob"}],
)
def test_bad_input_is_an_error_with_no_model_call(
    invoke_function: Invoker, cloud_env: LocalCloud, parameters: dict[str, str]
) -> None:
    calls = model_calls(cloud_env)
    result = invoke_function("SynthesizeFunction", event_with(**parameters))
    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert result["ErrorMessage"]
    assert model_calls(cloud_env) == calls


def test_a_422_from_the_model_is_invalid_input_with_the_models_reason(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    # The container has made a prompt, so it knows the endpoint's name for PCM: a 422 is the request's fault.
    assert invoke_function("SynthesizeFunction", event_with(Text="Warm up."))["Result"] == "OK"
    calls = model_calls(cloud_env)
    # Only an inline tag: nothing to speak, which the model (and its emulator) rejects with 422.
    result = invoke_function("SynthesizeFunction", event_with(Text="<emotion value='calm'/>"))
    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert result["ErrorMessage"] == "model rejected the request: transcript has no text to speak"
    assert model_calls(cloud_env) == calls + 1


def test_a_422_in_a_new_container_is_asked_again_as_pcm_then_reported_with_the_models_reason(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    before = model_calls(cloud_env)
    result = invoke_function("SynthesizeFunction", event_with(Text="<emotion value='calm'/>"))

    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert result["ErrorMessage"] == "model rejected the request: transcript has no text to speak"
    asked = [(r.body["output_format"]["encoding"], r.http_status) for r in cloud_env.sonic.stats[before:]]
    assert asked == [("pcm_s16le", 424), ("pcm", 424)]


def test_an_error_lines_data_reaches_the_log_and_the_stream_is_retried(
    invoke_function: Invoker, cloud_env: LocalCloud, caplog: pytest.LogCaptureFixture
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.ERROR_EVENT, after_chunks=2, message="voice not found"))
    result = invoke_function("SynthesizeFunction", event_with(Text="An error line, once."))

    assert result["Result"] == "OK", result
    [retry] = [record for record in caplog.records if record.getMessage() == "sonic attempt failed; retrying"]
    assert retry.__dict__["reason"] == "model reported an error: voice not found"


def test_a_persistent_error_line_reaches_the_flow_as_the_fallbacks_reason(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.ERROR_EVENT, count=100, after_chunks=0, message="voice not found"))
    result = invoke_function("SynthesizeFunction", event_with(Text="An error line, always."))

    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")
    assert result["ErrorMessage"].endswith("model reported an error: voice not found")


def test_throttling_is_retried_until_the_model_answers(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.THROTTLE, count=2))
    result = invoke_function("SynthesizeFunction", event_with(Text="Retry me, please."))
    assert result["Result"] == "OK"
    assert [r.outcome == "ok" for r in cloud_env.sonic.stats[-3:]] == [False, False, True]


@pytest.mark.parametrize(
    "kind",
    [
        FaultKind.ERROR_BEFORE_AUDIO,
        FaultKind.ERROR_MID_STREAM,
        FaultKind.INTERNAL_FAILURE,
        FaultKind.ERROR_EVENT,
    ],
)
def test_a_failed_stream_is_retried_and_only_the_complete_prompt_is_stored(
    invoke_function: Invoker, cloud_env: LocalCloud, kind: FaultKind
) -> None:
    from tests.fixtures.cloud import _fresh_container

    cloud_env.sonic.faults.push(Fault(kind, count=1, after_chunks=2))
    text = f"A stream that fails once with {kind.value}."
    result = invoke_function("SynthesizeFunction", event_with(Text=text))
    assert result["Result"] == "OK", result
    stored = fetch(cloud_env, result["PromptUri"])
    # Make the same prompt again with no fault, from scratch: the stored one must be that complete prompt.
    bucket, key = prompt_location(result["PromptUri"])
    cloud_env.client("s3").delete_object(Bucket=bucket, Key=key)
    _fresh_container()
    clean = invoke_function("SynthesizeFunction", event_with(Text=text))
    assert clean["CacheHit"] == "false"
    assert stored == fetch(cloud_env, clean["PromptUri"])


def test_persistent_throttling_falls_back_to_connects_voice_within_the_deadline(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.THROTTLE, count=100))
    started = time.monotonic()
    result = invoke_function(
        "SynthesizeFunction",
        event_with(Text="Nobody can say this."),
        env={"SONIC_DEADLINE_MS": "1500", "SONIC_MAX_ATTEMPTS": "10"},
    )
    assert time.monotonic() - started < 3.0
    assert (result["Result"], result["Text"], result["ErrorCode"]) == (
        "Fallback",
        "Nobody can say this.",
        "ModelUnavailable",
    )


def test_a_stalled_stream_falls_back_and_nothing_is_cached(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.STALL, count=100, after_chunks=1, seconds=2.0))
    event = event_with(Text="This one stalls.")
    result = invoke_function("SynthesizeFunction", event, env={"SONIC_DEADLINE_MS": "1500"})
    assert result["Result"] == "Fallback"
    cloud_env.sonic.faults.clear()
    again = invoke_function("SynthesizeFunction", event)
    assert (again["Result"], again["CacheHit"]) == ("OK", "false")


def test_the_deadline_follows_the_lambdas_remaining_time(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    from voicebridge_dev.template import function_spec, load_template

    cloud_env.sonic.faults.push(Fault(FaultKind.THROTTLE, count=100))
    spec = function_spec(load_template(ROOT / "template.yaml"), "SynthesizeFunction", parameters=cloud_env.parameters())
    spec.timeout_s = 1
    from voicebridge_dev.local.runner import invoke

    started = time.monotonic()
    result = invoke(spec, event_with(Text="Short on time."))
    assert result["Result"] == "Fallback"
    assert time.monotonic() - started < 1.2


def test_an_unknown_endpoint_is_a_configuration_error(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text="Hello."), env={"SONIC_ENDPOINT_NAME": "nope"})
    assert (result["Result"], result["ErrorCode"]) == ("Error", "ConfigurationError")


def test_a_missing_bucket_is_a_storage_error_not_a_crash(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text="Hello."), env={"PROMPT_BUCKET": "no-such-bucket"})
    assert (result["Result"], result["ErrorCode"]) == ("Error", "StorageError")


def test_native_mulaw_is_stored_as_the_model_sent_it(invoke_function: Invoker, cloud_env: LocalCloud) -> None:
    result = invoke_function(
        "SynthesizeFunction", event_with(Text="Straight to mu-law."), env={"SONIC_ENCODING": "pcm_mulaw"}
    )
    assert result["Result"] == "OK"
    assert cloud_env.sonic.stats[-1].body["output_format"] == {
        "container": "raw",
        "encoding": "pcm_mulaw",
        "sample_rate": 8000,
    }
    assert read_wav(fetch(cloud_env, result["PromptUri"]))[1] == 8000


@pytest.fixture
def mulaw_refused(cloud_env: LocalCloud) -> Iterator[LocalCloud]:
    """The endpoint, for this test only, answers 422 when asked for pcm_mulaw."""
    saved = cloud_env.sonic.accepted_encodings
    cloud_env.sonic.accepted_encodings = saved - {"pcm_mulaw"}
    yield cloud_env
    cloud_env.sonic.accepted_encodings = saved


def test_an_endpoint_that_refuses_mulaw_is_served_by_converting_pcm(
    invoke_function: Invoker, mulaw_refused: LocalCloud
) -> None:
    mulaw = {"SONIC_ENCODING": "pcm_mulaw"}
    before = model_calls(mulaw_refused)
    first = invoke_function("SynthesizeFunction", event_with(Text="Mu-law, if you please."), env=mulaw)

    assert first["Result"] == "OK", first
    asked = [(r.body["output_format"]["encoding"], r.http_status) for r in mulaw_refused.sonic.stats[before:]]
    assert asked == [("pcm_mulaw", 424), ("pcm_s16le", 200)]
    assert read_wav(fetch(mulaw_refused, first["PromptUri"]))[1] == 8000

    before = model_calls(mulaw_refused)
    second = invoke_function("SynthesizeFunction", event_with(Text="And straight to PCM now."), env=mulaw)

    assert second["Result"] == "OK", second
    [call] = mulaw_refused.sonic.stats[before:]
    assert (call.body["output_format"]["encoding"], call.http_status) == ("pcm_s16le", 200)


def test_metrics_are_emitted_in_embedded_metric_format(
    invoke_function: Invoker, cloud_env: LocalCloud, capsys: pytest.CaptureFixture[str]
) -> None:
    invoke_function("SynthesizeFunction", event_with(Text="Count me."))
    blobs = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    names = {m["Name"] for blob in blobs for d in blob["_aws"]["CloudWatchMetrics"] for m in d["Metrics"]}
    assert {"SonicTimeToFirstByte", "SonicSynthesisTime", "PromptCacheHit", "PromptAudioSeconds"} <= names
    assert blobs[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "VoiceBridge"


def test_a_self_managed_fleet_spoken_to_by_the_container_contract_makes_the_same_prompt(
    invoke_function: Invoker, cloud_env: LocalCloud
) -> None:
    # SONIC_BACKEND=container: POST /invocations on the fleet's load balancer, no SageMaker in between. The rest of
    # that backend's behaviour is in test_synthesize_container.py.
    from tests.fixtures.cloud import _fresh_container

    event = event_with(Text="Hosted by ourselves.")
    direct = invoke_function(
        "SynthesizeFunction", event, env={"SONIC_BACKEND": "container", "SONIC_BASE_URL": cloud_env.sonic.url}
    )
    _fresh_container()
    endpoint = invoke_function("SynthesizeFunction", event)

    assert (direct["Result"], endpoint["Result"]) == ("OK", "OK")
    assert [r.transport for r in cloud_env.sonic.stats[-2:]] == ["container", "sagemaker"]
    assert fetch(cloud_env, direct["PromptUri"]) == fetch(cloud_env, endpoint["PromptUri"])


# --- the endpoint's model package: Sonic 3 names 16-bit PCM "pcm" and takes no locale


@pytest.fixture
def sonic_3(cloud_env: LocalCloud) -> Iterator[LocalCloud]:
    """The endpoint, for this test only, runs the Sonic 3 package."""
    saved = cloud_env.sonic.model
    cloud_env.sonic.model = "sonic-3"
    yield cloud_env
    cloud_env.sonic.model = saved


def test_sonic_3_is_asked_for_pcm_once_it_refuses_pcm_s16le_and_from_then_on(
    invoke_function: Invoker, sonic_3: LocalCloud, caplog: pytest.LogCaptureFixture
) -> None:
    before = model_calls(sonic_3)
    first = invoke_function("SynthesizeFunction", event_with(Text="Sonic three, first prompt."))

    assert first["Result"] == "OK", first
    asked = [(r.body["output_format"]["encoding"], r.http_status) for r in sonic_3.sonic.stats[before:]]
    assert asked == [("pcm_s16le", 424), ("pcm", 200)]
    assert read_wav(fetch(sonic_3, first["PromptUri"]))[1] == 8000

    before = model_calls(sonic_3)
    second = invoke_function("SynthesizeFunction", event_with(Text="Sonic three, second prompt."))

    assert second["Result"] == "OK", second
    [call] = sonic_3.sonic.stats[before:]
    assert (call.body["output_format"]["encoding"], call.http_status) == ("pcm", 200)
    [switch] = [record for record in caplog.records if "asking for pcm from now on" in record.getMessage()]
    assert switch.getMessage() == "endpoint rejected pcm_s16le; asking for pcm from now on"
    assert "output_format.encoding" in switch.__dict__["reason"]


def test_a_sonic_3_endpoint_that_refuses_mulaw_is_served_from_pcm_by_its_name(
    invoke_function: Invoker, sonic_3: LocalCloud
) -> None:
    mulaw = {"SONIC_ENCODING": "pcm_mulaw"}
    saved = sonic_3.sonic.accepted_encodings
    sonic_3.sonic.accepted_encodings = saved - {"pcm_mulaw"}
    try:
        before = model_calls(sonic_3)
        first = invoke_function("SynthesizeFunction", event_with(Text="Mu-law from Sonic three."), env=mulaw)
        after_first = model_calls(sonic_3)
        second = invoke_function("SynthesizeFunction", event_with(Text="Then PCM by its name."), env=mulaw)
    finally:
        sonic_3.sonic.accepted_encodings = saved

    assert (first["Result"], second["Result"]) == ("OK", "OK")
    asked = [(r.body["output_format"]["encoding"], r.http_status) for r in sonic_3.sonic.stats[before:]]
    assert asked[: after_first - before] == [("pcm_mulaw", 424), ("pcm_s16le", 424), ("pcm", 200)]
    assert asked[after_first - before :] == [("pcm", 200)]


def test_pcm_from_sonic_3_is_the_prompt_pcm_s16le_from_sonic_3_5_makes(
    invoke_function: Invoker, sonic_3: LocalCloud
) -> None:
    from tests.fixtures.cloud import _fresh_container

    event = event_with(Text="The same samples by another name.")
    from_sonic_3 = invoke_function("SynthesizeFunction", event)
    bucket, key = prompt_location(from_sonic_3["PromptUri"])
    sonic_3.client("s3").delete_object(Bucket=bucket, Key=key)
    _fresh_container()
    sonic_3.sonic.model = "sonic-3.5"
    from_sonic_3_5 = invoke_function("SynthesizeFunction", event)

    assert (from_sonic_3["Result"], from_sonic_3_5["CacheHit"]) == ("OK", "false")
    assert sonic_3.sonic.stats[-1].body["output_format"]["encoding"] == "pcm_s16le"
    assert fetch(sonic_3, from_sonic_3["PromptUri"]) == fetch(sonic_3, from_sonic_3_5["PromptUri"])


def test_a_locale_sonic_3_refuses_is_invalid_input_with_the_models_reason(
    invoke_function: Invoker, sonic_3: LocalCloud
) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text="Olá.", Language="pt-BR"))

    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert result["ErrorMessage"] == (
        "model rejected the request: language must be a two-letter code such as 'en' (Sonic 3 takes no locale), "
        "got 'pt-BR'"
    )


def test_a_locale_sonic_3_refuses_once_pcm_is_known_costs_one_call(
    invoke_function: Invoker, sonic_3: LocalCloud
) -> None:
    assert invoke_function("SynthesizeFunction", event_with(Text="Learn the name."))["Result"] == "OK"
    before = model_calls(sonic_3)

    result = invoke_function("SynthesizeFunction", event_with(Text="Olá.", Language="pt-BR"))

    assert result["ErrorCode"] == "InvalidInput" and "language" in result["ErrorMessage"]
    assert [(r.body["output_format"]["encoding"], r.http_status) for r in sonic_3.sonic.stats[before:]] == [
        ("pcm", 424)
    ]


@pytest.mark.parametrize("language", ["pt-BR", "en-US"])
def test_sonic_3_5_speaks_a_locale_the_flow_asks_for(
    invoke_function: Invoker, cloud_env: LocalCloud, language: str
) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text=f"Speak {language}.", Language=language))

    assert result["Result"] == "OK", result
    body = cloud_env.sonic.stats[-1].body
    assert (body["language"], body["output_format"]["encoding"]) == (language, "pcm_s16le")


# --- Sonic 3.6 and pronunciations ---------------------------------------------------------------------------


@pytest.fixture
def sonic_3_6(cloud_env: LocalCloud) -> Iterator[LocalCloud]:
    saved = cloud_env.sonic.model
    cloud_env.sonic.model = "sonic-3.6"
    try:
        yield cloud_env
    finally:
        cloud_env.sonic.model = saved


def test_a_flows_pronunciation_map_reaches_a_sonic_3_6_endpoint(
    invoke_function: Invoker, sonic_3_6: LocalCloud
) -> None:
    event = event_with(Text="Welcome to Nguyen and Sons.", PronunciationMap='{"Nguyen": "Win"}')
    result = invoke_function("SynthesizeFunction", event, env={"SONIC_MODEL_ID": "sonic-3.6"})

    assert result["Result"] == "OK", result
    body = next(
        r.body
        for r in reversed(sonic_3_6.sonic.stats)
        if r.body.get("transcript") == event["Details"]["Parameters"]["Text"]
    )
    assert body["pronunciation_map"] == {"Nguyen": "Win"}


def test_the_deployments_pronunciation_map_makes_another_prompt_than_none(
    invoke_function: Invoker, sonic_3_6: LocalCloud
) -> None:
    event = event_with(Text="Your AWS bill is ready.")
    from tests.fixtures.cloud import _fresh_container

    plain = invoke_function("SynthesizeFunction", event, env={"SONIC_MODEL_ID": "sonic-3.6"})
    _fresh_container()
    mapped = invoke_function(
        "SynthesizeFunction",
        event,
        env={"SONIC_MODEL_ID": "sonic-3.6", "SONIC_PRONUNCIATION_MAP": '{"AWS": "A-W-S"}'},
    )

    assert (plain["Result"], mapped["Result"], mapped["CacheHit"]) == ("OK", "OK", "false")
    assert plain["PromptUri"] != mapped["PromptUri"]
    assert sonic_3_6.sonic.stats[-1].body["pronunciation_map"] == {"AWS": "A-W-S"}
