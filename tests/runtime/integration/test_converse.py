"""The agent on the line: a caller's turn answered sentence by sentence, and the flow handed each sentence to play.

Against the local cloud: the reply worker calls the responder (the Bedrock emulator, or a rules file), speaks each
sentence with the Sonic emulator into the local bucket and stores it in the turn table; ConverseFunction's domain
hands the flow what to play next.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.waiting import eventually
from voicebridge import container
from voicebridge.conversation import Action
from voicebridge.converse.worker import ReplyWorker
from voicebridge.ink.transcriber import MetricSink
from voicebridge.polls.next_segment import Next, next_to_play
from voicebridge.store.replies import Segment
from voicebridge.store.turns import CUSTOMER, Turn
from voicebridge_dev.local.bedrock import Fault as BedrockFault
from voicebridge_dev.local.bedrock import FaultKind as BedrockFaultKind
from voicebridge_dev.local.cloud import LocalCloud
from voicebridge_dev.local.sonic import Fault as SonicFault
from voicebridge_dev.local.sonic import FaultKind as SonicFaultKind
from voicebridge_dev.template import local_physical_id

RULES = {
    "rules": [
        {
            "match": ["balance"],
            "reply": "Your balance is two hundred dollars. Your last payment was on Monday. Anything else?",
            "attributes": {"Intent": "Balance"},
        },
        {"match": ["person"], "reply": "Let me connect you with a colleague.", "action": "Transfer"},
    ],
    "fallback": {"reply": "You said: {transcript}"},
}
DISPUTE = "I want to dispute a charge I don't recognise"


@pytest.fixture
def converse(cloud_env: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalCloud]:
    """The product's settings for the reply path, pointed at the local cloud; emulator faults cleared after."""
    monkeypatch.setenv("SONIC_ENDPOINT_NAME", cloud_env.endpoint_name)
    monkeypatch.setenv("PROMPT_BUCKET", local_physical_id("PromptBucket"))
    monkeypatch.setenv("TURN_TABLE", local_physical_id("TurnTable"))
    monkeypatch.setenv("RESPONDER_RULES", json.dumps(RULES))
    container.reset()
    saved = dict(os.environ)
    yield cloud_env
    # What a test's worker() set stays with that test.
    os.environ.clear()
    os.environ.update(saved)
    cloud_env.bedrock.configure({"time_to_first_token_ms": 300, "tokens_per_second": 60})
    cloud_env.bedrock.clear_faults()
    cloud_env.sonic.faults.clear()
    container.reset()


def worker(responder: str = "scripted", **settings: str) -> tuple[ReplyWorker, str]:
    """A reply worker for a new contact, as TranscribeStreamFunction builds it."""
    os.environ["RESPONDER"] = responder
    for name, value in settings.items():
        os.environ[name] = value
    container.reset()
    contact_id = str(uuid.uuid4())
    container.turn_store().claim(contact_id, "arn:stream", "100", [CUSTOMER], converse=True)
    return successor(contact_id), contact_id


def successor(contact_id: str) -> ReplyWorker:
    """The contact's reply worker as its consumer's next invocation builds it."""
    checkpoint = container.turn_store().load(contact_id)
    assert checkpoint is not None
    return container.reply_worker(checkpoint, MetricSink(threading.Lock()))


def turn(contact_id: str, seq: int, transcript: str) -> Turn:
    now = int(time.time() * 1000)
    return Turn(contact_id, CUSTOMER, seq, transcript, 0, 1000, now, latency_ms=300)


def answer(contact_id: str, seq: int) -> list[Segment]:
    """The segments of the reply named as ``seq``'s: made after the turn ended, or a committed speculation's."""
    from voicebridge.store.replies import REPLY_KEYS

    keys = str(speculation(contact_id, seq).get("Keys") or REPLY_KEYS)
    return list(container.reply_store().segments(contact_id, seq, keys))


