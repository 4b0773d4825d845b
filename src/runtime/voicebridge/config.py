"""Configuration: one typed object, built from the environment once per container.

Every setting is an environment variable (the template sets them from its parameters); the README's configuration
table lists them all. ``Settings.from_env()`` validates them together so a bad deployment fails with one clear
message instead of at the first call that needs the value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from voicebridge.errors import ConfigurationError

SonicBackendName = Literal["sagemaker", "cartesia-api"]
SonicEncoding = Literal["pcm_s16le", "pcm_mulaw"]
ResamplerName = Literal["soxr", "numpy"]
ListenTracks = Literal["customer", "both"]
InkMode = Literal["turns", "manual"]
CARTESIA_API_URL = "https://api.cartesia.ai"
"""Used when CARTESIA_BASE_URL is empty: the SDK itself would take an empty variable as the URL."""
_SONIC_RATES = frozenset({8000, 16000, 22050, 24000, 44100, 48000})


class Settings(BaseModel):
    """Everything a function of this product can be configured with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Speak path
    sonic_backend: SonicBackendName = "sagemaker"
    sonic_endpoint_name: str = ""
    sonic_default_voice: str = "a0e99841-438c-4a64-b679-ae501e7d6091"
    sonic_default_language: str = "en"
    sonic_model_id: str = "sonic-3"
    sonic_encoding: SonicEncoding = "pcm_s16le"
    sonic_sample_rate: int = Field(default=24000, ge=8000, le=48000)
    sonic_resampler: ResamplerName = "soxr"
    sonic_max_text_chars: int = Field(default=1000, ge=1, le=10000)
    sonic_deadline_ms: int = Field(default=6500, ge=500, le=8000)
    sonic_max_attempts: int = Field(default=4, ge=1, le=10)
    cartesia_base_url: str = CARTESIA_API_URL
    sonic_base_url: str | None = None
    cartesia_api_key_secret_arn: str = ""
    prompt_bucket: str = ""
    prompt_prefix: str = "prompts/"
    aws_region: str = "us-east-1"

    # Listen path
    turn_table: str = ""
    turn_ttl_days: int = Field(default=7, ge=1, le=3650)
    transcribe_function_name: str = ""
    listen_tracks: ListenTracks = "customer"
    ink_model: str = "ink-2"
    ink_mode: InkMode = "turns"
    ink_language: str = "en"
    ink_turn_end_timeout_ms: int | None = Field(default=None, ge=640, le=11200)
    ink_frame_ms: int = Field(default=100, ge=20, le=500)
    consumer_handoff_ms: int = Field(default=30000, ge=5000, le=600000)
    kvs_read_timeout_ms: int = Field(default=3000, ge=500, le=30000)
    await_max_wait_ms: int = Field(default=7000, ge=100, le=7800)
    await_poll_interval_ms: int = Field(default=40, ge=10, le=1000)

    @field_validator("sonic_sample_rate")
    @classmethod
    def _rate_the_converter_takes(cls, value: int) -> int:
        if value not in _SONIC_RATES:
            raise ValueError(f"must be one of {', '.join(map(str, sorted(_SONIC_RATES)))}")
        return value

    @field_validator("prompt_prefix")
    @classmethod
    def _prefix_ends_with_slash(cls, value: str) -> str:
        return value if not value or value.endswith("/") else value + "/"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``environ`` (default: the process environment); raise ConfigurationError if invalid."""
        env = os.environ if environ is None else environ
        values: dict[str, str] = {}
        for name in cls.model_fields:
            key = name.upper()
            if key in env and env[key] != "":
                values[name] = env[key]
        if "aws_region" not in values:
            values["aws_region"] = env.get("AWS_DEFAULT_REGION") or "us-east-1"
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])).upper()}: {e['msg']}" for e in exc.errors())
            raise ConfigurationError(f"invalid configuration: {problems}") from exc
