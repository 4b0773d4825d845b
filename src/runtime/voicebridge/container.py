"""Per-container wiring: everything a Lambda container builds once and every invocation reuses.

Settings, AWS clients, the Cartesia API key, a speech request's defaults, the turn table, the prompt store, the
synthesizer, the Ink client, the KVS media sources and the responder are built lazily, on first use, and kept for the
container's lifetime; the consumer's Ink sessions and reply worker, one per call, are made here too. Handlers take
them from here; nothing else in the runtime builds a client or caches one. A component is given only the settings it
reads, never the whole :class:`~voicebridge.config.Settings`. Each factory imports what it builds when it first
builds it, so a function loads only the libraries it uses (AwaitTurn never loads numpy, soxr or the Cartesia SDK)::

    from voicebridge import container

    store = container.turn_store()          # built on the first call, the same object afterwards
    container.reset()                       # a new container: tests only

A factory that fails (an empty secret, a missing setting) stores nothing, so the next invocation tries again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, Unpack, cast, overload

if TYPE_CHECKING:
    # Type stubs only: the functions' artifacts do not ship them.
    from botocore.client import BaseClient
    from types_boto3_bedrock_runtime.client import BedrockRuntimeClient
    from types_boto3_comprehend.client import ComprehendClient
    from types_boto3_dynamodb.client import DynamoDBClient
    from types_boto3_events.client import EventBridgeClient
    from types_boto3_kinesis_video_media.client import KinesisVideoMediaClient
    from types_boto3_kinesisvideo.client import KinesisVideoClient
    from types_boto3_lambda.client import LambdaClient
    from types_boto3_lexv2_runtime.client import LexRuntimeV2Client
    from types_boto3_s3.client import S3Client
    from types_boto3_sagemaker_runtime.client import SageMakerRuntimeClient
    from types_boto3_secretsmanager.client import SecretsManagerClient

    from voicebridge.a2a.session import Engine
    from voicebridge.call.record import CallRecorder
    from voicebridge.config import Settings
    from voicebridge.converse.responder import Responder
    from voicebridge.converse.worker import ReplyWorker
    from voicebridge.ink.session import InkSession, TurnListener
    from voicebridge.ink.transcriber import MetricSink
    from voicebridge.kvs.media import MediaSource
    from voicebridge.language import Listening
    from voicebridge.redaction import Redactor
    from voicebridge.sonic.backends import SonicBackend
    from voicebridge.sonic.request import RequestSettings
    from voicebridge.sonic.synthesizer import Synthesizer
    from voicebridge.store.prompts import PromptStore
    from voicebridge.store.replies import ReplyStore
    from voicebridge.store.turns import Checkpoint, TurnStore

T = TypeVar("T")
Service = Literal[
    "bedrock-runtime",
    "comprehend",
    "connect",
    "dynamodb",
    "events",
    "kinesis-video-media",
    "kinesisvideo",
    "lambda",
    "lexv2-runtime",
    "s3",
    "sagemaker-runtime",
    "secretsmanager",
]
"""The AWS services the runtime calls; each overload of :func:`client` names its client's type."""


class ClientOptions(TypedDict, total=False):
    """How :func:`client` may be asked to configure a client."""

    read_timeout: float
    pool: int
    endpoint_url: str | None
    retries: int


_lock = threading.RLock()
_built: dict[tuple[Any, ...], Any] = {}


def _once(key: tuple[Any, ...], build: Callable[[], T]) -> T:
    try:
        return cast(T, _built[key])
    except KeyError:
        pass
    with _lock:
        if key not in _built:
            _built[key] = build()
        return cast(T, _built[key])


def reset() -> None:
    """Forget everything built so far, as a new container would start."""
    with _lock:
        _built.clear()


def settings() -> Settings:
    """The container's settings, read from the environment once."""
    from voicebridge.config import Settings

    def build() -> Settings:
        from voicebridge.telemetry import logger

        read = Settings.from_env()
        for notice in read.notices:
            logger.warning("settings check", notice=notice)
        logger.info("settings check", redaction=read.redaction_by_language)
        logger.info("settings check", turn_ends=read.languages.ends_by_language())
        return read

    return _once(("settings",), build)