def play(contact_id: str, after_turn: int = -1, after_segment: int = -1, wait_ms: int = 5000) -> Next:
    return next_to_play(
        contact_id,
        {"TurnIndex": str(after_turn), "Segment": str(after_segment), "MaxWaitMs": str(wait_ms)},
        replies=container.reply_store(),
        turns=container.turn_store(),
        max_wait_ms=7000,
        fast_poll_ms=20,
        slow_poll_ms=100,
        remaining_ms=None,
    )


def whole_reply(contact_id: str, seq: int) -> list[Next]:
    """Play a reply as a flow does: ask for the next segment until one says there is no more."""
    played, segment = [], -1
    while True:
        found = play(contact_id, after_turn=seq if segment >= 0 else seq - 1, after_segment=segment)
        assert found.segment is not None, found
        played.append(found)
        segment = found.segment.index
        if not found.more:
            return played


def test_a_turn_is_answered_sentence_by_sentence_and_each_sentence_is_a_prompt(converse: LocalCloud) -> None:
    replies, contact_id = worker()
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert [p.segment.text for p in played if p.segment] == [
        "Your balance",
        "is two hundred dollars.",
        "Your last payment was on Monday.",
        "Anything else?",
    ]
    assert all(p.segment and p.segment.prompt_uri and p.segment.prompt_uri.endswith(".wav") for p in played)
    assert (played[-1].action, dict(played[-1].attributes)) == (Action.CONTINUE, {"Intent": "Balance"})
    first = played[0].segment
    assert first is not None and {"TurnEndedAt", "CallerStoppedAt", "ResponderMs", "SynthesisMs"} <= set(first.timings)
    assert played[0].segment is not None and played[0].segment.transcript == "what is my balance"


def test_the_first_sentence_is_ready_while_the_model_is_still_writing_the_rest(converse: LocalCloud) -> None:
    converse.bedrock.configure({"time_to_first_token_ms": 50, "tokens_per_second": 20})
    replies, contact_id = worker("bedrock")
    replies.submit(turn(contact_id, 0, DISPUTE))
    first = play(contact_id)
    assert first.segment is not None and first.segment.index == 0 and first.more
    # The reply's last words are still being written when its first sentence is already playable.
    assert not replies.drain(0)
    assert replies.drain(30)
    played = whole_reply(contact_id, 0)
    assert len(played) >= 4 and played[-1].action is Action.CONTINUE


def test_a_transfer_reaches_the_flow_with_the_replys_last_sentence(converse: LocalCloud) -> None:
    replies, contact_id = worker("bedrock")
    replies.submit(turn(contact_id, 0, "let me talk to a person please"))
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert played[-1].action is Action.TRANSFER and played[-1].more is False


def test_the_flow_learns_the_action_when_the_reply_ended_after_a_sentence_said_more(converse: LocalCloud) -> None:
    _, contact_id = worker("bedrock")
    store = container.reply_store()
    # The first sentence went out while the reply was being written, so it said More=true.
    store.begin(contact_id, 0)

    store.put_segment(Segment(contact_id, 0, 0, "Goodbye.", "https://bucket/prompt.wav"))
    store.finish(contact_id, 0, 1, Action.HANGUP, {})
    found = play(contact_id, after_turn=0, after_segment=0)
    assert (found.segment, found.action) == (None, Action.HANGUP)


def test_after_a_reply_the_flow_waits_for_the_callers_next_turn(converse: LocalCloud) -> None:
    replies, contact_id = worker()
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    last = whole_reply(contact_id, 0)[-1]
    assert last.segment is not None
    assert play(contact_id, after_turn=0, after_segment=last.segment.index, wait_ms=300).timed_out
    threading.Timer(0.3, lambda: replies.submit(turn(contact_id, 1, "thank you"))).start()
    found = play(contact_id, after_turn=0, after_segment=last.segment.index)
    assert found.segment is not None and (found.segment.turn, found.segment.text) == (1, "You said:")


