"""The simulated contact's references, as Connect's flow language names them."""

from __future__ import annotations

import pytest

from voicebridge_dev.simulator.contact import Contact, is_reference


@pytest.fixture
def contact() -> Contact:
    return Contact(
        region="eu-west-2",
        attributes={"Tier": "gold", "user name": "Ada"},
        external={"Balance": "240", "Nested": {"Key": "deep"}},
        flow_attributes={"Step": "2"},
        lex={"IntentName": "CheckBalance", "Slots": {"Account": "checking"}},
        metrics={"Queue": {"Name": "Support"}, "Agents": {"Available": "3"}},
        stored_input="1234",
    )


@pytest.mark.parametrize(
    ("reference", "value"),
    [
        ("$.Attributes.Tier", "gold"),
        ("$.Attributes.['user name']", "Ada"),
        ("$.Attributes['user name']", "Ada"),
        ("$.External.Balance", "240"),
        ("$.External.Nested.Key", "deep"),
        ("$.FlowAttributes.Step", "2"),
        ("$.Lex.IntentName", "CheckBalance"),
        ("$.Lex.Slots.Account", "checking"),
        ("$.Metrics.Agents.Available", "3"),
        ("$.StoredCustomerInput", "1234"),
        ("$.AwsRegion", "eu-west-2"),
        ("$['AwsRegion']", "eu-west-2"),
        ("$.Channel", "VOICE"),
        ("$.LanguageCode", "en-US"),
        ("$.CustomerEndpoint.Address", "+15555550100"),
    ],
)
def test_every_namespace_is_read(contact: Contact, reference: str, value: str) -> None:
    assert is_reference(reference)
    assert contact.value(reference) == value


def test_a_reference_to_nothing_is_the_empty_string(contact: Contact) -> None:
    assert contact.value("$.Attributes.Missing") == ""
    assert contact.value("$.FlowAttributes.Step.Deeper") == ""
    assert contact.value("$.Nothing") == ""


def test_references_inside_text_are_replaced_and_the_rest_is_kept(contact: Contact) -> None:
    text = "Hello $.Attributes.['user name'], step $.FlowAttributes.Step. Costs $5."

    assert contact.interpolate(text) == "Hello Ada, step 2. Costs $5."


def test_a_value_that_is_not_one_reference_is_taken_as_written(contact: Contact) -> None:
    assert contact.value("gold") == "gold"
    assert contact.value("$.Attributes.Tier and more") == "$.Attributes.Tier and more"