# One overload per service, so each caller gets its service's client type (the ``types-boto3`` stubs, which only the
# type checker reads).
@overload
def client(service: Literal["bedrock-runtime"], **options: Unpack[ClientOptions]) -> BedrockRuntimeClient: ...
@overload
def client(service: Literal["comprehend"], **options: Unpack[ClientOptions]) -> ComprehendClient: ...
@overload
def client(service: Literal["connect"], **options: Unpack[ClientOptions]) -> Any: ...
@overload
def client(service: Literal["dynamodb"], **options: Unpack[ClientOptions]) -> DynamoDBClient: ...
@overload
def client(service: Literal["events"], **options: Unpack[ClientOptions]) -> EventBridgeClient: ...
@overload
def client(service: Literal["kinesis-video-media"], **options: Unpack[ClientOptions]) -> KinesisVideoMediaClient: ...
@overload
def client(service: Literal["kinesisvideo"], **options: Unpack[ClientOptions]) -> KinesisVideoClient: ...
@overload
def client(service: Literal["lambda"], **options: Unpack[ClientOptions]) -> LambdaClient: ...
@overload
def client(service: Literal["lexv2-runtime"], **options: Unpack[ClientOptions]) -> LexRuntimeV2Client: ...
@overload
def client(service: Literal["s3"], **options: Unpack[ClientOptions]) -> S3Client: ...
@overload
def client(service: Literal["sagemaker-runtime"], **options: Unpack[ClientOptions]) -> SageMakerRuntimeClient: ...
@overload
def client(service: Literal["secretsmanager"], **options: Unpack[ClientOptions]) -> SecretsManagerClient: ...


def client(
    service: Service, *, read_timeout: float = 10.0, pool: int = 16, endpoint_url: str | None = None, retries: int = 2
) -> BaseClient:
    """A shared boto3 client; keep-alive connections in a pool sized for concurrent generations.

    Endpoints come from boto3's own ``AWS_ENDPOINT_URL_<SERVICE>`` variables (the local cloud sets them), or from
    ``endpoint_url`` for services whose data endpoint is discovered at run time (KVS GetMedia). ``retries`` is how
    many times botocore may repeat a failed call by itself (botocore's ``max_attempts`` counts retries only): 0 for a
    call that must not be made twice."""

    def build() -> BaseClient:
        from botocore.config import Config

        from voicebridge.aws import session

        config = Config(
            connect_timeout=2,
            read_timeout=read_timeout,
            max_pool_connections=pool,
            retries={"mode": "standard", "max_attempts": retries},
            tcp_keepalive=True,
        )
        return session().client(service, config=config, endpoint_url=endpoint_url)

    return _once(("client", service, read_timeout, pool, endpoint_url, retries), build)


def cartesia_api_key() -> str:
    """The Cartesia API key from Secrets Manager, read again on every call while the secret is still empty."""
    from voicebridge.cartesia_key import read_api_key

    arn = settings().cartesia_api_key_secret_arn
    return _once(("cartesia_api_key", arn), lambda: read_api_key(arn, client("secretsmanager")))


def turn_store() -> TurnStore:
    """The DynamoDB turn table: turns and the consumer's checkpoints."""
    from voicebridge.store.turns import TurnStore

    config = settings()
    return _once(
        ("turn_store",), lambda: TurnStore(config.turn_table, client("dynamodb"), ttl_days=config.turn_ttl_days)
    )


def redactor(language: str | None = None) -> Redactor:
    """The redactor ``REDACT_TRANSCRIPTS`` names for a contact in ``language`` (None: ``INK_LANGUAGE``); Comprehend's
    with its client, counting ``RedactionFallbacks`` when a request fails and the built-in redactor stands in, for the
    languages Comprehend finds PII in, the built-in redactor for the others."""
    from voicebridge.language import primary

    config = settings()
    spoken = primary(language or config.ink_language)

    def build() -> Redactor:
        from voicebridge.config import COMPREHEND_PII_LANGUAGES
        from voicebridge.redaction import BuiltinRedactor, NoRedaction

        if config.redact_transcripts == "off":
            return NoRedaction()
        if config.redact_transcripts == "builtin" or spoken not in COMPREHEND_PII_LANGUAGES:
            return BuiltinRedactor()
        from aws_lambda_powertools.metrics import MetricUnit

        from voicebridge.redaction.comprehend import ComprehendRedactor
        from voicebridge.telemetry import logger, metrics

        def fell_back(why: str) -> None:
            logger.warning("Comprehend did not answer; the built-in redactor stood in", reason=why)
            metrics.add_metric(name="RedactionFallbacks", unit=MetricUnit.Count, value=1)

        return ComprehendRedactor(
            client("comprehend", read_timeout=2.0, retries=1),
            language=spoken,
            entity_types=config.redact_entity_types,
            on_fallback=fell_back,
        )

    return _once(("redactor", spoken), build)


