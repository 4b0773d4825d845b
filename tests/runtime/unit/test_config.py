"""Configuration is read once from the environment and refuses bad values with one clear message."""

from __future__ import annotations

import pytest

from voicebridge.config import Settings
from voicebridge.errors import ConfigurationError


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
