"""Speech recognisers the Ink emulator can embed to transcribe speech no registered clip matches."""

from __future__ import annotations

import logging
import threading
from typing import Literal, Protocol

import numpy as np

from voicebridge_dev.local.ink.errors import RecogniserUnavailableError

logger = logging.getLogger(__name__)


class Recogniser(Protocol):
    """Speech recogniser embedded in the emulator: mono 16-bit little-endian PCM in, text out."""

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str: ...


class PocketsphinxRecogniser:
    """CMU PocketSphinx with the en-us model shipped in its wheel; offline, modest accuracy.

    The acoustic model is trained on 16 kHz audio and refuses narrower input, so audio is resampled to 16 kHz.
    """

    model_rate = 16000

    def __init__(self) -> None:
        try:
            from pocketsphinx import Decoder
        except ImportError as exc:
            raise RecogniserUnavailableError("pocketsphinx is not installed (install the 'speech' extra)") from exc
        self._decoder = Decoder(samprate=self.model_rate, loglevel="FATAL")
        # One decoder serves every session; its utterance state is not re-entrant.
        self._lock = threading.Lock()

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        import soxr

        samples = np.frombuffer(pcm_s16le[: len(pcm_s16le) // 2 * 2], "<i2")
        if samples.size == 0:
            return ""
        if sample_rate != self.model_rate:
            resampled = soxr.resample(samples.astype(np.float32) / 32768.0, sample_rate, self.model_rate)
            samples = (np.clip(resampled, -1.0, 1.0) * 32767.0).astype("<i2")
        with self._lock:
            self._decoder.start_utt()
            self._decoder.process_raw(samples.tobytes(), full_utt=True)
            self._decoder.end_utt()
            hypothesis = self._decoder.hyp()
        return str(hypothesis.hypstr) if hypothesis is not None else ""


def load_recogniser(prefer: Literal["auto", "pocketsphinx", "none"] = "auto") -> Recogniser | None:
    """The embedded recogniser to hand to :class:`InkEmulator`.

    ``"auto"`` gives PocketSphinx when it is importable and ``None`` otherwise; ``"pocketsphinx"`` insists
    (raising :class:`RecogniserUnavailableError`); ``"none"`` always gives ``None`` (stand-in transcripts).
    """
    if prefer == "none":
        return None
    try:
        return PocketsphinxRecogniser()
    except RecogniserUnavailableError:
        if prefer == "pocketsphinx":
            raise
        logger.info("Ink emulator: pocketsphinx not installed; transcripts are registered clips or stand-ins")
        return None
