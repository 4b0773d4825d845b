"""Voice-activity figures from PCM, with numpy: where the caller's utterances start and end.

Used to measure Ink's turn latency from the end of the caller's *voiced* audio (not from when a silence timer
fired), to drive manual finalization for models without server-side turn detection, and to know which audio is
settled (belongs to a finished turn or to silence) so a consumer never replays a finished turn.

Each 20 ms frame is judged voiced or not by a :class:`FrameDetector`: :class:`EnergyDetector` (the frame's RMS level
above a threshold) or :class:`~voicebridge.audio.silero.SileroDetector` (Silero VAD's speech probability, which tells
speech from line noise that is as loud); ``VOICE_DETECTOR`` chooses. Either one's decision is then held to the line's
own noise (:class:`AboveNoiseFloor`): a frame is voiced only if it is also well above the level the line sits at when
nobody speaks, so stationary noise and babble (other voices, which Silero rightly calls speech) do not pass for the
caller. An utterance starts after ``min_voiced_ms`` of voiced frames (a click does not start one) and closes after
``close_ms`` without voice, whichever detector judged. Trackers of one stream that differ only in how they group its
frames share one detector's decisions (:class:`SharedDetector`), so each frame is judged once.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import numpy.typing as npt

SAMPLE_RATE = 8000
BYTES_PER_MS = SAMPLE_RATE * 2 // 1000
DetectorName = Literal["silero", "energy"]


class FrameDetector(Protocol):
    """Judges frames of 8 kHz audio voiced or not, in stream order (a detector may carry state between calls)."""

    def voiced(self, frames: npt.NDArray[np.float32]) -> list[bool]:
        """One decision per row of ``frames``: a frame's samples, scaled to ±1."""
        ...

    @property
    def change_lead_ms(self) -> float:
        """How long before the start of the newest frame judged began the audio that changed its decision.

        Meaningful when that frame's decision differs from the frame before it: a detector that judges a frame by a
        window of audio ending inside it (a model's) dates a voice's start, or its end, to that window's start.
        """
        ...


@dataclass
class EnergyDetector:
    """A frame is voiced when its RMS level is above ``threshold_dbfs``."""

    threshold_dbfs: float = -40.0
    change_lead_ms: float = 0.0

    def voiced(self, frames: npt.NDArray[np.float32]) -> list[bool]:
        return self.voiced_at(frame_levels_db(frames))

    def voiced_at(self, levels_db: npt.NDArray[np.float64]) -> list[bool]:
        """One decision per frame level (dBFS): what :class:`AboveNoiseFloor` has already measured is not measured
        again."""
        return [bool(loud) for loud in (levels_db > self.threshold_dbfs).tolist()]


