"""The external AI agent a flow hands a call to, on the local cloud: the streaming agent's session with the simulated
caller, Connect's side played by the A2A client emulator (:mod:`voicebridge_dev.local.a2a`).

:class:`ScriptedCaller` is the caller of such a session: it listens as the flow simulator's caller does — each line
once the agent has answered and been quiet for the pause, or, an :class:`~.caller.Over` step, a set time into the
agent's next reply, over it. :class:`StreamingHandoff` runs the session for a Lex block whose session attributes name
an AI agent (:func:`~.actions.participants.lex_bot`), and hands the flow its outcome and what was said.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from voicebridge_dev.local.a2a import ConnectEmulatorError, ConnectSettings, run_session
from voicebridge_dev.simulator.call import AgentHandback, Call
from voicebridge_dev.simulator.caller import Clip, HangUp, Over, Say, Step
from voicebridge_dev.simulator.line import LineNoise

RATE = 8000
PAUSE_S = 0.6
"""How long the agent must be quiet before the caller says their next line (the flows demo's caller waits as
long)."""
SESSION_LIMIT_S = 240.0


@dataclass(frozen=True)
class Utterance:
    """A line the caller said, in session seconds (READY = 0)."""

    clip: Clip
    start: float
    end: float
    over: bool = False
    """Said over the agent on purpose (an :class:`Over` step)."""

    @property
    def sound_start(self) -> float:
        """When its sound begins (the clip's quiet lead-in left out)."""
        return self.start + self.clip.sound[0]

    @property
    def sound_end(self) -> float:
        """When its sound ends (the clip's quiet tail left out)."""
        return self.start + self.clip.sound[1]


@dataclass
class ScriptedCaller:
    """The scenario's caller, deciding as the call goes what to say next (a
    :class:`~voicebridge_dev.local.a2a.CallerSource`)."""

    steps: list[Step]
    pause_s: float = PAUSE_S
    line: LineNoise | None = None
    """The noise on the caller's line (:mod:`~.line`), under everything they send."""
    said: list[Utterance] = field(default_factory=list)
    hung_up: bool = False
    _speaking: bytes = b""
    _quiet_since: float | None = None
    _answered: bool = False
    """The agent has spoken since the caller's last line ended (the greeting counts)."""
    _agent_since: float | None = None
    _over_at: float | None = None

    def next_slice(self, at_s: float, size: int, *, agent_heard: bool) -> bytes:
        start_s = at_s - size / (2 * RATE)
        if agent_heard:
            self._quiet_since = None
            if self._agent_since is None:
                self._agent_since = start_s
            self._answered = self._answered or not self._speaking
        else:
            self._agent_since = None
            if self._quiet_since is None:
                self._quiet_since = start_s
        if not self._speaking:
            self._begin(start_s, agent_heard)
        chunk, self._speaking = self._speaking[:size], self._speaking[size:]
        chunk += bytes(size - len(chunk))
        if self.line is None:
            return chunk
        return self.line.added(np.frombuffer(chunk, dtype="<i2"), round(start_s * RATE)).astype("<i2").tobytes()

    def _begin(self, now: float, agent_heard: bool) -> None:
        if not self.steps:
            return
        step = self.steps[0]
        if isinstance(step, Over):
            if agent_heard and self._agent_since is not None and now >= self._agent_since + step.after_s:
                self._say(step.clip, now, over=True)
            return
        if isinstance(step, HangUp) and step.after_s is not None:
            if agent_heard and self._agent_since is not None and now >= self._agent_since + step.after_s:
                self.steps.pop(0)
                self.hung_up = True
            return
        quiet = self._quiet_since is not None and now - self._quiet_since >= self.pause_s
        if not (self._answered and quiet):
            return
        if isinstance(step, Say):
            self._say(step.clip, now)
        elif isinstance(step, HangUp):
            self.steps.pop(0)
            self.hung_up = True
        else:
            # Silence and keys are not spoken on this path; the scenario moves on.
            self.steps.pop(0)

    def _say(self, clip: Clip, now: float, *, over: bool = False) -> None:
        self.steps.pop(0)
        self._speaking = clip.pcm[: len(clip.pcm) // 2 * 2]
        self.said.append(Utterance(clip, now, now + len(self._speaking) / (2 * RATE), over))
        self._answered = False


@dataclass(frozen=True)
class StreamingHandoff:
    """The flow simulator's external AI agent: a Lex block that hands the call to an AI agent runs a session with
    the streaming agent at ``url`` (Connect's side played by the A2A client emulator), the simulated caller's
    remaining lines said to it as they would be, and the flow goes on with its outcome."""

    url: str
    api_key: str
    output_rate: int = 16000

    def __call__(self, call: Call, attributes: Mapping[str, str]) -> AgentHandback:
        steps = call.caller.take_steps()
        caller = ScriptedCaller(steps, line=call.caller.line)
        instance = ConnectSettings(api_key="").instance_arn
        settings = ConnectSettings(
            api_key=self.api_key,
            output_rate=self.output_rate,
            max_duration_s=SESSION_LIMIT_S,
            strict=False,
            contact_arn=f"{instance}/contact/{call.contact.contact_id}",
        )
        try:
            session = asyncio.run(run_session(self.url, settings, caller_audio=caller))
        except (ConnectEmulatorError, OSError) as exc:
            call.caller.give_back(caller.steps)
            return AgentHandback(None, 0.0, detail=str(exc))
        call.caller.give_back(caller.steps)
        ended = max((event.at for event in session.timeline.events), default=0.0)
        problems = [f"{v.rule}: {v.detail}" for v in session.errors]
        return AgentHandback(
            session.flow_tool,
            max(0.0, ended),
            tuple((u.clip.samples, u.clip.transcript, u.clip.name, u.start) for u in caller.said),
            np.frombuffer(bytes(session.recording.pcm), dtype="<i2").copy(),
            "; ".join(problems) or session.outcome,
        )


@dataclass(frozen=True)
class SessionClock:
    """A streaming session's clock (a :class:`~.clock.Clock`): seconds since Connect's READY, the wall clock's
    ``started_at``; what :func:`read_records` places the product's moments on."""

    started_at: float
    virtual: bool = False

    def now(self) -> float:
        return time.time() - self.started_at

    def sleep_until(self, moment: float) -> None:
        delay = moment - self.now()
        if delay > 0:
            time.sleep(delay)

    def call_time(self, epoch_s: float) -> float:
        return epoch_s - self.started_at

    def epoch_ms(self, moment: float) -> int | None:
        return round((self.started_at + moment) * 1000)
