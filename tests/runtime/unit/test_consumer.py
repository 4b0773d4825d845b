"""The call's consumer on a clock the test moves, with GetMedia, the checkpoint and Ink in memory: where each read
starts, that every byte of the contact reaches Ink once across a dropped connection, that another contact's audio
never does, when it gives up, and how it hands over to its successor."""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from tests.fixtures.clock import ManualClock
from tests.fixtures.mkv import AGENT, CUSTOMER, Block, Fragment, Track
from tests.fixtures.tracks import SilentInk
from tests.fixtures.tracks import quiet as quiet_track
from tests.fixtures.tracks import voice as voice_track
from voicebridge.call.backchannel import AgentVoice
from voicebridge.call.consumer import HANDOFF_FLOOR_MS, START_MARGIN_MS, ConsumerSettings, Outcome, StreamConsumer
from voicebridge.converse.making import Made, ReplyInProgress
from voicebridge.errors import MediaInterrupted, Superseded
from voicebridge.ink.session import TurnListener
from voicebridge.kvs.fragments import CONTACT_ID, CONTINUATION_TOKEN, FRAGMENT_NUMBER, PRODUCER_TIMESTAMP
from voicebridge.kvs.media import StartSelector
from voicebridge.language import Languages, Listening
from voicebridge.store import turns
from voicebridge.store.replies import REPLY_KEYS
from voicebridge.store.turns import RETRYING, STOPPED, Checkpoint, TrackProgress, Turn

CONTACT = "4a573372-1f28-4e26-b97b-0ea7a4c8e1f0"
OTHER = "0f1e2d3c-4b5a-4968-8776-655443322110"
BASE = "91343852333181452199722691208580038832"
START_MS = 1_764_000_000_000
FRAME_BYTES = 640
"""40 ms of 8 kHz 16-bit audio, as Connect writes it."""
FRAMES = 5


class ReadClock(ManualClock):
    """Moves only when the consumer sleeps: the heartbeat's waits take a little real time and no virtual time, so
    the consumer's own decisions are the only thing that moves the clock."""

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(0.005)


@dataclasses.dataclass
class Piece:
    number: str
    producer_ms: int
    data: bytes
    customer: bytes


def voice(seed: int) -> bytes:
    """A frame of audio with no zero byte, so the keep-alive silence sent in between can be told from it."""
    return random.Random(seed).randbytes(FRAME_BYTES).replace(b"\x00", b"\x01")


def fragment(index: int, contact: str = CONTACT, *, producer_ms: int | None = None) -> Piece:
    """One Connect fragment: its number and producer time in the Tags before the Cluster, its contact and
    GetMedia's own tags after it (docs/protocols.md, *Kinesis Video Streams*)."""
    number = f"{BASE}{index:04d}"
    produced = START_MS + index * FRAMES * 40 if producer_ms is None else producer_ms
    customer = [voice(index * 100 + k) for k in range(FRAMES)]
    blocks = [
        block
        for k in range(FRAMES)
        for block in (Block(1, k * 40, (customer[k],)), Block(2, k * 40, (voice(-index * 100 - k),)))
    ]
    encoded = Fragment(
        blocks,
        cluster_timecode=produced,
        tracks=(Track(1, CUSTOMER, 1), Track(2, AGENT, 2)),
        producer_tags={FRAGMENT_NUMBER: number, PRODUCER_TIMESTAMP: f"{produced / 1000:.3f}"},
        trailing_tags={CONTACT_ID: contact, "AWS_KINESISVIDEO_MILLIS_BEHIND_NOW": "0", CONTINUATION_TOKEN: number},
    ).encode()
    return Piece(number, produced, encoded, b"".join(customer))


