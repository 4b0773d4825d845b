"""The agent's voice paced into Connect's buffer: what :class:`voicebridge.a2a.output.Player` sends, and when.

Time is a number the test passes to ``due``: Connect is modelled here as docs/protocols.md describes it, a buffer
that plays what it was sent in real time, so how far ahead of the caller the agent is can be worked out from the
frames alone. The chunks are read back from the frames as Connect reads them (A.4b: one ``artifactId`` per response,
``append`` false on the first frame, ``lastChunk`` on the last, none after an interruption).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable
from dataclasses import dataclass

import pytest

from voicebridge.a2a.output import Player, Response

RATE = 8000
BYTES_PER_MS = RATE * 2 // 1000
LEAD_MS = 160
CHUNK = 50 * BYTES_PER_MS
CONTEXT = "ctx-1"


@dataclass(frozen=True)
class Chunk:
    task_id: str
    artifact_id: str
    pcm: bytes
    append: bool
    last: bool

    @property
    def ms(self) -> float:
        return len(self.pcm) / BYTES_PER_MS


def read(frames: Iterable[str]) -> list[Chunk]:
    chunks = []
    for frame in frames:
        update = json.loads(frame)["result"]["artifactUpdate"]
        assert update["contextId"] == CONTEXT
        [part] = update["artifact"]["parts"]
        pcm = base64.b64decode(part["raw"])
        chunks.append(
            Chunk(update["taskId"], update["artifact"]["artifactId"], pcm, update["append"], update["lastChunk"])
        )
    return chunks


def player(*, lead_ms: float = LEAD_MS, chunk_bytes: int = CHUNK) -> Player:
    return Player(CONTEXT, RATE, lead_ms=lead_ms, chunk_bytes=chunk_bytes)


def speech(ms: int, seed: int = 1) -> bytes:
    """``ms`` of distinguishable 16-bit samples."""
    return bytes((seed * 31 + i) % 251 for i in range(ms * BYTES_PER_MS))


class Connect:
    """Connect's side as the contract has it: plays what it was sent, in order, in real time."""

    def __init__(self) -> None:
        self.played_out_at = 0.0
        self.chunks: list[Chunk] = []
        self.ran_dry = False

    def receive(self, chunks: list[Chunk], now: float) -> None:
        for chunk in chunks:
            if self.chunks and self.played_out_at < now and chunk.pcm:
                self.ran_dry = True
            self.played_out_at = max(self.played_out_at, now) + chunk.ms / 1000
            self.chunks.append(chunk)

    def held_ms(self, now: float) -> float:
        return max(0.0, self.played_out_at - now) * 1000


def run(p: Player, connect: Connect, *, start: float, until: float, step: float = 0.005) -> list[float]:
    """Call ``due`` every ``step`` seconds; what Connect held after each call, in ms."""
    held = []
    ticks = round((until - start) / step)
    for tick in range(ticks + 1):
        now = start + tick * step
        connect.receive(read(p.due(now)), now)
        held.append(connect.held_ms(now))
    return held


def ended(p: Player, ms: int, task_id: str = "task-1") -> Response:
    """A response of ``ms`` of speech, all of it pushed and ended."""
    response = p.open(task_id)
    p.push(response, speech(ms))
    p.end(response)
    return response


# -- pacing


def test_a_responses_first_audio_goes_out_the_moment_it_is_pushed() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(20))
    [chunk] = read(p.due(12.0))
    assert chunk.pcm == speech(20) and not chunk.last


def test_first_audio_after_a_silence_goes_out_at_once() -> None:
    p = player()
    first = p.open("task-1")
    p.push(first, speech(40))
    p.end(first)
    read(p.due(1.0))
    second = p.open("task-2")
    p.push(second, speech(30, seed=2))
    assert [c.pcm for c in read(p.due(9.0))] == [speech(30, seed=2)]


