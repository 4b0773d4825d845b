"""The simulated caller: scripted utterances and key presses, made once the bot has been quiet for a short pause.

A script is a list of steps, one taken each time the bot stops talking and stays quiet for ``pause_s``: ``Say`` a
recorded utterance (8 kHz mono 16-bit WAV), ``Press`` keys (their DTMF tones go on the caller's track), stay silent
through the next wait (``Silence``), or ``HangUp`` (or hang up some way into the bot's next reply). A block that
listens (``GetParticipantInput``, a Lex bot) gives the caller its turn even when it plays no prompt of its own, and
takes the step it is given (:meth:`SimulatedCaller.respond`). A reply played as several prompts has short gaps
between them; a step is due a pause after a prompt ends, and if the bot starts again before then the caller lets it
go on and takes that step after the next prompt instead, as a person waits for the agent to finish. Once the
script runs out the caller stays silent. Utterances live beside a ``script.json`` naming each clip's sentence::

    {"sample_rate": 8000, "clips": [{"name": "balance", "file": "balance.wav",
                                     "transcript": "I would like to check my account balance."}]}

Scenarios (:data:`SCENARIOS`) are the scripts the demo and the tests play; :func:`load_script` reads a caller
script file (``voicebridge flows simulate --caller FILE``)::

    {"steps": [{"press": "1"}, {"say": "I want to pay my bill."}, {"clip": "balance"},
               {"file": "account.wav", "transcript": "My account number is four two."}, "silence", "hangup"],
     "views": {"Confirm details": "Next"}}

``say`` is spoken by the local speech engine (piper when installed, else the stand-in: its words then reach a Lex
bot, which reads the transcript, but not Ink), or with ``"language": "es"`` by espeak-ng's Spanish voice; ``clip``
names one of the shipped clips (:data:`CLIPS`); ``file`` is a WAV beside the script. ``views`` chooses, by the
``ShowView`` action's identifier or its view's ``Id``, the result the agent's workspace gives; a view not named there
is left unanswered until its time limit.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from voicebridge.errors import AudioFormatError
from voicebridge_dev.local.speech_engine import SpeechEngine, SpeechEngineError, engine_for, load_engine
from voicebridge_dev.simulator.events import CALLER, Segment, sound_span
from voicebridge_dev.simulator.line import LineNoise
from voicebridge_dev.simulator.media import SAMPLE_RATE, MediaPlane, read_call_audio

__all__ = [
    "SCENARIOS",
    "CallerScript",
    "CallerScriptError",
    "Clip",
    "HangUp",
    "Press",
    "Say",
    "Scenario",
    "Silence",
    "SimulatedCaller",
    "Step",
    "UnknownScenarioError",
    "dtmf_tones",
    "find_scenario",
    "load_clips",
    "load_script",
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
    parts: tuple[Clip, ...] = ()
    """The utterances it is made of, said apart (a sentence with a pause in it): each is heard by its own words, so a
    turn ended in the pause holds only what was said before it."""

    @property
    def pcm(self) -> bytes:
        return self.samples.tobytes()

    @property
    def registered(self) -> tuple[Clip, ...]:
        """What a recogniser is told of it: its parts, or itself."""
        return self.parts or (self,)

    @functools.cached_property
    def sound(self) -> tuple[float, float]:
        """Where the clip's sound begins and ends, in seconds from its start (:func:`~.events.sound_span`)."""
        return sound_span(self.samples, SAMPLE_RATE)


@dataclass(frozen=True)
class Say:
    clip: Clip


@dataclass(frozen=True)
class Press:
    """Keys pressed one after another: digits, ``*`` and ``#``."""

    digits: str

    def __post_init__(self) -> None:
        if not _KEYS.fullmatch(self.digits):
            raise CallerScriptError(f"press {self.digits!r}: keys are 0-9, * and #, 1 to 50 of them")


@dataclass(frozen=True)
class Silence:
    pass


@dataclass(frozen=True)
class HangUp:
    """Hang up once the bot is quiet; with ``after_s``, that far into the bot's next reply, over it."""

    after_s: float | None = None


@dataclass(frozen=True)
class Over:
    """Say ``clip`` ``after_s`` seconds into the bot's next reply, over it (a barge-in, or a backchannel)."""

    clip: Clip
    after_s: float


Step = Say | Press | Silence | HangUp | Over

_KEYS = re.compile(r"[0-9*#]{1,50}")
# The DTMF grid (ITU-T Q.23): each key is the sum of its row's and its column's tone.
_ROWS, _COLUMNS = (697, 770, 852, 941), (1209, 1336, 1477)
_GRID = ("123", "456", "789", "*0#")
DTMF_TONE_S = 0.1
"""How long each key's tone lasts; the same silence follows it (Q.24 asks at least 40 ms of each)."""


