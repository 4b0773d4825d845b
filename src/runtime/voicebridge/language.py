"""A contact's language: what listens to it, what speaks to it, and what reads its spoken numbers.

A contact speaks the language its flow names (StartListening's ``Language``, or on the streaming transport the
contact attribute ``Language``), else the deployment's ``INK_LANGUAGE``: a BCP-47 tag such as ``es-US``, or a bare
``es``. What serves it (docs/protocols.md, *Ink*, "Languages"):

- **English**: Ink's endpoint and model as ``INK_MODE`` and ``INK_MODEL`` say — by default the turns endpoint
  (``ink-2``), which ends turns, with the end-of-turn model as an early signal where ``END_OF_TURN_EAGER_THRESHOLD``
  sets one;
- **another language ``ink-whisper`` transcribes**: the manual endpoint with ``ink-whisper`` (or the ``ink-whisper``
  model ``INK_MODEL`` names), whatever ``INK_MODE`` says, and the product ends the caller's turns (the finalize) as
  the language's :class:`TurnEndPolicy` says: silence, and the end-of-turn model where it was measured to help;
- **any other**, and any language Sonic does not speak (:data:`SONIC_LANGUAGES`: the product could hear the caller
  and never answer): :class:`~voicebridge.errors.LanguageNotServed`, before anything starts.

The turns endpoint is taken to be English only, as its API reference says, although Cartesia's *Languages* page lists
four more languages for ``ink-2``: the endpoint takes no language, and turns cut in a language it does not end well
would cost more than the manual endpoint's later ends. This module imports nothing heavy: the settings check reads it::

    >>> listening_for("es-US", ink_mode="turns", ink_model="ink-2", end_of_turn_model="eager").mode
    'manual'

Each language's turns end by a :class:`TurnEndPolicy`, chosen per language on the end-of-turn benchmark's
development set (docs/benchmarks.md, "End of turn"): the fastest point that cuts off at most 5 % of mid-sentence
pauses there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
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
_SONIC_CODES = (
    "en de es fr ja pt zh hi ko it nl pl ru sv tr tl bg ro ar cs el fi hr ms sk da ta uk hu no vi bn th he ka id te gu "
    "kn ml mr pa"
)
SONIC_LANGUAGES: Final = frozenset(_SONIC_CODES.split())
"""The 42 languages Sonic 3 speaks, as Cartesia's model pages list them for every ``sonic-3`` snapshot; Sonic 3.5 and
3.6 speak the same 42 (docs/protocols.md, *Sonic*, "Languages")."""
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
class TurnEndPolicy:
    """When the product ends a caller's turn (manual mode), or, on Ink's turns endpoint, starts its eager end.

    The end-of-turn model is asked once per stop of the caller's voice, ``ask_at_ms`` into the silence after it; its
    "complete" (probability above ``threshold``) ends the turn once the caller has stayed quiet ``quiet_ms`` after
    the stop. A silence of ``silence_ms`` ends the turn whatever the model said. With no ``threshold`` the model
    ends no turn, and the silence alone decides (the model is not run). Ink's turns endpoint ends its own turns:
    there ``silence_ms`` is unused, and the rest place the eager end."""

    silence_ms: int
    threshold: float | None = None
    ask_at_ms: int = 0
    quiet_ms: int = 0

    def __post_init__(self) -> None:
        if self.threshold is not None and not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"threshold must be from 0 to below 1, not {self.threshold}")
        if min(self.silence_ms, self.ask_at_ms, self.quiet_ms) < 0:
            raise ValueError("silence_ms, ask_at_ms and quiet_ms must not be negative")

    @property
    def uses_model(self) -> bool:
        return self.threshold is not None

    def describe(self, *, eager: bool = False) -> str:
        """The policy in words (the settings check logs it)."""
        if self.threshold is None:
            return f"{self.silence_ms} ms of silence alone"
        model = f"the model's complete above {self.threshold:g} (asked {self.ask_at_ms} ms into the silence" + (
            f", after {self.quiet_ms} ms of quiet)" if self.quiet_ms > self.ask_at_ms else ")"
        )
        return f"{model} starts a speculative reply" if eager else f"{model}, or {self.silence_ms} ms of silence"


EVERY_LANGUAGE: Final = "*"
"""The key of a per-language setting (keyterms, turn-end policies) for every language it does not name."""
TURN_END_POLICIES: Final[tuple[tuple[str, TurnEndPolicy], ...]] = (
    ("en", TurnEndPolicy(silence_ms=900)),
    ("es", TurnEndPolicy(silence_ms=900)),
    (EVERY_LANGUAGE, TurnEndPolicy(silence_ms=900)),
)
"""Per language (``*``: any other), when the product ends a turn. On the benchmark's development set the fastest point
within 5 % of pauses cut off is 900 ms of silence alone in English and in Spanish: no point with the model is
faster there (English), or none is within 5 % at all (Spanish), so the model has no part by default. A language not
measured takes the same silence. docs/benchmarks.md, "End of turn", has the sweep."""
EAGER_END_POLICY: Final = TurnEndPolicy(silence_ms=0)
"""English on Ink's turns endpoint: no eager end of ours by default. On the development set every threshold and silence
asked at started a speculative reply that was then cancelled in more than a quarter of the utterances (the bound the
benchmark allows; 26 % at the best point, above 0.95 at the first unvoiced frame, where the model called 38 % of the
ends complete)."""


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
    policy: TurnEndPolicy = TURN_END_POLICIES[-1][1]
    """Manual mode: when the product ends a turn; the turns endpoint: where the model's eager end comes."""

    @property
    def base(self) -> str:
        return primary(self.language)

    @property
    def turn_end_by(self) -> TurnEndBy:
        return "ink" if self.mode == "turns" else "voicebridge"

    @property
    def runs_model(self) -> bool:
        """The end-of-turn model has a part: it ends turns, or (turns endpoint) places an eager end."""
        return self.ends_turns or (self.mode == "turns" and self.policy.uses_model)

    def ends(self) -> str:
        """What ends this contact's turns, in words."""
        if self.mode == "turns":
            eager = self.policy.describe(eager=True) if self.policy.uses_model else "no eager end of ours"
            return f"Ink's turn end ({eager})"
        if self.ends_turns:
            return self.policy.describe()
        return f"{self.policy.silence_ms} ms of silence alone"


