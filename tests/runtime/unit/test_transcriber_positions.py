"""A track's audio positions: each byte goes to Ink once, and a new session replays only what is unsettled."""

from __future__ import annotations

import itertools
import threading
from typing import ClassVar

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fixtures.clock import ManualClock
from tests.fixtures.tracks import MemoryStore, quiet, voice
from voicebridge.errors import InkUnavailable
from voicebridge.ink.pacer import Pacer
from voicebridge.ink.session import TurnListener
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber
from voicebridge.store.turns import TrackProgress


class RecordingSession:
    """Stands in for the Ink socket: records what is sent; can be made to fail like a dropped socket."""

    opened: ClassVar[list[RecordingSession]] = []
    refusal = None

    def __init__(self, listener: TurnListener, name: str) -> None:
        self.listener = listener
        self.sent = bytearray()
        self.alive = True

    def open(self) -> None:
        RecordingSession.opened.append(self)
        # Where the replay starts: the listener's settled position when the session opens.
        self.started_at = getattr(self.listener, "settled", TrackProgress()).stream_bytes

    def send_audio(self, pcm: bytes) -> None:
        if not self.alive:
            raise InkUnavailable("gone")
        self.sent += pcm

    def finalize(self) -> None:
        pass

    def close(self, *, timeout_s: float = 0) -> None:
        self.alive = False


CLOCKS: dict[int, ManualClock] = {}
"""Each transcriber's clock, so feeding audio moves it at the audio's pace, as a live stream does."""


def transcriber(
    progress: TrackProgress | None = None, clock: ManualClock | None = None, pacer: Pacer | None = None
) -> tuple[TrackTranscriber, MemoryStore]:
    RecordingSession.opened = []
    store = MemoryStore()
    clock = clock or ManualClock()
    t = TrackTranscriber(
        contact_id="c1",
        track="customer",
        progress=progress or TrackProgress(),
        store=store,  # type: ignore[arg-type]
        open_session=RecordingSession,  # type: ignore[arg-type]
        sink=MetricSink(threading.Lock()),
        ack_ms=400,
        clock=clock,
        pacer=pacer,
    )
    CLOCKS[id(t)] = clock
    return t, store


def feed(t: TrackTranscriber, fragment: str, data: bytes, block: int = 1024, start: int = 0) -> None:
    """``data`` as a live stream delivers it: each block when its audio has been produced."""
    for offset in range(start, len(data), block):
        piece = data[offset : offset + block]
        CLOCKS[id(t)].advance(len(piece) / 16000)
        t.audio(fragment, offset, piece, None)


def test_audio_seen_again_is_not_sent_again() -> None:
    t, _ = transcriber()
    fragment_a, fragment_b = quiet(1000), quiet(1000)
    feed(t, "100", fragment_a)
    feed(t, "101", fragment_b[:8000])
    feed(t, "100", fragment_a)
    feed(t, "101", fragment_b)
    assert bytes(RecordingSession.opened[0].sent) == fragment_a + fragment_b


def test_a_partly_sent_block_sends_only_its_new_bytes() -> None:
    t, _ = transcriber()
    data = quiet(200)
    t.audio("100", 0, data[:1000], None)
    t.audio("100", 0, data[:3000], None)
    assert bytes(RecordingSession.opened[0].sent) == data[:3000]


def test_a_resumed_track_starts_at_its_settled_position() -> None:
    t, _ = transcriber(TrackProgress(fragment="101", offset=4096, stream_bytes=20000, next_seq=3))
    data = quiet(1000)
    feed(t, "100", data)
    feed(t, "101", data)
    assert bytes(RecordingSession.opened[0].sent) == data[4096:]


