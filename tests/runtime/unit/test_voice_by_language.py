"""A contact's replies are spoken in its language, with the voice SONIC_VOICES names for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from voicebridge import container
from voicebridge.sonic.request import SpeechRequest

SPANISH = "5c5ad5e7-1020-476b-8b91-fdcbe9cc313c"
DEFAULT = "a0e99841-438c-4a64-b679-ae501e7d6091"


@pytest.fixture(autouse=True)
def deployment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("SONIC_VOICES", f"es={SPANISH}")
    monkeypatch.setenv("SONIC_DEFAULT_LANGUAGE", "en-US")
    monkeypatch.setenv("SONIC_MODEL_ID", "sonic-3.5")
    container.reset()
    yield
    container.reset()


def spoken(language: str) -> SpeechRequest:
    return SpeechRequest.from_parameters({"Text": "Hola."}, container.spoken_in(language))


def test_a_spanish_contact_is_spoken_to_in_spanish_with_the_voice_mapped_for_spanish() -> None:
    request = spoken("es-US")
    assert (request.language, request.voice) == ("es", SPANISH)


def test_a_contact_in_the_default_language_keeps_its_locale_and_the_default_voice() -> None:
    request = spoken("en")
    assert (request.language, request.voice) == ("en-US", DEFAULT)


def test_a_language_the_map_does_not_name_is_spoken_with_the_default_voice() -> None:
    request = spoken("fr-CA")
    assert (request.language, request.voice) == ("fr", DEFAULT)


def test_a_flows_own_voice_wins_over_the_map() -> None:
    other = "f786b574-daa5-4673-aa0c-cbe3e8534c02"
    request = SpeechRequest.from_parameters({"Text": "Hola.", "Voice": other}, container.spoken_in("es"))
    assert request.voice == other


def test_a_flows_language_picks_its_voice_from_the_map() -> None:
    request = SpeechRequest.from_parameters({"Text": "Hola.", "Language": "es"}, container.request_settings())
    assert (request.language, request.voice) == ("es", SPANISH)
