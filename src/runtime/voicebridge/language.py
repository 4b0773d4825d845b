"""A contact's language: what listens to it, what speaks to it, and what reads its spoken numbers.

A contact speaks the language its flow names (StartListening's ``Language``, or on the streaming transport the
contact attribute ``Language``), else the deployment's ``INK_LANGUAGE``: a BCP-47 tag such as ``es-US``, or a bare
``es``. What serves it (docs/protocols.md, *Ink*, "Languages"):

- **English**: Ink's endpoint and model as ``INK_MODE`` and ``INK_MODEL`` say — by default the turns endpoint
  (``ink-2``), which ends turns, with the end-of-turn model as the early signal;
- **another language ``ink-whisper`` transcribes**: the manual endpoint with ``ink-whisper`` (or the ``ink-whisper``
  model ``INK_MODEL`` names), whatever ``INK_MODE`` says, and the product's own voice detector and end-of-turn model
  end the caller's turns (the finalize);
- **any other**: :class:`~voicebridge.errors.LanguageNotServed`, before anything starts.

The turns endpoint is taken to be English only, as its API reference says, although Cartesia's *Languages* page lists
four more languages for ``ink-2``: the endpoint takes no language, and turns cut in a language it does not end well
would cost more than the manual endpoint's later ends. This module imports nothing heavy: the settings check reads it::

    >>> listening_for("es-US", ink_mode="turns", ink_model="ink-2", end_of_turn_model="eager").mode
    'manual'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypeVar

from voicebridge.errors import InvalidInput, LanguageNotServed

T = TypeVar("T")
TurnEndBy = Literal["ink", "voicebridge"]
"""Who ends a contact's turns: Ink's turns endpoint, or the product's detector and end-of-turn model."""

INK_TURNS_LANGUAGES: Final = frozenset({"en"})
"""The languages Ink's turns endpoint is trusted with ("This endpoint is English only right now", its API reference)."""
_WHISPER_CODES = (
    "en zh de es ru ko fr ja pt tr pl ca nl ar sv it id hi fi vi he uk el ms cs ro da hu ta no th ur hr bg lt la mi ml "
    "cy sk te fa lv bn sr az sl kn et mk br eu is hy ne mn bs kk sq sw gl mr pa si km sn yo so af oc ka be tg sd gu am "
    "yi lo uz fo ht ps tk nn mt sa lb my bo tl mg as tt haw ln ha ba jw su yue"
)
INK_WHISPER_LANGUAGES: Final = frozenset(_WHISPER_CODES.split())
"""The 100 codes the cartesia SDK (4.2.0) lists for ``ink-whisper`` (``STT.transcribe``'s ``language``)."""
WHISPER_MODEL: Final = "ink-whisper"
"""The model another language is transcribed with, unless ``INK_MODEL`` names an ``ink-whisper`` model itself."""
SPOKEN_NUMBER_LANGUAGES: Final = frozenset({"en", "es"})
"""The languages whose spoken numbers the built-in redactor reads (:mod:`voicebridge.redaction.spoken`)."""

_TAG = re.compile(r"(?P<language>[A-Za-z]{2,3})(?:[-_](?P<rest>[A-Za-z0-9]{1,8}(?:[-_][A-Za-z0-9]{1,8})*))?")


def language_tag(raw: str) -> str:
    """``raw`` as a BCP-47 tag written the usual way (``es-us`` → ``es-US``); InvalidInput when it is not one."""
    match = _TAG.fullmatch(raw.strip())
    if match is None:
        raise InvalidInput(f"Language must be a language tag such as 'es' or 'es-US', not {raw[:40]!r}")
    parts = [match.group("language").lower()]
    for part in re.split(r"[-_]", match.group("rest") or ""):
        if part:
            # A region is written in capitals, a script in title case (BCP-47's conventions, RFC 5646 section 2.1.1).
            parts.append(part.upper() if len(part) == 2 else part.title() if len(part) == 4 else part.lower())
    return "-".join(parts)


def primary(tag: str) -> str:
    """The language of a tag without its region or script: ``es-US`` → ``es``."""
    return tag.split("-", 1)[0].lower()


def for_language(by_language: Mapping[str, T], tag: str) -> T | None:
    """What ``by_language`` names for ``tag`` itself, else for its primary language (``es-US``, then ``es``)."""
    found = by_language.get(tag)
    return found if found is not None else by_language.get(primary(tag))


@dataclass(frozen=True, slots=True)
class Listening:
    """How a contact in one language is listened to."""

    language: str
    """The contact's language tag (``es-US``)."""
    mode: Literal["turns", "manual"]
    """Ink's endpoint: the turns endpoint, or the manual one."""
    model: str
    ends_turns: bool
    """The end-of-turn model's "complete" ends a turn (manual mode); otherwise silence alone does."""

    @property
    def base(self) -> str:
        return primary(self.language)

    @property
    def turn_end_by(self) -> TurnEndBy:
        return "ink" if self.mode == "turns" else "voicebridge"


@dataclass(frozen=True, slots=True)
class Languages:
    """What decides how a contact is listened to: the deployment's default language and Ink settings
    (``Settings.languages``)."""

    default: str
    ink_mode: str
    ink_model: str
    end_of_turn_model: str

    def listening(self, language: str | None) -> Listening:
        """How a contact speaking ``language`` (None or empty: the default) is listened to; LanguageNotServed, or
        InvalidInput for a malformed tag."""
        return listening_for(
            language or self.default,
            ink_mode=self.ink_mode,
            ink_model=self.ink_model,
            end_of_turn_model=self.end_of_turn_model,
        )


def listening_for(language: str, *, ink_mode: str, ink_model: str, end_of_turn_model: str) -> Listening:
    """How a contact speaking ``language`` is listened to; LanguageNotServed when no Ink model transcribes it."""
    tag = language_tag(language)
    base = primary(tag)
    if base in INK_TURNS_LANGUAGES:
        manual = ink_mode == "manual"
        return Listening(tag, "manual" if manual else "turns", ink_model, manual and end_of_turn_model == "ends")
    if base in INK_WHISPER_LANGUAGES:
        model = ink_model if ink_model.startswith(WHISPER_MODEL) else WHISPER_MODEL
        return Listening(tag, "manual", model, end_of_turn_model != "off")
    raise LanguageNotServed(f"no Ink model transcribes {tag!r}: ink-2's turns take English, ink-whisper 100 languages")
