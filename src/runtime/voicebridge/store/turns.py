"""The DynamoDB turn table: finished turns, and the consumer's checkpoint, per contact.

Items (partition key ``ContactId``, sort key ``TurnKey``):

- ``TurnKey = "checkpoint"`` — one per contact: the stream being read, which consumer generation owns it, and per
  track the position up to which audio is settled (fragment number + bytes into that fragment's track audio) and
  the next turn sequence number. A continuation resumes exactly there.
- ``TurnKey = "<track>#<seq:09d>"`` — one per finished turn: transcript, audio start/end offsets (ms from the
  start of the contact's stream), when it ended and when it was written.

Every write is conditional: a turn is put only if its key is new (a replay after a dropped socket or a
continuation can never store it twice), and a checkpoint is saved only by the generation that owns it (a stale
consumer that lost the hand-off cannot overwrite its successor's progress).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.errors import ConfigurationError, StorageError, Superseded

CHECKPOINT = "checkpoint"
CUSTOMER = "customer"
AGENT = "agent"


@dataclass
class TrackProgress:
    """Where one track's audio is settled: everything before ``fragment``+``offset`` belongs to finished turns or
    to silence, so a new session starts sending exactly there."""

    fragment: str | None = None
    offset: int = 0
    stream_bytes: int = 0
    next_seq: int = 0

    def to_item(self) -> dict[str, Any]:
        return {
            "Fragment": self.fragment or "",
            "Offset": self.offset,
            "StreamBytes": self.stream_bytes,
            "NextSeq": self.next_seq,
        }

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> TrackProgress:
        return cls(
            fragment=str(item.get("Fragment") or "") or None,
            offset=int(item.get("Offset", 0)),
            stream_bytes=int(item.get("StreamBytes", 0)),
            next_seq=int(item.get("NextSeq", 0)),
        )


@dataclass
class Checkpoint:
    """The consumer's state for one contact."""

    contact_id: str
    stream_arn: str
    start_fragment: str
    tracks: dict[str, TrackProgress] = field(default_factory=dict)
    generation: int = 0
    state: str = "listening"
    stop_reason: str = ""
    invocations: int = 0

    def resume_fragment(self) -> str:
        """The earliest fragment any track still needs."""
        pending = [int(p.fragment) for p in self.tracks.values() if p.fragment]
        return str(min(pending)) if pending else self.start_fragment


@dataclass(frozen=True)
class Turn:
    """A finished turn."""

    contact_id: str
    track: str
    seq: int
    transcript: str
    audio_start_ms: int
    audio_end_ms: int
    ended_at_ms: int
    latency_ms: int | None = None

    @property
    def key(self) -> str:
        return turn_key(self.track, self.seq)


def turn_key(track: str, seq: int) -> str:
    return f"{track}#{seq:09d}"


