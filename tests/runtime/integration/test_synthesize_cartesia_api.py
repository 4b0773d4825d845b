"""SynthesizeFunction with ``SONIC_BACKEND=cartesia-api``, end to end: the handler from template.yaml, the
official ``cartesia`` SDK over HTTP to the emulator's ``POST /tts/sse``, the API key from moto's Secrets
Manager, the prompt in moto's S3."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.cloud import Invoker, _fresh_container, event_with, fetch
from voicebridge import cartesia_key
from voicebridge.audio.wav import read_wav
from voicebridge_dev.local.cloud import LOCAL_API_KEY, LocalCloud
from voicebridge_dev.local.sonic import Fault, FaultKind, InvocationRecord

pytestmark = pytest.mark.timeout(30)

DEFAULT_VOICE = "a0e99841-438c-4a64-b679-ae501e7d6091"


@pytest.fixture
def api_backend(cloud_env: LocalCloud) -> Iterator[dict[str, str]]:
    """Environment for the cartesia-api backend; the emulator checks the key the local secret holds."""
    sonic = cloud_env.sonic
    saved_key, sonic.api_key = sonic.api_key, LOCAL_API_KEY
    # Whichever variable carries the Sonic base URL in the template, it points at the emulator's /tts/sse.
    yield {"SONIC_BACKEND": "cartesia-api", "SONIC_BASE_URL": sonic.url, "CARTESIA_BASE_URL": sonic.url}
    sonic.api_key = saved_key


def api_calls(cloud: LocalCloud, since: int = 0) -> list[InvocationRecord]:
    return [record for record in cloud.sonic.stats[since:] if record.transport == "cartesia-api"]


def test_a_sentence_becomes_a_prompt_through_the_cartesia_api(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    before = len(cloud_env.sonic.stats)
    event = event_with(Text="Your order has shipped.")
    result = invoke_function("SynthesizeFunction", event, env=api_backend)

    assert result["Result"] == "OK", result
    assert result["CacheHit"] == "false"
    pcm, rate = read_wav(fetch(cloud_env, result["PromptUri"]))
    assert rate == 8000
    assert abs(len(pcm) / 8 - int(result["DurationMs"])) <= 1
    assert int(result["DurationMs"]) > 1000
    [call] = api_calls(cloud_env, before)
    assert call.outcome == "ok" and call.cartesia_version


def test_the_api_request_names_the_model_and_carries_the_flows_controls(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    event = event_with(Text="Un momento.", Language="es", Speed="0.9", Emotion="calm")
    invoke_function("SynthesizeFunction", event, env={**api_backend, "SONIC_MODEL_ID": "sonic-3"})

    body = api_calls(cloud_env)[-1].body
    assert body["model_id"] == "sonic-3"
    assert body["transcript"] == "Un momento." and body["language"] == "es"
    assert body["generation_config"] == {"speed": 0.9, "volume": 1.0, "emotion": "calm"}
    assert body["output_format"] == {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000}
    assert body["voice"] == DEFAULT_VOICE


def test_a_locale_goes_to_the_api_as_locale_and_never_with_a_language(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    result = invoke_function("SynthesizeFunction", event_with(Text="Olá.", Language="pt-BR"), env=api_backend)

    assert result["Result"] == "OK", result
    body = api_calls(cloud_env)[-1].body
    assert body["locale"] == "pt-BR" and "language" not in body


def test_a_prompt_made_through_the_api_is_not_the_sagemaker_prompt(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    event = event_with(Text="Same words, another model.")
    through_api = invoke_function("SynthesizeFunction", event, env=api_backend)
    _fresh_container()
    through_sagemaker = invoke_function("SynthesizeFunction", event)

    assert through_api["PromptUri"] != through_sagemaker["PromptUri"]
    assert through_sagemaker["CacheHit"] == "false"


def test_a_422_from_the_api_is_invalid_input_with_the_models_reason(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    before = len(cloud_env.sonic.stats)
    # Only an inline tag: nothing to speak, which the model (and its emulator) rejects with 422.
    event = event_with(Text="<emotion value='calm'/>")
    result = invoke_function("SynthesizeFunction", event, env=api_backend)

    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert result["ErrorMessage"] == "model rejected the request: transcript has no text to speak"
    assert [call.http_status for call in api_calls(cloud_env, before)] == [422]


def test_throttling_is_retried_until_the_api_answers(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.THROTTLE, count=2))
    before = len(cloud_env.sonic.stats)

    event = event_with(Text="Retry me through the API.")
    result = invoke_function("SynthesizeFunction", event, env=api_backend)

    assert result["Result"] == "OK", result
    assert [call.http_status for call in api_calls(cloud_env, before)] == [429, 429, 200]


@pytest.mark.parametrize(
    "kind",
    [
        FaultKind.ERROR_BEFORE_AUDIO,
        FaultKind.ERROR_MID_STREAM,
        FaultKind.INTERNAL_FAILURE,
        FaultKind.ERROR_EVENT,
    ],
)
def test_an_error_event_is_retried_and_only_the_complete_prompt_is_stored(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str], kind: FaultKind
) -> None:
    cloud_env.sonic.faults.push(Fault(kind, count=1, after_chunks=2))
    event = event_with(Text=f"An API stream that fails once with {kind.value}.")
    before = len(cloud_env.sonic.stats)

    result = invoke_function("SynthesizeFunction", event, env=api_backend)

    assert result["Result"] == "OK", result
    assert [call.outcome for call in api_calls(cloud_env, before)] == [f"fault_{kind.value}", "ok"]
    # The same words made without a fault, through the other transport (another cache key, the same audio).
    _fresh_container()
    clean = invoke_function("SynthesizeFunction", event)
    assert clean["CacheHit"] == "false"
    assert fetch(cloud_env, result["PromptUri"]) == fetch(cloud_env, clean["PromptUri"])


@pytest.mark.parametrize("kind", [FaultKind.THROTTLE, FaultKind.ERROR_MID_STREAM])
def test_a_persistent_failure_falls_back_to_connects_voice_within_the_deadline(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str], kind: FaultKind
) -> None:
    cloud_env.sonic.faults.push(Fault(kind, count=100, after_chunks=1))
    started = time.monotonic()

    result = invoke_function(
        "SynthesizeFunction",
        event_with(Text="Nobody can say this through the API."),
        env={**api_backend, "SONIC_DEADLINE_MS": "1500", "SONIC_MAX_ATTEMPTS": "10"},
    )

    assert time.monotonic() - started < 3.0
    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")
    assert result["Text"] == "Nobody can say this through the API."


def test_a_wrong_api_key_is_a_configuration_error_and_the_key_is_never_shown(
    invoke_function: Invoker,
    cloud_env: LocalCloud,
    api_backend: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The product's own logs at their most verbose; libraries at the level a function runs them.
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="voicebridge")
    cloud_env.sonic.api_key = "a-key-the-secret-does-not-hold"
    before = len(cloud_env.sonic.stats)

    result = invoke_function("SynthesizeFunction", event_with(Text="Who am I?"), env=api_backend)

    assert (result["Result"], result["ErrorCode"]) == ("Error", "ConfigurationError")
    assert "401" in result["ErrorMessage"]
    assert [call.http_status for call in api_calls(cloud_env, before)] == [401]
    logs = capsys.readouterr()
    for shown in (json.dumps(result), logs.out, logs.err, caplog.text):
        assert LOCAL_API_KEY not in shown


def test_the_api_key_is_read_from_secrets_manager_once_per_container(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    read_api_key = cartesia_key.read_api_key

    def counted(secret_arn: str, secrets: Any) -> str:
        reads.append(secret_arn)
        return read_api_key(secret_arn, secrets)

    monkeypatch.setattr(cartesia_key, "read_api_key", counted)
    for text in ("First of three.", "Second of three.", "Third of three."):
        assert invoke_function("SynthesizeFunction", event_with(Text=text), env=api_backend)["Result"] == "OK"

    assert len(reads) == 1


def test_a_stalled_api_stream_falls_back_within_the_deadline(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    cloud_env.sonic.faults.push(Fault(FaultKind.STALL, count=100, after_chunks=1, seconds=2.0))
    started = time.monotonic()
    result = invoke_function(
        "SynthesizeFunction",
        event_with(Text="This API stream stalls."),
        env={**api_backend, "SONIC_DEADLINE_MS": "1500"},
    )
    assert (result["Result"], result["ErrorCode"]) == ("Fallback", "ModelUnavailable")
    assert time.monotonic() - started < 2.5


def test_a_flows_pronunciation_dictionary_reaches_the_api(
    invoke_function: Invoker, cloud_env: LocalCloud, api_backend: dict[str, str]
) -> None:
    event = event_with(Text="Welcome to Nguyen and Sons.", PronunciationDictId="pdict_brands-1")
    result = invoke_function("SynthesizeFunction", event, env=api_backend)

    assert result["Result"] == "OK", result
    assert api_calls(cloud_env)[-1].body["pronunciation_dict_id"] == "pdict_brands-1"
