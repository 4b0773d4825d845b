"""What a simulated call shows a person: the live timeline, per-turn latencies, the transcript and the report.

A turn is what the caller said and the reply to it. In a conversation (``ConverseFunction``) the reply is the
segments the function hands the flow, ``Result=Speak`` (a prompt) or ``Result=Fallback`` (text for Connect's
voice), each with its ``TurnIndex`` and ``Segment``, played in turn; in a flow that answers by itself
(``AwaitTurnFunction``) it is the first prompt the flow plays after a ``Result=Turn``. For each turn, moments of
the call (seconds since it began)::

    caller stops  ->  Ink's turn ends  ->  segment 0 stored  ->  ConverseFunction answers  ->  Connect plays it
    (the clip's end)  (the turn's EndedAt)  (its ReadyAt)        (the flow has it)              (its first sample)

The product's own moments (a turn's end, a segment stored) and timings come from its records of the call
(:mod:`voicebridge_dev.simulator.records`). The latencies (``latency_ms``), each a difference of moments rounded to
the millisecond or a timing the product measured:

- ``stop_to_turn_end`` — the caller's voice ending to Ink's turn end: Ink's end-of-turn delay (and the media's way to
  it through Kinesis Video Streams and the consumer);
- ``responder_first_sentence`` — the responder's time to the reply's first sentence (``ResponderMs``);
- ``sonic_first_segment`` — Sonic making that sentence's prompt (``SynthesisMs``; none for a cached prompt or one
  left to Connect's voice, counted as 0 below);
- ``stop_to_playing`` — the caller's voice ending to Connect playing the reply's first segment;
- ``bridge`` — ``stop_to_playing`` less Ink's part and less the responder's and Sonic's time *after the turn
  ended*: what the project adds. Without speculation that is ``stop_to_playing`` less the other three; a speculative
  reply started at the eager end has done some or all of its responder and Sonic work before the turn ended, and
  only what is left after it counts. ``bridge_parts_ms`` splits it: the consumer's own work around the responder and
  Sonic (``reply``: the turn stored and taken up, the prompt stored, the segment put — or the speculation committed),
  ``ConverseFunction`` learning of the segment and answering (``delivery``), and Connect fetching the prompt and
  starting it (``connect``).

``speculative`` is ``hit`` (the reply played was made speculatively, from Ink's eager end, and committed when the
turn ended with the same words), ``miss`` (a speculative reply was started and discarded) or ``off``. The
``waterfall_ms`` of a turn are its moments in the order they happen: ``caller_stop``, ``eager_end``, ``turn_end``,
``responder_first_token``, ``first_clause``, ``sonic_first_byte``, ``segment_stored`` (segment 0 in the table; for a
hit, named by the commit), ``converse_answered`` and ``connect_playing``.

``segment_gaps_ms`` are the silences between a reply's segments as Connect plays them. The JSON report
(:func:`build_report`) holds these with every prompt, utterance, action and Lambda call, in milliseconds since the
call began.
"""

from __future__ import annotations

import itertools
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from voicebridge_dev.simulator.actions.lambda_ import CHAIN_BUDGET_S
from voicebridge_dev.simulator.engine import CallResult
from voicebridge_dev.simulator.events import (
    BOT,
    CALLER,
    ActionRun,
    CallEnded,
    CallEvent,
    LambdaCall,
    Segment,
    SpeechStarted,
    StreamingChanged,
)
from voicebridge_dev.simulator.records import StoredSpeculation

__all__ = [
    "LATENCIES",
    "LiveTimeline",
    "ReplySegment",
    "TurnFigures",
    "build_report",
    "figures_table",
    "latency_table",
    "prompt_texts",
    "summary",
    "transcript",
    "turn_entry",
    "turn_figures",
    "waterfall_table",
]

_SOURCES = {"prompt": "S3 prompt", "connect-voice": "Connect voice, local stand-in", "hold": "hold"}
LATENCIES = ("stop_to_turn_end", "responder_first_sentence", "sonic_first_segment", "stop_to_playing", "bridge")
"""The keys of a turn's ``latency_ms``, in the order of the call."""
_SEGMENT_RESULTS = ("Speak", "Fallback")


