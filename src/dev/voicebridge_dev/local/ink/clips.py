"""Transcripts registered with their audio, found again in a stream: by exact byte search, or, on a noisy line, by
normalized cross-correlation.

On a clean line the audio reaches the emulator byte-exact through the pipeline, so a ~200 ms slice (the anchor) of a
clip's voiced middle (the voiced slice nearest it, for a sentence with a pause there) identifies it inside a turn; a raw
byte search finds it at either byte alignment of the stream. On a noisy line (``voicebridge demo --line-noise``) the
caller's clip arrives with the line's noise added, and no byte of it is the clip's; where the byte search finds no clip,
longer anchors (the clip's voiced span in 400 ms pieces for a final, so that a turn that heard only part of the clip
still finds it, and the first piece for a partial) are looked for by normalized cross-correlation: at each lag, the
anchor's dot product with the stream's samples there over the product of their norms (1 for the anchor itself, whatever
the gain). On the simulated caller's clips under white noise or babble 10 dB below the speech, a clip's best piece
correlates at 0.95 or more with it (its quietest down to 0.62), a different clip's pieces stay under 0.52 and noise or
babble alone under 0.42 (tests/dev/unit/test_ink_noisy_line.py checks every pair); a match needs
:data:`MATCH_CORRELATION`, between the two. This is the emulator's stand-in for a recogniser that hears words through
noise, as Cartesia says Ink does (see :mod:`~voicebridge_dev.local.ink.turns`); the threshold and the anchors' lengths
are the emulator's choice.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from voicebridge_dev.local.ink.audio import Samples, decode, frame_levels
from voicebridge_dev.local.ink.errors import InvalidClipError
from voicebridge_dev.local.ink.turns import TurnSettings, voiced_span

# A clip is known by a slice this long of its voiced middle (and of its head, for partial transcripts).
_ANCHOR_MS = 200.0
# Under noise, by longer pieces: the longer the piece, the less a different clip correlates with it by chance.
_PIECE_MS = 400.0
# A clip piece's spectra kept, one per FFT size: a turn's region passes through a few sizes as it grows.
_SPECTRA_KEPT = 2
MATCH_CORRELATION = 0.7
"""The normalized cross-correlation at which a clip's anchor is taken to be in a noisy stream."""

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class _Clip:
    transcript: str
    middle: bytes
    head: bytes
    head_offset: int
    voiced_end: int
    length: int
    pieces: tuple[tuple[int, _Anchor], ...] = field(repr=False, compare=False)
    """The voiced span in pieces of up to :data:`_PIECE_MS`, each with its byte offset from the first voiced sample;
    the first is the head."""


