"""The DynamoDB turn table: finished turns, and the consumer's checkpoint, per contact.

Items (partition key ``ContactId``, sort key ``TurnKey``):

- ``TurnKey = "checkpoint"`` — one per contact: the stream being read and where Connect said the caller's audio
  starts, which consumer generation owns it, its state (``starting``, ``listening``, ``retrying`` or ``stopped``
  with a reason) and heartbeat, and per track the position up to which audio is settled (fragment number + bytes
  into that fragment's track audio, with the fragment before it and its producer time, so GetMedia can resume
  there under either reading of its start selector) and the next turn sequence number. A continuation resumes
  exactly there.
- ``TurnKey = "<track>#<seq:09d>"`` — one per finished turn: transcript, audio start/end offsets (ms from the
  start of the contact's stream), when it ended and when it was written.

Every write is conditional: a turn is put only if its key is new (a replay after a dropped socket or a
continuation can never store it twice), and a checkpoint is saved only by the generation that owns it (a stale
consumer that lost the hand-off cannot overwrite its successor's progress).

**Liveness.** A consumer — the flows path's Lambda consumer or a streaming session — holds its contact by a
:class:`Lease`: it refreshes ``HeartbeatAt`` every :data:`RENEW_S` while it runs, and marks the claim stopped when it
ends. A claim whose consumer has stopped, or whose heartbeat is older than the lease, is dead: :meth:`TurnStore.claim`
takes it over under the next generation (so a zombie consumer can no longer write, and learns at its next renewal that
it must stop), keeping the turn numbering past the last turn stored, and AwaitTurn answers ``NotListening``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.errors import ConfigurationError, StorageError, Superseded, VoiceBridgeError
from voicebridge.language import TurnEndBy
from voicebridge.telemetry import logger

if TYPE_CHECKING:
    from types_boto3_dynamodb.client import DynamoDBClient

P = ParamSpec("P")
R = TypeVar("R")

CHECKPOINT = "checkpoint"
CUSTOMER = "customer"
AGENT = "agent"

STARTING, LISTENING, RETRYING, STOPPED = "starting", "listening", "retrying", "stopped"
"""A consumer's states: claimed but not yet running; reading; unable to read for now and trying again; done."""
MAX_SEQ = 999_999_999
"""The largest turn sequence number a turn key holds (nine digits): a flow's ``AfterTurn`` or ``TurnIndex`` above it
names no turn."""
READ_TURNS_LOOKBACK = 4
"""How many turns before the one a flow has read are looked at again for text still to redact."""
LEASE_MS = 20_000
"""A claim whose consumer has not beaten its heart for this long is dead."""
RENEW_S = 5.0
"""How often a running consumer renews its claim: four renewals fit in a lease, so a write or two lost to a slow
table never lets a live claim lapse."""


class Claim(StrEnum):
    """What :meth:`TurnStore.claim` did."""

    CLAIMED = "claimed"
    """No one listened to this contact: a new consumer must be started."""
    TAKEN_OVER = "taken-over"
    """The previous consumer stopped or died: a new consumer must be started (under the next generation)."""
    ALIVE = "alive"
    """A live consumer already listens to this contact: nothing to do."""


@dataclass
class TrackProgress:
    """Where one track's audio is settled: everything before ``fragment``+``offset`` belongs to finished turns or
    to silence, so a new session starts sending exactly there."""

    fragment: str | None = None
    offset: int = 0
    stream_bytes: int = 0
    next_seq: int = 0
    previous: str | None = None
    """The fragment before ``fragment`` in the stream, when known: GetMedia resumes after it."""
    fragment_ms: int | None = None
    """``fragment``'s producer timestamp (epoch ms), when known: GetMedia resumes with the chunk containing it."""

    def to_item(self) -> dict[str, Any]:
        item: dict[str, Any] = {
            "Fragment": self.fragment or "",
            "Offset": self.offset,
            "StreamBytes": self.stream_bytes,
            "NextSeq": self.next_seq,
            "Previous": self.previous or "",
        }
        if self.fragment_ms is not None:
            item["FragmentMs"] = self.fragment_ms
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> TrackProgress:
        return cls(
            fragment=str(item.get("Fragment") or "") or None,
            offset=int(item.get("Offset", 0)),
            stream_bytes=int(item.get("StreamBytes", 0)),
            next_seq=int(item.get("NextSeq", 0)),
            previous=str(item.get("Previous") or "") or None,
            fragment_ms=int(item["FragmentMs"]) if "FragmentMs" in item else None,
        )