def prompt_texts(calls: Sequence[LambdaCall]) -> dict[str, str]:
    """What each prompt URL says: the ``Text`` of the answer that carried it (ConverseFunction's sentence), else the
    ``Prefix`` and ``Text`` the function was asked to speak (SynthesizeFunction)."""
    texts: dict[str, str] = {}
    for call in calls:
        response = call.response or {}
        uri = response.get("PromptUri")
        if not isinstance(uri, str):
            continue
        spoken = response.get("Text")
        if isinstance(spoken, str) and spoken:
            texts[uri] = " ".join(spoken.split())
        else:
            texts[uri] = " ".join((call.parameters.get("Prefix", "") + call.parameters.get("Text", "")).split())
    return texts


def _said(segment: Segment, texts: dict[str, str]) -> str:
    if segment.text is not None:
        return segment.text
    if segment.uri is not None:
        return texts.get(segment.uri, segment.uri)
    return ""


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def _gap(first: float | None, second: float | None) -> int | None:
    # From the rounded moments, so that each gap is exactly the difference of the times reported.
    first_ms, second_ms = _ms(first), _ms(second)
    return None if first_ms is None or second_ms is None else second_ms - first_ms


def _whole_ms(value: float | None) -> int | None:
    return None if value is None else round(value)


@dataclass(frozen=True)
class ReplySegment:
    """One segment of a reply: what it says, its prompt, and when it was stored, handed over and played."""

    index: int
    text: str
    prompt: str | None
    """The S3 prompt's URL; None when Connect's own voice spoke the text."""
    more: bool | None
    """What ConverseFunction said with it: ``True`` while the reply might go on (None: never handed over)."""
    ready: float | None
    """When the product had it stored, its audio in S3."""
    delivered: float | None
    """When the flow had it (the function's answer)."""
    start: float | None
    """When Connect started playing it (None: never played)."""
    end: float | None
    responder_ms: float | None = None
    synthesis_ms: float | None = None
    moments: Mapping[str, float] = field(default_factory=dict)
    """The reply's waterfall, on its first segment (:class:`~voicebridge_dev.simulator.records.StoredSegment`)."""

    @property
    def source(self) -> str:
        return "prompt" if self.prompt else "connect-voice"


