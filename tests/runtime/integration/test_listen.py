"""The Listen path's consumer against the local cloud: KVS GetMedia (emulator) → Matroska → Ink (emulator, spoken
to by the official SDK) → DynamoDB (moto), all over loopback.

The caller's track is built from utterances registered with the Ink emulator, separated by silence; the source
never holds a zero sample (±1 dither), so the consumer's keep-alive silence can be told apart from it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.fixtures.cloud import fetch
from tests.fixtures.waiting import eventually
from voicebridge import container
from voicebridge.call.consumer import ConsumerSettings, StreamConsumer
from voicebridge.config import Settings
from voicebridge.ink.session import InkSession, TurnListener
from voicebridge.store.turns import CUSTOMER, Claim, TurnStore
from voicebridge_dev.local.cloud import LOCAL_API_KEY, LocalCloud
from voicebridge_dev.local.ink import DropFault
from voicebridge_dev.local.kvs import Fault as KvsFault
from voicebridge_dev.local.speech_engine import StandInSpeechEngine
from voicebridge_dev.template import local_physical_id

UTTERANCES = ["I would like to pay my bill", "my account number is four two four two", "thank you goodbye"]


@pytest.fixture(scope="module")
def cloud() -> Iterator[LocalCloud]:
    from tests.fixtures.cloud import ROOT

    with LocalCloud(template=ROOT / "template.yaml", engine=StandInSpeechEngine(), media_pace=0) as local:
        yield local


def _dithered(samples: np.ndarray, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).choice(np.array([-1, 1], dtype=np.int16), size=samples.size)
    out = np.clip(samples.astype(np.int32) + noise, -32768, 32767).astype(np.int16)
    return np.where(out == 0, np.int16(1), out)


@pytest.fixture(scope="module")
def caller(cloud: LocalCloud) -> tuple[bytes, list[bytes]]:
    """The caller's whole track, and each utterance's PCM (registered with the Ink emulator)."""
    engine = StandInSpeechEngine()
    pieces, clips = [_dithered(np.zeros(4000, dtype=np.int16), 0)], []
    for index, text in enumerate(UTTERANCES):
        clip = _dithered(engine.synthesize(text, 8000, 1.0), index + 1)
        cloud.ink.register(clip.tobytes(), text)
        clips.append(clip.tobytes())
        pieces.extend([clip, _dithered(np.zeros(12000, dtype=np.int16), 10 + index)])
    return np.concatenate(pieces).tobytes(), clips


def _settings(**overrides: Any) -> ConsumerSettings:
    values: dict[str, Any] = {"turn_table": local_physical_id("TurnTable"), "kvs_read_timeout_ms": 800}
    values.update(overrides)
    return ConsumerSettings.of(Settings(**values))


def _no_silence(received: bytes) -> bytes:
    samples = np.frombuffer(received, dtype="<i2")
    return bytes(samples[samples != 0].tobytes())


@pytest.fixture
def env(cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch) -> LocalCloud:
    for name, value in cloud.env().items():
        monkeypatch.setenv(name, value)
    container.reset()
    cloud.ink.clear_faults()
    cloud.kvs.clear_faults()
    return cloud


LEFT_RUNNING_S = 20.0
"""How long a consumer an earlier test started through the functions may still run (its stream's end read, its
record written: up to ten seconds) before a call that counts its own Ink sessions gives up waiting for it."""


def _sessions_so_far(cloud: LocalCloud) -> int:
    """The Ink sessions opened so far, once no consumer an earlier test started through Lambda is running: one
    still winding down would open its sessions among this call's, or take the faults this test injects."""
    assert cloud.lambdas is not None
    assert cloud.lambdas.wait_for_idle(LEFT_RUNNING_S), "a consumer an earlier test started is still running"
    return len(cloud.ink.sessions)


