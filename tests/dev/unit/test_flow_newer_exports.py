"""Flows as contact centres export them today (issue 21): the action types newer than the flow-language reference,
bounds only where a source gives them, template tokens in every parameter that names a resource, and no warning for
a parameter the console writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures import ROOT
from tests.fixtures.flows import condition, minimal_flow, step
from voicebridge_dev.flows import validate
from voicebridge_dev.flows.rules import ACTION_TYPES, BOUNDS, NEWER_TYPES, TEMPLATE_TOKEN, template_value
from voicebridge_dev.simulator.engine import load_flow_for_simulation

ACCOUNT = "123456789012"
INSTANCE = f"arn:aws:connect:us-east-1:{ACCOUNT}:instance/11111111-2222-3333-4444-555555555555"


def errors(*actions: dict[str, Any], templated: bool = False) -> list[str]:
    return [str(p) for p in validate(minimal_flow(*actions), templated=templated)]


def warnings(*actions: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate(minimal_flow(*actions), warnings=True) if p.warning]


# --- the newer action types ------------------------------------------------------------------------------------

NEWER: dict[str, dict[str, Any]] = {
    "EvaluateDataTableValues": {
        "DataTableId": f"{INSTANCE}/data-table/8d2c5c4c-6f3b-4e38-9d7e-3c1f0a0b2f11",
        "Queries": [{"QueryName": "hours", "PrimaryValues": [{"AttributeName": "site", "Value": "$.Attributes.site"}]}],
    },
    "CreatePersistentContactAssociation": {
        "RehydrationType": "ENTIRE_PAST_SESSION",
        "SourceContactId": "$.Attributes.PreviousContactId",
    },
    "RenderMessageTemplate": {"MessageTemplateArn": "$.Attributes.Template"},
    "CreateContact": {"Channel": "EMAIL", "InitiationMethod": "OUTBOUND", "RelatedContactId": "$.ContactId"},
    "StartOutboundEmailContact": {
        "FromEmailAddress": {"EmailAddress": "help@example.com"},
        "DestinationEmailAddress": {"EmailAddress": "$.Attributes.Email"},
    },
    "CheckSegmentMembershipForCustomerProfile": {"ProfileRequestData": {"SegmentDefinitionName": "gold"}},
    "ConnectParticipantWithAgenticCX": {
        "AgentConfiguration": {"WorkspaceId": "ws", "ApplicationId": "app", "Alias": "alias", "ContextVariables": {}}
    },
    "ListDataTableValues": {"DataTableId": f"{INSTANCE}/data-table/8d2c5c4c-6f3b-4e38-9d7e-3c1f0a0b2f11"},
    "UpsertDataTableValues": {"DataTableId": f"{INSTANCE}/data-table/8d2c5c4c-6f3b-4e38-9d7e-3c1f0a0b2f11"},
    "SetSecurityBehavior": {"VoiceAuthentication": "50", "SecurityBehaviorOption": "Enable"},
    "CheckSecurityStatus": {},
}


def test_the_newer_types_the_console_exports_are_known() -> None:
    assert set(NEWER) == set(NEWER_TYPES) and set(NEWER) <= set(ACTION_TYPES)


@pytest.mark.parametrize("kind", sorted(NEWER))
def test_a_newer_action_type_validates_with_the_parameters_exports_carry(kind: str) -> None:
    one = step(
        "New", kind, NEWER[kind], NextAction="Bye", Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}]
    )
    assert errors(one) == []
    assert [w for w in warnings(one) if "takes no parameter" in w] == []


def test_persistent_chat_takes_only_the_rehydration_types_the_api_has() -> None:
    parameters = {**NEWER["CreatePersistentContactAssociation"], "RehydrationType": "WHOLE_SESSION"}
    bad = step("Resume", "CreatePersistentContactAssociation", parameters)
    assert any("RehydrationType" in e for e in errors(bad))


def test_segment_membership_branches_on_conditions() -> None:
    check = step(
        "Gold?",
        "CheckSegmentMembershipForCustomerProfile",
        NEWER["CheckSegmentMembershipForCustomerProfile"],
        NextAction="Bye",
        Conditions=[condition("true")],
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
    )
    assert errors(check) == []


# --- bounds only where a source gives them ---------------------------------------------------------------------


def test_every_bound_the_validator_enforces_names_its_source() -> None:
    enforced = [bound for bound in BOUNDS.values() if bound.enforced]
    assert enforced and all(bound.source.startswith("https://docs.aws.amazon.com/") for bound in enforced)
    assert all(bound.why for bound in BOUNDS.values() if not bound.enforced)


def test_an_input_time_limit_past_180_s_is_a_warning_that_says_no_source_gives_that_bound() -> None:
    survey = step(
        "Rate us",
        "GetParticipantInput",
        {"Text": "Rate us from 1 to 5", "InputTimeLimitSeconds": "300", "StoreInput": "False"},
        NextAction="Bye",
        Conditions=[condition("1")],
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingCondition"}],
    )
    assert errors(survey) == []
    (warning,) = [w for w in warnings(survey) if "InputTimeLimitSeconds" in w]
    assert "no AWS source" in warning


def test_a_sourced_bound_is_still_an_error() -> None:
    lambda_ = step(
        "Look up",
        "InvokeLambdaFunction",
        {"LambdaFunctionARN": f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:f", "InvocationTimeLimitSeconds": "9"},
    )
    assert any("InvocationTimeLimitSeconds" in e for e in errors(lambda_))


# --- template tokens in every parameter that names a resource ---------------------------------------------------

LEX = "ConnectParticipantWithLexBot"


def lex(alias: str) -> dict[str, Any]:
    return step(
        "Bot",
        LEX,
        {"Text": "How can I help?", "LexV2Bot": {"AliasArn": alias}},
        NextAction="Bye",
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
    )


LEFT_OPEN = [
    lex("__LEX_BOT_ALIAS_ARN__"),
    lex("<<lexBotAliasArn>>"),
    lex("REPLACE_WITH_LEX_BOT_ALIAS_ARN"),
    lex("arn:aws:lex:us-east-1:ACCOUNT_ID:bot-alias/BOT/ALIAS"),
    lex(f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:not-a-bot"),
    step("Wisdom", "CreateWisdomSession", {"WisdomAssistantArn": "%QconnectAssistantArn%"}),
    step("Module", "InvokeFlowModule", {"FlowModuleId": "__MODULE_ID__"}),
    step("Hooks", "UpdateContactEventHooks", {"EventHooks": {"AgentWhisper": "%AgentWhisperFlowArn%"}}),
    step(
        "Form",
        "ShowView",
        {"ViewResource": {"Id": "FORM_VIEW_ARN"}, "InvocationTimeLimitSeconds": "30"},
        NextAction="Bye",
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
    ),
    step("Queue", "UpdateContactTargetQueue", {"QueueId": {"Fn::GetAtt": ["Queue", "QueueArn"]}}),
    step("Queue", "UpdateContactTargetQueue", {"QueueId": "arn:aws:connect:us-east-1:1234:instance/i/queue/q"}),
    step("To flow", "TransferToFlow", {"ContactFlowId": f"{INSTANCE}/queue/00000000-0000-0000-0000-000000000000"}),
    step("Voice", "UpdateContactTextToSpeechVoice", {"TextToSpeechVoice": "%%VOICE%%"}),
    step("Language", "UpdateContactData", {"LanguageCode": "{{language}}"}),
]


@pytest.mark.parametrize("action", LEFT_OPEN, ids=lambda a: f"{a['Type']}:{a['Parameters']}")
def test_a_reference_left_open_is_an_error_and_a_template_accepts_it(action: dict[str, Any]) -> None:
    assert errors(action) != []
    assert errors(action, templated=True) == []


@pytest.mark.parametrize(
    "value",
    ["${X}", "{{x}}", "%x%", "%%X%%", "__X__", "<<x>>", "REPLACE_WITH_QUEUE", {"Fn::GetAtt": ["Q", "Arn"]}],
)
def test_every_token_form_the_issue_lists_is_a_template_value(value: Any) -> None:
    assert template_value(value)


@pytest.mark.parametrize("value", ["Joanna", "en-US", "$.Attributes.x", "100%", "a_b", "__proto__x"])
def test_ordinary_values_are_no_template_tokens(value: str) -> None:
    assert not template_value(value) and TEMPLATE_TOKEN.search(value) is None


def test_an_aws_managed_view_and_real_resource_arns_are_accepted() -> None:
    view = step(
        "Form",
        "ShowView",
        {"ViewResource": {"Id": "arn:aws:connect:us-east-1:aws:view/form:1"}, "InvocationTimeLimitSeconds": "30"},
        NextAction="Bye",
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
    )
    bot = lex(f"arn:aws:lex:us-east-1:{ACCOUNT}:bot-alias/ABCDEFGHIJ/TSTALIASID")
    wisdom = step(
        "Wisdom",
        "CreateWisdomSession",
        {"WisdomAssistantArn": f"arn:aws:wisdom:us-east-1:{ACCOUNT}:assistant/5c5f4a3e-1d2b-4c3a-9e8f-0a1b2c3d4e5f"},
    )
    hooks = step(
        "Hooks",
        "UpdateContactEventHooks",
        {"EventHooks": {"CustomerQueue": f"{INSTANCE}/contact-flow/0a1b2c3d-0000-4000-8000-000000000000"}},
    )
    assert errors(view, bot, wisdom, hooks) == []


# --- no false warnings for what the console writes --------------------------------------------------------------


def test_parameters_the_console_writes_are_no_warnings() -> None:
    wisdom = step("Wisdom data", "UpdateContactData", {"WisdomSessionArn": "$.Wisdom.SessionArn"})
    loop = step(
        "Queue music",
        "MessageParticipantIteratively",
        {
            "Messages": [{"Text": "Please hold"}],
            "InterruptFrequencySeconds": "60",
            "ContinueMessagingDuringInterrupt": "true",
        },
        Conditions=[condition("MessagesInterrupted")],
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
    )
    sms = step(
        "Text them",
        "StartOutboundChatContact",
        {
            "SourceEndpoint": {"Address": "+15555550100", "Type": "TELEPHONE_NUMBER"},
            "DestinationEndpoint": {"Address": "$.CustomerEndpoint.Address", "Type": "TELEPHONE_NUMBER"},
            "ContactFlowArn": f"{INSTANCE}/contact-flow/0a1b2c3d-0000-4000-8000-000000000000",
            "ContactSubtype": "connect:SMS",
            "RelatedContact": "$.ContactId",
        },
        Errors=[{"NextAction": "Bye", "ErrorType": "NoMatchingError"}],
    )
    assert [w for w in warnings(wisdom, loop, sms) if "takes no parameter" in w] == []


# --- the simulator reads what the validator reads ---------------------------------------------------------------


def _write(tmp_path: Path, document: dict[str, Any]) -> Path:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_the_simulator_treats_metadata_and_description_text_as_text(tmp_path: Path) -> None:
    document = minimal_flow(step("Name it", "UpdateContactData", {"Description": "Order ${OrderNumber} called"}))
    document["Metadata"] = {"name": "Orders ${Environment}", "description": "Built by ${Pipeline}"}
    loaded = load_flow_for_simulation(_write(tmp_path, document), ROOT / "template.yaml")
    assert loaded.flow.metadata["name"] == "Orders ${Environment}"
    assert loaded.flow["Name it"].parameters["Description"] == "Order ${OrderNumber} called"


def test_the_simulators_templated_mode_accepts_the_validators_token_forms(tmp_path: Path) -> None:
    queue = step("Queue", "UpdateContactTargetQueue", {"QueueId": {"Fn::GetAtt": ["Queue", "QueueArn"]}})
    path = _write(tmp_path, minimal_flow(queue, lex("__LEX_BOT_ALIAS_ARN__")))
    loaded = load_flow_for_simulation(path, ROOT / "template.yaml", templated=True)
    assert [loaded.flow["Queue"].type, loaded.flow["Bot"].type] == ["UpdateContactTargetQueue", LEX]
