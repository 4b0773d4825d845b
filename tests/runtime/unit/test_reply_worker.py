"""The reply worker alone, on an in-memory reply store: how turns, eager ends and resumes become replies.

The responder and Sonic are stand-ins that answer at once, so each behaviour is shown in milliseconds; the same
behaviours against the local cloud's emulators are in ``tests/runtime/integration/test_converse.py``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any

import pytest

from tests.fixtures.clock import ManualClock
from voicebridge.config import Settings
from voicebridge.conversation import Action, Exchange
from voicebridge.converse.making import ReplyInProgress, ReplySettings, Report, Spoken
from voicebridge.converse.responder import FixedReply, Responder, ResponderError, TurnRequest
from voicebridge.converse.worker import ReplyWorker
from voicebridge.errors import StorageError, Superseded
from voicebridge.store.replies import REPLY_KEYS, ReplyStatus, ReplyStore, Segment
from voicebridge.store.turns import CUSTOMER, Turn

CONTACT = "c-1"


class MemoryReplies(ReplyStore):
    """The reply store's items in a dict, with the same conditions as the table's writes."""

    def __init__(self) -> None:
        super().__init__(None)  # type: ignore[arg-type]  # its items are in this object, not a table
        self.lock = threading.Lock()
        self.segments_by_key: dict[tuple[int, str, int], Segment] = {}
        self.current: ReplyStatus | None = None
        self.exchanges: list[Exchange] = []
        self.counted: dict[int, dict[str, Any]] = {}
        self.expecting_keys: str | None = None
        self.synthesizing: list[tuple[int, int]] = []
        """Each mark that Sonic began a reply's first sentence: its turn, and how many segments were stored then."""
        self.dues: list[tuple[str, int, int]] = []
        """Each mark of a reply's making (``begin``, ``expect``, ``synthesizing``): its turn, the due time said."""
        self.leads: list[int] = []
        """The call's least lead said with each first mark of a reply (``begin``, ``expect``) and each end."""
        self.held: dict[int, int] = {}
        """The first sentence of a turn's reply the caller did not hear, as ConverseFunction marks it."""
        self.held_reads: dict[int, int] = {}

    def begin(
        self, contact_id: str, turn: int, keys: str = REPLY_KEYS, *, due_at_ms: int = 0, lead_ms: int = 0
    ) -> None:
        with self.lock:
            self.dues.append(("begin", turn, due_at_ms))
            self.leads.append(lead_ms)
        self._put(ReplyStatus(turn, 0, done=False, keys=keys, due_at_ms=due_at_ms))

    def put_segment(self, segment: Segment, *, advance: bool = True, earlier: Segment | None = None) -> bool:
        with self.lock:
            key = (segment.turn, segment.keys, segment.index)
            fresh = key not in self.segments_by_key
            self.segments_by_key.setdefault(key, segment)
        if advance:
            self._put(ReplyStatus(segment.turn, segment.index + 1, done=False, keys=segment.keys, latest=segment))
        return fresh

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
        with self.lock:
            self.leads.append(lead_ms)
        self._put(ReplyStatus(turn, segments, done=True, action=action, attributes=attributes, keys=keys))

    def commit(self, status: ReplyStatus, contact_id: str) -> bool:
        with self.lock:
            if self.current is not None and self.current.turn >= status.turn:
                return False
            self.current = status
            return True

    def expect(self, contact_id: str, turn: int, keys: str, *, due_at_ms: int = 0, lead_ms: int = 0) -> None:
        with self.lock:
            self.dues.append(("expect", turn, due_at_ms))
            self.leads.append(lead_ms)
            if self.current is None or self.current.turn < turn:
                base = self.current or ReplyStatus(-1, 0, done=True)
                self.current = replace(base, expecting=turn)
                self.expecting_keys = keys

    def synthesizing_soon(self, contact_id: str, turn: int, *, due_at_ms: int = 0) -> Future[None]:
        with self.lock:
            self.dues.append(("synthesizing", turn, due_at_ms))
            # Said before the sentence's segment is stored, as Sonic begins it.
            self.synthesizing.append((turn, len(self.segments_by_key)))
        done: Future[None] = Future()
        done.set_result(None)
        return done

    def unexpect(self, contact_id: str, turn: int, keys: str) -> None:
        with self.lock:
            if self.current is not None and self.current.expecting == turn and self.expecting_keys == keys:
                self.current = replace(self.current, expecting=None)

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
        with self.lock:
            noted = self.counted.setdefault(turn, {})
            noted["Starts"] = starts
            if outcome:
                noted["Outcome"] = outcome
            for name, value in counts.items():
                noted[name] = noted.get(name, 0) + value

    def record_exchange(
        self, contact_id: str, exchange: Exchange, keep: int, *, before: Sequence[Exchange] | None = None
    ) -> list[Exchange]:
        with self.lock:
            known = list(self.exchanges) if before is None else list(before)
            self.exchanges = [*known, exchange][-keep:] if keep > 0 else []
            return list(self.exchanges)

    def held_at(self, contact_id: str, turn: int) -> int | None:
        with self.lock:
            self.held_reads[turn] = self.held_reads.get(turn, 0) + 1
            return self.held.get(turn)

    def history(self, contact_id: str) -> list[Exchange]:
        with self.lock:
            return list(self.exchanges)

    def status(self, contact_id: str) -> ReplyStatus | None:
        with self.lock:
            return self.current

    def segments(self, contact_id: str, turn: int, keys: str = REPLY_KEYS) -> Sequence[Segment]:
        with self.lock:
            found = [s for (t, k, _), s in self.segments_by_key.items() if t == turn and k == keys]
        return sorted(found, key=lambda s: s.index)

    def named(self, turn: int) -> list[str]:
        """The texts of the reply the status names for ``turn``: what a flow can play."""
        status = self.status(CONTACT)
        assert status is not None and status.turn == turn
        return [s.text for s in self.segments(CONTACT, turn, status.keys)][: status.segments]

    def _put(self, status: ReplyStatus) -> None:
        with self.lock:
            if self.current is None or self.current.turn <= status.turn:
                self.current = status


