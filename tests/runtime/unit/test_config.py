"""Configuration is read once from the environment and refuses bad values with one clear message."""

from __future__ import annotations

import json
import re

import pytest

from voicebridge.config import Settings
from voicebridge.errors import ConfigurationError
from voicebridge.language import TURN_END_POLICIES, TurnEndPolicy


def test_environment_variables_map_to_settings() -> None:
    settings = Settings.from_env(
        {
            "SONIC_ENDPOINT_NAME": "sonic-prod",
            "SONIC_SAMPLE_RATE": "16000",
            "PROMPT_PREFIX": "p",
            "AWS_REGION": "eu-west-2",
        }
    )
    assert (
        settings.sonic_endpoint_name,
        settings.sonic_sample_rate,
        settings.prompt_prefix,
        settings.aws_region,
    ) == ("sonic-prod", 16000, "p/", "eu-west-2")


def test_empty_variables_keep_the_default() -> None:
    assert Settings.from_env({"CARTESIA_BASE_URL": ""}).cartesia_base_url == "https://api.cartesia.ai"


def test_region_falls_back_to_the_default_region_variable() -> None:
    assert Settings.from_env({"AWS_DEFAULT_REGION": "ap-southeast-2"}).aws_region == "ap-southeast-2"


def test_bad_values_are_named_in_one_error() -> None:
    with pytest.raises(ConfigurationError, match=r"SONIC_BACKEND.*SONIC_DEADLINE_MS"):
        Settings.from_env({"SONIC_BACKEND": "polly", "SONIC_DEADLINE_MS": "90000"})


def test_the_cartesia_api_key_travels_only_over_https_but_to_the_local_cloud() -> None:
    with pytest.raises(ConfigurationError, match="CARTESIA_BASE_URL: must be an https:// URL"):
        Settings.from_env({"CARTESIA_BASE_URL": "http://api.cartesia.ai"})
    with pytest.raises(ConfigurationError, match="SONIC_BASE_URL: must be an https:// URL"):
        Settings.from_env({"SONIC_BACKEND": "cartesia-api", "SONIC_BASE_URL": "http://sonic.internal"})
    assert Settings.from_env({"CARTESIA_BASE_URL": "http://127.0.0.1:4569"}).cartesia_base_url.startswith("http://")
    assert Settings.from_env({"SONIC_BACKEND": "cartesia-api", "SONIC_BASE_URL": "https://sonic.example.com"})


def test_the_pii_entity_types_are_comprehends_own() -> None:
    import botocore.session

    from voicebridge.config import PII_ENTITY_TYPES

    model = botocore.session.get_session().get_service_model("comprehend")

    assert frozenset(model.shape_for("PiiEntityType").enum) == PII_ENTITY_TYPES  # type: ignore[attr-defined]


def test_redacted_entity_types_are_read_as_a_list_and_an_unknown_one_is_refused() -> None:
    assert Settings.from_env({"REDACT_ENTITY_TYPES": "ssn, Email"}).redact_entity_types == ("SSN", "EMAIL")
    with pytest.raises(ConfigurationError, match="REDACT_ENTITY_TYPES: CARD_NUMBER is not a PII entity type"):
        Settings.from_env({"REDACT_ENTITY_TYPES": "CARD_NUMBER"})


def test_comprehend_redaction_needs_a_language_comprehend_finds_pii_in() -> None:
    manual = {"INK_MODE": "manual", "INK_MODEL": "ink-whisper"}
    spanish = Settings.from_env({"REDACT_TRANSCRIPTS": "comprehend", "INK_LANGUAGE": "es", **manual})
    assert spanish.redact_transcripts == "comprehend"
    with pytest.raises(ConfigurationError, match="REDACT_TRANSCRIPTS: comprehend finds PII in English and Spanish"):
        Settings.from_env({"REDACT_TRANSCRIPTS": "comprehend", "INK_LANGUAGE": "de", **manual})


# --- the Sonic model a SageMaker endpoint or container runs --------------------------------------------------------


@pytest.mark.parametrize("model", ["sonic-3", "sonic-3.5", "sonic-3.6"])
def test_an_endpoint_may_run_each_package_cartesia_publishes(model: str) -> None:
    assert Settings.from_env({"SONIC_MODEL_ID": model}).sonic_model_id == model


