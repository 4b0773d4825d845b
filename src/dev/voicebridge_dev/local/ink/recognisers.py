"""Speech recognisers the Ink emulator can embed to transcribe speech no registered clip matches.

A recogniser may also decode while the caller speaks (:class:`StreamingRecogniser`): a session feeds it each stretch
of speech as the audio arrives, so the stretch's words are ready when a pause closes it, as a streaming service's are.

PocketSphinx decodes in processes of its own. Its Python binding (pocketsphinx 5.1, ``cython/_pocketsphinx.pyx``)
calls the C decoder without releasing the interpreter lock, so in the emulator's process a decode stopped every other
thread there for its whole length: measured on the 2-core machine, a thread counting in a loop ran at 0.9 % of its
speed while a 3 s stretch decoded (1.3 s), and an Ink session took in 20 ms of audio in the 457 ms a 1.8 s stretch
took to decode. The demo runs the emulators in the product's process, so the product's threads stalled with it. In a
process of its own a decode only shares the cores.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import multiprocessing
import queue
import threading
import time
import weakref
from collections.abc import Callable
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from voicebridge_dev.local.ink.errors import RecogniserFailedError, RecogniserUnavailableError

logger = logging.getLogger(__name__)

MODEL_RATE = 16000
"""PocketSphinx's en-us acoustic model is trained on 16 kHz audio and refuses narrower input."""
DECODERS = 2
"""Decoders PocketSphinx keeps, one per stretch being decoded at once: a caller has one stretch open at a time, and
each decoder's process holds about 190 MB resident (measured after a sentence; the decoder and its model are 93 MB of
it, the interpreter, numpy and soxr the rest), so two serve the demo's call with one to spare."""
CEPSTRAL_MEAN_PRIOR = "47.6,29.7,-29.3,30.6,-22.3,-4.2,10.9,-22.9,15.8,-6.7,3.9,9.6,-15.2"
"""Where each stretch's live cepstral mean starts: the mean PocketSphinx's live estimate settled on over eight
sentences of the demo's caller voice at 8 kHz brought to 16 kHz. Its own starting point (``cmninit``, 40,3,-1) suits
16 kHz speech: from it the first stretch a decoder heard came out garbled ("i would like to do it like on a ballot"
for "I would like to check my account balance"). Set again at every stretch, it makes a stretch's words depend on its
own audio only, never on what the decoder heard before, whichever session that was."""
REPLY_TIMEOUT_S = 30.0
"""How long a decoder may take to give a stretch's words (its first answer includes loading the model)."""
_ALIVE_CHECK_S = 0.5
"""How often a wait for words checks that the decoder's process still lives."""


class Recogniser(Protocol):
    """Speech recogniser embedded in the emulator: mono 16-bit little-endian PCM in, text out."""

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str: ...


class RecognitionStream(Protocol):
    """One stretch of speech being decoded as it arrives."""

    def feed(self, pcm_s16le: bytes) -> None:
        """Decode more of the stretch (mono 16-bit little-endian PCM); never waits for the decoder."""

    def finish(self) -> str:
        """The words of all the audio fed; waits for the decoder, so call it beside an event loop, not in it."""

    def abandon(self) -> None:
        """Give the decoder back without the words."""


@runtime_checkable
class StreamingRecogniser(Recogniser, Protocol):
    """A recogniser that can decode a stretch of speech while it is spoken."""

    def open_stream(self, sample_rate: int) -> RecognitionStream | None:
        """A decoder for one stretch, or None while every decoder is busy (the session then decodes the stretch
        whole once a pause closes it)."""