@dataclass
class Rules:
    """A responder free of side effects that answers from a table of words, and counts what it was asked."""

    answers: Mapping[str, tuple[str, Action]]
    speculative_safe: bool = True
    name: str = "rules"
    asked: list[str] = field(default_factory=list)
    failures: int = 0

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        self.asked.append(request.transcript)
        if self.failures:
            self.failures -= 1
            raise ResponderError("the model is throttled")
        for words, (text, action) in self.answers.items():
            if words in request.transcript.lower():
                return FixedReply(text, action)
        return FixedReply(f"You said {request.transcript}.")


def speak(text: str, deadline: float, cancel: threading.Event | None = None, *, reply: object = None) -> Spoken:
    return Spoken(f"https://bucket/{abs(hash(text))}.wav", 1.0, time.time())


RULES = {
    "balance": ("Your balance is two hundred dollars. Anything else?", Action.CONTINUE),
    "person": ("Of course, one moment.", Action.TRANSFER),
}


@pytest.fixture
def replies() -> MemoryReplies:
    return MemoryReplies()


@contextlib.contextmanager
def running(
    replies: MemoryReplies,
    responder: Responder,
    *,
    polled: bool = True,
    report: Report | None = None,
    on_finished: Callable[[ReplyInProgress], None] | None = None,
    **settings: Any,
) -> Iterator[ReplyWorker]:
    """A worker for the contact, closed after; ``polled`` False is the streaming transport's (no flow polls), which
    is told each reply's end (``on_finished``)."""
    made = ReplyWorker(
        CONTACT,
        responder=responder,
        speak=speak,
        replies=replies,
        settings=ReplySettings.of(Settings(**settings), polled=polled),
        report=report,
        on_finished=on_finished,
    )
    try:
        yield made
    finally:
        made.close(1.0)


def turn(seq: int, transcript: str) -> Turn:
    return Turn(CONTACT, CUSTOMER, seq, transcript, 0, 1000, int(time.time() * 1000), latency_ms=300)


