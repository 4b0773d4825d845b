"""Sonic requests as the two transports receive them, validated as the model (and the API) validate them.

**SageMaker runtime**, the Sonic model package (no ``model_id``: the endpoint serves a single model)::

    POST /endpoints/{EndpointName}/invocations-response-stream
         {"context_id", "transcript", "voice": {"mode": "id", "id": "<uuid>"}, "output_format", "language"?,
          "generation_config"?: {"speed", "volume", "emotion"}, "add_timestamps"?, "pronunciation_map"?}

Which package the endpoint runs changes what it accepts (:data:`PACKAGE_MODELS`; ``cartesia-ai/cartesia-aws``,
``sonic-3-jumpstart/README.md``, ``sonic-3-5-jumpstart/README.md`` and ``sonic-3-6-jumpstart/README.md``, Input
Parameters and Data Sample):

- **Sonic 3** requires ``language``, a two-letter code, and names 16-bit PCM ``"pcm"`` (README and notebook).
- **Sonic 3.5** makes ``language`` optional and also takes locales (``en-US``, ``pt-BR``, …), and names 16-bit PCM
  ``"pcm_s16le"`` (so since commit 2c7787c, June 2026; before that its examples said ``"pcm"`` too).
- **Sonic 3.6** lists the fields, codes and locales of 3.5, and writes ``"pcm_s16le"``.
- **Sonic 3.5 and 3.6** take ``pronunciation_map``, "A dictionary mapping words or phrases to plain-text
  pronunciations … Maximum total size: 16KB (sum of all key and value bytes in UTF-8)". Sonic 3's README has no such
  field; the emulator refuses it there with a 422 (what that package does with a field it does not know is not
  documented). Whether a KB is 1,000 or 1,024 bytes is not said: the emulator takes the smaller reading, 16,000.

Whether either package also accepts the other's name for PCM is not documented (Sonic 3's README also says its
``output_format`` "Must match the ``raw`` option" of the Cartesia API, whose name is ``pcm_s16le``). The emulator
takes the strict view of Sonic 3, refusing ``pcm_s16le`` with a 422 that names ``output_format.encoding``, since that
is the case a client has to survive; its Sonic 3.5 accepts both, since 3.5's own examples said ``"pcm"`` until June
2026. Both READMEs list the codes they support with "Supported codes include", so the emulator checks a code's form,
not that list.

Either package takes the raw output format of the Cartesia API ("Must match the ``raw`` option"): the rates 8000,
16000, 22050, 24000, 44100 and 48000 and nothing between (cartesia-python ``types/raw_output_format_param.py``).

**Cartesia API**, as the official ``cartesia`` SDK's ``client.tts.generate_sse`` sends it::

    POST /tts/sse   {"model_id", "transcript", "voice": "<uuid>" | {"id": …}, "output_format",
                     "context_id"?, "language"? | "locale"?, "generation_config"?, "add_timestamps"?}

A request either transport refuses raises :class:`~voicebridge_dev.local.sonic.errors.InvalidSonicRequest`
with the reason the model (or the API) gives in its 422 answer.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from voicebridge_dev.local.service import finite_number
from voicebridge_dev.local.sonic.errors import InvalidSonicRequest

ENCODINGS: Final = ("pcm_s16le", "pcm_f32le", "pcm_mulaw", "pcm_alaw")
"""The audio a model produces, by the Cartesia API's names (cartesia-python ``types/raw_encoding.py``)."""
SAMPLE_RATES: Final = frozenset({8000, 16000, 22050, 24000, 44100, 48000})
SPEED_RANGE: Final = (0.6, 1.5)
VOLUME_RANGE: Final = (0.5, 2.0)
_INLINE_TAG = re.compile(r"<[^<>]*>")
_CONTEXT_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_LANGUAGE = re.compile(r"[a-z]{2}")
_LOCALE = re.compile(r"[a-z]{2}(-[A-Z]{2})?")


@dataclass(frozen=True)
class PackageModel:
    """What one Sonic model package on SageMaker accepts where another differs."""

    encodings: Mapping[str, str]
    """The names ``output_format.encoding`` may take, each with the audio it asks for (one of :data:`ENCODINGS`)."""
    language_required: bool
    language: re.Pattern[str]
    language_form: str
    """What ``language`` must be, as the 422 says it."""
    pronunciation_map: bool = False
    """Whether the package takes ``pronunciation_map``."""