class ClipRegistry:
    """Transcripts registered with their audio (as recorded, on a clean line), found again in a stream. The same
    audio registered again is still one clip (its latest transcript): a caller who says one line twice is registered
    once per line, and each saying is one occurrence of the clip, heard once."""

    def __init__(self, settings: TurnSettings) -> None:
        self._settings = settings
        self._clips: list[_Clip] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._clips)

    def _snapshot(self) -> list[_Clip]:
        with self._lock:
            return list(self._clips)

    def register(self, pcm_s16le: bytes, transcript: str, sample_rate: int) -> None:
        pcm = pcm_s16le[: len(pcm_s16le) // 2 * 2]
        span = voiced_span(decode("pcm_s16le", pcm), self._settings, sample_rate)
        if span is None:
            raise InvalidClipError("the clip has no voiced audio to recognise it by")
        first, end = span
        middle_start, anchor = _voiced_middle(decode("pcm_s16le", pcm), first, end, sample_rate, self._settings)
        piece = min(end - first, _samples_in(sample_rate, _PIECE_MS))
        starts = sorted({*range(first, end - piece + 1, piece), end - piece})
        clip = _Clip(
            transcript=transcript,
            middle=pcm[middle_start * 2 : (middle_start + anchor) * 2],
            head=pcm[first * 2 : (first + anchor) * 2],
            head_offset=first * 2,
            voiced_end=end * 2,
            length=len(pcm),
            pieces=tuple(((at - first) * 2, _Anchor(_samples(pcm[at * 2 : (at + piece) * 2]))) for at in starts),
        )
        with self._lock:
            self._clips = [known for known in self._clips if (known.middle, known.length) != (clip.middle, clip.length)]
            self._clips.append(clip)

    def final_transcript(self, region: bytes) -> str | None:
        """Transcripts of every clip whose middle lies in ``region``, in stream order."""
        clips = self._snapshot()
        found = [(at, clip.transcript) for clip in clips for at in _occurrences(region, clip.middle, clip.length)]
        if not found:
            stream = _Stream(region)
            for clip in clips:
                heads = sorted(
                    at - offset for offset, piece in clip.pieces for at in stream.matches(piece, clip.length)
                )
                found.extend((at, clip.transcript) for at in _one_per_playback(heads, clip.length))
        return " ".join(text for _, text in sorted(found)) if found else None

    def partial_transcript(self, region: bytes) -> str | None:
        """The words of each clip begun in ``region``, in proportion to how much of it has arrived."""
        clips = self._snapshot()
        heads = [(clip, at) for clip in clips for at in _occurrences(region, clip.head, clip.length)]
        if not heads:
            stream = _Stream(region)
            heads = [(clip, at) for clip in clips for at in stream.matches(clip.pieces[0][1], clip.length)]
        found: list[tuple[int, str]] = []
        for clip, at in heads:
            words = clip.transcript.split()
            arrived = len(region) - at
            progress = min(1.0, arrived / max(1, clip.voiced_end - clip.head_offset))
            found.append((at, " ".join(words[: math.floor(progress * len(words))])))
        return " ".join(text for _, text in sorted(found) if text) if found else None


def _samples_in(sample_rate: int, ms: float) -> int:
    return max(1, round(sample_rate * ms / 1000.0))


def _one_per_playback(positions: list[int], stride: int) -> list[int]:
    """The first of each run of ``positions`` (sorted) closer than ``stride`` bytes: one playback of a clip."""
    kept: list[int] = []
    for at in positions:
        if not kept or at - kept[-1] >= stride:
            kept.append(at)
    return kept


def _middle(first: int, end: int, sample_rate: int, ms: float) -> tuple[int, int]:
    """Start and length of the slice of up to ``ms`` centred in the voiced span ``first``..``end``."""
    length = min(end - first, _samples_in(sample_rate, ms))
    return min(max(first, (first + end) // 2 - length // 2), end - length), length


def _voiced_middle(samples: Samples, first: int, end: int, sample_rate: int, settings: TurnSettings) -> tuple[int, int]:
    """Start and length of the anchor: the slice of up to :data:`_ANCHOR_MS` nearest the middle of the voiced span
    with the most voiced frames in it. A sentence said with a long pause has digital silence at its middle, and a
    slice of silence would be found in any quiet stretch of a line."""
    start, length = _middle(first, end, sample_rate, _ANCHOR_MS)
    frame = max(1, round(sample_rate * settings.frame_ms / 1000.0))
    levels = np.array(frame_levels(samples[first:end], frame))
    frames = max(1, length // frame)
    if levels.size <= frames:
        return start, length
    voiced = np.concatenate(([0], np.cumsum(levels >= settings.voiced_dbfs)))
    counts = voiced[frames:] - voiced[:-frames]
    centre = min((start - first) // frame, counts.size - 1)
    if counts[centre] == frames:
        return start, length
    best = max(range(counts.size), key=lambda at: (counts[at], -abs(at - centre)))
    return first + min(best * frame, end - first - length), length


def _samples(pcm_s16le: bytes) -> Floats:
    return decode("pcm_s16le", pcm_s16le).astype(np.float64)


def _occurrences(haystack: bytes, needle: bytes, stride: int) -> list[int]:
    """Where ``needle`` occurs, at most once per ``stride`` bytes: one playback of a clip is one occurrence
    even when its audio repeats itself."""
    positions: list[int] = []
    at = haystack.find(needle)
    while at >= 0:
        positions.append(at)
        at = haystack.find(needle, at + max(stride, len(needle)))
    return positions


class _Anchor:
    """A piece of a clip looked for under noise, with what every search needs of it computed once: its energy, and
    its conjugate spectrum at the FFT sizes of the latest streams searched (at most :data:`_SPECTRA_KEPT`, so a
    clip's memory stays bounded)."""

    def __init__(self, samples: Floats) -> None:
        self.samples = samples
        self.energy = float(np.dot(samples, samples))
        self._spectra: dict[int, npt.NDArray[np.complex128]] = {}

    def spectrum(self, nfft: int) -> npt.NDArray[np.complex128]:
        spectrum = self._spectra.get(nfft)
        if spectrum is None:
            spectrum = np.conj(np.fft.rfft(self.samples, nfft))
            if len(self._spectra) >= _SPECTRA_KEPT:
                self._spectra.pop(next(iter(self._spectra)))
            self._spectra[nfft] = spectrum
        return spectrum


class _Stream:
    """A region of s16le audio, searched for anchors by normalized cross-correlation (its spectrum computed once
    for every anchor of a size)."""

    def __init__(self, region_s16le: bytes) -> None:
        self._x = _samples(region_s16le[: len(region_s16le) // 2 * 2])
        self._energy = np.concatenate(([0.0], np.cumsum(np.square(self._x))))
        self._spectra: dict[int, npt.NDArray[np.complex128]] = {}

    def correlation(self, anchor: _Anchor) -> Floats:
        """The normalized cross-correlation of ``anchor`` at each lag where it lies wholly in the region."""
        n, size = anchor.samples.size, self._x.size
        if n == 0 or size < n or anchor.energy == 0.0:
            return np.zeros(0)
        nfft = 1 << (size + n - 2).bit_length()
        if nfft not in self._spectra:
            self._spectra[nfft] = np.fft.rfft(self._x, nfft)
        dots = np.fft.irfft(self._spectra[nfft] * anchor.spectrum(nfft), nfft)[: size - n + 1]
        window_energy = self._energy[n:] - self._energy[:-n]
        # Silence has no direction: a window with (almost) no energy correlates with nothing.
        audible = window_energy > anchor.energy * 1e-6
        scores: Floats = np.zeros(size - n + 1)
        scores[audible] = dots[audible] / np.sqrt(window_energy[audible] * anchor.energy)
        return scores

    def matches(self, anchor: _Anchor, stride: int) -> list[int]:
        """Byte offsets where ``anchor`` correlates at :data:`MATCH_CORRELATION` or more, the best lag of each
        stretch, at most once per ``stride`` bytes (as :func:`_occurrences`)."""
        scores = self.correlation(anchor)
        step = max(1, stride // 2)
        positions: list[int] = []
        above = np.flatnonzero(scores >= MATCH_CORRELATION)
        while above.size:
            first = int(above[0])
            best = first + int(np.argmax(scores[first : first + step]))
            positions.append(best * 2)
            above = above[above >= best + step]
        return positions