@dataclass(frozen=True, slots=True)
class Languages:
    """What decides how a contact is listened to: the deployment's default language and Ink settings
    (``Settings.languages``)."""

    default: str
    ink_mode: str
    ink_model: str
    end_of_turn_model: str
    policies: tuple[tuple[str, TurnEndPolicy], ...] = TURN_END_POLICIES
    eager: TurnEndPolicy = EAGER_END_POLICY

    def listening(self, language: str | None) -> Listening:
        """How a contact speaking ``language`` (None or empty: the default) is listened to; LanguageNotServed, or
        InvalidInput for a malformed tag."""
        return listening_for(
            language or self.default,
            ink_mode=self.ink_mode,
            ink_model=self.ink_model,
            end_of_turn_model=self.end_of_turn_model,
            policies=self.policies,
            eager=self.eager,
        )

    def ends_by_language(self) -> str:
        """What ends turns in the default language, in each language the policies name, and in any other (the
        settings check logs it)."""
        named = [tag for tag, _ in self.policies if tag != EVERY_LANGUAGE]
        described = [f"{tag}: {self.listening(tag).ends()}" for tag in dict.fromkeys([self.default, *named])]
        # Any language Ink's manual endpoint serves and the policies do not name ("und": no language of its own).
        others = replace(self.listening("es"), policy=turn_end_policy(self.policies, "und"))
        return "; ".join([*described, f"any other: {others.ends()}"])


def turn_end_policy(policies: tuple[tuple[str, TurnEndPolicy], ...], tag: str) -> TurnEndPolicy:
    """The policy ``policies`` name for ``tag`` (by tag, then primary language), else for every language."""
    by_language = dict(policies)
    found = for_language(by_language, tag)
    return found if found is not None else by_language.get(EVERY_LANGUAGE, TURN_END_POLICIES[-1][1])


def listening_for(
    language: str,
    *,
    ink_mode: str,
    ink_model: str,
    end_of_turn_model: str,
    policies: tuple[tuple[str, TurnEndPolicy], ...] = TURN_END_POLICIES,
    eager: TurnEndPolicy = EAGER_END_POLICY,
) -> Listening:
    """How a contact speaking ``language`` is listened to; LanguageNotServed when no Ink model transcribes it."""
    tag = language_tag(language)
    base = primary(tag)
    policy = turn_end_policy(policies, tag)
    model_on = end_of_turn_model != "off"
    if base in INK_TURNS_LANGUAGES:
        if ink_mode != "manual":
            return Listening(tag, "turns", ink_model, False, eager if model_on else replace(eager, threshold=None))
        ends = end_of_turn_model == "ends" and policy.uses_model
        return Listening(tag, "manual", ink_model, ends, policy)
    if base in INK_WHISPER_LANGUAGES:
        if base not in SONIC_LANGUAGES:
            raise LanguageNotServed(f"Sonic does not speak {tag!r}: the caller could be heard but not answered")
        model = ink_model if ink_model.startswith(WHISPER_MODEL) else WHISPER_MODEL
        return Listening(tag, "manual", model, model_on and policy.uses_model, policy)
    raise LanguageNotServed(f"no Ink model transcribes {tag!r}: ink-2's turns take English, ink-whisper 100 languages")
