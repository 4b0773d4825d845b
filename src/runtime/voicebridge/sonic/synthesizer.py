"""The Speak path's domain: text in, a playable prompt out.

1. Validate and hash the request; a cached prompt answers at once (no model call).
2. Otherwise stream a generation from the backend and convert each chunk to 8 kHz µ-law *as it arrives*, so the WAV
   is ready the moment the model finishes.
3. Retry throttling and stream failures with jittered exponential backoff, but only inside the deadline: Connect
   waits at most 8 s, and a caller is better served by Connect's own voice (``Fallback``) than by silence.
4. Store the finished WAV (one PutObject: never half-written) and return its URL.
5. A caller that no longer needs the prompt (a speculative reply the caller's words did not confirm) sets the
   ``cancel`` event it passed: the stream is abandoned at its next chunk, its connection closed, nothing stored, and
   :class:`SynthesisCancelled` raised.

What the endpoint accepts is learnt once per container and kept, since the package behind it never changes while
the container lives: an endpoint that refuses ``pcm_mulaw`` (undocumented either way) is served by converting from
PCM, and one that refuses ``pcm_s16le`` is asked for ``pcm``, Sonic 3's name for the same samples
(``cartesia-ai/cartesia-aws``: ``sonic-3-jumpstart/README.md`` says ``pcm``, Sonic 3.5's README ``pcm_s16le``). Each
switch is logged once. A model's 422 carries its reason, but what Sonic 3 says of an encoding it does not know is
undocumented, so until a PCM name has worked any 422 is tried once more under the next name; after that, a 422 is
the request's own fault and goes straight to the flow.

Every stream opened against the model is counted in ``SonicStreamSeconds`` (CloudWatch, Embedded Metric Format,
written when the stream closes, failed attempts included), with the dimensions ``SonicBackend`` and ``SonicTarget``
(the backend's identity: ``container`` and the fleet's address, say). Its sum over a minute divided by 60 is the
number of streams the bridge held open against that target on average: the load a Sonic fleet scales on.

The converter (numpy, soxr) is imported by the first generation, so a container whose prompts come from the cache
never loads it.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from voicebridge.errors import (
    AudioFormatError,
    InvalidInput,
    ModelUnavailable,
    RetryableModelError,
    StorageError,
    VoiceBridgeError,
)
from voicebridge.sonic.backends import OutputFormat, SonicBackend
from voicebridge.sonic.request import SpeechRequest
from voicebridge.store.prompts import PromptStore, StoredPrompt
from voicebridge.telemetry import NAMESPACE, in_context, logger

if TYPE_CHECKING:
    from voicebridge.audio.convert import MulawConverter
    from voicebridge.config import ResamplerName, SonicEncoding

BACKOFF_BASE_S = 0.05
BACKOFF_CAP_S = 0.8
MIN_ATTEMPT_S = 0.4
"""Time an attempt needs to be worth starting: Sonic's first audio takes ~40–90 ms, a short prompt ~200 ms more."""
STREAM_SECONDS_METRIC = "SonicStreamSeconds"


@dataclass(frozen=True, slots=True)
class SynthesisSettings:
    """What the synthesizer reads of the settings (built by :mod:`voicebridge.container`)."""

    sonic_encoding: SonicEncoding
    sonic_sample_rate: int
    sonic_resampler: ResamplerName
    sonic_max_attempts: int


@dataclass(frozen=True, slots=True)
class Prompt:
    """A prompt ready to play, and how it was made."""

    uri: str
    duration_ms: int
    cache_hit: bool
    time_to_first_byte_ms: float | None = None
    synthesis_ms: float | None = None
    attempts: int = 0
    first_byte_at: float | None = None
    """When the model's first audio arrived (epoch seconds); None for a cached prompt."""


@dataclass(frozen=True, slots=True)
class Generation:
    wav: bytes
    duration_ms: int
    time_to_first_byte_ms: float
    synthesis_ms: float
    first_byte_at: float


class SynthesisCancelled(Exception):
    """The caller cancelled the synthesis (its ``cancel`` event was set): nothing was stored."""


Lookup = Future[StoredPrompt | None]
"""The prompt cache's answer for the text being synthesized, arriving while the model runs."""


