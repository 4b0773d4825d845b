"""The call record: one redacted JSON object per contact in S3 when listening ends, and an EventBridge event.

What ends listening writes it — the consumer when the stream ends, the call ends or it gives up, and, for a consumer
that died, its successor or :mod:`voicebridge.handlers.call_record` once the lease has run out — so a call is
recorded whichever way it ends. One writer at a time, and once per contact:

1. a conditional write of the contact's ``record`` item (``State = writing``, with a lease) claims the record; a
   writer that finds it ``announced`` for this listening session, or held by a live writer, does nothing;
2. the object is put with ``If-None-Match: *`` (S3 refuses to replace an object that exists), so a writer that died
   after the object and before its mark leaves the first object as it was (``records/YYYY/MM/DD/<contact-id>.json``,
   SSE-KMS, the customer's key when one is set);
3. the event goes to the bus (``source`` ``voicebridge``, ``detail-type`` ``Call Record Ready``, ``detail`` with
   the object's ``s3://`` URI), and the item says ``announced``. Only a writer that dies between PutEvents' answer
   and that mark sends a second event, with the same ``recordId``; subscribers may use it to ignore a repeat;
4. every item of the contact in the turn table is rewritten redacted: what stays until the table's TTL holds no more
   than the record does.

A contact another agent handed over with its conversation so far (Connect's ``history`` on the streaming path) keeps
that conversation in its ``handoff`` item (:func:`record_handoff`); the record lists it, redacted as the turns are.

Listening started again on a contact whose record was written (a flow that stops and restarts streaming) gets a
record of its own when it ends, ``<contact-id>-<generation>.json``, holding the whole contact so far.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from voicebridge.clock import SYSTEM_CLOCK, Clock
from voicebridge.errors import StorageError
from voicebridge.redaction import Redaction, Redactor
from voicebridge.redaction.builtin import JOIN
from voicebridge.store.turns import (
    AGENT,
    CHECKPOINT,
    CUSTOMER,
    LEASE_MS,
    STOPPED,
    ConditionFailed,
    TurnStore,
)

if TYPE_CHECKING:
    from types_boto3_events.client import EventBridgeClient
    from types_boto3_s3.client import S3Client

RECORD = "record"
"""The turn-table item that says where the contact's record stands."""
HANDOFF = "handoff"
"""The turn-table item that keeps the conversation handed over with the contact, for its record."""
WRITING, WRITTEN, ANNOUNCED = "writing", "written", "announced"
WRITER_LEASE_MS = 60_000
"""A writer that has held the record this long without finishing is taken to have died."""
SOURCE = "voicebridge"
DETAIL_TYPE = "Call Record Ready"
VERSION = 1
LEASE_SLACK_MS = 500
"""Waited past a dead consumer's lease before its claim is taken as over."""
RECORD_TIME_MS = 10_000
"""What writing a record is left of the invocation's time."""
CALLER_WENT_ON_MS = 1000
"""A caller whose voice comes back within this of their turn's end went on: they were not done (a pause mid-sentence
cut off, or words added at once). An answer to the agent cannot come this soon: its reply's first audio reaches the
caller a few hundred milliseconds after the turn's end at the soonest (docs/benchmarks.md, "Transports"), and the
caller then hears some of it before answering."""


@dataclass(frozen=True, slots=True)
class RecordSettings:
    """Where records go: the bucket (empty: none are written), key prefix, KMS key and event bus."""

    bucket: str
    prefix: str = "records/"
    kms_key_id: str = ""
    event_bus: str = "default"


@dataclass(frozen=True, slots=True)
class Written:
    """What :meth:`CallRecorder.write` did: ``written`` (and announced), ``already`` (another writer's), ``off``."""

    outcome: str
    uri: str = ""
    record: Mapping[str, Any] | None = None