def test_a_newer_turn_interrupts_the_reply_being_played(converse: LocalCloud) -> None:
    converse.bedrock.configure({"time_to_first_token_ms": 50, "tokens_per_second": 15})
    replies, contact_id = worker("bedrock")
    replies.submit(turn(contact_id, 0, DISPUTE))
    first = play(contact_id)
    assert first.segment is not None and first.segment.turn == 0
    # The caller speaks again while the reply is still being made: it stops, and the new turn is answered.
    replies.submit(turn(contact_id, 1, "what is my balance"))
    assert replies.drain(30)
    found = play(contact_id, after_turn=0, after_segment=0)
    assert found.segment is not None and (found.segment.turn, found.segment.index) == (1, 0)
    status = container.reply_store().status(contact_id)
    assert status is not None and status.turn == 1 and status.done


def test_a_reply_the_flow_leaves_for_a_newer_turns_is_kept_as_heard_only_so_far(converse: LocalCloud) -> None:
    replies, contact_id = worker()
    store = container.reply_store()
    for seq, said in enumerate(("what is my balance", "and my savings")):
        assert container.turn_store().put_turn(turn(contact_id, seq, said))
        replies.submit(turn(contact_id, seq, said))
        assert replies.drain(20)
    # The flow played the balance reply's first segment; the caller had spoken again meanwhile (no hold: their turn
    # ended while it played), so it leaves the reply for the newer one.
    assert play(contact_id).segment is not None
    found = play(contact_id, after_turn=0, after_segment=0)
    assert found.segment is not None and (found.segment.turn, found.segment.index) == (1, 0)
    assert held_at(contact_id, 0) == 1
    # A reply played to its end leaves no mark.
    played = whole_reply(contact_id, 1)
    assert container.turn_store().put_turn(turn(contact_id, 2, "what is my balance"))
    replies.submit(turn(contact_id, 2, "what is my balance"))
    assert replies.drain(20)
    assert play(contact_id, after_turn=1, after_segment=played[-1].segment.index).segment is not None  # type: ignore[union-attr]
    assert held_at(contact_id, 1) is None
    # The history the responder is given from here on says what the caller heard of the first reply.
    history = store.history(contact_id)
    assert history[0].agent == (
        "Your balance [interrupted by the caller; not said: is two hundred dollars. Your last payment was on Monday. "
        "Anything else?]"
    )
    assert "interrupted" not in history[1].agent


def test_a_failing_responder_says_the_apology_and_the_conversation_continues(converse: LocalCloud) -> None:
    converse.bedrock.inject(BedrockFault(BedrockFaultKind.THROTTLE, count=5))
    replies, contact_id = worker("bedrock", APOLOGY_TEXT="Sorry, could you say that again?")
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert [p.segment.text for p in played if p.segment] == ["Sorry, could you say that again?"]
    assert played[-1].action is Action.CONTINUE


def test_a_sentence_sonic_cannot_speak_is_left_to_connects_voice(converse: LocalCloud) -> None:
    converse.sonic.faults.push(SonicFault(SonicFaultKind.THROTTLE, count=100))
    replies, contact_id = worker(SONIC_DEADLINE_MS="1500")
    replies.submit(turn(contact_id, 0, "let me talk to a person"))
    assert replies.drain(30)
    played = whole_reply(contact_id, 0)
    assert played[0].segment is not None
    assert (played[0].segment.prompt_uri, played[0].segment.text) == (None, "Let me connect you")
    assert played[-1].action is Action.TRANSFER


def test_a_reply_left_unfinished_at_a_hand_over_is_finished_without_saying_anything_twice(
    converse: LocalCloud,
) -> None:

    replies, contact_id = worker("bedrock")
    store = container.reply_store()
    container.turn_store().put_turn(turn(contact_id, 0, DISPUTE))
    # The predecessor stored the reply's first sentence, then handed over before the rest.
    first = "I'm sorry to hear that."
    store.begin(contact_id, 0)
    store.put_segment(Segment(contact_id, 0, 0, first, "https://bucket/first.wav", transcript=DISPUTE))
    replies.resume_unfinished(container.turn_store())
    assert replies.drain(30)
    played = whole_reply(contact_id, 0)
    texts = [p.segment.text for p in played if p.segment]
    assert texts[0] == first
    assert first not in " ".join(texts[1:])
    assert len(texts) >= 3
    history = store.history(contact_id)
    assert history[-1].agent.startswith(first) and history[-1].agent.count(first) == 1