class Synthesizer:
    """Turns :class:`SpeechRequest` into a stored :class:`Prompt`."""

    def __init__(self, settings: SynthesisSettings, backend: SonicBackend, store: PromptStore) -> None:
        self._settings = settings
        self._backend = backend
        self._store = store
        self._mulaw_native = settings.sonic_encoding == "pcm_mulaw"
        names = backend.pcm_names
        self._pcm_name: str | None = names[0] if len(names) == 1 else None
        """The model's name for 16-bit PCM, once known: before it is, each name is tried in turn."""
        self._lookup_pool: ThreadPoolExecutor | None = None
        self._output_identity = (
            f"{settings.sonic_encoding}@{settings.sonic_sample_rate}/{settings.sonic_resampler}"
            if settings.sonic_encoding == "pcm_s16le"
            else "pcm_mulaw@8000"
        )

    def synthesize(
        self,
        request: SpeechRequest,
        *,
        deadline: float,
        cancel: threading.Event | None = None,
        store_by: float | None = None,
    ) -> Prompt:
        """A playable prompt for ``request``; raises ModelUnavailable when the deadline leaves no way to make one,
        SynthesisCancelled once ``cancel`` is set, and StorageError when a new prompt is not stored by ``store_by``
        (``time.monotonic()`` seconds; None: however long S3 takes) — the write goes on, and the same text later is a
        cache hit once it lands."""
        digest = request.cache_key(self._backend.identity, self._output_identity)
        known = self._store.known(digest)
        if known is not None:
            return Prompt(known.uri, known.duration_ms, cache_hit=True)
        # The S3 lookup runs while the model starts: new text (the common miss) no longer waits for a HeadObject
        # before Sonic is asked, and a prompt found meanwhile stops the generation at its next chunk.
        lookup = self._lookups().submit(in_context(self._store.lookup), digest)
        try:
            generation, attempts = self._generate_with_retries(request, deadline, GenerationWatch(lookup, cancel))
        except _StoredMeanwhile as found:
            return Prompt(found.prompt.uri, found.prompt.duration_ms, cache_hit=True)
        except VoiceBridgeError:
            # The model failed, but the prompt may be stored already: a cache hit needs no model.
            stored_before = _answer(lookup, timeout_s=max(0.0, min(1.0, deadline - time.monotonic())))
            if stored_before is not None:
                return Prompt(stored_before.uri, stored_before.duration_ms, cache_hit=True)
            raise
        stored = self._stored(digest, generation, request.text, store_by)
        return Prompt(
            stored.uri,
            generation.duration_ms,
            cache_hit=False,
            time_to_first_byte_ms=generation.time_to_first_byte_ms,
            synthesis_ms=generation.synthesis_ms,
            attempts=attempts,
            first_byte_at=generation.first_byte_at,
        )

    def _stored(self, digest: str, generation: Generation, text: str, store_by: float | None) -> StoredPrompt:
        if store_by is None:
            return self._store.put(digest, generation.wav, duration_ms=generation.duration_ms, text=text)
        put: Future[StoredPrompt] = self._lookups().submit(
            in_context(self._store.put), digest, generation.wav, duration_ms=generation.duration_ms, text=text
        )
        try:
            return put.result(timeout=max(0.0, store_by - time.monotonic()))
        except FutureTimeout:
            raise StorageError("the prompt was not stored before the answer was due (S3 slow)") from None

    def _lookups(self) -> ThreadPoolExecutor:
        if self._lookup_pool is None:
            self._lookup_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="prompt-lookup")
        return self._lookup_pool

    def _generate_with_retries(
        self, request: SpeechRequest, deadline: float, watch: GenerationWatch
    ) -> tuple[Generation, int]:
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._generate(request, deadline, watch), attempt
            except RetryableModelError as exc:
                delay = random.uniform(0, min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1)))
                remaining = deadline - time.monotonic()
                if attempt >= self._settings.sonic_max_attempts or remaining < delay + MIN_ATTEMPT_S:
                    raise ModelUnavailable(f"gave up after {attempt} attempt(s): {exc.safe_message}") from exc
                logger.warning("sonic attempt failed; retrying", attempt=attempt, reason=exc.safe_message)
                time.sleep(delay)

    def _generate(self, request: SpeechRequest, deadline: float, watch: GenerationWatch) -> Generation:
        if not self._mulaw_native:
            return self._pcm(request, deadline, watch)
        try:
            return self._run(request, OutputFormat("pcm_mulaw", 8000), deadline, watch)
        except InvalidInput:
            # Whether the package accepts 8 kHz µ-law is undocumented: when PCM succeeds where µ-law was
            # rejected, convert from PCM for the rest of this container's life.
            generation = self._pcm(request, deadline, watch)
            logger.warning("endpoint rejected pcm_mulaw@8000; converting from pcm_s16le from now on")
            self._mulaw_native = False
            return generation

    def _pcm(self, request: SpeechRequest, deadline: float, watch: GenerationWatch) -> Generation:
        """16-bit PCM at the configured rate, asked for under the name the model knows it by."""
        rate = self._settings.sonic_sample_rate
        if self._pcm_name is not None:
            return self._run(request, OutputFormat("pcm_s16le", rate, self._pcm_name), deadline, watch)
        first, *others = self._backend.pcm_names
        try:
            generation = self._run(request, OutputFormat("pcm_s16le", rate, first), deadline, watch)
        except InvalidInput as refused:
            for name in others:
                try:
                    generation = self._run(request, OutputFormat("pcm_s16le", rate, name), deadline, watch)
                except InvalidInput as again:
                    # Refused under every name, the request is wrong in another way too: the refusal that does not
                    # speak of the encoding is the one that says how.
                    refused = again if _about_encoding(refused) else refused
                    continue
                logger.warning(f"endpoint rejected {first}; asking for {name} from now on", reason=refused.safe_message)
                self._pcm_name = name
                return generation
            raise refused from None
        self._pcm_name = first
        return generation

    def _run(self, request: SpeechRequest, fmt: OutputFormat, deadline: float, watch: GenerationWatch) -> Generation:
        started = time.perf_counter()
        try:
            return self._stream(request, fmt, deadline, watch, started)
        finally:
            _count_stream(self._backend.identity, time.perf_counter() - started)

    def _stream(
        self, request: SpeechRequest, fmt: OutputFormat, deadline: float, watch: GenerationWatch, started: float
    ) -> Generation:
        first: float | None = None
        converter: MulawConverter | None = None
        first_at = 0.0
        stream = self._backend.stream(request, fmt, deadline=deadline)
        try:
            for audio in stream:
                watch.check()
                if converter is None:
                    first = time.perf_counter()
                    first_at = time.time()
                    # Loaded with the first audio: a prompt found stored meanwhile never loads the converter's
                    # libraries.
                    from voicebridge.audio.convert import MulawConverter

                    converter = MulawConverter(fmt.encoding, fmt.sample_rate, resampler=self._settings.sonic_resampler)
                converter.feed(audio)
        finally:
            # An abandoned generation closes its connection now, not when the exception's traceback is collected.
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        if first is None or converter is None:
            raise RetryableModelError("the model finished without sending audio")
        try:
            wav = converter.finish()
        except AudioFormatError as exc:
            raise RetryableModelError(f"the model's audio was malformed: {exc}") from exc
        finished = time.perf_counter()
        return Generation(
            wav=wav,
            duration_ms=int(converter.duration_ms),
            time_to_first_byte_ms=(first - started) * 1000,
            synthesis_ms=(finished - started) * 1000,
            first_byte_at=first_at,
        )