def frame_levels_db(frames: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    """Each row's RMS level in dBFS (digital silence at -100)."""
    power = np.mean(np.square(frames.astype(np.float64)), axis=1)
    levels: npt.NDArray[np.float64] = 10.0 * np.log10(np.maximum(power, 1e-10))
    return levels


@dataclass
class NoiseFloor:
    """The level a line sits at when nobody speaks: a low percentile of its latest frames' levels.

    Speech comes in syllables with gaps between them, so even while a caller talks a tenth of the frames of the last
    few seconds are the line's own noise; a percentile needs no decision about which frames are speech (Silero calls
    babble speech, so "the unvoiced frames" would never be babble's). It follows a line that gets noisier or quieter
    within ``window_frames``.

    A few frames say little of a line, and babble dips between its syllables: over the first ``learn_frames`` the
    percentile taken falls from the median to ``percentile``, so one dip early on is not taken for the floor (a
    line that starts quiet, the usual case, still has its floor from its first frames). The floor is never above
    ``ceiling_db``, so a stream that begins in the middle of a voice (a consumer taking over a call), with no quiet
    frames yet to learn from, does not take the voice for the line's noise. The simulated caller speaks at -21 dBFS
    (active level): noise above -30 dBFS is within 10 dB of such a voice, past where the gate can tell them apart by
    level (the `vad` bench's loudest noise, white noise 10 dB below that voice, sits at -31 dBFS)."""

    window_frames: int = 250
    """Five seconds of 20 ms frames: longer than a caller speaks without a gap."""
    percentile: float = 10.0
    ceiling_db: float = -30.0
    learn_frames: int = 50
    """One second."""
    spread_percentiles: float = 20.0
    _levels: deque[float] = field(default_factory=deque)
    _sorted: list[float] = field(default_factory=list)

    def add(self, level_db: float) -> None:
        """The next frame's level."""
        self._levels.append(level_db)
        bisect.insort(self._sorted, level_db)
        if len(self._levels) > self.window_frames:
            del self._sorted[bisect.bisect_left(self._sorted, self._levels.popleft())]

    @property
    def level_db(self) -> float:
        """The floor now (``ceiling_db`` before any frame)."""
        if not self._sorted:
            return self.ceiling_db
        return min(self._at(0.0), self.ceiling_db)

    @property
    def spread_db(self) -> float:
        """How far the line's quieter frames spread above the floor: the level ``spread_percentiles`` above the
        floor's, less the floor's (0 before any frame). A steady hiss spreads under a decibel, babble several."""
        if not self._sorted:
            return 0.0
        return self._at(self.spread_percentiles) - self._at(0.0)

    def _at(self, above: float) -> float:
        heard = len(self._sorted)
        learnt = min(1.0, heard / self.learn_frames)
        percentile = 50.0 - (50.0 - self.percentile) * learnt + above
        return self._sorted[min(heard - 1, int(heard * percentile / 100))]


@dataclass
class AboveNoiseFloor:
    """A detector's voiced frames, kept only where the line is clearly above its noise floor.

    The level judged is the mean power of the last ``smooth_frames`` frames (100 ms): babble's level swings from
    frame to frame with its voices' syllables, a caller's voice over it stays up for longer. How far above the floor
    is clear depends on the noise: a steady hiss hardly moves (100 ms of white noise stays within 1.5 dB of its
    floor), babble rises 11 dB above its floor by itself. So the margin is ``margin_db`` plus ``spread_factor`` times
    the line's spread (:attr:`NoiseFloor.spread_db`), at most ``max_margin_db``: about 5 dB under white noise, 12 under
    babble. Once voiced, the voice holds down to ``hold`` of the margin (the weak end of a syllable stays the
    caller's). On a clean line the floor is near digital silence and the gate passes whatever the detector passes;
    under noise it asks what a listener asks: is this louder than the line is anyway. The settings are the `vad`
    bench's (docs/benchmarks.md, Voice detection): no false start in any of its line noises, babble 10 dB below the
    speech included."""

    inner: FrameDetector
    margin_db: float = 4.0
    spread_factor: float = 2.0
    max_margin_db: float = 12.0
    hold: float = 0.5
    smooth_frames: int = 5
    floor: NoiseFloor = field(default_factory=NoiseFloor)
    _voiced: bool = False
    _recent: deque[float] = field(default_factory=deque)
    """The latest frames' powers, newest last."""

    def voiced(self, frames: npt.NDArray[np.float32]) -> list[bool]:
        decisions = []
        levels = frame_levels_db(frames)
        inner = self.inner
        judgements = inner.voiced_at(levels) if isinstance(inner, EnergyDetector) else inner.voiced(frames)
        for level, judged in zip(levels.tolist(), judgements, strict=True):
            self.floor.add(level)
            self._recent.append(10 ** (level / 10))
            if len(self._recent) > self.smooth_frames:
                self._recent.popleft()
            recent_db = 10 * math.log10(sum(self._recent) / len(self._recent))
            margin_db = min(self.margin_db + self.spread_factor * self.floor.spread_db, self.max_margin_db)
            needed_db = margin_db * (self.hold if self._voiced else 1.0)
            self._voiced = judged and recent_db - self.floor.level_db > needed_db
            decisions.append(self._voiced)
        return decisions

    @property
    def change_lead_ms(self) -> float:
        return self.inner.change_lead_ms


class SharedDetector:
    """One detector's decision on each frame of one stream, read by several :class:`VoiceActivity` fed that stream.

    The streaming agent follows the caller's voice twice over the same audio — for Ink's turns and for barge-in, which
    differ in how long a pause closes an utterance and where their positions count from — and judging a frame is the
    costly part (Silero's model, the noise floor): each frame is judged once, by whichever reader reaches it first, and
    the others take that decision and its change lead. A decision is kept until every reader has read it.

    Readers must be made before the first frame is judged and fed the same frames in the same order (from one
    thread): a reader fed a frame other than the one judged at its place gets a :class:`ValueError`, not someone
    else's decision."""

    def __init__(self, inner: FrameDetector) -> None:
        self._inner = inner
        self._judged: deque[tuple[int, bool, float]] = deque()
        """Each frame not yet read by every reader: its samples' fingerprint, its decision, its change lead."""
        self._first = 0
        """The stream's frame number of ``_judged[0]``."""
        self._readers: list[_SharedReader] = []

    def reader(self) -> FrameDetector:
        """A detector for one :class:`VoiceActivity`, from the stream's first frame."""
        if self._first or self._judged:
            raise ValueError("a shared detector's readers are made before its first frame")
        reader = _SharedReader(self)
        self._readers.append(reader)
        return reader

    def judge(self, reader: _SharedReader, frame: npt.NDArray[np.float32]) -> bool:
        """The decision on ``reader``'s next frame, judged now if no reader has reached it yet."""
        place = reader.frames_read - self._first
        fingerprint = hash(frame.tobytes())
        if place == len(self._judged):
            voiced = self._inner.voiced(frame[np.newaxis])[0]
            self._judged.append((fingerprint, voiced, self._inner.change_lead_ms))
        judged_fingerprint, voiced, change_lead_ms = self._judged[place]
        if judged_fingerprint != fingerprint:
            raise ValueError(f"a shared detector's reader was fed other audio than frame {reader.frames_read}'s")
        reader.frames_read += 1
        reader.change_lead_ms = change_lead_ms
        slowest = min(each.frames_read for each in self._readers)
        while self._first < slowest:
            self._judged.popleft()
            self._first += 1
        return voiced


@dataclass
class _SharedReader:
    """One reader of a :class:`SharedDetector`: where it is in the stream."""

    shared: SharedDetector
    frames_read: int = 0
    change_lead_ms: float = 0.0

    def voiced(self, frames: npt.NDArray[np.float32]) -> list[bool]:
        return [self.shared.judge(self, frame) for frame in frames]


def detector(name: DetectorName) -> FrameDetector:
    """A fresh detector of the kind named, held to the line's noise floor (Silero's model is loaded on its first
    frame)."""
    if name == "energy":
        return AboveNoiseFloor(EnergyDetector())
    from voicebridge.audio.silero import SileroDetector

    return AboveNoiseFloor(SileroDetector())


@dataclass(frozen=True)
class Utterance:
    """A voiced run, in ms from the start of the stream."""

    start_ms: float
    end_ms: float


@dataclass
class VoiceActivity:
    """Utterances in a stream of 8 kHz s16le audio, fed as it arrives."""

    detector: FrameDetector = field(default_factory=EnergyDetector)
    frame_ms: int = 20
    min_voiced_ms: int = 60
    close_ms: int = 300
    position_ms: float = 0.0
    closed: deque[Utterance] = field(default_factory=deque)
    """Utterances that ended (``close_ms`` of silence followed), oldest first, until taken."""
    open_start_ms: float | None = None
    last_voiced_end_ms: float | None = None
    _run_ms: float = 0.0
    _run_start_ms: float = 0.0
    _pending: bytes = b""

    def feed(self, pcm: bytes) -> None:
        """Consume audio; frames are evaluated as soon as they are whole."""
        frame_bytes = self.frame_ms * BYTES_PER_MS
        data = self._pending + pcm
        whole = len(data) - len(data) % frame_bytes
        if whole:
            samples = np.frombuffer(data, dtype="<i2", count=whole // 2).astype(np.float32) / 32768.0
            # One frame at a time, so the detector's change lead is the frame's own.
            for frame in samples.reshape(-1, 1, frame_bytes // 2):
                self._frame(self.detector.voiced(frame)[0])
        self._pending = data[whole:]

    def _frame(self, voiced: bool) -> None:
        start = self.position_ms
        self.position_ms += self.frame_ms
        if voiced:
            if self._run_ms == 0:
                self._run_start_ms = max(0.0, start - self.detector.change_lead_ms)
            self._run_ms += self.frame_ms
            if self._run_ms >= self.min_voiced_ms:
                if self.open_start_ms is None:
                    self.open_start_ms = self._run_start_ms
                self.last_voiced_end_ms = self.position_ms
            return
        if self._run_ms >= self.min_voiced_ms and self.last_voiced_end_ms == start:
            # The voice ended where the window that found it gone began.
            self.last_voiced_end_ms = max(self._run_start_ms, start - self.detector.change_lead_ms)
        self._run_ms = 0
        voiced_end = self.last_voiced_end_ms
        if self.open_start_ms is not None and voiced_end is not None and self.position_ms - voiced_end >= self.close_ms:
            self.closed.append(Utterance(self.open_start_ms, voiced_end))
            self.open_start_ms = None

    @property
    def speaking(self) -> bool:
        """An utterance is open, or a voiced run is building up."""
        return self.open_start_ms is not None or self._run_ms > 0

    def unvoiced_since(self, position_ms: float) -> bool:
        """No voice from ``position_ms`` to now, none building up, and no utterance open."""
        voiced_end = self.last_voiced_end_ms
        return not self.speaking and (voiced_end is None or voiced_end <= position_ms)

    @property
    def silent_for_ms(self) -> float:
        """How long the stream has been unvoiced (the whole stream if it never was)."""
        if self.last_voiced_end_ms is None:
            return self.position_ms
        return self.position_ms - self.last_voiced_end_ms

    def take(self) -> Utterance | None:
        """The oldest utterance not yet taken: a closed one, else the open one so far (which is then closed)."""
        if self.closed:
            return self.closed.popleft()
        if self.open_start_ms is not None and self.last_voiced_end_ms is not None:
            utterance = Utterance(self.open_start_ms, self.last_voiced_end_ms)
            self.open_start_ms = None
            return utterance
        return None

    def take_until(self, position_ms: float) -> Utterance | None:
        """Everything voiced before ``position_ms`` as one span, from its first voiced frame to its last; what is
        voiced from ``position_ms`` on stays, to be taken later.

        A turn is all the voiced audio since the previous turn up to where the recogniser had heard when it ended the
        turn: pauses inside it (a comma, a breath) make several utterances here but one turn there, and none of them
        may be left over for the next turn."""
        start: float | None = None
        end: float | None = None
        while self.closed and self.closed[0].start_ms < position_ms:
            utterance = self.closed.popleft()
            start = utterance.start_ms if start is None else start
            end = min(utterance.end_ms, position_ms)
            if utterance.end_ms > position_ms:
                # Voice runs on past what was heard: the rest is the next turn's.
                self.closed.appendleft(Utterance(position_ms, utterance.end_ms))
                break
        open_start = self.open_start_ms
        if open_start is not None and open_start < position_ms and self.last_voiced_end_ms is not None:
            start = open_start if start is None else start
            end = min(self.last_voiced_end_ms, position_ms)
            # Still voiced past the position: the utterance goes on as the next turn's; else it is this turn's.
            self.open_start_ms = position_ms if self.last_voiced_end_ms > position_ms else None
        if start is None or end is None:
            return None
        return Utterance(start, end)

    def discard_before(self, position_ms: float) -> int:
        """Forget the closed utterances that ended before ``position_ms`` (sounds the recogniser heard and made no
        turn of: a cough, an "mm"); how many."""
        dropped = 0
        while self.closed and self.closed[0].end_ms <= position_ms:
            self.closed.popleft()
            dropped += 1
        return dropped

    def next_start_ms(self) -> float | None:
        """Where the next untaken utterance starts, if any has begun."""
        if self.closed:
            return self.closed[0].start_ms
        if self.open_start_ms is not None:
            return self.open_start_ms
        if self._run_ms > 0:
            return self._run_start_ms
        return None
