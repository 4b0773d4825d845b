"""The container backend's settings and how it reads a container's answers that are not a stream (its streams are
tested end to end in ``tests/runtime/integration/test_synthesize_container.py``)."""

from __future__ import annotations

import json

import pytest

from voicebridge.config import Settings
from voicebridge.errors import ConfigurationError, InvalidInput, RetryableModelError
from voicebridge.sonic.backends import ContainerBackend, SageMakerBackend, _from_status


def test_the_container_backend_is_chosen_with_its_base_url() -> None:
    settings = Settings.from_env({"SONIC_BACKEND": "container", "SONIC_BASE_URL": "http://sonic.internal"})

    assert (settings.sonic_backend, settings.sonic_base_url) == ("container", "http://sonic.internal")


def test_the_container_backend_needs_a_base_url() -> None:
    with pytest.raises(ConfigurationError, match="SONIC_BASE_URL: must be set when SONIC_BACKEND is container"):
        Settings.from_env({"SONIC_BACKEND": "container"})


@pytest.mark.parametrize("url", ["sonic.internal", "ftp://sonic.internal", "http://", "http://a b"])
def test_the_base_url_must_be_an_http_url(url: str) -> None:
    with pytest.raises(ConfigurationError, match="SONIC_BASE_URL: must be an http:// or https:// URL"):
        Settings.from_env({"SONIC_BACKEND": "container", "SONIC_BASE_URL": url})


@pytest.mark.parametrize("backend", ["sagemaker", "cartesia-api"])
def test_the_other_backends_need_no_base_url(backend: str) -> None:
    assert Settings.from_env({"SONIC_BACKEND": backend}).sonic_base_url is None


def test_the_identity_names_the_fleet_without_scheme_or_trailing_slash() -> None:
    backend = ContainerBackend("https://sonic.internal.example.com:8443/")

    assert backend.identity == "container:sonic.internal.example.com:8443"


def test_the_container_is_asked_for_pcm_by_both_of_the_packages_names() -> None:
    assert ContainerBackend("http://sonic.internal").pcm_names == SageMakerBackend.pcm_names


def test_an_empty_base_url_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError):
        ContainerBackend("")


def test_a_422_is_invalid_input_with_the_models_reason() -> None:
    error = _from_status(422, b"transcript has no text to speak")

    assert isinstance(error, InvalidInput)
    assert error.safe_message == "model rejected the request: transcript has no text to speak"


def test_a_json_reason_is_read_from_its_message() -> None:
    error = _from_status(422, json.dumps({"message": "voice not found"}).encode())

    assert error.args[0] == "model rejected the request: voice not found"


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
def test_no_capacity_and_server_failures_are_worth_a_retry(status: int) -> None:
    assert isinstance(_from_status(status, b"busy"), RetryableModelError)


@pytest.mark.parametrize("status", [401, 403, 404, 405])
def test_a_door_that_is_not_the_containers_is_a_configuration_error(status: int) -> None:
    error = _from_status(status, b"")

    assert isinstance(error, ConfigurationError) and "SONIC_BASE_URL" in error.args[0]


@pytest.mark.parametrize(("original", "kind"), [(422, InvalidInput), (429, RetryableModelError)])
def test_a_424_in_sagemakers_shape_is_read_as_the_status_the_model_answered(
    original: int, kind: type[Exception]
) -> None:
    body = {"OriginalStatusCode": original, "OriginalMessage": "the model's words", "Message": "Received ..."}

    error = _from_status(424, json.dumps(body).encode())

    assert isinstance(error, kind) and "the model's words" in error.args[0]


def test_a_424_of_another_shape_is_invalid_input() -> None:
    assert isinstance(_from_status(424, b"failed dependency"), InvalidInput)


def test_a_refusal_without_a_body_still_says_so() -> None:
    assert _from_status(422, b"").args[0] == "model rejected the request: no reason given"
