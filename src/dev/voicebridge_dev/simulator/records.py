"""What the product recorded of a simulated call, read back from the turn table and placed on the call's time.

Connect never reads the turn table; the simulator does once a call is over, so the report can say what happened on
the product's side between the moments the simulator saw itself (the caller's voice ending, a function answering, a
prompt starting). Two kinds of item are read (``docs/functions.md``, *The turn table* and *The turn table's
replies*), every epoch-millisecond moment converted to the call's time with :meth:`Clock.call_time`:

- a caller's turn, ``TurnKey = customer#<n:09d>``: its transcript and ``EndedAt``, when Ink's turn ended;
- a reply segment, ``TurnKey = reply#<n:09d>#<k:03d>`` (or ``spec#<n:09d>#<a:02d>#<k:03d>`` for a speculative
  reply): its text, prompt, ``ReadyAt`` (stored, its audio in S3) and ``Timings`` — ``ResponderMs`` on a reply's
  first segment (the responder's time to its first sentence), ``SynthesisMs`` when Sonic made the prompt (none for a
  cached prompt, or a sentence left to Connect's voice), and on the first segment the reply's waterfall moments
  (``EagerEndAt``, ``ResponderStartedAt``, ``ResponderFirstTokenAt``, ``FirstClauseAt``, ``SonicFirstByteAt``);
- what speculation did for turn *n*, ``TurnKey = spec#<n:09d>``: its ``Outcome`` (``hit`` or ``miss``), the keys
  of the attempt committed and when (``Keys``, ``CommittedAt``), attempts and what the misses discarded;
- the reply status, ``TurnKey = reply``, kept as stored (epoch milliseconds unconverted): only a failure's message
  shows it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import BotoCoreError, ClientError

from voicebridge_dev.simulator.clock import Clock
from voicebridge_dev.simulator.contact import Contact

__all__ = ["CallRecords", "StoredSegment", "StoredSpeculation", "StoredTurn", "read_records"]

logger = logging.getLogger(__name__)

_DESERIALIZER = TypeDeserializer()
_WATERFALL = ("EagerEndAt", "ResponderStartedAt", "ResponderFirstTokenAt", "FirstClauseAt", "SonicFirstByteAt")


@dataclass(frozen=True)
class StoredTurn:
    """A turn the consumer stored: who spoke (``customer`` or ``agent``), what Ink heard, when its turn ended."""

    track: str
    index: int
    transcript: str
    ended_at: float | None
    backchannel: bool = False
    """Said over the agent, who went on: kept, not answered."""


@dataclass(frozen=True)
class StoredSegment:
    """Segment ``index`` of the reply to the caller's turn ``turn``, as the consumer stored it."""

    turn: int
    index: int
    text: str
    prompt_uri: str | None
    ready_at: float | None
    responder_ms: float | None = None
    synthesis_ms: float | None = None
    keys: str = "reply"
    """Where the reply keeps its segments: ``reply``, or a speculative attempt's ``spec#<n>#<a>``."""
    moments: Mapping[str, float] = field(default_factory=dict)
    """The reply's waterfall on its first segment, each a moment of the call: ``EagerEndAt``,
    ``ResponderStartedAt``, ``ResponderFirstTokenAt``, ``FirstClauseAt``, ``SonicFirstByteAt``."""


@dataclass(frozen=True)
class StoredSpeculation:
    """What speculation did for one caller turn."""

    turn: int
    outcome: str | None
    """``hit`` (a speculative reply was committed), ``miss``, or None while undecided."""
    keys: str | None
    committed_at: float | None
    starts: int = 0
    misses: int = 0
    waste_tokens: int = 0
    waste_sonic_ms: float = 0.0