_G711_AND_FLOAT: Final = {"pcm_f32le": "pcm_f32le", "pcm_mulaw": "pcm_mulaw", "pcm_alaw": "pcm_alaw"}
PRONUNCIATION_MAP_MAX_BYTES: Final = 16_000
PACKAGE_MODELS: Final = {
    "sonic-3": PackageModel(
        encodings={"pcm": "pcm_s16le", **_G711_AND_FLOAT},
        language_required=True,
        language=_LANGUAGE,
        language_form="a two-letter code such as 'en' (Sonic 3 takes no locale)",
    ),
    "sonic-3.5": PackageModel(
        encodings={"pcm_s16le": "pcm_s16le", "pcm": "pcm_s16le", **_G711_AND_FLOAT},
        language_required=False,
        language=_LOCALE,
        language_form="a two-letter code such as 'en' or a locale such as 'en-US'",
        pronunciation_map=True,
    ),
    "sonic-3.6": PackageModel(
        encodings={"pcm_s16le": "pcm_s16le", **_G711_AND_FLOAT},
        language_required=False,
        language=_LOCALE,
        language_form="a two-letter code such as 'en' or a locale such as 'en-US'",
        pronunciation_map=True,
    ),
}
_API_ENCODINGS: Final = {name: name for name in ENCODINGS}
DEFAULT_MODEL: Final = "sonic-3.5"
"""The package the local cloud's endpoint runs unless told otherwise."""


@dataclass(frozen=True)
class SonicRequest:
    """A validated Sonic request, transcript already stripped of inline tags.

    ``context_id`` is None only on the Cartesia API, where it is optional and echoed back only when given.
    """

    context_id: str | None
    transcript: str
    voice_id: str
    encoding: str
    """The audio asked for, by its name in :data:`ENCODINGS` (a package's ``"pcm"`` is ``"pcm_s16le"`` here)."""
    sample_rate: int
    language: str | None = None
    speed: float = 1.0
    volume: float = 1.0
    emotion: str | None = None
    add_timestamps: bool = False
    model_id: str | None = None
    pronunciation_map: dict[str, str] | None = None
    pronunciation_dict_id: str | None = None


def _within(config: Mapping[str, Any], key: str, bounds: tuple[float, float]) -> float:
    value = config.get(key, 1.0)
    low, high = bounds
    if not finite_number(value) or not low <= value <= high:
        raise InvalidSonicRequest(f"generation_config.{key} must be a number in [{low}, {high}], got {value!r}")
    return float(value)


def _output_format(value: Any, names: Mapping[str, str], accepted_encodings: Collection[str]) -> tuple[str, int]:
    """The audio asked for, by its name in :data:`ENCODINGS`, and the rate."""
    if not isinstance(value, dict):
        raise InvalidSonicRequest("output_format must be an object")
    if value.get("container") != "raw":
        raise InvalidSonicRequest(f"output_format.container must be 'raw', got {value.get('container')!r}")
    encoding = value.get("encoding")
    if not isinstance(encoding, str) or encoding not in names:
        choices = ", ".join(names)
        raise InvalidSonicRequest(f"output_format.encoding must be one of {choices}, got {encoding!r}")
    if names[encoding] not in accepted_encodings:
        supported = ", ".join(name for name, audio in names.items() if audio in accepted_encodings)
        raise InvalidSonicRequest(
            f"output_format.encoding {encoding!r} is not supported by this model; use one of {supported}"
        )
    rate = value.get("sample_rate")
    if not isinstance(rate, int) or isinstance(rate, bool) or rate not in SAMPLE_RATES:
        choices = ", ".join(map(str, sorted(SAMPLE_RATES)))
        raise InvalidSonicRequest(f"output_format.sample_rate must be one of {choices}, got {rate!r}")
    return names[encoding], rate


def _voice_uuid(value: Any, field: str) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError as exc:
        raise InvalidSonicRequest(f"{field} must be a UUID, got {value!r}") from exc


def _spoken(transcript: Any) -> str:
    if not isinstance(transcript, str):
        raise InvalidSonicRequest("transcript must be a string")
    spoken = " ".join(_INLINE_TAG.sub(" ", transcript).split())
    if not spoken:
        raise InvalidSonicRequest("transcript has no text to speak")
    return spoken


def _context_id(value: Any) -> str:
    if not isinstance(value, str) or not _CONTEXT_ID.match(value):
        raise InvalidSonicRequest("context_id must be a non-empty string of letters, digits, '_' and '-'")
    return value


def _language(value: Any, field: str, pattern: re.Pattern[str], form: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not pattern.fullmatch(value)):
        raise InvalidSonicRequest(f"{field} must be {form}, got {value!r}")
    return value


def _generation(
    body: Mapping[str, Any],
    *,
    context_id: str | None,
    voice_id: str,
    language: str | None,
    encodings: Mapping[str, str],
    accepted_encodings: Collection[str],
    model_id: str | None = None,
) -> SonicRequest:
    """The fields both transports validate alike: transcript, output format, generation config, timestamps."""
    spoken = _spoken(body["transcript"])
    encoding, sample_rate = _output_format(body["output_format"], encodings, accepted_encodings)
    config = body.get("generation_config", {})
    if not isinstance(config, dict):
        raise InvalidSonicRequest("generation_config must be an object")
    emotion = config.get("emotion")
    if emotion is not None and not isinstance(emotion, str):
        raise InvalidSonicRequest("generation_config.emotion must be a string")
    add_timestamps = body.get("add_timestamps", False)
    if add_timestamps is None:
        # The API declares it Optional[bool]: null means the default.
        add_timestamps = False
    if not isinstance(add_timestamps, bool):
        raise InvalidSonicRequest("add_timestamps must be a boolean")
    return SonicRequest(
        context_id=context_id,
        transcript=spoken,
        voice_id=voice_id,
        encoding=encoding,
        sample_rate=sample_rate,
        language=language,
        speed=_within(config, "speed", SPEED_RANGE),
        volume=_within(config, "volume", VOLUME_RANGE),
        emotion=emotion,
        add_timestamps=add_timestamps,
        model_id=model_id,
    )


