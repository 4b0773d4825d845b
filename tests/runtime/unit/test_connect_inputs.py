"""Every field Connect sends is read to its documented shape: a field that breaks it is InvalidInput, named in a short
message that never echoes the value, and nothing reaches AWS."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fixtures import ROOT
from tests.runtime.unit.stubbed_aws import stubbed_aws
from voicebridge.call.invocation import parse_consumer_event
from voicebridge.connect.events import ContactFlowEvent
from voicebridge.errors import InvalidInput
from voicebridge.handlers import start_listening, transcribe_stream
from voicebridge.sonic.request import SpeechRequest

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish")
START: dict[str, Any] = json.loads((ROOT / "events" / "start-listening.json").read_text())
AUDIO = ("Details", "ContactData", "MediaStreams", "Customer", "Audio")
HUGE = "4a573372" * 1280
"""A 10 KB value that must never come back in a message."""


def changed(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    """The StartListening sample event with the field at ``path`` set to ``value``."""
    event = copy.deepcopy(START)
    parent: Any = event
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return event


def refusal(event: Any) -> str:
    """The message of the InvalidInput that parsing ``event`` raises."""
    with pytest.raises(InvalidInput) as refused:
        ContactFlowEvent.parse(event)
    return refused.value.safe_message


@pytest.mark.parametrize("name", ["synthesize", "start-listening", "await-turn"])
def test_the_sample_events_parse(name: str) -> None:
    assert ContactFlowEvent.parse(json.loads((ROOT / "events" / f"{name}.json").read_text())).contact_id


def test_every_field_of_the_sample_is_read() -> None:
    contact = ContactFlowEvent.parse(changed(("Details", "ContactData", "PreviousContactId"), "c0ffee-1")).details
    data = contact.contact_data
    assert data.previous_contact_id == "c0ffee-1" and data.initial_contact_id == data.contact_id
    assert data.instance_arn and data.instance_arn.endswith("/c8c0e68d-2200-4265-82c0-0d1e2f3a4b5c")
    assert data.media_streams and data.media_streams.customer and data.media_streams.customer.audio
    assert data.media_streams.customer.audio.start_timestamp == "1641312355374"
    assert contact.parameters == {"Tracks": "customer"}


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        (("Details", "ContactData", "ContactId"), HUGE, "Details.ContactData.ContactId"),
        (("Details", "ContactData", "ContactId"), "../../etc/passwd", "Details.ContactData.ContactId"),
        (("Details", "ContactData", "ContactId"), "", "Details.ContactData.ContactId"),
        (("Details", "ContactData", "ContactId"), None, "Details.ContactData.ContactId"),
        (("Details", "ContactData", "ContactId"), 42, "Details.ContactData.ContactId"),
        (("Details", "ContactData", "ContactId"), "4a573372\ud800", "Details.ContactData.ContactId"),
        (("Details", "ContactData", "InitialContactId"), HUGE, "Details.ContactData.InitialContactId"),
        (("Details", "ContactData", "PreviousContactId"), "a b", "Details.ContactData.PreviousContactId"),
        (("Details", "ContactData", "InstanceARN"), "arn:aws:s3:::bucket", "Details.ContactData.InstanceARN"),
        (("Details", "ContactData", "InstanceARN"), "arn:aws:connect:us-east-1:1111:instance/x", "InstanceARN"),
        (("Details", "ContactData", "InstanceARN"), "arn:aws:connect:us-east-1:111111111111:instance/", "InstanceARN"),
        ((*AUDIO, "StreamARN"), "../../etc/passwd", "Audio.StreamARN"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:111111111111:stream/" + "a" * 1000 + "/1", "StreamARN"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:111111111111:stream/a/b/1", "StreamARN"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:111111111111:stream/name/", "StreamARN"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:111111111111:channel/name/1", "StreamARN"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:11:stream/name/1", "StreamARN"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:111111111111:stream/name/1\n", "StreamARN"),
        ((*AUDIO, "StartFragmentNumber"), "9" * 129, "Audio.StartFragmentNumber"),
        ((*AUDIO, "StartFragmentNumber"), "12a", "Audio.StartFragmentNumber"),
        ((*AUDIO, "StartFragmentNumber"), "١٢", "Audio.StartFragmentNumber"),
        ((*AUDIO, "StopFragmentNumber"), "-1", "Audio.StopFragmentNumber"),
        ((*AUDIO, "StartTimestamp"), "1641312355374.5", "Audio.StartTimestamp"),
        ((*AUDIO, "StartTimestamp"), "16413123553740", "Audio.StartTimestamp"),
        ((*AUDIO, "StopTimestamp"), "soon", "Audio.StopTimestamp"),
        ((*AUDIO,), "streaming", "Audio"),
        (("Details", "ContactData", "Channel"), "V" * 65, "Details.ContactData.Channel"),
        (("Details", "ContactData", "LanguageCode"), ["en-US"], "Details.ContactData.LanguageCode"),
        (("Details", "ContactData", "Attributes"), {"Tier": 3}, "Details.ContactData.Attributes.Tier"),
        (("Details", "ContactData", "Attributes"), {"Tier": "gold\udfff"}, "Details.ContactData.Attributes.Tier"),
        (("Details", "ContactData", "Attributes"), {"my tier": "gold"}, "Details.ContactData.Attributes"),
        (("Details", "ContactData", "Attributes"), {"a": "x" * 20_000, "b": "y" * 20_000}, "Attributes"),
        (("Details", "ContactData", "Attributes"), "Tier=gold", "Details.ContactData.Attributes"),
        (("Details", "Parameters"), {"Tracks": 2}, "Tracks"),
        (("Details", "Parameters"), {"Tracks": {"customer": True}}, "Tracks"),
        (("Details", "Parameters"), {"Text": "語" * 11_000}, "Text"),
        (("Details", "Parameters"), {"N" * 257: "x"}, "Details.Parameters"),
        (("Details", "Parameters"), {"\ud800": "x"}, "Details.Parameters"),
        (("Details", "Parameters"), ["Tracks"], "Details.Parameters"),
        (("Details", "ContactData"), None, "Details.ContactData"),
        (("Details",), "ContactData", "Details"),
        (("Name",), "ContactFlowEvent" * 5, "Name"),
    ],
)
def test_a_field_off_its_documented_shape_is_invalid_input_named_and_never_echoed(
    path: tuple[str, ...], value: Any, named: str
) -> None:
    message = refusal(changed(path, value))
    assert named in message
    assert len(message) < 160 and HUGE not in message and "etc/passwd" not in message
    message.encode("utf-8")


@pytest.mark.parametrize("event", [[], "ContactFlowEvent", None, 7])
def test_an_event_that_is_not_an_object_is_invalid_input(event: Any) -> None:
    assert refusal(event) == "the event must be an object"


@pytest.mark.parametrize("name", ["Text", "Prefix"])
def test_a_lone_surrogate_in_a_parameter_is_refused_as_not_unicode(name: str) -> None:
    assert refusal(changed(("Details", "Parameters"), {"Text": "Hello", name: "Hi \ud800"})) == (
        f"{name} is not valid Unicode"
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((*AUDIO, "StreamARN"), "arn:aws-cn:kinesisvideo:cn-north-1:111111111111:stream/a.b_c-d/1542430000000"),
        ((*AUDIO, "StreamARN"), "arn:aws-us-gov:kinesisvideo:us-gov-west-1:111111111111:stream/" + "s" * 256 + "/1"),
        ((*AUDIO, "StartFragmentNumber"), "9" * 128),
        ((*AUDIO, "StopFragmentNumber"), ""),
        ((*AUDIO, "StopTimestamp"), None),
        ((*AUDIO,), None),
        (("Details", "ContactData", "MediaStreams"), None),
        (("Details", "ContactData", "InstanceARN"), "arn:aws-cn:connect:cn-north-1:111111111111:instance/c8c0e68d"),
        (("Details", "ContactData", "Attributes"), {"Last-Turn_2": "3", "Empty": "", "Gone": None}),
        (("Details", "ContactData", "Attributes"), None),
        (("Details", "Parameters"), {"Tracks": None, "Text": "語" * 10_000}),
        (("Details", "Parameters"), None),
        (("Details", "ContactData", "Queue"), {"ARN": 7, "Junk": [HUGE]}),
    ],
)
def test_a_field_of_its_documented_shape_is_accepted(path: tuple[str, ...], value: Any) -> None:
    ContactFlowEvent.parse(changed(path, value))


def test_a_lone_surrogate_in_a_responders_reply_is_refused_before_the_model_or_the_cache() -> None:
    from voicebridge.config import Settings
    from voicebridge.sonic.request import RequestSettings

    defaults = Settings()
    settings = RequestSettings(
        defaults.sonic_max_text_chars, defaults.sonic_default_voice, defaults.sonic_default_language
    )
    with pytest.raises(InvalidInput, match="Text is not valid Unicode"):
        SpeechRequest.from_parameters({"Text": "Sure \udc80"}, settings)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ((*AUDIO, "StreamARN"), "../../etc/passwd"),
        ((*AUDIO, "StreamARN"), "arn:aws:kinesisvideo:us-east-1:111111111111:stream/" + "a" * 2000 + "/1"),
        (("Details", "ContactData", "ContactId"), HUGE),
        (("Details", "Parameters", "Tracks"), "customer\ud800"),
    ],
)
def test_start_listening_claims_nothing_for_a_malformed_event(path: tuple[str, ...], value: Any) -> None:
    with stubbed_aws() as aws:
        answer = start_listening.handler(changed(path, value), None)
    assert (answer["Result"], answer["ErrorCode"]) == ("Error", "InvalidInput")
    assert aws.calls == []


def test_start_listening_hands_a_well_formed_event_to_the_turn_table() -> None:
    with stubbed_aws() as aws:
        aws.stub("dynamodb").add_response("put_item", {})
        aws.stub("lambda").add_response("invoke", {"StatusCode": 202})
        answer = start_listening.handler(copy.deepcopy(START), None)
    assert answer["Result"] == "OK" and answer["AlreadyListening"] == "false"
    assert aws.calls == ["dynamodb.PutItem", "lambda.Invoke"]


def test_start_listening_refuses_a_language_no_ink_model_transcribes_and_starts_nothing() -> None:
    with stubbed_aws() as aws:
        answer = start_listening.handler(changed(("Details", "Parameters", "Language"), "tlh"), None)
    assert (answer["Result"], answer["ErrorCode"]) == ("Error", "LanguageNotServed")
    assert aws.calls == []


def test_start_listening_refuses_a_language_ink_transcribes_and_sonic_does_not_speak_and_starts_nothing() -> None:
    with stubbed_aws() as aws:
        answer = start_listening.handler(changed(("Details", "Parameters", "Language"), "cy"), None)
    assert (answer["Result"], answer["ErrorCode"]) == ("Error", "LanguageNotServed")
    assert aws.calls == []


def test_start_listening_keeps_the_contacts_language_with_its_claim_and_says_who_ends_its_turns() -> None:
    with stubbed_aws() as aws:
        aws.stub("dynamodb").add_response("put_item", {})
        aws.stub("lambda").add_response("invoke", {"StatusCode": 202})
        spanish = start_listening.handler(changed(("Details", "Parameters", "Language"), "es-us"), None)
    assert (spanish["Result"], spanish["Language"], spanish["TurnEndBy"]) == ("OK", "es-US", "voicebridge")
    (claim,) = [params for name, params in aws.requests if name == "dynamodb.PutItem"]
    assert claim["Item"]["Language"] == {"S": "es-US"}


def test_start_listening_without_a_language_listens_in_the_default_one_on_inks_turns() -> None:
    with stubbed_aws() as aws:
        aws.stub("dynamodb").add_response("put_item", {})
        aws.stub("lambda").add_response("invoke", {"StatusCode": 202})
        answer = start_listening.handler(copy.deepcopy(START), None)
    assert (answer["Language"], answer["TurnEndBy"]) == ("en", "ink")


def test_start_listening_without_a_language_takes_the_deployments_and_listens_to_it_as_the_consumer_will(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("INK_LANGUAGE", "es-MX")
    with stubbed_aws() as aws:
        aws.stub("dynamodb").add_response("put_item", {})
        aws.stub("lambda").add_response("invoke", {"StatusCode": 202})
        answer = start_listening.handler(copy.deepcopy(START), None)
    assert (answer["Language"], answer["TurnEndBy"]) == ("es-MX", "voicebridge")


CONSUMER = json.loads((ROOT / "events" / "transcribe-stream.json").read_text())


@pytest.mark.parametrize(
    "event",
    [
        [],
        "4a573372-1f28-4e26-b97b-1c4d5e6f7a80",
        None,
        {**CONSUMER, "Generation": "one"},
        {**CONSUMER, "Generation": 1.5},
        {**CONSUMER, "Generation": "1.5"},
        {**CONSUMER, "Generation": -1},
        {**CONSUMER, "Generation": "-1"},
        {**CONSUMER, "Generation": True},
        {**CONSUMER, "Generation": None},
        {**CONSUMER, "ContactId": HUGE},
        {**CONSUMER, "ContactId": "../../etc/passwd"},
        {"Generation": 0},
    ],
)
def test_the_consumer_answers_a_malformed_event_with_invalid_input(event: Any) -> None:
    answer = transcribe_stream.handler(event, None)
    assert (answer["Result"], answer["ErrorCode"]) == ("Error", "InvalidInput")
    assert HUGE not in answer["ErrorMessage"] and len(answer["ErrorMessage"]) < 160


def test_the_consumer_reads_its_sample_event() -> None:
    parse: Callable[[Any], Any] = parse_consumer_event
    assert parse(CONSUMER) == (CONSUMER["ContactId"], 0)
    assert parse({**CONSUMER, "Generation": "3"}) == (CONSUMER["ContactId"], 3)


def test_a_log_line_holding_a_lone_surrogate_is_still_written() -> None:
    import logging

    from voicebridge.telemetry import logger

    record = logging.LogRecord("voicebridge", logging.WARNING, __file__, 1, "malformed value \ud800", None, None)
    line = logger.registered_formatter.format(record)
    assert "\\ud800" in line
    line.encode("utf-8")


@pytest.mark.parametrize(
    ("media_streams", "named"),
    [
        ("not an object", "Details.ContactData.MediaStreams must be an object"),
        ({"Customer": "not an object"}, "Details.ContactData.ContactId is required"),
    ],
)
def test_media_streams_that_are_not_an_object_are_named_first_a_problem_inside_them_last(
    media_streams: Any, named: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        ContactFlowEvent.parse({"Details": {"ContactData": {"MediaStreams": media_streams}}})
    assert raised.value.safe_message == named