class Media:
    """GetMedia over a list of fragments, by AWS's StartSelector reference: ``FRAGMENT_NUMBER`` starts after the
    fragment named, a timestamp with the fragment containing it, a continuation token after the fragment that
    carried it. ``cuts`` makes the n-th read fail ``after`` bytes in, as a dropped connection does."""

    def __init__(self, pieces: list[Piece], *, chunk: int = 700, cuts: dict[int, int] | None = None) -> None:
        self.pieces = pieces
        self.chunk = chunk
        self.cuts = cuts or {}
        self.selectors: list[StartSelector] = []
        self.always_fail = False

    def __call__(self, stream_arn: str) -> Media:
        return self

    def read(self, selector: StartSelector) -> Iterator[bytes]:
        self.selectors.append(selector)
        if self.always_fail:
            raise MediaInterrupted("GetMedia: connection refused")
        data = b"".join(p.data for p in self._from(selector))
        cut = self.cuts.get(len(self.selectors) - 1)
        for start in range(0, len(data) if cut is None else cut, self.chunk):
            yield data[start : min(start + self.chunk, len(data) if cut is None else cut)]
        if cut is not None:
            raise MediaInterrupted("media read interrupted (ProtocolError)")

    def _from(self, selector: StartSelector) -> list[Piece]:
        numbers = [p.number for p in self.pieces]
        if selector.kind in ("FRAGMENT_NUMBER", "CONTINUATION_TOKEN"):
            return self.pieces[numbers.index(selector.value) + 1 :]
        at = int(selector.value)
        return [
            p for i, p in enumerate(self.pieces) if i + 1 == len(self.pieces) or self.pieces[i + 1].producer_ms > at
        ]


class Checkpoints:
    """The turn table's checkpoint and turns, with its conditional writes."""

    def __init__(self, checkpoint: Checkpoint) -> None:
        self._item = dataclasses.replace(checkpoint, tracks=dict(checkpoint.tracks))
        self.states: list[tuple[str, str]] = []
        self.turns: dict[str, Turn] = {}

    def now_ms(self) -> int:
        return 0

    def load(self, contact_id: str) -> Checkpoint:
        return dataclasses.replace(self._item, tracks={k: dataclasses.replace(v) for k, v in self._item.tracks.items()})

    def heartbeat(
        self, checkpoint: Checkpoint, state: str, reason: str = "", *, tracks: Mapping[str, TrackProgress] | None = None
    ) -> None:
        if checkpoint.generation != self._item.generation:
            raise Superseded("owned by a newer consumer")
        self.states.append((state, reason))
        self._item.state, self._item.stop_reason = state, reason

    def save(self, checkpoint: Checkpoint, *, new_generation: int | None = None) -> None:
        if checkpoint.generation != self._item.generation:
            raise Superseded("owned by a newer consumer")
        if new_generation is not None:
            checkpoint.generation = new_generation
        self._item = dataclasses.replace(
            checkpoint, tracks={k: dataclasses.replace(v) for k, v in checkpoint.tracks.items()}
        )

    def put_turn(self, turn: Turn) -> bool:
        return self.turns.setdefault(turn.key, turn) is turn

    def mark_speaking(self, contact_id: str, generation: int, since_ms: int) -> None:
        if generation != self._item.generation:
            raise Superseded("owned by a newer consumer")
        self._item.speaking_since_ms = since_ms


class Ink:
    """Every session opened, and the audio each was sent."""

    def __init__(self) -> None:
        self.sessions: list[SilentInk] = []
        self.keyterms: list[tuple[str, ...] | None] = []
        self.listening: list[Listening | None] = []

    def __call__(
        self,
        listener: TurnListener,
        name: str,
        keyterms: tuple[str, ...] | None = None,
        listening: Listening | None = None,
    ) -> SilentInk:
        session = SilentInk()
        self.sessions.append(session)
        self.keyterms.append(keyterms)
        self.listening.append(listening)
        return session

    @property
    def heard(self) -> bytes:
        """What Ink was sent, without the keep-alive silence."""
        return b"".join(bytes(s.sent) for s in self.sessions).replace(b"\x00", b"")