def until(check: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "not within the time"
        time.sleep(0.002)


def spec_segments(replies: MemoryReplies, seq: int) -> list[Segment]:
    return [s for (t, k, _), s in replies.segments_by_key.items() if t == seq and k != REPLY_KEYS]


def test_a_turn_is_answered_in_segments_the_first_one_short(replies: MemoryReplies) -> None:
    with running(replies, Rules(RULES)) as made:
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert replies.named(0) == ["Your balance", "is two hundred dollars.", "Anything else?"]
    assert replies.current is not None and replies.current.done


def test_an_eager_end_confirmed_by_the_turn_is_committed_and_the_responder_asked_once(replies: MemoryReplies) -> None:
    rules = Rules(RULES)
    with running(replies, rules) as made:
        made.eager_end(0, "What is my balance")
        until(lambda: spec_segments(replies, 0))
        assert replies.current is None or replies.current.turn < 0
        made.submit(turn(0, "what is my balance?"))
        assert replies.current is not None and replies.current.keys.startswith("spec#")
        assert made.drain(2)
    assert rules.asked == ["What is my balance"]
    assert replies.named(0) == ["Your balance", "is two hundred dollars.", "Anything else?"]
    assert replies.counted[0]["Outcome"] == "hit"


def test_other_words_at_the_turn_end_cancel_the_speculation_and_the_turn_is_answered_anew(
    replies: MemoryReplies,
) -> None:
    rules = Rules(RULES)
    with running(replies, rules) as made:
        made.eager_end(0, "let me talk to")
        until(lambda: spec_segments(replies, 0))
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert rules.asked == ["let me talk to", "what is my balance"]
    assert replies.current is not None and replies.current.keys == REPLY_KEYS
    assert replies.named(0)[0] == "Your balance"
    assert replies.counted[0]["Outcome"] == "miss" and replies.counted[0]["Misses"] == 1


def test_a_tool_call_reached_speculatively_reaches_the_flow_only_after_the_turn_ends(replies: MemoryReplies) -> None:
    with running(replies, Rules(RULES)) as made:
        made.eager_end(0, "a person please")
        until(lambda: spec_segments(replies, 0))
        time.sleep(0.05)
        status = replies.current
        assert status is None or (status.turn < 0 and status.action is Action.CONTINUE)
        made.submit(turn(0, "A person, please."))
        assert made.drain(2)
    assert replies.current is not None and (replies.current.done, replies.current.action) == (True, Action.TRANSFER)


def test_a_resume_cancels_the_speculation(replies: MemoryReplies) -> None:
    rules = Rules(RULES)
    with running(replies, rules) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: spec_segments(replies, 0))
        made.turn_resumed(0)
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert len(rules.asked) == 2 and replies.current is not None and replies.current.keys == REPLY_KEYS


def test_sonic_beginning_each_replys_first_sentence_is_marked_before_it_is_stored(replies: MemoryReplies) -> None:
    with running(replies, Rules(RULES)) as made:
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
        made.submit(turn(1, "a person please"))
        assert made.drain(2)
    assert replies.synthesizing == [(0, 0), (1, 3)]


@dataclass
class Timed:
    """A responder and a Sonic that take their time on a clock the test holds: 300 ms to the answer, 100 ms a
    sentence; ``asked_ms`` is when each request came (epoch ms)."""

    clock: ManualClock
    asked_ms: list[float] = field(default_factory=list)
    speculative_safe: bool = True
    name: str = "timed"

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        self.asked_ms.append(self.clock.time() * 1000)
        self.clock.advance(0.3)
        return FixedReply("Your balance is two hundred dollars.")

    def speak(
        self, text: str, deadline: float, cancel: threading.Event | None = None, *, reply: object = None
    ) -> Spoken:
        self.clock.advance(0.1)
        return Spoken(f"https://bucket/{abs(hash(text))}.wav", 100.0, self.clock.time())


@contextlib.contextmanager
def timed(replies: MemoryReplies) -> Iterator[tuple[ReplyWorker, Timed]]:
    steps = Timed(ManualClock())
    made = ReplyWorker(
        CONTACT,
        responder=steps,
        speak=steps.speak,
        replies=replies,
        settings=ReplySettings.of(Settings()),
        clock=steps.clock,
    )
    try:
        yield made, steps
    finally:
        made.close(1.0)


def test_the_calls_first_reply_says_no_due_time_for_its_first_segment(replies: MemoryReplies) -> None:
    with timed(replies) as (made, _):
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert replies.dues == [("begin", 0, 0), ("synthesizing", 0, 0)]


def test_a_later_reply_says_its_first_segment_is_due_after_nine_tenths_of_the_calls_quickest(
    replies: MemoryReplies,
) -> None:
    with timed(replies) as (made, steps):
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
        made.submit(turn(1, "what is my balance"))
        assert made.drain(2)
    asked = round(steps.asked_ms[1])
    # Not before 9/10 of the responder's 300 ms and Sonic's 100 ms once asked; 9/10 of Sonic's once it begins.
    assert replies.dues[2:] == [("begin", 1, asked + 360), ("synthesizing", 1, asked + 300 + 90)]