def test_the_conversation_is_remembered_for_the_next_turn(converse: LocalCloud) -> None:
    replies, contact_id = worker("bedrock")
    replies.submit(turn(contact_id, 0, "I want to pay my bill"))
    assert replies.drain(20)
    replies.submit(turn(contact_id, 1, "yes please"))
    assert replies.drain(20)
    asked = [r.body for r in converse.bedrock.invocations if "yes please" in json.dumps(r.body)][-1]
    roles = [m["role"] for m in asked["messages"]]
    assert roles == ["user", "assistant", "user"]
    played = whole_reply(contact_id, 1)
    assert "paid" in " ".join(p.segment.text for p in played if p.segment)


def test_converse_answers_not_listening_when_nobody_listens(converse: LocalCloud) -> None:
    from voicebridge.errors import NotListening

    with pytest.raises(NotListening):
        play(str(uuid.uuid4()), wait_ms=100)


def test_a_call_is_heard_and_each_turn_answered_by_the_consumer(converse: LocalCloud) -> None:
    """The whole reply path in one consumer: KVS → Ink → the turn → the responder → Sonic → a segment to play."""
    import numpy as np
    from cartesia import Cartesia

    from voicebridge.call.consumer import ConsumerSettings, StreamConsumer
    from voicebridge.ink.session import InkSession, TurnListener
    from voicebridge_dev.local.cloud import LOCAL_API_KEY
    from voicebridge_dev.simulator import load_clips

    os.environ["RESPONDER"] = "scripted"
    container.reset()
    clips = load_clips()
    said = [clips["balance"], clips["thanks"]]
    for clip in said:
        converse.ink.register(clip.pcm, clip.transcript)
    gap = np.ones(12000, dtype=np.int16)
    voices = [clip.samples for clip in said]
    pcm = np.concatenate([gap, voices[0], gap, voices[1], gap]).tobytes()

    contact_id = str(uuid.uuid4())
    arn = converse.kvs.create_stream(f"connect-converse-contact-{contact_id[:8]}")
    stream = converse.kvs.stream(arn)
    start = stream.begin_contact(contact_id, "instance-1")
    stream.append("AUDIO_FROM_CUSTOMER", pcm)
    stream.end_contact()
    store = container.turn_store()
    store.claim(
        contact_id, arn, start.fragment_number, [CUSTOMER], start_timestamp_ms=start.timestamp_ms, converse=True
    )
    client = Cartesia(api_key=LOCAL_API_KEY, base_url=converse.ink.url)

    def open_session(
        listener: TurnListener, name: str, keyterms: tuple[str, ...] | None = None, listening: Any = None
    ) -> InkSession:
        return InkSession(client, listener, keyterms=keyterms or (), name=name)

    outcome = StreamConsumer(
        ConsumerSettings.of(container.settings()),
        store,
        contact_id=contact_id,
        generation=0,
        open_session=open_session,
        continue_with=lambda payload: None,
        remaining_ms=lambda: 600_000,
        media=container.media_source,
        replier=container.reply_worker,
    ).run()
    assert outcome.reason == "stream ended" and outcome.turns == 2
    answered = [answer(contact_id, seq) for seq in (0, 1)]
    assert [[s.text for s in segments] for segments in answered] == [
        ["Your balance", "is two hundred dollars.", "Your last payment was on Monday.", "Anything else?"],
        ["You said:", said[1].transcript],
    ]
    assert all(s.prompt_uri for segments in answered for s in segments)
    # The flow, having played the first reply, is handed the second.
    found = play(contact_id, after_turn=0, after_segment=0)
    assert found.segment is not None and (found.segment.turn, found.more) == (1, True)


