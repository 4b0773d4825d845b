"""Routing a GetMedia read: whose audio each fragment is, where it sits, and where a reconnect resumes."""

from __future__ import annotations

from collections.abc import Sequence

from voicebridge.kvs.fragments import (
    CONTINUITY_MS,
    Audio,
    ContactChanged,
    FragmentHistory,
    FragmentRouter,
    StreamErrorTag,
    TagProblem,
)
from voicebridge.kvs.mkv import AudioFrame, ClusterStart, DocumentStart, Event, Tags

ME, OTHER = "4a573372-1f28-4e26-b97b-4a7d3c0b5e01", "0b9c2e1d-7777-4e26-b97b-4a7d3c0b5e02"
TRACKS = {"AUDIO_FROM_CUSTOMER": "customer", "AUDIO_TO_CUSTOMER": "agent"}
FIRST = 91343852333181452199722691208580038832309429352


def number(i: int) -> str:
    return str(FIRST + 1000 * i)


def fragment(
    i: int, *, contact: str | None = ME, producer_ms: int | None = None, frames: int = 3, token: str | None = None
) -> list[Event]:
    """Fragment ``i`` as Connect lays it out: number and times, the Cluster's frames, then ContactId and GetMedia's
    tags. Each frame is 64 ms of the customer's audio; fragment i starts at producer time i seconds by default."""
    start_ms = 1_700_000_000_000 + 1000 * i if producer_ms is None else producer_ms
    events: list[Event] = [
        DocumentStart(0),
        Tags(
            {
                "AWS_KINESISVIDEO_FRAGMENT_NUMBER": number(i),
                "AWS_KINESISVIDEO_PRODUCER_TIMESTAMP": f"{start_ms / 1000}",
            },
            0,
        ),
        ClusterStart(start_ms),
    ]
    for k in range(frames):
        events.append(AudioFrame("AUDIO_FROM_CUSTOMER", 1, start_ms + 64 * k, bytes([i, k]) * 512, 0))
    trailing = {"ContactId": contact} if contact else {}
    if token:
        trailing["AWS_KINESISVIDEO_CONTINUATION_TOKEN"] = token
    events.append(Tags(trailing, 0))
    return events


def route(router: FragmentRouter, events: list[Event]) -> list[object]:
    out: list[object] = []
    for event in events:
        out += router.feed(event)
    return out


def audio_of(actions: Sequence[object]) -> list[tuple[str, int]]:
    return [(a.fragment, a.offset) for a in actions if isinstance(a, Audio)]


def test_the_start_fragment_is_released_frame_by_frame_before_its_contact_tag() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    events = fragment(0)
    first_frame = next(i for i, e in enumerate(events) if isinstance(e, AudioFrame))
    assert audio_of(route(router, events[: first_frame + 1])) == [(number(0), 0)]


def test_fragments_before_the_start_belong_to_an_earlier_contact_and_are_skipped() -> None:
    router = FragmentRouter(ME, start_fragment=number(2), tracks=TRACKS)
    actions = route(router, fragment(0, contact=OTHER) + fragment(1, contact=OTHER) + fragment(2))
    assert {a.fragment for a in actions if isinstance(a, Audio)} == {number(2)}
    assert not any(isinstance(a, ContactChanged) for a in actions)


def test_a_continuous_next_fragment_is_released_at_once() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0, frames=3))
    # Fragment 0 ends at its start + 3 × 64 ms: fragment 1 starts there.
    following = fragment(1, producer_ms=1_700_000_000_000 + 192, contact=None)
    actions = route(router, following)
    assert len(audio_of(actions)) == 3


def test_a_fragment_after_a_gap_is_held_until_its_contact_is_known() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0, frames=3))
    later = fragment(1, producer_ms=1_700_000_000_000 + 192 + CONTINUITY_MS + 500)
    before_contact = route(router, later[:-1])
    assert audio_of(before_contact) == []
    assert len(audio_of(router.feed(later[-1]))) == 3


def test_another_contacts_fragment_never_reaches_the_transcriber() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0))
    actions = route(router, fragment(1, contact=OTHER, producer_ms=1_700_000_060_000))
    assert audio_of(actions) == []
    assert actions[-1] == ContactChanged(OTHER)


def test_a_reread_fragment_up_to_the_known_ones_is_ours_without_waiting() -> None:
    history = FragmentHistory()
    first = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS, history=history)
    route(first, fragment(0) + fragment(1, producer_ms=1_700_000_000_192))
    again = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS, history=history)
    events = fragment(1, producer_ms=1_700_000_000_192, contact=None)
    assert len(audio_of(route(again, events))) == 3


def test_a_stream_without_contact_tags_releases_a_held_fragment_when_it_ends() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0, contact=None))
    held = route(router, fragment(1, contact=None, producer_ms=1_700_000_009_000))
    assert audio_of(held) == []
    assert len(audio_of(router.feed(DocumentStart(0)))) == 3


def test_offsets_count_each_tracks_audio_from_the_fragments_start() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    assert audio_of(route(router, fragment(0))) == [(number(0), 0), (number(0), 1024), (number(0), 2048)]


def test_produced_time_of_a_frame_is_the_fragments_producer_time_plus_its_position() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    first = next(a for a in route(router, fragment(0)) if isinstance(a, Audio))
    assert first.produced_end_ms == 1_700_000_000_000 + 64


def test_an_unreadable_producer_timestamp_is_reported_not_fatal() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    events = fragment(0)
    events[1] = Tags({"AWS_KINESISVIDEO_FRAGMENT_NUMBER": number(0), "AWS_KINESISVIDEO_PRODUCER_TIMESTAMP": "n/a"}, 0)
    actions = route(router, events)
    assert TagProblem("AWS_KINESISVIDEO_PRODUCER_TIMESTAMP", "n/a") in actions
    assert len(audio_of(actions)) == 3


def test_an_error_tag_is_passed_on() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0))
    actions = router.feed(Tags({"AWS_KINESISVIDEO_ERROR_CODE": "4000", "AWS_KINESISVIDEO_ERROR_ID": "x"}, 0))
    assert actions == [StreamErrorTag("4000", "x")]


def test_a_reconnect_resumes_after_the_last_complete_fragments_token() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0, token="token-0") + fragment(1, producer_ms=1_700_000_000_192)[:4])
    selector = router.resume_selector()
    assert selector is not None and (selector.kind, selector.value) == ("CONTINUATION_TOKEN", "token-0")


def test_without_a_token_a_reconnect_resumes_after_the_predecessor_of_the_fragment_in_progress() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0) + fragment(1, producer_ms=1_700_000_000_192)[:4])
    selector = router.resume_selector()
    assert selector is not None and (selector.kind, selector.value) == ("FRAGMENT_NUMBER", number(0))


def test_a_cut_inside_the_first_fragment_resumes_with_the_chunk_containing_its_producer_time() -> None:
    router = FragmentRouter(ME, start_fragment=number(0), tracks=TRACKS)
    route(router, fragment(0)[:4])
    selector = router.resume_selector()
    assert selector is not None and (selector.kind, selector.value) == ("PRODUCER_TIMESTAMP", "1700000000000")


def test_the_start_fragments_predecessor_is_remembered_when_the_read_began_earlier() -> None:
    router = FragmentRouter(ME, start_fragment=number(1), tracks=TRACKS)
    route(router, fragment(0, contact=OTHER) + fragment(1)[:4])
    selector = router.resume_selector()
    assert selector is not None and (selector.kind, selector.value) == ("FRAGMENT_NUMBER", number(0))
