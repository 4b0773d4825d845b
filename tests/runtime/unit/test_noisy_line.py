"""A noisy line: the line's noise alone never passes for a caller (no utterance, no speaking mark), a caller's voice
over it is still heard where it is, and a backlog of noise is caught up as a clean line's silence is.

The noises are the simulated caller's line noises (``voicebridge_dev.simulator.line``), made against the caller's
clips: white noise and babble at 20 and 10 dB below their speech."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.fixtures.clock import ManualClock
from tests.fixtures.tracks import SilentInk
from voicebridge.audio.vad import DetectorName, Utterance, VoiceActivity, detector
from voicebridge.ink.pacer import Pacer
from voicebridge.ink.session import TurnListener
from voicebridge.ink.transcriber import MetricSink, TrackTranscriber
from voicebridge.store.turns import TrackProgress
from voicebridge_dev.simulator import load_clips
from voicebridge_dev.simulator.line import LineNoise

CLIPS = load_clips()
RATE = 8000


def line(condition: str) -> LineNoise:
    return LineNoise.of(condition, [clip.samples for clip in CLIPS.values()])


def noisy(condition: str, *parts: float | str) -> tuple[bytes, dict[str, tuple[float, float]]]:
    """Seconds of nobody speaking and clips by name, with ``condition``'s noise under all of it; each clip's span
    (ms)."""
    pieces, spans, at = [], {}, 0
    for part in parts:
        if isinstance(part, str):
            samples = CLIPS[part].samples
            spans[part] = (at / 8, (at + samples.size) / 8)
        else:
            samples = np.zeros(int(part * RATE), dtype=np.int16)
        pieces.append(samples)
        at += samples.size
    return line(condition).added(np.concatenate(pieces), 0).tobytes(), spans


def utterances(name: DetectorName, pcm: bytes) -> list[Utterance]:
    """What the product's detector finds, fed 20 ms at a time as a call delivers it."""
    vad = VoiceActivity(detector=detector(name), close_ms=300)
    for start in range(0, len(pcm), 320):
        vad.feed(pcm[start : start + 320])
    found = list(vad.closed)
    if (still_open := vad.take()) is not None:
        found.append(still_open)
    return found


@pytest.mark.parametrize(
    ("name", "condition"),
    [
        ("silero", "babble-20db"),
        ("silero", "babble-10db"),
        ("energy", "babble-20db"),
        ("energy", "babble-10db"),
        ("energy", "white-10db"),
    ],
)
def test_the_lines_noise_alone_is_no_utterance(name: DetectorName, condition: str) -> None:
    pcm, _ = noisy(condition, 20.0)
    assert utterances(name, pcm) == []


@pytest.mark.parametrize("name", ["silero", "energy"])
def test_a_voice_over_babble_ten_db_below_it_is_found_where_it_is(name: DetectorName) -> None:
    pcm, spans = noisy("babble-10db", 6.0, "balance", 4.0)
    start, end = spans["balance"]
    found = utterances(name, pcm)
    assert found, "the voice was not heard"
    # Every utterance is the caller's: none starts before the clip or outlasts it (babble is no caller).
    assert all(start - 100 <= u.start_ms and u.end_ms <= end + 400 for u in found), found


class Track:
    """The caller's track through a transcriber with the product's voice detector (Silero), and what it did."""

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.marks: list[tuple[int, bool]] = []
        self.sessions: list[SilentInk] = []
        self.pacer = Pacer()
        self.offset = 0
        self.transcriber = TrackTranscriber(
            contact_id="c-noisy",
            track="customer",
            progress=TrackProgress(next_seq=1),
            store=None,  # type: ignore[arg-type]  # no turn is stored here
            open_session=self._open,  # type: ignore[arg-type]  # records what Ink is sent
            sink=MetricSink(threading.Lock()),
            voice_detector="silero",
            clock=self.clock,
            pacer=self.pacer,
            on_speaking=lambda seq, speaking: self.marks.append((seq, speaking)),
        )

    def _open(self, listener: TurnListener, name: str) -> SilentInk:
        self.sessions.append(SilentInk(listener, name))
        return self.sessions[-1]

    def arrives(self, pcm: bytes, *, live: bool = True, block: int = 1600) -> None:
        """Audio as KVS delivers it: live (each block once its audio has been produced), or all at once (a
        backlog)."""
        for start in range(0, len(pcm), block):
            piece = pcm[start : start + block]
            if live:
                self.clock.advance(len(piece) / 16000)
            self.transcriber.audio("100", self.offset, piece, None)
            self.offset += len(piece)

    @property
    def sent(self) -> bytes:
        return b"".join(bytes(session.sent) for session in self.sessions)


@pytest.mark.parametrize("condition", ["babble-20db", "babble-10db"])
def test_babble_alone_never_marks_the_caller_speaking(condition: str) -> None:
    track = Track()
    pcm, _ = noisy(condition, 15.0)
    track.arrives(pcm)
    assert track.marks == []


def test_a_caller_over_babble_is_marked_speaking_when_they_start() -> None:
    track = Track()
    pcm, spans = noisy("babble-10db", 6.0, "balance", 1.0)
    start, _ = spans["balance"]
    track.arrives(pcm[: int(start) * 16])
    assert track.marks == []
    track.arrives(pcm[int(start) * 16 : int(start + 500) * 16])
    assert track.marks == [(1, True)]


@pytest.mark.parametrize("condition", ["white-20db", "white-10db", "babble-20db", "babble-10db", "comfort-noise"])
def test_a_backlog_of_line_noise_is_caught_up_and_the_voice_in_it_sent_whole(condition: str) -> None:
    track = Track()
    pcm, spans = noisy(condition, 4.0, "dispute", 3.0)
    # The consumer starts behind: everything up to a second past the caller's words arrives at once.
    backlog = int(spans["dispute"][1] + 1000) * 16
    track.arrives(pcm[:backlog], live=False)
    track.arrives(pcm[backlog:])
    for _ in range(100):
        track.clock.advance(0.1)
        track.transcriber.keepalive(idle_ms=60_000)
    sound_start, sound_end = (int(spans["dispute"][0] + s * 1000) * 16 for s in CLIPS["dispute"].sound)
    assert track.pacer.skipped_ms >= 2000
    assert pcm[sound_start:sound_end] in track.sent