def _serve(requests: Any, replies: Any) -> None:
    """A decoder process: utterances in, their words out, one at a time, in the order asked.

    Requests are ``("start", sample_rate)``, ``("audio", pcm_s16le)``, ``("end",)`` (answered with ``("words",
    text)`` or ``("error", message)``), ``("abandon",)`` and ``("stop",)``.
    """
    import soxr
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=MODEL_RATE, loglevel="FATAL")
    resampler: Any = None
    failure: str | None = None

    def process(samples: np.ndarray[Any, np.dtype[np.float32]]) -> None:
        if resampler is not None:
            samples = resampler.resample_chunk(samples, last=samples.size == 0)
        if samples.size:
            pcm = (np.clip(samples, -1.0, 1.0) * 32767.0).astype("<i2")
            # Blocks as they come: the decoder's cepstral mean is then estimated live, as a streaming decoder must.
            decoder.process_raw(pcm.tobytes(), full_utt=False)

    while True:
        message = requests.get()
        kind = message[0]
        if kind == "stop":
            return
        try:
            if kind == "start":
                failure = None
                rate = int(message[1])
                resampler = None if rate == MODEL_RATE else soxr.ResampleStream(rate, MODEL_RATE, 1, dtype="float32")
                decoder.set_cmn(CEPSTRAL_MEAN_PRIOR)
                decoder.start_utt()
            elif kind == "audio" and failure is None:
                pcm = message[1]
                process(np.frombuffer(pcm[: len(pcm) // 2 * 2], "<i2").astype(np.float32) / 32768.0)
            elif kind in ("end", "abandon"):
                if failure is None:
                    process(np.zeros(0, np.float32))
                decoder.end_utt()
                hypothesis = decoder.hyp()
                if kind == "end":
                    text = str(hypothesis.hypstr) if hypothesis is not None else ""
                    replies.put(("words", text) if failure is None else ("error", failure))
        except Exception as exc:  # the decoder's errors are reported with the stretch's words, never lost
            failure = f"{type(exc).__name__}: {exc}"
            if kind == "end":
                replies.put(("error", failure))


class _DecoderProcess:
    """One PocketSphinx decoder in a process of its own, spoken to over two queues (a request never waits for the
    process: the queue's own thread writes it)."""

    def __init__(self, context: SpawnContext) -> None:
        self._requests = context.Queue()
        self._replies = context.Queue()
        self.process: SpawnProcess = context.Process(
            target=_serve, args=(self._requests, self._replies), name="pocketsphinx-decoder", daemon=True
        )
        self.process.start()

    def send(self, *message: Any) -> None:
        self._requests.put(message)

    def words(self) -> str:
        """The answer to ``end``; RecogniserFailedError when the decoder failed or did not answer in time."""
        deadline = time.monotonic() + REPLY_TIMEOUT_S
        while True:
            try:
                kind, text = self._replies.get(timeout=_ALIVE_CHECK_S)
                break
            except queue.Empty:
                if not self.process.is_alive():
                    raise RecogniserFailedError("the PocketSphinx decoder's process died") from None
                if time.monotonic() >= deadline:
                    raise RecogniserFailedError(f"PocketSphinx gave no words in {REPLY_TIMEOUT_S:g} s") from None
        if kind == "error":
            raise RecogniserFailedError(f"PocketSphinx failed on a stretch: {text}")
        return str(text)

    def close(self) -> None:
        with contextlib.suppress(ValueError, OSError):
            self.send("stop")
        self.process.join(timeout=2.0)
        if self.process.is_alive():
            self.process.terminate()
        # Audio still queued for a process that is gone must not hold this one's exit.
        self._requests.cancel_join_thread()


def _close_all(decoders: list[_DecoderProcess]) -> None:
    for decoder in decoders:
        decoder.close()


class PocketsphinxStream:
    """A stretch decoded by one of :class:`PocketsphinxRecogniser`'s decoders, which it holds until finished."""

    def __init__(
        self, decoder: _DecoderProcess, sample_rate: int, give_back: Callable[[_DecoderProcess, bool], None]
    ) -> None:
        self._decoder = decoder
        self._give_back = give_back
        self._open = True
        decoder.send("start", sample_rate)

    def feed(self, pcm_s16le: bytes) -> None:
        if not self._open:
            raise RecogniserFailedError("audio fed to a finished stretch")
        if pcm_s16le:
            self._decoder.send("audio", pcm_s16le)

    def finish(self) -> str:
        self._close()
        self._decoder.send("end")
        try:
            words = self._decoder.words()
        except RecogniserFailedError:
            self._give_back(self._decoder, False)
            raise
        self._give_back(self._decoder, True)
        return words

    def abandon(self) -> None:
        if self._open:
            self._close()
            self._decoder.send("abandon")
            self._give_back(self._decoder, True)

    def _close(self) -> None:
        if not self._open:
            raise RecogniserFailedError("a stretch finished twice")
        self._open = False


def require_pocketsphinx() -> None:
    """Raise :class:`RecogniserUnavailableError` unless PocketSphinx can be imported (without importing it)."""
    if importlib.util.find_spec("pocketsphinx") is None:
        raise RecogniserUnavailableError("pocketsphinx is not installed (install the 'speech' extra)")


class PocketsphinxRecogniser:
    """CMU PocketSphinx with the en-us model shipped in its wheel; offline, modest accuracy.

    It keeps ``decoders`` decoders, each in a process of its own (see the module), started with the recogniser so
    that loading the model does not fall in a turn. Audio is resampled to the model's 16 kHz there, and decoded in
    blocks as it is fed, whether a stream's or :meth:`transcribe`'s.
    """

    model_rate = MODEL_RATE

    def __init__(self, decoders: int = DECODERS) -> None:
        require_pocketsphinx()
        # A fresh interpreter for each decoder: forking a process whose threads may hold locks is unsafe.
        self._context = multiprocessing.get_context("spawn")
        self._decoders = [_DecoderProcess(self._context) for _ in range(decoders)]
        self._free = list(self._decoders)
        self._returned = threading.Condition()
        self._closer = weakref.finalize(self, _close_all, self._decoders)

    @property
    def decoder_pids(self) -> list[int | None]:
        """The decoders' process ids (what a measurement of their memory reads)."""
        return [decoder.process.pid for decoder in self._decoders]

    def open_stream(self, sample_rate: int) -> PocketsphinxStream | None:
        with self._returned:
            if not self._free:
                return None
            decoder = self._free.pop()
        return PocketsphinxStream(decoder, sample_rate, self._give_back)

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        """The words of one whole stretch, once a decoder is free."""
        with self._returned:
            if not self._returned.wait_for(lambda: bool(self._free), timeout=REPLY_TIMEOUT_S):
                raise RecogniserFailedError(f"no PocketSphinx decoder came free in {REPLY_TIMEOUT_S:g} s")
            decoder = self._free.pop()
        stream = PocketsphinxStream(decoder, sample_rate, self._give_back)
        stream.feed(pcm_s16le)
        return stream.finish()

    def _give_back(self, decoder: _DecoderProcess, healthy: bool) -> None:
        if not healthy:
            # A decoder that failed to answer may still answer late, to the next stretch: a fresh one replaces it.
            decoder.close()
            replacement = _DecoderProcess(self._context)
        with self._returned:
            if not healthy:
                self._decoders[self._decoders.index(decoder)] = replacement
                decoder = replacement
            self._free.append(decoder)
            self._returned.notify()

    def close(self) -> None:
        """Stop the decoders' processes (they are daemons, so they also end with this process)."""
        self._closer()


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
