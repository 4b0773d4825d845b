"""The agent on the line: a caller's turn answered sentence by sentence, and the flow handed each sentence to play.

Against the local cloud: the reply worker calls the responder (the Bedrock emulator, or a rules file), speaks each
sentence with the Sonic emulator into the local bucket and stores it in the turn table; ConverseFunction's domain
hands the flow what to play next.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from voicebridge import container
from voicebridge.converse.playback import Next, next_to_play
from voicebridge.converse.replies import Action
from voicebridge.converse.worker import ReplyWorker, Spoken
from voicebridge.sonic.request import SpeechRequest
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
    yield cloud_env
    cloud_env.bedrock.configure({"time_to_first_token_ms": 300, "tokens_per_second": 60})
    cloud_env.bedrock.clear_faults()
    cloud_env.sonic.faults.clear()
    container.reset()


def worker(responder: str = "scripted", **settings: str) -> tuple[ReplyWorker, str]:
    """A reply worker for a new contact, as TranscribeStreamFunction builds it."""
    import os

    os.environ["RESPONDER"] = responder
    for name, value in settings.items():
        os.environ[name] = value
    container.reset()
    config = container.settings()
    synthesizer = container.synthesizer()

    def speak(text: str, deadline: float) -> Spoken:
        prompt = synthesizer.synthesize(SpeechRequest.from_parameters({"Text": text}, config), deadline=deadline)
        return Spoken(prompt.uri, prompt.synthesis_ms)

    contact_id = str(uuid.uuid4())
    container.turn_store().claim(contact_id, "arn:stream", "100", [CUSTOMER], converse=True)
    made = ReplyWorker(
        contact_id, responder=container.responder(), speak=speak, replies=container.reply_store(), settings=config
    )
    return made, contact_id


def turn(contact_id: str, seq: int, transcript: str) -> Turn:
    now = int(time.time() * 1000)
    return Turn(contact_id, CUSTOMER, seq, transcript, 0, 1000, now, latency_ms=300)


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
        "Your balance is two hundred dollars.",
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
    from voicebridge.store.replies import Segment

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
    assert found.segment is not None and (found.segment.turn, found.segment.text) == (1, "You said: thank you")


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
    assert (played[0].segment.prompt_uri, played[0].segment.text) == (None, "Let me connect you with a colleague.")
    assert played[-1].action is Action.TRANSFER


def test_a_reply_left_unfinished_at_a_hand_over_is_finished_without_saying_anything_twice(
    converse: LocalCloud,
) -> None:
    from voicebridge.store.replies import Segment

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
    import os

    import numpy as np
    from cartesia import Cartesia

    from voicebridge.handlers.transcribe_stream import _replier
    from voicebridge.ink.session import InkSession, TurnListener
    from voicebridge.kvs.consumer import StreamConsumer
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

    def open_session(listener: TurnListener, name: str) -> InkSession:
        return InkSession(client, listener, name=name)

    outcome = StreamConsumer(
        container.settings(),
        store,
        contact_id=contact_id,
        generation=0,
        open_session=open_session,
        continue_with=lambda payload: None,
        remaining_ms=lambda: 600_000,
        media=container.media_source,
        replier=_replier,
    ).run()
    assert outcome.reason == "stream ended" and outcome.turns == 2
    replies = container.reply_store()
    answered = [replies.segments(contact_id, seq) for seq in (0, 1)]
    assert [[s.text for s in segments] for segments in answered] == [
        ["Your balance is two hundred dollars.", "Your last payment was on Monday.", "Anything else?"],
        [f"You said: {said[1].transcript}"],
    ]
    assert all(s.prompt_uri for segments in answered for s in segments)
    # The flow, having played the first reply, is handed the second.
    found = play(contact_id, after_turn=0, after_segment=0)
    assert found.segment is not None and (found.segment.turn, found.more) == (1, False)
