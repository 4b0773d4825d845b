"""Audio for Amazon Connect: G.711 µ-law, streaming resampling to 8 kHz, and WAV files.

Connect plays prompts only as WAV, 8 kHz, mono, µ-law (format tag 7). :class:`MulawConverter` turns Sonic's
raw chunks (``pcm_s16le``, ``pcm_f32le`` or ``pcm_mulaw`` at a supported rate) into that file as they arrive::

    converter = MulawConverter("pcm_s16le", 24000)
    for chunk in chunks:
        converter.feed(chunk)
    wav = converter.finish()
"""

from __future__ import annotations

from voicebridge.errors import VoiceBridgeError


class AudioFormatError(VoiceBridgeError, ValueError):
    """Audio that cannot be handled: unsupported encoding or rate, malformed WAV, truncated sample."""

    code = "AudioFormatError"


class ConverterFinishedError(RuntimeError):
    """A converter was fed or finished again after :meth:`MulawConverter.finish` returned its file."""


# The submodules import the errors above from this package, so they are imported after them.
from voicebridge.audio.convert import SOURCE_ENCODINGS, SOURCE_RATES, MulawConverter, SourceEncoding  # noqa: E402
from voicebridge.audio.mulaw import DECODE_TABLE, ENCODE_TABLE, mulaw_decode, mulaw_encode  # noqa: E402
from voicebridge.audio.resample import (  # noqa: E402
    NumpyResampler,
    PassthroughResampler,
    ResamplerKind,
    SoxrResampler,
    StreamResampler,
    make_resampler,
)
from voicebridge.audio.wav import (  # noqa: E402
    MULAW_RATE,
    mulaw_wav_bytes,
    mulaw_wav_header,
    pcm16_wav_bytes,
    read_wav,
)

__all__ = [
    "DECODE_TABLE",
    "ENCODE_TABLE",
    "MULAW_RATE",
    "SOURCE_ENCODINGS",
    "SOURCE_RATES",
    "AudioFormatError",
    "ConverterFinishedError",
    "MulawConverter",
    "NumpyResampler",
    "PassthroughResampler",
    "ResamplerKind",
    "SourceEncoding",
    "SoxrResampler",
    "StreamResampler",
    "make_resampler",
    "mulaw_decode",
    "mulaw_encode",
    "mulaw_wav_bytes",
    "mulaw_wav_header",
    "pcm16_wav_bytes",
    "read_wav",
]
