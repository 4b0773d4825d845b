"""One call's state as a flow runs, and the helpers every family of actions shares.

The layers of the simulator point one way: :mod:`~voicebridge_dev.simulator.loaded` (the flow) and the pieces a call
is made of (contact, caller, clock, media, stand-ins, the flow library) sit below this module; the families of
actions (:mod:`~voicebridge_dev.simulator.actions`) take a :class:`Call` from here; the engine
(:mod:`~voicebridge_dev.simulator.engine`) sits above them all, holding the dispatch table and the call's loop.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from voicebridge_dev.flows import Action, Flow
from voicebridge_dev.local.kvs import ContactStream, StreamHost
from voicebridge_dev.local.speech_engine import SpeechEngine
from voicebridge_dev.simulator.caller import SimulatedCaller
from voicebridge_dev.simulator.clock import Clock, RealClock
from voicebridge_dev.simulator.contact import Contact
from voicebridge_dev.simulator.events import CallLog, StreamingChanged
from voicebridge_dev.simulator.lexbot import LexBotRef
from voicebridge_dev.simulator.library import FlowLibrary
from voicebridge_dev.simulator.loaded import LoadedFlow
from voicebridge_dev.simulator.media import MediaPlane
from voicebridge_dev.simulator.outcomes import WAIT_SLICE_S, Branch, CallOver, FlowRuntimeError
from voicebridge_dev.simulator.standins import LocalContactCentre

__all__ = ["Call", "Handler"]

logger = logging.getLogger(__name__)

_STREAM_DRAIN_S = 5.0


@dataclass(frozen=True)
class AgentHandback:
    """What an external AI agent's session did with the call, for the flow to go on: how it ended (the ``Tool``
    session attribute, ``Complete`` or ``Escalate``; None when it failed), and what was heard while it lasted, placed
    from the hand-over on: the caller's lines (samples, text, clip name, seconds in) and the agent's voice as the
    caller heard it."""

    tool: str | None
    duration_s: float
    caller: tuple[tuple[npt.NDArray[np.int16], str, str, float], ...] = ()
    agent: npt.NDArray[np.int16] | None = None
    detail: str = ""


AgentHandoff = Callable[["Call", Mapping[str, str]], AgentHandback]
"""Runs an external AI agent's session for the call (given the Lex block's session attributes) to its end."""


class Call:
    """One call's state as a flow runs: the flow running, the contact, the clients and the clock, the media, and
    what the families of actions (:mod:`~voicebridge_dev.simulator.actions`) keep across actions; with the helpers
    they share (time parameters, time passing, the end of streaming)."""

    def __init__(
        self,
        flow: LoadedFlow,
        *,
        lambda_client: Any,
        s3_client: Any,
        kvs: StreamHost,
        voice: SpeechEngine,
        caller: SimulatedCaller,
        clock: Clock | None = None,
        contact: Contact | None = None,
        log: CallLog | None = None,
        max_actions: int = 1000,
        max_call_s: float = 1800.0,
        centre: LocalContactCentre | None = None,
        local_answers: Mapping[str, Mapping[str, Any]] | None = None,
        lex_client: Any | None = None,
        lex_standin: LexBotRef | None = None,
        agent: AgentHandoff | None = None,
        library: FlowLibrary | None = None,
        views: Mapping[str, str] | None = None,
        prompts: Mapping[str, Path] | None = None,
        made_ahead: Callable[[Contact], bool] | None = None,
    ) -> None:
        self.flow = flow.flow
        self.flow_name = str(flow.flow.metadata.get("name") or "")
        self.family = flow.family
        self.templated = flow.templated
        self.functions = flow.functions
        self.lambda_client = lambda_client
        self.s3 = s3_client
        self.kvs = kvs
        self.voice = voice
        self.caller = caller
        self.clock: Clock = clock if clock is not None else RealClock()
        self.contact = contact if contact is not None else Contact()
        self.log = log if log is not None else CallLog()
        self.media = MediaPlane(self.clock, self.log, line=caller.line)
        self.max_actions = max_actions
        self.max_call_s = max_call_s
        self.centre = centre if centre is not None else LocalContactCentre()
        # With local answers, a function that is not the template's answers from them (by ARN or name), else {}.
        self.local_answers = None if local_answers is None else dict(local_answers)
        self.lex: Any = lex_client
        # The bot the Lex emulator serves, for a templated flow whose bot alias is a token filled before import.
        self.lex_standin = lex_standin
        # The external AI agent a Lex block hands the call to when its session attributes name an AI agent.
        self.agent = agent
        self.library = library
        self.views = dict(views or {})
        self.prompts = dict(prompts or {})
        # The flows a module was invoked from, innermost last: (flow, its name, the InvokeFlowModule action, the
        # flow's attributes and loop counters, which the module does not share).
        self.callers: list[tuple[Flow, str, Action, dict[str, str], dict[str, int]]] = []
        self.loops: dict[str, int] = {}
        # Keys the caller pressed while a queue's messages looped, for the block that listens next.
        self.key_buffer: str | None = None
        self.chain = 0.0
        self.longest_chain = 0.0
        self.stream: ContactStream | None = None
        self.start_fragment: str | None = None
        self.epoch = time.time()
        self._streamed_wait = False
        """A wait has passed while the call streamed (:meth:`pass_time` skips none before it)."""
        self.made_ahead = made_ahead
        """Whether the contact's backends have made what the flow will ask for once the prompt now playing ends (a
        reply's next sentence): on a virtual clock a prompt lets real time pass until they have, at most its own
        length, and skips only the rest (:func:`~voicebridge_dev.simulator.records.next_sentence_stored`)."""

    def seconds(self, action: Action, name: str, default: str | None = None) -> float:
        """A time parameter's seconds (given, or referenced: ``$.Attributes.Timeout``); FlowRuntimeError when the
        value is not a number of seconds."""
        raw = action.parameters.get(name, default)
        value = self.contact.value(str(raw)) if raw is not None else ""
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise FlowRuntimeError(f"action {action.identifier!r}: {name} {value!r} is not a number of seconds")
        return seconds

    def pass_time(self, until: float, *, made: Callable[[], bool] | None = None) -> None:
        """Let the call go on until ``until``, unless the caller hangs up first.

        A virtual clock skips ahead, but never across the caller's speech, which Ink hears at its real pace, nor
        across the first wait after the call begins streaming (the greeting, as a rule): the product's reader starts
        while it plays. Skipped, the caller spoke before anyone was listening, the audio reached Ink a backlog it takes
        no faster than real time, and the first turn ended up to seconds late (a reply's first answer then a
        ``Thinking`` where every call on a line has its ``Speak``). Nor, while ``made`` says no, across a prompt: on a
        line the product makes a reply's next sentence while the last one plays, and skipped, the flow asked for it
        at once and waited for it in real time after the prompt, a gap no line has, into which the scripted caller
        spoke or hung up. Time never passes beyond the call's limit (a view or a wait may ask for hours): the flow
        ends there.
        """
        until = min(until, self.max_call_s + WAIT_SLICE_S)
        began = self.clock.now()
        # Asked until it says yes, and only on a virtual clock: a real one skips nothing.
        waiting = made if self.clock.virtual else None
        while True:
            now = self.clock.now()
            if self.caller.hung_up(now):
                raise CallOver("caller hung up")
            if now >= until:
                # A wait already over when asked for (a zero-length one) is not the one the reader starts under.
                if self.media.streaming and until > began:
                    self._streamed_wait = True
                return
            upcoming = self.caller.next_event(now)
            target = until if upcoming is None else min(until, upcoming)
            if waiting is not None and waiting():
                waiting = None
            real = (
                waiting is not None
                or self.caller.speaking_until(now) is not None
                or (self.media.streaming and not self._streamed_wait)
            )
            if self.clock.virtual and real:
                time.sleep(min(target - now, WAIT_SLICE_S))
            else:
                self.clock.sleep_until(target)
            self.media.pump()

    def stop_streaming(self, *, at: float) -> None:
        """Stop streaming into the KVS emulator (an action's, or the call's end): ``MediaStreams`` gets the stop."""
        stream = self.media.stop_streaming()
        if stream is None:
            return
        if not stream.wait_idle(_STREAM_DRAIN_S):
            logger.warning("flow simulator: the KVS emulator did not finish the contact's last fragment")
        stop = stream.last_fragment_number or self.start_fragment or ""
        self.contact.audio_stream = {
            **(self.contact.audio_stream or {}),
            "StopFragmentNumber": stop,
            "StopTimestamp": str(self._epoch_ms(at)),
        }
        self.log.record(StreamingChanged(at, False, stream.arn, stop))

    def _epoch_ms(self, moment: float) -> int:
        return round((self.epoch + moment) * 1000)


Handler = Callable[[Call, Action], Branch]
"""An action type's handler: the branch the action takes in the call, or ActionFailed or CallOver."""