def test_each_reply_says_how_long_a_first_segment_comes_after_its_reply_begins_at_the_least_on_the_call(
    replies: MemoryReplies,
) -> None:
    with timed(replies) as (made, _):
        for seq in range(2):
            made.submit(turn(seq, "what is my balance"))
            assert made.drain(2)
    # Begun, ended (the call's first reply measured it: said at once), begun, ended. A reply's beginning is said once
    # the responder has answered: its segment is stored Sonic's 100 ms after that.
    assert replies.leads == [0, 100, 100, 100]


def test_a_speculative_replys_lead_counts_from_the_eager_end_that_said_it_is_being_made(replies: MemoryReplies) -> None:
    with timed(replies) as (made, _):
        made.eager_end(0, "what is my balance")
        until(lambda: spec_segments(replies, 0))
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    # Said at the eager end, as the responder was asked: its 300 ms and Sonic's 100 ms later, the segment was stored.
    assert replies.leads == [0, 400]


def test_an_eager_end_after_the_calls_first_reply_says_when_its_reply_is_due(replies: MemoryReplies) -> None:
    with timed(replies) as (made, steps):
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
        made.eager_end(1, "what is my balance")
        until(lambda: len(replies.dues) > 3)
        made.turn_resumed(1)
    assert replies.dues[2] == ("expect", 1, round(steps.asked_ms[1]) + 360)


def test_a_reply_nobody_polls_for_marks_nothing_for_a_poller(replies: MemoryReplies) -> None:
    with running(replies, Rules(RULES), polled=False) as made:
        made.eager_end(0, "what is my balance")
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert replies.synthesizing == [] and replies.expecting_keys is None


def test_a_resume_takes_the_eager_end_back_so_the_flow_polls_slowly_again(replies: MemoryReplies) -> None:
    with running(replies, Rules(RULES)) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: replies.current is not None and replies.current.expecting == 0)
        made.turn_resumed(0)
        until(lambda: replies.current is not None and replies.current.expecting is None)


def test_no_more_speculations_than_the_cap_start_for_one_turn(replies: MemoryReplies) -> None:
    rules = Rules(RULES)
    with running(replies, rules, speculative_max_per_turn=2) as made:
        for words in ("what", "what is", "what is my", "what is my balance"):
            made.eager_end(0, words)
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert replies.counted[0]["Starts"] == 2
    # The two speculations run on threads of their own, and one cancelled by newer words may never get to ask: what
    # is certain is that no third speculation asked ("what is my"), and the turn was answered on its own words.
    assert set(rules.asked) <= {"what", "what is", "what is my balance"} and "what is my balance" in rules.asked


def test_a_speculation_the_responder_fails_leaves_the_turn_to_be_answered_at_its_end(replies: MemoryReplies) -> None:
    rules = Rules(RULES, failures=1)
    with running(replies, rules) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: len(rules.asked) == 1)
        time.sleep(0.02)
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert replies.named(0)[0] == "Your balance"


@dataclass
class FailsWhenTold:
    """A responder whose first request fails when the test says so (a throttled model's last retry), and whose later
    ones the rules answer."""

    rules: Rules
    fail: threading.Event = field(default_factory=threading.Event)
    speculative_safe: bool = True
    name: str = "fails-when-told"

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        if not self.rules.asked:
            self.rules.asked.append(request.transcript)
            assert self.fail.wait(5.0)
            raise ResponderError("the model is throttled")
        return self.rules.respond(request, deadline=deadline)


def test_a_speculation_that_fails_as_its_turn_ends_leaves_the_turn_answered_anew(replies: MemoryReplies) -> None:
    # Ink ends the turn on the speculation's words; between that check and the commit, the responder fails it.
    responder = FailsWhenTold(Rules(RULES))

    class FailingAsTheTurnEnds(ReplyWorker):
        def _interrupt_all_but(self, reply: ReplyInProgress | None) -> None:
            if reply is not None and not responder.fail.is_set():
                responder.fail.set()
                until(lambda: reply.failed)
            super()._interrupt_all_but(reply)

    made = FailingAsTheTurnEnds(
        CONTACT, responder=responder, speak=speak, replies=replies, settings=ReplySettings.of(Settings())
    )
    try:
        made.eager_end(0, "what is my balance")
        until(lambda: len(responder.rules.asked) == 1)
        made.turn_ended(turn(0, "what is my balance"))
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    finally:
        made.close(1.0)
    assert responder.rules.asked == ["what is my balance"] * 2
    assert replies.named(0)[0] == "Your balance"
    assert replies.current is not None and replies.current.done and replies.current.keys == REPLY_KEYS