class Call:
    """One contact on a fresh KVS stream, its audio loaded, and a listening session claimed."""

    def __init__(self, cloud: LocalCloud, caller_pcm: bytes, *, keyterms: tuple[str, ...] | None = None) -> None:
        self.cloud = cloud
        self.contact_id = str(uuid.uuid4())
        arn = cloud.kvs.create_stream(f"connect-test-contact-{self.contact_id[:8]}")
        stream = cloud.kvs.stream(arn)
        self.start = stream.begin_contact(self.contact_id, "instance-1")
        stream.append("AUDIO_FROM_CUSTOMER", caller_pcm)
        stream.end_contact()
        self.store = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))
        claim = self.store.claim(
            self.contact_id,
            arn,
            self.start.fragment_number,
            [CUSTOMER],
            start_timestamp_ms=self.start.timestamp_ms,
            keyterms=keyterms,
        )
        assert claim[0] is Claim.CLAIMED
        self.sessions_before = _sessions_so_far(cloud)
        self.handed_over: list[dict[str, Any]] = []

    def consumer(
        self, generation: int, *, remaining_ms: Any = None, ink_model: str = "ink-2", **settings: Any
    ) -> StreamConsumer:
        from cartesia import Cartesia

        client = Cartesia(api_key=LOCAL_API_KEY, base_url=self.cloud.ink.url)

        def open_session(
            listener: TurnListener, name: str, keyterms: tuple[str, ...] | None = None, listening: Any = None
        ) -> InkSession:
            return InkSession(client, listener, model=ink_model, keyterms=keyterms or (), name=name)

        return StreamConsumer(
            _settings(**settings),
            self.store,
            contact_id=self.contact_id,
            generation=generation,
            open_session=open_session,
            continue_with=self.handed_over.append,
            remaining_ms=remaining_ms or (lambda: 600_000),
            media=container.media_source,
        )

    def ink_sessions(self) -> list[Any]:
        return self.cloud.ink.sessions[self.sessions_before :]

    def transcripts(self) -> list[str]:
        return [t.transcript for t in self.store.turns_after(self.contact_id, after=-1, limit=100)]


def test_every_turn_of_the_caller_is_stored_once_in_order(env: LocalCloud, caller: tuple[bytes, list[bytes]]) -> None:
    call = Call(env, caller[0])
    outcome = call.consumer(0).run()
    assert outcome.reason == "stream ended"
    assert call.transcripts() == UTTERANCES
    turns = call.store.turns_after(call.contact_id, after=-1, limit=100)
    assert [t.seq for t in turns] == [0, 1, 2]
    assert all(t.audio_end_ms > t.audio_start_ms for t in turns)
    assert call.store.load(call.contact_id).state == "stopped"  # type: ignore[union-attr]


def test_ink_receives_the_callers_audio_byte_for_byte(env: LocalCloud, caller: tuple[bytes, list[bytes]]) -> None:
    call = Call(env, caller[0])
    # Catching up drops long silences from a backlog (the whole call is one here): off, every byte must arrive.
    call.consumer(0, ink_catch_up="off").run()
    received = b"".join(bytes(s.received_audio) for s in call.ink_sessions())
    assert _no_silence(received) == caller[0]