@pytest.mark.parametrize(("lead_ms", "chunk_ms"), [(160, 50), (160, 100), (160, 200), (40, 100), (400, 100)], ids=str)
def test_audio_is_never_more_than_the_lead_ahead_of_what_the_caller_hears(lead_ms: int, chunk_ms: int) -> None:
    p = player(lead_ms=lead_ms, chunk_bytes=chunk_ms * BYTES_PER_MS)
    response = p.open("task-1")
    p.push(response, speech(3000))
    held = run(p, Connect(), start=0.0, until=3.5)
    assert max(held) <= lead_ms + 1e-6


@pytest.mark.parametrize(("lead_ms", "chunk_ms"), [(160, 50), (160, 100), (160, 200), (40, 100), (400, 100)], ids=str)
def test_connect_never_runs_dry_while_audio_waits(lead_ms: int, chunk_ms: int) -> None:
    p = player(lead_ms=lead_ms, chunk_bytes=chunk_ms * BYTES_PER_MS)
    response = p.open("task-1")
    p.push(response, speech(3000))
    connect = Connect()
    run(p, connect, start=0.0, until=3.5)
    assert b"".join(c.pcm for c in connect.chunks) == speech(3000)
    assert not connect.ran_dry


def test_audio_goes_out_no_faster_than_it_plays_once_the_lead_is_reached() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(2000))
    connect = Connect()
    run(p, connect, start=0.0, until=1.0)
    sent_ms = sum(c.ms for c in connect.chunks)
    assert 1000 <= sent_ms <= 1000 + LEAD_MS


# -- pause, resume, interrupt


def test_a_paused_player_sends_nothing() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(1000))
    p.due(0.0)
    p.pause()
    assert [p.due(0.1 * n) for n in range(1, 20)] == [[]] * 19


def test_resume_goes_on_where_the_audio_stopped_and_nothing_is_lost() -> None:
    p = player()
    response = ended(p, 1000)
    connect = Connect()
    run(p, connect, start=0.0, until=0.3)
    p.pause()
    run(p, connect, start=0.3, until=1.0)
    p.resume()
    run(p, connect, start=1.0, until=3.0)
    assert b"".join(c.pcm for c in connect.chunks) == speech(1000)
    assert {c.artifact_id for c in connect.chunks} == {response.artifact_id}
    assert [c.last for c in connect.chunks].count(True) == 1 and connect.chunks[-1].last


def test_no_last_chunk_goes_out_while_paused() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(20))
    read(p.due(0.0))
    p.end(response)
    p.pause()
    assert p.due(1.0) == []
    p.resume()
    assert [c.last for c in read(p.due(1.0))] == [True]


def test_interrupt_drops_the_queued_audio_and_sends_no_last_chunk() -> None:
    p = player()
    response = ended(p, 2000)
    first = read(p.due(0.0))
    assert p.interrupt(0.05) == [response]
    later = [chunk for n in range(1, 50) for chunk in read(p.due(0.05 * n))]
    assert later == []
    assert not any(c.last for c in first)


def test_audio_pushed_for_an_interrupted_response_is_discarded() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(100))
    p.due(0.0)
    p.interrupt(0.01)
    p.push(response, speech(100, seed=3))
    p.end(response)
    assert p.due(1.0) == []


def test_the_next_response_after_an_interruption_gets_a_fresh_artifact_starting_anew() -> None:
    p = player()
    cut = p.open("task-1")
    p.push(cut, speech(500))
    p.due(0.0)
    p.interrupt(0.1)
    fresh = p.open("task-2")
    p.push(fresh, speech(40, seed=4))
    [chunk] = read(p.due(0.1))
    assert chunk.artifact_id != cut.artifact_id and chunk.task_id == "task-2"
    assert chunk.append is False and chunk.pcm == speech(40, seed=4)


def test_an_interruption_stops_what_the_caller_hears_at_once() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(500))
    p.due(0.0)
    assert p.audible(0.05)
    p.interrupt(0.05)
    assert not p.audible(0.05)


def test_interrupt_reports_the_responses_waiting_behind_the_one_playing() -> None:
    p = player()
    playing, waiting = p.open("task-1"), p.open("task-2")
    p.push(playing, speech(500))
    p.push(waiting, speech(500, seed=2))
    p.due(0.0)
    assert p.interrupt(0.05) == [playing, waiting]