# -- speculative replies: started on Ink's eager end, committed only when the turn ends with the same words


def speculation(contact_id: str, seq: int) -> dict[str, object]:
    """What the worker counted of its speculation on turn ``seq`` (``spec#<n>``), or {} when it never speculated."""
    from voicebridge.store.replies import speculation_key
    from voicebridge.store.turns import plain_item

    store = container.turn_store()
    found = store.call(
        "get_item",
        TableName=store.table,
        Key={"ContactId": {"S": contact_id}, "TurnKey": {"S": speculation_key(seq)}},
        ConsistentRead=True,
    ).get("Item")
    return {} if found is None else plain_item(found)


def speculative_segments(contact_id: str, seq: int, attempt: int = 0) -> list[str]:
    from voicebridge.store.replies import speculative_keys

    return [s.text for s in container.reply_store().segments(contact_id, seq, speculative_keys(seq, attempt))]


def test_an_eager_end_whose_words_the_turn_confirms_is_committed_and_played_at_once(converse: LocalCloud) -> None:
    replies, contact_id = worker()
    replies.eager_end(0, "What is my balance")
    eventually(lambda: speculative_segments(contact_id, 0))
    # Made, but no flow can play it before the turn has ended.
    before = container.reply_store().status(contact_id)
    assert before is None or before.turn < 0
    replies.submit(turn(contact_id, 0, "what is my balance?"))
    # One conditional write named it: the flow has segment 0 without waiting for the responder or Sonic.
    status = container.reply_store().status(contact_id)
    assert status is not None and status.turn == 0 and status.segments >= 1 and status.keys.startswith("spec#")
    first = play(contact_id, wait_ms=50)
    assert first.segment is not None and first.segment.text == "Your balance"
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert [p.segment.text for p in played if p.segment] == [
        "Your balance",
        "is two hundred dollars.",
        "Your last payment was on Monday.",
        "Anything else?",
    ]
    assert dict(played[-1].attributes) == {"Intent": "Balance"}
    counted = speculation(contact_id, 0)
    assert (counted["Outcome"], counted["Starts"], counted["Hits"]) == ("hit", 1, 1)
    waterfall = played[0].segment.timings if played[0].segment else {}
    assert {"EagerEndAt", "ResponderStartedAt", "ResponderFirstTokenAt", "FirstClauseAt"} <= set(waterfall)
    # Sonic's first byte is known when Sonic made the prompt (an earlier test may have left it in the cache).
    assert ("SonicFirstByteAt" in waterfall) == ("SynthesisMs" in waterfall)
    assert container.reply_store().history(contact_id)[-1].caller == "What is my balance"


def test_a_turn_that_ends_with_other_words_is_answered_anew_and_the_speculation_is_never_played(
    converse: LocalCloud,
) -> None:
    unique = {
        "rules": [{"match": ["balance"], "reply": "Your balance is two hundred dollars."}],
        "fallback": {"reply": f"Sorry, {uuid.uuid4().int % 10**6} is not something I know about yet."},
    }
    replies, contact_id = worker(RESPONDER_RULES=json.dumps(unique))
    replies.eager_end(0, "let me talk to")
    eventually(lambda: speculative_segments(contact_id, 0))
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert next(p.segment.text for p in played if p.segment) == "Your balance"
    assert all(p.segment is not None and p.segment.keys == "reply" for p in played)
    counted = speculation(contact_id, 0)
    assert (counted["Outcome"], counted["Misses"]) == ("miss", 1)
    assert float(str(counted["WasteSonicMs"])) > 0 and int(str(counted["WasteTokens"])) > 0


