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

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from voicebridge.conversation import Action
from voicebridge.errors import ConfigurationError, InvalidInput, LanguageNotServed
from voicebridge.ink.keyterms import parse_keyterms
from voicebridge.language import (
    EAGER_END_POLICY,
    EVERY_LANGUAGE,
    SPOKEN_NUMBER_LANGUAGES,
    TURN_END_POLICIES,
    Languages,
    TurnEndPolicy,
    for_language,
    language_tag,
    primary,
)
from voicebridge.sonic.models import (
    PRONUNCIATION_DICT_ID,
    SONIC_PACKAGES,
    VOICE_ID,
    parse_pronunciation_map,
    sonic_model,
)

SonicBackendName = Literal["sagemaker", "container", "cartesia-api"]
"""Where Sonic runs: a SageMaker endpoint, a Sonic container spoken to directly (the SageMaker container contract,
``POST /invocations``), or the Cartesia API (or a self-hosted Cartesia API server)."""
SonicEncoding = Literal["pcm_s16le", "pcm_mulaw"]
ResamplerName = Literal["soxr", "numpy"]
ListenTracks = Literal["customer", "both"]
InkMode = Literal["turns", "manual"]
VoiceDetectorName = Literal["silero", "energy"]
"""What judges a 20 ms frame of the caller voiced: Silero VAD, or the frame's energy (docs/benchmarks.md)."""
InkCatchUp = Literal["skip-silence", "off"]
"""How an Ink session behind the stream gets back to live: by dropping long silences from the backlog, or not."""
ResponderName = Literal["scripted", "bedrock", "lex", "lambda"]
RedactionMode = Literal["off", "builtin", "comprehend"]
OnOff = Literal["on", "off"]
EndOfTurnUse = Literal["eager", "ends", "off"]
"""What the end-of-turn model's "complete" does: an eager end of our own on Ink's turns endpoint (``eager``), that and
the end of a manual-mode turn (``ends``), or nothing (``off``)."""
TrueFalse = Literal["true", "false"]
BedrockLatency = Literal["optimized", "standard"]
"""Bedrock's ``performanceConfig.latency``: ``optimized`` is asked of the models that offer it, and only of them."""
DEFAULT_SYSTEM_PROMPT = (
    "You are a friendly voice agent answering a phone call. Your words are spoken aloud: answer in one to three "
    "short sentences of plain speech, with no lists, markdown or emoji. If the caller asks for a person, or you "
    "cannot help, call transfer_to_agent. When the caller is done, say goodbye and call end_call. Never ask for a "
    "card number aloud: when the caller wants to pay by card, ask them to type it on the keypad and press pound, "
    "and call collect_card_by_keypad."
)
CARTESIA_API_URL = "https://api.cartesia.ai"
"""Used when CARTESIA_BASE_URL is empty: the SDK itself would take an empty variable as the URL."""
PII_ENTITY_TYPES = frozenset(
    {
        "BANK_ACCOUNT_NUMBER",
        "BANK_ROUTING",
        "CREDIT_DEBIT_NUMBER",
        "CREDIT_DEBIT_CVV",
        "CREDIT_DEBIT_EXPIRY",
        "PIN",
        "EMAIL",
        "ADDRESS",
        "NAME",
        "PHONE",
        "SSN",
        "DATE_TIME",
        "PASSPORT_NUMBER",
        "DRIVER_ID",
        "URL",
        "AGE",
        "USERNAME",
        "PASSWORD",
        "AWS_ACCESS_KEY",
        "AWS_SECRET_KEY",
        "IP_ADDRESS",
        "MAC_ADDRESS",
        "ALL",
        "LICENSE_PLATE",
        "VEHICLE_IDENTIFICATION_NUMBER",
        "UK_NATIONAL_INSURANCE_NUMBER",
        "CA_SOCIAL_INSURANCE_NUMBER",
        "US_INDIVIDUAL_TAX_IDENTIFICATION_NUMBER",
        "UK_UNIQUE_TAXPAYER_REFERENCE_NUMBER",
        "IN_PERMANENT_ACCOUNT_NUMBER",
        "IN_NREGA",
        "INTERNATIONAL_BANK_ACCOUNT_NUMBER",
        "SWIFT_CODE",
        "UK_NATIONAL_HEALTH_SERVICE_NUMBER",
        "CA_HEALTH_NUMBER",
        "IN_AADHAAR",
        "IN_VOTER_NUMBER",
    }
)
"""Comprehend's ``PiiEntityType`` values (botocore's ``comprehend`` 2017-11-27 service model; a test compares)."""
DEFAULT_PII_ENTITY_TYPES = (
    "CREDIT_DEBIT_NUMBER,CREDIT_DEBIT_CVV,CREDIT_DEBIT_EXPIRY,SSN,EMAIL,PHONE,BANK_ACCOUNT_NUMBER,BANK_ROUTING,PIN,"
    "PASSWORD"
)
COMPREHEND_PII_LANGUAGES = frozenset({"en", "es"})
"""The languages DetectPiiEntities takes: "English (en) or Spanish (es)" (the request's ``LanguageCode``)."""
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