@dataclass(frozen=True)
class TurnFigures:
    """One caller turn and the reply to it, as moments of the call in seconds."""

    index: int
    heard: str
    said: str | None
    speech_start: float | None
    speech_end: float | None
    turn_end: float | None
    """When Ink's turn ended (from the product's records; for a flow that answers itself without them, when the
    flow had the turn)."""
    segments: tuple[ReplySegment, ...] = ()
    action: str | None = None
    """What the reply asked of the flow (``Continue``, ``Transfer``, ``Hangup``), when the flow was told."""
    conversation: bool = True
    """The reply came from the responder (ConverseFunction), not from the flow's own prompt."""
    speculation: StoredSpeculation | None = None
    backchannel: bool = False
    """Said over the agent, who went on: the product kept it and answered nothing (it has no reply)."""

    @property
    def speculative(self) -> str:
        """``hit``, ``miss`` or ``off``: whether the reply played was a committed speculative one."""
        if self.speculation is None or not self.speculation.starts:
            return "off"
        return "hit" if self.speculation.outcome == "hit" else "miss"

    @property
    def reply(self) -> str | None:
        texts = [segment.text for segment in self.segments if segment.text]
        return " ".join(texts) if texts else None

    @property
    def first(self) -> ReplySegment | None:
        return self.segments[0] if self.segments else None

    @property
    def reply_start(self) -> float | None:
        return None if self.first is None else self.first.start

    def _after_turn_end_ms(self) -> tuple[int, int] | None:
        """The responder's and Sonic's milliseconds on segment 0 after the turn ended (all of them, for a reply
        started by the turn end); None when the records do not say."""
        first = self.first
        responder = _whole_ms(None if first is None else first.responder_ms)
        if first is None or responder is None:
            return None
        sonic = _whole_ms(first.synthesis_ms) or 0
        started = first.moments.get("ResponderStartedAt")
        clause = first.moments.get("FirstClauseAt")
        if self.speculative != "hit" or started is None or clause is None or self.turn_end is None:
            return responder, sonic
        end = self.turn_end
        responder_after = max(0, round((clause - max(started, end)) * 1000))
        sonic_after = max(0, round((clause + sonic / 1000 - max(clause, end)) * 1000))
        return responder_after, sonic_after

    def _available(self) -> float | None:
        """When segment 0 could first be handed to the flow: stored, and for a hit also committed."""
        first = self.first
        if first is None or first.ready is None:
            return None
        committed = None if self.speculation is None else self.speculation.committed_at
        if self.speculative == "hit" and committed is not None:
            return max(first.ready, committed)
        return first.ready

    def latency_ms(self) -> dict[str, int | None]:
        first = self.first
        stop_to_turn_end = _gap(self.speech_end, self.turn_end)
        stop_to_playing = _gap(self.speech_end, self.reply_start)
        responder = _whole_ms(None if first is None else first.responder_ms)
        sonic = _whole_ms(None if first is None else first.synthesis_ms)
        after = self._after_turn_end_ms()
        bridge = None
        if stop_to_playing is not None and stop_to_turn_end is not None and after is not None:
            bridge = stop_to_playing - stop_to_turn_end - after[0] - after[1]
        return {
            "stop_to_turn_end": stop_to_turn_end,
            "responder_first_sentence": responder,
            "sonic_first_segment": sonic,
            "stop_to_playing": stop_to_playing,
            "bridge": bridge,
        }

    def bridge_parts_ms(self) -> dict[str, int | None]:
        """``bridge`` split where the product's records allow it; the parts add up to it exactly."""
        first = self.first
        after = self._after_turn_end_ms()
        if first is None or after is None:
            return {"reply": None, "delivery": None, "connect": None}
        available = self._available()
        made = _gap(self.turn_end, available)
        return {
            "reply": None if made is None else made - after[0] - after[1],
            "delivery": _gap(available, first.delivered),
            "connect": _gap(first.delivered, first.start),
        }

    def waterfall_ms(self) -> dict[str, int | None]:
        """The turn's moments, milliseconds since the call began, in the order they happen (None: not seen)."""
        first = self.first
        moments = {} if first is None else first.moments
        sonic_first = moments.get("SonicFirstByteAt")
        return {
            "caller_stop": _ms(self.speech_end),
            "eager_end": _ms(moments.get("EagerEndAt")),
            "turn_end": _ms(self.turn_end),
            "responder_first_token": _ms(moments.get("ResponderFirstTokenAt")),
            "first_clause": _ms(moments.get("FirstClauseAt")),
            "sonic_first_byte": _ms(sonic_first),
            "segment_stored": _ms(self._available()),
            "converse_answered": _ms(None if first is None else first.delivered),
            "connect_playing": _ms(self.reply_start),
        }

    def segment_gaps_ms(self) -> list[int]:
        """The silence between each two segments of the reply as Connect played them, in order."""
        played = [segment for segment in self.segments if segment.start is not None]
        gaps = []
        for before, after in itertools.pairwise(played):
            gap = _gap(before.end, after.start)
            if gap is not None:
                gaps.append(gap)
        return gaps


@dataclass
class _Turn:
    index: int
    heard: str = ""
    delivered: float | None = None
    segments: dict[int, ReplySegment] = field(default_factory=dict)
    action: str | None = None
    conversation: bool = True