def test_a_speculation_that_fails_while_its_commit_is_written_says_the_apology(replies: MemoryReplies) -> None:
    # The commit comes first: the reply is the turn's, and its failure is answered as any committed reply's is.
    responder = FailsWhenTold(Rules(RULES))

    class FailingDuringTheCommit(MemoryReplies):
        def commit(self, status: ReplyStatus, contact_id: str) -> bool:
            responder.fail.set()
            time.sleep(0.2)  # time enough for the failure to land now, were nothing keeping it from the commit
            return super().commit(status, contact_id)

    replies = FailingDuringTheCommit()
    with running(replies, responder) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: len(responder.rules.asked) == 1)
        made.turn_ended(turn(0, "what is my balance"))
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert responder.rules.asked == ["what is my balance"]
    assert replies.current is not None and replies.current.done
    assert replies.named(0) == [ReplySettings.of(Settings()).apology_text]


def test_a_speculation_whose_turn_ends_as_its_wait_runs_out_is_answered(replies: MemoryReplies) -> None:
    # The speculation waits, after its first segment, at most the responder's time for its turn to end; the turn
    # ends as that runs out, its words confirm the speculation, and the commit is being written when the wait ends.
    waited: list[ReplyInProgress] = []

    class CommittingAsTheWaitEnds(MemoryReplies):
        def commit(self, status: ReplyStatus, contact_id: str) -> bool:
            reply = waited[0]
            with contextlib.suppress(AssertionError):
                until(reply.cancel.is_set, timeout_s=1.0)  # the wait's end, were nothing keeping it from the commit
            return super().commit(status, contact_id)

    replies = CommittingAsTheWaitEnds()
    with running(replies, Rules(RULES), responder_timeout_ms=500) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: spec_segments(replies, 0))
        speculation = made._speculation
        assert speculation is not None
        waited.append(speculation)
        made.turn_ended(turn(0, "what is my balance"))
        made.submit(turn(0, "what is my balance"))
        assert made.drain(3)
    assert replies.current is not None and replies.current.done
    assert replies.named(0) == ["Your balance", "is two hundred dollars.", "Anything else?"]


def test_a_speculation_whose_turn_ended_while_an_earlier_reply_outlasted_its_wait_is_answered(
    replies: MemoryReplies,
) -> None:
    # A speculation waits for the reply to the turn before (a throttled model) at most the responder's time; its own
    # turn ends meanwhile and names it, and then the wait runs out.
    slow = threading.Event()

    @dataclass
    class SlowFirst:
        rules: Rules
        speculative_safe: bool = True
        name: str = "slow-first"

        def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
            if request.turn_index == 0:
                slow.wait(5.0)
            return self.rules.respond(request, deadline=deadline)

    responder = SlowFirst(Rules(RULES))
    with running(replies, responder, responder_timeout_ms=500) as made:
        made.submit(turn(0, "hello there"))
        until(lambda: responder.rules.asked == [] and made.making)
        made.eager_end(1, "what is my balance")
        made.turn_ended(turn(1, "what is my balance"))
        made.submit(turn(1, "what is my balance"))
        time.sleep(0.8)  # the speculation's wait for the earlier reply runs out
        slow.set()
        assert made.drain(3)
    assert replies.current is not None and replies.current.turn == 1 and replies.current.done
    assert replies.named(1) == ["Your balance", "is two hundred dollars.", "Anything else?"]


def test_a_speculation_whose_naming_the_table_refuses_leaves_the_turn_answered_anew(replies: MemoryReplies) -> None:
    # The commit's write fails (the table throttled past its retries) as Ink ends the turn: nothing is raised to the
    # transcriber, which stores the turn next, and the turn is answered as if nothing had been tried.
    class RefusingTheCommit(MemoryReplies):
        def commit(self, status: ReplyStatus, contact_id: str) -> bool:
            raise StorageError("the turn table refused the write")

    replies = RefusingTheCommit()
    rules = Rules(RULES)
    with running(replies, rules) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: spec_segments(replies, 0))
        made.turn_ended(turn(0, "what is my balance"))
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert rules.asked == ["what is my balance"] * 2
    assert replies.current is not None and replies.current.done and replies.current.keys == REPLY_KEYS
    assert replies.named(0)[0] == "Your balance"


