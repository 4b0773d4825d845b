"""The Connect-facing handlers, in-process on stubbed AWS: a long turn still reaches the flow, and any event at all is
answered with a flat string map Connect takes, a Result the flow knows, and no AWS call for a malformed one."""

from __future__ import annotations

import copy
import json
import operator
import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fixtures import ROOT
from tests.runtime.unit.stubbed_aws import StubbedAws, stubbed_aws
from voicebridge.connect.events import MAX_RESPONSE_BYTES
from voicebridge.errors import ERROR_CODES, INTERNAL_CODES
from voicebridge.handlers import await_turn, converse, start_listening, synthesize

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")

EVENT: dict[str, Any] = json.loads((ROOT / "events" / "await-turn.json").read_text())
CONTACT = EVENT["Details"]["ContactData"]["ContactId"]
CJK = "語"


def with_parameters(**parameters: str) -> dict[str, Any]:
    event = copy.deepcopy(EVENT)
    event["Details"]["Parameters"] = parameters
    return event


def size(answer: dict[str, str]) -> int:
    """What Connect counts, strictly: an answer UTF-8 cannot carry fails here."""
    return len(json.dumps(answer, ensure_ascii=False).encode("utf-8"))


@pytest.fixture
def aws() -> Iterator[StubbedAws]:
    with stubbed_aws() as stubbed:
        yield stubbed


def queue_turn(aws: StubbedAws, transcript: str) -> None:
    item = {
        "ContactId": {"S": CONTACT},
        "TurnKey": {"S": "customer#000000004"},
        "Track": {"S": "customer"},
        "Seq": {"N": "4"},
        "Transcript": {"S": transcript},
        "AudioStartMs": {"N": "0"},
        "AudioEndMs": {"N": "900"},
        "EndedAt": {"N": "1641312356374"},
    }
    aws.stub("dynamodb").add_response("query", {"Items": [item]})


def test_await_turn_hands_over_a_cjk_turn_of_6000_characters_whole(aws: StubbedAws) -> None:
    queue_turn(aws, CJK * 6000)
    answer = await_turn.handler(with_parameters(AfterTurn="3"), None)
    assert answer == {"Result": "Turn", "Transcript": CJK * 6000, "TurnIndex": "4"}


def test_await_turn_cuts_a_turn_too_long_for_connect_and_says_so(aws: StubbedAws) -> None:
    transcript = CJK * 20_000
    queue_turn(aws, transcript)
    answer = await_turn.handler(with_parameters(AfterTurn="3"), None)
    assert (answer["Result"], answer["TurnIndex"], answer["Truncated"]) == ("Turn", "4", "true")
    assert transcript.startswith(answer["Transcript"]) and len(answer["Transcript"]) > 10_000
    assert size(answer) < MAX_RESPONSE_BYTES


def test_await_turn_past_the_last_turn_key_never_queries_below_it(aws: StubbedAws) -> None:
    aws.stub("dynamodb").add_response("get_item", {})
    answer = await_turn.handler(with_parameters(AfterTurn="999999999"), None)
    assert answer["ErrorCode"] == "NotListening" and aws.calls == ["dynamodb.GetItem"]
    assert await_turn.handler(with_parameters(AfterTurn="1000000000"), None)["ErrorCode"] == "InvalidInput"


def test_converse_cuts_the_callers_long_transcript_before_the_text_it_plays(aws: StubbedAws) -> None:
    status = {"Turn": {"N": "0"}, "Segments": {"N": "1"}, "Done": {"BOOL": True}, "Action": {"S": "Continue"}}
    segment = {"Turn": {"N": "0"}, "Segment": {"N": "0"}, "Text": {"S": "Sure."}, "Transcript": {"S": CJK * 20_000}}
    for item in (status, segment):
        aws.stub("dynamodb").add_response("get_item", {"Item": {"ContactId": {"S": CONTACT}, **item}})
    answer = converse.handler(with_parameters(), None)
    assert (answer["Result"], answer["Text"], answer["Truncated"]) == ("Fallback", "Sure.", "true")
    assert 0 < len(answer["Transcript"]) < 20_000 and size(answer) < MAX_RESPONSE_BYTES


# -- any event at all

