"""The Listen path's two Connect-facing steps: start listening to a contact, and await the caller's next turn.

``start_listening`` validates the contact's media stream, records a listening session (a conditional put, so a flow
that calls it twice still gets one consumer) and hands the stream to TranscribeStreamFunction with an asynchronous
invoke — it answers in a few tens of milliseconds.

``await_turn`` long-polls the turn table for the caller's first finished turn after a given index, at a short
interval, for a bounded time that always fits Connect's 8 s limit for a synchronous Lambda block.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.connect.events import ContactFlowEvent
from voicebridge.errors import HandOffFailed, InvalidInput, NoMediaStream, NotListening
from voicebridge.store.turns import AGENT, CUSTOMER, Turn, TurnStore


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
    claimed = store.claim(event.contact_id, audio.stream_arn, audio.start_fragment_number, tracks)
    if claimed:
        try:
            lambda_client.invoke(
                FunctionName=consumer,
                InvocationType="Event",
                Payload=json.dumps({"ContactId": event.contact_id, "Generation": 0}).encode(),
            )
        except (ClientError, BotoCoreError) as exc:
            raise HandOffFailed(f"could not start the transcriber ({type(exc).__name__})") from None
    return Started(audio.stream_arn, audio.start_fragment_number, tracks, already_listening=not claimed)


def await_turn(
    contact_id: str,
    parameters: dict[str, Any],
    *,
    store: TurnStore,
    max_wait_ms: int,
    poll_interval_ms: int,
    remaining_ms: int | None,
) -> tuple[Turn | None, float]:
    """The caller's first turn after ``AfterTurn`` (None on timeout), and how long it took in ms."""
    after = _int(parameters.get("AfterTurn"), "AfterTurn", default=-1, low=-1)
    wait_ms = _int(parameters.get("MaxWaitMs"), "MaxWaitMs", default=max_wait_ms, low=0)
    wait_ms = min(wait_ms, max_wait_ms)
    if remaining_ms is not None:
        wait_ms = max(0, min(wait_ms, remaining_ms - 300))
    started = time.monotonic()
    deadline = started + wait_ms / 1000
    checked_session = False
    while True:
        turns = store.turns_after(contact_id, after=after, track=CUSTOMER, limit=1)
        if turns:
            return turns[0], (time.monotonic() - started) * 1000
        if not checked_session:
            if store.load(contact_id) is None:
                raise NotListening("nobody is listening to this contact: call StartListening first")
            checked_session = True
        now = time.monotonic()
        if now >= deadline:
            return None, (now - started) * 1000
        time.sleep(min(poll_interval_ms / 1000, deadline - now))


def _int(raw: Any, name: str, *, default: int, low: int) -> int:
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number") from None
    if value < low:
        raise InvalidInput(f"{name} must be at least {low}")
    return value