def test_a_resumed_turn_cancels_its_speculation_and_the_turn_is_answered_when_it_ends(converse: LocalCloud) -> None:
    replies, contact_id = worker()
    replies.eager_end(0, "what is my balance")
    eventually(lambda: speculative_segments(contact_id, 0))
    replies.turn_resumed(0)
    # The caller went on; the same words end the turn later, and the reply is made after that.
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert all(p.segment is not None and p.segment.keys == "reply" for p in played)
    assert speculation(contact_id, 0)["Outcome"] == "miss"


def test_a_sentence_held_back_over_a_speaking_caller_is_marked_until_it_is_handed_out(converse: LocalCloud) -> None:
    replies, contact_id = worker()
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    store = container.reply_store()
    assert play(contact_id).segment is not None
    store.mark_speaking(contact_id, int(time.time() * 1000))
    held = play(contact_id, after_turn=0, after_segment=0, wait_ms=300)
    status = store.status(contact_id)
    assert held.segment is None and status is not None and status.held_back == (0, 1)
    store.mark_speaking(contact_id, 0)
    resumed = play(contact_id, after_turn=0, after_segment=0)
    status = store.status(contact_id)
    assert resumed.segment is not None and resumed.segment.index == 1
    assert status is not None and status.held_back is None


def balance_answered() -> str:
    """A contact whose caller's turn 0 is stored and its reply made whole."""
    replies, contact_id = worker()
    answered = turn(contact_id, 0, "what is my balance")
    assert container.turn_store().put_turn(answered)
    replies.submit(answered)
    assert replies.drain(20)
    return contact_id


def test_a_sentence_held_back_over_a_short_voice_goes_out_once_it_pauses_and_the_status_says_it_went_on(
    converse: LocalCloud,
) -> None:
    contact_id = balance_answered()
    store = container.reply_store()
    assert play(contact_id).segment is not None
    began = int(time.time() * 1000)
    store.mark_speaking(contact_id, began, 1)  # "uh-huh" over the first sentence: turn 1, still open
    held = play(contact_id, after_turn=0, after_segment=0, wait_ms=300)
    assert held.segment is None and held_at(contact_id, 0) == 1
    # The voice stopped, short, over the agent: the consumer marks the pause; Ink has not ended the turn.
    store.mark_speaking(contact_id, began, 1, paused_ms=began + 400)
    went_on = play(contact_id, after_turn=0, after_segment=0, wait_ms=300)
    status = store.status(contact_id)
    assert went_on.segment is not None and went_on.segment.index == 1
    assert status is not None and status.held_back is None and status.went_on_for == 1
    assert status.speaking_turn == 1 and status.speaking_paused_ms == began + 400
    assert held_at(contact_id, 0) is None
    # The turn stored (a backchannel): the marks go; what the reply went on over stays named by its turn.
    store.mark_speaking(contact_id, 0)
    status = store.status(contact_id)
    assert status is not None and (status.speaking_turn, status.speaking_paused_ms, status.went_on_for) == (None, 0, 1)


def test_a_replys_first_sentence_waits_while_the_caller_goes_on_after_the_turn_it_answers(converse: LocalCloud) -> None:
    contact_id = balance_answered()
    store = container.reply_store()
    # Its own turn still marked as spoken (the mark goes once the turn is stored): nothing is held.
    store.mark_speaking(contact_id, int(time.time() * 1000), 0)
    assert play(contact_id, wait_ms=300).segment is not None
    # The caller went on after the turn was ended: the reply does not begin over them.
    store.mark_speaking(contact_id, int(time.time() * 1000), 1)
    held = play(contact_id, wait_ms=300)
    status = store.status(contact_id)
    assert held.segment is None and held.speaking_ms is not None
    assert status is not None and status.held_back == (0, 0) and status.speaking_turn == 1
    # The caller's turn keeps it too: left so, the record says they heard nothing of this reply.
    assert held_at(contact_id, 0) == 0
    # A pause in their voice lets a later sentence of a reply being played go on, never a reply's first over them.
    store.mark_speaking(contact_id, int(time.time() * 1000), 1, paused_ms=int(time.time() * 1000))
    assert play(contact_id, wait_ms=300).segment is None
    # Ink made no turn of it (a cough): the reply begins.
    store.mark_speaking(contact_id, 0)
    begun = play(contact_id)
    status = store.status(contact_id)
    assert begun.segment is not None and (begun.segment.turn, begun.segment.index) == (0, 0)
    assert status is not None and status.held_back is None and status.speaking_turn is None
    assert held_at(contact_id, 0) is None