def dtmf_tones(digits: str) -> npt.NDArray[np.int16]:
    """The tones of ``digits`` pressed one after another, each ``DTMF_TONE_S`` on and as long off."""
    length = round(DTMF_TONE_S * SAMPLE_RATE)
    t = np.arange(length) / SAMPLE_RATE
    pieces = []
    for key in digits:
        row = next(index for index, keys in enumerate(_GRID) if key in keys)
        low, high = _ROWS[row], _COLUMNS[_GRID[row].index(key)]
        tone = 0.35 * (np.sin(2 * np.pi * low * t) + np.sin(2 * np.pi * high * t))
        pieces += [np.round(tone * 32767).astype(np.int16), np.zeros(length, np.int16)]
    return np.concatenate(pieces) if pieces else np.zeros(0, np.int16)


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
            samples = read_call_audio((root / entry["file"]).read_bytes())
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
    """Clip names, ``"silence"``, ``"hangup"``, ``"over:<clip>@<seconds>"`` (said that far into the bot's next
    reply, over it), or ``"hangup@<seconds>"`` (hung up that far into it)."""
    responder: str = "bedrock"
    """Who answers the caller's turns (``RESPONDER``): ``bedrock`` (the Bedrock emulator's bank agent), ``lex`` (the
    Lex emulator's bank bot) or ``scripted`` (the template's rules)."""
    sonic_unavailable: bool = False
    """Sonic is throttled throughout: every line is spoken by Connect's own voice."""
    responder_failures: int = 0
    """The caller's first turns whose reply the responder fails (the caller hears the apology and the call goes
    on)."""

    def script(self, clips: Mapping[str, Clip]) -> list[Step]:
        steps: list[Step] = []
        for step in self.steps:
            if step == "silence":
                steps.append(Silence())
            elif step == "hangup":
                steps.append(HangUp())
            elif step.startswith("hangup@"):
                steps.append(HangUp(float(step.removeprefix("hangup@"))))
            elif step.startswith("over:"):
                name, _, after = step.removeprefix("over:").partition("@")
                if name not in clips:
                    raise CallerScriptError(f"scenario {self.name}: no clip named {name!r}")
                steps.append(Over(clips[name], float(after or 0)))
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
            "barge-in",
            'the caller talks over a long reply two seconds in (and is answered), and says a short "uh-huh" '
            "during another (which goes on), then asks for a person",
            ("dispute", "over:balance@2.0", "pay-bill", "over:uh-huh@1.0", "person"),
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
    """Takes one step of its script each time the bot stops talking and stays quiet for the pause.

    A prompt the caller spoke over answers nothing they said: its end is not their cue (a caller who said something
    over the bot's sentence waits for the answer to it, and does not say their next line the moment that sentence
    ends)."""

    def __init__(self, steps: Iterable[Step], *, pause_s: float = PAUSE_S, line: LineNoise | None = None) -> None:
        self._steps = list(steps)
        self._pause = pause_s
        self.line = line
        """The noise on the caller's line (:mod:`~.line`), under everything they send; None: a silent line."""
        self._lock = threading.Lock()
        self._speech: Segment | None = None
        self._hangup_at: float | None = None
        # The step due next (at that moment of the call), with its utterance on the media plane, until it begins.
        self._pending: tuple[Step, float, Segment | None] | None = None
        self._bot_since: float | None = None

    def bot_started(self, at: float, media: MediaPlane) -> None:
        """The bot starts talking at ``at``: a step not begun by then waits for the bot to stop again; a line to say
        over the bot (:class:`Over`) is said that far into what it says."""
        with self._lock:
            self._bot_since = at
            if self._pending is not None:
                step, due, speech = self._pending
                self._pending = None
                if not (due <= at or (speech is not None and not media.withdraw(speech))):
                    self._steps.insert(0, step)
                    if isinstance(step, HangUp):
                        self._hangup_at = None
                    if speech is not None and speech is self._speech:
                        self._speech = None
                    return
            over = self._steps[0] if self._steps else None
            if isinstance(over, HangUp) and over.after_s is not None:
                self._steps.pop(0)
                self._hangup_at = at + over.after_s
            elif isinstance(over, Over):
                self._steps.pop(0)
                self._speech = media.play(
                    CALLER,
                    over.clip.samples,
                    "speech",
                    at=at + over.after_s,
                    text=over.clip.transcript,
                    clip=over.clip.name,
                )

    def bot_stopped(self, at: float, media: MediaPlane) -> None:
        """The bot stopped talking at ``at``: the next step is due a pause later."""
        with self._lock:
            if self._pending is not None or not self._steps or self._hangup_at is not None:
                return
            first = self._steps[0]
            if isinstance(first, Over) or (isinstance(first, HangUp) and first.after_s is not None):
                # Said (or hung up) over the bot's next words, not in the quiet after these.
                return
            spoken = self._speech
            if spoken is not None and self._bot_since is not None and spoken.end > self._bot_since:
                return
            step = self._steps.pop(0)
            due = at + self._pause
            speech = None
            if isinstance(step, Say):
                speech = media.play(
                    CALLER, step.clip.samples, "speech", at=due, text=step.clip.transcript, clip=step.clip.name
                )
                self._speech = speech
            elif isinstance(step, Press):
                speech = media.play(CALLER, dtmf_tones(step.digits), "dtmf", at=due, text=f"pressed {step.digits}")
                self._speech = speech
            elif isinstance(step, HangUp):
                self._hangup_at = due
            self._pending = (step, due, speech)

    def take_steps(self) -> list[Step]:
        """Everything the caller has left to do, handed to someone else to run (an external AI agent's session):
        the steps are no longer this caller's until :meth:`give_back`."""
        with self._lock:
            steps, self._steps = self._steps, []
            if self._pending is not None:
                steps.insert(0, self._pending[0])
                self._pending = None
            return steps

    def give_back(self, steps: Iterable[Step]) -> None:
        """The steps another runner did not get to: the caller goes on with them."""
        with self._lock:
            self._steps = [*steps, *self._steps]

    def respond(
        self, kind: type[Say] | type[Press] | tuple[type, ...] = (Say, Press), *, before: float | None = None
    ) -> tuple[Say | Press, float, float] | None:
        """The utterance or key presses (``kind``) the caller makes next, taken by the block listening for them
        when they begin ``before`` its deadline: the step, when it begins and when it ends. None when the caller's
        next step is not of that kind (silence, a hang-up, nothing left) or comes too late; it is then left to
        happen with nobody listening."""
        with self._lock:
            if self._pending is None:
                return None
            step, due, speech = self._pending
            if not isinstance(step, kind) or speech is None or (before is not None and due > before):
                return None
            self._pending = None
            return step, due, speech.end  # type: ignore[return-value]

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