Handler = Callable[[Any, Any], dict[str, str]]
HANDLERS: dict[str, tuple[Handler, frozenset[str], dict[str, str]]] = {
    "SynthesizeFunction": (
        synthesize.handler,
        frozenset({"OK", "Fallback", "Error"}),
        {
            "Text": "Hello",
            "Prefix": "You said: ",
            "Voice": "f786b574-daa5-4673-aa0c-cbe3e8534c02",
            "Language": "en",
            "Speed": "1.0",
            "Volume": "1.0",
            "Emotion": "calm",
        },
    ),
    "StartListeningFunction": (
        start_listening.handler,
        frozenset({"OK", "Error"}),
        {"Tracks": "customer", "Converse": "false"},
    ),
    "AwaitTurnFunction": (
        await_turn.handler,
        frozenset({"Turn", "Listening", "Timeout", "Error"}),
        {"AfterTurn": "-1", "MaxWaitMs": "0"},
    ),
    "ConverseFunction": (
        converse.handler,
        frozenset({"Speak", "Fallback", "OK", "Listening", "Thinking", "Timeout", "Error"}),
        {"TurnIndex": "0", "Segment": "0", "MaxWaitMs": "0"},
    ),
}
"""Each Connect-facing handler, the Results docs/functions.md gives it, and well-formed values of its parameters."""
ANSWERED_CODES = frozenset(ERROR_CODES) - INTERNAL_CODES
PLAUSIBLE = [
    "",
    "0",
    "-1",
    "7",
    "999999999",
    "1e3",
    " 12 ",
    "customer",
    "both",
    "true",
    "en",
    "pt-BR",
    "1.2",
    "calm",
    "Hello",
    "f786b574-daa5-4673-aa0c-cbe3e8534c02",
    CONTACT,
    "arn:aws:kinesisvideo:us-east-1:111111111111:stream/connect-contact/1641312355000",
    "arn:aws:connect:us-east-1:111111111111:instance/c8c0e68d",
    "91343852333181432392682062607743920146264440066",
    "1641312355374",
]
"""Values that pass some checks, so the fuzzer gets past the first field."""
UNICODE = st.text(st.characters(exclude_categories=()), max_size=24)
"""Any code point, lone surrogates included."""
HUGE = st.builds(
    lambda piece, times: piece * times,
    st.sampled_from(["a", "9", "-", CJK, "🙂", "\ud800", "\udfff", '"', "\\", "\x00", "\u2028"]),
    st.integers(1, 70_000),
)
STRINGS = st.one_of(st.sampled_from(PLAUSIBLE), UNICODE, HUGE)
STRAY = st.sampled_from(["\ud800", "\udfff", "/../../etc/passwd", " x", "\n", CJK, "\x00", "١"])


def spoilt(value: str) -> st.SearchStrategy[str]:
    """``value`` with a stray character (a lone surrogate, a path, a space…), cut short, or repeated far past any
    documented length."""
    return st.one_of(
        st.builds(operator.add, st.just(value), STRAY),
        st.builds(operator.add, STRAY, st.just(value)),
        st.builds(lambda cut: value[:cut], st.integers(0, len(value))),
        st.builds(operator.mul, st.just(value), st.integers(2, 400)),
    )


NASTY = st.sampled_from(PLAUSIBLE).flatmap(spoilt)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=10,
)
FIELDS = [
    ("Name",),
    ("Details",),
    ("Details", "ContactData"),
    ("Details", "ContactData", "ContactId"),
    ("Details", "ContactData", "InitialContactId"),
    ("Details", "ContactData", "PreviousContactId"),
    ("Details", "ContactData", "InstanceARN"),
    ("Details", "ContactData", "Channel"),
    ("Details", "ContactData", "LanguageCode"),
    ("Details", "ContactData", "Attributes"),
    ("Details", "ContactData", "Attributes", "Tier"),
    ("Details", "ContactData", "MediaStreams"),
    ("Details", "ContactData", "MediaStreams", "Customer"),
    ("Details", "ContactData", "MediaStreams", "Customer", "Audio"),
    ("Details", "ContactData", "MediaStreams", "Customer", "Audio", "StreamARN"),
    ("Details", "ContactData", "MediaStreams", "Customer", "Audio", "StartFragmentNumber"),
    ("Details", "ContactData", "MediaStreams", "Customer", "Audio", "StartTimestamp"),
    ("Details", "ContactData", "MediaStreams", "Customer", "Audio", "StopFragmentNumber"),
    ("Details", "ContactData", "MediaStreams", "Customer", "Audio", "StopTimestamp"),
    ("Details", "Parameters"),
]


