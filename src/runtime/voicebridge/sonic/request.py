"""What a flow asks Sonic to say, validated, and the request body Sonic receives.

Sonic's generation request (docs/protocols.md, *Sonic on SageMaker*; one model per package, so no ``model_id``)::

    {"context_id": "…", "transcript": "…", "voice": {"mode": "id", "id": "<uuid>"},
     "output_format": {"container": "raw", "encoding": "pcm_s16le", "sample_rate": 24000},
     "language": "en", "generation_config": {"speed": 1.0, "volume": 1.0, "emotion": "…"},
     "pronunciation_map"?: {"Nguyen": "Win"}}

``language`` is a two-letter code (``en``) or a language-REGION locale (``pt-BR``), passed through as the flow
wrote it, case aside. Which of them the model takes is the model's business: per ``cartesia-ai/cartesia-aws``
(``sonic-3-jumpstart/README.md``, ``sonic-3-5-jumpstart/README.md``, Input Parameters), Sonic 3 requires a two-letter
``language`` while Sonic 3.5 makes it optional and also takes ``en-US``, ``de-DE``, ``es-MX``, ``fr-FR``, ``hi-IN``,
``it-IT``, ``ja-JP``, ``nl-NL`` and ``pt-BR``. A model that refuses a locale answers 422, which reaches the flow as
``InvalidInput`` with the model's reason. Sonic 3.6 has the request of 3.5 (``sonic-3-6-jumpstart/README.md``).

What the model does with speed, volume and a pronunciation map is :mod:`voicebridge.sonic.models`'s: a control the
model ignores is sent at its default and is not part of the cache key, and a pronunciation of the wrong kind for the
backend is ``InvalidInput``.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from voicebridge.connect.events import is_unicode
from voicebridge.errors import InvalidInput
from voicebridge.language import for_language
from voicebridge.sonic.models import PRONUNCIATION_DICT_ID, VOICE_ID, parse_pronunciation_map, sonic_model

CACHE_FORMAT_VERSION = 1
"""Bump when the conversion changes the bytes of a prompt, so stale prompts are never served."""

_LANGUAGE = re.compile(r"(?P<language>[a-z]{2})(?:-(?P<region>[a-z]{2}))?", re.IGNORECASE | re.ASCII)
_EMOTION = re.compile(r"[a-z][a-z_:]{0,31}")
SPEED_RANGE = (0.6, 1.5)
VOLUME_RANGE = (0.5, 2.0)


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """What a speech request reads of the settings: its length limit and the defaults a flow may leave out (built
    by :mod:`voicebridge.container`)."""

    sonic_max_text_chars: int
    sonic_default_voice: str
    sonic_default_language: str
    sonic_backend: str = "sagemaker"
    sonic_model_id: str = "sonic-3"
    sonic_pronunciation_map: tuple[tuple[str, str], ...] = ()
    """The deployment's pronunciation map (SageMaker or a container); a flow's ``PronunciationMap`` replaces it."""
    sonic_pronunciation_dict_id: str = ""
    """The deployment's pronunciation dictionary (the Cartesia API); a flow's ``PronunciationDictId`` replaces it."""
    sonic_voices: tuple[tuple[str, str], ...] = ()
    """The voice each language is spoken with when the request names none (``SONIC_VOICES``)."""


@dataclass(frozen=True, slots=True)
class SpeechRequest:
    """One prompt to synthesize: the text and every control that changes the audio."""

    text: str
    voice: str
    language: str
    speed: float = 1.0
    volume: float = 1.0
    emotion: str | None = None
    pronunciation_map: tuple[tuple[str, str], ...] = ()
    pronunciation_dict_id: str = ""

    @classmethod
    def from_parameters(cls, parameters: Mapping[str, Any], settings: RequestSettings) -> SpeechRequest:
        """Build from a Connect block's parameters (all strings), with defaults from ``settings``."""
        text = parameters.get("Text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput("Text is required and must not be empty")
        prefix = parameters.get("Prefix") or ""
        if not isinstance(prefix, str):
            raise InvalidInput("Prefix must be a string")
        # A responder's reply comes here without the event's parser: a lone surrogate could neither be hashed into
        # the cache key nor sent to the model.
        for name, value in (("Text", text), ("Prefix", prefix)):
            if not is_unicode(value):
                raise InvalidInput(f"{name} is not valid Unicode")
        full = " ".join((prefix + text).split())
        if len(full) > settings.sonic_max_text_chars:
            raise InvalidInput(f"Text is {len(full)} characters; the limit is {settings.sonic_max_text_chars}")
        language = _language(_string(parameters, "Language") or settings.sonic_default_language)
        voice = (
            _string(parameters, "Voice")
            or for_language(dict(settings.sonic_voices), language)
            or settings.sonic_default_voice
        )
        if not VOICE_ID.fullmatch(voice):
            raise InvalidInput("Voice must be a Cartesia voice id (a UUID)")
        emotion = _string(parameters, "Emotion")
        if emotion is not None and not _EMOTION.fullmatch(emotion):
            raise InvalidInput("Emotion must be a Sonic emotion name such as 'calm' or 'excited'")
        speed = _ratio(parameters, "Speed", SPEED_RANGE)
        volume = _ratio(parameters, "Volume", VOLUME_RANGE)
        if not sonic_model(settings.sonic_model_id).speed_and_volume:
            # Cartesia has disabled them on this model: sent or not, the audio is the same.
            speed = volume = 1.0
        pronunciation_map, pronunciation_dict_id = _pronunciation(parameters, settings)
        return cls(
            text=full,
            voice=voice,
            language=language,
            speed=speed,
            volume=volume,
            emotion=emotion,
            pronunciation_map=pronunciation_map,
            pronunciation_dict_id=pronunciation_dict_id,
        )

    def cache_key(self, model_identity: str, output_identity: str) -> str:
        """Content hash of everything that changes the audio: text, controls, model, and output conversion."""
        material = {
            "v": CACHE_FORMAT_VERSION,
            "model": model_identity,
            "output": output_identity,
            **asdict(self),
        }
        # A prompt without a pronunciation keeps the key it had before pronunciations existed.
        for name in ("pronunciation_map", "pronunciation_dict_id"):
            if not material[name]:
                del material[name]
        return hashlib.sha256(json.dumps(material, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    def body(self, *, encoding: str, sample_rate: int, context_id: str | None = None) -> dict[str, Any]:
        """Sonic's generation request for this prompt."""
        generation: dict[str, Any] = {"speed": self.speed, "volume": self.volume}
        if self.emotion:
            generation["emotion"] = self.emotion
        body = {
            "context_id": context_id or uuid.uuid4().hex,
            "transcript": self.text,
            "voice": {"mode": "id", "id": self.voice},
            "output_format": {"container": "raw", "encoding": encoding, "sample_rate": sample_rate},
            "language": self.language,
            "generation_config": generation,
            "add_timestamps": False,
        }
        if self.pronunciation_map:
            body["pronunciation_map"] = dict(self.pronunciation_map)
        return body


def _string(parameters: Mapping[str, Any], name: str) -> str | None:
    value = parameters.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value.strip()


def _pronunciation(parameters: Mapping[str, Any], settings: RequestSettings) -> tuple[tuple[tuple[str, str], ...], str]:
    """The pronunciation map and dictionary id the request carries: a flow's own, else the deployment's. A SageMaker
    package (or a container) takes a map, and only from Sonic 3.5 on; the Cartesia API takes a dictionary id."""
    raw_map = _string(parameters, "PronunciationMap")
    dict_id = _string(parameters, "PronunciationDictId")
    api = settings.sonic_backend == "cartesia-api"
    if raw_map is not None:
        if api:
            raise InvalidInput("PronunciationMap is for Sonic on SageMaker; the Cartesia API takes PronunciationDictId")
        if not sonic_model(settings.sonic_model_id).pronunciation_map:
            raise InvalidInput(
                f"PronunciationMap needs Sonic 3.5 or later; the endpoint runs {settings.sonic_model_id}"
            )
        try:
            return parse_pronunciation_map(raw_map), ""
        except ValueError as exc:
            raise InvalidInput(f"PronunciationMap {exc}") from None
    if dict_id is not None:
        if not api:
            raise InvalidInput("PronunciationDictId is for the Cartesia API; Sonic on SageMaker takes PronunciationMap")
        if not PRONUNCIATION_DICT_ID.fullmatch(dict_id):
            raise InvalidInput("PronunciationDictId must be a pronunciation dictionary id (letters, digits, '_', '-')")
        return (), dict_id
    return settings.sonic_pronunciation_map, settings.sonic_pronunciation_dict_id


def _language(raw: str) -> str:
    match = _LANGUAGE.fullmatch(raw)
    if match is None:
        raise InvalidInput("Language must be a two-letter code such as 'en', or a locale such as 'pt-BR'")
    # Written as Sonic's documentation writes them, so 'PT-br' and 'pt-BR' name the same prompt.
    language, region = match.group("language", "region")
    return f"{language.lower()}-{region.upper()}" if region else language.lower()


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
