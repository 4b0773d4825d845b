"""A streaming session holds its contact by the turn table's lease, as the flows path's consumer does: renewed while
Connect is heard on the socket, given up when the session ends. A redial waits for the claim to be given up or to
lapse, then goes on from the stored place; a session whose claim was taken stops speaking and ends.

The turn table is moto's, in process; the wall clock every task compares heartbeats with is the test's, so a lease
lapses when the test says so."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, cast

import boto3
import pytest
from moto import mock_aws

from tests.fixtures.metrics import NamedMetrics
from voicebridge.a2a import session as a2a_session
from voicebridge.a2a.protocol import InitSession
from voicebridge.a2a.session import AgentSession, Engine, StreamSettings, resumed_stream_bytes
from voicebridge.config import Settings
from voicebridge.errors import Superseded
from voicebridge.ink.transcriber import MetricSink
from voicebridge.store import turns
from voicebridge.store.turns import CUSTOMER, LEASE_MS, STOPPED, Claim, TrackProgress, Turn, TurnStore

SETTINGS = StreamSettings.of(Settings.from_env({}))
AUDIO_SLICE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": "slice",
        "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"raw": "AAAA"}]}},
    }
)
"""A slice of the caller's audio, as Connect streams it from READY on."""
RENEW_S = 0.02
"""How often the sessions here renew their claims and look at them: quickly, so the test waits for none long."""


class WallClock:
    """The wall clock of every server task, moved on by the test: ``later(ms)`` is time passing without a renewal."""

    def __init__(self) -> None:
        self.offset_ms = 0

    def __call__(self) -> int:
        return int(time.time() * 1000) + self.offset_ms

    def later(self, ms: int) -> None:
        self.offset_ms += ms


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> WallClock:
    wall = WallClock()
    monkeypatch.setattr(turns, "_now_ms", wall)
    # The lease keeps its length: the clock is what moves.
    monkeypatch.setattr(a2a_session, "RENEW_S", RENEW_S)
    monkeypatch.setattr(a2a_session, "QUIET_S", 0.2)
    monkeypatch.setattr(a2a_session, "REDIAL_POLL_S", 0.01)
    return wall


