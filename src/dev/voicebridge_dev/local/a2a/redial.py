"""A voice contact whose socket drops mid-call and is dialled again, as Connect's side would do it.

What the sources say (docs/protocols.md, *Amazon Connect external AI agents*, "Retries and reconnects" and "history in
INIT_SESSION"): on voice "one persistent connection serves the whole session" [contract-full]; the chat channel opens a
new connection per message with the same ``contextId`` and the ``history`` re-sent on every ``INIT_SESSION``
[contract-full, A.1]; the traces carry the transcripts Connect uses to keep the conversation's history [obs]; a
collaboration whose connection drops before an outcome takes the collaborator's fallback path [how-it-works]. Whether
Connect redials a dropped *voice* socket is unread (*Build an external AI agent server* was not readable).

What is chosen here, where the sources are silent: the redial is a new upgrade and a new ``INIT_SESSION`` for the same
contact (``contactArn``) and the same ``contextId``, as on chat; its ``history`` is the handoff's own history followed
by the messages of every trace the first socket received, in the order they were said (a trace's input as a
``ROLE_USER`` message, its outputs as one ``ROLE_AGENT`` message); the caller's audio on the new socket goes on from
where it stood when the socket dropped (what the caller says while Connect dials again is lost in a real call; a
scenario keeps the caller silent then). Each leg is one strict :func:`~.session.run_session`: the second is checked
against the whole contract as a first one is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from voicebridge_dev.local.a2a.audio import CALL_RATE
from voicebridge_dev.local.a2a.events import TraceReceived
from voicebridge_dev.local.a2a.otlp import MESSAGE_EVENT
from voicebridge_dev.local.a2a.script import Action, HangUp
from voicebridge_dev.local.a2a.session import ConnectSettings, SessionResult, run_session

ROLES = {"input": "ROLE_USER", "output": "ROLE_AGENT"}
"""A trace message's ``aws.connect.span.message.role`` as the history message's role."""


@dataclass(frozen=True)
class RedialResult:
    """Both legs of the call, and the history the redial carried."""

    first: SessionResult
    second: SessionResult
    history: tuple[dict[str, Any], ...]


def history_from_traces(traces: Sequence[TraceReceived]) -> list[dict[str, Any]]:
    """The conversation the traces tell, as A2A history messages (oldest first); a trace Connect could not read tells
    nothing."""
    messages: list[dict[str, Any]] = []
    for trace in traces:
        for _, role, text in _said(trace):
            if messages and messages[-1]["role"] == role == "ROLE_AGENT":
                messages[-1]["parts"][0]["text"] += f" {text}"
                continue
            part = {"text": text, "mediaType": "text/plain"}
            messages.append({"messageId": f"h-{len(messages) + 1}", "role": role, "parts": [part]})
    return messages


def said_in_order(traces: Sequence[TraceReceived]) -> list[tuple[int, str, str]]:
    """What the traces Connect could read tell — (epoch ns, history role, text): each trace's input, and its outputs
    as one message from when the first was said — in the order said across the traces (a holding line's own trace
    comes in before that of the turn it was said in, whose input is older)."""
    said: list[tuple[int, str, str]] = []
    for trace in traces:
        messages = _said(trace)
        said += [message for message in messages if message[1] != "ROLE_AGENT"]
        outputs = [message for message in messages if message[1] == "ROLE_AGENT"]
        if outputs:
            said.append((outputs[0][0], "ROLE_AGENT", " ".join(text for _, _, text in outputs)))
    return sorted(said, key=lambda message: message[0])


def _said(trace: TraceReceived) -> list[tuple[int, str, str]]:
    """A trace's messages (epoch ns, history role, text), in the order said; none when Connect could not read it."""
    if trace.problems:
        return []
    said: list[tuple[int, str, str]] = []
    for span in _spans(trace.otlp):
        for event in span.get("events") or ():
            if isinstance(event, dict) and event.get("name") == MESSAGE_EVENT:
                values = _attributes(event)
                role = ROLES.get(values.get("aws.connect.span.message.role", ""))
                text = values.get("aws.connect.span.message.content", "").strip()
                if role and text:
                    said.append((int(event.get("timeUnixNano") or 0), role, text))
    return sorted(said, key=lambda item: item[0])


def _spans(otlp: Any) -> list[dict[str, Any]]:
    return [
        span
        for resource in otlp.get("resourceSpans") or ()
        for scope in resource.get("scopeSpans") or ()
        for span in scope.get("spans") or ()
        if isinstance(span, dict)
    ]


def _attributes(event: dict[str, Any]) -> dict[str, str]:
    return {
        str(a.get("key")): str((a.get("value") or {}).get("stringValue") or "")
        for a in event.get("attributes") or ()
        if isinstance(a, dict)
    }


async def run_redialled(
    url: str,
    settings: ConnectSettings,
    *,
    caller_audio: bytes,
    drop_at_s: float,
    script_after: Sequence[Action] = (),
) -> RedialResult:
    """One contact at ``url``: the socket drops ``drop_at_s`` after READY, then Connect dials again with the history
    so far. ``caller_audio`` (8 kHz PCM from the first READY on) goes on over the second socket from where it stood at
    the drop; ``script_after`` is the second leg's script (its times from its own READY)."""
    if not settings.contact_arn or not settings.context_id:
        raise ValueError("a redialled contact needs its contactArn and contextId named")
    first = await run_session(url, settings, caller_audio=caller_audio, script=[HangUp(at_s=drop_at_s)])
    history = (*settings.history, *history_from_traces(first.traces))
    rest = caller_audio[int(drop_at_s * CALL_RATE) * 2 :]
    second = await run_session(url, replace(settings, history=history), caller_audio=rest, script=list(script_after))
    return RedialResult(first, second, history)