def turn_figures(result: CallResult) -> list[TurnFigures]:
    """Every turn of the call, in the order the caller spoke them."""
    calls = result.lambda_calls
    texts = prompt_texts(calls)
    prompts = [s for s in result.segments if s.track == BOT and s.kind != "hold"]
    turns: dict[int, _Turn] = {}
    current: _Turn | None = None
    for position, call in enumerate(calls):
        response = call.response or {}
        later = calls[position + 1 :]
        if call.result in _SEGMENT_RESULTS and "Segment" in response and "TurnIndex" in response:
            index = _whole(response.get("TurnIndex"), len(turns))
            if current is not None and index > current.index and current.action is None:
                # The flow learned that the reply it was playing was over from the next turn's first segment.
                current.action = "Continue"
            current = turns.setdefault(index, _Turn(index))
            current.heard = current.heard or str(response.get("Transcript", ""))
            horizon = later[0].start if later else result.duration
            played = next((s for s in prompts if call.end <= s.start <= horizon), None)
            number = _whole(response.get("Segment"), len(current.segments))
            stored = result.records.segment(index, number)
            uri = response.get("PromptUri")
            more = str(response.get("More", "")).lower() == "true"
            current.segments.setdefault(
                number,
                ReplySegment(
                    index=number,
                    text=str(response.get("Text") or (stored.text if stored else "") or texts.get(str(uri), "")),
                    prompt=str(uri) if uri else None,
                    more=more,
                    ready=stored.ready_at if stored else None,
                    delivered=call.end,
                    start=None if played is None else played.start,
                    end=None if played is None else played.end,
                    responder_ms=stored.responder_ms if stored else None,
                    synthesis_ms=stored.synthesis_ms if stored else None,
                    moments=stored.moments if stored else {},
                ),
            )
            if current.delivered is None:
                current.delivered = call.end
            if not more:
                current.action = str(response.get("Action", "")) or None
        elif call.result == "OK" and "Action" in response and "PromptUri" not in response:
            if current is not None:
                current.action = str(response["Action"])
        elif call.result == "Turn" and call.response is not None:
            index = _whole(response.get("TurnIndex"), len(turns))
            current = turns.setdefault(index, _Turn(index, conversation=False))
            current.heard = str(response.get("Transcript", ""))
            current.delivered = call.end
            horizon = next((c.start for c in later if c.function == call.function), result.duration)
            prompts_made = (c for c in later if c.result == "Fallback" or "PromptUri" in (c.response or {}))
            ready = next((c for c in prompts_made if c.end <= horizon), None)
            played = next((s for s in prompts if call.end <= s.start <= horizon), None)
            if played is not None:
                current.segments[0] = ReplySegment(
                    index=0,
                    text=_said(played, texts),
                    prompt=played.uri,
                    more=None,
                    ready=None if ready is None else ready.end,
                    delivered=None if ready is None else ready.end,
                    start=played.start,
                    end=played.end,
                )
    for stored_turn in result.records.turns:
        if stored_turn.track == "customer":
            # A turn the flow never heard of — a backchannel, which nothing answers, or a turn the caller went on
            # from before its reply was handed out (the reply to the newer one answers both): the product's records
            # are where it is.
            turns.setdefault(stored_turn.index, _Turn(stored_turn.index, heard=stored_turn.transcript))
    for index, turn in turns.items():
        for stored in result.records.reply(index) if turn.conversation else ():
            if stored.index in turn.segments:
                continue
            turn.segments[stored.index] = ReplySegment(
                index=stored.index,
                text=stored.text,
                prompt=stored.prompt_uri,
                more=None,
                ready=stored.ready_at,
                delivered=None,
                start=None,
                end=None,
                responder_ms=stored.responder_ms,
                synthesis_ms=stored.synthesis_ms,
                moments=stored.moments,
            )
    return _with_utterances(result, [turns[index] for index in sorted(turns)])


def _with_utterances(result: CallResult, turns: list[_Turn]) -> list[TurnFigures]:
    """Each turn with the caller's utterance it heard: the last one not yet matched whose sound ended before the turn
    did (its sound, not the clip: a turn the product ends itself may end inside a clip's quiet tail); failing that, the
    first one not yet matched that was sounding when the turn ended (Ink ended it before the caller's last syllable:
    its stop → turn end is then negative, a cut-off, not a turn heard with nobody speaking)."""
    utterances = [s for s in result.segments if s.track == CALLER]
    matched: set[int] = set()
    figures = []
    for turn in turns:
        stored = result.records.turn(turn.index)
        ended = stored.ended_at if stored is not None else None
        if ended is None and not turn.conversation:
            ended = turn.delivered
        horizon = ended if ended is not None else turn.delivered
        spoken = [s for s in utterances if horizon is not None and s.sound_end <= horizon and id(s) not in matched]
        sounding = [s for s in utterances if horizon is not None and s.sound_start < horizon < s.sound_end]
        utterance = spoken[-1] if spoken else next((s for s in sounding if id(s) not in matched), None)
        if utterance is not None:
            matched.add(id(utterance))
        figures.append(
            TurnFigures(
                index=turn.index,
                heard=turn.heard,
                said=None if utterance is None else utterance.text,
                speech_start=None if utterance is None else utterance.sound_start,
                speech_end=None if utterance is None else utterance.sound_end,
                turn_end=ended,
                segments=tuple(turn.segments[k] for k in sorted(turn.segments)),
                action=turn.action,
                conversation=turn.conversation,
                speculation=result.records.speculation(turn.index),
                backchannel=stored is not None and stored.backchannel,
            )
        )
    return figures


def _whole(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _clock(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes):02d}:{rest:06.3f}"


def _median(values: Sequence[int | None]) -> float | None:
    present = [value for value in values if value is not None]
    return None if not present else round(statistics.median(present), 1)