def test_a_continuation_and_a_media_cut_lose_and_repeat_nothing(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    call = Call(env, caller[0])
    env.kvs.inject_fault(KvsFault(kind="cut", after_bytes=30_000))

    def short_on_time() -> int:
        # Plenty of time for the first four seconds of audio; then inside the hand-over window.
        sent = sum(len(s.received_audio) for s in call.ink_sessions())
        return 600_000 if sent < 4 * 16_000 else 20_000

    first = call.consumer(0, remaining_ms=short_on_time, ink_catch_up="off").run()
    assert first.reason == "handoff" and call.handed_over == [{"ContactId": call.contact_id, "Generation": 1}]
    assert first.reconnects >= 1
    assert call.consumer(0).run().reason == "superseded"
    second = call.consumer(1, ink_catch_up="off").run()
    assert second.reason == "stream ended"

    received = b"".join(bytes(s.received_audio) for s in call.ink_sessions())
    assert _no_silence(received) == caller[0]
    assert call.transcripts() == UTTERANCES


def test_a_dropped_ink_socket_replays_only_the_unfinished_turn(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    call = Call(env, caller[0])
    # Into the second utterance: the first turn is finished, the second is not.
    first_clip_ms = 500 + len(caller[1][0]) / 16 + 1500
    env.ink.inject(DropFault(after_audio_ms=first_clip_ms + 300))
    # Every byte must reach Ink for the replay to be compared byte for byte: no catching up.
    outcome = call.consumer(0, ink_catch_up="off").run()
    assert outcome.reason == "stream ended"
    assert call.transcripts() == UTTERANCES

    sessions = call.ink_sessions()
    assert len(sessions) == 2
    dropped, resumed = (_no_silence(bytes(s.received_audio)) for s in sessions)
    source = caller[0]
    assert source.startswith(dropped)
    # The new session starts where the first turn was settled, never earlier: only the unfinished turn repeats.
    restart = len(source) - len(resumed)
    assert source[restart:] == resumed
    end_of_first_turn = (4000 + len(caller[1][0]) // 2) * 2
    assert end_of_first_turn <= restart < len(dropped)


def _connect_event(contact_id: str, audio: dict[str, str] | None, **parameters: str) -> dict[str, Any]:
    import copy
    import json

    from tests.fixtures.cloud import ROOT

    event: dict[str, Any] = copy.deepcopy(json.loads((ROOT / "events" / "synthesize.json").read_text()))
    event["Details"]["ContactData"]["ContactId"] = contact_id
    event["Details"]["ContactData"]["MediaStreams"] = {"Customer": {"Audio": audio}}
    event["Details"]["Parameters"] = parameters
    return event


def _invoke(cloud: LocalCloud, function: str, event: dict[str, Any]) -> dict[str, str]:
    import json

    import boto3

    client = boto3.client(
        "lambda",
        endpoint_url=cloud.env()["AWS_ENDPOINT_URL_LAMBDA"],
        region_name=cloud.region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    answer = client.invoke(FunctionName=function, Payload=json.dumps(event).encode())
    assert "FunctionError" not in answer, answer["Payload"].read()
    result: dict[str, str] = json.loads(answer["Payload"].read())
    return result


def test_a_flow_hears_each_turn_through_the_functions(env: LocalCloud, caller: tuple[bytes, list[bytes]]) -> None:
    before = _sessions_so_far(env)
    contact_id = str(uuid.uuid4())
    arn = env.kvs.create_stream(f"connect-flow-contact-{contact_id[:8]}")
    stream = env.kvs.stream(arn)
    start = stream.begin_contact(contact_id, "instance-1")
    stream.append("AUDIO_FROM_CUSTOMER", caller[0])
    stream.end_contact()
    audio = {"StreamARN": arn, "StartFragmentNumber": start.fragment_number, "StartTimestamp": start.start_timestamp}

    started = _invoke(env, "StartListeningFunction", _connect_event(contact_id, audio))
    assert started == {
        "Result": "OK",
        "StreamARN": arn,
        "AlreadyListening": "false",
        "Language": "en",
        "TurnEndBy": "ink",
    }
    again = _invoke(env, "StartListeningFunction", _connect_event(contact_id, audio))
    assert again["AlreadyListening"] == "true"
    # A flow plays its greeting while the consumer's container starts; the caller speaks after it. Here the audio is
    # all there at once, so the first wait begins once the consumer has opened its Ink session: on a loaded machine
    # the emulated container's start (a process importing the runtime and its models) alone took most of the 7 s.
    eventually(lambda: len(env.ink.sessions) > before, timeout_s=30, what="the consumer opened no Ink session")

    heard: list[str] = []
    after = "-1"
    for _ in UTTERANCES:
        answer = _invoke(env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn=after, MaxWaitMs="7000"))
        if answer["Result"] == "Listening":
            # The wait ran out mid-turn: the flow plays the silent prompt and awaits again, as a flow does.
            answer = _invoke(
                env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn=after, MaxWaitMs="7000")
            )
        assert answer["Result"] == "Turn", (heard, answer)
        heard.append(answer["Transcript"])
        after = answer["TurnIndex"]
    assert heard == UTTERANCES
    late = _invoke(env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn=after, MaxWaitMs="300"))
    assert late == {"Result": "Timeout"}


def test_a_wait_that_runs_out_mid_turn_is_listening_not_silence_and_the_turn_then_reaches_the_flow(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    before = _sessions_so_far(env)
    env.ink.configure(end_delay_ms=3000)
    try:
        contact_id = str(uuid.uuid4())
        arn = env.kvs.create_stream(f"connect-slow-contact-{contact_id[:8]}")
        stream = env.kvs.stream(arn)
        start = stream.begin_contact(contact_id, "instance-1")
        stream.append("AUDIO_FROM_CUSTOMER", caller[1][0] + bytes(16000 * 5))
        stream.end_contact()
        audio = {
            "StreamARN": arn,
            "StartFragmentNumber": start.fragment_number,
            "StartTimestamp": start.start_timestamp,
        }
        assert _invoke(env, "StartListeningFunction", _connect_event(contact_id, audio))["Result"] == "OK"
        store = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))
        deadline = time.monotonic() + 15

        def begun() -> bool:
            # Ink has sent the turn's start (the consumer's own voice mark alone lapses if Ink is slow to start it,
            # as on a loaded machine), and the consumer has marked the caller speaking.
            sessions = env.ink.sessions[before:]
            session = sessions[-1] if sessions else None
            started = session is not None and bool(session.events_of("turn.start"))
            return started and bool(getattr(store.load(contact_id), "speaking_since_ms", 0))

        while not begun() and time.monotonic() < deadline:
            time.sleep(0.05)
        # Ink has begun the caller's turn and takes three seconds to end it: a short wait that runs out meanwhile says
        # the caller is speaking — the flow plays the silent prompt (which also ends Connect's chain of Lambda
        # blocks) and asks again, never "Are you still there?" — and the next wait, inside 8 s, gets the turn.
        first = _invoke(env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn="-1", MaxWaitMs="500"))
        assert first["Result"] == "Listening", first
        assert int(first["SpeakingMs"]) >= 0 and first["PromptUri"].endswith("/prompts/pause-200ms.wav")
        pause = fetch(env, first["PromptUri"])
        assert pause[:4] == b"RIFF" and len(pause) == 58 + 1600 and set(pause[58:]) == {0xFF}
        second = _invoke(env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn="-1"))
        assert (second["Result"], second["Transcript"]) == ("Turn", UTTERANCES[0])
        # The turn is over once stored: what follows is silence again.
        after = _invoke(env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn="0", MaxWaitMs="1000"))
        assert after == {"Result": "Timeout"}
    finally:
        env.ink.configure(end_delay_ms=700)