def held_at(contact_id: str, seq: int) -> int | None:
    """Where the caller's turn ``seq`` says its reply was held back over them (None: nowhere, or released)."""
    items = container.turn_store().contact_items(contact_id)
    found = next(item for item in items if item["TurnKey"] == f"{CUSTOMER}#{seq:09d}")
    return None if found.get("ReplyHeldAt") is None else int(found["ReplyHeldAt"])


def test_a_backchannel_drops_its_speculation_and_the_reply_goes_on_with_nothing_thought_of_after_it(
    converse: LocalCloud,
) -> None:
    replies, contact_id = worker()
    replies.submit(turn(contact_id, 0, "what is my balance"))
    # "Uh-huh" over the reply: Ink ends a turn of it, which the transcriber found said over the agent, who went on.
    replies.eager_end(1, "uh huh")
    eventually(lambda: speculative_segments(contact_id, 1))
    said = dataclasses.replace(turn(contact_id, 1, "uh huh"), backchannel=True)
    replies.turn_ended(said)
    assert container.turn_store().put_turn(said)
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert [p.segment.text for p in played if p.segment][-1] == "Anything else?"
    assert speculation(contact_id, 1)["Outcome"] == "miss"
    # Once the reply is over, the wait runs out as silence: nothing is being thought of for the backchannel.
    after = play(contact_id, after_turn=0, after_segment=len(played) - 1, wait_ms=400)
    assert after.timed_out and after.thinking is None


def test_a_speculative_reply_that_calls_a_tool_waits_for_the_turn_to_end_before_the_flow_learns_the_action(
    converse: LocalCloud,
) -> None:
    replies, contact_id = worker("bedrock")
    before = len(converse.bedrock.invocations)
    replies.eager_end(0, "let me talk to a person please")
    eventually(lambda: speculative_segments(contact_id, 0))
    # The model called transfer_to_agent, but the caller has not finished: nothing reaches the flow.
    assert play(contact_id, wait_ms=300).timed_out
    status = container.reply_store().status(contact_id)
    assert status is None or (status.turn < 0 and status.action is Action.CONTINUE)
    replies.submit(turn(contact_id, 0, "Let me talk to a person, please."))
    assert replies.drain(20)
    played = whole_reply(contact_id, 0)
    assert played[-1].action is Action.TRANSFER
    # Asked once, on the eager words: the commit asked nothing again.
    assert len(converse.bedrock.invocations) == before + 1


def test_a_speculation_cancelled_mid_synthesis_abandons_the_sonic_stream_and_stores_nothing(
    converse: LocalCloud,
) -> None:
    converse.sonic.realtime_factor = 1.0
    try:
        # A sentence no earlier test made: its prompt cannot come from the cache.
        unique = {"rules": [], "fallback": {"reply": f"Reply number {uuid.uuid4().int % 10**6} is on its way now."}}
        replies, contact_id = worker(RESPONDER_RULES=json.dumps(unique))
        assert converse.sonic.wait_idle(10), "an earlier test's synthesis is still streaming"
        before = len(converse.sonic.stats)
        replies.eager_end(0, "what is my balance")
        # Resumed once the speculation's synthesis is streaming (however long the responder took to get there).
        eventually(lambda: converse.sonic.in_flight.count > 0)
        replies.turn_resumed(0)
        eventually(lambda: len(converse.sonic.stats) > before)
        assert converse.sonic.stats[-1].outcome == "client_disconnected"
        replies.close(5)
        assert speculative_segments(contact_id, 0) == []
        assert speculation(contact_id, 0)["Misses"] == 1
    finally:
        converse.sonic.realtime_factor = 20.0