@st.composite
def events(draw: st.DrawFn, parameters: dict[str, str]) -> Any:
    """Any JSON at all, or the sample event with its parameters well-formed, plausible or absent, and a few of its
    fields (or parameters) spoilt, replaced or removed."""
    if draw(st.integers(0, 7)) == 0:
        return draw(JSON)
    chosen = {
        name: draw(st.one_of(st.just(valid), st.just(valid), st.sampled_from(PLAUSIBLE), st.none()))
        for name, valid in parameters.items()
    }
    event = with_parameters(**{name: value for name, value in chosen.items() if value is not None})
    fields = FIELDS + [("Details", "Parameters", name) for name in parameters]
    for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2, 3]))):
        *path, last = draw(st.sampled_from(fields))
        parent: Any = event
        for key in path:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict):
            continue
        current = parent.get(last)
        if draw(st.booleans()):
            parent[last] = draw(st.one_of(JSON, NASTY, spoilt(current) if isinstance(current, str) else NASTY))
        else:
            parent.pop(last, None)
    return event


DOCUMENTED = {
    "ContactId": re.compile(r"[A-Za-z0-9-]{1,256}"),
    ":c": re.compile(r"[A-Za-z0-9-]{1,256}"),
    "StreamArn": re.compile(r"arn:aws[-a-z]*:kinesisvideo:[a-z0-9-]+:[0-9]{12}:stream/[a-zA-Z0-9_.-]{1,256}/[0-9]+"),
    "StartFragment": re.compile(r"[0-9]{1,128}"),
}
"""What the fields a Connect event fills in hold, wherever a request to AWS carries them (see connect/events.py)."""


def malformed(value: Any, where: str = "") -> Iterator[str]:
    """Where a request to AWS carries what no well-formed Connect event holds: a string UTF-8 cannot carry, or a
    contact id, stream ARN or fragment number off its documented shape."""
    if isinstance(value, bytes):
        yield from malformed(json.loads(value), where)
    elif isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            yield where
    elif isinstance(value, dict):
        for key, inner in value.items():
            yield from malformed(key, where)
            text = inner.get("S") if isinstance(inner, dict) else inner
            shape = DOCUMENTED.get(key)
            if shape and isinstance(text, str) and (len(text) > 1024 or not shape.fullmatch(text)):
                yield f"{where}.{key}"
            yield from malformed(inner, f"{where}.{key}")
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from malformed(inner, f"{where}[{index}]")


class Remaining:
    """A Lambda context with Connect's 8 s ahead."""

    def get_remaining_time_in_millis(self) -> int:
        return 8000


@pytest.mark.parametrize("function", list(HANDLERS))
def test_any_event_is_answered_with_a_flat_string_map_connect_takes(function: str, aws: StubbedAws) -> None:
    handler, results, parameters = HANDLERS[function]
    outcomes: Counter[str] = Counter()

    @settings(
        max_examples=300,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )
    @given(event=events(parameters), context=st.sampled_from([None, Remaining()]))
    def answered(event: Any, context: Any) -> None:
        aws.requests.clear()
        answer = handler(event, context)
        assert isinstance(answer, dict)
        assert all(isinstance(key, str) and isinstance(value, str) for key, value in answer.items())
        assert size(answer) < MAX_RESPONSE_BYTES
        assert answer["Result"] in results
        code = answer.get("ErrorCode", "")
        if answer["Result"] == "Error":
            assert code in ANSWERED_CODES and answer["ErrorMessage"]
        assert code != "InternalError", answer
        if code == "InvalidInput":
            assert aws.calls == [], "a malformed event reached AWS"
        for call, params in aws.requests:
            assert list(malformed(params)) == [], f"{call} was asked with a malformed value"
        outcomes[code or answer["Result"]] += 1

    answered()
    print(f"{function}: {sum(outcomes.values())} events, {dict(outcomes.most_common())}")