class TurnStore:
    """Turns and checkpoints of every live contact, in one table."""

    def __init__(self, table: str, dynamodb: Any, *, ttl_days: int = 7) -> None:
        if not table:
            raise ConfigurationError("TURN_TABLE is not set")
        self.table = table
        self._ttl_s = ttl_days * 86400
        self._db = dynamodb

    # -- checkpoint

    def claim(self, contact_id: str, stream_arn: str, start_fragment: str, tracks: list[str]) -> bool:
        """Create the contact's checkpoint; False when a consumer is already listening to this contact."""
        checkpoint = Checkpoint(contact_id, stream_arn, start_fragment, {t: TrackProgress() for t in tracks})
        try:
            self._call(
                "put_item",
                TableName=self.table,
                Item=self._checkpoint_item(checkpoint),
                ConditionExpression="attribute_not_exists(TurnKey) OR #s = :stopped",
                ExpressionAttributeNames={"#s": "State"},
                ExpressionAttributeValues={":stopped": {"S": "stopped"}},
            )
        except _ConditionFailed:
            return False
        return True

    def load(self, contact_id: str) -> Checkpoint | None:
        answer = self._call(
            "get_item",
            TableName=self.table,
            Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": CHECKPOINT}},
            ConsistentRead=True,
        )
        item = answer.get("Item")
        if item is None:
            return None
        plain = _plain(item)
        return Checkpoint(
            contact_id=contact_id,
            stream_arn=plain["StreamArn"],
            start_fragment=plain["StartFragment"],
            tracks={name: TrackProgress.from_item(p) for name, p in plain.get("Tracks", {}).items()},
            generation=int(plain.get("Generation", 0)),
            state=plain.get("State", "listening"),
            stop_reason=plain.get("StopReason", ""),
            invocations=int(plain.get("Invocations", 0)),
        )

    def save(self, checkpoint: Checkpoint, *, new_generation: int | None = None) -> None:
        """Write ``checkpoint`` if its generation still owns the contact; with ``new_generation``, hand it over."""
        owner = checkpoint.generation
        if new_generation is not None:
            checkpoint.generation = new_generation
        try:
            self._call(
                "put_item",
                TableName=self.table,
                Item=self._checkpoint_item(checkpoint),
                ConditionExpression="Generation = :g",
                ExpressionAttributeValues={":g": {"N": str(owner)}},
            )
        except _ConditionFailed:
            checkpoint.generation = owner
            raise Superseded(f"contact {checkpoint.contact_id} is owned by a newer consumer") from None

    def _checkpoint_item(self, c: Checkpoint) -> dict[str, Any]:
        return _typed(
            {
                "ContactId": c.contact_id,
                "TurnKey": CHECKPOINT,
                "StreamArn": c.stream_arn,
                "StartFragment": c.start_fragment,
                "Tracks": {name: p.to_item() for name, p in c.tracks.items()},
                "Generation": c.generation,
                "State": c.state,
                "StopReason": c.stop_reason,
                "Invocations": c.invocations,
                "UpdatedAt": int(time.time() * 1000),
                "ExpiresAt": int(time.time()) + self._ttl_s,
            }
        )

    # -- turns

    def put_turn(self, turn: Turn) -> bool:
        """Store a finished turn; False if that turn was already stored (a replay), never a duplicate."""
        item = {
            "ContactId": turn.contact_id,
            "TurnKey": turn.key,
            "Track": turn.track,
            "Seq": turn.seq,
            "Transcript": turn.transcript,
            "AudioStartMs": turn.audio_start_ms,
            "AudioEndMs": turn.audio_end_ms,
            "EndedAt": turn.ended_at_ms,
            "WrittenAt": int(time.time() * 1000),
            "ExpiresAt": int(time.time()) + self._ttl_s,
        }
        if turn.latency_ms is not None:
            item["LatencyMs"] = turn.latency_ms
        try:
            self._call(
                "put_item",
                TableName=self.table,
                Item=_typed(item),
                ConditionExpression="attribute_not_exists(TurnKey)",
            )
        except _ConditionFailed:
            return False
        return True

    def turns_after(self, contact_id: str, *, after: int, track: str = CUSTOMER, limit: int = 10) -> list[Turn]:
        """Finished turns of ``track`` with a sequence number above ``after``, oldest first."""
        answer = self._call(
            "query",
            TableName=self.table,
            KeyConditionExpression="ContactId = :c AND TurnKey BETWEEN :lo AND :hi",
            ExpressionAttributeValues={
                ":c": {"S": contact_id},
                ":lo": {"S": turn_key(track, max(after + 1, 0))},
                ":hi": {"S": turn_key(track, 999_999_999)},
            },
            ConsistentRead=True,
            Limit=limit,
        )
        turns = []
        for raw in answer.get("Items", []):
            item = _plain(raw)
            turns.append(
                Turn(
                    contact_id=contact_id,
                    track=item["Track"],
                    seq=int(item["Seq"]),
                    transcript=item.get("Transcript", ""),
                    audio_start_ms=int(item.get("AudioStartMs", 0)),
                    audio_end_ms=int(item.get("AudioEndMs", 0)),
                    ended_at_ms=int(item.get("EndedAt", 0)),
                    latency_ms=int(item["LatencyMs"]) if "LatencyMs" in item else None,
                )
            )
        return turns

    def _call(self, operation: str, **kwargs: Any) -> Any:
        try:
            return getattr(self._db, operation)(**kwargs)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise _ConditionFailed from None
            if code == "ResourceNotFoundException":
                raise ConfigurationError(f"turn table {self.table} does not exist") from None
            raise StorageError(f"turn table {operation} failed ({code})") from None
        except BotoCoreError as exc:
            raise StorageError(f"turn table unreachable ({type(exc).__name__})") from None


class _ConditionFailed(Exception):
    pass


def _typed(value: dict[str, Any]) -> dict[str, Any]:
    return {key: _attr(v) for key, v in value.items()}


def _attr(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, dict):
        return {"M": _typed(value)}
    raise TypeError(f"cannot store {type(value).__name__}")


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    return {key: _value(v) for key, v in item.items()}


def _value(attr: dict[str, Any]) -> Any:
    ((kind, value),) = attr.items()
    if kind == "N":
        return int(value) if value.lstrip("-").isdigit() else float(value)
    if kind == "M":
        return _plain(value)
    return value
