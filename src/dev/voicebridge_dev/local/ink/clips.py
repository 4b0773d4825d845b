"""Transcripts registered with their audio, found again in a stream by exact byte search."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

from voicebridge_dev.local.ink.audio import decode
from voicebridge_dev.local.ink.errors import InvalidClipError
from voicebridge_dev.local.ink.turns import TurnSettings, voiced_span

# A clip is known by a slice this long of its voiced middle (and of its head, for partial transcripts).
_ANCHOR_MS = 200.0


@dataclass(frozen=True)
class _Clip:
    transcript: str
    middle: bytes
    head: bytes
    head_offset: int
    voiced_end: int
    length: int


class ClipRegistry:
    """Transcripts registered with their audio, found again in a stream by exact byte search.

    The audio reaches the emulator byte-exact through the pipeline, so a ~200 ms slice of a clip's voiced
    middle identifies it inside a turn; a raw byte search finds the slice at either byte alignment of the
    stream. The same audio registered again is still one clip (its latest transcript): a caller who says one line
    twice is registered once per line, and each saying is one occurrence of the clip, heard once.
    """

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
        anchor = min(end - first, max(1, round(sample_rate * _ANCHOR_MS / 1000.0)))
        centre = (first + end) // 2
        middle_start = min(max(first, centre - anchor // 2), end - anchor)
        clip = _Clip(
            transcript=transcript,
            middle=pcm[middle_start * 2 : (middle_start + anchor) * 2],
            head=pcm[first * 2 : (first + anchor) * 2],
            head_offset=first * 2,
            voiced_end=end * 2,
            length=len(pcm),
        )
        with self._lock:
            self._clips = [known for known in self._clips if (known.middle, known.length) != (clip.middle, clip.length)]
            self._clips.append(clip)

    def final_transcript(self, region: bytes) -> str | None:
        """Transcripts of every clip whose middle lies in ``region``, in stream order."""
        found: list[tuple[int, str]] = []
        for clip in self._snapshot():
            found.extend((at, clip.transcript) for at in _occurrences(region, clip.middle, clip.length))
        return " ".join(text for _, text in sorted(found)) if found else None

    def partial_transcript(self, region: bytes) -> str | None:
        """The words of each clip begun in ``region``, in proportion to how much of it has arrived."""
        found: list[tuple[int, str]] = []
        for clip in self._snapshot():
            words = clip.transcript.split()
            for at in _occurrences(region, clip.head, clip.length):
                arrived = len(region) - at
                progress = min(1.0, arrived / max(1, clip.voiced_end - clip.head_offset))
                found.append((at, " ".join(words[: math.floor(progress * len(words))])))
        return " ".join(text for _, text in sorted(found) if text) if found else None


def _occurrences(haystack: bytes, needle: bytes, stride: int) -> list[int]:
    """Where ``needle`` occurs, at most once per ``stride`` bytes: one playback of a clip is one occurrence
    even when its audio repeats itself."""
    positions: list[int] = []
    at = haystack.find(needle)
    while at >= 0:
        positions.append(at)
        at = haystack.find(needle, at + max(stride, len(needle)))
    return positions
