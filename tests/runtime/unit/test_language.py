"""A contact's language: which Ink endpoint and model listen to it, and who ends its turns."""

from __future__ import annotations

import pytest

from voicebridge.errors import InvalidInput, LanguageNotServed
from voicebridge.language import Languages, for_language, language_tag

DEFAULTS = Languages(default="en", ink_mode="turns", ink_model="ink-2", end_of_turn_model="eager")


@pytest.mark.parametrize(
    ("raw", "tag"), [("es", "es"), ("ES-us", "es-US"), ("zh_hant_tw", "zh-Hant-TW"), ("yue", "yue")]
)
def test_a_language_tag_is_written_the_usual_way(raw: str, tag: str) -> None:
    assert language_tag(raw) == tag


@pytest.mark.parametrize("raw", ["", "e", "spanish", "es-", "es US", "1"])
def test_a_malformed_language_tag_is_invalid_input(raw: str) -> None:
    with pytest.raises(InvalidInput, match="Language must be a language tag"):
        language_tag(raw)


def test_english_is_listened_to_on_inks_turns_endpoint_which_ends_its_turns() -> None:
    listening = DEFAULTS.listening("en-US")
    assert (listening.mode, listening.model, listening.ends_turns) == ("turns", "ink-2", False)
    assert listening.turn_end_by == "ink"


def test_spanish_is_listened_to_on_the_manual_endpoint_with_ink_whisper_and_the_product_ends_its_turns() -> None:
    listening = DEFAULTS.listening("es-US")
    assert (listening.language, listening.base) == ("es-US", "es")
    assert (listening.mode, listening.model, listening.ends_turns) == ("manual", "ink-whisper", True)
    assert listening.turn_end_by == "voicebridge"


def test_another_language_keeps_an_ink_whisper_model_the_deployment_names() -> None:
    languages = Languages("en", "manual", "ink-whisper-2026-01-01", "eager")
    assert languages.listening("fr").model == "ink-whisper-2026-01-01"


def test_with_the_end_of_turn_model_off_silence_alone_ends_another_languages_turns() -> None:
    assert not Languages("en", "turns", "ink-2", "off").listening("es").ends_turns


def test_english_on_the_manual_endpoint_is_ended_by_the_model_only_when_asked() -> None:
    assert not Languages("en", "manual", "ink-whisper", "eager").listening("en").ends_turns
    assert Languages("en", "manual", "ink-whisper", "ends").listening("en").ends_turns


def test_no_language_means_the_deployments_default() -> None:
    assert Languages("es", "turns", "ink-2", "eager").listening(None).language == "es"


def test_a_language_no_ink_model_transcribes_is_not_served() -> None:
    with pytest.raises(LanguageNotServed, match="no Ink model transcribes 'tlh'") as refused:
        DEFAULTS.listening("tlh")
    assert refused.value.code == "LanguageNotServed"


def test_what_a_map_names_for_a_language_is_found_by_its_tag_then_its_primary_language() -> None:
    voices = {"es-MX": "mexican", "es": "spanish"}
    assert for_language(voices, "es-MX") == "mexican"
    assert for_language(voices, "es-US") == "spanish"
    assert for_language(voices, "fr") is None