def test_a_responder_that_may_not_speculate_is_asked_only_when_the_turn_ends(replies: MemoryReplies) -> None:
    rules = Rules(RULES, speculative_safe=False)
    with running(replies, rules) as made:
        made.eager_end(0, "what is my balance")
        time.sleep(0.05)
        assert rules.asked == []
        made.submit(turn(0, "what is my balance"))
        assert made.drain(2)
    assert rules.asked == ["what is my balance"] and not spec_segments(replies, 0)


def test_a_later_turn_stops_the_reply_being_made_and_is_answered(replies: MemoryReplies) -> None:
    slow = threading.Event()

    def slow_speak(
        text: str, deadline: float, cancel: threading.Event | None = None, *, reply: object = None
    ) -> Spoken:
        slow.wait(0.05)
        return speak(text, deadline, cancel)

    made = ReplyWorker(
        CONTACT, responder=Rules(RULES), speak=slow_speak, replies=replies, settings=ReplySettings.of(Settings())
    )
    try:
        made.submit(turn(0, "what is my balance"))
        until(lambda: replies.current is not None and replies.current.segments >= 1)
        made.submit(turn(1, "a person please"))
        assert made.drain(3)
    finally:
        made.close(1.0)
    assert replies.current is not None and (replies.current.turn, replies.current.action) == (1, Action.TRANSFER)
    assert len([s for (t, k, _), s in replies.segments_by_key.items() if t == 0]) < 3


def test_a_speculation_confirmed_as_the_turn_ends_is_named_before_the_turn_is_stored(replies: MemoryReplies) -> None:
    rules = Rules(RULES)
    with running(replies, rules) as made:
        made.eager_end(0, "what is my balance")
        until(lambda: spec_segments(replies, 0))
        ended = turn(0, "What is my balance?")
        made.turn_ended(ended)
        assert replies.current is not None and replies.current.turn == 0 and replies.current.keys.startswith("spec#")
        # Once stored, the turn has nothing left to ask for.
        made.submit(ended)
        assert made.drain(2)
    assert rules.asked == ["what is my balance"]
    assert replies.named(0) == ["Your balance", "is two hundred dollars.", "Anything else?"]


def test_a_turn_that_ends_with_other_words_waits_to_be_stored_before_it_is_answered(replies: MemoryReplies) -> None:
    rules = Rules(RULES)
    with running(replies, rules) as made:
        made.eager_end(0, "what is my")
        until(lambda: spec_segments(replies, 0))
        ended = turn(0, "what is my balance")
        made.turn_ended(ended)
        assert rules.asked == ["what is my"]
        made.submit(ended)
        assert made.drain(2)
    assert rules.asked == ["what is my", "what is my balance"]


@dataclass
class Remembering:
    """A responder free of side effects that remembers the history each request carried; the first request waits
    for ``release`` (a slow model, or one being retried)."""

    release: threading.Event = field(default_factory=threading.Event)
    speculative_safe: bool = True
    name: str = "remembering"
    histories: dict[str, list[str]] = field(default_factory=dict)

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        if not self.histories:
            self.release.wait(5)
        self.histories[request.transcript] = [exchange.caller for exchange in request.history]
        return FixedReply(f"You said {request.transcript}.")


@pytest.mark.parametrize(
    ("eager_ends", "misses"),
    [(["and my savings"], 0), (["and my", "and my savings"], 1)],
    ids=["confirmed", "words-changed-while-waiting"],
)
def test_a_speculation_begun_while_an_earlier_reply_is_made_is_asked_with_that_turn_in_its_history(
    replies: MemoryReplies, eager_ends: list[str], misses: int
) -> None:
    # The first reply is slow; the caller says more, and Ink's eager ends come while the first is still being made.
    responder = Remembering()
    with running(replies, responder) as made:
        made.submit(turn(0, "what is my balance"))
        until(lambda: made.making)
        for words in eager_ends:
            made.eager_end(1, words)
        time.sleep(0.05)
        responder.release.set()
        made.submit(turn(1, "and my savings"))
        assert made.drain(2)
    # Without the first turn the model is asked "and my savings" out of the blue; a speculation cancelled while it
    # waited was never asked at all.
    assert responder.histories == {"what is my balance": [], "and my savings": ["what is my balance"]}
    assert replies.counted[1]["Outcome"] == "hit" and replies.counted[1].get("Misses", 0) == misses