def summary(figures: Sequence[TurnFigures]) -> dict[str, Any]:
    """The call's turns in a few figures: the median of each latency, and of the gaps between segments."""
    latencies = [turn.latency_ms() for turn in figures]
    gaps = [gap for turn in figures for gap in turn.segment_gaps_ms()]
    speculations = [turn.speculation for turn in figures if turn.speculation is not None]
    return {
        "turns": len(figures),
        "segments": sum(len(turn.segments) for turn in figures),
        "speculation": {
            "hits": sum(turn.speculative == "hit" for turn in figures),
            "misses": sum(turn.speculative == "miss" for turn in figures),
            "starts": sum(s.starts for s in speculations),
            "discarded": sum(s.misses for s in speculations),
            "waste_tokens": sum(s.waste_tokens for s in speculations),
            "waste_sonic_ms": round(sum(s.waste_sonic_ms for s in speculations), 1),
        },
        "median_ms": {name: _median([latency[name] for latency in latencies]) for name in LATENCIES},
        "segment_gap_median_ms": _median(gaps),
        "segment_gap_max_ms": max(gaps, default=None),
    }


LISTENING_AFTER_SPEECH_S = 2.0
"""How long after the caller's last sound a ``Listening`` answer is still their turn's: the voice detector's close
and Ink's turn end (about a second here) with room to spare."""


def line_effects(result: CallResult, figures: Sequence[TurnFigures]) -> dict[str, int]:
    """What the caller's line set off with nobody speaking (``demo --line-noise``): ``Listening`` answers (a wait
    that ran out with the caller taken for mid-turn) with no speech of theirs from its first sound to
    :data:`LISTENING_AFTER_SPEECH_S` after its last, and turns heard that no utterance of theirs matches."""
    speech = [s for s in result.segments if s.track == CALLER and s.kind == "speech"]
    listening = [call.end for call in result.lambda_calls if call.result == "Listening"]
    return {
        "listening_without_speech": sum(
            1
            for at in listening
            if not any(s.sound_start <= at <= s.sound_end + LISTENING_AFTER_SPEECH_S for s in speech)
        ),
        "turns_without_speech": sum(1 for turn in figures if turn.said is None),
    }


def build_report(result: CallResult, **context: Any) -> dict[str, Any]:
    """The call as JSON-ready data; ``context`` (scenario, engines, files…) is added as given."""
    texts = prompt_texts(result.lambda_calls)
    streaming = [e for e in result.events if isinstance(e, StreamingChanged)]
    figures = turn_figures(result)
    return {
        **context,
        "contact_id": result.contact_id,
        "clock": "virtual" if result.virtual_clock else "real",
        "ended_by": result.ended_by,
        "detail": result.detail,
        "duration_ms": _ms(result.duration),
        "recording": {
            "sample_rate": result.sample_rate,
            "channels": ["caller", "bot"],
            "frames": int(result.recording.shape[0]),
        },
        "summary": summary(figures),
        "line": line_effects(result, figures),
        "turns": _talked_over([turn_entry(turn) for turn in figures]),
        "prompts": [
            {
                "action": s.action,
                "source": s.kind,
                "text": _said(s, texts),
                "uri": s.uri,
                "start_ms": _ms(s.start),
                "end_ms": _ms(s.end),
            }
            for s in result.segments
            if s.track == BOT
        ],
        "caller": [
            {"clip": s.clip, "text": s.text, "start_ms": _ms(s.start), "end_ms": _ms(s.end)}
            for s in result.segments
            if s.track == CALLER
        ],
        "actions": [
            {
                "at_ms": _ms(a.at),
                "identifier": a.identifier,
                "type": a.type,
                "outcome": a.outcome,
                "next": a.next_action,
            }
            for a in result.actions
        ],
        "lambda_calls": [
            {
                "action": c.action,
                "function": c.function,
                "start_ms": _ms(c.start),
                "end_ms": _ms(c.end),
                "duration_ms": _ms(c.duration),
                "outcome": c.outcome,
                "parameters": c.parameters,
                "response": c.response,
                "error": c.error,
            }
            for c in result.lambda_calls
        ],
        "lambda_chain": {
            "budget_ms": _ms(CHAIN_BUDGET_S),
            "longest_ms": _ms(result.longest_lambda_chain),
            "exhausted": sum(1 for c in result.lambda_calls if c.outcome == "budget-exhausted"),
        },
        "media_streaming": [
            {
                "at_ms": _ms(e.at),
                "enabled": e.enabled,
                "stream_arn": e.stream_arn,
                "fragment": e.fragment_number,
            }
            for e in streaming
        ],
    }


