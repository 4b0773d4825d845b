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


# --- what each model does with speed, volume and a pronunciation --------------------------------------------------

SONIC_35 = RequestSettings(50, VOICE, "en", sonic_model_id="sonic-3.5")
SONIC_36 = RequestSettings(50, VOICE, "en", sonic_model_id="sonic-3.6")
API = RequestSettings(50, VOICE, "en", sonic_backend="cartesia-api", sonic_model_id="sonic-3")
KEY = ("sagemaker:sonic", "pcm_s16le@24000/soxr")


def test_speed_and_volume_on_sonic_3_5_are_sent_at_their_default_since_cartesia_disabled_them() -> None:
    request = SpeechRequest.from_parameters({"Text": "Hi", "Speed": "1.4", "Volume": "0.6"}, SONIC_35)
    assert request.body(encoding="pcm_s16le", sample_rate=24000)["generation_config"] == {"speed": 1.0, "volume": 1.0}


def test_speed_and_volume_on_sonic_3_5_do_not_split_the_prompt_cache() -> None:
    plain = SpeechRequest.from_parameters({"Text": "Hi"}, SONIC_35)
    faster = SpeechRequest.from_parameters({"Text": "Hi", "Speed": "1.4", "Volume": "0.6"}, SONIC_35)
    assert faster.cache_key(*KEY) == plain.cache_key(*KEY)


def test_speed_and_volume_on_sonic_3_6_change_the_audio_and_the_key() -> None:
    plain = SpeechRequest.from_parameters({"Text": "Hi"}, SONIC_36)
    faster = SpeechRequest.from_parameters({"Text": "Hi", "Speed": "1.4"}, SONIC_36)
    assert faster.body(encoding="pcm_s16le", sample_rate=24000)["generation_config"]["speed"] == 1.4
    assert faster.cache_key(*KEY) != plain.cache_key(*KEY)


def test_a_flows_pronunciation_map_goes_to_a_sonic_3_6_package_as_an_object() -> None:
    request = SpeechRequest.from_parameters({"Text": "Hi Nguyen", "PronunciationMap": '{"Nguyen": "Win"}'}, SONIC_36)
    assert request.body(encoding="pcm_s16le", sample_rate=24000)["pronunciation_map"] == {"Nguyen": "Win"}


def test_the_deployments_pronunciation_map_is_used_when_the_flow_passes_none() -> None:
    settings = RequestSettings(50, VOICE, "en", sonic_model_id="sonic-3.5", sonic_pronunciation_map=(("AWS", "A-W-S"),))
    request = SpeechRequest.from_parameters({"Text": "AWS"}, settings)
    assert request.body(encoding="pcm_s16le", sample_rate=24000)["pronunciation_map"] == {"AWS": "A-W-S"}


def test_a_pronunciation_is_part_of_the_key_and_a_prompt_without_one_keeps_its_key() -> None:
    plain = SpeechRequest.from_parameters({"Text": "Hi Nguyen"}, SONIC_36)
    mapped = SpeechRequest.from_parameters({"Text": "Hi Nguyen", "PronunciationMap": '{"Nguyen": "Win"}'}, SONIC_36)
    assert mapped.cache_key(*KEY) != plain.cache_key(*KEY)
    assert plain.cache_key(*KEY) == SpeechRequest("Hi Nguyen", VOICE, "en").cache_key(*KEY)
    assert "pronunciation_map" not in plain.body(encoding="pcm_s16le", sample_rate=24000)


def test_the_same_map_written_in_another_order_is_the_same_prompt() -> None:
    one = SpeechRequest.from_parameters({"Text": "Hi", "PronunciationMap": '{"A": "ay", "B": "bee"}'}, SONIC_36)
    other = SpeechRequest.from_parameters({"Text": "Hi", "PronunciationMap": '{"B": "bee", "A": "ay"}'}, SONIC_36)
    assert one.cache_key(*KEY) == other.cache_key(*KEY)


def test_a_pronunciation_dictionary_goes_to_the_cartesia_api_and_into_the_key() -> None:
    named = SpeechRequest.from_parameters({"Text": "Hi", "PronunciationDictId": "pdict_abc-1"}, API)
    plain = SpeechRequest.from_parameters({"Text": "Hi"}, API)
    assert named.pronunciation_dict_id == "pdict_abc-1"
    assert named.cache_key(*KEY) != plain.cache_key(*KEY)


@pytest.mark.parametrize(
    ("parameters", "settings", "reason"),
    [
        ({"PronunciationMap": '{"Nguyen": "Win"}'}, SETTINGS, "needs Sonic 3.5 or later; the endpoint runs sonic-3"),
        ({"PronunciationMap": '{"Nguyen": "Win"}'}, API, "the Cartesia API takes PronunciationDictId"),
        ({"PronunciationDictId": "pdict_1"}, SONIC_36, "Sonic on SageMaker takes PronunciationMap"),
        ({"PronunciationDictId": "p dict"}, API, "PronunciationDictId must be a pronunciation dictionary id"),
        ({"PronunciationMap": "Nguyen=Win"}, SONIC_36, "must be a JSON object"),
        ({"PronunciationMap": '["Nguyen", "Win"]'}, SONIC_36, "must be a JSON object"),
        ({"PronunciationMap": '{"Nguyen": 1}'}, SONIC_36, "non-empty respelling"),
        ({"PronunciationMap": '{"Nguyen": " "}'}, SONIC_36, "non-empty respelling"),
        ({"PronunciationMap": '{"": "x"}'}, SONIC_36, "non-empty respelling"),
        ({"PronunciationMap": '{"\\ud800": "x"}'}, SONIC_36, "not valid Unicode"),
        ({"PronunciationMap": '{"w": "' + "é" * 8000 + '"}'}, SONIC_36, "16001 bytes"),
    ],
)
def test_a_bad_pronunciation_is_refused_with_a_reason(
    parameters: dict[str, str], settings: RequestSettings, reason: str
) -> None:
    with pytest.raises(InvalidInput, match=reason):
        SpeechRequest.from_parameters({"Text": "Hi", **parameters}, settings)


def test_a_map_of_exactly_16000_bytes_is_taken() -> None:
    request = SpeechRequest.from_parameters(
        {"Text": "Hi", "PronunciationMap": '{"w": "' + "x" * 15999 + '"}'}, SONIC_36
    )
    assert len(request.pronunciation_map[0][1]) == 15999
