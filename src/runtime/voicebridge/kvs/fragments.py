"""From Matroska events to the caller's audio: which fragment each frame is in, whose contact it is, and where a
GetMedia read must resume. Sans-I/O: fed the reader's events, it returns what to do with them.

What Connect writes (docs/protocols.md, *Kinesis Video Streams*): one Matroska document per fragment, whose Tags carry
``AWS_KINESISVIDEO_FRAGMENT_NUMBER`` and ``AWS_KINESISVIDEO_PRODUCER_TIMESTAMP`` *before* the Cluster, and
``ContactId`` and GetMedia's own tags (``AWS_KINESISVIDEO_MILLIS_BEHIND_NOW``, ``AWS_KINESISVIDEO_CONTINUATION_TOKEN``,
or ``AWS_KINESISVIDEO_ERROR_CODE``) *after* it. Streams are reused across contacts, so a fragment's contact is known
only once the fragment has been read.

- **Audio of another contact never reaches Ink.** A contact's fragments are one unbroken run of the stream, from
  the fragment Connect names as the start of the caller's audio to where its streaming stops; another contact can
  only come after it. So a fragment's frames are released at once when the fragment is known to be this
  contact's: it is the start fragment or lies between it and a fragment already known to be this contact's, its
  ``ContactId`` tag was already read, or it continues without a gap (producer time within :data:`CONTINUITY_MS`)
  the fragment before it, known to be this contact's — the audio of one call is continuous, and a reused stream's
  next contact starts with a new call, seconds later at the least. Any other fragment is held, at most one
  fragment, until its ``ContactId`` tag says whose it is; a fragment of another contact ends the read
  (:class:`ContactChanged`).
- **Nothing from before the caller's audio.** A fragment numbered below Connect's ``StartFragmentNumber`` belongs to
  an earlier contact of the stream and is skipped (the first read starts a little early, by timestamp, to be sure
  of reaching the start fragment under either reading of GetMedia's ``FRAGMENT_NUMBER`` selector).
- **Where to resume.** The router remembers, for recent fragments, the fragment before each and its producer
  time, and the continuation token of the last complete one (:meth:`FragmentRouter.resume_selector`,
  :meth:`FragmentRouter.locate`).

::

    router = FragmentRouter(contact_id, start_fragment="913…352", tracks={"AUDIO_FROM_CUSTOMER": "customer"})
    for event in reader.feed(chunk):
        for action in router.feed(event):
            ...  # Audio → the track's transcriber; ContactChanged → stop; StreamErrorTag → reconnect
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

from voicebridge.kvs.media import StartSelector
from voicebridge.kvs.mkv import AudioFrame, ClusterStart, DocumentStart, Event, Tags

FRAGMENT_NUMBER = "AWS_KINESISVIDEO_FRAGMENT_NUMBER"
PRODUCER_TIMESTAMP = "AWS_KINESISVIDEO_PRODUCER_TIMESTAMP"
CONTINUATION_TOKEN = "AWS_KINESISVIDEO_CONTINUATION_TOKEN"
MILLIS_BEHIND_NOW = "AWS_KINESISVIDEO_MILLIS_BEHIND_NOW"
ERROR_CODE = "AWS_KINESISVIDEO_ERROR_CODE"
ERROR_ID = "AWS_KINESISVIDEO_ERROR_ID"
CONTACT_ID = "ContactId"

CONTINUITY_MS = 100
"""A fragment whose producer time starts within this of where the previous one ended continues the same audio."""
SAMPLE_BYTES_PER_MS = 16
_REMEMBERED = 256


@dataclass(frozen=True, slots=True)
class Audio:
    """A frame of a track, placed: ``offset`` bytes into ``fragment``'s audio of that track."""

    track: str
    fragment: str
    offset: int
    pcm: bytes
    produced_end_ms: float | None
    """Connect's clock (epoch ms) at the end of the frame, when the fragment's tags gave it."""


@dataclass(frozen=True, slots=True)
class ContactChanged:
    """The stream now carries another contact: this contact's audio is over."""

    other: str


@dataclass(frozen=True, slots=True)
class StreamErrorTag:
    """GetMedia reported an error inside the stream; the read must resume elsewhere."""

    code: str
    error_id: str | None


@dataclass(frozen=True, slots=True)
class Lag:
    """How far behind the stream's head this read is (``AWS_KINESISVIDEO_MILLIS_BEHIND_NOW``)."""

    ms: float


@dataclass(frozen=True, slots=True)
class TagProblem:
    """A tag whose value cannot be read; reported once per fragment, never fatal."""

    tag: str
    value: str