class CallRecorder:
    """Writes a contact's record once listening has ended, and redacts what the turn table keeps of it."""

    def __init__(
        self,
        settings: RecordSettings,
        store: TurnStore,
        s3: S3Client,
        events: EventBridgeClient,
        redactor: Redactor,
        *,
        redactor_for: Callable[[str], Redactor] | None = None,
    ) -> None:
        self._settings = settings
        self._store = store
        self._s3 = s3
        self._events = events
        self._redactor = redactor
        self._redactor_for = redactor_for
        """The redactor for a contact's own language (StartListening's ``Language``), when it has one."""

    def write(self, contact_id: str, *, generation: int) -> Written:
        """Record the contact as listening ended under ``generation``; StorageError when S3 or EventBridge fail
        (the record item is left for the next writer once its lease runs out)."""
        items = self._store.contact_items(contact_id)
        language = next((item.get("Language") for item in items if item.get("TurnKey") == CHECKPOINT), None)
        chosen = self._redactor_for(str(language)) if language and self._redactor_for else self._redactor
        redactor = Remembering(chosen)
        if not self._settings.bucket:
            record = build_record(contact_id, items, redactor, generation=generation)
            self.redact_items(items, redactor)
            return Written("off", record=record)
        marker = next((item for item in items if item.get("TurnKey") == RECORD), None)
        key = self._key(contact_id, items, marker, generation)
        if key is None or not self._claim(contact_id, marker, generation, key):
            return Written("already")
        record = build_record(contact_id, items, redactor, generation=generation)
        uri = f"s3://{self._settings.bucket}/{key}"
        record["recordId"] = f"{contact_id}/{generation}"
        self._put_object(key, record)
        self._mark(contact_id, WRITTEN, generation)
        self._announce(contact_id, record, uri)
        self._mark(contact_id, ANNOUNCED, generation, uri=uri)
        self.redact_items(items, redactor)
        return Written("written", uri, record)

    # -- the steps

    def _key(
        self, contact_id: str, items: Sequence[Mapping[str, Any]], marker: Mapping[str, Any] | None, generation: int
    ) -> str | None:
        """The object's key for this end of listening; None when it is recorded already."""
        checkpoint = next((item for item in items if item.get("TurnKey") == CHECKPOINT), {})
        started_ms = int(checkpoint.get("StartTimestampMs") or time.time() * 1000)
        day = dt.datetime.fromtimestamp(started_ms / 1000, dt.UTC).strftime("%Y/%m/%d")
        base = f"{self._settings.prefix}{day}/{contact_id}"
        if marker is None:
            return f"{base}.json"
        if int(marker.get("Generation", -1)) >= generation and marker.get("State") == ANNOUNCED:
            return None
        if marker.get("State") == ANNOUNCED:
            return f"{base}-{generation}.json"
        return str(marker.get("Key") or f"{base}.json")

    def _claim(self, contact_id: str, marker: Mapping[str, Any] | None, generation: int, key: str) -> bool:
        now = self._store.now_ms()
        try:
            self._store.put(
                {
                    "ContactId": contact_id,
                    "TurnKey": RECORD,
                    "State": WRITING,
                    "Generation": generation,
                    "Key": key,
                    "Until": now + WRITER_LEASE_MS,
                },
                ConditionExpression=(
                    "attribute_not_exists(TurnKey) OR (#s <> :announced AND #u < :now) "
                    "OR (#s = :announced AND Generation < :g)"
                ),
                ExpressionAttributeNames={"#s": "State", "#u": "Until"},
                ExpressionAttributeValues={
                    ":announced": {"S": ANNOUNCED},
                    ":now": {"N": str(now)},
                    ":g": {"N": str(generation)},
                },
            )
        except ConditionFailed:
            return False
        return True

    def _put_object(self, key: str, record: Mapping[str, Any]) -> None:
        options: dict[str, Any] = {"ServerSideEncryption": "aws:kms"}
        if self._settings.kms_key_id:
            options["SSEKMSKeyId"] = self._settings.kms_key_id
        try:
            self._s3.put_object(
                Bucket=self._settings.bucket,
                Key=key,
                Body=json.dumps(record, indent=1, ensure_ascii=False).encode("utf-8"),
                ContentType="application/json",
                IfNoneMatch="*",
                **options,
            )
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            if code == "PreconditionFailed":
                # A writer before this one stored it and died before saying so: the first object stands.
                return
            raise StorageError(f"call record not stored ({code or 'ClientError'})") from None
        except BotoCoreError as exc:
            raise StorageError(f"call record not stored ({type(exc).__name__})") from None

    def _announce(self, contact_id: str, record: Mapping[str, Any], uri: str) -> None:
        detail = {
            "contactId": contact_id,
            "recordId": record["recordId"],
            "uri": uri,
            "bucket": self._settings.bucket,
            "key": uri.split("/", 3)[3],
            "endedAt": record["endedAt"],
            "turns": len(record["turns"]),
            "listeningEnded": record["listening"]["ended"],
        }
        entry: Any = {
            "Source": SOURCE,
            "DetailType": DETAIL_TYPE,
            "Detail": json.dumps(detail),
            "EventBusName": self._settings.event_bus,
        }
        try:
            answer = self._events.put_events(Entries=[entry])
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", ""))
            raise StorageError(f"call record event not sent ({code or 'ClientError'})") from None
        except BotoCoreError as exc:
            raise StorageError(f"call record event not sent ({type(exc).__name__})") from None
        if answer.get("FailedEntryCount"):
            failed = answer.get("Entries", [{}])[0]
            raise StorageError(f"call record event not sent ({failed.get('ErrorCode', 'failed')})")

    def _mark(self, contact_id: str, state: str, generation: int, *, uri: str = "") -> None:
        values = {":s": {"S": state}, ":g": {"N": str(generation)}, ":uri": {"S": uri}}
        self._store.call(
            "update_item",
            TableName=self._store.table,
            Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": RECORD}},
            UpdateExpression="SET #s = :s, Uri = :uri",
            ConditionExpression="Generation = :g",
            ExpressionAttributeNames={"#s": "State"},
            ExpressionAttributeValues=values,
        )

    # -- what the table keeps

    def redact_items(self, items: Sequence[Mapping[str, Any]], redactor: Redactor | None = None) -> int:
        """Rewrite every item of the contact that holds words, redacted; how many were rewritten. ``redactor`` is
        best the one the record was built with (:class:`Remembering`): a turn's words are then redacted as the
        record has them, read with the turns around them, and no text is sent to Comprehend twice."""
        redactor = redactor or Remembering(self._redactor)
        changed = [item for item in (redacted_item(item, redactor) for item in items) if item is not None]
        if changed:
            self._store.put_items(changed)
        return len(changed)