def call_recorder() -> CallRecorder:
    """Writes each contact's record when listening ends (RECORD_BUCKET; none without it) and redacts the table."""
    from voicebridge.call.record import CallRecorder, RecordSettings

    config = settings()
    return _once(
        ("call_recorder",),
        lambda: CallRecorder(
            RecordSettings(
                bucket=config.record_bucket,
                prefix=config.record_prefix,
                kms_key_id=config.record_kms_key_id,
                event_bus=config.record_event_bus,
            ),
            turn_store(),
            client("s3"),
            client("events"),
            redactor(),
            redactor_for=redactor,
        ),
    )


def reply_store() -> ReplyStore:
    """The agent's replies, their status and the conversation's history, in the turn table."""
    from voicebridge.store.replies import ReplyStore

    return _once(("reply_store",), lambda: ReplyStore(turn_store()))


def prompt_store() -> PromptStore:
    """The S3 prompt cache, with its per-container index of prompts known to exist."""
    from voicebridge.store.prompts import PromptStore

    config = settings()
    return _once(
        ("prompt_store",),
        lambda: PromptStore(config.prompt_bucket, client("s3"), region=config.aws_region, prefix=config.prompt_prefix),
    )


def pause_uri() -> str:
    """Where the silent prompt the long polls hand out is (no call to S3: the consumer stores it as it starts)."""
    from voicebridge.errors import ConfigurationError
    from voicebridge.store.prompts import pause_uri as uri

    config = settings()
    if not config.prompt_bucket:
        raise ConfigurationError("PROMPT_BUCKET is not set")
    return uri(config.prompt_bucket, config.aws_region, config.prompt_prefix)


def store_pause() -> None:
    """Store the silent prompt the long polls hand out, once per container; a failure is logged, not fatal (the
    flow's prompt block then takes its error branch)."""
    from voicebridge.errors import VoiceBridgeError
    from voicebridge.telemetry import logger

    def store() -> bool:
        try:
            prompt_store().pause()
        except VoiceBridgeError as exc:
            logger.warning("the silent prompt could not be stored", reason=exc.safe_message)
            return False
        return True

    if not _once(("pause",), store):
        # Not kept: the next invocation tries again.
        with _lock:
            _built.pop(("pause",), None)


def sonic_backend() -> SonicBackend:
    """Where Sonic runs (``SONIC_BACKEND``): what the Speak path's synthesizer and the streaming voice both speak
    with."""

    def build() -> SonicBackend:
        from voicebridge.sonic.backends import STALL_TIMEOUT_S, CartesiaApiBackend, ContainerBackend, SageMakerBackend

        config = settings()
        backend: SonicBackend
        if config.sonic_backend == "container":
            # A fleet of Sonic containers of your own, spoken to as SageMaker speaks to one (POST /invocations).
            backend = ContainerBackend(config.sonic_base_url or "", stall_timeout_s=STALL_TIMEOUT_S)
        elif config.sonic_backend == "cartesia-api":
            # A self-hosted Sonic (SONIC_BASE_URL) may live apart from the Cartesia API that serves Ink.
            backend = CartesiaApiBackend(
                api_key=cartesia_api_key(),
                base_url=config.sonic_base_url or config.cartesia_base_url,
                model_id=config.sonic_model_id,
            )
        else:
            # The read timeout bounds a stall between two parts, not the whole generation.
            runtime = client("sagemaker-runtime", read_timeout=STALL_TIMEOUT_S, pool=32)
            backend = SageMakerBackend(config.sonic_endpoint_name, runtime)
        return backend

    return _once(("sonic_backend",), build)


def synthesizer() -> Synthesizer:
    """The Speak path's synthesizer on the configured Sonic backend."""

    def build() -> Synthesizer:
        from voicebridge.sonic.synthesizer import SynthesisSettings, Synthesizer

        config = settings()
        read = SynthesisSettings(
            sonic_encoding=config.sonic_encoding,
            sonic_sample_rate=config.sonic_sample_rate,
            sonic_resampler=config.sonic_resampler,
            sonic_max_attempts=config.sonic_max_attempts,
        )
        return Synthesizer(read, sonic_backend(), prompt_store())

    return _once(("synthesizer",), build)