@dataclasses.dataclass
class Call:
    store: Checkpoints
    media: Media
    ink: Ink
    handed_over: list[dict[str, Any]]
    remaining: list[int]

    def consumer(self, generation: int = 0, **settings: Any) -> StreamConsumer:
        options: dict[str, Any] = {
            "languages": Languages("en", "turns", "ink-2", "off"),
            "ink_frame_ms": 100,
            "ink_catch_up": "off",
            "kvs_read_timeout_ms": 1000,
            "listen_retry_limit_ms": 10_000,
            "consumer_handoff_ms": 30_000,
            "converse_backchannel_ms": 600,
            "converse_hold_after_ms": 4000,
            # The fakes' audio is tones and silence: the energy detector's figures (no end-of-turn model: "off").
            "voice_detector": "energy",
        }
        options.update(settings)
        return StreamConsumer(
            ConsumerSettings(**options),
            self.store,  # type: ignore[arg-type]
            contact_id=CONTACT,
            generation=generation,
            open_session=self.ink,  # type: ignore[arg-type]
            continue_with=self._continue,
            remaining_ms=lambda: self.remaining[0],
            media=self.media,  # type: ignore[arg-type]
            clock=ReadClock(),
        )

    def _continue(self, payload: dict[str, Any]) -> None:
        if self.remaining[1:]:
            self.remaining.pop(0)
            raise RuntimeError("TooManyRequestsException")
        self.handed_over.append(payload)

    @property
    def checkpoint(self) -> Checkpoint:
        return self.store.load(CONTACT)


def call(
    pieces: list[Piece],
    *,
    start: int = 0,
    generation: int = 0,
    tracks: tuple[str, ...] = (turns.CUSTOMER,),
    keyterms: tuple[str, ...] | None = None,
    language: str | None = None,
    **media: Any,
) -> Call:
    checkpoint = Checkpoint(
        contact_id=CONTACT,
        stream_arn="arn:aws:kinesisvideo:us-east-1:123456789012:stream/connect-contact/1",
        start_fragment=pieces[start].number,
        start_timestamp_ms=pieces[start].producer_ms,
        tracks={track: TrackProgress() for track in tracks},
        generation=generation,
        state=turns.STARTING,
        keyterms=keyterms,
        language=language,
    )
    return Call(Checkpoints(checkpoint), Media(pieces, **media), Ink(), [], [600_000])


def test_every_ink_session_of_the_call_is_opened_with_the_flows_keyterms() -> None:
    c = call([fragment(i) for i in range(4)], tracks=(turns.CUSTOMER, turns.AGENT), keyterms=("Acme Plus",))
    c.consumer().run()
    assert len(c.ink.keyterms) >= 2 and set(c.ink.keyterms) == {("Acme Plus",)}


def test_without_the_flows_keyterms_the_sessions_take_the_deployments() -> None:
    c = call([fragment(i) for i in range(4)])
    c.consumer().run()
    assert c.ink.keyterms and set(c.ink.keyterms) == {None}


def test_a_spanish_contacts_sessions_are_inks_manual_endpoint_with_ink_whisper() -> None:
    c = call([fragment(i) for i in range(4)], language="es-US")
    c.consumer().run()
    assert c.ink.listening and {(li.mode, li.model) for li in c.ink.listening if li} == {("manual", "ink-whisper")}
    assert None not in c.ink.listening


def test_a_contact_without_a_language_is_listened_to_on_inks_turns_endpoint() -> None:
    c = call([fragment(i) for i in range(4)])
    c.consumer().run()
    assert c.ink.listening and {(li.mode, li.language) for li in c.ink.listening if li} == {("turns", "en")}


def test_the_first_read_starts_before_the_callers_audio_and_the_contact_reaches_ink_from_its_start_fragment() -> None:
    earlier = [fragment(i, OTHER) for i in range(2)]
    ours = [fragment(i) for i in range(2, 6)]
    c = call(earlier + ours, start=2)
    outcome = c.consumer().run()
    assert outcome.reason == "stream ended"
    first = c.media.selectors[0]
    assert first == StartSelector.producer_time(ours[0].producer_ms - START_MARGIN_MS)
    # The earlier contact's fragments were read (the read starts early) but none of its audio went to Ink.
    assert c.ink.heard == b"".join(p.customer for p in ours)
    assert (c.checkpoint.state, c.checkpoint.stop_reason) == (STOPPED, "stream ended")


