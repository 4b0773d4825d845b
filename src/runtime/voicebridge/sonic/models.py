"""What each Sonic model does with the controls a flow may send, and the pronunciation map's form.

The SageMaker packages (``cartesia-ai/cartesia-aws``: ``sonic-3-jumpstart/``, ``sonic-3-5-jumpstart/``,
``sonic-3-6-jumpstart/``, each README's Input Parameters; docs/protocols.md, *Sonic on SageMaker*):

- ``sonic-3``: no ``pronunciation_map``;
- ``sonic-3.5`` and ``sonic-3.6``: ``pronunciation_map``, an object of words or phrases to plain-text respellings,
  "Maximum total size: 16KB (sum of all key and value bytes in UTF-8)"; matching is case-sensitive.

Speed and volume: "Speed and volume controls are temporarily disabled on sonic-3.5" (Cartesia, *Migrating from Sonic
3 to Sonic 3.5*), so on that model a flow's ``Speed`` and ``Volume`` cannot change the audio: they are sent at their
default, 1.0, and do not split the prompt cache. Sonic 3.6's README names speed and volume among its controls.

The Cartesia API names a stored dictionary instead, ``pronunciation_dict_id`` ("supported by ``sonic-3`` models and
newer", the SDK's ``tts.generate_sse``). This module imports nothing heavy: the settings check reads it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True, slots=True)
class SonicModel:
    """What one model does with the request's optional controls."""

    speed_and_volume: bool = True
    """Whether ``generation_config.speed`` and ``volume`` change the audio."""
    pronunciation_map: bool = False
    """Whether a SageMaker package takes ``pronunciation_map``."""


SONIC_PACKAGES: Final = {
    "sonic-3": SonicModel(),
    "sonic-3.5": SonicModel(speed_and_volume=False, pronunciation_map=True),
    "sonic-3.6": SonicModel(pronunciation_map=True),
}
"""The model packages ``cartesia-ai/cartesia-aws`` documents for SageMaker, by the name ``SONIC_MODEL_ID`` gives."""

PRONUNCIATION_DICT_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,128}")
VOICE_ID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
"""A Cartesia voice id: a UUID."""
"""What a pronunciation dictionary id may hold here: the SDK types it only as a string (docs/protocols.md)."""
PRONUNCIATION_MAP_MAX_BYTES: Final = 16_000
"""The READMEs' "16KB" of keys and values in UTF-8; whether a KB is 1,000 or 1,024 bytes is not said, so the
smaller reading, which either service takes."""


def sonic_model(model_id: str) -> SonicModel:
    """What ``model_id`` does: a package's name, or a Cartesia API model id (a dated one, ``sonic-3.5-2026-05-01``,
    is the model it dates); a model named nowhere is taken to apply every control and take no map."""
    for name, model in SONIC_PACKAGES.items():
        if model_id == name or model_id.startswith(name + "-2"):
            return model
    return SonicModel()


def parse_pronunciation_map(text: str) -> tuple[tuple[str, str], ...]:
    """A pronunciation map written as a JSON object (``{"Nguyen": "Win"}``), as sorted pairs; ValueError saying
    what is wrong. Empty text is no map."""
    if not text.strip():
        return ()
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError('must be a JSON object of words to respellings, such as {"Nguyen": "Win"}') from None
    if not isinstance(value, dict):
        raise ValueError('must be a JSON object of words to respellings, such as {"Nguyen": "Win"}')
    pairs = []
    for word, spoken in value.items():
        if not word.strip() or not isinstance(spoken, str) or not spoken.strip():
            raise ValueError(f"{word!r} must map a word or phrase to a non-empty respelling")
        pairs.append((word, spoken))
    try:
        size = sum(len(word.encode()) + len(spoken.encode()) for word, spoken in pairs)
    except UnicodeEncodeError:
        raise ValueError("is not valid Unicode") from None
    if size > PRONUNCIATION_MAP_MAX_BYTES:
        raise ValueError(f"is {size} bytes of words and respellings; Sonic takes at most {PRONUNCIATION_MAP_MAX_BYTES}")
    return tuple(sorted(pairs))
