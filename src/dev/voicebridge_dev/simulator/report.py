"""What a simulated call shows a person: the live timeline, per-turn latencies, the transcript and the report.

Per turn, four moments of the call (seconds since it began) and the gaps between them::

    caller stops speaking  ->  turn available to the flow  ->  reply prompt ready  ->  reply starts playing
    (end of the utterance)     (AwaitTurn answered Turn)       (Synthesize answered)   (its first sample)

A turn is an answer ``Result=Turn`` from a function; its reply is the first prompt the flow gets
(``Result=OK`` with ``PromptUri``, or ``Result=Fallback``) and the first prompt it plays before calling that
function again. The JSON report (:func:`build_report`) holds these figures with every prompt, utterance,
action and Lambda call, times in milliseconds since the call began.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from voicebridge_dev.simulator.engine import CHAIN_BUDGET_S, CallResult
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

__all__ = [
    "LiveTimeline",
    "TurnFigures",
    "build_report",
    "latency_table",
    "prompt_texts",
    "transcript",
    "turn_figures",
]

_SOURCES = {"prompt": "S3 prompt", "connect-voice": "Connect voice, local stand-in", "hold": "hold"}


def prompt_texts(calls: Sequence[LambdaCall]) -> dict[str, str]:
    """What each prompt URL says: the ``Prefix`` and ``Text`` of the call that answered with it."""
    texts: dict[str, str] = {}
    for call in calls:
        uri = (call.response or {}).get("PromptUri")
        if isinstance(uri, str):
            texts[uri] = " ".join((call.parameters.get("Prefix", "") + call.parameters.get("Text", "")).split())
    return texts


def _said(segment: Segment, texts: dict[str, str]) -> str:
    if segment.text is not None:
        return segment.text
    if segment.uri is not None:
        return texts.get(segment.uri, segment.uri)
    return ""


@dataclass(frozen=True)
class TurnFigures:
    """One caller turn and the reply to it, as moments of the call in seconds."""

    index: int
    heard: str
    said: str | None
    speech_start: float | None
    speech_end: float | None
    available: float
    reply_ready: float | None
    reply_start: float | None
    reply: str | None

    def gaps_ms(self) -> dict[str, int | None]:
        def gap(first: float | None, second: float | None) -> int | None:
            # From the rounded moments, so that each gap is exactly the difference of the times reported.
            return None if first is None or second is None else round(second * 1000) - round(first * 1000)

        return {
            "stop_to_available": gap(self.speech_end, self.available),
            "available_to_ready": gap(self.available, self.reply_ready),
            "ready_to_playing": gap(self.reply_ready, self.reply_start),
            "stop_to_playing": gap(self.speech_end, self.reply_start),
        }


def turn_figures(result: CallResult) -> list[TurnFigures]:
    calls = result.lambda_calls
    texts = prompt_texts(calls)
    utterances = [s for s in result.segments if s.track == CALLER]
    prompts = [s for s in result.segments if s.track == BOT and s.kind != "hold"]
    figures: list[TurnFigures] = []
    matched: set[int] = set()
    for position, call in enumerate(calls):
        if call.result != "Turn" or call.response is None:
            continue
        spoken = [s for s in utterances if s.end <= call.end and id(s) not in matched]
        utterance = spoken[-1] if spoken else None
        if utterance is not None:
            matched.add(id(utterance))
        later = calls[position + 1 :]
        horizon = next((c.start for c in later if c.function == call.function), result.duration)
        ready = next(
            (
                c.end
                for c in later
                if c.end <= horizon and (c.result == "Fallback" or "PromptUri" in (c.response or {}))
            ),
            None,
        )
        reply = next((s for s in prompts if call.end <= s.start <= horizon), None)
        figures.append(
            TurnFigures(
                index=_turn_index(call.response.get("TurnIndex"), len(figures)),
                heard=str(call.response.get("Transcript", "")),
                said=None if utterance is None else utterance.text,
                speech_start=None if utterance is None else utterance.start,
                speech_end=None if utterance is None else utterance.end,
                available=call.end,
                reply_ready=ready,
                reply_start=None if reply is None else reply.start,
                reply=None if reply is None else _said(reply, texts),
            )
        )
    return figures


def _turn_index(raw: Any, default: int) -> int:
    try:
        return int(raw)
    except (TypeError, ValueError):
        return default


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else round(seconds * 1000)


def _clock(seconds: float) -> str:
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes):02d}:{rest:06.3f}"


def build_report(result: CallResult, **context: Any) -> dict[str, Any]:
    """The call as JSON-ready data; ``context`` (scenario, engines, files…) is added as given."""
    texts = prompt_texts(result.lambda_calls)
    streaming = [e for e in result.events if isinstance(e, StreamingChanged)]
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
        "turns": [
            {
                "index": turn.index,
                "said": turn.said,
                "heard": turn.heard,
                "reply": turn.reply,
                "speech_start_ms": _ms(turn.speech_start),
                "speech_end_ms": _ms(turn.speech_end),
                "turn_available_ms": _ms(turn.available),
                "reply_ready_ms": _ms(turn.reply_ready),
                "reply_start_ms": _ms(turn.reply_start),
                "latency_ms": turn.gaps_ms(),
            }
            for turn in turn_figures(result)
        ],
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
        lines.append((turn.available, f"HEARD   {turn.heard}  [turn {turn.index}]"))
    ending = result.ended_by + (f": {result.detail}" if result.detail else "")
    lines.append((result.duration, f"END     {ending}"))
    mode = "virtual" if result.virtual_clock else "real"
    header = f"Simulated call {result.contact_id} ({mode} clock)"
    body = [f"[{_clock(at)}] {text}" for at, text in sorted(lines, key=lambda line: line[0])]
    return "\n".join([header, *body]) + "\n"


def latency_table(result: CallResult) -> str:
    """The per-turn latencies as a table for the terminal."""
    header = (
        f"{'turn':>4}  {'heard':<40}  {'stop->turn':>10}  {'turn->ready':>11}  {'ready->play':>11}  {'stop->play':>10}"
    )
    rows = [header, "-" * len(header)]

    def cell(value: int | None, width: int) -> str:
        return f"{'-' if value is None else f'{value} ms':>{width}}"

    for turn in turn_figures(result):
        gaps = turn.gaps_ms()
        heard = turn.heard if len(turn.heard) <= 40 else turn.heard[:39] + "…"
        rows.append(
            f"{turn.index:>4}  {heard:<40}  {cell(gaps['stop_to_available'], 10)}  "
            f"{cell(gaps['available_to_ready'], 11)}  {cell(gaps['ready_to_playing'], 11)}  "
            f"{cell(gaps['stop_to_playing'], 10)}"
        )
    if len(rows) == 2:
        rows.append("(no turn was heard)")
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
        if "PromptUri" in response:
            cache = "cache hit" if response.get("CacheHit") == "true" else "synthesized"
            return head + f"prompt ready, {response.get('DurationMs')} ms of audio ({cache})"
        if call.result == "Fallback":
            return head + f"Fallback ({response.get('ErrorCode')}): Connect's voice will speak the text"
        return head + str(call.result)