def test_a_flows_keyterms_are_kept_with_the_listening_session_for_its_ink_sessions(env: LocalCloud) -> None:
    contact_id = str(uuid.uuid4())
    arn = env.kvs.create_stream(f"connect-keyterms-{contact_id[:8]}")
    stream = env.kvs.stream(arn)
    start = stream.begin_contact(contact_id, "instance-1")
    stream.end_contact()
    audio = {"StreamARN": arn, "StartFragmentNumber": start.fragment_number, "StartTimestamp": start.start_timestamp}

    started = _invoke(env, "StartListeningFunction", _connect_event(contact_id, audio, Keyterms="Acme Plus, Zorblax"))

    assert started["Result"] == "OK", started
    checkpoint = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb")).load(contact_id)
    assert checkpoint is not None and checkpoint.keyterms == ("Acme Plus", "Zorblax")


def test_keyterms_past_inks_limits_are_invalid_input(env: LocalCloud) -> None:
    audio = {"StreamARN": "arn:aws:kinesisvideo:us-east-1:111111111111:stream/s/1", "StartFragmentNumber": "1"}
    many = ",".join(f"term{n}" for n in range(101))
    result = _invoke(env, "StartListeningFunction", _connect_event(str(uuid.uuid4()), audio, Keyterms=many))
    assert (result["Result"], result["ErrorCode"]) == ("Error", "InvalidInput")
    assert "Keyterms has 101 terms; Ink takes at most 100" in result["ErrorMessage"]