class Remembering:
    """A redactor that answers a text it has redacted before as it did the first time, context or not.

    The record redacts each turn with the turns around it; the table's items hold the same words again and again (a
    turn, the segments answering it, the history): each is answered from here, the way the record has it."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self.name = redactor.name
        self._seen: dict[str, Redaction] = {}

    def redact(self, text: str, *, before: str = "", after: str = "") -> Redaction:
        known = self._seen.get(text)
        if known is not None:
            return known
        redaction = self._redactor.redact(text, before=before, after=after)
        self._seen[text] = redaction
        return redaction


def redacted_item(item: Mapping[str, Any], redactor: Redactor) -> dict[str, Any] | None:
    """A copy of a turn-table item with its words redacted, marked ``Redacted``; None when it holds no words, or
    nothing in it changes and it is marked already. An item a long poll redacted alone is redacted again here: a
    number said across two turns is whole only when read with its neighbours."""
    copy = dict(item)
    touched = False
    for name in ("Transcript", "Text", "ReplyHeard"):
        if isinstance(copy.get(name), str) and copy[name]:
            copy[name] = redactor.redact(copy[name]).text
            touched = True
    latest = copy.get("Latest")
    if isinstance(latest, Mapping):
        copy["Latest"] = {
            k: redactor.redact(v).text if k in ("Transcript", "Text") and isinstance(v, str) else v
            for k, v in latest.items()
        }
        touched = True
    messages = copy.get("Messages")
    if isinstance(messages, list):
        copy["Messages"] = [
            {**m, "Text": redactor.redact(str(m.get("Text", ""))).text} if isinstance(m, Mapping) else m
            for m in messages
        ]
        touched = True
    exchanges = copy.get("Exchanges")
    if isinstance(exchanges, Mapping):
        copy["Exchanges"] = {
            k: {
                "Caller": redactor.redact(str(e.get("Caller", ""))).text,
                "Agent": redactor.redact(str(e.get("Agent", ""))).text,
            }
            for k, e in exchanges.items()
        }
        touched = True
    if not touched or (copy == item and item.get("Redacted")):
        return None
    copy["Redacted"] = True
    return copy


def build_record(
    contact_id: str, items: Sequence[Mapping[str, Any]], redactor: Redactor, *, generation: int
) -> dict[str, Any]:
    """The contact's record from its turn-table items, every word redacted."""
    by_key = {str(item["TurnKey"]): item for item in items}
    checkpoint = by_key.get(CHECKPOINT, {})
    turns = sorted(
        (item for key, item in by_key.items() if key.startswith((f"{CUSTOMER}#", f"{AGENT}#"))),
        key=lambda item: (int(item.get("AudioStartMs", 0)), str(item["TurnKey"])),
    )
    heard = _redact_in_sequence(turns, redactor, by_key)
    voice_after = _next_voice_after(turns)
    out_turns = []
    for item, redaction in zip(turns, heard, strict=True):
        entry: dict[str, Any] = {
            "track": item.get("Track"),
            "turn": int(item.get("Seq", 0)),
            "heard": redaction.text,
            "audioStartMs": int(item.get("AudioStartMs", 0)),
            "audioEndMs": int(item.get("AudioEndMs", 0)),
            "endedAt": _iso(item.get("EndedAt")),
            "endedBy": str(item.get("EndedBy") or "ink"),
        }
        if item.get("Backchannel"):
            entry["backchannel"] = True
        if str(item["TurnKey"]) in voice_after:
            entry["nextVoiceAfterMs"] = voice_after[str(item["TurnKey"])]
        latency: dict[str, int] = {}
        if item.get("LatencyMs") is not None:
            latency["turnEnd"] = int(item["LatencyMs"])
        if item.get("Track") == CUSTOMER:
            reply = _reply(by_key, int(item.get("Seq", 0)), redactor)
            if reply is not None:
                latency.update(reply.pop("latencyMs"))
                entry["reply"] = reply
        entry["latencyMs"] = latency
        out_turns.append(entry)
    status = by_key.get("reply", {})
    handed_over = _handed_over(by_key.get(HANDOFF, {}), redactor)
    return {
        "version": VERSION,
        "contactId": contact_id,
        "startedAt": _iso(checkpoint.get("StartTimestampMs")),
        "endedAt": _iso(time.time() * 1000),
        "listening": {
            "ended": str(checkpoint.get("StopReason") or checkpoint.get("State") or "unknown"),
            "generation": generation,
            "invocations": int(checkpoint.get("Invocations", 0)),
            "tracks": sorted(checkpoint.get("Tracks", {})),
            "converse": bool(checkpoint.get("Converse", False)),
            "language": str(checkpoint["Language"]) if checkpoint.get("Language") else None,
        },
        "lastAction": str(status.get("Action") or "") or None,
        "redaction": {"mode": redactor.name, "found": _labels(out_turns, handed_over)},
        "handedOver": handed_over,
        "turns": out_turns,
    }


