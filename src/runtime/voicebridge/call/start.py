"""StartListeningFunction's domain: the call's consumer started for a contact's media stream.

``start_listening`` validates the contact's media stream, records a listening session (a conditional put, so a flow
that calls it twice still gets one consumer; a stopped or dead consumer's claim is taken over) and hands the stream
to TranscribeStreamFunction with an asynchronous invoke — it answers in a few tens of milliseconds. If that invoke
fails, the claim is released, so the flow's retry starts a consumer instead of finding a claim with none.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.connect.events import ContactFlowEvent
from voicebridge.errors import HandOffFailed, InvalidInput, NoMediaStream
from voicebridge.ink.keyterms import parse_keyterms
from voicebridge.language import Languages, Listening
from voicebridge.store.turns import AGENT, CUSTOMER, Claim, TurnStore


@dataclass(frozen=True)
class Started:
    stream_arn: str
    start_fragment: str
    tracks: list[str]
    already_listening: bool
    listening: Listening


def start_listening(
    event: ContactFlowEvent,
    *,
    store: TurnStore,
    lambda_client: Any,
    consumer: str,
    default_tracks: str,
    languages: Languages,
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
    keyterms = _keyterms(event.parameters.get("Keyterms"))
    listening = languages.listening(_text(event.parameters.get("Language"), "Language"))
    claim, generation = store.claim(
        event.contact_id,
        audio.stream_arn,
        audio.start_fragment_number,
        tracks,
        start_timestamp_ms=started_ms,
        converse=converse == "true",
        attributes=attributes,
        keyterms=keyterms,
        language=listening.language,
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
    return Started(
        audio.stream_arn,
        audio.start_fragment_number,
        tracks,
        already_listening=claim is Claim.ALIVE,
        listening=listening,
    )


def _text(value: Any, name: str) -> str | None:
    """A text parameter, None when the flow passes none (or an empty one: an attribute it never set)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def _keyterms(value: Any) -> tuple[str, ...] | None:
    """The flow's ``Keyterms`` (terms separated by commas), or None when it passes none."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput("Keyterms must be a string")
    try:
        return parse_keyterms(value)
    except ValueError as exc:
        raise InvalidInput(f"Keyterms {exc}") from None