def test_a_new_session_replays_the_unfinished_utterance_only() -> None:
    clock = ManualClock()
    t, store = transcriber(clock=clock)
    first = quiet(500) + voice(800) + quiet(600)
    feed(t, "100", first)
    t.on_turn_start()
    t.on_turn_end("pay my bill")
    clock.advance(0.5)
    t.keepalive(idle_ms=10_000)
    second = voice(700)
    feed(t, "101", second)
    RecordingSession.opened[0].alive = False
    more = voice(300)
    t.audio("101", len(second), more, None)
    for _ in range(40):
        # The replay goes out at the pace Ink accepts.
        clock.advance(0.1)
        t.keepalive(idle_ms=10_000)
    replayed = bytes(RecordingSession.opened[1].sent)
    stream = first + second + more
    assert t.drain_writes(5.0)
    assert stream.endswith(replayed)
    # Nothing of the finished turn's voice is sent again; the unfinished utterance is sent whole.
    assert len(replayed) <= len(stream) - (500 + 800) * 16
    assert len(replayed) >= len(second + more)
    assert [turn.transcript for turn in store.turns.values()] == ["pay my bill"]


def test_turns_take_consecutive_sequence_numbers_from_the_checkpoint() -> None:
    t, store = transcriber(TrackProgress(next_seq=5))
    feed(t, "100", voice(500) + quiet(600))
    t.on_turn_end("first")
    feed(t, "101", voice(500) + quiet(600))
    t.on_turn_end("second")
    assert t.drain_writes(5.0)
    assert sorted(store.turns) == ["customer#000000005", "customer#000000006"]
    assert t.settled.next_seq == 7


def test_an_empty_transcript_is_not_a_turn() -> None:
    t, store = transcriber()
    feed(t, "100", voice(300) + quiet(600))
    t.on_turn_end("  ")
    assert t.drain_writes(5.0)
    assert store.turns == {} and t.settled.next_seq == 0


def test_silence_settles_once_ink_has_had_time_to_start_a_turn() -> None:
    clock = ManualClock()
    t, _ = transcriber(clock=clock)
    t.audio("100", 0, quiet(200), None)
    assert not t.quiet
    clock.advance(0.4)
    assert t.quiet
    t.on_turn_start()
    feed(t, "101", voice(200))
    assert not t.quiet


@settings(max_examples=60, deadline=None)
@given(
    utterances=st.lists(st.tuples(st.integers(0, 900), st.integers(0, 900)), min_size=1, max_size=5),
    block=st.integers(min_value=64, max_value=2048),
    drops=st.lists(st.integers(min_value=0, max_value=400), max_size=4),
    turn_ends=st.lists(st.booleans(), max_size=5),
)
def test_every_session_gets_a_gapless_slice_starting_where_the_audio_is_settled(
    utterances: list[tuple[int, int]], block: int, drops: list[int], turn_ends: list[bool]
) -> None:
    clock = ManualClock()
    # Catching up by dropping silence is tested on its own: here every byte must go out.
    t, _ = transcriber(clock=clock, pacer=Pacer(catch_up_after_ms=float("inf")))
    stream = b"".join(quiet(q) + voice(v) for q, v in utterances) + quiet(600)
    block -= block % 2
    blocks = [stream[i : i + block] for i in range(0, len(stream), block)]
    drop_at = {d % max(1, len(blocks)) for d in drops}
    drops_done = 0
    offset = 0
    for i, data in enumerate(blocks):
        if i in drop_at and RecordingSession.opened and RecordingSession.opened[-1].alive:
            RecordingSession.opened[-1].alive = False
            drops_done += 1
        clock.advance(len(data) / 16000)
        t.audio("100", offset, data, None)
        offset += len(data)
        if turn_ends and i % 7 == 3 and turn_ends[i % len(turn_ends)]:
            t.on_turn_start()
            t.on_turn_end("a turn")
    for _ in range(600):
        # The stream is over: the pace lets the last replay out, a lost session is reopened after its back-off.
        clock.advance(0.1)
        t.keepalive(idle_ms=10**9)
        t.audio("100", offset, b"", None)
    sessions = RecordingSession.opened
    assert len(sessions) == drops_done + 1
    # Each session starts exactly at the settled position when it opened — nothing settled is sent again — and no
    # later than where the session before it stopped: no gap.
    for session in sessions:
        assert bytes(session.sent) == stream[session.started_at : session.started_at + len(session.sent)]
    for before, after in itertools.pairwise(sessions):
        assert after.started_at <= before.started_at + len(before.sent)
    # The last session has everything from its start to the end of the stream.
    assert bytes(sessions[-1].sent) == stream[sessions[-1].started_at :]
