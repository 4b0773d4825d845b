"""The agent's replies in the turn table: each reply's segments, where the latest reply stands, and the history.

Items, next to the turns and the checkpoint (partition key ``ContactId``, sort key ``TurnKey``):

- ``TurnKey = "reply#<turn:09d>#<segment:03d>"`` — segment *k* of the reply to the caller's turn *n*, put the
  moment its audio is in S3: the prompt's URI (or only its text, when Sonic could not speak it, for Connect's own
  voice) and the sentence. Written with a conditional put: a replay can never change a segment a flow may already
  have played.
- ``TurnKey = "reply"`` — one per contact: the latest turn being answered, how many of its segments are stored,
  and whether its reply is complete (with its action and the responder's attributes), and a copy of the segment
  stored last (``Latest``: what the flow almost always asks for next) and of the one before it (``Earlier``: what it
  asks for next when Sonic has run a sentence ahead of its playing). ConverseFunction polls this one small item
  (a strongly consistent read), fast while a reply is being made and slowly while the caller speaks, and reads a
  segment item only when the one it needs is not the copy.
- ``TurnKey = "history"`` — the conversation so far (caller's words, agent's reply), bounded: what a responder
  needs, kept across the consumer's hand-overs.
- ``TurnKey = "spec#<turn:09d>#<attempt:02d>#<segment:03d>"`` — segment *k* of a *speculative* reply, made on Ink's
  ``turn.eager_end`` before the caller's turn has ended. No flow can play it: ConverseFunction reads the segments
  the status names, and the status names a speculative reply only once the turn has ended with the same words
  (:meth:`ReplyStore.commit`, one conditional write, whatever number of segments is ready). A cancelled attempt's
  segments stay unnamed and expire with the table's TTL.
- ``TurnKey = "spec#<turn:09d>"`` — what speculation did for turn *n*: attempts started, the outcome (``hit`` or
  ``miss``), and what the misses cost (model tokens, Sonic seconds).

The status's ``Keys`` says where its reply's segments live (``reply``, or ``spec#<turn>#<attempt>``), and its
``Expecting`` the turn whose reply may appear at any moment (Ink said the caller may be done): pollers then look fast.
``ExpectingKeys`` names the speculative attempt that said so; when the caller goes on, that attempt takes its mark back
(a newer attempt's mark stays), and pollers look slowly again until the next eager end. ``DueAt`` is the soonest the
first segment of the reply being made may be stored, by the call's quickest reply so far: pollers do not look for it
sooner (:attr:`ReplyStatus.due_at_ms`). ``LeadMs``, kept for the call, is how long at the least a reply's first segment
has come after the first mark of its making: while nothing is being made, pollers look that often.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from voicebridge.conversation import Action, Exchange
from voicebridge.store.turns import CUSTOMER, ConditionFailed, TurnStore, plain_item, turn_key, typed_item
from voicebridge.telemetry import in_context

STATUS = "reply"
HISTORY = "history"
REPLY_KEYS = "reply"
"""Where a reply made after the caller's turn ended keeps its segments."""


def speculative_keys(turn: int, attempt: int) -> str:
    """Where speculative attempt ``attempt`` at ``turn``'s reply keeps its segments."""
    return f"spec#{turn:09d}#{attempt:02d}"


def segment_key(turn: int, segment: int, keys: str = REPLY_KEYS) -> str:
    if keys == REPLY_KEYS:
        return f"reply#{turn:09d}#{segment:03d}"
    return f"{keys}#{segment:03d}"


def speculation_key(turn: int) -> str:
    return f"spec#{turn:09d}"