Action: TypeAlias = Audio | ContactChanged | StreamErrorTag | Lag | TagProblem


@dataclass(frozen=True, slots=True)
class FragmentInfo:
    """What a later read needs to know of a fragment seen before."""

    previous: str | None
    producer_ms: int | None


@dataclass
class _Fragment:
    number: str | None = None
    producer_ms: float | None = None
    cluster_ms: float | None = None
    offsets: dict[str, int] = field(default_factory=dict)
    ours: bool = False
    skipped: bool = False
    contact_seen: bool = False
    held: list[AudioFrame] = field(default_factory=list)
    end_ms: float | None = None
    """Where its audio ends on Connect's clock, from the frames placed so far."""


class FragmentRouter:
    """Routes one GetMedia read's events; a new read starts a new router, sharing :attr:`history`."""

    def __init__(
        self,
        contact_id: str,
        *,
        start_fragment: str,
        tracks: Mapping[str, str],
        history: FragmentHistory | None = None,
    ) -> None:
        self.contact_id = contact_id
        self._start = _number(start_fragment)
        self._tracks = tracks
        self.history = history if history is not None else FragmentHistory()
        self._fragment = _Fragment()

    def feed(self, event: Event) -> list[Action]:
        """What to do about one reader event, in order."""
        if isinstance(event, AudioFrame):
            return self._frame(event)
        if isinstance(event, Tags):
            return self._tags(event.tags)
        if isinstance(event, ClusterStart):
            self._fragment.cluster_ms = event.timecode_ms
            return []
        if isinstance(event, DocumentStart):
            return self._next_document()
        return []

    def end(self) -> list[Action]:
        """The read ended: what was held stays unsent (the next read delivers it again)."""
        self._fragment.held.clear()
        return []

    # -- per event

    def _frame(self, frame: AudioFrame) -> list[Action]:
        fragment = self._fragment
        if fragment.skipped or frame.track_name not in self._tracks:
            return []
        if fragment.number is None or not fragment.ours:
            fragment.held.append(frame)
            return []
        return [self._place(fragment, frame)]

    def _tags(self, tags: Mapping[str, str]) -> list[Action]:
        fragment = self._fragment
        actions: list[Action] = []
        number = tags.get(FRAGMENT_NUMBER)
        if number is not None:
            if number.isdigit():
                self._numbered(fragment, number)
            else:
                actions.append(TagProblem(FRAGMENT_NUMBER, number[:64]))
        producer = tags.get(PRODUCER_TIMESTAMP)
        if producer is not None:
            seconds = _seconds(producer)
            if seconds is None:
                actions.append(TagProblem(PRODUCER_TIMESTAMP, producer[:64]))
            else:
                fragment.producer_ms = seconds * 1000
                self._check_continuity(fragment)
        contact = tags.get(CONTACT_ID)
        if contact is not None and not fragment.skipped:
            fragment.contact_seen = True
            if contact != self.contact_id:
                fragment.held.clear()
                return [*actions, ContactChanged(contact)]
            self._mark_ours(fragment)
        behind = tags.get(MILLIS_BEHIND_NOW)
        if behind is not None and behind.isdigit():
            actions.append(Lag(float(behind)))
        token = tags.get(CONTINUATION_TOKEN)
        if token and fragment.number is not None and not fragment.skipped:
            self.history.token = token
        error = tags.get(ERROR_CODE)
        if error:
            fragment.held.clear()
            return [*actions, StreamErrorTag(error, tags.get(ERROR_ID))]
        return actions + self._release(fragment)

    def _next_document(self) -> list[Action]:
        ended = self._fragment
        actions: list[Action] = []
        if ended.held and ended.number is None:
            actions.append(TagProblem(FRAGMENT_NUMBER, "missing: the fragment's audio cannot be placed"))
        elif ended.held and not ended.contact_seen:
            # A stream whose fragments carry no ContactId at all: the fragment was held as long as allowed.
            self._mark_ours(ended)
            actions = self._release(ended)
        self._fragment = _Fragment()
        return actions

    # -- fragments

    def _numbered(self, fragment: _Fragment, number: str) -> None:
        fragment.number = number
        self.history.saw(number)
        if self._start is not None and int(number) < self._start:
            fragment.skipped = True
            fragment.held.clear()
            return
        verified = self.history.ours_up_to
        if int(number) == self._start or (verified is not None and int(number) <= verified):
            self._mark_ours(fragment)
        self._check_continuity(fragment)

    def _check_continuity(self, fragment: _Fragment) -> None:
        if fragment.number is None or fragment.producer_ms is None:
            return
        self.history.timed(fragment.number, int(fragment.producer_ms))
        if fragment.ours or fragment.skipped:
            return
        known = self.history.locate(fragment.number)
        previous_end = self.history.end_of(known.previous) if known and known.previous else None
        if previous_end is not None and abs(fragment.producer_ms - previous_end) <= CONTINUITY_MS:
            self._mark_ours(fragment)

    def _mark_ours(self, fragment: _Fragment) -> None:
        fragment.ours = True
        if fragment.number is not None:
            self.history.ours(fragment.number)

    def _release(self, fragment: _Fragment) -> list[Action]:
        if not fragment.ours or fragment.number is None or not fragment.held:
            return []
        held, fragment.held = fragment.held, []
        return [self._place(fragment, frame) for frame in held]

    def _place(self, fragment: _Fragment, frame: AudioFrame) -> Audio:
        track = self._tracks[frame.track_name]
        offset = fragment.offsets.get(track, 0)
        fragment.offsets[track] = offset + len(frame.pcm)
        produced_end = None
        if fragment.producer_ms is not None and fragment.cluster_ms is not None:
            produced_end = fragment.producer_ms + (frame.timecode_ms - fragment.cluster_ms)
            produced_end += len(frame.pcm) / SAMPLE_BYTES_PER_MS
            fragment.end_ms = max(fragment.end_ms or produced_end, produced_end)
        assert fragment.number is not None
        if fragment.end_ms is not None:
            self.history.ended(fragment.number, fragment.end_ms)
        return Audio(track, fragment.number, offset, frame.pcm, produced_end)

    # -- resuming

    @property
    def in_progress(self) -> str | None:
        """The fragment being read (its number, once known)."""
        return self._fragment.number if not self._fragment.skipped else None

    def resume_selector(self) -> StartSelector | None:
        """Where a reconnect resumes without a gap: after the last complete fragment (its continuation token), else
        after the fragment before the one in progress, else with the chunk containing its producer time."""
        if self.history.token:
            return StartSelector.continuation(self.history.token)
        current = self.in_progress or self.history.latest
        return self.history.selector_for(current) if current else None