def turn_entry(turn: TurnFigures) -> dict[str, Any]:
    """One turn of the report: what was said and heard, the reply, its moments and latencies (both transports)."""
    return {
        "index": turn.index,
        "said": turn.said,
        "heard": turn.heard,
        "reply": turn.reply,
        "action": turn.action,
        "speech_start_ms": _ms(turn.speech_start),
        "speech_end_ms": _ms(turn.speech_end),
        "turn_end_ms": _ms(turn.turn_end),
        "reply_start_ms": _ms(turn.reply_start),
        "segments": [
            {
                "index": segment.index,
                "text": segment.text,
                "prompt": segment.prompt,
                "source": segment.source,
                "more": segment.more,
                "ready_ms": _ms(segment.ready),
                "delivered_ms": _ms(segment.delivered),
                "played_ms": _ms(segment.start),
                "ended_ms": _ms(segment.end),
            }
            for segment in turn.segments
        ],
        "speculative": turn.speculative,
        "backchannel": turn.backchannel,
        "latency_ms": turn.latency_ms(),
        "bridge_parts_ms": turn.bridge_parts_ms(),
        "waterfall_ms": turn.waterfall_ms(),
        "segment_gaps_ms": turn.segment_gaps_ms(),
    }


BACKCHANNEL_MS = 600
"""Voice over the agent shorter than this is a backchannel ("uh-huh"), which should stop nothing."""


def _talked_over(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn the caller began while a reply's prompt was playing carries ``barge_in_ms``: their first voiced frame to
    the end of the last prompt of that reply Connect played (it plays a prompt to its end, and a later sentence of the
    reply said after the caller began would count too); and ``backchannel_interrupted``: the caller spoke for less
    than :data:`BACKCHANNEL_MS` and the reply still had sentences stored that were never played; and, for such a short
    voice, ``went_on_after_ms``: the reply's silence after it before going on (from the voice's end, or the end of the
    prompt playing then, to the next prompt; None when no more of the reply was played). The agent's next reply, to
    what the caller said, is not the interrupted one's and does not count."""
    for entry in entries:
        start = entry.get("speech_start_ms")
        if start is None:
            continue
        for other in entries:
            played = [s for s in other["segments"] if s["played_ms"] is not None and s["ended_ms"] is not None]
            playing = next((s for s in played if s["played_ms"] <= start < s["ended_ms"]), None)
            if other is entry or playing is None:
                continue
            entry["barge_in_ms"] = max(s["ended_ms"] for s in played) - start
            cut = any(s["played_ms"] is None and s["index"] > playing["index"] for s in other["segments"])
            end = entry.get("speech_end_ms") or start
            spoke_ms = end - start
            entry["backchannel_interrupted"] = cut and spoke_ms < BACKCHANNEL_MS
            if spoke_ms < BACKCHANNEL_MS:
                entry["went_on_after_ms"] = _went_on_after(played, end)
            break
    return entries


def talked_over_lines(result: CallResult) -> list[str]:
    """One line per turn the caller began over a reply: how long they spoke, and what the reply did."""
    lines = []
    for entry in _talked_over([turn_entry(turn) for turn in turn_figures(result)]):
        if "barge_in_ms" not in entry:
            continue
        spoke_ms = round((entry.get("speech_end_ms") or 0) - (entry.get("speech_start_ms") or 0))
        went_on = entry.get("went_on_after_ms")
        if entry.get("backchannel_interrupted"):
            what = "the reply was cut off"
        elif went_on is not None:
            what = f"the reply went on after {round(went_on)} ms of silence"
        else:
            what = "answered"
        lines.append(f"over the agent: turn {entry['index']} {entry['said']!r} ({spoke_ms} ms): {what}")
    return lines


def _went_on_after(played: list[dict[str, Any]], end: float) -> float | None:
    """The reply's silence after the caller's voice ended at ``end``: from the later of that and the end of the prompt
    playing then, to the next prompt's start; None when no more of the reply was played."""
    since = max([end, *(s["ended_ms"] for s in played if s["played_ms"] <= end < s["ended_ms"])])
    after = [s["played_ms"] for s in played if s["played_ms"] >= since]
    return min(after) - since if after else None