def test_interrupt_does_not_report_a_finished_or_a_dropped_response() -> None:
    p = player()
    finished = p.open("task-1")
    p.push(finished, speech(40))
    p.end(finished)
    read(p.due(0.0))
    dropped = p.open("task-2", dropped=lambda: True)
    p.push(dropped, speech(40))
    assert p.interrupt(0.01) == []


def test_only_a_response_dropped_before_any_of_its_audio_was_made_is_unheard() -> None:
    p = player()
    finished = p.open("finished")
    p.push(finished, speech(40))
    p.end(finished)
    read(p.due(0.0))
    playing, speculation, unmade = p.open("playing"), p.open("speculation", dropped=lambda: True), p.open("unmade")
    p.push(playing, speech(500))
    p.due(0.0)

    assert p.interrupt(0.05) == [playing]
    assert [(r.interrupted, r.unheard) for r in (finished, playing, speculation, unmade)] == [
        (False, False),
        (True, False),
        (False, False),
        (False, True),
    ]


def test_an_interruption_for_a_turn_keeps_the_reply_held_for_it_and_plays_it_once_released() -> None:
    p = player()
    playing = p.open("task-1")
    p.push(playing, speech(500))
    p.due(0.0)
    committed = False
    held = p.open("task-2", released=lambda: committed)
    p.push(held, speech(40, seed=5))

    assert p.interrupt(0.05, keep_held=True) == [playing]
    committed = True
    [chunk] = read(p.due(0.05))
    assert chunk.task_id == "task-2" and chunk.pcm == speech(40, seed=5)


def test_nothing_to_interrupt_reports_nothing() -> None:
    assert player().interrupt(0.0) == []


# -- one artifact per response


def test_the_first_chunk_of_a_response_has_append_false_and_the_rest_true() -> None:
    p = player()
    response = ended(p, 1000)
    connect = Connect()
    run(p, connect, start=0.0, until=2.0)
    assert [c.append for c in connect.chunks] == [False] + [True] * (len(connect.chunks) - 1)
    assert {(c.task_id, c.artifact_id) for c in connect.chunks} == {("task-1", response.artifact_id)}


def test_the_last_chunk_is_empty_and_follows_the_responses_audio_once_it_has_ended() -> None:
    p = player()
    response = p.open("task-1")
    p.push(response, speech(300))
    connect = Connect()
    run(p, connect, start=0.0, until=1.0)
    assert not any(c.last for c in connect.chunks)
    p.end(response)
    connect.receive(read(p.due(1.0)), 1.0)
    assert connect.chunks[-1] == Chunk("task-1", response.artifact_id, b"", True, True)


def test_the_last_chunk_waits_for_the_audio_still_queued() -> None:
    p = player()
    ended(p, 1000)
    first = read(p.due(0.0))
    assert first and not any(c.last for c in first)


def test_responses_are_spoken_in_order_one_artifact_after_the_other() -> None:
    p = player()
    first, second = p.open("task-1"), p.open("task-2")
    p.push(second, speech(100, seed=2))
    p.push(first, speech(100, seed=1))
    connect = Connect()
    run(p, connect, start=0.0, until=0.5)
    assert {c.task_id for c in connect.chunks} == {"task-1"}
    p.end(first)
    p.end(second)
    run(p, connect, start=0.5, until=1.0)
    assert [c.task_id for c in connect.chunks if c.last] == ["task-1", "task-2"]
    assert b"".join(c.pcm for c in connect.chunks) == speech(100, seed=1) + speech(100, seed=2)


def test_a_held_response_sends_nothing_until_it_is_released() -> None:
    committed = False
    p = player()
    held = p.open("task-1", released=lambda: committed)
    p.push(held, speech(100))
    p.end(held)
    assert p.due(0.0) == []
    committed = True
    chunks = read(p.due(0.5))
    assert b"".join(c.pcm for c in chunks) == speech(100) and chunks[-1].last


def test_a_held_response_holds_back_the_ones_after_it() -> None:
    p = player()
    p.push(p.open("task-1", released=lambda: False), speech(100))
    after = p.open("task-2")
    p.push(after, speech(100, seed=2))
    assert p.due(0.0) == []