def test_an_endpoint_running_a_package_cartesia_does_not_publish_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="SONIC_MODEL_ID: must name the model package the endpoint runs"):
        Settings.from_env({"SONIC_MODEL_ID": "sonic-4"})


def test_the_cartesia_api_takes_any_model_id() -> None:
    settings = Settings.from_env({"SONIC_BACKEND": "cartesia-api", "SONIC_MODEL_ID": "sonic-3-2026-01-12"})
    assert settings.sonic_model_id == "sonic-3-2026-01-12"


def test_the_settings_check_warns_that_speed_and_volume_do_nothing_on_sonic_3_5() -> None:
    (notice,) = Settings.from_env({"SONIC_MODEL_ID": "sonic-3.5"}).notices
    assert "disabled speed and volume on sonic-3.5" in notice and "Speed and Volume are ignored" in notice
    assert Settings.from_env({"SONIC_MODEL_ID": "sonic-3.6"}).notices == ()


def test_a_pronunciation_map_is_read_as_sorted_pairs() -> None:
    settings = Settings.from_env(
        {"SONIC_MODEL_ID": "sonic-3.6", "SONIC_PRONUNCIATION_MAP": '{"Nguyen": "Win", "AWS": "A-W-S"}'}
    )
    assert settings.sonic_pronunciation_map == (("AWS", "A-W-S"), ("Nguyen", "Win"))


@pytest.mark.parametrize(
    ("environment", "reason"),
    [
        ({"SONIC_PRONUNCIATION_MAP": '{"Nguyen": "Win"}'}, "SONIC_PRONUNCIATION_MAP: needs Sonic 3.5 or later"),
        (
            {"SONIC_BACKEND": "cartesia-api", "SONIC_PRONUNCIATION_MAP": '{"Nguyen": "Win"}'},
            "SONIC_PRONUNCIATION_MAP: the Cartesia API takes SONIC_PRONUNCIATION_DICT_ID",
        ),
        ({"SONIC_MODEL_ID": "sonic-3.5", "SONIC_PRONUNCIATION_MAP": "Nguyen=Win"}, "must be a JSON object"),
        (
            {"SONIC_MODEL_ID": "sonic-3.5", "SONIC_PRONUNCIATION_MAP": '{"w": "' + "x" * 16000 + '"}'},
            "16001 bytes",
        ),
        ({"SONIC_PRONUNCIATION_DICT_ID": "pdict_1"}, "SONIC_PRONUNCIATION_DICT_ID: is for the Cartesia API"),
        (
            {"SONIC_BACKEND": "cartesia-api", "SONIC_PRONUNCIATION_DICT_ID": "a b"},
            "SONIC_PRONUNCIATION_DICT_ID: must be a pronunciation dictionary id",
        ),
    ],
)
def test_a_pronunciation_setting_the_model_cannot_take_is_refused(environment: dict[str, str], reason: str) -> None:
    with pytest.raises(ConfigurationError, match=reason):
        Settings.from_env(environment)


# --- Ink --------------------------------------------------------------------------------------------------------


def test_keyterms_are_read_trimmed_and_each_once() -> None:
    assert Settings.from_env({"INK_KEYTERMS": " Acme Plus , Zorblax,,Acme  Plus"}).keyterms_for("es") == (
        "Acme Plus",
        "Zorblax",
    )


def test_keyterms_by_language_are_each_languages_and_the_rest_take_every_languages() -> None:
    keyterms = {"es-US": "Cuenta Nómina", "en": ["Acme Plus", "Zorblax"], "*": "Acme"}
    settings = Settings.from_env({"INK_KEYTERMS": json.dumps(keyterms)})
    assert settings.keyterms_for("es-US") == ("Cuenta Nómina",)
    assert settings.keyterms_for("en-GB") == ("Acme Plus", "Zorblax")
    assert settings.keyterms_for("fr") == ("Acme",)


@pytest.mark.parametrize(
    ("keyterms", "reason"),
    [
        ('{"es": 1}', "the keyterms for es must be text or a list of texts"),
        ('{"1": "x"}', "'1' is not a language tag"),
        ("{1}", "is not JSON"),
        (json.dumps({"es": [f"t{n}" for n in range(101)]}), "for es has 101 terms; Ink takes at most 100"),
    ],
)
def test_malformed_keyterms_by_language_are_refused(keyterms: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=f"INK_KEYTERMS: {re.escape(reason)}"):
        Settings.from_env({"INK_KEYTERMS": keyterms})


