"""What a flow asks Sonic to say, validated, and the request body Sonic receives.

Sonic's generation request (PROTOCOLS.md §5; one model per SageMaker package, so no ``model_id`` there)::

    {"context_id": "…", "transcript": "…", "voice": {"mode": "id", "id": "<uuid>"},
     "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
     "language": "en", "generation_config": {"speed": 1.0, "volume": 1.0, "emotion": "…"}}
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from voicebridge.config import Settings
from voicebridge.errors import InvalidInput

CACHE_FORMAT_VERSION = 1
"""Bump when the conversion changes the bytes of a prompt, so stale prompts are never served."""

_VOICE_ID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_LANGUAGE = re.compile(r"^[a-z]{2}$")
_EMOTION = re.compile(r"^[a-z][a-z_:]{0,31}$")
SPEED_RANGE = (0.6, 1.5)
VOLUME_RANGE = (0.5, 2.0)


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """One prompt to synthesize: the text and every control that changes the audio."""

    text: str
    voice: str
    language: str
    speed: float = 1.0
    volume: float = 1.0
    emotion: str | None = None

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], settings: Settings) -> SpeechRequest:
        """Build from a Connect block's parameters (all strings), with defaults from ``settings``."""
        text = parameters.get("Text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("Text is required and must not be empty")
        prefix = parameters.get("Prefix") or ""
        if not isinstance(prefix, str):
            raise InvalidInput("Prefix must be a string")
        full = " ".join((prefix + text).split())
        if len(full) > settings.sonic_max_text_chars:
            raise InvalidInput(f"Text is {len(full)} characters; the limit is {settings.sonic_max_text_chars}")
        voice = _string(parameters, "Voice") or settings.sonic_default_voice
        if not _VOICE_ID.match(voice):
            raise InvalidInput("Voice must be a Cartesia voice id (a UUID)")
        language = _string(parameters, "Language") or settings.sonic_default_language
        if not _LANGUAGE.match(language):
            raise InvalidInput("Language must be a two-letter language code such as 'en' or 'pt'")
        emotion = _string(parameters, "Emotion")
        if emotion is not None and not _EMOTION.match(emotion):
            raise InvalidInput("Emotion must be a Sonic emotion name such as 'calm' or 'excited'")
        return cls(
            text=full,
            voice=voice,
            language=language,
            speed=_ratio(parameters, "Speed", SPEED_RANGE),
            volume=_ratio(parameters, "Volume", VOLUME_RANGE),
            emotion=emotion,
        )

    def cache_key(self, model_identity: str, output_identity: str) -> str:
        """Content hash of everything that changes the audio: text, controls, model, and output conversion."""
        material = {
            "v": CACHE_FORMAT_VERSION,
            "model": model_identity,
            "output": output_identity,
            **asdict(self),
        }
        return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def body(self, *, encoding: str, sample_rate: int, context_id: str | None = None) -> dict[str, Any]:
        """Sonic's generation request for this prompt."""
        generation: dict[str, Any] = {"speed": self.speed, "volume": self.volume}
        if self.emotion:
            generation["emotion"] = self.emotion
        return {
            "context_id": context_id or uuid.uuid4().hex,
            "transcript": self.text,
            "voice": {"mode": "id", "id": self.voice},
            "output_format": {"container": "raw", "encoding": encoding, "sample_rate": sample_rate},
            "language": self.language,
            "generation_config": generation,
            "add_timestamps": False,
        }


def _string(parameters: Mapping[str, Any], name: str) -> str | None:
    value = parameters.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value.strip()


def _ratio(parameters: Mapping[str, Any], name: str, bounds: tuple[float, float]) -> float:
    raw = _string(parameters, name)
    if raw is None:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a number between {bounds[0]} and {bounds[1]}") from None
    if not bounds[0] <= value <= bounds[1]:
        raise InvalidInput(f"{name} must be between {bounds[0]} and {bounds[1]}")
    return value
