"""The simulated caller: scripted utterances, spoken a short pause after the bot stops talking.

A script is a list of steps, one taken each time the bot stops talking: ``Say`` a recorded utterance (8 kHz
mono 16-bit WAV), stay silent through the next wait (``Silence``), or ``HangUp``. Once the script runs out the
caller stays silent. Utterances live beside a ``script.json`` naming each clip's sentence::

    {"sample_rate": 8000, "clips": [{"name": "balance", "file": "balance.wav",
                                     "transcript": "I would like to check my account balance."}]}

Scenarios (:data:`SCENARIOS`) are the scripts the demo and the tests play.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from voicebridge.audio.wav import read_wav
from voicebridge.errors import AudioFormatError
from voicebridge_dev.simulator.events import CALLER, Segment
from voicebridge_dev.simulator.media import SAMPLE_RATE, MediaPlane

__all__ = [
    "SCENARIOS",
    "CallerScriptError",
    "Clip",
    "HangUp",
    "Say",
    "Scenario",
    "Silence",
    "SimulatedCaller",
    "Step",
    "UnknownScenarioError",
    "find_scenario",
    "load_clips",
]

PAUSE_S = 0.6
"""How long the caller waits after the bot stops talking before speaking (or hanging up)."""


class CallerScriptError(Exception):
    """The caller's clips or script cannot be read."""


class UnknownScenarioError(CallerScriptError, ValueError):
    """No scenario has that name."""


@dataclass(frozen=True)
class Clip:
    """One recorded utterance and the sentence it holds."""

    name: str
    transcript: str
    samples: npt.NDArray[np.int16]

    @property
    def pcm(self) -> bytes:
        return self.samples.tobytes()


@dataclass(frozen=True)
class Say:
    clip: Clip


@dataclass(frozen=True)
class Silence:
    pass


@dataclass(frozen=True)
class HangUp:
    pass


Step = Say | Silence | HangUp


CLIPS = Path(__file__).with_name("clips")
"""The scripted caller's recorded utterances, shipped with the simulator (``tools/make_caller_clips.py``)."""


def load_clips(folder: str | Path = CLIPS) -> dict[str, Clip]:
    """The clips ``folder/script.json`` lists, by name."""
    root = Path(folder)
    try:
        script = json.loads((root / "script.json").read_text(encoding="utf-8"))
        entries = script["clips"]
        clips: dict[str, Clip] = {}
        for entry in entries:
            samples, rate = read_wav((root / entry["file"]).read_bytes())
            if rate != SAMPLE_RATE or samples.ndim != 1:
                raise CallerScriptError(f"{entry['file']}: expected 8 kHz mono, got {rate} Hz {samples.shape}")
            clips[entry["name"]] = Clip(entry["name"], entry["transcript"], samples)
    except (OSError, ValueError, KeyError, TypeError, AudioFormatError) as exc:
        raise CallerScriptError(f"cannot read the caller's script in {root}: {exc}") from exc
    return clips


@dataclass(frozen=True)
class Scenario:
    """A named call: what the caller does, and whether Sonic is unavailable throughout."""

    name: str
    description: str
    steps: tuple[str, ...]
    """Clip names, ``"silence"`` or ``"hangup"``."""
    sonic_unavailable: bool = False

    def script(self, clips: Mapping[str, Clip]) -> list[Step]:
        steps: list[Step] = []
        for step in self.steps:
            if step == "silence":
                steps.append(Silence())
            elif step == "hangup":
                steps.append(HangUp())
            elif step in clips:
                steps.append(Say(clips[step]))
            else:
                raise CallerScriptError(f"scenario {self.name}: no clip named {step!r}")
        return steps


SCENARIOS: Mapping[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "normal",
            "three turns: each is heard and answered with what was heard, then the caller hangs up",
            ("balance", "pay-bill", "thanks", "hangup"),
        ),
        Scenario(
            "silence",
            "the caller says nothing: the flow asks twice whether anyone is there, then says goodbye",
            ("silence", "silence", "silence"),
        ),
        Scenario(
            "model-failure",
            "Sonic is throttled throughout: the flow speaks its text with Connect's own voice instead",
            ("order-help", "hangup"),
            sonic_unavailable=True,
        ),
    )
}


def find_scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        known = ", ".join(SCENARIOS)
        raise UnknownScenarioError(f"unknown scenario {name!r}; one of {known}") from None


class SimulatedCaller:
    """Takes one step of its script each time the bot stops talking."""

    def __init__(self, steps: Iterable[Step], *, pause_s: float = PAUSE_S) -> None:
        self._steps = list(steps)
        self._pause = pause_s
        self._lock = threading.Lock()
        self._speech: Segment | None = None
        self._hangup_at: float | None = None

    def bot_stopped(self, at: float, media: MediaPlane) -> None:
        """The bot stopped talking at ``at``: schedule the next step a pause later."""
        with self._lock:
            if not self._steps or self._hangup_at is not None:
                return
            step = self._steps.pop(0)
            if isinstance(step, Say):
                self._speech = media.play(
                    CALLER,
                    step.clip.samples,
                    "speech",
                    at=at + self._pause,
                    text=step.clip.transcript,
                    clip=step.clip.name,
                )
            elif isinstance(step, HangUp):
                self._hangup_at = at + self._pause

    def next_event(self, now: float) -> float | None:
        """The next moment after ``now`` when the caller finishes speaking or hangs up, if any."""
        with self._lock:
            moments = [
                moment
                for moment in (None if self._speech is None else self._speech.end, self._hangup_at)
                if moment is not None and moment > now
            ]
        return min(moments, default=None)

    def hung_up(self, now: float) -> bool:
        with self._lock:
            return self._hangup_at is not None and now >= self._hangup_at