@dataclass(frozen=True)
class CallRecords:
    """The turns and reply segments of one contact, in key order."""

    turns: tuple[StoredTurn, ...] = ()
    segments: tuple[StoredSegment, ...] = ()
    speculations: tuple[StoredSpeculation, ...] = ()
    status: Mapping[str, Any] | None = None
    """The reply status (``TurnKey = reply``) as the call left it: the turn whose reply was named last, its segments,
    whether it was done, and the marks a poller reads (a test failure's message shows it)."""

    def turn(self, index: int, track: str = "customer") -> StoredTurn | None:
        return next((t for t in self.turns if t.track == track and t.index == index), None)

    def speculation(self, turn: int) -> StoredSpeculation | None:
        return next((s for s in self.speculations if s.turn == turn), None)

    def keys(self, turn: int) -> str:
        """Where the reply named as ``turn``'s keeps its segments: a committed speculation's keys, else ``reply``."""
        speculation = self.speculation(turn)
        if speculation is not None and speculation.outcome == "hit" and speculation.keys:
            return speculation.keys
        return "reply"

    def segment(self, turn: int, index: int) -> StoredSegment | None:
        keys = self.keys(turn)
        return next((s for s in self.segments if s.turn == turn and s.index == index and s.keys == keys), None)

    def unsettled(self) -> list[int]:
        """Turns answered only by speculative attempts, one of which is noted neither as the turn's (an outcome) nor
        as cancelled (each cancelled attempt adds one to ``misses``): the product is still writing."""
        attempts: dict[int, set[str]] = {}
        for segment in self.segments:
            attempts.setdefault(segment.turn, set()).add(segment.keys)
        unsettled = []
        for turn, keys in sorted(attempts.items()):
            speculation = self.speculation(turn)
            if "reply" in keys or (speculation is not None and speculation.outcome is not None):
                continue
            if speculation is None or speculation.misses < len(keys):
                unsettled.append(turn)
        return unsettled

    def reply(self, turn: int) -> list[StoredSegment]:
        """The segments of the reply named as ``turn``'s, in order."""
        keys = self.keys(turn)
        return sorted((s for s in self.segments if s.turn == turn and s.keys == keys), key=lambda s: s.index)


SETTLE_S = 10.0
"""How long the read waits for the product to note a speculative reply it committed (see :func:`read_records`)."""
_SETTLE_LOOK_S = 0.2


def read_records(client: Any, table: str, contact_id: str, clock: Clock, *, settle_s: float = SETTLE_S) -> CallRecords:
    """The contact's turns and reply segments in ``table`` (empty, with a warning, when they cannot be read).

    The call may end before the product has finished writing: a speculative reply is noted as the turn's (``spec#n``,
    its ``Outcome`` and ``Keys``) once its making is over, on its own thread, which can be after Connect has played
    it and the caller has gone. Read then, the turn would seem to have no reply; so while a reply stored under
    speculative keys is the only one its turn has and its outcome is not noted, the table is read again, for at most
    ``settle_s`` (the consumer waits at most as long for a reply in progress before it stops)."""
    deadline = time.monotonic() + settle_s
    while True:
        records = _read(client, table, contact_id, clock)
        unsettled = records.unsettled()
        if not unsettled or time.monotonic() >= deadline:
            if unsettled:
                logger.warning("flow simulator: speculative replies to turns %s not noted in time", unsettled)
            return records
        time.sleep(_SETTLE_LOOK_S)