@dataclass
class Checkpoint:
    """The consumer's state for one contact."""

    contact_id: str
    stream_arn: str
    start_fragment: str
    start_timestamp_ms: int | None = None
    """Connect's ``StartTimestamp``: when the caller's audio began (epoch ms)."""
    tracks: dict[str, TrackProgress] = field(default_factory=dict)
    generation: int = 0
    state: str = STARTING
    stop_reason: str = ""
    invocations: int = 0
    heartbeat_at_ms: int = 0
    converse: bool = False
    """The flow converses with the agent: each caller turn is answered by the responder."""
    attributes: dict[str, str] = field(default_factory=dict)
    """The contact's attributes when listening started, for the responder."""
    keyterms: tuple[str, ...] | None = None
    """The flow's Ink keyterms (StartListening's ``Keyterms``), for every session of the call; None: the
    deployment's ``INK_KEYTERMS``."""
    language: str | None = None
    """The contact's language (StartListening's ``Language``); None: the deployment's ``INK_LANGUAGE``."""
    speaking_since_ms: int = 0
    """When the caller's turn in progress began (epoch ms; Ink's ``turn.start``), 0 when no turn is open: a long poll
    that runs out meanwhile answers ``Listening``, not ``Timeout``."""

    def earliest_needed(self) -> TrackProgress | None:
        """The progress of the track that needs the earliest fragment; None when no track has settled any audio."""
        pending = [p for p in self.tracks.values() if p.fragment]
        return min(pending, key=lambda p: int(p.fragment or 0)) if pending else None

    def alive(self, now_ms: int, lease_ms: int = LEASE_MS) -> bool:
        """A consumer runs for this contact (or is being started) and has shown it recently."""
        return self.state != STOPPED and now_ms - self.heartbeat_at_ms < lease_ms

    @property
    def why_not_listening(self) -> str:
        """What a flow is told when nobody listens: the stop reason, or that the consumer stopped answering."""
        if self.state == STOPPED:
            return f"listening stopped: {self.stop_reason or 'no reason recorded'}"
        return "the transcriber stopped answering; call StartListening again"


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
    ended_by: TurnEndBy = "ink"
    """Who ended the turn: Ink's turns endpoint, or the product's own turn ending on the manual endpoint."""
    backchannel: bool = False
    """Said over the agent, who went on (an "uh-huh" shorter than the backchannel limit): kept, not answered."""

    @property
    def key(self) -> str:
        return turn_key(self.track, self.seq)


def turn_key(track: str, seq: int) -> str:
    return f"{track}#{seq:09d}"


