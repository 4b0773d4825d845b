"""Spanish in the local cloud: espeak-ng's Spanish voice for the emulated Sonic and the simulated caller."""

from __future__ import annotations

import pytest

from voicebridge_dev.local.speech_engine import (
    EspeakSpeechEngine,
    StandInSpeechEngine,
    engine_for,
    espeak_available,
)

needs_espeak = pytest.mark.skipif(not espeak_available(), reason="espeak-ng is not installed (make system-deps)")


@needs_espeak
@pytest.mark.parametrize("language", ["es", "es-MX", "ES"])
def test_spanish_is_spoken_by_espeak_ngs_spanish_voice(language: str) -> None:
    engine = engine_for(language, StandInSpeechEngine())
    assert isinstance(engine, EspeakSpeechEngine) and engine.voice == "es"


@pytest.mark.parametrize("language", [None, "en", "fr"])
def test_other_languages_keep_the_default_voice(language: str | None) -> None:
    default = StandInSpeechEngine()
    assert engine_for(language, default) is default


@needs_espeak
def test_espeak_ng_speaks_a_sentence_at_the_rate_asked_for() -> None:
    samples = EspeakSpeechEngine("es").synthesize("Quiero pagar mi factura.", sample_rate=8000, speed=1.0)
    assert 8000 * 0.8 < len(samples) < 8000 * 4
    assert int(abs(samples).max()) > 3000
