"""Sonic's audio straight into the call: each chunk of a generation handed to the player the moment it arrives.

The same backends as the flows path (SageMaker's response stream, a Sonic container, the Cartesia API), asked for
16-bit PCM at the rate negotiated with Connect, so nothing is converted on the way (no µ-law, no resampling, no
S3). A generation that fails before its first audio is tried again while the deadline allows (Sonic's throttling
and stream errors are worth another try); once audio has gone to the caller, a failure ends the sentence there. A
model that does not know the first name for PCM is asked by the next (Sonic 3 says ``pcm``, 3.5 ``pcm_s16le``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from voicebridge.a2a.output import Player, Response
from voicebridge.backoff import Backoff
from voicebridge.errors import InvalidInput, ModelUnavailable, RetryableModelError
from voicebridge.sonic.backends import OutputFormat, SonicBackend
from voicebridge.sonic.request import RequestSettings, SpeechRequest
from voicebridge.sonic.synthesizer import SynthesisCancelled
from voicebridge.telemetry import logger


@dataclass(frozen=True, slots=True)
class Said:
    """A sentence spoken into the call."""

    first_byte_at: float | None
    """When its first audio arrived (epoch seconds)."""
    synthesis_ms: float
    audio_bytes: int


class StreamingVoice:
    """Speaks sentences into a :class:`~voicebridge.a2a.output.Player` at ``sample_rate``."""

    def __init__(
        self, backend: SonicBackend, defaults: RequestSettings, sample_rate: int, *, max_attempts: int = 3
    ) -> None:
        self._backend = backend
        self._defaults = defaults
        self._sample_rate = sample_rate
        self._max_attempts = max_attempts
        self._pcm_names = list(backend.pcm_names)

    def say(self, text: str, player: Player, response: Response, *, deadline: float, stop: Callable[[], bool]) -> Said:
        """Speak ``text`` into ``response``; SynthesisCancelled as soon as ``stop()`` (the caller talked over the
        agent, the reply was cancelled); ModelUnavailable when no audio could be made before ``deadline``."""
        request = SpeechRequest.from_parameters({"Text": text}, self._defaults)
        backoff = Backoff(base_s=0.05, cap_s=0.8)
        attempts = 0
        while True:
            attempts += 1
            started = time.perf_counter()
            sent = 0
            try:
                return self._stream(request, player, response, deadline, stop, started)
            except _Partial as partial:
                sent = partial.sent
                logger.warning("sentence cut short by the model", reason=partial.reason, audio_bytes=sent)
                return Said(partial.first_byte_at, (time.perf_counter() - started) * 1000, sent)
            except InvalidInput as exc:
                if len(self._pcm_names) > 1 and "encoding" in exc.safe_message.lower():
                    logger.info("the model refused a PCM name; asking by the next", refused=self._pcm_names[0])
                    self._pcm_names.pop(0)
                    continue
                raise ModelUnavailable(f"Sonic refused the sentence: {exc.safe_message}") from None
            except RetryableModelError as exc:
                delay = backoff.failure(time.monotonic())
                if attempts >= self._max_attempts or time.monotonic() + delay >= deadline:
                    raise ModelUnavailable(f"Sonic failed: {exc.safe_message}") from None
                time.sleep(delay)

    def _stream(
        self,
        request: SpeechRequest,
        player: Player,
        response: Response,
        deadline: float,
        stop: Callable[[], bool],
        started: float,
    ) -> Said:
        fmt = OutputFormat("pcm_s16le", self._sample_rate, name=self._pcm_names[0])
        stream = self._backend.stream(request, fmt, deadline=deadline)
        first_at: float | None = None
        sent = 0
        carry = b""
        try:
            for audio in stream:
                if stop():
                    raise SynthesisCancelled("the reply was stopped")
                if first_at is None:
                    first_at = time.time()
                data = carry + audio
                # Chunks may split a sample; only whole samples go to the caller.
                whole = len(data) - len(data) % 2
                player.push(response, data[:whole])
                carry = data[whole:]
                sent += whole
        except (RetryableModelError, ModelUnavailable) as exc:
            if sent:
                raise _Partial(exc.safe_message, sent, first_at) from None
            raise
        finally:
            close = getattr(stream, "close", None)
            if close is not None:
                close()
        if not sent:
            raise RetryableModelError("the model finished without sending audio")
        return Said(first_at, (time.perf_counter() - started) * 1000, sent)


class _Partial(Exception):
    """A generation that failed after some of its audio had gone to the caller: not worth repeating."""

    def __init__(self, reason: str, sent: int, first_byte_at: float | None) -> None:
        super().__init__(reason)
        self.reason, self.sent, self.first_byte_at = reason, sent, first_byte_at
