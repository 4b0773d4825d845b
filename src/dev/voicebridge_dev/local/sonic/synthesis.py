"""A generation's audio: made sentence by sentence by a speech engine, as a streaming model makes it, cut into
chunks of at most 20 ms and encoded as the request asks.

Audio comes from a :class:`~voicebridge_dev.local.speech_engine.SpeechEngine` (piper when installed, else a
deterministic stand-in). The raw encodings are the four Sonic produces: ``pcm_s16le``, ``pcm_f32le``, and
ITU-T G.711 ``pcm_mulaw`` and ``pcm_alaw``.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from voicebridge_dev.local.sonic.requests import SonicRequest
from voicebridge_dev.local.speech_engine import SpeechEngine, engine_for

CHUNK_SECONDS: Final = 0.020

_ULAW_SEGMENT_ENDS: Final = np.array([0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF])
_ALAW_SEGMENT_ENDS: Final = np.array([0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF])


def _mulaw(samples: npt.NDArray[np.int16]) -> bytes:
    """ITU-T G.711 µ-law of 16-bit linear samples (on their top 14 bits, as the standard defines)."""
    value = samples.astype(np.int32) >> 2
    mask = np.where(value < 0, 0x7F, 0xFF)
    magnitude = np.minimum(np.abs(value), 8159) + 0x21
    segment = np.searchsorted(_ULAW_SEGMENT_ENDS, magnitude)
    code = np.where(segment >= 8, 0x7F, (segment << 4) | ((magnitude >> (segment + 1)) & 0x0F))
    return (code ^ mask).astype(np.uint8).tobytes()


def _alaw(samples: npt.NDArray[np.int16]) -> bytes:
    """ITU-T G.711 A-law of 16-bit linear samples (on their top 13 bits, as the standard defines)."""
    value = samples.astype(np.int32) >> 3
    mask = np.where(value >= 0, 0xD5, 0x55)
    magnitude = np.where(value >= 0, value, -value - 1)
    segment = np.searchsorted(_ALAW_SEGMENT_ENDS, magnitude)
    mantissa = np.where(segment < 2, magnitude >> 1, magnitude >> np.maximum(segment, 1)) & 0x0F
    code = np.where(segment >= 8, 0x7F, (segment << 4) | mantissa)
    return (code ^ mask).astype(np.uint8).tobytes()


def encode_audio(samples: npt.NDArray[np.int16], encoding: str) -> bytes:
    if encoding == "pcm_s16le":
        return samples.astype("<i2").tobytes()
    if encoding == "pcm_f32le":
        return (samples.astype(np.float32) / 32768.0).astype("<f4").tobytes()
    if encoding == "pcm_mulaw":
        return _mulaw(samples)
    return _alaw(samples)


_SENTENCE = re.compile(r".*?[.!?]+(?:\s+|$)|.+$", re.DOTALL)


def _scaled(samples: npt.NDArray[np.int16], volume: float) -> npt.NDArray[np.int16]:
    if volume == 1.0:
        return samples
    return np.clip(np.round(samples.astype(np.float64) * volume), -32768, 32767).astype(np.int16)


class Synthesis:
    """A request's audio made sentence by sentence, as a streaming model makes it, cut into ≤ 20 ms chunks.

    Only the first sentence has to be synthesised before the first chunk can leave. Word timings are spread
    over each sentence's audio in proportion to character positions: plausible, not aligned.
    """

    def __init__(self, engine: SpeechEngine, request: SonicRequest) -> None:
        # A Spanish request is spoken in Spanish (espeak-ng), as Sonic would: the English voices would read it wrong.
        self._engine = engine_for(request.language, engine)
        self._request = request
        self.per_chunk = max(1, round(request.sample_rate * CHUNK_SECONDS))
        self._words: deque[tuple[float, dict[str, Any]]] = deque()

    def chunks(self) -> Iterator[npt.NDArray[np.int16]]:
        request = self._request
        pending = np.zeros(0, dtype=np.int16)
        produced = 0
        for sentence in _SENTENCE.findall(request.transcript):
            samples = self._engine.synthesize(sentence, request.sample_rate, request.speed)
            if request.add_timestamps:
                self._time_words(sentence, produced, len(samples))
            produced += len(samples)
            pending = np.concatenate([pending, _scaled(samples, request.volume)])
            whole = len(pending) - len(pending) % self.per_chunk
            for start in range(0, whole, self.per_chunk):
                yield pending[start : start + self.per_chunk]
            pending = pending[whole:]
        if len(pending):
            yield pending

    def _time_words(self, sentence: str, offset_samples: int, samples: int) -> None:
        rate = self._request.sample_rate
        seconds_per_char = samples / rate / len(sentence)
        for match in re.finditer(r"\S+", sentence):
            start = offset_samples / rate + match.start() * seconds_per_char
            end = offset_samples / rate + match.end() * seconds_per_char
            words = {"words": [match.group()], "start": [round(start, 3)], "end": [round(end, 3)]}
            self._words.append((end, words))

    def timestamp_messages(self, spoken_seconds: float) -> list[dict[str, Any]]:
        """``timestamps`` messages of the words whose audio has all been sent, each once."""
        messages = []
        while self._words and self._words[0][0] <= spoken_seconds + 1e-6:
            _, words = self._words.popleft()
            messages.append(
                {
                    "type": "timestamps",
                    "context_id": self._request.context_id,
                    "status_code": 206,
                    "done": False,
                    "word_timestamps": words,
                }
            )
        return messages