@pytest.mark.parametrize(
    ("keyterms", "reason"),
    [
        (",".join(f"term{n}" for n in range(101)), "has 101 terms; Ink takes at most 100"),
        (",".join(["x" * 600, "y" * 601]), "has 1201 characters of terms; Ink takes at most 1200"),
    ],
)
def test_keyterms_beyond_inks_limits_are_refused(keyterms: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=f"INK_KEYTERMS: {reason}"):
        Settings.from_env({"INK_KEYTERMS": keyterms})


def test_a_default_language_no_ink_model_transcribes_is_refused() -> None:
    with pytest.raises(ConfigurationError, match=r"INK_LANGUAGE: no Ink model transcribes 'xx'"):
        Settings.from_env({"INK_LANGUAGE": "xx"})


def test_a_default_language_other_than_english_is_taken_with_the_turns_endpoint_for_english() -> None:
    settings = Settings.from_env({"INK_LANGUAGE": "es-US"})
    assert settings.ink_mode == "turns"
    assert settings.languages.listening(None).mode == "manual"


@pytest.mark.parametrize("language", ["en", "en-GB", "EN-us"])
def test_english_in_any_locale_is_taken_on_the_turns_endpoint(language: str) -> None:
    assert Settings.from_env({"INK_LANGUAGE": language}).ink_language == language


def test_another_language_is_taken_on_the_manual_endpoint() -> None:
    assert (
        Settings.from_env({"INK_LANGUAGE": "de", "INK_MODE": "manual", "INK_MODEL": "ink-whisper"}).ink_language == "de"
    )


def test_a_voice_map_is_read_from_pairs_or_json_by_language_tag() -> None:
    spanish, french = "5c5ad5e7-1020-476b-8b91-fdcbe9cc313c", "a8a1eb38-5f15-4c1d-8722-7ac0f329727d"
    pairs = Settings.from_env({"SONIC_VOICES": f"es-us={spanish}, fr={french}"}).sonic_voices
    assert pairs == (("es-US", spanish), ("fr", french))
    assert Settings.from_env({"SONIC_VOICES": json.dumps({"es-US": spanish, "fr": french})}).sonic_voices == pairs


@pytest.mark.parametrize(
    ("voices", "reason"),
    [
        ("es", "'es' is not language=voice-id"),
        ("es=not-a-voice", "the voice for es is not a Cartesia voice id"),
        ("1=5c5ad5e7-1020-476b-8b91-fdcbe9cc313c", "'1' is not a language tag"),
        ("es=5c5ad5e7-1020-476b-8b91-fdcbe9cc313c,ES=5c5ad5e7-1020-476b-8b91-fdcbe9cc313c", "names es twice"),
        ('{"es": 1}', "must be a JSON object of language tags to voice ids"),
        ("{es", "is not JSON"),
    ],
)
def test_a_malformed_voice_map_is_refused(voices: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=f"SONIC_VOICES: {re.escape(reason)}"):
        Settings.from_env({"SONIC_VOICES": voices})


def test_the_agents_own_lines_are_read_by_language_tag_in_the_order_it_says_them() -> None:
    given = {"es-us": {"hold": " Un momento. ", "greeting": "¡Hola!"}, "fr": {"goodbye": "Au revoir !"}}

    lines = Settings.from_env({"A2A_LINES": json.dumps(given)}).a2a_lines

    assert lines == (
        ("es-US", (("greeting", "¡Hola!"), ("hold", "Un momento."))),
        ("fr", (("goodbye", "Au revoir !"),)),
    )