class TurnStore:
    """Turns and checkpoints of every live contact, in one table."""

    def __init__(self, table: str, dynamodb: DynamoDBClient, *, ttl_days: int = 7) -> None:
        if not table:
            raise ConfigurationError("TURN_TABLE is not set")
        self.table = table
        self._ttl_s = ttl_days * 86400
        self._db = dynamodb

    # -- checkpoint

    def claim(
        self,
        contact_id: str,
        stream_arn: str,
        start_fragment: str,
        tracks: list[str],
        *,
        start_timestamp_ms: int | None = None,
        lease_ms: int = LEASE_MS,
        converse: bool = False,
        attributes: dict[str, str] | None = None,
        keyterms: tuple[str, ...] | None = None,
        language: str | None = None,
    ) -> tuple[Claim, int]:
        """Record that a consumer must listen to this contact; what was done, and the generation to start.

        A live claim is left alone. A stopped or dead one is taken over under the next generation, keeping each
        track's turn numbering so new turns never collide with stored ones."""
        now_ms = _now_ms()
        fresh = Checkpoint(
            contact_id,
            stream_arn,
            start_fragment,
            start_timestamp_ms,
            {t: TrackProgress() for t in tracks},
            heartbeat_at_ms=now_ms,
            converse=converse,
            attributes=dict(attributes or {}),
            keyterms=keyterms,
            language=language,
        )
        try:
            self._call(
                self._db.put_item,
                TableName=self.table,
                Item=self._checkpoint_item(fresh),
                ConditionExpression="attribute_not_exists(TurnKey)",
            )
            return Claim.CLAIMED, 0
        except ConditionFailed:
            pass
        previous = self.load(contact_id)
        if previous is None:
            raise StorageError(f"contact {contact_id}'s checkpoint vanished while being claimed")
        if previous.alive(now_ms, lease_ms):
            return Claim.ALIVE, previous.generation
        fresh.generation = previous.generation + 1
        for track, progress in fresh.tracks.items():
            old = previous.tracks.get(track)
            # A consumer that died saved its numbering when it last saved its place: a turn it stored since counts too.
            last = self.last_turn(contact_id, track)
            progress.next_seq = max(old.next_seq if old else 0, last.seq + 1 if last else 0)
        try:
            self._call(
                self._db.put_item,
                TableName=self.table,
                Item=self._checkpoint_item(fresh),
                ConditionExpression="Generation = :g AND (#s = :stopped OR HeartbeatAt < :stale)",
                ExpressionAttributeNames={"#s": "State"},
                ExpressionAttributeValues={
                    ":g": {"N": str(previous.generation)},
                    ":stopped": {"S": STOPPED},
                    ":stale": {"N": str(now_ms - lease_ms)},
                },
            )
        except ConditionFailed:
            # Someone else took it over (or the consumer came back) first: theirs is the live claim.
            return Claim.ALIVE, previous.generation + 1
        return Claim.TAKEN_OVER, fresh.generation

    def call(self, operation: str, **kwargs: Any) -> Any:
        """One operation on the table, its failures as the product's errors (ConditionFailed for a failed
        condition): the other stores of this table (replies) use it."""
        return self._call(getattr(self._db, operation), **kwargs)

    def put(self, item: dict[str, Any], **condition: Any) -> None:
        """Write one item (plain values), expiring as every item of the table does; ``condition`` is put_item's
        ``ConditionExpression`` with its names and values (:class:`ConditionFailed` when it does not hold)."""
        self.call(
            "put_item", TableName=self.table, Item=typed_item({**item, "ExpiresAt": self.expires_at()}), **condition
        )

    def expires_at(self) -> int:
        """The TTL attribute's value for an item written now (epoch seconds)."""
        return int(time.time()) + self._ttl_s

    def now_ms(self) -> int:
        """The wall clock every process compares heartbeats with (epoch ms)."""
        return _now_ms()

    def release(self, contact_id: str, generation: int, reason: str) -> None:
        """Mark a claim stopped (its consumer could not be started), so the flow's next StartListening starts one."""
        with contextlib.suppress(ConditionFailed):
            self._call(
                self._db.update_item,
                TableName=self.table,
                Key=_checkpoint_key(contact_id),
                UpdateExpression="SET #s = :stopped, StopReason = :r, UpdatedAt = :now",
                ConditionExpression="Generation = :g",
                ExpressionAttributeNames={"#s": "State"},
                ExpressionAttributeValues={
                    ":stopped": {"S": STOPPED},
                    ":r": {"S": reason},
                    ":now": {"N": str(_now_ms())},
                    ":g": {"N": str(generation)},
                },
            )

    def heartbeat(
        self,
        checkpoint: Checkpoint,
        state: str,
        reason: str = "",
        *,
        tracks: Mapping[str, TrackProgress] | None = None,
    ) -> None:
        """Show the consumer is alive, and in which state (with ``tracks``, where its audio is settled, for a successor
        to go on from); Superseded when another generation owns the contact."""
        now_ms = _now_ms()
        update = "SET HeartbeatAt = :now, #s = :state, StopReason = :r, UpdatedAt = :now"
        values: dict[str, Any] = {
            ":now": {"N": str(now_ms)},
            ":state": {"S": state},
            ":r": {"S": reason},
            ":g": {"N": str(checkpoint.generation)},
        }
        if tracks is not None:
            update += ", Tracks = :tracks"
            values[":tracks"] = _attr({name: p.to_item() for name, p in tracks.items()})
        try:
            self._call(
                self._db.update_item,
                TableName=self.table,
                Key=_checkpoint_key(checkpoint.contact_id),
                UpdateExpression=update,
                ConditionExpression="Generation = :g",
                ExpressionAttributeNames={"#s": "State"},
                ExpressionAttributeValues=values,
            )
        except ConditionFailed:
            raise Superseded(f"contact {checkpoint.contact_id} is owned by a newer consumer") from None
        checkpoint.state, checkpoint.stop_reason, checkpoint.heartbeat_at_ms = state, reason, now_ms
        if tracks is not None:
            checkpoint.tracks.update(tracks)

    def load(self, contact_id: str) -> Checkpoint | None:
        answer = self._call(
            self._db.get_item, TableName=self.table, Key=_checkpoint_key(contact_id), ConsistentRead=True
        )
        item = answer.get("Item")
        if item is None:
            return None
        plain = plain_item(item)
        return Checkpoint(
            contact_id=contact_id,
            stream_arn=plain["StreamArn"],
            start_fragment=plain["StartFragment"],
            start_timestamp_ms=int(plain["StartTimestampMs"]) if "StartTimestampMs" in plain else None,
            tracks={name: TrackProgress.from_item(p) for name, p in plain.get("Tracks", {}).items()},
            generation=int(plain.get("Generation", 0)),
            state=plain.get("State", LISTENING),
            stop_reason=plain.get("StopReason", ""),
            invocations=int(plain.get("Invocations", 0)),
            heartbeat_at_ms=int(plain.get("HeartbeatAt", 0)),
            converse=bool(plain.get("Converse", False)),
            attributes={str(k): str(v) for k, v in plain.get("Attributes", {}).items()},
            keyterms=tuple(str(term) for term in plain["Keyterms"]) if "Keyterms" in plain else None,
            language=str(plain["Language"]) if "Language" in plain else None,
            speaking_since_ms=int(plain.get("SpeakingSince", 0)),
        )

    def mark_speaking(self, contact_id: str, generation: int, since_ms: int) -> None:
        """Record that the caller's turn in progress began at ``since_ms`` (0: no turn open); Superseded when another
        generation owns the contact."""
        try:
            self._call(
                self._db.update_item,
                TableName=self.table,
                Key=_checkpoint_key(contact_id),
                UpdateExpression="SET SpeakingSince = :since",
                ConditionExpression="Generation = :g",
                ExpressionAttributeValues={":since": {"N": str(since_ms)}, ":g": {"N": str(generation)}},
            )
        except ConditionFailed:
            raise Superseded(f"contact {contact_id} is owned by a newer consumer") from None

    def save(self, checkpoint: Checkpoint, *, new_generation: int | None = None) -> None:
        """Write ``checkpoint`` if its generation still owns the contact; with ``new_generation``, hand it over."""
        owner = checkpoint.generation
        if new_generation is not None:
            checkpoint.generation = new_generation
        try:
            self._call(
                self._db.put_item,
                TableName=self.table,
                Item=self._checkpoint_item(checkpoint),
                ConditionExpression="Generation = :g",
                ExpressionAttributeValues={":g": {"N": str(owner)}},
            )
        except ConditionFailed:
            checkpoint.generation = owner
            raise Superseded(f"contact {checkpoint.contact_id} is owned by a newer consumer") from None

    def _checkpoint_item(self, c: Checkpoint) -> dict[str, Any]:
        item: dict[str, Any] = {
            "ContactId": c.contact_id,
            "TurnKey": CHECKPOINT,
            "StreamArn": c.stream_arn,
            "StartFragment": c.start_fragment,
            "Tracks": {name: p.to_item() for name, p in c.tracks.items()},
            "Generation": c.generation,
            "State": c.state,
            "StopReason": c.stop_reason,
            "Invocations": c.invocations,
            "HeartbeatAt": c.heartbeat_at_ms,
            "Converse": c.converse,
            "Attributes": dict(c.attributes),
            "SpeakingSince": c.speaking_since_ms,
            "UpdatedAt": _now_ms(),
            "ExpiresAt": int(time.time()) + self._ttl_s,
        }
        if c.start_timestamp_ms is not None:
            item["StartTimestampMs"] = c.start_timestamp_ms
        if c.keyterms is not None:
            item["Keyterms"] = list(c.keyterms)
        if c.language is not None:
            item["Language"] = c.language
        return typed_item(item)

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
            "EndedBy": turn.ended_by,
            "WrittenAt": int(time.time() * 1000),
        }
        if turn.latency_ms is not None:
            item["LatencyMs"] = turn.latency_ms
        if turn.backchannel:
            item["Backchannel"] = True
        try:
            self.put(item, ConditionExpression="attribute_not_exists(TurnKey)")
        except ConditionFailed:
            return False
        return True

    def turns_after(self, contact_id: str, *, after: int, track: str = CUSTOMER, limit: int = 10) -> list[Turn]:
        """Finished turns of ``track`` with a sequence number above ``after``, oldest first."""
        if after >= MAX_SEQ:
            # No turn lies above the last key; a ten-digit lower bound would sort among the nine-digit keys.
            return []
        return self._turns(contact_id, track, max(after + 1, 0), limit=limit)

    def last_turn(self, contact_id: str, track: str = CUSTOMER) -> Turn | None:
        """The finished turn of ``track`` with the highest sequence number; None before the first."""
        last = self._turns(contact_id, track, 0, limit=1, newest_first=True)
        return last[0] if last else None

    def _turns(self, contact_id: str, track: str, first: int, *, limit: int, newest_first: bool = False) -> list[Turn]:
        """Up to ``limit`` finished turns of ``track`` numbered ``first`` or above, oldest (or newest) first."""
        answer = self._call(
            self._db.query,
            TableName=self.table,
            KeyConditionExpression="ContactId = :c AND TurnKey BETWEEN :lo AND :hi",
            ExpressionAttributeValues={
                ":c": {"S": contact_id},
                ":lo": {"S": turn_key(track, first)},
                ":hi": {"S": turn_key(track, MAX_SEQ)},
            },
            ScanIndexForward=not newest_first,
            ConsistentRead=True,
            Limit=limit,
        )
        return [_turn(contact_id, plain_item(raw)) for raw in answer.get("Items", [])]

    def redact_read_turns(
        self, contact_id: str, through: int, redact: Callable[[str], str], *, track: str = CUSTOMER
    ) -> int:
        """Redact the stored text of the turns a flow has read (``through`` and the few before it, which an earlier
        poll may have had no time for); how many were. A turn redacted already, or changed meanwhile, is left."""
        if through < 0:
            return 0
        answer: Any = self.call(
            "query",
            TableName=self.table,
            KeyConditionExpression="ContactId = :c AND TurnKey BETWEEN :lo AND :hi",
            FilterExpression="attribute_not_exists(Redacted)",
            ExpressionAttributeValues={
                ":c": {"S": contact_id},
                ":lo": {"S": turn_key(track, max(through - READ_TURNS_LOOKBACK, 0))},
                ":hi": {"S": turn_key(track, min(through, MAX_SEQ))},
            },
            ConsistentRead=True,
        )
        done = 0
        for raw in answer.get("Items", []):
            heard = raw.get("Transcript", {}).get("S", "")
            with contextlib.suppress(ConditionFailed):
                self.call(
                    "update_item",
                    TableName=self.table,
                    Key={"ContactId": raw["ContactId"], "TurnKey": raw["TurnKey"]},
                    UpdateExpression="SET Transcript = :r, Redacted = :t",
                    ConditionExpression="Transcript = :heard AND attribute_not_exists(Redacted)",
                    ExpressionAttributeValues={
                        ":r": {"S": redact(heard)},
                        ":t": {"BOOL": True},
                        ":heard": {"S": heard},
                    },
                )
                done += 1
        return done

    def contact_items(self, contact_id: str) -> list[dict[str, Any]]:
        """Every item of the contact (checkpoint, turns, replies, history…), as plain values, in key order."""
        items: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            page: Any = self.call(
                "query",
                TableName=self.table,
                KeyConditionExpression="ContactId = :c",
                ExpressionAttributeValues={":c": {"S": contact_id}},
                ConsistentRead=True,
                **({"ExclusiveStartKey": start} if start else {}),
            )
            items.extend(plain_item(raw) for raw in page.get("Items", []))
            start = page.get("LastEvaluatedKey")
            if not start:
                return items

    def put_items(self, items: list[dict[str, Any]]) -> None:
        """Write whole items (plain values) in batches, retrying what DynamoDB leaves unprocessed."""
        for first in range(0, len(items), 25):
            pending: list[Any] = [{"PutRequest": {"Item": typed_item(item)}} for item in items[first : first + 25]]
            for attempt in range(6):
                answer: Any = self.call("batch_write_item", RequestItems={self.table: pending})
                pending = list(answer.get("UnprocessedItems", {}).get(self.table, []))
                if not pending:
                    break
                time.sleep(0.05 * 2**attempt)
            if pending:
                raise StorageError(f"turn table kept {len(pending)} items unwritten")

    def _call(self, operation: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        """One call of ``operation``, a method of the client (passed as itself, so the type checker knows its
        parameters), its failures as the product's errors."""
        try:
            return operation(*args, **kwargs)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed from None
            if code == "ResourceNotFoundException":
                raise ConfigurationError(f"turn table {self.table} does not exist") from None
            raise StorageError(f"turn table {operation.__name__} failed ({code})") from None
        except BotoCoreError as exc:
            raise StorageError(f"turn table unreachable ({type(exc).__name__})") from None


class Lease:
    """A running consumer's hold on its contact, whichever transport it serves.

    :meth:`renew` beats the checkpoint's heart (and saves where the audio stands, when given); once another generation
    owns the contact, ``lost`` is set and the holder must stop without writing. :meth:`check` only looks whether the
    contact is still the holder's. :meth:`end` stops renewing for good before the holder marks the claim stopped, so a
    renewal still in flight cannot make a stopped claim look alive again::

        lease = Lease(store, checkpoint)
        lease.renew(LISTENING)  # every RENEW_S while running
        lease.end()
    """

    def __init__(self, store: TurnStore, checkpoint: Checkpoint, lost: threading.Event | None = None) -> None:
        self._store = store
        self.checkpoint = checkpoint
        self.lost = lost if lost is not None else threading.Event()
        self._lock = threading.Lock()
        self._ended = False

    def renew(self, state: str, reason: str = "", *, tracks: Mapping[str, TrackProgress] | None = None) -> None:
        """Renew the claim; a renewal the table refuses for a newer generation sets ``lost``, a failed one is logged
        (the lease outlasts a few)."""
        with self._lock:
            if self._ended or self.lost.is_set():
                return
            try:
                self._store.heartbeat(self.checkpoint, state, reason, tracks=tracks)
            except Superseded:
                logger.warning("another consumer took over this contact; stopping")
                self.lost.set()
            except VoiceBridgeError as exc:
                logger.warning("heartbeat not recorded", reason=exc.safe_message)

    def check(self) -> None:
        """Look, without renewing, whether the contact is still this holder's; set ``lost`` when it is not."""
        with self._lock:
            if self._ended or self.lost.is_set():
                return
            try:
                current = self._store.load(self.checkpoint.contact_id)
            except VoiceBridgeError as exc:
                logger.warning("claim not looked at", reason=exc.safe_message)
                return
            if current is None or current.generation != self.checkpoint.generation:
                logger.warning("another consumer took over this contact; stopping")
                self.lost.set()

    def end(self) -> None:
        """Renew no more: the holder is stopping."""
        with self._lock:
            self._ended = True


class ConditionFailed(Exception):
    """A conditional write found the item not as required (already there, or owned by another generation)."""


def _turn(contact_id: str, item: dict[str, Any]) -> Turn:
    return Turn(
        contact_id=contact_id,
        track=item["Track"],
        seq=int(item["Seq"]),
        transcript=item.get("Transcript", ""),
        audio_start_ms=int(item.get("AudioStartMs", 0)),
        audio_end_ms=int(item.get("AudioEndMs", 0)),
        ended_at_ms=int(item.get("EndedAt", 0)),
        latency_ms=int(item["LatencyMs"]) if "LatencyMs" in item else None,
        ended_by="voicebridge" if item.get("EndedBy") == "voicebridge" else "ink",
        backchannel=bool(item.get("Backchannel", False)),
    )


def _checkpoint_key(contact_id: str) -> dict[str, Any]:
    return {"ContactId": {"S": contact_id}, "TurnKey": {"S": CHECKPOINT}}


def _now_ms() -> int:
    return int(time.time() * 1000)


def typed_item(value: dict[str, Any]) -> dict[str, Any]:
    return {key: _attr(v) for key, v in value.items()}


def _attr(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, float):
        return {"N": repr(round(value, 3))}
    if isinstance(value, str):
        return {"S": value}
    if isinstance(value, dict):
        return {"M": typed_item(value)}
    if isinstance(value, list):
        return {"L": [_attr(v) for v in value]}
    raise TypeError(f"cannot store {type(value).__name__}")


def plain_item(item: dict[str, Any]) -> dict[str, Any]:
    return {key: _value(v) for key, v in item.items()}


def _value(attr: dict[str, Any]) -> Any:
    ((kind, value),) = attr.items()
    if kind == "N":
        return int(value) if value.lstrip("-").isdigit() else float(value)
    if kind == "M":
        return plain_item(value)
    if kind == "L":
        return [_value(v) for v in value]
    return value
