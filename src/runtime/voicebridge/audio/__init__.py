"""Audio for Amazon Connect: G.711 µ-law, streaming resampling to 8 kHz, and WAV files.

Connect plays prompts only as WAV, 8 kHz, mono, µ-law (format tag 7). :class:`MulawConverter` turns Sonic's
raw chunks (``pcm_s16le``, ``pcm_f32le`` or ``pcm_mulaw`` at a supported rate) into that file as they arrive::

    converter = MulawConverter("pcm_s16le", 24000)
    for chunk in chunks:
        converter.feed(chunk)
    wav = converter.finish()

The modules: :mod:`~voicebridge.audio.convert` (the converter), :mod:`~voicebridge.audio.mulaw` (G.711),
:mod:`~voicebridge.audio.resample` (streaming resamplers), :mod:`~voicebridge.audio.wav` (WAV files) and
:mod:`~voicebridge.audio.vad` (voice-activity figures). Nothing is imported here, so reading the VAD alone does not
load the resamplers.
"""