def _off_or_silence(value: Any) -> int:
    """0 (off), or a silence long enough not to cut into a caller's thinking (2–120 s, in ms)."""
    number = _whole_number(value)
    if number != 0 and not 2000 <= number <= 120000:
        raise ValueError("must be 0 (off) or from 2000 to 120000")
    return number


def _whole_number(value: Any) -> int:
    # The environment gives text: a whole-number setting keeps the number it names.
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _WHOLE_NUMBER.fullmatch(value.strip()):
        return int(value.strip().split(".")[0])
    raise ValueError("must be a whole number")


def _fraction(*, optional: bool = False, low: float = 0.0, high: float = 1.0) -> dict[str, Check]:
    """A number from ``low`` to ``high`` (``0.7``); unset stays None when ``optional``, so the service's own default
    applies."""

    def check(value: Any) -> float | None:
        if value is None and optional:
            return None
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError("must be a number") from None
        # NaN fails this comparison too.
        if not low <= number <= high:
            raise ValueError(f"must be from {low:g} to {high:g}")
        return number

    return _checked_by(check)


def _matching(pattern: str, meaning: str) -> dict[str, Check]:
    """Text that is empty or matches ``pattern`` whole; ``meaning`` says what it must be otherwise."""
    compiled = re.compile(pattern)

    def check(value: Any) -> str:
        text = _text(value)
        if text and not compiled.fullmatch(text):
            raise ValueError(meaning)
        return text

    return _checked_by(check)


def _entity_types(value: Any) -> tuple[str, ...]:
    """Comprehend PII entity types separated by commas (``CREDIT_DEBIT_NUMBER,SSN``), or ``ALL``."""
    if isinstance(value, tuple):
        value = ",".join(value)
    chosen = tuple(dict.fromkeys(part.strip().upper() for part in _text(value).split(",") if part.strip()))
    unknown = [kind for kind in chosen if kind not in PII_ENTITY_TYPES]
    if unknown:
        raise ValueError(f"{', '.join(unknown)} {'is not a' if len(unknown) == 1 else 'are not'} PII entity type")
    if not chosen:
        raise ValueError("must name at least one PII entity type")
    return chosen


def _pronunciation_map(value: Any) -> tuple[tuple[str, str], ...]:
    """A JSON object of words to respellings (``{"Nguyen": "Win"}``), within Sonic's size."""
    if isinstance(value, tuple):
        return value
    return parse_pronunciation_map(_text(value))