def turn_story(result: CallResult, turn: int) -> str:
    """What the product kept of caller turn ``turn`` (its record, its speculation, every segment stored for it) and
    every answer the flow was handed for it, for a test failure's message: the moments whose order the whole-call and
    many-calls tests check, and what a turn left unanswered did get."""
    records = result.records
    lines = [f"turn {turn}: {records.turn(turn)}", f"speculation: {records.speculation(turn)}"]
    if records.status is not None and int(records.status.get("Turn", -1)) >= turn - 1:
        lines.append(f"reply status at the call's end: {dict(records.status)}")
    lines += [
        f"stored {s.keys} #{s.index} ready {s.ready_at} {s.text[:40]!r}" for s in records.segments if s.turn == turn
    ]
    lines += [
        f"{c.function} {c.start:.3f}-{c.end:.3f} {c.result} {c.response}"
        for c in result.lambda_calls
        if c.response and str(c.response.get("TurnIndex")) == str(turn)
    ]
    return "\n".join(lines)


def transcript(result: CallResult) -> str:
    """Who said what, when (mm:ss.mmm since the call began), what was heard, and how the call ended."""
    texts = prompt_texts(result.lambda_calls)
    lines: list[tuple[float, str]] = []
    for segment in result.segments:
        if segment.track == CALLER:
            lines.append((segment.start, f"CALLER  {segment.text or ''}"))
        elif segment.kind != "hold":
            lines.append((segment.start, f"BOT     {_said(segment, texts)}  [{_SOURCES[segment.kind]}]"))
    for turn in turn_figures(result):
        heard_at = turn.turn_end if turn.turn_end is not None else turn.first.delivered if turn.first else None
        if heard_at is not None:
            lines.append((heard_at, f"HEARD   {turn.heard}  [turn {turn.index}]"))
    ending = result.ended_by + (f": {result.detail}" if result.detail else "")
    lines.append((result.duration, f"END     {ending}"))
    mode = "virtual" if result.virtual_clock else "real"
    header = f"Simulated call {result.contact_id} ({mode} clock)"
    body = [f"[{_clock(at)}] {text}" for at, text in sorted(lines, key=lambda line: line[0])]
    return "\n".join([header, *body]) + "\n"


_COLUMNS = (
    ("turn", 4),
    ("heard", 34),
    ("segs", 4),
    ("spec", 4),
    ("stop->turn end", 14),
    ("responder", 9),
    ("sonic", 6),
    ("bridge", 6),
    ("stop->play", 10),
    ("gaps (median)", 13),
)


def latency_table(result: CallResult) -> str:
    """The per-turn latencies as a table for the terminal, with the medians under it."""
    return figures_table(turn_figures(result))


def figures_table(figures: Sequence[TurnFigures]) -> str:
    """The latency table and the waterfall of ``figures`` (either transport's turns)."""
    header = "  ".join(f"{name:<{width}}" if name == "heard" else f"{name:>{width}}" for name, width in _COLUMNS)
    rows = [header, "-" * len(header)]

    def cell(value: float | None, width: int) -> str:
        if value is None:
            return f"{'-':>{width}}"
        return f"{f'{value:g} ms':>{width}}"

    for turn in figures:
        latency = turn.latency_ms()
        gaps = turn.segment_gaps_ms()
        heard = turn.heard if len(turn.heard) <= 34 else turn.heard[:33] + "…"
        values = (
            latency["stop_to_turn_end"],
            latency["responder_first_sentence"],
            latency["sonic_first_segment"],
            latency["bridge"],
            latency["stop_to_playing"],
            _median(gaps),
        )
        cells = [cell(value, width) for value, (_, width) in zip(values, _COLUMNS[4:], strict=True)]
        row = [f"{turn.index:>4}", f"{heard:<34}", f"{len(turn.segments):>4}", f"{turn.speculative:>4}", *cells]
        rows.append("  ".join(row))
    if len(rows) == 2:
        rows.append("(no turn was heard)")
    else:
        medians = summary(figures)
        median = medians["median_ms"]
        rows.append("-" * len(header))
        cells = [
            cell(median["stop_to_turn_end"], 14),
            cell(median["responder_first_sentence"], 9),
            cell(median["sonic_first_segment"], 6),
            cell(median["bridge"], 6),
            cell(median["stop_to_playing"], 10),
            cell(medians["segment_gap_median_ms"], 13),
        ]
        hits = f"{medians['speculation']['hits']}/{len(figures)}"
        rows.append("  ".join([f"{'':>4}", f"{'median':<34}", f"{medians['segments']:>4}", f"{hits:>4}", *cells]))
    return "\n".join(rows) + "\n" + waterfall_table(figures)