class FragmentHistory:
    """Fragments seen by this consumer, oldest forgotten first: each one's predecessor and producer time, how far
    the stream is known to be this contact's, and the last continuation token."""

    def __init__(self, *, ours_up_to: str | None = None) -> None:
        self._known: OrderedDict[str, FragmentInfo] = OrderedDict()
        self._ends: OrderedDict[str, float] = OrderedDict()
        self.latest: str | None = None
        self.token: str | None = None
        """The continuation token of the last complete fragment: GetMedia resumes after it."""
        self.ours_up_to: int | None = int(ours_up_to) if ours_up_to and ours_up_to.isdigit() else None
        """The highest fragment known to be this contact's: everything from the start fragment to it is."""

    def ours(self, number: str) -> None:
        if self.ours_up_to is None or int(number) > self.ours_up_to:
            self.ours_up_to = int(number)

    def ended(self, number: str, end_ms: float) -> None:
        self._ends[number] = end_ms
        self._ends.move_to_end(number)
        while len(self._ends) > _REMEMBERED:
            self._ends.popitem(last=False)

    def end_of(self, number: str) -> float | None:
        """Where fragment ``number``'s audio ended on Connect's clock, if it was placed."""
        return self._ends.get(number)

    def saw(self, number: str) -> None:
        if number in self._known:
            return
        previous = self.latest if self.latest is not None and int(self.latest) < int(number) else None
        self._known[number] = FragmentInfo(previous, None)
        if self.latest is None or int(number) > int(self.latest):
            self.latest = number
        while len(self._known) > _REMEMBERED:
            self._known.popitem(last=False)

    def timed(self, number: str, producer_ms: int) -> None:
        known = self._known.get(number)
        if known is not None and known.producer_ms is None:
            self._known[number] = FragmentInfo(known.previous, producer_ms)

    def locate(self, number: str) -> FragmentInfo | None:
        """What is known of fragment ``number``: the one before it and its producer time."""
        return self._known.get(number)

    def selector_for(self, number: str) -> StartSelector | None:
        """A start selector whose first chunk is ``number`` (or the one before it), under either reading."""
        known = self._known.get(number)
        if known is None:
            return None
        if known.previous is not None:
            return StartSelector.after_fragment(known.previous)
        if known.producer_ms is not None:
            return StartSelector.producer_time(known.producer_ms)
        return None


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def _seconds(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None