def while_a_committed_speculation_is_made(replies: MemoryReplies, *later: str) -> dict[str, list[str]]:
    """The first turn's reply was started at its eager end and committed at its end; the model is slow (or throttled
    and retried), and the caller says each of ``later`` as a turn of its own before it has said anything. What each
    request carried in its history, by its words."""
    responder = Remembering()
    with running(replies, responder) as made:
        made.eager_end(0, "what is my balance")
        made.submit(turn(0, "what is my balance"))
        assert made.making
        for seq, words in enumerate(later, start=1):
            time.sleep(0.05)
            made.submit(turn(seq, words))
        time.sleep(0.05)
        responder.release.set()
        assert made.drain(2)
    return responder.histories


def test_a_turn_ended_while_a_committed_speculation_is_still_made_is_asked_with_that_turn_in_its_history(
    replies: MemoryReplies,
) -> None:
    # Before, the second was asked at once, on its own thread's history: "and my savings" out of the blue.
    assert while_a_committed_speculation_is_made(replies, "and my savings") == {
        "what is my balance": [],
        "and my savings": ["what is my balance"],
    }


def test_turns_that_end_while_a_committed_speculation_is_still_made_are_answered_as_one_after_it(
    replies: MemoryReplies,
) -> None:
    assert while_a_committed_speculation_is_made(replies, "and my savings", "and my checking") == {
        "what is my balance": [],
        "and my savings and my checking": ["what is my balance"],
    }


@pytest.mark.parametrize("polled", [True, False])
def test_what_the_caller_heard_of_a_flows_reply_reaches_the_history_once_marked_looked_for_twice_at_most(
    replies: MemoryReplies, polled: bool
) -> None:
    with running(replies, Rules(RULES), polled=polled) as made:
        for seq, said in enumerate(("what is my balance", "hello", "thanks", "ok", "right")):
            made.submit(turn(seq, said))
            assert made.drain(3)
            if seq == 1:
                # The flow left the balance reply after its first segment, for turn 1's (marked after that reply ended).
                replies.held[0] = 1
    history = replies.history(CONTACT)
    assert len(history) == 5 and not [e for e in history[1:] if "interrupted" in e.agent]
    if polled:
        assert history[0].agent == (
            "Your balance [interrupted by the caller; not said: is two hundred dollars. Anything else?]"
        )
        # Each reply is looked for at the next two replies' ends, no more; the last one's at none yet.
        assert replies.held_reads == {0: 2, 1: 2, 2: 2, 3: 1}
    else:
        # The streaming transport says what was heard itself, and nothing is read.
        assert history[0].agent == "Your balance is two hundred dollars. Anything else?"
        assert replies.held_reads == {}


@dataclass
class Recalling(Rules):
    """The rules, keeping the agent's side of the history each turn's reply was asked with."""

    agent_said: dict[str, list[str]] = field(default_factory=dict)

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        self.agent_said[request.transcript] = [exchange.agent for exchange in request.history]
        return super().respond(request, deadline=deadline)


BALANCE_CUT = "Your balance [interrupted by the caller; not said: is two hundred dollars. Anything else?]"


def test_a_turn_begun_over_a_flows_reply_is_answered_with_that_reply_as_far_as_the_caller_heard_it(
    replies: MemoryReplies,
) -> None:
    responder = Recalling(RULES)
    asked: list[tuple[int, int, int]] = []

    def heard_of(earlier: ReplyInProgress, reply: ReplyInProgress) -> int | None:
        # The agent's track: the caller began "hello" over the balance reply's first prompt.
        asked.append((earlier.seq, reply.seq, len(earlier.made)))
        return 1 if reply.seq == 1 else None

    with running(replies, responder) as made:
        made.hear_from(heard_of)
        made.submit(turn(0, "what is my balance"))
        assert made.drain(3)
        made.submit(turn(1, "hello"))
        assert made.drain(3)
        assert replies.history(CONTACT)[0].agent == BALANCE_CUT
        # Then ConverseFunction's mark: the flow left the reply after its second prompt, which the track took for
        # unheard (the hold came late). The mark stands.
        replies.held[0] = 2
        made.submit(turn(2, "thanks"))
        assert made.drain(3)
    assert responder.agent_said["hello"] == [BALANCE_CUT]
    assert asked == [(0, 1, 3), (1, 2, 1)]
    assert replies.history(CONTACT)[0].agent == (
        "Your balance is two hundred dollars. [interrupted by the caller; not said: Anything else?]"
    )


