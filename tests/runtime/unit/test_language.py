"""A contact's language: which Ink endpoint and model listen to it, and who ends its turns."""

from __future__ import annotations

import pytest

from voicebridge.errors import InvalidInput, LanguageNotServed
from voicebridge.language import Languages, TurnEndPolicy, for_language, language_tag

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
    assert (listening.mode, listening.model) == ("manual", "ink-whisper")
    assert listening.turn_end_by == "voicebridge"


def test_another_language_keeps_an_ink_whisper_model_the_deployment_names() -> None:
    languages = Languages("en", "manual", "ink-whisper-2026-01-01", "eager")
    assert languages.listening("fr").model == "ink-whisper-2026-01-01"


def test_with_the_end_of_turn_model_off_silence_alone_ends_another_languages_turns() -> None:
    assert not Languages("en", "turns", "ink-2", "off").listening("es").ends_turns


def test_english_on_the_manual_endpoint_is_ended_by_the_model_only_when_asked() -> None:
    policies = (("*", TurnEndPolicy(silence_ms=900, threshold=0.9, quiet_ms=600)),)
    assert not Languages("en", "manual", "ink-whisper", "eager", policies).listening("en").ends_turns
    assert Languages("en", "manual", "ink-whisper", "ends", policies).listening("en").ends_turns


def test_by_default_silence_alone_ends_english_and_spanish_turns_as_the_benchmark_chose() -> None:
    for language in ("en", "es"):
        listening = Languages("en", "manual", "ink-whisper", "ends").listening(language)
        assert (listening.ends_turns, listening.runs_model, listening.policy.silence_ms) == (False, False, 900)


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


def test_a_language_whose_policy_has_no_threshold_is_ended_by_silence_alone_and_runs_no_model() -> None:
    languages = Languages("en", "turns", "ink-2", "eager", policies=(("*", TurnEndPolicy(silence_ms=950)),))
    listening = languages.listening("es")
    assert (listening.ends_turns, listening.runs_model, listening.policy.silence_ms) == (False, False, 950)


def test_a_languages_own_policy_lets_the_model_end_its_turns() -> None:
    own = TurnEndPolicy(silence_ms=900, threshold=0.9, ask_at_ms=0, quiet_ms=600)
    languages = Languages("en", "turns", "ink-2", "eager", policies=(("*", TurnEndPolicy(900)), ("fr", own)))
    assert languages.listening("fr-CA").policy == own
    assert languages.listening("fr-CA").ends_turns
    assert not languages.listening("de").ends_turns


def test_english_on_the_turns_endpoint_takes_the_eager_policy_unless_the_model_is_off() -> None:
    eager = TurnEndPolicy(silence_ms=0, threshold=0.95)
    assert Languages("en", "turns", "ink-2", "eager", eager=eager).listening("en").runs_model
    assert not Languages("en", "turns", "ink-2", "off", eager=eager).listening("en").runs_model


def test_the_settings_check_says_what_ends_turns_in_each_language() -> None:
    own = TurnEndPolicy(silence_ms=900, threshold=0.9, ask_at_ms=0, quiet_ms=600)
    policies, eager = (("*", TurnEndPolicy(1000)), ("fr", own)), TurnEndPolicy(silence_ms=0, threshold=0.5)
    languages = Languages("en", "turns", "ink-2", "eager", policies, eager)
    assert languages.ends_by_language() == (
        "en: Ink's turn end (the model's complete above 0.5 (asked 0 ms into the silence) starts a speculative "
        "reply); fr: the model's complete above 0.9 (asked 0 ms into the silence, after 600 ms of quiet), or 900 ms "
        "of silence; any other: 1000 ms of silence alone"
    )


def test_a_language_ink_transcribes_but_sonic_does_not_speak_is_not_served() -> None:
    with pytest.raises(LanguageNotServed, match="Sonic does not speak 'cy-GB'"):
        DEFAULTS.listening("cy-GB")