@pytest.fixture
def store(clock: WallClock) -> Iterator[TurnStore]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="turns",
            KeySchema=[
                {"AttributeName": "ContactId", "KeyType": "HASH"},
                {"AttributeName": "TurnKey", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "ContactId", "AttributeType": "S"},
                {"AttributeName": "TurnKey", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield TurnStore("turns", client)


class Recorder:
    """The engine's record writer: which generations wrote the contact's record."""

    def __init__(self) -> None:
        self.generations: list[int] = []

    def __call__(self, contact_id: str, generation: int, sink: MetricSink) -> None:
        self.generations.append(generation)


class Track:
    """A transcriber that has settled the caller's audio up to ``settled``."""

    def __init__(self, settled: TrackProgress) -> None:
        self.settled = settled

    def close(self, **kwargs: Any) -> None:
        pass


def contact() -> InitSession:
    contact_arn = f"arn:aws:connect:us-east-1:111122223333:instance/i/contact/{uuid.uuid4()}"
    return InitSession("init", "ctx", "arn:i", contact_arn, ("COMPLETE",), False, None, None)


def on_a_socket(
    store: TurnStore, recorder: Recorder | None = None, metrics: NamedMetrics | None = None
) -> AgentSession:
    """A session on a socket of its own (another server task, for all it shares with the others: the turn table)."""

    async def send(frame: str) -> None:
        pass

    engine = cast(Engine, type("Engine", (), {"store": store, "write_record": recorder or Recorder()})())
    return AgentSession(engine, SETTINGS, send, sink=metrics or NamedMetrics())


async def holding(session: AgentSession, init: InitSession, progress: TrackProgress | None = None) -> Claim:
    """``session`` claims the contact and keeps its claim, as after INIT_SESSION; ``progress``: where its caller's
    audio is settled."""
    claim, _, _ = await asyncio.to_thread(session._claim, init, None)
    session.init = init
    session._transcriber = cast(Any, Track(progress or TrackProgress()))
    session._keeper = asyncio.get_running_loop().create_task(session._keep_claim())
    return claim


async def streaming(session: AgentSession, stop: asyncio.Event) -> None:
    """Connect streaming the caller's audio on ``session``'s socket until ``stop``."""
    while not stop.is_set():
        await session.feed(AUDIO_SLICE)
        await asyncio.sleep(0.01)


async def quiet(session: AgentSession) -> None:
    """Long enough without a frame that ``session`` renews no more."""
    await asyncio.sleep(a2a_session.QUIET_S + 2 * RENEW_S)


def test_a_live_sessions_claim_outlasts_its_first_lease_and_a_redial_meanwhile_is_refused(
    store: TurnStore, clock: WallClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(a2a_session, "redial_wait_s", lambda: 0.3)
    init = contact()

    async def call() -> None:
        first, redial = on_a_socket(store), on_a_socket(store)
        assert await holding(first, init) is Claim.CLAIMED
        stop = asyncio.Event()
        connect = asyncio.create_task(streaming(first, stop))
        clock.later(LEASE_MS + 5_000)
        await asyncio.sleep(5 * RENEW_S)

        with pytest.raises(Superseded):
            await asyncio.to_thread(redial._claim, init, None)

        assert not first.superseded
        stop.set()
        await connect
        await first.close("the socket closed")

    asyncio.run(call())


def test_a_half_open_session_is_superseded_only_once_its_lease_lapses_and_then_stops_itself(
    store: TurnStore, clock: WallClock
) -> None:
    init = contact()
    recorder, metrics = Recorder(), NamedMetrics()

    async def call() -> None:
        first, redial = on_a_socket(store, recorder, metrics), on_a_socket(store)
        await holding(first, init)
        await quiet(first)
        redialled = asyncio.create_task(asyncio.to_thread(redial._claim, init, None))
        await asyncio.sleep(5 * a2a_session.REDIAL_POLL_S)
        assert not redialled.done(), "the redial waits while the first session's lease runs"

        clock.later(LEASE_MS)
        claim, generation, _ = await redialled
        await asyncio.wait_for(first.wait_finished(), timeout=5)
        await first.close("the socket closed")

        assert (claim, generation) == (Claim.TAKEN_OVER, 1)
        assert first.superseded
        taken = store.load(init.contact_id)
        assert taken is not None and (taken.generation, taken.state) != (0, STOPPED), "the first left the claim alone"
        assert recorder.generations == [], "the record is the new session's to write"
        assert metrics.names.count("StreamingSuperseded") == 1

    asyncio.run(call())


def test_after_a_takeover_the_turn_numbers_and_the_stream_position_go_on_from_the_first_sessions(
    store: TurnStore, clock: WallClock
) -> None:
    init = contact()

    async def call() -> None:
        first, redial = on_a_socket(store), on_a_socket(store)
        stop = asyncio.Event()
        await holding(first, init, TrackProgress(next_seq=3, stream_bytes=40_000))
        connect = asyncio.create_task(streaming(first, stop))
        await asyncio.sleep(5 * RENEW_S)
        stop.set()
        await connect
        # The caller's fourth turn ends just before the socket goes quiet, after the last renewal.
        store.put_turn(Turn(init.contact_id, CUSTOMER, 3, "my account number", 2_600, 3_000, clock()))
        await quiet(first)
        clock.later(LEASE_MS)

        claim, _, previous = await asyncio.to_thread(redial._claim, init, None)
        await first.close("the socket closed")

        assert claim is Claim.TAKEN_OVER and previous is not None
        taken = store.load(init.contact_id)
        assert taken is not None and taken.tracks[CUSTOMER].next_seq == 4
        assert resumed_stream_bytes(store, init.contact_id, previous) == 3_000 * 16

    asyncio.run(call())


def test_a_session_that_ends_gives_its_claim_up_and_a_redial_takes_over_at_once(
    store: TurnStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(a2a_session, "redial_wait_s", lambda: 0.0)
    init = contact()
    recorder, metrics = Recorder(), NamedMetrics()

    async def call() -> None:
        first, redial = on_a_socket(store, recorder, metrics), on_a_socket(store)
        await holding(first, init, TrackProgress(next_seq=2, stream_bytes=32_000))
        await first.close("the socket closed")

        claim, generation, previous = await asyncio.to_thread(redial._claim, init, None)

        assert (claim, generation) == (Claim.TAKEN_OVER, 1)
        assert previous is not None and previous.tracks[CUSTOMER].stream_bytes == 32_000
        assert recorder.generations == [0]

    asyncio.run(call())