def _read(client: Any, table: str, contact_id: str, clock: Clock) -> CallRecords:
    items: list[dict[str, Any]] = []
    query: dict[str, Any] = {
        "TableName": table,
        "KeyConditionExpression": "ContactId = :c",
        "ExpressionAttributeValues": {":c": {"S": contact_id}},
        "ConsistentRead": True,
    }
    try:
        while True:
            answer = client.query(**query)
            items.extend({k: _DESERIALIZER.deserialize(v) for k, v in raw.items()} for raw in answer.get("Items", []))
            if "LastEvaluatedKey" not in answer:
                break
            query["ExclusiveStartKey"] = answer["LastEvaluatedKey"]
    except (BotoCoreError, ClientError) as exc:
        logger.warning("flow simulator: the turn table %s could not be read: %s", table, exc)
        return CallRecords()

    def moment(raw: Any) -> float | None:
        return None if raw is None else clock.call_time(float(raw) / 1000)

    turns: list[StoredTurn] = []
    segments: list[StoredSegment] = []
    speculations: list[StoredSpeculation] = []
    status: dict[str, Any] | None = None
    for item in items:
        key = str(item.get("TurnKey", ""))
        if key == "reply":
            status = {name: value for name, value in item.items() if name not in ("ContactId", "TurnKey")}
        elif key.startswith(("reply#", "spec#")) and "Segment" in item:
            timings: Mapping[str, Any] = item.get("Timings") or {}
            moments = {name: moment(timings[name]) for name in _WATERFALL if _number(timings.get(name)) is not None}
            segments.append(
                StoredSegment(
                    turn=int(item["Turn"]),
                    index=int(item["Segment"]),
                    text=str(item.get("Text", "")),
                    prompt_uri=str(item["PromptUri"]) if item.get("PromptUri") else None,
                    ready_at=moment(item.get("ReadyAt")),
                    responder_ms=_number(timings.get("ResponderMs")),
                    synthesis_ms=_number(timings.get("SynthesisMs")),
                    keys="reply" if key.startswith("reply#") else key.rsplit("#", 1)[0],
                    moments={name: value for name, value in moments.items() if value is not None},
                )
            )
        elif key.startswith("spec#") and key.count("#") == 1:
            speculations.append(
                StoredSpeculation(
                    turn=int(item.get("Turn", key.split("#")[1])),
                    outcome=str(item["Outcome"]) if item.get("Outcome") else None,
                    keys=str(item["Keys"]) if item.get("Keys") else None,
                    committed_at=moment(item.get("CommittedAt")),
                    starts=int(item.get("Starts", 0)),
                    misses=int(item.get("Misses", 0)),
                    waste_tokens=int(item.get("WasteTokens", 0)),
                    waste_sonic_ms=float(item.get("WasteSonicMs", 0)),
                )
            )
        elif "Track" in item and "Seq" in item:
            turns.append(
                StoredTurn(
                    track=str(item["Track"]),
                    index=int(item["Seq"]),
                    transcript=str(item.get("Transcript", "")),
                    ended_at=moment(item.get("EndedAt")),
                    backchannel=bool(item.get("Backchannel", False)),
                )
            )
    return CallRecords(tuple(turns), tuple(segments), tuple(speculations), status)


def next_sentence_stored(client: Any, table: str) -> Callable[[Contact], bool]:
    """What a prompt on the virtual clock waits for (:attr:`~voicebridge_dev.simulator.call.Call.made_ahead`): whether
    the reply the flow is playing has its next sentence stored, has ended, or has given way to a newer turn's — all
    that ConverseFunction's next answer needs, by the reply status (``TurnKey = reply``: the ``Turn`` named, the
    ``Segments`` stored for it, ``Done``). Only after an answer that said ``More=true``; after any other, and when
    the status cannot be read, nothing is waited for."""

    def stored(contact: Contact) -> bool:
        answer = contact.external
        if str(answer.get("More", "")).lower() != "true":
            return True
        try:
            turn, played = int(answer["TurnIndex"]), int(answer["Segment"])
        except (KeyError, TypeError, ValueError):
            return True
        key = {"ContactId": {"S": contact.contact_id}, "TurnKey": {"S": "reply"}}
        try:
            item = client.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")
        except (BotoCoreError, ClientError) as exc:
            logger.warning("flow simulator: the reply status could not be read: %s", exc)
            return True
        if not item:
            return True
        status = {name: _DESERIALIZER.deserialize(value) for name, value in item.items()}
        return (
            int(status.get("Turn", turn)) != turn
            or int(status.get("Segments", 0)) > played + 1
            or bool(status.get("Done", False))
        )

    return stored


def _number(raw: Any) -> float | None:
    return float(raw) if isinstance(raw, int | float | Decimal) else None