@pytest.mark.parametrize("cut", ["in the first header", "in the first audio", "two fragments in"])
def test_a_dropped_connection_resumes_where_the_audio_was_read_and_no_byte_is_lost_or_repeated(cut: str) -> None:
    pieces = [fragment(i) for i in range(4)]
    at = {"in the first header": 300, "in the first audio": 2_500, "two fragments in": 0}[cut]
    at = at or len(pieces[0].data) + len(pieces[1].data) + 500
    c = call(pieces, cuts={0: at}, chunk=256)
    assert c.consumer().run().reason == "stream ended"
    assert c.ink.heard == b"".join(p.customer for p in pieces)
    first, resumed = c.media.selectors[:2]
    expected = {
        # Nothing of the contact read yet: the read starts over as it began.
        "in the first header": first,
        # Inside the first fragment no token has been seen: the chunk containing its producer time.
        "in the first audio": StartSelector.producer_time(pieces[0].producer_ms),
        # The continuation token of the last fragment read whole.
        "two fragments in": StartSelector.continuation(pieces[1].number),
    }
    assert resumed == expected[cut]


def test_another_contacts_fragment_stops_the_read_before_any_of_its_audio_reaches_ink() -> None:
    ours = [fragment(i) for i in range(3)]
    # Streams are reused: the next contact's audio starts seconds after this one's ended.
    theirs = [fragment(i, OTHER, producer_ms=ours[-1].producer_ms + 10_000 + i * 200) for i in range(3, 5)]
    c = call(ours + theirs)
    assert c.consumer().run().reason == "contact changed"
    assert c.ink.heard == b"".join(p.customer for p in ours)
    assert (c.checkpoint.state, c.checkpoint.stop_reason) == (STOPPED, "contact changed")


def test_media_that_stays_unavailable_is_given_up_after_the_retry_limit_and_the_retrying_is_recorded() -> None:
    c = call([fragment(0)])
    c.media.always_fail = True
    outcome = c.consumer(listen_retry_limit_ms=10_000).run()
    assert outcome.reason == "media unavailable for 10 s: GetMedia: connection refused"
    assert (RETRYING, "GetMedia: connection refused") in c.store.states
    # Bounded back-off: a handful of attempts in ten seconds, not a busy loop.
    assert 4 <= len(c.media.selectors) <= 30
    assert (c.checkpoint.state, c.checkpoint.stop_reason) == (STOPPED, outcome.reason)


def test_when_time_is_short_the_successor_is_invoked_and_only_then_named_in_the_checkpoint() -> None:
    pieces = [fragment(i) for i in range(4)]
    c = call(pieces)
    c.remaining[0] = 10_000
    outcome = c.consumer().run()
    assert outcome == Outcome("handoff", handed_off_to=1, audio_seconds=outcome.audio_seconds)
    assert c.handed_over == [{"ContactId": CONTACT, "Generation": 1}]
    saved = c.checkpoint
    assert saved.generation == 1 and saved.state != STOPPED
    # What was sent and not settled is the successor's to send again: the checkpoint is never ahead of Ink.
    assert saved.tracks[turns.CUSTOMER].stream_bytes <= len(c.ink.heard)


def test_a_refused_hand_over_is_tried_again_and_the_checkpoint_keeps_its_owner_until_one_is_accepted() -> None:
    c = call([fragment(i) for i in range(4)])
    c.remaining[:] = [10_000, 10_000, 10_000]
    assert c.consumer().run().handed_off_to == 1
    assert len(c.handed_over) == 1 and c.checkpoint.generation == 1


def test_a_hand_over_refused_with_too_little_time_left_stops_listening_with_the_reason() -> None:
    c = call([fragment(i) for i in range(4)])
    c.remaining[:] = [HANDOFF_FLOOR_MS - 1, HANDOFF_FLOOR_MS - 1]
    outcome = c.consumer().run()
    assert outcome.reason == "hand-over failed (RuntimeError)"
    assert (c.checkpoint.generation, c.checkpoint.state, c.checkpoint.stop_reason) == (0, STOPPED, outcome.reason)