@dataclass(frozen=True, slots=True)
class GenerationWatch:
    """What may end a generation early: the prompt found stored meanwhile, or the caller's cancel."""

    lookup: Lookup
    cancel: threading.Event | None

    def check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise SynthesisCancelled("the prompt is no longer needed")
        found = _found(self.lookup)
        if found is not None:
            raise _StoredMeanwhile(found)


class _StoredMeanwhile(Exception):
    """The prompt was already in S3 (another container made it): the generation under way is dropped."""

    def __init__(self, prompt: StoredPrompt) -> None:
        super().__init__(prompt.key)
        self.prompt = prompt


def _count_stream(identity: str, seconds: float) -> None:
    """One stream's time open, under its backend and target: a metric of its own, written at once."""
    backend, _, target = identity.partition(":")
    dimensions = {"SonicBackend": backend, "SonicTarget": target or backend}
    with single_metric(
        name=STREAM_SECONDS_METRIC,
        unit=MetricUnit.Seconds,
        value=round(seconds, 4),
        namespace=NAMESPACE,
        default_dimensions=dimensions,
    ):
        pass


def _answer(lookup: Lookup, *, timeout_s: float) -> StoredPrompt | None:
    """The lookup's prompt, waiting for it at most ``timeout_s``; None on a miss, a failure or no answer in time."""
    try:
        return lookup.result(timeout=timeout_s)
    except Exception:
        return None


def _found(lookup: Lookup) -> StoredPrompt | None:
    """The lookup's prompt once it has answered; None while it runs, on a miss, or when S3 failed (the put that
    follows the generation reports a bucket that is really unreachable)."""
    if not lookup.done() or lookup.exception() is not None:
        return None
    return lookup.result()


def _about_encoding(error: InvalidInput) -> bool:
    """Whether a refusal is about ``output_format.encoding``: its reason names the field or a PCM name."""
    return "encoding" in error.safe_message or "pcm" in error.safe_message
