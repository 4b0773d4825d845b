"""What a flow may ask Sonic for, and the content hash that names the prompt."""

from __future__ import annotations

import pytest

from voicebridge import container
from voicebridge.errors import InvalidInput
from voicebridge.sonic.request import RequestSettings, SpeechRequest

VOICE = "a0e99841-438c-4a64-b679-ae501e7d6091"
SETTINGS = RequestSettings(sonic_max_text_chars=50, sonic_default_voice=VOICE, sonic_default_language="en")


def test_defaults_come_from_configuration() -> None:
    request = SpeechRequest.from_parameters({"Text": "Hello there"}, SETTINGS)
    assert (request.voice, request.language, request.speed, request.volume, request.emotion) == (
        SETTINGS.sonic_default_voice,
        "en",
        1.0,
        1.0,
        None,
    )


def test_the_container_reads_the_limit_and_the_defaults_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    other = "b0e99841-438c-4a64-b679-ae501e7d6091"
    environment = {"SONIC_MAX_TEXT_CHARS": "70", "SONIC_DEFAULT_VOICE": other, "SONIC_DEFAULT_LANGUAGE": "fr"}
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    container.reset()
    try:
        assert container.request_settings() == RequestSettings(70, other, "fr")
    finally:
        container.reset()


def test_prefix_builds_a_reply_from_a_turn_and_whitespace_is_normalised() -> None:
    request = SpeechRequest.from_parameters({"Prefix": "You said: ", "Text": " pay  my\nbill "}, SETTINGS)
    assert request.text == "You said: pay my bill"


@pytest.mark.parametrize(
    ("parameters", "reason"),
    [
        ({}, "Text is required"),
        ({"Text": "   "}, "Text is required"),
        ({"Text": "x" * 51}, "limit is 50"),
        ({"Text": "hi", "Voice": "not-a-uuid"}, "Voice"),
        ({"Text": "hi", "Language": "english"}, "Language"),
        ({"Text": "hi", "Language": "en_US"}, "Language"),
        ({"Text": "hi", "Language": "en-USA"}, "Language"),
        ({"Text": "hi", "Language": "pt-BR-x"}, "Language"),
        ({"Text": "hi", "Language": "e"}, "Language"),
        ({"Text": "hi", "Language": "é"}, "Language"),
        ({"Text": "hi", "Speed": "fast"}, "Speed"),
        ({"Text": "hi", "Speed": "3"}, "Speed must be between"),
        ({"Text": "hi", "Volume": "nan"}, "Volume"),
        ({"Text": "hi", "Emotion": "<script>"}, "Emotion"),
        ({"Text": 12}, "Text is required"),
    ],
)
def test_bad_input_is_refused_with_a_reason(parameters: dict[str, object], reason: str) -> None:
    with pytest.raises(InvalidInput, match=reason):
        SpeechRequest.from_parameters(parameters, SETTINGS)


@pytest.mark.parametrize(
    ("language", "sent"),
    [("fr", "fr"), ("pt-BR", "pt-BR"), ("en-US", "en-US"), ("EN", "en"), ("pt-br", "pt-BR"), (" es-MX ", "es-MX")],
)
def test_a_language_or_a_locale_is_passed_through_as_sonic_writes_it(language: str, sent: str) -> None:
    request = SpeechRequest.from_parameters({"Text": "Olá", "Language": language}, SETTINGS)

    assert request.language == sent
    assert request.body(encoding="pcm_s16le", sample_rate=24000)["language"] == sent


def test_a_locale_is_another_prompt_than_its_language() -> None:
    def key(language: str) -> str:
        request = SpeechRequest.from_parameters({"Text": "Olá", "Language": language}, SETTINGS)
        return request.cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr")

    assert key("pt-BR") != key("pt")
    assert key("pt-BR") == key("PT-br")


def test_body_is_sonics_generation_request_without_model_id() -> None:
    request = SpeechRequest.from_parameters({"Text": "Hi", "Voice": VOICE, "Speed": "1.2", "Emotion": "calm"}, SETTINGS)
    body = request.body(encoding="pcm_s16le", sample_rate=24000, context_id="ctx")
    assert body == {
        "context_id": "ctx",
        "transcript": "Hi",
        "voice": {"mode": "id", "id": VOICE},
        "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
        "language": "en",
        "generation_config": {"speed": 1.2, "volume": 1.0, "emotion": "calm"},
        "add_timestamps": False,
    }


def test_cache_key_changes_with_everything_that_changes_the_audio() -> None:
    base = SpeechRequest("Hello", VOICE, "en")
    key = base.cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr")
    variants = [
        SpeechRequest("Hello!", VOICE, "en").cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr"),
        SpeechRequest("Hello", VOICE.replace("a0", "b0"), "en").cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr"),
        SpeechRequest("Hello", VOICE, "fr").cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr"),
        SpeechRequest("Hello", VOICE, "en", speed=1.1).cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr"),
        SpeechRequest("Hello", VOICE, "en", volume=1.1).cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr"),
        SpeechRequest("Hello", VOICE, "en", emotion="calm").cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr"),
        base.cache_key("sagemaker:sonic-turbo", "pcm_s16le@24000/soxr"),
        base.cache_key("sagemaker:sonic", "pcm_mulaw@8000"),
    ]
    assert len({key, *variants}) == len(variants) + 1
    assert key == SpeechRequest("Hello", VOICE, "en").cache_key("sagemaker:sonic", "pcm_s16le@24000/soxr")