@dataclass(frozen=True, slots=True)
class Segment:
    """One sentence of a reply, ready to play."""

    contact_id: str
    turn: int
    index: int
    text: str
    prompt_uri: str | None
    """The S3 prompt; None when Sonic could not speak the sentence (the flow speaks ``text`` itself)."""
    transcript: str = ""
    """What the caller said, that this reply answers."""
    ready_at_ms: int = 0
    timings: Mapping[str, float] = field(default_factory=dict)
    """How the segment's time was spent: ``TurnEndedAt`` and ``CallerStoppedAt`` (epoch ms), ``ResponderMs`` (to
    the reply's first sentence, on its first segment) and ``SynthesisMs`` (the model's part of the prompt); on the
    first segment the reply's waterfall too, each an epoch-ms moment: ``EagerEndAt`` (speculative replies),
    ``ResponderStartedAt``, ``ResponderFirstTokenAt``, ``FirstClauseAt``, ``SonicFirstByteAt``."""
    keys: str = REPLY_KEYS
    """Where the reply keeps its segments (:func:`speculative_keys` for a speculative one)."""


@dataclass(frozen=True, slots=True)
class ReplyStatus:
    """Where the latest reply stands."""

    turn: int
    segments: int
    done: bool
    action: Action = Action.CONTINUE
    attributes: Mapping[str, str] = field(default_factory=dict)
    """The responder's attributes for the flow, once the reply is done."""
    updated_at_ms: int = 0
    keys: str = REPLY_KEYS
    """Where this reply's segments are (a committed speculative reply's are under its speculative keys)."""
    expecting: int | None = None
    """A turn whose reply may be named at any moment (Ink's eager end was heard): pollers look for it."""
    synthesizing: int | None = None
    """The newest turn whose reply's first sentence Sonic is making (a speculative reply's too): its first segment
    is stored within a synthesis, so pollers waiting for it look fast (:meth:`ReplyStore.synthesizing_soon`)."""
    latest: Segment | None = None
    """The segment stored last, copied into the status: the flow gets it with the status, in one read."""
    earlier: Segment | None = None
    """The segment stored before it, copied too: Sonic often runs a sentence ahead of what the flow has played."""
    due_at_ms: int = 0
    """The soonest the first segment of the reply being made may be stored (epoch ms, the consumer's clock), 0 when
    the consumer cannot tell yet: written with each mark of a reply's making (its eager end, its beginning, Sonic
    beginning its first sentence) from the quickest that step has been on the call so far, so a poller sleeps through
    what cannot bring the segment. Every status a segment or an end writes drops it."""
    lead_ms: int = 0
    """How long at the least the first segment of a reply comes after the first mark of its making (its eager end or
    its beginning), on this call so far (0: no reply yet): while nothing is being made, a poller looking this often
    still sees the next reply's first mark before its segment is stored. Said with each first mark and each end, kept
    by every later write."""
    speaking_since_ms: int = 0
    """When the caller's turn in progress began (epoch ms), 0 when they are not speaking: the consumer marks it here
    beside the checkpoint (:meth:`ReplyStore.mark_speaking`), so the poll that holds a sentence back over a speaking
    caller learns it in the read it makes anyway. Never written by a reply's own status writes."""
    speaking_turn: int | None = None
    """The turn the caller is speaking (its number once stored), beside :attr:`speaking_since_ms`: a reply to an
    earlier turn is not begun over them (they went on after the turn was ended), while its own turn's mark, cleared
    only once that turn is stored, holds nothing back."""
    speaking_paused_ms: int = 0
    """When the voice of the caller's turn in progress stopped (epoch ms), 0 while it goes on: marked by the consumer
    only for a voice shorter than a backchannel that began while the agent spoke ("uh-huh" over a reply), so the poll
    hands out the reply's next sentence without waiting for the turn to end (:meth:`ReplyStore.mark_speaking`);
    cleared when the caller's voice resumes or the turn is over."""
    held_back: tuple[int, int] | None = None
    """The sentence (turn, segment) a poll is holding back over the speaking caller: the flow has played the reply to
    just before it and waits for it (:meth:`ReplyStore.hold_back`); removed when it is handed out. What tells the
    consumer the reply had more to say when the caller spoke over it (:mod:`voicebridge.call.backchannel`)."""
    went_on_for: int | None = None
    """The caller's turn over whose pause the poll handed out a sentence it held back (:attr:`speaking_paused_ms`):
    what tells the consumer, judging that turn, that the reply went on over it, as a hold still standing does."""

    def synthesizing_first(self, turn: int) -> bool:
        """Sonic is making the first sentence of ``turn``'s reply (or of a later turn's)."""
        return self.synthesizing is not None and self.synthesizing >= turn

    def has(self, turn: int, segment: int) -> bool:
        """Segment ``segment`` of ``turn``'s reply is stored (or a later turn's reply has begun)."""
        return self.turn > turn or (self.turn == turn and self.segments > segment)