def _voice_began_ms(item: Mapping[str, Any]) -> float | None:
    """When a spoken turn's voice began, on Connect's clock (epoch ms): where it ended (when the turn ended, less the
    latency measured from its last voiced frame) less its length. None for a turn with no such latency (typed)."""
    ended, latency = item.get("EndedAt"), item.get("LatencyMs")
    if not ended or latency is None:
        return None
    return float(ended) - float(latency) - (int(item.get("AudioEndMs", 0)) - int(item.get("AudioStartMs", 0)))


def _next_voice_after(turns: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """For each spoken caller's turn followed by another, how long after it ended the caller's voice began again
    (by ``TurnKey``; negative: before the turn was ended). A backchannel ends nothing and is not judged; a typed turn
    has no voice to time."""
    caller = sorted((t for t in turns if t.get("Track") == CUSTOMER), key=lambda t: int(t.get("Seq", 0)))
    after: dict[str, int] = {}
    for this, following in itertools.pairwise(caller):
        began = _voice_began_ms(following)
        if began is None or this.get("Backchannel") or _voice_began_ms(this) is None:
            continue
        after[str(this["TurnKey"])] = round(began - float(this["EndedAt"]))
    return after


def went_on(turn: Mapping[str, Any], within_ms: float = CALLER_WENT_ON_MS) -> bool | None:
    """Whether the caller went on after a turn of a record: their voice came back within ``within_ms`` of its end
    (``nextVoiceAfterMs``); None for a turn not followed by another spoken one."""
    after = turn.get("nextVoiceAfterMs")
    return None if after is None else float(after) < within_ms


def caller_went_on(record: Mapping[str, Any], within_ms: float = CALLER_WENT_ON_MS) -> list[bool]:
    """For each caller's turn of ``record`` followed by another spoken one, whether the caller went on
    (:func:`went_on`)."""
    judged = (went_on(turn, within_ms) for turn in record.get("turns", []) if isinstance(turn, Mapping))
    return [verdict for verdict in judged if verdict is not None]


def record_handoff(store: TurnStore, contact_id: str, messages: Sequence[tuple[str, str]]) -> None:
    """Keep the conversation handed over with the contact (who spoke — ``customer``, ``agent`` or the role another
    agent gave — and the words, oldest first) for its record; redacted at rest with the contact's other items."""
    kept = [{"Role": role, "Text": text} for role, text in messages if text.strip()]
    if kept:
        store.put_items(
            [{"ContactId": contact_id, "TurnKey": HANDOFF, "Messages": kept, "ExpiresAt": store.expires_at()}]
        )


def _handed_over(item: Mapping[str, Any], redactor: Redactor) -> list[dict[str, str]]:
    """The conversation handed over with the contact, each message redacted with its neighbours (a number the
    caller gave across two messages is whole only read together)."""
    messages = [m for m in item.get("Messages", []) if isinstance(m, Mapping)]
    said = [str(m.get("Text", "")) for m in messages]
    return [
        {
            "role": str(m.get("Role", "")),
            "said": redactor.redact(
                said[i], before=said[i - 1] if i else "", after=said[i + 1] if i + 1 < len(said) else ""
            ).text,
        }
        for i, m in enumerate(messages)
    ]


_LABEL = re.compile(r"\[([A-Z][A-Z_]*)\]")


def _labels(turns: Sequence[Mapping[str, Any]], handed_over: Sequence[Mapping[str, str]]) -> dict[str, int]:
    """How many of each type were redacted in the record's words (some were redacted before, once read)."""
    counts: dict[str, int] = {}
    texts = [m["said"] for m in handed_over]
    for turn in turns:
        texts += [str(turn.get("heard", "")), *turn.get("reply", {}).get("said", [])]
    for text in texts:
        for kind in _LABEL.findall(text):
            counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def _redact_in_sequence(
    turns: Sequence[Mapping[str, Any]], redactor: Redactor, by_key: Mapping[str, Mapping[str, Any]]
) -> list[Redaction]:
    """Each turn redacted with what was said around it: before it, the same track's previous turn and what the other
    side said since (the agent's "and the three digit code?" says what the caller's "one two three" is); after it,
    the same track's next turn. A number said across a pause is one."""
    out = []
    for i, item in enumerate(turns):
        track = item.get("Track")
        previous = next((j for j in range(i - 1, -1, -1) if turns[j].get("Track") == track), -1)
        said = [str(turns[previous].get("Transcript", ""))] if previous >= 0 else []
        if track == CUSTOMER and previous >= 0:
            said += [str(s.get("Text", "")) for s in _segments(by_key, int(turns[previous].get("Seq", 0)))]
        said += [str(t.get("Transcript", "")) for t in turns[previous + 1 : i] if t.get("Track") != track]
        after = next((str(t.get("Transcript", "")) for t in turns[i + 1 :] if t.get("Track") == track), "")
        out.append(redactor.redact(str(item.get("Transcript", "")), before=JOIN.join(said), after=after))
    return out


def _committed_keys(by_key: Mapping[str, Mapping[str, Any]], turn: int) -> str:
    """Where the speculative reply committed as turn ``turn``'s keeps its segments ('' when none was).

    The speculation's own item says so once that reply's thread has noted it, after the reply is made; a caller who
    hangs up while it is still being made can end the session first, so the reply status, which named those keys the
    moment the reply was committed, answers for the latest reply."""
    speculation = by_key.get(f"spec#{turn:09d}", {})
    if speculation.get("Outcome") == "hit" and speculation.get("Keys"):
        return str(speculation["Keys"])
    status = by_key.get("reply", {})
    keys = str(status.get("Keys") or "")
    return keys if int(status.get("Turn", -1)) == turn and keys.startswith("spec#") else ""


def _segments(by_key: Mapping[str, Mapping[str, Any]], turn: int) -> list[Mapping[str, Any]]:
    """The reply's segments that answered the caller's turn ``turn`` (the speculative reply's, when it was used)."""
    keys = _committed_keys(by_key, turn)
    prefix = f"{keys}#" if keys else f"reply#{turn:09d}#"
    return sorted(
        (item for key, item in by_key.items() if key.startswith(prefix) and key[len(prefix) :].isdigit()),
        key=lambda item: int(item.get("Segment", 0)),
    )


def _reply(by_key: Mapping[str, Mapping[str, Any]], turn: int, redactor: Redactor) -> dict[str, Any] | None:
    """What the agent answered the caller's turn ``turn``: its sentences, action, speculation and latency."""
    speculation = by_key.get(f"spec#{turn:09d}", {})
    segments = _segments(by_key, turn)
    if not segments:
        return None
    said = [str(segment.get("Text", "")) for segment in segments]
    # A number the agent reads back may run across two sentences: each is redacted with its neighbours.
    sentences = [
        redactor.redact(text, before=said[i - 1] if i else "", after=said[i + 1] if i + 1 < len(said) else "").text
        for i, text in enumerate(said)
    ]
    first = segments[0]
    timings = first.get("Timings", {}) if isinstance(first.get("Timings"), Mapping) else {}
    latency: dict[str, int] = {}
    stopped = timings.get("CallerStoppedAt")
    if stopped:
        latency["stopToFirstSentenceReady"] = int(int(first.get("ReadyAt", 0)) - float(stopped))
    for name, label in (("ResponderMs", "responderFirstSentence"), ("SynthesisMs", "sonicFirstSegment")):
        if timings.get(name) is not None:
            latency[label] = int(float(timings[name]))
    status = by_key.get("reply", {})
    caller_turn = by_key.get(f"{CUSTOMER}#{turn:09d}", {})
    action = caller_turn.get("ReplyAction")
    if action is None and int(status.get("Turn", -1)) == turn and status.get("Done"):
        action = status.get("Action")
    heard = caller_turn.get("ReplyHeard")
    held_at = caller_turn.get("ReplyHeldAt")
    if isinstance(heard, str):
        heard = redactor.redact(heard).text
    elif held_at is not None and int(held_at) < len(sentences):
        # The flows path: a sentence held back over the caller and never handed out, or the first the flow did not
        # play as it left the reply for a newer turn's; the flow played those before it.
        heard = " ".join(sentences[: int(held_at)])
    return {
        "said": sentences,
        # What reached the caller, where the transport knows it was less (they talked over the rest).
        **({"heard": heard} if isinstance(heard, str) else {}),
        "prompts": sum(1 for s in segments if s.get("PromptUri")),
        "spokenByConnect": sum(1 for s in segments if not s.get("PromptUri")),
        "speculative": str(speculation.get("Outcome") or ("hit" if _committed_keys(by_key, turn) else "off")),
        **({"action": str(action)} if action else {}),
        "latencyMs": latency,
    }


def _iso(ms: Any) -> str | None:
    if ms in (None, "", 0):
        return None
    return dt.datetime.fromtimestamp(float(ms) / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_after_failure(
    store: TurnStore,
    recorder: CallRecorder,
    contact_id: str,
    generation: int,
    *,
    why: str,
    remaining_ms: Callable[[], int],
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """The lease's end for a consumer invocation that failed (Lambda's on-failure record): once its lease has run
    out with no successor, listening is marked stopped and the record written. What happened, as one word:
    ``written``, ``already``, ``successor`` (a later generation owns the contact and records it), ``no-session``,
    or ``lease-running`` (no time left to wait it out)."""
    while True:
        checkpoint = store.load(contact_id)
        if checkpoint is None:
            return "no-session"
        if checkpoint.generation != generation:
            return "successor"
        now = store.now_ms()
        if checkpoint.state == STOPPED or not checkpoint.alive(now):
            break
        wait_ms = checkpoint.heartbeat_at_ms + LEASE_MS - now + LEASE_SLACK_MS
        if wait_ms > remaining_ms() - RECORD_TIME_MS:
            return "lease-running"
        clock.sleep(wait_ms / 1000)
    if checkpoint.state != STOPPED:
        store.release(contact_id, generation, f"the consumer stopped answering ({why})"[:240])
    return recorder.write(contact_id, generation=generation).outcome