def test_at_most_the_configured_number_of_speculations_start_per_turn(converse: LocalCloud) -> None:
    replies, contact_id = worker(SPECULATIVE_MAX_PER_TURN="2")
    for words in ("what is", "what is my", "what is my balance"):
        replies.eager_end(0, words)
        time.sleep(0.05)
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    assert speculation(contact_id, 0)["Starts"] == 2
    assert speculative_segments(contact_id, 0, attempt=2) == []


def test_speculation_off_answers_only_finished_turns(converse: LocalCloud) -> None:
    replies, contact_id = worker(SPECULATIVE_REPLIES="off")
    replies.eager_end(0, "what is my balance")
    time.sleep(0.3)
    assert speculative_segments(contact_id, 0) == [] and speculation(contact_id, 0) == {}
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(20)
    assert whole_reply(contact_id, 0)[0].segment is not None


def test_a_hand_over_before_the_turn_ends_drops_the_speculation_and_the_successor_answers_the_turn(
    converse: LocalCloud,
) -> None:
    replies, contact_id = worker()
    replies.eager_end(0, "what is my balance")
    eventually(lambda: speculative_segments(contact_id, 0))
    # The hand-over does not wait for a turn that has not ended.
    assert replies.drain(0.5)
    replies.abandon()
    next_worker = successor(contact_id)
    next_worker.resume_unfinished(container.turn_store())
    assert play(contact_id, wait_ms=200).timed_out
    # The successor hears the turn again, and answers it: nothing of the dropped speculation is ever named.
    next_worker.submit(turn(contact_id, 0, "what is my balance"))
    assert next_worker.drain(20)
    played = whole_reply(contact_id, 0)
    assert all(p.segment is not None and p.segment.keys == "reply" for p in played)


def test_a_committed_speculative_reply_unfinished_at_a_hand_over_is_finished_under_its_keys_saying_nothing_twice(
    converse: LocalCloud,
) -> None:
    converse.bedrock.configure({"time_to_first_token_ms": 50, "tokens_per_second": 12})
    replies, contact_id = worker("bedrock")
    container.turn_store().put_turn(turn(contact_id, 0, DISPUTE))
    replies.eager_end(0, DISPUTE)
    eventually(lambda: speculative_segments(contact_id, 0))
    replies.submit(turn(contact_id, 0, DISPUTE))
    first = play(contact_id, wait_ms=100)
    assert first.segment is not None and first.segment.keys.startswith("spec#")
    assert not replies.drain(0)
    replies.abandon()
    converse.bedrock.configure({"time_to_first_token_ms": 50, "tokens_per_second": 200})
    next_worker = successor(contact_id)
    next_worker.resume_unfinished(container.turn_store())
    assert next_worker.drain(30)
    played = whole_reply(contact_id, 0)
    texts = [p.segment.text for p in played if p.segment]
    assert texts[0] == first.segment.text
    assert all(p.segment is not None and p.segment.keys == first.segment.keys for p in played)
    assert len(texts) == len(set(texts)) and len(texts) >= 3


def test_a_speculation_on_a_turn_a_predecessor_already_answered_is_dropped_and_nothing_is_said_twice(
    converse: LocalCloud,
) -> None:
    replies, contact_id = worker()
    store = container.reply_store()
    store.begin(contact_id, 0)
    store.put_segment(Segment(contact_id, 0, 0, "Your balance is two hundred dollars.", "https://bucket/a.wav"))
    store.finish(contact_id, 0, 1, Action.CONTINUE, {})
    replies.eager_end(0, "what is my balance")
    eventually(lambda: speculative_segments(contact_id, 0))
    replies.submit(turn(contact_id, 0, "what is my balance"))
    assert replies.drain(10)
    status = store.status(contact_id)
    assert status is not None and (status.turn, status.segments, status.keys) == (0, 1, "reply")
    assert [s.text for s in store.segments(contact_id, 0)] == ["Your balance is two hundred dollars."]