def request_settings() -> RequestSettings:
    """What a speech request is limited by and falls back on, whether a flow or a responder's reply asks."""
    from voicebridge.sonic.request import RequestSettings

    config = settings()
    return _once(
        ("request_settings",),
        lambda: RequestSettings(
            sonic_max_text_chars=config.sonic_max_text_chars,
            sonic_default_voice=config.sonic_default_voice,
            sonic_default_language=config.sonic_default_language,
            sonic_backend=config.sonic_backend,
            sonic_model_id=config.sonic_model_id,
            sonic_pronunciation_map=config.sonic_pronunciation_map,
            sonic_pronunciation_dict_id=config.sonic_pronunciation_dict_id,
            sonic_voices=config.sonic_voices,
        ),
    )


def spoken_in(language: str) -> RequestSettings:
    """:func:`request_settings` for a contact in ``language``: ``SONIC_VOICES``' voice for it, else the default voice
    (logged for another language than the default's); ``SONIC_DEFAULT_LANGUAGE`` as written for the default's
    language, else the primary language alone (Sonic 3 takes two-letter codes only, docs/protocols.md)."""
    from voicebridge.language import for_language, primary
    from voicebridge.telemetry import logger

    config = settings()
    own = primary(language) == primary(config.sonic_default_language)
    voice = for_language(dict(config.sonic_voices), language)
    if voice is None and not own:
        logger.info("no voice mapped for the contact's language: SONIC_DEFAULT_VOICE speaks it", language=language)
    return replace(
        request_settings(),
        sonic_default_language=config.sonic_default_language if own else primary(language),
        sonic_default_voice=voice or config.sonic_default_voice,
    )


def ink_client() -> Any:
    """The Cartesia SDK client that opens Ink sessions."""

    def build() -> Any:
        from cartesia import Cartesia

        return Cartesia(api_key=cartesia_api_key(), base_url=settings().cartesia_base_url)

    return _once(("ink_client",), build)


def media_source(stream_arn: str) -> MediaSource:
    """GetMedia for one stream, on the container's clients (one per data endpoint)."""

    from voicebridge.kvs.media import MediaSource

    timeout_s = settings().kvs_read_timeout_ms / 1000
    return MediaSource(
        stream_arn,
        control=client("kinesisvideo"),
        media_client=lambda endpoint: client("kinesis-video-media", read_timeout=timeout_s, endpoint_url=endpoint),
    )


def responder() -> Responder:
    """The configured responder (``RESPONDER``), with its rules file or system prompt read once, from S3 if named so.

    Its client never retries by itself: a retry would outlast the turn's deadline, and Lex and the customer's
    function are not idempotent (a second RecognizeText moves the dialog on, a second Invoke runs the code again)."""

    def build() -> Responder:
        from voicebridge.converse.documents import read_document

        config = settings()
        timeout_s = config.responder_timeout_ms / 1000
        if config.responder == "bedrock":
            from voicebridge.converse.responders.bedrock import BedrockResponder

            guardrail = (config.bedrock_guardrail_id, config.bedrock_guardrail_version)
            return BedrockResponder(
                client("bedrock-runtime", read_timeout=timeout_s, retries=0),
                model_id=config.bedrock_model_id,
                system_prompt=read_document(
                    config.bedrock_system_prompt, lambda: client("s3"), setting="BEDROCK_SYSTEM_PROMPT"
                ),
                max_tokens=config.bedrock_max_tokens,
                temperature=config.bedrock_temperature,
                top_p=config.bedrock_top_p,
                latency=config.bedrock_latency,
                region=config.aws_region,
                guardrail=guardrail if all(guardrail) else None,
                transfer_text=config.bedrock_transfer_text,
                hangup_text=config.bedrock_hangup_text,
            )
        if config.responder == "lex":
            from voicebridge.converse.responders.lex import LexResponder

            return LexResponder(
                client("lexv2-runtime", read_timeout=timeout_s, retries=0),
                bot_id=config.lex_bot_id,
                bot_alias_id=config.lex_bot_alias_id,
                locale_id=config.lex_locale_id,
                locale_ids=config.lex_locale_ids,
                intent_actions=dict(config.lex_intent_actions),
            )
        if config.responder == "lambda":
            from voicebridge.converse.responders.function import FunctionResponder

            return FunctionResponder(
                client("lambda", read_timeout=timeout_s, retries=0),
                function=config.responder_function_arn,
                side_effect_free=config.responder_function_side_effect_free == "true",
            )
        from voicebridge.converse.responders.scripted import ScriptedResponder
        from voicebridge.errors import ConfigurationError

        if not config.responder_rules:
            raise ConfigurationError("RESPONDER_RULES: must name the rules file (s3://bucket/key) or hold its JSON")
        return ScriptedResponder.from_json(
            read_document(config.responder_rules, lambda: client("s3"), setting="RESPONDER_RULES")
        )

    return _once(("responder",), build)