def test_a_dropped_response_is_forgotten_and_the_next_one_plays() -> None:
    cancelled = False
    p = player()
    speculative = p.open("task-1", released=lambda: False, dropped=lambda: cancelled)
    p.push(speculative, speech(100))
    after = p.open("task-2")
    p.push(after, speech(40, seed=2))
    cancelled = True
    chunks = read(p.due(0.0))
    assert [(c.task_id, c.pcm) for c in chunks] == [("task-2", speech(40, seed=2))]


def test_a_response_waits_to_begin_while_the_caller_speaks_and_is_dropped_unheard_when_their_turn_ends() -> None:
    caller_speaking = True
    p = player()
    reply = p.open("task-1", waits=lambda: caller_speaking)
    p.push(reply, speech(100))
    p.end(reply)
    assert p.due(0.0) == [] and p.waiting_to_begin() and not p.audible(0.0)
    # Their turn ends: what waited is cut with nothing of it sent.
    (cut,) = p.interrupt(0.1, keep_held=True)
    assert cut is reply and cut.sent_bytes == 0 and not p.waiting_to_begin()


def test_a_response_that_waited_for_a_cough_begins_once_the_caller_is_quiet_and_then_waits_for_nobody() -> None:
    caller_speaking = True
    p = player()
    reply = p.open("task-1", waits=lambda: caller_speaking)
    p.push(reply, speech(300))
    assert p.due(0.0) == []
    caller_speaking = False
    first = read(p.due(0.4))
    assert first and first[0].task_id == "task-1"
    # Once begun it is the barge-in's to stop, not the wait's: the caller speaking again holds nothing back.
    caller_speaking = True
    p.end(reply)
    rest = read(p.due(0.7))
    assert b"".join(c.pcm for c in first + rest) == speech(300) and rest[-1].last


# -- what was heard, what is playing, chunk sizes


def test_heard_bytes_is_what_connect_has_played_of_a_response() -> None:
    p = player()
    response = p.open("task-1")
    assert p.heard_bytes(response, 0.0) == 0
    p.push(response, speech(100))
    p.due(10.0)
    assert p.heard_bytes(response, 10.0) == 0
    assert p.heard_bytes(response, 10.04) == pytest.approx(40 * BYTES_PER_MS, abs=2)
    assert p.heard_bytes(response, 11.0) == 100 * BYTES_PER_MS


def test_the_caller_hears_the_agent_until_connect_has_played_what_it_was_sent() -> None:
    p = player()
    ended(p, 100)
    p.due(5.0)
    assert p.audible(5.099) and not p.audible(5.1)
    assert p.busy(5.099) and not p.busy(5.1)


def test_a_response_not_yet_ended_keeps_the_player_busy() -> None:
    p = player()
    p.open("task-1")
    assert p.busy(0.0) and not p.audible(0.0)


def test_no_chunk_is_larger_than_the_chunk_size_and_each_is_whole_samples() -> None:
    p = player(lead_ms=2000, chunk_bytes=CHUNK + 1)
    response = p.open("task-1")
    for size in (2, 3000, 6, 798, 802, 1600, 10):
        p.push(response, speech(size // BYTES_PER_MS + 1)[:size])
    p.end(response)
    chunks = read(p.due(0.0))
    assert all(len(c.pcm) <= CHUNK and len(c.pcm) % 2 == 0 for c in chunks)
    assert sum(len(c.pcm) for c in chunks) == 2 + 3000 + 6 + 798 + 802 + 1600 + 10


def test_small_pushes_are_joined_into_one_chunk() -> None:
    p = player()
    response = p.open("task-1")
    for seed in range(5):
        p.push(response, speech(5, seed=seed))
    [chunk] = read(p.due(0.0))
    assert chunk.pcm == b"".join(speech(5, seed=seed) for seed in range(5))


def test_an_empty_push_sends_nothing() -> None:
    p = player()
    response: Response = p.open("task-1")
    p.push(response, b"")
    assert p.due(0.0) == []
