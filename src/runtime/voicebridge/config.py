"""Configuration: one typed object, built from the environment once per container.

Every setting is an environment variable (the template sets them from its parameters); docs/configuration.md's
tables list them all. ``Settings.from_env()`` validates them together so a bad deployment fails with one clear
message instead of at the first call that needs the value::

    >>> Settings.from_env({"SONIC_SAMPLE_RATE": "16000"}).sonic_sample_rate
    16000
    >>> Settings(sonic_deadline_ms=90000)
    Traceback (most recent call last):
    voicebridge.errors.ConfigurationError: invalid configuration: SONIC_DEADLINE_MS: must be at most 8000

The standard library does the checking: every Connect-facing function reads this module while Lambda initializes
it, and a validation library would cost more import time than such a function's whole budget.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from voicebridge.errors import ConfigurationError

SonicBackendName = Literal["sagemaker", "cartesia-api"]
SonicEncoding = Literal["pcm_s16le", "pcm_mulaw"]
ResamplerName = Literal["soxr", "numpy"]
ListenTracks = Literal["customer", "both"]
InkMode = Literal["turns", "manual"]
InkCatchUp = Literal["skip-silence", "off"]
"""How an Ink session behind the stream gets back to live: by dropping long silences from the backlog, or not."""
CARTESIA_API_URL = "https://api.cartesia.ai"
"""Used when CARTESIA_BASE_URL is empty: the SDK itself would take an empty variable as the URL."""
_SONIC_RATES = frozenset({8000, 16000, 22050, 24000, 44100, 48000})
_WHOLE_NUMBER = re.compile(r"[+-]?\d+(?:_\d+)*(?:\.0*)?")
"""What a variable may hold for a whole-number setting: ``16000``, ``16_000``, ``+16000`` or ``16000.0``."""

Check = Callable[[Any], Any]
"""A setting's check: the value as the setting holds it, or ValueError saying what is wrong."""


def _text(value: Any) -> str:
    """The check of a plain text setting."""
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return value


def _optional_text(value: Any) -> str | None:
    return None if value is None else _text(value)


def _prefix(value: Any) -> str:
    text = _text(value)
    return text if not text or text.endswith("/") else text + "/"


def _checked_by(check: Check) -> dict[str, Check]:
    """A field's metadata naming its check (a field without one is plain text)."""
    return {"check": check}


def _one_of(choices: object) -> dict[str, Check]:
    allowed = get_args(choices)

    def check(value: Any) -> str:
        text = _text(value)
        if text not in allowed:
            raise ValueError(f"must be {' or '.join(repr(choice) for choice in allowed)}")
        return text

    return _checked_by(check)


def _whole(low: int, high: int, *, among: frozenset[int] | None = None, optional: bool = False) -> dict[str, Check]:
    def check(value: Any) -> int | None:
        if value is None and optional:
            return None
        number = _whole_number(value)
        if number < low:
            raise ValueError(f"must be at least {low}")
        if number > high:
            raise ValueError(f"must be at most {high}")
        if among is not None and number not in among:
            raise ValueError(f"must be one of {', '.join(map(str, sorted(among)))}")
        return number

    return _checked_by(check)


def _whole_number(value: Any) -> int:
    # The environment gives text: a whole-number setting keeps the number it names.
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value.strip()):
        return int(value.strip().split(".")[0])
    raise ValueError("must be a whole number")


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a function of this product can be configured with; a bad value raises ConfigurationError."""

    # Speak path
    sonic_backend: SonicBackendName = field(default="sagemaker", metadata=_one_of(SonicBackendName))
    sonic_endpoint_name: str = ""
    sonic_default_voice: str = "a0e99841-438c-4a64-b679-ae501e7d6091"
    sonic_default_language: str = "en"
    sonic_model_id: str = "sonic-3"
    sonic_encoding: SonicEncoding = field(default="pcm_s16le", metadata=_one_of(SonicEncoding))
    sonic_sample_rate: int = field(default=24000, metadata=_whole(8000, 48000, among=_SONIC_RATES))
    sonic_resampler: ResamplerName = field(default="soxr", metadata=_one_of(ResamplerName))
    sonic_max_text_chars: int = field(default=1000, metadata=_whole(1, 10000))
    sonic_deadline_ms: int = field(default=6500, metadata=_whole(500, 8000))
    sonic_max_attempts: int = field(default=4, metadata=_whole(1, 10))
    cartesia_base_url: str = CARTESIA_API_URL
    sonic_base_url: str | None = field(default=None, metadata=_checked_by(_optional_text))
    cartesia_api_key_secret_arn: str = ""
    prompt_bucket: str = ""
    prompt_prefix: str = field(default="prompts/", metadata=_checked_by(_prefix))
    aws_region: str = "us-east-1"

    # Listen path
    turn_table: str = ""
    turn_ttl_days: int = field(default=7, metadata=_whole(1, 3650))
    transcribe_function_name: str = ""
    listen_tracks: ListenTracks = field(default="customer", metadata=_one_of(ListenTracks))
    ink_model: str = "ink-2"
    ink_mode: InkMode = field(default="turns", metadata=_one_of(InkMode))
    ink_language: str = "en"
    ink_turn_end_timeout_ms: int | None = field(default=None, metadata=_whole(640, 11200, optional=True))
    ink_frame_ms: int = field(default=100, metadata=_whole(20, 500))
    consumer_handoff_ms: int = field(default=30000, metadata=_whole(5000, 600000))
    ink_catch_up: InkCatchUp = field(default="skip-silence", metadata=_one_of(InkCatchUp))
    kvs_read_timeout_ms: int = field(default=3000, metadata=_whole(500, 30000))
    listen_retry_limit_ms: int = field(default=600_000, metadata=_whole(10_000, 3_600_000))
    await_max_wait_ms: int = field(default=7000, metadata=_whole(100, 7800))
    await_poll_interval_ms: int = field(default=40, metadata=_whole(10, 1000))

    def __post_init__(self) -> None:
        problems: list[str] = []
        for setting in fields(self):
            check: Check = setting.metadata.get("check", _text)
            try:
                object.__setattr__(self, setting.name, check(getattr(self, setting.name)))
            except ValueError as exc:
                problems.append(f"{setting.name.upper()}: {exc}")
        if problems:
            raise ConfigurationError(f"invalid configuration: {'; '.join(problems)}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read settings from ``environ`` (default: the process environment); raise ConfigurationError if invalid."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for setting in fields(cls):
            key = setting.name.upper()
            if key in env and env[key] != "":
                values[setting.name] = env[key]
        if "aws_region" not in values:
            values["aws_region"] = env.get("AWS_DEFAULT_REGION") or "us-east-1"
        return cls(**values)
