"""The Listen path's two Connect-facing steps: start listening to a contact, and await the caller's next turn.

``start_listening`` validates the contact's media stream, records a listening session (a conditional put, so a flow
that calls it twice still gets one consumer; a stopped or dead consumer's claim is taken over) and hands the stream
to TranscribeStreamFunction with an asynchronous invoke — it answers in a few tens of milliseconds. If that invoke
fails, the claim is released, so the flow's retry starts a consumer instead of finding a claim with none.

``await_turn`` long-polls the turn table for the caller's first finished turn after a given index, at a short
interval, for a bounded time that always fits Connect's 8 s limit for a synchronous Lambda block. When nobody is
listening (never started, stopped, or the consumer died) it says so, with the reason, instead of timing out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.connect.events import ContactFlowEvent, whole_number
from voicebridge.errors import HandOffFailed, InvalidInput, NoMediaStream, NotListening
from voicebridge.longpoll import LongPoll
from voicebridge.store.turns import AGENT, CUSTOMER, MAX_SEQ, Claim, Turn, TurnStore


@dataclass(frozen=True)
class Started:
    stream_arn: str
    start_fragment: str
    tracks: list[str]
    already_listening: bool


def start_listening(
    event: ContactFlowEvent, *, store: TurnStore, lambda_client: Any, consumer: str, default_tracks: str
) -> Started:
    streams = event.details.contact_data.media_streams
    audio = streams.customer.audio if streams and streams.customer else None
    if audio is None or not audio.stream_arn:
        raise NoMediaStream("no media stream for this contact: start media streaming before listening")
    if not audio.start_fragment_number:
        raise NoMediaStream("the media stream has no start fragment yet")
    choice = str(event.parameters.get("Tracks") or default_tracks).lower()
    if choice not in ("customer", "both"):
        raise InvalidInput("Tracks must be 'customer' or 'both'")
    tracks = [CUSTOMER, AGENT] if choice == "both" else [CUSTOMER]
    # The event's parser has checked it is epoch milliseconds in digits.
    started_ms = int(audio.start_timestamp) if audio.start_timestamp else None
    converse = str(event.parameters.get("Converse") or "false").strip().lower()
    if converse not in ("true", "false"):
        raise InvalidInput("Converse must be 'true' or 'false'")
    attributes = {k: v for k, v in event.details.contact_data.attributes.items() if v is not None}
    claim, generation = store.claim(
        event.contact_id,
        audio.stream_arn,
        audio.start_fragment_number,
        tracks,
        start_timestamp_ms=started_ms,
        converse=converse == "true",
        attributes=attributes,
    )
    if claim is not Claim.ALIVE:
        try:
            lambda_client.invoke(
                FunctionName=consumer,
                InvocationType="Event",
                Payload=json.dumps({"ContactId": event.contact_id, "Generation": generation}).encode(),
            )
        except (ClientError, BotoCoreError) as exc:
            reason = f"could not start the transcriber ({type(exc).__name__})"
            store.release(event.contact_id, generation, reason)
            raise HandOffFailed(reason) from None
    return Started(audio.stream_arn, audio.start_fragment_number, tracks, already_listening=claim is Claim.ALIVE)


def require_listening(store: TurnStore, contact_id: str) -> None:
    """NotListening, saying why, unless a consumer is alive for the contact."""
    checkpoint = store.load(contact_id)
    if checkpoint is None:
        raise NotListening("nobody is listening to this contact: call StartListening first")
    if not checkpoint.alive(store.now_ms()):
        raise NotListening(checkpoint.why_not_listening)


def await_turn(
    contact_id: str,
    parameters: dict[str, Any],
    *,
    store: TurnStore,
    max_wait_ms: int,
    poll_interval_ms: int,
    remaining_ms: int | None,
    started: float | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> tuple[Turn | None, float]:
    """The caller's first turn after ``AfterTurn`` (None on timeout), and how long it took in ms, counted from
    ``started``, when the invocation began (:class:`~voicebridge.longpoll.LongPoll`)."""
    after = whole_number(parameters, "AfterTurn", default=-1, low=-1, high=MAX_SEQ)
    wait_ms = min(whole_number(parameters, "MaxWaitMs", default=max_wait_ms, low=0), max_wait_ms)
    if remaining_ms is not None:
        wait_ms = max(0, min(wait_ms, remaining_ms - 300))
    poll = LongPoll(wait_ms, started=started, clock=clock)
    checked_session = False
    while True:
        with poll.look():
            turns = store.turns_after(contact_id, after=after, track=CUSTOMER, limit=1)
        if turns:
            return turns[0], poll.waited_ms
        if not checked_session:
            require_listening(store, contact_id)
            checked_session = True
        if not poll.pause(poll_interval_ms / 1000):
            return None, poll.waited_ms
