"""A reply as ConverseStream streams it: what is said and in which pieces, and each event framed for the wire.

The events are ``ConverseStreamOutput``'s members in botocore's ``bedrock-runtime`` model (``botocore/data/
bedrock-runtime/2023-09-30/service-2.json``), each an event-stream message (``:message-type: event``, ``:event-type``
the member's name, ``:content-type: application/json``) whose payload is the member's JSON::

    messageStart       {"role": "assistant"}
    contentBlockDelta  {"contentBlockIndex": 0, "delta": {"text": " word"}}                       one per word
    contentBlockStop   {"contentBlockIndex": 0}
    contentBlockStart  {"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": …, "name": …}}}  with a tool call
    contentBlockDelta  {"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\\"reason\\": …"}}}   pieces of JSON
    contentBlockStop   {"contentBlockIndex": 1}
    messageStop        {"stopReason": "end_turn" | "tool_use" | "max_tokens" | "stop_sequence" | …}
    metadata           {"usage": {"inputTokens", "outputTokens", "totalTokens"}, "metrics": {"latencyMs"}}

A text block has no ``contentBlockStart``; a failure mid-stream is an ``exception`` message whose
``:exception-type`` is the member's name (``modelStreamErrorException`` …) and whose payload is
``{"message": …}`` (plus ``originalStatusCode`` and ``originalMessage`` for a model stream error). The framing
itself is :mod:`voicebridge_dev.local.eventstream_encoder`'s.

Each word of the text carries the white space before it, so the deltas joined are the reply exactly. A last
assistant message (a prefill) is continued, not repeated: when the scripted reply starts with it the rest is
streamed, otherwise the whole reply after a space. A stop sequence cuts the text before it; ``maxTokens`` cuts
it after that many deltas; either way the tool call is dropped, as a model stopped early never reaches it.

Those are the stop reasons a brain's reply reaches by itself (``end_turn``, ``tool_use``, ``stop_sequence``,
``max_tokens``). Any of the nine of botocore's ``StopReason`` (:data:`~.faults.STOP_REASONS`) can be forced by a
``stop`` fault (:func:`forced_stop`): ``guardrail_intervened`` (the stream carrying the guardrail's words as text),
``content_filtered``, ``malformed_model_output``, ``malformed_tool_use`` (a tool call whose input is not JSON) and
``model_context_window_exceeded`` among them.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from voicebridge_dev.local.bedrock.brain import Rule, ToolCall
from voicebridge_dev.local.bedrock.requests import ConverseRequest
from voicebridge_dev.local.eventstream_encoder import encode_event, encode_exception

_WORD: Final = re.compile(r"\s*\S+(?:\s+$)?")
# Tool input leaves in pieces of about this many characters, as a model writes JSON a few tokens at a time.
_INPUT_PIECE_CHARS: Final = 16


@dataclass(frozen=True)
class ReplyPlan:
    """What the emulated model will stream for a request."""

    deltas: tuple[str, ...]
    stop_reason: str
    tool: ToolCall | None = None
    tool_input: tuple[str, ...] = ()

    @property
    def output_tokens(self) -> int:
        return len(self.deltas) + len(self.tool_input)


@dataclass(frozen=True)
class Piece:
    """One event of the stream; ``token`` says whether it is a delta, paced and counted by faults, and ``text`` is
    the reply text it carries."""

    frame: bytes
    token: bool
    text: str = ""


def plan_reply(request: ConverseRequest, rule: Rule) -> ReplyPlan:
    """The deltas and the stop reason of ``rule``'s reply to ``request``, within the request's bounds."""
    text = _continuation(rule.reply, request.prefill)
    stop_reason = "end_turn"
    cuts = [text.find(stop) for stop in request.stop_sequences if stop in text]
    if cuts:
        text, stop_reason = text[: min(cuts)], "stop_sequence"
    deltas = tuple(_WORD.findall(text))
    tool = rule.tool if rule.tool is not None and rule.tool.name in request.tools else None
    tool_input = _pieces_of(json.dumps(tool.input)) if tool is not None and stop_reason == "end_turn" else ()
    if request.max_tokens is not None and len(deltas) + len(tool_input) > request.max_tokens:
        return ReplyPlan(deltas[: request.max_tokens], "max_tokens")
    if not tool_input:
        return ReplyPlan(deltas, stop_reason)
    return ReplyPlan(deltas, "tool_use", tool, tool_input)


def forced_stop(plan: ReplyPlan, stop_reason: str, words: int, text: str | None = None) -> ReplyPlan:
    """``plan`` as a model stopped with ``stop_reason`` streams it: the first ``words`` words of its text (of
    ``text`` instead, when given), then for ``tool_use`` the whole tool call, for ``malformed_tool_use`` the tool call
    with its input JSON cut short, and for any other reason no tool call."""
    deltas = (plan.deltas if text is None else tuple(_WORD.findall(text)))[:words]
    if plan.tool is not None and stop_reason == "tool_use":
        return ReplyPlan(deltas, stop_reason, plan.tool, plan.tool_input)
    if plan.tool is not None and stop_reason == "malformed_tool_use":
        return ReplyPlan(deltas, stop_reason, plan.tool, _pieces_of(json.dumps(plan.tool.input)[:-1]))
    return ReplyPlan(deltas, stop_reason)


def _continuation(reply: str, prefill: str) -> str:
    if not prefill:
        return reply
    if reply.startswith(prefill):
        return reply[len(prefill) :]
    return " " + reply


def _pieces_of(document: str) -> tuple[str, ...]:
    return tuple(document[start : start + _INPUT_PIECE_CHARS] for start in range(0, len(document), _INPUT_PIECE_CHARS))


def event(name: str, payload: dict[str, Any]) -> bytes:
    """One ConverseStreamOutput event, framed."""
    return encode_event(name, json.dumps(payload, separators=(",", ":")).encode(), "application/json")


def exception_event(member: str, message: str) -> bytes:
    """One of ConverseStreamOutput's exception members, framed."""
    payload: dict[str, Any] = {"message": message}
    if member == "modelStreamErrorException":
        payload.update(originalStatusCode=500, originalMessage=message)
    return encode_exception(member, json.dumps(payload).encode())


def pieces(plan: ReplyPlan) -> Iterator[Piece]:
    """The plan's content events, from the first delta to the last ``contentBlockStop``."""
    index = 0
    if plan.deltas:
        for delta in plan.deltas:
            yield Piece(event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": delta}}), True, delta)
        yield Piece(event("contentBlockStop", {"contentBlockIndex": index}), False)
        index += 1
    if plan.tool is not None:
        start = {"toolUse": {"toolUseId": f"tooluse_{secrets.token_urlsafe(16)}", "name": plan.tool.name}}
        yield Piece(event("contentBlockStart", {"contentBlockIndex": index, "start": start}), False)
        for piece in plan.tool_input:
            tool_delta = {"toolUse": {"input": piece}}
            yield Piece(event("contentBlockDelta", {"contentBlockIndex": index, "delta": tool_delta}), True)
        yield Piece(event("contentBlockStop", {"contentBlockIndex": index}), False)