def test_listening_before_streaming_starts_is_a_clear_error(env: LocalCloud) -> None:
    result = _invoke(env, "StartListeningFunction", _connect_event(str(uuid.uuid4()), None))
    assert (result["Result"], result["ErrorCode"]) == ("Error", "NoMediaStream")


def test_a_stream_reused_for_another_contact_stops_the_consumer_before_any_of_its_audio_reaches_ink(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    mine = caller[0][: 16000 * 3]
    call = Call(env, mine)
    stream = env.kvs.stream(call.store.load(call.contact_id).stream_arn)  # type: ignore[union-attr]
    assert stream.wait_idle(30), "the first contact's audio was not all produced"
    # The next contact on the stream: its audio is the caller's louder, so any byte of it in Ink would show.
    theirs = (np.frombuffer(caller[0], dtype="<i2") // 2 * 3).astype("<i2").tobytes()
    stream.begin_contact(str(uuid.uuid4()), "instance-1")
    stream.append("AUDIO_FROM_CUSTOMER", theirs)
    stream.end_contact()
    outcome = call.consumer(0, ink_catch_up="off").run()
    assert outcome.reason == "contact changed"
    assert call.store.load(call.contact_id).stop_reason == "contact changed"  # type: ignore[union-attr]
    received = b"".join(bytes(s.received_audio) for s in call.ink_sessions())
    assert _no_silence(received) == mine


@pytest.mark.parametrize("reading", ["exclusive", "inclusive"])
@pytest.mark.parametrize("cut_after", [2_000, 30_000])
def test_no_audio_is_lost_or_repeated_at_the_start_a_cut_or_a_hand_over_under_either_reading(
    env: LocalCloud, caller: tuple[bytes, list[bytes]], reading: str, cut_after: int
) -> None:
    """GetMedia's FRAGMENT_NUMBER is exclusive by AWS's selector text, looser by the member's: right under both.
    A cut 2,000 bytes in falls inside the first fragment, before a second has been seen."""
    env.kvs.configure(fragment_number_selector=reading)
    try:
        pcm = caller[0][: 16000 * 5]
        call = Call(env, pcm)
        env.kvs.inject_fault(KvsFault(kind="cut", after_bytes=cut_after))

        def short_on_time() -> int:
            # Two seconds in, past half the hand-over margin: it hands over mid-utterance, with audio unsettled.
            sent = sum(len(s.received_audio) for s in call.ink_sessions())
            return 600_000 if sent < 2 * 16_000 else 10_000

        first = call.consumer(0, remaining_ms=short_on_time, ink_catch_up="off").run()
        assert first.reason == "handoff"
        settled = call.store.load(call.contact_id).tracks[CUSTOMER].stream_bytes  # type: ignore[union-attr]
        assert call.consumer(1, ink_catch_up="off").run().reason == "stream ended"
        before, after = (_no_silence(bytes(s.received_audio)) for s in call.ink_sessions())
        # The caller's very first block is the first thing Ink hears; the successor's session starts exactly where
        # the hand-over said the audio was settled (how far that is depends on how soon Ink ended the first turn:
        # nothing, on a loaded machine) — never later than where the first one stopped — and runs on to the end,
        # each byte once within it.
        assert pcm.startswith(before)
        restart = len(pcm) - len(after)
        assert pcm[restart:] == after
        assert restart == settled <= len(before)
    finally:
        env.kvs.configure(fragment_number_selector="exclusive")


def test_both_directions_are_transcribed_for_a_full_call_transcript(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    from voicebridge.store.turns import AGENT

    contact_id = str(uuid.uuid4())
    arn = env.kvs.create_stream(f"connect-both-contact-{contact_id[:8]}")
    stream = env.kvs.stream(arn)
    start = stream.begin_contact(contact_id, "instance-1")
    silence = bytes(len(caller[1][0]) + 16000)
    # The bot speaks the first utterance while the caller is silent, then the caller speaks the second.
    stream.append_tracks(customer=silence + caller[1][1] + bytes(24000), agent=caller[1][0] + bytes(len(silence)))
    stream.end_contact()
    store = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))
    claim = store.claim(
        contact_id, arn, start.fragment_number, [CUSTOMER, AGENT], start_timestamp_ms=start.timestamp_ms
    )
    assert claim[0] is Claim.CLAIMED
    call = Call.__new__(Call)
    call.cloud, call.contact_id, call.store, call.handed_over = env, contact_id, store, []
    call.sessions_before = _sessions_so_far(env)
    assert call.consumer(0).run().reason == "stream ended"
    assert [t.transcript for t in store.turns_after(contact_id, after=-1, track=AGENT)] == [UTTERANCES[0]]
    assert [t.transcript for t in store.turns_after(contact_id, after=-1, track=CUSTOMER)] == [UTTERANCES[1]]


def test_manual_finalize_mode_finds_the_turns_itself(env: LocalCloud, caller: tuple[bytes, list[bytes]]) -> None:
    from cartesia import Cartesia

    call = Call(env, caller[0])
    client = Cartesia(api_key=LOCAL_API_KEY, base_url=env.ink.url)

    def open_session(
        listener: TurnListener, name: str, keyterms: tuple[str, ...] | None = None, listening: Any = None
    ) -> InkSession:
        return InkSession(client, listener, mode="manual", model="ink-whisper", name=name)

    consumer = StreamConsumer(
        _settings(ink_mode="manual"),
        call.store,
        contact_id=call.contact_id,
        generation=0,
        open_session=open_session,
        continue_with=call.handed_over.append,
        remaining_ms=lambda: 600_000,
        media=container.media_source,
    )
    assert consumer.run().reason == "stream ended"
    # Final texts are stored as Ink sends them: a delta after the first starts with its space.
    assert [text.strip() for text in call.transcripts()] == UTTERANCES
    assert all(s.endpoint == "manual" for s in call.ink_sessions())


def test_the_consumer_hands_over_to_its_next_invocation_through_lambda(
    env: LocalCloud, caller: tuple[bytes, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real handler, short on time, checkpoints and invokes itself; the Lambda emulator runs the sequel."""
    import threading
    import time

    from tests.fixtures.cloud import ROOT
    from voicebridge_dev.local.runner import invoke
    from voicebridge_dev.template import function_spec, load_template

    contact_id = str(uuid.uuid4())
    arn = env.kvs.create_stream(f"connect-handover-{contact_id[:8]}")
    stream = env.kvs.stream(arn)
    start = stream.begin_contact(contact_id, "instance-1")
    store = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))
    claim = store.claim(contact_id, arn, start.fragment_number, [CUSTOMER], start_timestamp_ms=start.timestamp_ms)
    assert claim[0] is Claim.CLAIMED

    def live_call() -> None:
        # The caller's audio arrives as the call goes on, so the stream is still live at the hand-over.
        source = caller[0]
        for at in range(0, len(source), 16000):
            stream.append("AUDIO_FROM_CUSTOMER", source[at : at + 16000])
            time.sleep(0.4)
        stream.end_contact()

    feeder = threading.Thread(target=live_call, daemon=True)
    feeder.start()
    spec = function_spec(load_template(ROOT / "template.yaml"), "TranscribeStreamFunction")
    spec.environment.update({"CONSUMER_HANDOFF_MS": "20000", "KVS_READ_TIMEOUT_MS": "1000"})
    spec.timeout_s = 22  # inside the hand-over window after two seconds
    container.reset()
    try:
        first = invoke(spec, {"ContactId": contact_id, "Generation": 0})
    finally:
        container.reset()
    assert (first["Result"], first["Reason"]) == ("OK", "handoff")
    feeder.join(15)

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        checkpoint = store.load(contact_id)
        if checkpoint is not None and checkpoint.state == "stopped":
            break
        time.sleep(0.2)
    assert checkpoint is not None and (checkpoint.state, checkpoint.generation) == ("stopped", 1)
    assert checkpoint.invocations == 2
    assert [t.transcript for t in store.turns_after(contact_id, after=-1, limit=10)] == UTTERANCES


# -- bad days: listening never gets stuck, and always says what is true


def test_getmedia_refused_again_and_again_is_retried_until_the_audio_is_read(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    call = Call(env, caller[0])
    env.kvs.inject_fault(KvsFault(kind="throttle", count=8))
    outcome = call.consumer(0).run()
    assert outcome.reason == "stream ended" and outcome.reconnects >= 8
    assert call.transcripts() == UTTERANCES


def test_a_consumer_that_fails_records_why_and_a_new_start_takes_over(env: LocalCloud) -> None:
    from voicebridge.errors import ConfigurationError

    contact_id = str(uuid.uuid4())
    store = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))
    missing = "arn:aws:kinesisvideo:us-east-1:111111111111:stream/no-such-stream/1"
    store.claim(contact_id, missing, "91343852333181452199722691208580038832309429352", [CUSTOMER])
    call = Call.__new__(Call)
    call.cloud, call.contact_id, call.store, call.handed_over = env, contact_id, store, []
    call.sessions_before = _sessions_so_far(env)
    with pytest.raises(ConfigurationError):
        call.consumer(0).run()
    stopped = store.load(contact_id)
    assert stopped is not None and stopped.state == "stopped" and "ConfigurationError" in stopped.stop_reason
    assert not stopped.alive(store.now_ms())
    assert store.claim(contact_id, missing, "91343852333181452199722691208580038832309429352", [CUSTOMER])[0] is (
        Claim.TAKEN_OVER
    )


def test_a_hand_off_that_fails_releases_the_claim_so_the_flows_retry_starts_a_consumer(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    from voicebridge_dev.local.lambda_ import Fault as LambdaFault
    from voicebridge_dev.local.lambda_ import FaultKind as LambdaFaultKind

    contact_id = str(uuid.uuid4())
    arn = env.kvs.create_stream(f"connect-handoff-contact-{contact_id[:8]}")
    stream = env.kvs.stream(arn)
    start = stream.begin_contact(contact_id, "instance-1")
    stream.append("AUDIO_FROM_CUSTOMER", caller[1][0] + bytes(16000 * 2))
    stream.end_contact()
    audio = {"StreamARN": arn, "StartFragmentNumber": start.fragment_number, "StartTimestamp": start.start_timestamp}
    assert env.lambdas is not None
    # Throttled for longer than boto3 retries.
    env.lambdas.inject(LambdaFault(LambdaFaultKind.THROTTLE, count=20, function="TranscribeStreamFunction"))
    refused = _invoke(env, "StartListeningFunction", _connect_event(contact_id, audio))
    env.lambdas.clear_faults()
    assert (refused["Result"], refused["ErrorCode"]) == ("Error", "HandOffFailed")
    retried = _invoke(env, "StartListeningFunction", _connect_event(contact_id, audio))
    assert (retried["Result"], retried["AlreadyListening"]) == ("OK", "false")
    heard = _invoke(env, "AwaitTurnFunction", _connect_event(contact_id, audio, AfterTurn="-1"))
    assert (heard["Result"], heard["Transcript"]) == ("Turn", UTTERANCES[0])


def test_a_refused_hand_over_keeps_the_checkpoint_and_is_tried_again(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    call = Call(env, caller[0][: 16000 * 4])
    attempts: list[int] = []

    def continue_with(payload: dict[str, Any]) -> None:
        checkpoint = call.store.load(call.contact_id)
        assert checkpoint is not None
        # The checkpoint names the successor only once the successor has been accepted.
        attempts.append(checkpoint.generation)
        if len(attempts) == 1:
            raise RuntimeError("TooManyRequestsException")
        call.handed_over.append(payload)

    consumer = call.consumer(0, remaining_ms=lambda: 10_000, ink_catch_up="off")
    consumer._continue_with = continue_with
    outcome = consumer.run()
    assert outcome.reason == "handoff"
    assert attempts == [0, 0]
    assert call.store.load(call.contact_id).generation == 1  # type: ignore[union-attr]


def test_an_ink_model_the_service_does_not_know_stops_listening_at_once_instead_of_reconnecting(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    from voicebridge.errors import ConfigurationError

    call = Call(env, caller[0])
    with pytest.raises(ConfigurationError, match="model_not_found"):
        call.consumer(0, ink_model="ink-3").run()
    # Consumers other tests started may open sessions meanwhile: this call's are the ones asking for ink-3.
    assert len([session for session in call.ink_sessions() if session.model == "ink-3"]) == 1
    stopped = call.store.load(call.contact_id)
    assert stopped is not None and stopped.state == "stopped" and "INK_MODEL" in stopped.stop_reason


def test_the_flows_keyterms_reach_ink_with_the_calls_session(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    # Terms of this call's own: consumers other tests started may open sessions meanwhile.
    keyterms = ("Acme Plus", f"Zorblax {uuid.uuid4().hex[:8]}")
    call = Call(env, caller[0], keyterms=keyterms)
    call.consumer(0).run()
    assert keyterms in [session.keyterms for session in call.ink_sessions()]
    assert call.transcripts() == UTTERANCES


def test_ink_failing_right_after_every_connect_is_reopened_with_growing_back_off(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    from voicebridge_dev.local.ink import ErrorFault

    call = Call(env, caller[0][: 16000 * 3])
    for _ in range(200):
        env.ink.inject(ErrorFault(after_audio_ms=0))
    call.consumer(0).run()
    # Three seconds of audio; with back-off doubling from 0.1 s the sessions number a handful, not one per frame.
    assert len(call.ink_sessions()) <= 12


def test_a_throttled_turn_write_is_retried_until_the_turn_is_stored(
    env: LocalCloud, caller: tuple[bytes, list[bytes]]
) -> None:
    from botocore.exceptions import ClientError

    call = Call(env, caller[0])
    refusals = {"left": 4}

    def throttle_turns(params: dict[str, Any], **_: Any) -> None:
        if params.get("Item", {}).get("TurnKey", {}).get("S", "").startswith(CUSTOMER) and refusals["left"] > 0:
            refusals["left"] -= 1
            raise ClientError(
                {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "throttled"}}, "PutItem"
            )

    dynamodb = container.client("dynamodb")
    dynamodb.meta.events.register("provide-client-params.dynamodb.PutItem", throttle_turns)
    try:
        call.consumer(0).run()
    finally:
        dynamodb.meta.events.unregister("provide-client-params.dynamodb.PutItem", throttle_turns)
    assert refusals["left"] == 0
    assert call.transcripts() == UTTERANCES


def test_await_turn_answers_not_listening_when_the_consumer_stopped_beating(env: LocalCloud) -> None:
    from voicebridge.errors import NotListening
    from voicebridge.polls.next_turn import await_turn

    contact_id = str(uuid.uuid4())
    store = TurnStore(local_physical_id("TurnTable"), container.client("dynamodb"))
    store.claim(contact_id, "arn:stream", "100", [CUSTOMER])
    checkpoint = store.load(contact_id)
    assert checkpoint is not None
    checkpoint.heartbeat_at_ms = store.now_ms() - 60_000
    store.save(checkpoint)
    with pytest.raises(NotListening, match="stopped answering"):
        await_turn(contact_id, {}, store=store, max_wait_ms=200, poll_interval_ms=40, remaining_ms=None)
