"""What a responder is asked and what it answers: the one interface every responder implements.

A responder gets a :class:`TurnRequest` (the caller's turn, the conversation so far, the contact's attributes) and
returns a :class:`Reply` whose text it streams as it is produced; once the text is exhausted, the reply's
:class:`Action` and attributes are known::

    reply = responder.respond(request, deadline=time.monotonic() + 8)
    for delta in reply.text():
        splitter.feed(delta)
    if reply.action is Action.TRANSFER: ...

A responder that cannot answer raises :class:`ResponderError` (before or during the text); the consumer then speaks
the configured apology and carries on (``Action=Continue``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from voicebridge.conversation import Action, Exchange
from voicebridge.errors import ResponderUnavailable as ResponderError

__all__ = ["FixedReply", "Reply", "Responder", "ResponderError", "TurnRequest"]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a responder answers."""

    contact_id: str
    turn_index: int
    transcript: str
    history: Sequence[Exchange] = ()
    """Earlier exchanges, oldest first, bounded by the consumer."""
    attributes: Mapping[str, str] = field(default_factory=dict)
    """The contact's attributes as the flow passed them, updated by the responder's own."""
    language: str = "en"
    spoken_prefix: str = ""
    """What was already said of this reply, e.g. before a hand-over: a responder that can continue a reply (Bedrock)
    answers only the rest; the others answer whole."""


class Reply(Protocol):
    """A reply being produced."""

    def text(self) -> Iterator[str]:
        """The reply's text, in deltas as they are produced (ResponderError if the responder fails on the way)."""
        ...

    @property
    def action(self) -> Action:
        """What the flow does after the reply; final once :meth:`text` is exhausted."""
        ...

    @property
    def attributes(self) -> Mapping[str, str]:
        """Attributes the responder sets for the flow (``$.External.<key>``); final once :meth:`text` is exhausted."""
        ...


class Responder(Protocol):
    """Something that answers a caller's turn."""

    name: str
    """Names the responder in logs and metrics (``bedrock``, ``lex``, ``lambda``, ``scripted``)."""
    speculative_safe: bool
    """Whether it may be asked about words the caller has not finished saying (a speculative reply, on Ink's eager
    end): asking changes nothing outside the reply. Lex's RecognizeText moves the bot's dialog on, and a customer's
    function may act on what it is told, so neither is unless so declared."""

    def respond(self, request: TurnRequest, *, deadline: float) -> Reply:
        """Start answering ``request``; the reply must be complete by ``deadline`` (``time.monotonic()``)."""
        ...


@dataclass
class FixedReply:
    """A reply whose text is known at once: scripted answers, a Lex message, a customer function's answer."""

    spoken: str
    action_: Action = Action.CONTINUE
    attributes_: Mapping[str, str] = field(default_factory=dict)

    def text(self) -> Iterator[str]:
        if self.spoken:
            yield self.spoken

    @property
    def action(self) -> Action:
        return self.action_

    @property
    def attributes(self) -> Mapping[str, str]:
        return self.attributes_