@dataclass(frozen=True)
class CallerScript:
    """A caller script file: the steps, and the result each named view gives (see the module's docstring)."""

    steps: tuple[Step, ...]
    views: Mapping[str, str] = field(default_factory=dict)


def load_script(
    path: str | Path, *, voice: SpeechEngine | None = None, clips: Mapping[str, Clip] | None = None
) -> CallerScript:
    """Read a caller script file; :class:`CallerScriptError` names what is wrong in it."""
    file = Path(path)
    try:
        document: Any = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CallerScriptError(f"cannot read the caller script {file}: {exc}") from exc
    if isinstance(document, list):
        document = {"steps": document}
    if not isinstance(document, dict) or not isinstance(document.get("steps"), list):
        raise CallerScriptError(f'{file}: expected {{"steps": [...]}} (or a list of steps)')
    unknown = set(document) - {"steps", "views"}
    if unknown:
        raise CallerScriptError(f"{file}: unknown keys {', '.join(sorted(unknown))}")
    views = document.get("views") or {}
    if not isinstance(views, dict) or not all(isinstance(v, str) for v in views.values()):
        raise CallerScriptError(f"{file}: views must map a ShowView action or view to the result it gives")
    steps = []
    for index, raw in enumerate(document["steps"]):
        try:
            steps.append(_step(raw, file.parent, voice, clips))
        except CallerScriptError as exc:
            raise CallerScriptError(f"{file}: step {index + 1}: {exc}") from None
    return CallerScript(tuple(steps), {str(k): v for k, v in views.items()})


def _step(raw: Any, folder: Path, voice: SpeechEngine | None, clips: Mapping[str, Clip] | None) -> Step:
    if raw == "silence":
        return Silence()
    if raw == "hangup":
        return HangUp()
    if not isinstance(raw, dict) or len(set(raw) - {"transcript", "language"}) != 1:
        raise CallerScriptError(f'{raw!r} is not "silence", "hangup" or one of say, press, clip or file')
    kind = next(iter(set(raw) - {"transcript", "language"}))
    value = raw[kind]
    if not isinstance(value, str) or not value.strip():
        raise CallerScriptError(f"{kind} needs a non-empty string")
    if kind == "press":
        return Press(value)
    if kind == "say":
        engine = engine_for(raw.get("language"), voice if voice is not None else load_engine("auto"))
        try:
            samples = engine.synthesize(value, SAMPLE_RATE, 1.0)
        except SpeechEngineError as exc:
            raise CallerScriptError(f"say {value!r}: {exc}") from exc
        return Say(Clip(f"say: {value}", value, samples))
    if kind == "clip":
        shipped = clips if clips is not None else load_clips()
        if value not in shipped:
            raise CallerScriptError(f"no clip named {value!r}; one of {', '.join(sorted(shipped))}")
        return Say(shipped[value])
    if kind == "file":
        transcript = raw.get("transcript")
        if not isinstance(transcript, str) or not transcript.strip():
            raise CallerScriptError("file needs the transcript of what it says")
        try:
            samples = read_call_audio((folder / value).read_bytes())
        except (OSError, ValueError, AudioFormatError) as exc:
            raise CallerScriptError(f"file {value}: {exc}") from exc
        return Say(Clip(value, transcript, samples))
    raise CallerScriptError(f'unknown step {kind!r}: one of say, press, clip, file, or "silence", "hangup"')