@pytest.mark.parametrize(
    ("lines", "reason"),
    [
        ("{es", "is not JSON"),
        ('["es"]', "must be a JSON object of language tags to lines"),
        ('{"1": {"greeting": "Hola"}}', "'1' is not a language tag"),
        ('{"es": {"greeting": "Hola"}, "ES": {"hold": "Un momento."}}', "names es twice"),
        ('{"es": "Hola"}', "the lines for es must be a JSON object giving any of greeting, reprompt"),
        ('{"es": {}}', "the lines for es must be a JSON object"),
        ('{"es": {"welcome": "Hola"}}', "'welcome' (for es) is not a line the agent says: greeting, reprompt"),
        ('{"es": {"greeting": "  "}}', "the greeting line for es must be text, not empty"),
        ('{"es": {"greeting": 1}}', "the greeting line for es must be text, not empty"),
    ],
)
def test_malformed_agent_lines_are_refused(lines: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=f"A2A_LINES: {re.escape(reason)}"):
        Settings.from_env({"A2A_LINES": lines})


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("builtin", "spoken numbers in en/es only"),
        ("comprehend", "Comprehend finds CREDIT_DEBIT_NUMBER"),
        ("off", "nothing is redacted"),
    ],
)
def test_the_settings_check_says_what_is_redacted_in_each_language(mode: str, said: str) -> None:
    assert said in Settings.from_env({"REDACT_TRANSCRIPTS": mode}).redaction_by_language


# --- Bedrock ----------------------------------------------------------------------------------------------------


def test_latency_optimized_inference_is_asked_for_by_default_and_may_be_turned_off() -> None:
    assert Settings.from_env({}).bedrock_latency == "optimized"
    assert Settings.from_env({"BEDROCK_LATENCY": "standard"}).bedrock_latency == "standard"
    with pytest.raises(ConfigurationError, match="BEDROCK_LATENCY: must be 'optimized' or 'standard'"):
        Settings.from_env({"BEDROCK_LATENCY": "fast"})


def test_turn_end_policies_are_read_by_language_tag_and_any_other_language_keeps_the_built_in_one() -> None:
    document = {"fr-CA": {"threshold": 0.9, "ask_at_ms": 0, "quiet_ms": 600, "silence_ms": 1000}}
    settings = Settings.from_env({"TURN_END_POLICY": json.dumps(document)})
    policies = dict(settings.turn_end_policy)
    assert policies["fr-CA"] == TurnEndPolicy(silence_ms=1000, threshold=0.9, ask_at_ms=0, quiet_ms=600)
    assert policies["*"] == dict(TURN_END_POLICIES)["*"]
    assert settings.languages.listening("fr-CA").policy == policies["fr-CA"]
    assert settings.languages.listening("de").policy == policies["*"]


@pytest.mark.parametrize(
    ("policy", "reason"),
    [
        ('{"es": {"threshold": 0.9}}', "the policy for es must be an object with silence_ms"),
        ('{"es": {"silence_ms": 900, "quiet": 1}}', "the policy for es has no quiet"),
        ('{"es": {"silence_ms": 90}}', "silence_ms for es must be a whole number from 200 to 10000"),
        ('{"es": {"silence_ms": 900, "threshold": 1.5}}', "threshold for es must be a number from 0 to below 1"),
        (
            '{"es": {"silence_ms": 900, "threshold": 0.9, "quiet_ms": 1000}}',
            "for es ask_at_ms <= quiet_ms < silence_ms must hold",
        ),
        ('{"spanish": {"silence_ms": 900}}', "'spanish' is not a language tag"),
        ('["es"]', "must be a JSON object of language tags to policies"),
        ("{es", "is not JSON"),
    ],
)
def test_malformed_turn_end_policies_are_refused(policy: str, reason: str) -> None:
    with pytest.raises(ConfigurationError, match=f"TURN_END_POLICY: {re.escape(reason)}"):
        Settings.from_env({"TURN_END_POLICY": policy})


def test_the_eager_end_settings_place_the_english_eager_end() -> None:
    settings = Settings.from_env({"END_OF_TURN_EAGER_THRESHOLD": "0.8", "END_OF_TURN_EAGER_ASK_AT_MS": "150"})
    policy = settings.languages.listening("en").policy
    assert (policy.threshold, policy.ask_at_ms) == (0.8, 150)


def test_the_lex_bots_other_locales_are_read_and_a_malformed_one_is_refused() -> None:
    assert Settings.from_env({"LEX_LOCALE_IDS": "es_US, es_419"}).lex_locale_ids == ("es_US", "es_419")
    with pytest.raises(ConfigurationError, match="LEX_LOCALE_IDS: 'es-US' is not a Lex locale id"):
        Settings.from_env({"LEX_LOCALE_IDS": "es-US"})