def test_a_speculation_on_a_voice_over_a_reply_is_asked_as_heard_but_a_backchannel_changes_nothing(
    replies: MemoryReplies,
) -> None:
    responder = Recalling(RULES)
    with running(replies, responder) as made:
        made.hear_from(lambda earlier, reply: 1 if reply.seq == 1 else None)
        made.submit(turn(0, "what is my balance"))
        assert made.drain(3)
        made.eager_end(1, "right")
        until(lambda: "right" in responder.agent_said)
        # "Right." over the reply, which went on: never answered, so the reply was heard whole.
        made.turn_ended(replace(turn(1, "right"), backchannel=True))
        made.submit(turn(2, "thanks"))
        assert made.drain(3)
    assert responder.agent_said["right"] == [BALANCE_CUT]
    assert responder.agent_said["thanks"] == ["Your balance is two hundred dollars. Anything else?"]
    assert replies.history(CONTACT)[0].agent == "Your balance is two hundred dollars. Anything else?"


class Broken:
    """A responder with a slip in it: it fails on something no service's error explains."""

    speculative_safe = True
    name = "broken"

    def respond(self, request: TurnRequest, *, deadline: float) -> FixedReply:
        raise RuntimeError("a slip")


@pytest.mark.parametrize(("polled", "alarmed"), [(True, "ListenErrors"), (False, "StreamingErrors")])
def test_a_reply_that_fails_on_a_slip_is_counted_in_the_transports_errors(
    replies: MemoryReplies, polled: bool, alarmed: str
) -> None:
    counted: list[tuple[str, float]] = []
    with running(
        replies, Broken(), polled=polled, report=lambda name, unit, value: counted.append((name, value))
    ) as made:
        made.submit(turn(0, "what is my balance"))
        assert made.drain(3)
    assert ("ReplyErrors", 1) in counted and (alarmed, 1) in counted


@dataclass
class SlipsAfter:
    """A responder whose answer's text gives its first sentence, then fails on a slip in the middle of the second."""

    speculative_safe = True
    name = "slips"

    def respond(self, request: TurnRequest, *, deadline: float) -> SlippingReply:
        return SlippingReply()


class SlippingReply(FixedReply):
    def __init__(self) -> None:
        super().__init__("Your balance is two hundred dollars.")

    def text(self) -> Iterator[str]:
        yield "Your balance is two hundred dollars. And "
        raise RuntimeError("a slip")


class RefusesFinish(MemoryReplies):
    """A reply store whose table refuses the record of a reply's end (throttled)."""

    def finish(self, *args: Any, **kwargs: Any) -> None:
        raise StorageError("turn table throttled")


APOLOGY = Settings().apology_text


@pytest.mark.parametrize("polled", [True, False])
@pytest.mark.parametrize(
    ("store", "responder", "said", "recorded"),
    [
        (MemoryReplies, SlipsAfter(), ["Your balance", "is two hundred dollars."], True),
        (RefusesFinish, Rules(RULES), ["Your balance", "is two hundred dollars.", "Anything else?"], False),
        (MemoryReplies, Broken(), [APOLOGY], True),
    ],
)
def test_a_reply_that_fails_on_the_way_ends_with_what_it_said_or_the_apology_told_over_to_the_transport_once(
    store: type[MemoryReplies], responder: Responder, said: list[str], recorded: bool, polled: bool
) -> None:
    told: list[tuple[int, list[str]]] = []
    replies = store()
    with running(replies, responder, polled=polled, on_finished=lambda r: told.append((r.seq, list(r.spoken)))) as made:
        made.submit(turn(0, "what is my balance"))
        assert made.drain(3)
        made.submit(turn(1, "what is my balance"))
        assert made.drain(3)
    # Before, the transport never heard of it (on the streaming path the reply's response never ended, and every
    # later reply queued behind it unheard), and a reply with nothing said left the caller in silence.
    assert told == [(0, said), (1, said)]
    assert replies.named(1) == said
    # Recorded finished where the table takes it: the flow goes on listening rather than wait on it.
    assert replies.current is not None and replies.current.done is recorded


class TakenOver(MemoryReplies):
    """A reply store whose contact another consumer took over: every segment refused."""

    def put_segment(self, segment: Segment, *, advance: bool = True, earlier: Segment | None = None) -> bool:
        raise Superseded("owned by a newer consumer")


def test_a_reply_refused_because_another_consumer_took_the_contact_over_says_nothing_more_and_ends() -> None:
    told: list[list[str]] = []
    replies = TakenOver()
    with running(replies, Rules(RULES), polled=False, on_finished=lambda r: told.append(list(r.spoken))) as made:
        made.submit(turn(0, "what is my balance"))
        assert made.drain(3)
    assert told == [[]] and replies.segments_by_key == {}