_WATERFALL_COLUMNS = (
    ("eager_end", "eager end"),
    ("turn_end", "turn end"),
    ("responder_first_token", "1st token"),
    ("first_clause", "1st clause"),
    ("sonic_first_byte", "sonic 1st"),
    ("segment_stored", "stored"),
    ("converse_answered", "answered"),
    ("connect_playing", "playing"),
)


def waterfall_table(figures: Sequence[TurnFigures]) -> str:
    """Each turn's moments as milliseconds after the caller stopped, with their medians: what waited for what."""
    header = "  ".join([f"{'turn':>4}", f"{'spec':>4}", *(f"{title:>10}" for _, title in _WATERFALL_COLUMNS)])
    rows = ["", "waterfall: milliseconds after the caller stopped", header, "-" * len(header)]
    columns: dict[str, list[int | None]] = {name: [] for name, _ in _WATERFALL_COLUMNS}
    for turn in figures:
        moments = turn.waterfall_ms()
        stop = moments["caller_stop"]
        cells = []
        for name, _ in _WATERFALL_COLUMNS:
            value = moments[name]
            after = None if value is None or stop is None else value - stop
            columns[name].append(after)
            cells.append(f"{'-' if after is None else f'{after} ms':>10}")
        rows.append("  ".join([f"{turn.index:>4}", f"{turn.speculative:>4}", *cells]))
    if not figures:
        return ""
    rows.append("-" * len(header))
    medians = [_median(columns[name]) for name, _ in _WATERFALL_COLUMNS]
    rows.append("  ".join([f"{'':>4}", f"{'med':>4}", *(f"{'-' if m is None else f'{m:g} ms':>10}" for m in medians)]))
    return "\n".join(rows) + "\n"


class LiveTimeline:
    """Prints each event of a call as it is recorded: who speaks, what was heard, what was said back."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out if out is not None else sys.stdout
        self._texts: dict[str, str] = {}

    def __call__(self, event: CallEvent) -> None:
        line = self._line(event)
        if line is not None:
            print(f"{event.at:8.2f} s  {line}", file=self._out, flush=True)

    def _line(self, event: CallEvent) -> str | None:
        if isinstance(event, SpeechStarted):
            segment = event.segment
            if segment.track == CALLER:
                return f'caller  says   "{segment.text}" ({segment.duration:.1f} s)'
            if segment.kind == "hold":
                return f"bot     holds  ({segment.duration:.1f} s of silence)"
            said = _said(segment, self._texts)
            return f'bot     says   "{said}" ({segment.duration:.1f} s, {_SOURCES[segment.kind]})'
        if isinstance(event, LambdaCall):
            return self._lambda_line(event)
        if isinstance(event, StreamingChanged):
            state = "on" if event.enabled else "off"
            return f"connect media streaming {state} (fragment {event.fragment_number})"
        if isinstance(event, CallEnded):
            return "call    ended: " + event.reason + (f" ({event.detail})" if event.detail else "")
        if isinstance(event, ActionRun) and event.type in ("DisconnectParticipant", "TransferContactToQueue"):
            return f"flow    {event.identifier}"
        return None

    def _lambda_line(self, call: LambdaCall) -> str:
        self._texts.update(prompt_texts([call]))
        head = f"lambda  {call.function} ({call.duration * 1000:.0f} ms): "
        if call.outcome != "ok" or call.response is None:
            return head + f"{call.outcome} - {call.error}"
        response = call.response
        if call.result == "Turn":
            return head + f'heard "{response.get("Transcript", "")}" (turn {response.get("TurnIndex")})'
        if call.result in _SEGMENT_RESULTS and "Segment" in response:
            more = "more to come" if response.get("More") == "true" else f"last, then {response.get('Action')}"
            voice = "" if call.result == "Speak" else ", for Connect's voice"
            heard = f'heard "{response.get("Transcript", "")}"; ' if response.get("Segment") == "0" else ""
            return head + (
                f"{heard}turn {response.get('TurnIndex')} segment {response.get('Segment')} ready ({more}{voice})"
            )
        if "PromptUri" in response:
            cache = "cache hit" if response.get("CacheHit") == "true" else "synthesized"
            return head + f"prompt ready, {response.get('DurationMs')} ms of audio ({cache})"
        if call.result == "Fallback":
            return head + f"Fallback ({response.get('ErrorCode')}): Connect's voice will speak the text"
        if call.result == "OK" and "Action" in response:
            return head + f"the reply is over: {response['Action']}"
        return head + str(call.result)