class ReplyStore:
    """Replies, their status and the conversation's history, in the turn table."""

    def __init__(self, turns: TurnStore) -> None:
        self._turns = turns
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    # -- the consumer's side

    def begin(
        self, contact_id: str, turn: int, keys: str = REPLY_KEYS, *, due_at_ms: int = 0, lead_ms: int = 0
    ) -> None:
        """A reply to ``turn`` is being made, its first segment not stored before ``due_at_ms`` (0: unknown), and
        ``lead_ms`` after this mark at the least on this call (0: unknown)."""
        self._put_status(contact_id, ReplyStatus(turn, 0, done=False, keys=keys, due_at_ms=due_at_ms, lead_ms=lead_ms))

    def put_segment(self, segment: Segment, *, advance: bool = True, earlier: Segment | None = None) -> bool:
        """Store a segment and (``advance``) name it in the status, beside ``earlier``, the reply's segment before it;
        False when that segment was stored before (a replay). A speculative reply not yet committed stores its segments
        without naming them."""
        item: dict[str, Any] = {
            "ContactId": segment.contact_id,
            "TurnKey": segment_key(segment.turn, segment.index, segment.keys),
            "Turn": segment.turn,
            "Segment": segment.index,
            "Text": segment.text,
            "Transcript": segment.transcript,
            "ReadyAt": segment.ready_at_ms or _now_ms(),
            "Timings": {name: float(value) for name, value in segment.timings.items()},
        }
        if segment.prompt_uri:
            item["PromptUri"] = segment.prompt_uri
        naming: Future[bool] | None = None
        if advance:
            # The status carries the segment itself, so it is written beside the segment's item, not after it: the
            # flow can play the segment one round trip sooner. A replay that loses the item's condition has named
            # its own copy of the same segment, which is as good a reply; nothing is said twice, since the flow
            # always asks for the segment after the one it played.
            status = ReplyStatus(
                segment.turn, segment.index + 1, done=False, keys=segment.keys, latest=segment, earlier=earlier
            )
            naming = self._submit(self._put_status, segment.contact_id, status)
        try:
            self._turns.put(item, ConditionExpression="attribute_not_exists(TurnKey)")
            stored = True
        except ConditionFailed:
            stored = False
        finally:
            if naming is not None:
                naming.result()
        return stored

    def _submit(self, work: Callable[..., Any], *args: Any) -> Future[Any]:
        """``work`` on the store's writers, with the log keys of the session that asked (``in_context``)."""
        return self._writers().submit(in_context(work), *args)

    def _writers(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="reply-status")
            return self._pool

    def finish(
        self,
        contact_id: str,
        turn: int,
        segments: int,
        action: Action,
        attributes: Mapping[str, str],
        keys: str = REPLY_KEYS,
        latest: Segment | None = None,
        lead_ms: int = 0,
        earlier: Segment | None = None,
    ) -> None:
        """The reply ended after ``segments`` segments (``latest`` the last of them, ``earlier`` the one before), with
        what the flow must do next and the responder's attributes; ``lead_ms`` the call's least lead as it now is
        (:meth:`begin`)."""
        status = ReplyStatus(
            turn,
            segments,
            done=True,
            action=action,
            attributes=attributes,
            keys=keys,
            latest=latest,
            earlier=earlier,
            lead_ms=lead_ms,
        )
        # The caller's turn keeps what its reply asked for, for the call record: the status keeps only the latest.
        noting = self._submit(self._note_outcome, contact_id, status)
        try:
            self._put_status(contact_id, status)
        finally:
            noting.result()

    def _note_outcome(self, contact_id: str, status: ReplyStatus) -> None:
        """Keep how the reply ended on the caller's turn item: the status holds only the latest reply's, and a flow
        that played this one to its end must still do what it asked when a newer turn has begun (:meth:`outcome`)."""
        outcome = typed_item(
            {"Action": status.action.value, "Segments": status.segments, "Attributes": dict(status.attributes)}
        )
        self._update_caller_turn(
            contact_id,
            status.turn,
            "SET ReplyAction = :a, ReplyOutcome = :o",
            {":a": {"S": status.action.value}, ":o": {"M": outcome}},
        )

    def note_heard(self, contact_id: str, turn: int, heard: str) -> None:
        """Keep on the caller's turn item what the caller heard of its reply, when a transport knows that was less
        than was made (cut short by the caller): the call record says so beside the sentences made."""
        self._update_caller_turn(contact_id, turn, "SET ReplyHeard = :h", {":h": {"S": heard}})

    def _update_caller_turn(
        self,
        contact_id: str,
        turn: int,
        update: str,
        values: Mapping[str, Any],
        condition: str = "attribute_exists(TurnKey)",
    ) -> None:
        """Update the caller's turn item ``turn`` only while ``condition`` holds (by default: it is stored; a reply
        never makes it)."""
        with contextlib.suppress(ConditionFailed):
            self._turns.call(
                "update_item",
                TableName=self._turns.table,
                Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": turn_key(CUSTOMER, turn)}},
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=dict(values),
            )

    def outcome(self, contact_id: str, turn: int) -> ReplyStatus | None:
        """How ``turn``'s reply ended (its action, segments and attributes), once it has; None before."""
        item = self._get(contact_id, turn_key(CUSTOMER, turn))
        kept = None if item is None else item.get("ReplyOutcome")
        if not isinstance(kept, Mapping):
            return None
        attributes = kept.get("Attributes", {})
        return ReplyStatus(
            turn,
            int(kept.get("Segments", 0)),
            done=True,
            action=_action(kept.get("Action")),
            attributes={str(k): str(v) for k, v in attributes.items()},
        )

    def commit(self, status: ReplyStatus, contact_id: str) -> bool:
        """Name a speculative reply as ``status.turn``'s, with the segments it has ready: one conditional write.
        False when a reply to that turn or a later one is already named (the speculation lost the race)."""
        return self._put_status(contact_id, status, same_turn=False)

    def expect(self, contact_id: str, turn: int, keys: str, *, due_at_ms: int = 0, lead_ms: int = 0) -> None:
        """Say that ``turn``'s reply may be named at any moment (pollers look fast), its first segment not stored
        before ``due_at_ms`` (0: unknown), ``lead_ms`` the call's least (:meth:`begin`); the status keeps the rest.
        ``keys`` names the speculative attempt that expects it: only that attempt's :meth:`unexpect` takes it back."""
        marks: dict[str, int | str] = {
            "Expecting": turn,
            "ExpectingKeys": keys,
            **({"LeadMs": lead_ms} if lead_ms else {}),
        }
        with contextlib.suppress(ConditionFailed):
            self._set_on_status(contact_id, marks, due_at_ms=due_at_ms, before_turn=turn)

    def expect_soon(
        self, contact_id: str, turn: int, keys: str, *, due_at_ms: int = 0, lead_ms: int = 0
    ) -> Future[None]:
        """:meth:`expect`, on a thread of the store's own: the caller goes on with its work meanwhile."""
        expect = functools.partial(self.expect, due_at_ms=due_at_ms, lead_ms=lead_ms)
        return self._submit(expect, contact_id, turn, keys)

    def synthesizing_soon(self, contact_id: str, turn: int, *, due_at_ms: int = 0) -> Future[None]:
        """Say, on a thread of the store's own, that Sonic is making the first sentence of ``turn``'s reply, stored
        not before ``due_at_ms`` (0: unknown): a poller waiting for it looks fast from then on, and at the making pace
        before (one write a reply saves tens of reads)."""
        return self._submit(
            functools.partial(self._set_on_status, due_at_ms=due_at_ms), contact_id, {"Synthesizing": turn}
        )

    def unexpect(self, contact_id: str, turn: int, keys: str) -> None:
        """Take back attempt ``keys``'s :meth:`expect` (the caller went on): pollers look slowly again until the next
        eager end. A later attempt's mark, or the reply named since, is left as it is."""
        self._take_back(contact_id, {"Expecting": turn, "ExpectingKeys": keys}, "DueAt")

    def note_speculation(
        self,
        contact_id: str,
        turn: int,
        *,
        outcome: str | None = None,
        starts: int = 0,
        keys: str | None = None,
        committed_at_ms: float | None = None,
        **counts: float,
    ) -> None:
        """Count what speculation did for ``turn``: the attempts started so far, its outcome (``hit``, with the
        ``keys`` of the attempt committed and when, epoch ms; ``miss`` once the turn is answered otherwise), and
        ``counts`` added to their totals (``Hits``, ``Misses``, ``WasteTokens``, ``WasteSonicMs``)."""
        names = {"#turn": "Turn", "#starts": "Starts"}
        values: dict[str, Any] = {
            ":t": {"N": str(turn)},
            ":s": {"N": str(starts)},
            ":e": {"N": str(self._turns.expires_at())},
        }
        sets = ["#turn = :t", "#starts = :s", "ExpiresAt = :e"]
        if outcome:
            names["#o"] = "Outcome"
            values[":o"] = {"S": outcome}
            sets.append("#o = :o")
        if keys:
            names["#k"] = "Keys"
            values[":k"] = {"S": keys}
            sets.append("#k = :k")
        if committed_at_ms is not None:
            names["#a"] = "CommittedAt"
            values[":a"] = {"N": str(round(committed_at_ms, 1))}
            sets.append("#a = :a")
        adds = []
        for i, (name, value) in enumerate(sorted(counts.items())):
            names[f"#c{i}"] = name
            values[f":c{i}"] = {"N": str(value)}
            adds.append(f"#c{i} :c{i}")
        update = "SET " + ", ".join(sets) + (" ADD " + ", ".join(adds) if adds else "")
        self._turns.call(
            "update_item",
            TableName=self._turns.table,
            Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": speculation_key(turn)}},
            UpdateExpression=update,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def record_exchange(
        self, contact_id: str, exchange: Exchange, keep: int, *, before: Sequence[Exchange] | None = None
    ) -> list[Exchange]:
        """Add an exchange to the conversation's history, keeping the last ``keep``; the history as now stored.
        ``before`` is the history as the caller knows it (the consumer is its only writer), saving a read."""
        known = self.history(contact_id) if before is None else list(before)
        history = [*known, exchange][-keep:] if keep > 0 else []
        self._turns.put(
            {
                "ContactId": contact_id,
                "TurnKey": HISTORY,
                "Exchanges": {str(i): {"Caller": e.caller, "Agent": e.agent} for i, e in enumerate(history)},
            }
        )
        return history

    def history(self, contact_id: str) -> list[Exchange]:
        """The conversation so far, oldest first."""
        item = self._get(contact_id, HISTORY)
        if item is None:
            return []
        exchanges = item.get("Exchanges", {})
        return [
            Exchange(str(exchanges[k].get("Caller", "")), str(exchanges[k].get("Agent", "")))
            for k in sorted(exchanges, key=int)
        ]

    # -- the flow's side

    def status(self, contact_id: str) -> ReplyStatus | None:
        """Where the latest reply stands; None before any, and for an item that names no turn. DynamoDB applies
        an update to an item whole, but moto (the local cloud) puts an item an UpdateItem creates in the table
        with only its keys, then sets its attributes: a read in between sees it half made. Read as no status yet,
        the next look sees it whole."""
        item = self._get(contact_id, STATUS)
        if item is None or "Turn" not in item:
            return None
        attributes = item.get("Attributes", {})
        return ReplyStatus(
            turn=int(item["Turn"]),
            segments=int(item.get("Segments", 0)),
            done=bool(item.get("Done", False)),
            action=_action(item.get("Action")),
            attributes={str(k): str(v) for k, v in attributes.items()},
            updated_at_ms=int(item.get("UpdatedAt", 0)),
            keys=str(item.get("Keys") or REPLY_KEYS),
            expecting=int(item["Expecting"]) if item.get("Expecting") is not None else None,
            synthesizing=int(item["Synthesizing"]) if item.get("Synthesizing") is not None else None,
            latest=_copied(contact_id, item, "Latest"),
            earlier=_copied(contact_id, item, "Earlier"),
            due_at_ms=int(item.get("DueAt", 0)),
            lead_ms=int(item.get("LeadMs", 0)),
            speaking_since_ms=int(item.get("SpeakingSince", 0)),
            speaking_turn=int(item["SpeakingTurn"]) if int(item.get("SpeakingTurn", -1)) >= 0 else None,
            speaking_paused_ms=int(item.get("SpeakingPaused", 0)),
            held_back=(
                (int(item["HeldBackTurn"]), int(item["HeldBackSegment"]))
                if item.get("HeldBackTurn") is not None and item.get("HeldBackSegment") is not None
                else None
            ),
            went_on_for=int(item["WentOnFor"]) if item.get("WentOnFor") is not None else None,
        )

    def segment(self, contact_id: str, turn: int, index: int, keys: str = REPLY_KEYS) -> Segment | None:
        item = self._get(contact_id, segment_key(turn, index, keys))
        if item is None:
            return None
        return Segment(
            contact_id=contact_id,
            turn=turn,
            index=index,
            text=str(item.get("Text", "")),
            prompt_uri=item.get("PromptUri"),
            transcript=str(item.get("Transcript", "")),
            ready_at_ms=int(item.get("ReadyAt", 0)),
            timings={str(k): float(v) for k, v in item.get("Timings", {}).items()},
            keys=keys,
        )

    def segments(self, contact_id: str, turn: int, keys: str = REPLY_KEYS) -> Sequence[Segment]:
        """Every stored segment of ``turn``'s reply, in order (a successor resuming an unfinished reply reads it)."""
        found = []
        for index in range(1000):
            segment = self.segment(contact_id, turn, index, keys)
            if segment is None:
                break
            found.append(segment)
        return found

    # -- items

    def _status_values(self, status: ReplyStatus) -> dict[str, Any]:
        """What a reply's status write sets: everything but the caller's speaking mark, which is not the reply's, and
        the call's ``LeadMs`` when the status does not say it."""
        return {
            "Turn": status.turn,
            "Segments": status.segments,
            "Done": status.done,
            "Action": status.action.value,
            "Attributes": dict(status.attributes),
            "Keys": status.keys,
            "UpdatedAt": _now_ms(),
            "ExpiresAt": self._turns.expires_at(),
            **({"Latest": _segment_copy(status.latest)} if status.latest is not None else {}),
            **({"Earlier": _segment_copy(status.earlier)} if status.earlier is not None else {}),
            **({"DueAt": status.due_at_ms} if status.due_at_ms else {}),
            **({"LeadMs": status.lead_ms} if status.lead_ms else {}),
        }

    def _put_status(self, contact_id: str, status: ReplyStatus, *, same_turn: bool = True) -> bool:
        """Write ``status`` over an older turn's (and, with ``same_turn``, over its own turn's); whether it was.

        An update, not a put: the caller's speaking mark on the same item stays as the consumer last wrote it. The
        rest is replaced, as a put would (``Expecting``, an older ``Latest``, ``Earlier`` and ``DueAt`` are removed)."""
        values = typed_item(self._status_values(status))
        removed = ["Expecting", "ExpectingKeys"] + [
            name for name in ("Latest", "Earlier", "DueAt") if name not in values
        ]
        # Every attribute by a name placeholder: Segments, among others, is one of DynamoDB's reserved words.
        update = "SET " + ", ".join(f"#{name} = :{name}" for name in values)
        update += " REMOVE " + ", ".join(f"#{name}" for name in removed)
        # A newer turn's status is never replaced by an older one's (a late write from a superseded reply).
        try:
            self._turns.call(
                "update_item",
                TableName=self._turns.table,
                Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": STATUS}},
                UpdateExpression=update,
                ConditionExpression=f"attribute_not_exists(TurnKey) OR #Turn {'<=' if same_turn else '<'} :Turn",
                ExpressionAttributeNames={f"#{name}": name for name in [*values, *removed]},
                ExpressionAttributeValues={f":{name}": value for name, value in values.items()},
            )
        except ConditionFailed:
            return False
        return True

    def mark_speaking(self, contact_id: str, since_ms: int, turn: int = -1, paused_ms: int = 0) -> None:
        """Record in the status that the caller's turn in progress, ``turn``, began at ``since_ms`` (0 and -1: no turn
        open), and, with ``paused_ms``, that its short voice over the agent stopped then, for the poll that reads it
        anyway."""
        self._set_on_status(
            contact_id,
            {
                "SpeakingSince": since_ms,
                "SpeakingTurn": turn if since_ms else -1,
                "SpeakingPaused": paused_ms if since_ms else 0,
            },
        )

    def hold_back(self, contact_id: str, turn: int, segment: int) -> None:
        """Record that a poll holds segment ``segment`` of ``turn``'s reply back over the speaking caller, in the
        status and on the caller's turn (``ReplyHeldAt``): a hold never released means the caller heard the sentences
        before it and nothing after, which the call record says."""
        on_turn = self._submit(self._mark_held, contact_id, turn, segment, True)
        try:
            self._set_on_status(contact_id, {"HeldBackTurn": turn, "HeldBackSegment": segment})
        finally:
            on_turn.result()

    def release_hold(self, contact_id: str, turn: int, segment: int, *, went_on_for: int | None = None) -> None:
        """The sentence held back is handed out: the marks go (unless a newer one replaced the status's); the two
        writes go out together. ``went_on_for``: the caller's turn over whose pause it goes out, which the status
        keeps (:attr:`ReplyStatus.went_on_for`), in the same write."""
        on_turn = self._submit(self._mark_held, contact_id, turn, segment, False)
        try:
            sets = {} if went_on_for is None else {"WentOnFor": went_on_for}
            self._take_back(contact_id, {"HeldBackTurn": turn, "HeldBackSegment": segment}, sets=sets)
        finally:
            on_turn.result()

    def note_left(self, contact_id: str, turn: int, segment: int) -> None:
        """Record on the caller's turn that the flow left ``turn``'s reply for a newer one before its sentence
        ``segment`` (``ReplyHeldAt``, as a hold never released): the caller heard the sentences before it only."""
        self._mark_held(contact_id, turn, segment, True)

    def held_at(self, contact_id: str, turn: int) -> int | None:
        """The first sentence of ``turn``'s reply the caller did not hear, as a hold or the flow leaving the reply
        marked it on the caller's turn (None: no mark; they heard all of it, or no turn is stored)."""
        item = self._get(contact_id, turn_key(CUSTOMER, turn))
        held = None if item is None else item.get("ReplyHeldAt")
        return None if held is None else int(held)

    def _mark_held(self, contact_id: str, turn: int, segment: int, held: bool) -> None:
        """Set (``held``) or remove the caller's turn's ``ReplyHeldAt``: the sentence of its reply held back."""
        at = {":s": {"N": str(segment)}}
        if held:
            self._update_caller_turn(contact_id, turn, "SET ReplyHeldAt = :s", at)
        else:
            self._update_caller_turn(contact_id, turn, "REMOVE ReplyHeldAt", at, condition="ReplyHeldAt = :s")

    def _take_back(
        self, contact_id: str, mark: Mapping[str, int | str], *also: str, sets: Mapping[str, int] | None = None
    ) -> None:
        """Remove ``mark`` from the status, with the attributes ``also``, and set ``sets``, only while the status
        still holds that mark (a newer one is left as it is)."""
        typed = typed_item(dict(mark))
        held = {f"#m{index}": name for index, name in enumerate(typed)}
        extra = {f"#a{index}": name for index, name in enumerate(also)}
        given = typed_item(dict(sets or {}))
        named = {f"#s{index}": name for index, name in enumerate(given)}
        update = "REMOVE " + ", ".join([*held, *extra])
        if given:
            update = "SET " + ", ".join(f"#s{index} = :s{index}" for index in range(len(given))) + " " + update
        with contextlib.suppress(ConditionFailed):
            self._turns.call(
                "update_item",
                TableName=self._turns.table,
                Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": STATUS}},
                UpdateExpression=update,
                ConditionExpression=" AND ".join(f"#m{index} = :m{index}" for index in range(len(typed))),
                ExpressionAttributeNames={**held, **extra, **named},
                ExpressionAttributeValues={
                    **{f":m{index}": value for index, value in enumerate(typed.values())},
                    **{f":s{index}": value for index, value in enumerate(given.values())},
                },
            )

    def _set_on_status(
        self,
        contact_id: str,
        values: Mapping[str, int | str],
        *,
        due_at_ms: int | None = None,
        before_turn: int | None = None,
    ) -> None:
        """Set ``values`` on the status, leaving the rest as it is, or making a status of no reply yet (turn -1, done)
        when there is none; with ``before_turn``, only while the status names an older turn (else ConditionFailed).
        A mark of a reply's making says ``due_at_ms``, replacing the last mark's (0: removing it, unknown)."""
        condition = {} if before_turn is None else {"ConditionExpression": "attribute_not_exists(#t) OR #t < :before"}
        typed = typed_item({**values, **({"DueAt": due_at_ms} if due_at_ms else {})})
        sets = ", ".join(f"#v{index} = :v{index}" for index in range(len(typed)))
        dropped = due_at_ms == 0
        self._turns.call(
            "update_item",
            TableName=self._turns.table,
            Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": STATUS}},
            UpdateExpression=(
                f"SET {sets}, #t = if_not_exists(#t, :none), #s = if_not_exists(#s, :zero), "
                "#d = if_not_exists(#d, :done), #e = :e" + (" REMOVE #due" if dropped else "")
            ),
            # Names for every attribute: Segments, among others, is one of DynamoDB's reserved words.
            ExpressionAttributeNames={
                **{f"#v{index}": name for index, name in enumerate(typed)},
                "#t": "Turn",
                "#s": "Segments",
                "#d": "Done",
                "#e": "ExpiresAt",
                **({"#due": "DueAt"} if dropped else {}),
            },
            ExpressionAttributeValues={
                **{f":v{index}": value for index, value in enumerate(typed.values())},
                ":none": {"N": "-1"},
                ":zero": {"N": "0"},
                ":done": {"BOOL": True},
                ":e": {"N": str(self._turns.expires_at())},
                **({} if before_turn is None else {":before": {"N": str(before_turn)}}),
            },
            **condition,
        )

    def _get(self, contact_id: str, key: str) -> dict[str, Any] | None:
        answer = self._turns.call(
            "get_item",
            TableName=self._turns.table,
            Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": key}},
            ConsistentRead=True,
        )
        item = answer.get("Item")
        return None if item is None else plain_item(item)


def _segment_copy(segment: Segment) -> dict[str, Any]:
    copy: dict[str, Any] = {
        "Segment": segment.index,
        "Text": segment.text,
        "Transcript": segment.transcript,
        "ReadyAt": segment.ready_at_ms,
    }
    if segment.prompt_uri:
        copy["PromptUri"] = segment.prompt_uri
    return copy


def _copied(contact_id: str, item: Mapping[str, Any], name: str) -> Segment | None:
    """The status's copy of a segment (``Latest``, ``Earlier``), as a segment of the status's turn."""
    copy = item.get(name)
    if not isinstance(copy, Mapping) or "Segment" not in copy:
        return None
    return Segment(
        contact_id=contact_id,
        turn=int(item["Turn"]),
        index=int(copy["Segment"]),
        text=str(copy.get("Text", "")),
        prompt_uri=copy.get("PromptUri"),
        transcript=str(copy.get("Transcript", "")),
        ready_at_ms=int(copy.get("ReadyAt", 0)),
        keys=str(item.get("Keys") or REPLY_KEYS),
    )


def _action(raw: Any) -> Action:
    try:
        return Action.parse(str(raw or "Continue"))
    except ValueError:
        return Action.CONTINUE


def _now_ms() -> int:
    return int(time.time() * 1000)