def _keyterms(value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Ink keyterms separated by commas (``Acme Plus,Zorblax``) for every language, or a JSON object of them by
    language tag (``{"en": "Acme Plus", "es": "Acme Plus,Cuenta Nómina", "*": "Acme"}``), each within Ink's limits."""
    if isinstance(value, tuple):
        if all(isinstance(term, str) for term in value):
            return ((EVERY_LANGUAGE, parse_keyterms(",".join(value))),) if value else ()
        return value
    text = _text(value).strip()
    if not text.startswith("{"):
        terms = parse_keyterms(text)
        return ((EVERY_LANGUAGE, terms),) if terms else ()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not JSON ({exc.msg})") from None
    # Text that opens with "{" and parses is a JSON object.
    by_language: dict[str, tuple[str, ...]] = {}
    for language, given in document.items():
        try:
            tag = language if language == EVERY_LANGUAGE else language_tag(language)
        except InvalidInput:
            raise ValueError(f"{language!r} is not a language tag") from None
        if isinstance(given, list) and all(isinstance(term, str) for term in given):
            given = ",".join(given)
        if not isinstance(given, str):
            raise ValueError(f"the keyterms for {tag} must be text or a list of texts")
        try:
            by_language[tag] = parse_keyterms(given)
        except ValueError as exc:
            raise ValueError(f"for {tag} {exc}") from None
    return tuple(by_language.items())


_POLICY_BOUNDS = {"silence_ms": (200, 10000), "ask_at_ms": (0, 2000), "quiet_ms": (0, 10000)}
"""The whole-number parts of a turn-end policy and their bounds, in ms."""


def _turn_end_policy(tag: str, given: Any) -> TurnEndPolicy:
    if not isinstance(given, dict) or "silence_ms" not in given:
        raise ValueError(f"the policy for {tag} must be an object with silence_ms")
    unknown = sorted(set(given) - {*_POLICY_BOUNDS, "threshold"})
    if unknown:
        raise ValueError(f"the policy for {tag} has no {', '.join(unknown)}")
    parts: dict[str, Any] = {}
    for name, (low, high) in _POLICY_BOUNDS.items():
        if name in given:
            number = given[name]
            if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
                raise ValueError(f"{name} for {tag} must be a whole number from {low} to {high}")
            parts[name] = number
    threshold = given.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold < 1:
            raise ValueError(f"threshold for {tag} must be a number from 0 to below 1, or null")
        parts["threshold"] = float(threshold)
    policy = TurnEndPolicy(**parts)
    if policy.uses_model and not policy.ask_at_ms <= policy.quiet_ms < policy.silence_ms:
        raise ValueError(f"for {tag} ask_at_ms <= quiet_ms < silence_ms must hold")
    return policy


def _by_language_tag(value: Any, what: str, every: str | None = None) -> list[tuple[str, Any]]:
    """A JSON object keyed by language tag (``every`` too, as it is), as :func:`_tagged` pairs; ``what`` says what
    the values are, for the error."""
    try:
        document = json.loads(_text(value))
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not JSON ({exc.msg})") from None
    if not isinstance(document, dict):
        raise ValueError(f"must be a JSON object of language tags to {what}")
    return _tagged(document.items(), every)


def _tagged(pairs: Iterable[tuple[str, Any]], every: str | None = None) -> list[tuple[str, Any]]:
    """(language, value) pairs with each language a tag written the usual way (``every`` as it is); a language that
    is no tag, or one named twice, is refused."""
    tagged: dict[str, Any] = {}
    for language, given in pairs:
        try:
            tag = language if language == every else language_tag(language)
        except InvalidInput:
            raise ValueError(f"{language!r} is not a language tag") from None
        if tag in tagged:
            raise ValueError(f"names {tag} twice")
        tagged[tag] = given
    return list(tagged.items())


def _turn_end_policies(value: Any) -> tuple[tuple[str, TurnEndPolicy], ...]:
    """A JSON object of language tags (``*``: any other language) to turn-end policies:
    ``{"es": {"silence_ms": 900}, "fr": {"threshold": 0.9, "quiet_ms": 600, "silence_ms": 900}}``. A ``*`` not
    given is the built-in one."""
    if isinstance(value, tuple):
        return value
    given_by_tag = _by_language_tag(value, 'policies ({"es": {"silence_ms": 900}})', EVERY_LANGUAGE)
    policies = {tag: _turn_end_policy(tag, given) for tag, given in given_by_tag}
    policies.setdefault(EVERY_LANGUAGE, dict(TURN_END_POLICIES)[EVERY_LANGUAGE])
    return tuple(policies.items())


LEX_LOCALE = r"[a-z]{2}_(?:[A-Z]{2}|419)"
"""A Lex V2 locale id: language, underscore, region (``en_US``, ``es_419``; docs/protocols.md, *Lex*)."""


def _lex_locales(value: Any) -> tuple[str, ...]:
    """Lex locale ids separated by commas (``es_US,fr_CA``)."""
    if isinstance(value, tuple):
        value = ",".join(value)
    locales = tuple(dict.fromkeys(part.strip() for part in _text(value).split(",") if part.strip()))
    wrong = [locale for locale in locales if not re.fullmatch(LEX_LOCALE, locale)]
    if wrong:
        raise ValueError(f"{wrong[0]!r} is not a Lex locale id (es_US)")
    return locales


def _voice_map(value: Any) -> tuple[tuple[str, str], ...]:
    """Sonic voices by language: ``es=<voice id>,fr-CA=<voice id>``, or the same as a JSON object."""
    if isinstance(value, tuple):
        return value
    text = _text(value).strip()
    what = 'voice ids ({"es": "<voice id>"})'
    if text.startswith("{"):
        voices = _by_language_tag(text, what)
        if not all(isinstance(voice, str) for _, voice in voices):
            raise ValueError(f"must be a JSON object of language tags to {what}")
    else:
        pairs = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            language, equals, voice = (part.strip() for part in item.partition("="))
            if not equals:
                raise ValueError(f"{item!r} is not language=voice-id")
            pairs.append((language, voice))
        voices = _tagged(pairs)
    for tag, voice in voices:
        if not VOICE_ID.fullmatch(voice):
            raise ValueError(f"the voice for {tag} is not a Cartesia voice id (a UUID)")
    return tuple(voices)


AGENT_LINES: tuple[str, ...] = ("greeting", "reprompt", "goodbye", "hold", "card")
"""The streaming agent's own lines, as ``A2A_LINES`` names them (``A2A_GREETING_TEXT`` ... ``A2A_CARD_TEXT``)."""


def _agent_lines(value: Any) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """The streaming agent's own lines by language: a JSON object of language tags to objects giving any of
    :data:`AGENT_LINES` (``{"es": {"greeting": "¡Hola!", "hold": "Un momento."}}``)."""
    if isinstance(value, tuple):
        return value
    by_language: dict[str, tuple[tuple[str, str], ...]] = {}
    for tag, lines in _by_language_tag(value, 'lines ({"es": {"greeting": "..."}})'):
        if not isinstance(lines, dict) or not lines:
            raise ValueError(f"the lines for {tag} must be a JSON object giving any of {', '.join(AGENT_LINES)}")
        for name, line in lines.items():
            if name not in AGENT_LINES:
                raise ValueError(f"{name!r} (for {tag}) is not a line the agent says: {', '.join(AGENT_LINES)}")
            if not isinstance(line, str) or not line.strip():
                raise ValueError(f"the {name} line for {tag} must be text, not empty")
        by_language[tag] = tuple((name, lines[name].strip()) for name in AGENT_LINES if name in lines)
    return tuple(by_language.items())


def _intent_actions(value: Any) -> tuple[tuple[str, Action], ...]:
    """``Intent=Action`` pairs separated by commas (``TransferToAgent=Transfer,Goodbye=Hangup``)."""
    if isinstance(value, tuple):
        value = ",".join(f"{intent}={action}" for intent, action in value)
    pairs: dict[str, Action] = {}
    for item in filter(None, (part.strip() for part in _text(value).split(","))):
        intent, equals, action = (part.strip() for part in item.partition("="))
        if not equals or not intent:
            raise ValueError(f"{item!r} is not Intent=Action")
        if intent in pairs:
            raise ValueError(f"names {intent} twice")
        pairs[intent] = Action.parse(action)
    return tuple(pairs.items())


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything a function of this product can be configured with; a bad value raises ConfigurationError."""

    # Speak path
    sonic_backend: SonicBackendName = field(default="sagemaker", metadata=_one_of(SonicBackendName))
    sonic_endpoint_name: str = ""
    sonic_default_voice: str = "a0e99841-438c-4a64-b679-ae501e7d6091"
    sonic_default_language: str = "en"
    sonic_voices: tuple[tuple[str, str], ...] = field(default=(), metadata=_checked_by(_voice_map))
    """The voice each language is spoken with (``es=<voice id>``); a language it does not name gets
    ``SONIC_DEFAULT_VOICE``."""
    sonic_model_id: str = "sonic-3"
    sonic_encoding: SonicEncoding = field(default="pcm_s16le", metadata=_one_of(SonicEncoding))
    sonic_sample_rate: int = field(default=24000, metadata=_whole(8000, 48000, among=_SONIC_RATES))
    sonic_resampler: ResamplerName = field(default="soxr", metadata=_one_of(ResamplerName))
    sonic_max_text_chars: int = field(default=1000, metadata=_whole(1, 10000))
    sonic_deadline_ms: int = field(default=6500, metadata=_whole(500, 8000))
    sonic_max_attempts: int = field(default=4, metadata=_whole(1, 10))
    sonic_pronunciation_map: tuple[tuple[str, str], ...] = field(default=(), metadata=_checked_by(_pronunciation_map))
    """How Sonic 3.5 and later on SageMaker (or a container) say the words it names: every prompt's default."""
    sonic_pronunciation_dict_id: str = field(
        default="", metadata=_matching(PRONUNCIATION_DICT_ID.pattern, "must be a pronunciation dictionary id")
    )
    """The Cartesia API's pronunciation dictionary for every prompt (``SONIC_BACKEND=cartesia-api``)."""
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
    ink_keyterms: tuple[tuple[str, tuple[str, ...]], ...] = field(default=(), metadata=_checked_by(_keyterms))
    """Words Ink is biased towards (``keyterm``) on every call, by language (``*``: every language it does not
    name); a flow's ``Keyterms`` replaces them (:meth:`keyterms_for`)."""
    ink_turn_end_timeout_ms: int | None = field(default=None, metadata=_whole(640, 11200, optional=True))
    ink_frame_ms: int = field(default=100, metadata=_whole(20, 500))
    voice_detector: VoiceDetectorName = field(default="silero", metadata=_one_of(VoiceDetectorName))
    end_of_turn_model: EndOfTurnUse = field(default="eager", metadata=_one_of(EndOfTurnUse))
    """Smart Turn judges each stop of the caller where a language's policy gives it a part. It ends English
    manual-mode turns only when asked (``ends``)."""
    turn_end_policy: tuple[tuple[str, TurnEndPolicy], ...] = field(
        default=TURN_END_POLICIES, metadata=_checked_by(_turn_end_policies)
    )
    """Per language, when the product ends a manual-mode turn: the model's threshold, where it is asked, the quiet
    before its "complete" ends the turn, and the silence that ends it whatever the model says (defaults: the
    benchmark's choice, docs/benchmarks.md, "End of turn")."""
    end_of_turn_eager_threshold: float | None = field(
        default=EAGER_END_POLICY.threshold, metadata=_fraction(optional=True, high=0.99)
    )
    """English on Ink's turns endpoint: the model's "complete" above this starts a speculative reply; unset (the
    default, docs/benchmarks.md, "End of turn"): none of ours, Ink's ``turn.eager_end`` alone."""
    end_of_turn_eager_ask_at_ms: int = field(default=EAGER_END_POLICY.ask_at_ms, metadata=_whole(0, 2000))
    ink_eager_end_threshold: float | None = field(default=0.5, metadata=_fraction(optional=True, low=0.3, high=0.6))
    """Ink's ``turn_eager_end_threshold``: the higher, the sooner ``turn.eager_end`` fires (and the more often the
    caller goes on after it). The SDK documents 0.3–0.6, default 0.4."""
    consumer_handoff_ms: int = field(default=30000, metadata=_whole(5000, 600000))
    ink_catch_up: InkCatchUp = field(default="skip-silence", metadata=_one_of(InkCatchUp))
    kvs_read_timeout_ms: int = field(default=3000, metadata=_whole(500, 30000))
    listen_retry_limit_ms: int = field(default=600_000, metadata=_whole(10_000, 3_600_000))
    await_max_wait_ms: int = field(default=7000, metadata=_whole(100, 7800))
    await_poll_interval_ms: int = field(default=40, metadata=_whole(10, 1000))
    converse_max_wait_ms: int = field(default=7000, metadata=_whole(100, 7800))
    converse_fast_poll_ms: int = field(default=10, metadata=_whole(5, 1000))
    converse_slow_poll_ms: int = field(default=250, metadata=_whole(10, 2000))
    converse_making_poll_ms: int = field(default=40, metadata=_whole(5, 1000))
    converse_hold_after_ms: int = field(default=4000, metadata=_whole(1000, 60000))
    converse_backchannel_ms: int = field(default=600, metadata=_whole(0, 3000))
    """The caller's voice over a reply shorter than this, the reply going on over it ("uh-huh"), is a backchannel:
    kept in the record, not answered (0: every turn is answered)."""

    # What is kept of a call: redaction, and the record written when listening ends
    redact_transcripts: RedactionMode = field(default="builtin", metadata=_one_of(RedactionMode))
    redact_entity_types: tuple[str, ...] = field(
        default=tuple(DEFAULT_PII_ENTITY_TYPES.split(",")), metadata=_checked_by(_entity_types)
    )
    """The Comprehend types ``comprehend`` redacts."""
    record_bucket: str = ""
    """Where call records go (``records/YYYY/MM/DD/<contact-id>.json``); empty: no record is written."""
    record_prefix: str = field(default="records/", metadata=_checked_by(_prefix))
    record_kms_key_id: str = ""
    """The customer-managed KMS key records are encrypted with; empty: the AWS managed key for S3 (``aws/s3``)."""
    record_event_bus: str = "default"

    # Converse path: the responder that answers a caller's turn
    responder: ResponderName = field(default="scripted", metadata=_one_of(ResponderName))
    responder_rules: str = ""
    responder_timeout_ms: int = field(default=8000, metadata=_whole(500, 30000))
    apology_text: str = "Sorry, I am having trouble right now. Could you say that again?"
    history_turns: int = field(default=10, metadata=_whole(0, 50))
    speculative_replies: OnOff = field(default="on", metadata=_one_of(OnOff))
    speculative_max_per_turn: int = field(default=2, metadata=_whole(1, 5))
    bedrock_model_id: str = ""
    bedrock_system_prompt: str = DEFAULT_SYSTEM_PROMPT
    bedrock_max_tokens: int = field(default=400, metadata=_whole(1, 65536))
    bedrock_temperature: float | None = field(default=None, metadata=_fraction(optional=True))
    bedrock_top_p: float | None = field(default=None, metadata=_fraction(optional=True))
    bedrock_latency: BedrockLatency = field(default="optimized", metadata=_one_of(BedrockLatency))
    bedrock_guardrail_id: str = field(
        default="",
        metadata=_matching(
            r"[a-z0-9]+|arn:aws(-[^:]+)?:bedrock:[a-z0-9-]{1,20}:[0-9]{12}:guardrail/[a-z0-9]+",
            "must be a guardrail id or ARN",
        ),
    )
    bedrock_guardrail_version: str = field(
        default="", metadata=_matching(r"[1-9][0-9]{0,7}|DRAFT", "must be DRAFT or a version number")
    )
    bedrock_transfer_text: str = "Let me connect you with a colleague."
    bedrock_hangup_text: str = "Thank you for calling. Goodbye."
    lex_bot_id: str = field(
        default="", metadata=_matching(r"[0-9A-Za-z]{10}", "must be a bot id (10 letters or digits)")
    )
    lex_bot_alias_id: str = ""
    lex_locale_id: str = field(default="en_US", metadata=_matching(LEX_LOCALE, "must be a Lex locale id (en_US)"))
    lex_locale_ids: tuple[str, ...] = field(default=(), metadata=_checked_by(_lex_locales))
    """The bot's other locales (``es_US,fr_CA``): a contact speaking one of their languages is answered in it."""
    lex_intent_actions: tuple[tuple[str, Action], ...] = field(default=(), metadata=_checked_by(_intent_actions))
    responder_function_arn: str = ""
    responder_function_side_effect_free: TrueFalse = field(default="false", metadata=_one_of(TrueFalse))
    """The customer's function may be asked speculatively (it changes nothing when asked about words the caller
    then does not say)."""

    # The streaming transport: the agent server Connect streams a voice contact to (docs/streaming.md)
    a2a_api_key_secret_arn: str = ""
    """The Secrets Manager secret holding the bearer key Connect presents (its previous version is accepted too)."""
    a2a_greeting_text: str = "Hello! Thanks for calling. How can I help you today?"
    a2a_reprompt_text: str = "Are you still there? I'm listening."
    a2a_goodbye_text: str = "I haven't heard anything for a while, so I'll hang up now. Goodbye!"
    a2a_hold_text: str = "One moment."
    """What the agent says, once a turn, when its reply has been ``converse_hold_after_ms`` in the making with nothing
    of it heard (the voice-agent flow's holding line)."""
    a2a_card_text: str = "A colleague will take your card details. Please hold."
    """What the agent says before it hands a caller who is to give a card number to a person (``ESCALATE``)."""
    a2a_lines: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = field(
        default=(), metadata=_checked_by(_agent_lines)
    )
    """The agent's own lines in the languages of its contacts (``{"es": {"greeting": "¡Hola!", ...}}``): a contact in
    a language it names (by tag, then primary language) hears them, and ``A2A_*_TEXT`` for any line not given."""
    a2a_silence_ms: int = field(default=7000, metadata=_checked_by(_off_or_silence))
    """How long the line stays quiet (nobody speaking, no reply being made) before the agent asks whether anyone is
    there, and, the second time, says goodbye; Connect's silence marker counts the same; 0: Connect's marker only."""
    a2a_output_lead_ms: int = field(default=160, metadata=_whole(40, 2000))
    """How far ahead of what the caller hears the agent's audio is sent: what Connect buffers, and what the caller
    still hears after the agent stops."""
    a2a_barge_in_pause_ms: int = field(default=80, metadata=_whole(20, 1000))
    """Voice this long over the agent's audio pauses it."""
    a2a_barge_in_ms: int = field(default=600, metadata=_whole(100, 3000))
    """Voice this long over the agent's audio interrupts it; shorter (a cough, "uh-huh") and the agent goes on."""
    a2a_output_sample_rate: int | None = field(
        default=None, metadata=_whole(8000, 24000, among=frozenset({8000, 16000, 24000}), optional=True)
    )
    """The rate the agent asks for its audio (8000, 16000 or 24000); unset: the rate Connect proposes."""

    def __post_init__(self) -> None:
        problems: list[str] = []
        for setting in fields(self):
            check: Check = setting.metadata.get("check", _text)
            try:
                object.__setattr__(self, setting.name, check(getattr(self, setting.name)))
            except ValueError as exc:
                problems.append(f"{setting.name.upper()}: {exc}")
                # The checks below read settings together: they see a refused one's default, not its raw text.
                object.__setattr__(self, setting.name, setting.default)
        problems.extend(_responder_problems(self))
        problems.extend(_sonic_problems(self))
        problems.extend(_key_problems(self))
        problems.extend(_sonic_model_problems(self))
        problems.extend(_ink_language_problems(self))
        if self.redact_transcripts == "comprehend" and primary(self.ink_language) not in COMPREHEND_PII_LANGUAGES:
            problems.append(
                f"REDACT_TRANSCRIPTS: comprehend finds PII in English and Spanish only, not INK_LANGUAGE "
                f"{self.ink_language!r}; use builtin"
            )
        if problems:
            raise ConfigurationError(f"invalid configuration: {'; '.join(problems)}")

    @property
    def notices(self) -> tuple[str, ...]:
        """What the settings check warns of without refusing: a setting that is taken but changes nothing."""
        if not sonic_model(self.sonic_model_id).speed_and_volume:
            return (
                f"SONIC_MODEL_ID: Cartesia has disabled speed and volume on {self.sonic_model_id} for now: a flow's "
                "Speed and Volume are ignored, and prompts that differ only in them are one prompt",
            )
        return ()

    def keyterms_for(self, language: str) -> tuple[str, ...]:
        """``INK_KEYTERMS`` for a contact in ``language``: its own (by tag, then primary language), else every
        language's."""
        by_language = dict(self.ink_keyterms)
        found = for_language(by_language, language)
        return found if found is not None else by_language.get(EVERY_LANGUAGE, ())

    @property
    def languages(self) -> Languages:
        """How each contact's language is listened to."""
        eager = TurnEndPolicy(
            silence_ms=0,
            threshold=self.end_of_turn_eager_threshold,
            ask_at_ms=self.end_of_turn_eager_ask_at_ms,
            quiet_ms=self.end_of_turn_eager_ask_at_ms,
        )
        return Languages(
            self.ink_language, self.ink_mode, self.ink_model, self.end_of_turn_model, self.turn_end_policy, eager
        )

    @property
    def redaction_by_language(self) -> str:
        """What is redacted in a contact's words, by its language (the settings check logs it)."""
        spoken = "/".join(sorted(SPOKEN_NUMBER_LANGUAGES))
        builtin = (
            f"the built-in redactor reads digits in every language and spoken numbers in {spoken} only (other "
            "languages' number words are kept)"
        )
        if self.redact_transcripts == "off":
            return "nothing is redacted, in any language"
        if self.redact_transcripts == "comprehend":
            found = "/".join(sorted(COMPREHEND_PII_LANGUAGES))
            return f"Comprehend finds {','.join(self.redact_entity_types)} in {found}; in other languages {builtin}"
        return builtin

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


_LOOPBACK = re.compile(r"http://(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(/.*)?")


def _key_problems(settings: Settings) -> list[str]:
    """The Cartesia API key travels with every request to these URLs: https only, but for the local cloud's
    loopback address."""
    urls = {"CARTESIA_BASE_URL": settings.cartesia_base_url}
    if settings.sonic_backend == "cartesia-api" and settings.sonic_base_url:
        urls["SONIC_BASE_URL"] = settings.sonic_base_url
    return [
        f"{name}: must be an https:// URL (the API key travels with every request)"
        for name, url in urls.items()
        if not url.startswith("https://") and not _LOOPBACK.fullmatch(url)
    ]


def _sonic_problems(settings: Settings) -> list[str]:
    """A container has no address of its own to fall back on: the backend that speaks to one needs its URL."""
    if settings.sonic_backend != "container":
        return []
    url = settings.sonic_base_url or ""
    if not url:
        return ["SONIC_BASE_URL: must be set when SONIC_BACKEND is container"]
    if not re.fullmatch(r"https?://[^/\s?#]+(/[^\s?#]*)?", url):
        return ["SONIC_BASE_URL: must be an http:// or https:// URL"]
    return []


def _sonic_model_problems(settings: Settings) -> list[str]:
    """A SageMaker endpoint or container runs one of the packages Cartesia publishes, whose name decides what a
    request may carry; pronunciation comes as a map there and as a stored dictionary on the Cartesia API."""
    problems = []
    packaged = settings.sonic_backend != "cartesia-api"
    if packaged and settings.sonic_model_id not in SONIC_PACKAGES:
        problems.append(
            f"SONIC_MODEL_ID: must name the model package the endpoint runs, {', '.join(SONIC_PACKAGES)}, "
            f"when SONIC_BACKEND is {settings.sonic_backend}"
        )
    if settings.sonic_pronunciation_map:
        if not packaged:
            problems.append("SONIC_PRONUNCIATION_MAP: the Cartesia API takes SONIC_PRONUNCIATION_DICT_ID instead")
        elif settings.sonic_model_id in SONIC_PACKAGES and not sonic_model(settings.sonic_model_id).pronunciation_map:
            problems.append(f"SONIC_PRONUNCIATION_MAP: needs Sonic 3.5 or later, not {settings.sonic_model_id}")
    if settings.sonic_pronunciation_dict_id and packaged:
        problems.append("SONIC_PRONUNCIATION_DICT_ID: is for the Cartesia API; a Sonic package takes a map")
    return problems


def _ink_language_problems(settings: Settings) -> list[str]:
    """The default language must be one an Ink model transcribes (:mod:`voicebridge.language`)."""
    try:
        settings.languages.listening(None)
    except (InvalidInput, LanguageNotServed) as exc:
        return [f"INK_LANGUAGE: {exc.safe_message}"]
    return []


_RESPONDER_NEEDS = {
    "bedrock": ("bedrock_model_id",),
    "lex": ("lex_bot_id", "lex_bot_alias_id"),
    "lambda": ("responder_function_arn",),
}


def _responder_problems(settings: Settings) -> list[str]:
    """What the chosen responder needs and is not given: the settings that only make sense together."""
    problems = [
        f"{name.upper()}: must be set when RESPONDER is {settings.responder}"
        for name in _RESPONDER_NEEDS.get(settings.responder, ())
        if not getattr(settings, name)
    ]
    if bool(settings.bedrock_guardrail_id) != bool(settings.bedrock_guardrail_version):
        problems.append("BEDROCK_GUARDRAIL_ID, BEDROCK_GUARDRAIL_VERSION: must be set together")
    return problems