def test_an_invocation_that_does_not_own_the_contact_reads_nothing() -> None:
    c = call([fragment(0)], generation=3)
    assert c.consumer(generation=1).run().reason == "superseded"
    assert c.media.selectors == [] and c.ink.sessions == []
    assert c.checkpoint.generation == 3


# --- what of a reply the caller heard, from the agent's track ------------------------------------------------


@dataclasses.dataclass
class CallerVoices:
    """The caller's transcriber as the consumer asks it: when each turn's voice began and ended (Connect's clock)."""

    voices: dict[int, tuple[float, float | None]]

    def voice_of(self, seq: int) -> tuple[float, float | None] | None:
        return self.voices.get(seq)


def answered(seq: int, durations: list[int], *, ready_after_ms: int = 300) -> ReplyInProgress:
    """The reply to turn ``seq``, its prompts ``durations`` long, the first made ``ready_after_ms`` after it ended."""
    ended_ms = START_MS + seq * 100_000
    reply = ReplyInProgress(seq, "...", keys=REPLY_KEYS, turn=Turn(CONTACT, turns.CUSTOMER, seq, "...", 0, 0, ended_ms))
    reply.spoken = ["..."] * len(durations)
    reply.made = [Made(ended_ms + ready_after_ms, duration) for duration in durations]
    return reply


def listening_to_the_agent(voices: dict[int, tuple[float, float | None]]) -> StreamConsumer:
    """A conversing consumer whose agent's track had, from ``START_MS``: an earlier reply's prompt to 2.5 s (a pause
    in it at 1.5 s), the next reply's first prompt from 3.0 s to 4.3 s, its second from 4.6 s to 7.6 s; and the
    caller's turns' ``voices`` (ms from ``START_MS``)."""
    consumer = call([fragment(0)]).consumer(converse_hold_after_ms=4000)
    agent = AgentVoice(backchannel_ms=600)
    track = voice_track(1500) + quiet_track(200) + voice_track(800) + quiet_track(500) + voice_track(1300)
    track += quiet_track(300) + voice_track(3000) + quiet_track(1000)
    for offset in range(0, len(track), 320):
        agent.feed(track[offset : offset + 320], START_MS + (offset + 320) / 16)
    consumer._agent_voice = agent
    on_connects_clock = {
        seq: (START_MS + began, None if ended is None else START_MS + ended) for seq, (began, ended) in voices.items()
    }
    consumer._transcribers = {turns.CUSTOMER: CallerVoices(on_connects_clock)}  # type: ignore[dict-item]
    return consumer


def test_a_reply_to_a_turn_begun_over_a_prompt_is_looked_for_once_that_prompt_ended() -> None:
    # Turn 1 ("what is my balance?") began at 0.5 s over reply 0's prompt, which went on to 2.5 s; turn 2 began at
    # 3.5 s, over reply 1's first prompt (1.4 s long).
    consumer = listening_to_the_agent({0: (-1000, 0), 1: (500, 1000), 2: (3500, None)})
    earlier, before = answered(1, [1400, 3000]), answered(0, [2500])
    assert consumer._heard_of(before, earlier) == 1
    # Reply 1 is looked for from 2.5 s, not from the end of the caller's question (1.0 s), where the pause in the
    # earlier prompt would be taken for its start, its first prompt for over at 3.1 s, and its second for begun.
    assert consumer._heard_of(earlier, answered(2, [900])) == 1


def test_no_reading_where_a_holding_line_may_have_played_or_a_turns_voice_is_not_known() -> None:
    consumer = listening_to_the_agent({1: (500, 1000), 2: (3000, None)})
    # Its first sentence made 3.2 s after its turn ended: the flow may have played its holding line before it.
    assert consumer._heard_of(answered(1, [1400], ready_after_ms=3200), answered(2, [900])) is None
    assert consumer._heard_of(answered(1, [1400]), answered(3, [900])) is None
    assert consumer._heard_of(answered(1, [1400]), answered(2, [900])) == 1