def ink_session(
    listener: TurnListener,
    name: str,
    keyterms: tuple[str, ...] | None = None,
    listening: Listening | None = None,
) -> InkSession:
    """A new Ink session for one of a call's tracks (not kept: the consumer opens one per track, and again after a
    drop), on the container's Ink client and settings. ``listening`` is how the contact's language is listened to
    (None: ``INK_LANGUAGE``'s way); ``keyterms`` are the flow's, else ``INK_KEYTERMS``' for that language."""
    from voicebridge.ink.session import InkSession

    config = settings()
    chosen = listening or config.languages.listening(None)
    return InkSession(
        ink_client(),
        listener,
        mode=chosen.mode,
        model=chosen.model,
        language=chosen.base,
        end_timeout_ms=config.ink_turn_end_timeout_ms,
        eager_end_threshold=config.ink_eager_end_threshold,
        keyterms=config.keyterms_for(chosen.language) if keyterms is None else keyterms,
        name=name,
    )


def reply_worker(checkpoint: Checkpoint, sink: MetricSink) -> ReplyWorker:
    """The worker answering a call's turns with the configured responder, speaking with the Speak path's
    synthesizer (not kept: one per call's invocation), reporting to the consumer's ``sink``."""

    from aws_lambda_powertools.metrics import MetricUnit

    from voicebridge.converse.making import ReplySettings, Spoken
    from voicebridge.converse.worker import ReplyWorker
    from voicebridge.sonic.request import SpeechRequest

    config = settings()
    speaker = synthesizer()
    language = checkpoint.language or config.sonic_default_language
    defaults = spoken_in(language)

    def speak(text: str, deadline: float, cancel: threading.Event | None = None, *, reply: object = None) -> Spoken:
        request = SpeechRequest.from_parameters({"Text": text}, defaults)
        prompt = speaker.synthesize(request, deadline=deadline, cancel=cancel)
        if prompt.time_to_first_byte_ms is not None:
            sink.add("SonicTimeToFirstByte", MetricUnit.Milliseconds, prompt.time_to_first_byte_ms)
        sink.add("PromptCacheHit", MetricUnit.Count, 1 if prompt.cache_hit else 0)
        return Spoken(prompt.uri, prompt.synthesis_ms, prompt.first_byte_at, prompt.duration_ms)

    return ReplyWorker(
        checkpoint.contact_id,
        responder=responder(),
        speak=speak,
        replies=reply_store(),
        settings=replace(ReplySettings.of(config), language=language),
        attributes=checkpoint.attributes,
        report=sink.add,
    )


def a2a_engine() -> Engine:
    """The conversation engine's parts for the streaming transport's sessions (the flows path's own, shared)."""
    from botocore.exceptions import BotoCoreError, ClientError

    from voicebridge.a2a.session import Engine
    from voicebridge.a2a.voice import StreamingVoice
    from voicebridge.call.consumer import write_record
    from voicebridge.telemetry import logger

    config = settings()

    def voice(sample_rate: int, language: str) -> StreamingVoice:
        return StreamingVoice(sonic_backend(), spoken_in(language), sample_rate, max_attempts=config.sonic_max_attempts)

    def contact_language(instance_arn: str, contact_id: str) -> str | None:
        try:
            answer = client("connect", retries=2).get_contact_attributes(
                InstanceId=instance_arn.rsplit("/", 1)[-1], InitialContactId=contact_id
            )
        except (BotoCoreError, ClientError) as exc:
            logger.warning("the contact's attributes could not be read: INK_LANGUAGE", reason=type(exc).__name__)
            return None
        return str(answer.get("Attributes", {}).get("Language") or "") or None

    def update_attributes(instance_arn: str, contact_id: str, attributes: Mapping[str, str]) -> None:
        client("connect", retries=2).update_contact_attributes(
            InitialContactId=contact_id, InstanceId=instance_arn.rsplit("/", 1)[-1], Attributes=dict(attributes)
        )

    return Engine(
        store=turn_store(),
        replies=reply_store(),
        open_ink=ink_session,
        responder=responder,
        voice=voice,
        contact_language=contact_language,
        write_record=lambda contact_id, generation, sink: write_record(call_recorder, contact_id, generation, sink),
        update_attributes=update_attributes,
    )