def parse_sonic_request(
    body: Any, *, accepted_encodings: Collection[str] = ENCODINGS, model: str = DEFAULT_MODEL
) -> SonicRequest:
    """Validate a decoded request body as the Sonic model package ``model`` (a :data:`PACKAGE_MODELS` key) does.

    Raises :class:`InvalidSonicRequest` with the reason the model gives in its 422 answer.
    """
    package = PACKAGE_MODELS[model]
    if not isinstance(body, dict):
        raise InvalidSonicRequest("request body must be a JSON object")
    if "model_id" in body:
        raise InvalidSonicRequest("model_id is not accepted: this endpoint serves a single model")
    required = ["context_id", "transcript", "voice", "output_format"]
    if package.language_required:
        required.append("language")
    for field in required:
        if field not in body:
            raise InvalidSonicRequest(f"missing required field: {field}")

    context_id = _context_id(body["context_id"])
    voice = body["voice"]
    if not isinstance(voice, dict) or voice.get("mode") != "id":
        raise InvalidSonicRequest('voice must be {"mode": "id", "id": "<voice uuid>"}')
    voice_id = _voice_uuid(voice.get("id"), "voice.id")
    language = _language(body.get("language"), "language", package.language, package.language_form)
    pronunciation_map = None
    if "pronunciation_map" in body:
        if not package.pronunciation_map:
            raise InvalidSonicRequest(f"pronunciation_map is not accepted by {model}")
        pronunciation_map = _pronunciation_map(body["pronunciation_map"])
    request = _generation(
        body,
        context_id=context_id,
        voice_id=voice_id,
        language=language,
        encodings=package.encodings,
        accepted_encodings=accepted_encodings,
    )
    return replace(request, pronunciation_map=pronunciation_map)


def _pronunciation_map(value: Any) -> dict[str, str]:
    """A map of words to respellings within the package's 16 KB of keys and values."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidSonicRequest("pronunciation_map must be an object of strings to strings")
    size = sum(len(k.encode()) + len(v.encode()) for k, v in value.items())
    if size > PRONUNCIATION_MAP_MAX_BYTES:
        raise InvalidSonicRequest(
            f"pronunciation_map is {size} bytes; the total size of keys and values must not exceed 16KB"
        )
    return dict(value)


def parse_cartesia_request(body: Any, *, accepted_encodings: Collection[str] = ENCODINGS) -> SonicRequest:
    """Validate a decoded ``POST /tts/sse`` body as the Cartesia API does.

    Unlike the SageMaker package the API serves many models, so ``model_id`` is required; ``voice`` is a voice
    id or an object with an ``id``; ``context_id`` is optional; ``language`` and ``locale`` exclude each
    other.
    Raises :class:`InvalidSonicRequest` with the reason the API gives in its 422 answer.
    """
    if not isinstance(body, dict):
        raise InvalidSonicRequest("request body must be a JSON object")
    for required in ("model_id", "transcript", "voice", "output_format"):
        if required not in body:
            raise InvalidSonicRequest(f"missing required field: {required}")

    model_id = body["model_id"]
    if not isinstance(model_id, str) or not model_id.strip():
        raise InvalidSonicRequest("model_id must be a non-empty string such as 'sonic-3'")
    voice = body["voice"]
    if isinstance(voice, dict):
        if voice.get("mode", "id") != "id" or "id" not in voice:
            raise InvalidSonicRequest('voice must be a voice id, or {"id": "<voice uuid>"}')
        voice_id = _voice_uuid(voice["id"], "voice.id")
    elif isinstance(voice, str):
        voice_id = _voice_uuid(voice, "voice")
    else:
        raise InvalidSonicRequest('voice must be a voice id, or {"id": "<voice uuid>"}')
    context_id = body.get("context_id")
    if context_id is not None:
        context_id = _context_id(context_id)
    language = _language(body.get("language"), "language", _LANGUAGE, "a code such as 'en'")
    locale = _language(body.get("locale"), "locale", _LOCALE, "a code such as 'en-GB'")
    if language is not None and locale is not None:
        raise InvalidSonicRequest("a request may set language or locale, never both")
    dict_id = body.get("pronunciation_dict_id")
    if dict_id is not None and not isinstance(dict_id, str):
        raise InvalidSonicRequest("pronunciation_dict_id must be a string")
    request = _generation(
        body,
        context_id=context_id,
        voice_id=voice_id,
        language=language or locale,
        encodings=_API_ENCODINGS,
        accepted_encodings=accepted_encodings,
        model_id=model_id,
    )
    return replace(request, pronunciation_dict_id=dict_id)
