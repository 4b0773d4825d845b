"""The simulated caller: scripted utterances, spoken once the bot has been quiet for a short pause.

A script is a list of steps, one taken each time the bot stops talking and stays quiet for ``pause_s``: ``Say`` a
recorded utterance (8 kHz mono 16-bit WAV), stay silent through the next wait (``Silence``), or ``HangUp``. A
reply played as several prompts has short gaps between them; a step is due a pause after a prompt ends, and if the
bot starts again before then the caller lets it go on and takes that step after the next prompt instead, as a person
waits for the agent to finish. Once the script runs out the caller stays silent. Utterances live beside a
``script.json`` naming each clip's sentence::

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
"""How long the bot must have been quiet before the caller speaks (or hangs up)."""


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
    """A named call: what the caller does, who answers, and what fails."""

    name: str
    description: str
    steps: tuple[str, ...]
    """Clip names, ``"silence"`` or ``"hangup"``."""
    responder: str = "bedrock"
    """Who answers the caller's turns (``RESPONDER``): ``bedrock`` (the Bedrock emulator's bank agent), ``lex`` (the
    Lex emulator's bank bot) or ``scripted`` (the template's rules)."""
    sonic_unavailable: bool = False
    """Sonic is throttled throughout: every line is spoken by Connect's own voice."""
    responder_failures: int = 0
    """The responder's first calls that fail (the caller hears the apology and the call goes on)."""

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
            "a bank's agent: the balance, paying a bill, how to dispute a card charge (five sentences), then a "
            "person: the call is transferred",
            ("balance", "pay-bill", "yes-please", "dispute", "person"),
        ),
        Scenario(
            "lex",
            "the same bank as a Lex bot: the balance, paying a bill (an amount, then a confirmation), then a person",
            ("balance", "pay-bill", "amount", "yes-please", "person"),
            responder="lex",
        ),
        Scenario(
            "silence",
            "the caller says nothing: the flow asks twice whether anyone is there, then says goodbye",
            ("silence", "silence", "silence"),
        ),
        Scenario(
            "model-failure",
            "the responder fails on the first turn (the caller hears the apology and asks again), and Sonic is "
            "throttled throughout: every line is spoken with Connect's own voice",
            ("balance", "balance", "hangup"),
            sonic_unavailable=True,
            responder_failures=1,
        ),
        Scenario(
            "transfer",
            "the caller asks for a person straight away: the flow stops streaming and transfers the call",
            ("person",),
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
    """Takes one step of its script each time the bot stops talking and stays quiet for the pause."""

    def __init__(self, steps: Iterable[Step], *, pause_s: float = PAUSE_S) -> None:
        self._steps = list(steps)
        self._pause = pause_s
        self._lock = threading.Lock()
        self._speech: Segment | None = None
        self._hangup_at: float | None = None
        # The step due next (at that moment of the call), with its utterance on the media plane, until it begins.
        self._pending: tuple[Step, float, Segment | None] | None = None

    def bot_started(self, at: float, media: MediaPlane) -> None:
        """The bot starts talking at ``at``: a step not begun by then waits for the bot to stop again."""
        with self._lock:
            if self._pending is None:
                return
            step, due, speech = self._pending
            self._pending = None
            if due <= at or (speech is not None and not media.withdraw(speech)):
                return
            self._steps.insert(0, step)
            if isinstance(step, HangUp):
                self._hangup_at = None
            if speech is not None and speech is self._speech:
                self._speech = None

    def bot_stopped(self, at: float, media: MediaPlane) -> None:
        """The bot stopped talking at ``at``: the next step is due a pause later."""
        with self._lock:
            if self._pending is not None or not self._steps or self._hangup_at is not None:
                return
            step = self._steps.pop(0)
            due = at + self._pause
            speech = None
            if isinstance(step, Say):
                speech = media.play(
                    CALLER, step.clip.samples, "speech", at=due, text=step.clip.transcript, clip=step.clip.name
                )
                self._speech = speech
            elif isinstance(step, HangUp):
                self._hangup_at = due
            self._pending = (step, due, speech)

    def next_event(self, now: float) -> float | None:
        """The next moment after ``now`` when the caller starts or finishes speaking, or hangs up, if any."""
        with self._lock:
            speech = self._speech
            moments = [
                moment
                for moment in (
                    None if speech is None else speech.start,
                    None if speech is None else speech.end,
                    self._hangup_at,
                )
                if moment is not None and moment > now
            ]
        return min(moments, default=None)

    def speaking_until(self, now: float) -> float | None:
        """When the utterance the caller is saying at ``now`` ends; None when the caller is not speaking."""
        with self._lock:
            speech = self._speech
        if speech is not None and speech.start <= now < speech.end:
            return speech.end
        return None

    def hung_up(self, now: float) -> bool:
        with self._lock:
            return self._hangup_at is not None and now >= self._hangup_at
