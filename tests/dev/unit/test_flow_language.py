"""The flow language beyond the shipped flows: every action type Connect's reference documents, its parameters,
conditions and errors, the template tokens a flow may carry, the forms Connect's API hands a flow over in, and the
warnings. One rule a test, each on a minimal flow that breaks it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.fixtures import ROOT
from tests.fixtures.flows import (
    ACCOUNT,
    FUNCTIONS,
    NAMES,
    condition,
    minimal_flow,
    problems,
    reasons_for,
    say,
    step,
    warnings_for,
)
from voicebridge_dev.flows import ACTION_TYPES, CANONICAL_TYPES, FLOW, nearest_type, parse_flow, validate
from voicebridge_dev.flows.rules import NEWER_TYPES

# The action types real flows use, as issue 11 lists them.
EXPORTED_TYPES = [
    "TransferToFlow",
    "UpdateContactRecordingBehavior",
    "UpdateContactEventHooks",
    "UpdateFlowAttributes",
    "ConnectParticipantWithLexBot",
    "UpdateContactRoutingBehavior",
    "ShowView",
    "EndFlowExecution",
    "EndFlowModuleExecution",
    "UpdateContactTextToSpeechVoice",
    "InvokeFlowModule",
    "CheckMetricData",
    "GetMetricData",
    "UpdateContactData",
    "CheckHoursOfOperation",
    "TagContact",
    "MessageParticipantIteratively",
    "UpdateContactCallbackNumber",
    "TransferParticipantToThirdParty",
    "UpdateContactRoutingCriteria",
    "CreateCallbackContact",
    "Wait",
    "CreateWisdomSession",
    "UpdateContactTargetQueue",
    "TransferContactToQueue",
    "InvokeLambdaFunction",
    "UpdateContactMediaStreamingBehavior",
    "MessageParticipant",
    "UpdateContactAttributes",
    "Compare",
    "Loop",
    "GetParticipantInput",
    "DisconnectParticipant",
    "UpdateFlowLoggingBehavior",
]
QUEUE_ARN = f"arn:aws:connect:us-east-1:{ACCOUNT}:instance/c8c0e68d-0000-4000-8000-000000000000/queue/q-1"
FLOW_ARN = f"arn:aws:connect:us-east-1:{ACCOUNT}:instance/c8c0e68d-0000-4000-8000-000000000000/contact-flow/f-1"


def only(kind: str, parameters: dict[str, Any], **transitions: Any) -> dict[str, Any]:
    """A flow of one ``kind`` action (``Act``) followed by a hang-up."""
    return minimal_flow(step("Act", kind, parameters, **transitions))


# --- the action types ------------------------------------------------------------------------------------------


def test_the_validator_knows_every_action_type_real_flows_use() -> None:
    assert len(EXPORTED_TYPES) == 34
    assert [kind for kind in EXPORTED_TYPES if kind not in ACTION_TYPES] == []


def test_every_action_type_names_its_page_of_the_reference() -> None:
    reference = "https://docs.aws.amazon.com/connect/latest/APIReference/"
    pinned = {kind: spec for kind, spec in CANONICAL_TYPES.items() if kind not in NEWER_TYPES}
    assert {kind for kind, spec in pinned.items() if not spec.source.startswith(reference)} == set()
    # The newer types have no page of the flow language: each names the admin guide's block or the API it mirrors.
    newer = {kind: CANONICAL_TYPES[kind].source for kind in NEWER_TYPES}
    assert all(source.startswith("https://docs.aws.amazon.com/connect/latest/") for source in newer.values())
    assert len(CANONICAL_TYPES) >= 50


@pytest.mark.parametrize(
    ("spelt", "name"), [("UnTagContact", "UntagContact"), ("UpdateRoutingCriteria", "UpdateContactRoutingCriteria")]
)
def test_the_reference_spelling_and_the_service_spelling_are_both_accepted(spelt: str, name: str) -> None:
    parameters: dict[str, Any] = {"TagKeys": ["tier"]} if name == "UntagContact" else {"RoutingCriteria": {"Steps": []}}
    assert problems(only(spelt, parameters)) == problems(only(name, parameters)) == []


def test_an_unknown_type_is_rejected_naming_the_nearest_known_one() -> None:
    assert reasons_for(only("UpdateContactAtributes", {"Attributes": {"a": "b"}}), "Act") == [
        "unknown action Type 'UpdateContactAtributes' (did you mean UpdateContactAttributes?)"
    ]


def test_the_nearest_name_ignores_case() -> None:
    assert nearest_type("transfertoflow") == "TransferToFlow"


def test_inside_an_unknown_type_template_tokens_and_transitions_are_still_checked() -> None:
    document = only("InvokeSomething", {"Arn": "%%LAMBDA_ARN%%"}, NextAction="Nowhere")
    reasons = reasons_for(document, "Act")
    assert reasons[0].startswith("unknown action Type 'InvokeSomething'")
    assert any("leftover template token %%LAMBDA_ARN%% in Arn" in r for r in reasons)
    assert "transition to 'Nowhere', which is not an action" in reasons


# --- parameters --------------------------------------------------------------------------------------------------


def test_a_missing_required_parameter_is_rejected() -> None:
    assert reasons_for(only("TransferToFlow", {}), "Act") == ["ContactFlowId must be set: TransferToFlow requires it"]


@pytest.mark.parametrize(
    ("kind", "parameters", "expected"),
    [
        ("CheckMetricData", {"MetricType": "AgentsAvailable"}, "MetricType must be one of"),
        ("CheckVoiceId", {"CheckVoiceIdOption": "enrolment"}, "CheckVoiceIdOption must be one of"),
        ("UpdateFlowLoggingBehavior", {"FlowLoggingBehavior": "On"}, "FlowLoggingBehavior must be one of"),
        ("UpdateContactTextToSpeechVoice", {"TextToSpeechVoice": "Joanna", "TextToSpeechStyle": "Loud"}, "Style"),
        ("UpdateContactCallbackNumber", {"CallbackNumber": "+15555550100"}, "cannot be set statically"),
        ("UpdateContactRoutingBehavior", {"QueuePriority": "0"}, "QueuePriority must be an integer above 0"),
        ("UpdateContactRoutingBehavior", {"QueuePriority": "1", "QueueTimeAdjustmentSeconds": "5"}, "exactly one"),
        (
            "UpdateContactEventHooks",
            {"EventHooks": {"CustomerQueue": FLOW_ARN, "CustomerHold": FLOW_ARN}},
            "exactly one",
        ),
        ("UpdateContactEventHooks", {"EventHooks": {"OnHold": FLOW_ARN}}, "EventHooks key must be one of"),
        ("UpdateFlowAttributes", {"FlowAttributes": {"tier": "gold"}}, "FlowAttributes.tier must be an object"),
        ("MessageParticipantIteratively", {"Messages": []}, "Messages must be a non-empty list"),
        ("TransferParticipantToThirdParty", {"ThirdPartyPhoneNumber": "555-0100"}, "E.164"),
        ("TransferParticipantToThirdParty", {"ContinueFlowExecution": "yes"}, "ContinueFlowExecution must be one of"),
        ("Wait", {"TimeLimitSeconds": "604801"}, "TimeLimitSeconds must be a string holding an integer"),
        ("ConnectParticipantWithLexBot", {"Text": "Hi"}, "exactly one of LexV2Bot"),
        ("GetMetricData", {"QueueId": QUEUE_ARN, "AgentId": "a-1"}, "at most one of QueueId, AgentId"),
    ],
)
def test_a_parameter_value_connect_rejects_is_rejected(kind: str, parameters: dict[str, Any], expected: str) -> None:
    assert any(expected in r for r in reasons_for(only(kind, parameters), "Act")), reasons_for(
        only(kind, parameters), "Act"
    )


@pytest.mark.parametrize(
    ("kind", "parameters"),
    [
        ("TransferToFlow", {"ContactFlowId": "$.Attributes.NextFlow"}),
        ("InvokeFlowModule", {"FlowModuleId": "$.FlowAttributes.Module"}),
        ("UpdateContactTargetQueue", {"QueueId": "$.External.Queue"}),
        ("Wait", {"TimeLimitSeconds": "$.External.WaitSeconds"}),
        ("TransferParticipantToThirdParty", {"ThirdPartyPhoneNumber": "$.Attributes.Number"}),
        ("UpdateContactCallbackNumber", {"CallbackNumber": "$.StoredCustomerInput"}),
    ],
)
def test_a_value_given_dynamically_is_accepted(kind: str, parameters: dict[str, Any]) -> None:
    document = only(kind, parameters)
    if kind == "Wait":
        document["Actions"][0]["Transitions"]["Conditions"] = [condition("WaitCompleted")]
    assert reasons_for(document, "Act") == []


def test_the_documented_and_the_exported_name_of_a_wait_are_both_accepted() -> None:
    wait = {"NextAction": "Bye", "Conditions": [condition("WaitCompleted")]}
    assert reasons_for(only("Wait", {"TimeoutSeconds": "60"}, **wait), "Act") == []
    assert reasons_for(only("Wait", {"TimeLimitSeconds": "60"}, **wait), "Act") == []


def test_a_parameter_the_reference_does_not_document_is_a_warning() -> None:
    document = only("TransferToFlow", {"ContactFlowId": FLOW_ARN, "Priority": "1"})
    assert reasons_for(document, "Act") == []
    assert warnings_for(document, "Act") == [
        "TransferToFlow takes no parameter Priority (the reference does not document it; Connect may reject it)"
    ]


# --- transitions ---------------------------------------------------------------------------------------------


def test_no_matching_error_is_accepted_on_every_action_that_continues() -> None:
    """The reference lists no errors for UpdateFlowAttributes, yet exports branch on the catch-all."""
    errors = [{"ErrorType": "NoMatchingError", "NextAction": "Bye"}]
    document = only(
        "UpdateFlowAttributes", {"FlowAttributes": {"tier": {"Value": "gold"}}}, NextAction="Bye", Errors=errors
    )
    assert reasons_for(document, "Act") == []


def test_an_error_the_action_cannot_raise_is_rejected_naming_those_it_can() -> None:
    errors = [{"ErrorType": "QueueAtCapacity", "NextAction": "Bye"}]
    assert reasons_for(only("TransferToFlow", {"ContactFlowId": FLOW_ARN}, NextAction="Bye", Errors=errors), "Act") == [
        "TransferToFlow has no error 'QueueAtCapacity' (allowed: NoMatchingError)"
    ]


def test_conditions_on_an_action_without_results_are_rejected() -> None:
    document = only("TransferToFlow", {"ContactFlowId": FLOW_ARN}, NextAction="Bye", Conditions=[condition("x")])
    assert reasons_for(document, "Act") == ["TransferToFlow supports no Conditions"]


@pytest.mark.parametrize("missing", ["True", "False"])
def test_check_hours_of_operation_needs_both_its_results(missing: str) -> None:
    kept = [condition(o) for o in ("True", "False") if o != missing]
    document = only("CheckHoursOfOperation", {}, NextAction="Bye", Conditions=kept)
    assert reasons_for(document, "Act") == [f"CheckHoursOfOperation needs a condition Equals {missing}"]


def test_a_wait_needs_a_branch_for_its_time_and_for_each_event() -> None:
    document = only("Wait", {"TimeLimitSeconds": "60", "Events": ["CustomerReturned"]}, NextAction="Bye")
    assert reasons_for(document, "Act") == [
        "Wait needs a condition Equals CustomerReturned",
        "Wait needs a condition Equals WaitCompleted",
    ]


def test_a_loop_compares_with_equals_only() -> None:
    conditions = [condition("ContinueLooping", operator="NumberGreaterThan"), condition("DoneLooping")]
    document = only("Loop", {"LoopCount": "3"}, NextAction="Bye", Conditions=conditions)
    assert reasons_for(document, "Act") == ["Loop allows only the condition operator Equals"]


def test_a_message_loop_may_end_without_next_action_and_branches_on_its_interruption_only() -> None:
    messages = {"Messages": [{"Text": "Please hold"}], "InterruptFrequencySeconds": "60"}
    assert (
        reasons_for(
            only("MessageParticipantIteratively", messages, Conditions=[condition("MessagesInterrupted")]), "Act"
        )
        == []
    )
    document = only("MessageParticipantIteratively", messages, Conditions=[condition("Timeout")])
    assert reasons_for(document, "Act") == [
        "MessageParticipantIteratively allows only one MessagesInterrupted condition"
    ]


@pytest.mark.parametrize("kind", ["EndFlowExecution", "EndFlowModuleExecution"])
def test_an_action_that_ends_the_flow_has_empty_transitions(kind: str) -> None:
    assert reasons_for(only(kind, {}, NextAction="Bye"), "Act") == [
        f"{kind} ends the flow: its Transitions must be empty ({{}})"
    ]


def test_a_comparison_may_ask_whether_a_key_exists() -> None:
    document = only(
        "Compare",
        {"ComparisonValue": "$.Attributes.Tier"},
        NextAction="Bye",
        Conditions=[condition("Tier", operator="KeyExists")],
    )
    assert reasons_for(document, "Act") == []


# --- template tokens -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["%%QUEUE_ARN%%", "{{queues.support.arn}}"])
def test_a_leftover_template_token_in_a_reference_is_rejected(token: str) -> None:
    assert reasons_for(only("UpdateContactTargetQueue", {"QueueId": token}), "Act") == [
        f"leftover template token {token} in QueueId: Connect cannot resolve it; fill it before importing"
    ]


def test_a_fn_sub_placeholder_the_template_does_not_declare_is_rejected_in_an_arn() -> None:
    arn = "arn:aws:lambda:us-east-1:${ACCT_ID}:function:route"
    document = only("InvokeLambdaFunction", {"LambdaFunctionARN": arn, "InvocationTimeLimitSeconds": "3"})
    assert reasons_for(document, "Act") == ["placeholder ${ACCT_ID} names nothing the template declares"]


def test_the_shipped_flows_fn_sub_placeholders_stay_allowed_when_the_template_declares_them() -> None:
    arn = "${ConverseFunction.Arn}"
    document = only("InvokeLambdaFunction", {"LambdaFunctionARN": arn, "InvocationTimeLimitSeconds": "8"})
    assert validate(document, known_functions=FUNCTIONS, known_names=NAMES) == []


def test_a_template_token_in_the_words_said_is_a_warning() -> None:
    document = minimal_flow(say("Greet", "Welcome to {{company}}"))
    assert reasons_for(document, "Greet") == []
    assert warnings_for(document, "Greet") == [
        "template token {{company}} in Text: Connect says it as written unless it is filled before importing"
    ]


def test_a_template_is_validated_with_its_tokens_and_blanks_accepted() -> None:
    lambda_call = step(
        "Route",
        "InvokeLambdaFunction",
        {"LambdaFunctionARN": "{{lambdaFunctions.route.arn}}", "InvocationTimeLimitSeconds": "8"},
    )
    queue = step("Queue", "UpdateContactTargetQueue", {"QueueId": ""}, NextAction="Bye")
    lambda_call["Transitions"] = {"NextAction": "Queue"}
    document = minimal_flow(lambda_call, queue)
    assert len(validate(document)) == 2
    assert validate(document, templated=True) == []


# --- the forms a flow comes in ---------------------------------------------------------------------------------


def test_a_describe_contact_flow_answer_is_validated_by_its_content() -> None:
    content = minimal_flow(say("Hello", "Hi"))
    answer = {"ContactFlow": {"Name": "Hello", "Type": "CONTACT_FLOW", "Content": json.dumps(content)}}
    assert problems(answer) == []
    assert parse_flow(answer)["Hello"].parameters == {"Text": "Hi"}


def test_a_create_contact_flow_request_is_validated_by_its_content() -> None:
    request = {"Name": "Hello", "Type": "CONTACT_FLOW", "Content": json.dumps(minimal_flow(say("Hello", "Hi")))}
    assert problems(request) == []


def test_content_that_is_not_json_is_rejected() -> None:
    assert reasons_for({"ContactFlow": {"Content": "{'Version': 1}"}}, FLOW)[0].startswith("Content is not valid JSON")


def test_a_flow_module_with_its_settings_is_accepted() -> None:
    done = {"Identifier": "Done", "Type": "EndFlowModuleExecution", "Parameters": {}, "Transitions": {}}
    module = {
        "Version": "2019-10-30",
        "StartAction": "Done",
        "Actions": [done],
        "Settings": {"InputParameters": [], "OutputParameters": [], "Transitions": []},
    }
    assert validate(module, warnings=True) == []


def test_an_action_the_reference_keeps_out_of_the_flow_type_is_a_warning() -> None:
    content = json.dumps(minimal_flow(say("Hello", "Hi")))
    answer = {"ContactFlow": {"Type": "CUSTOMER_HOLD", "Content": content}}
    assert problems(answer) == []
    (warning,) = warnings_for(answer, "Hello")
    assert warning.startswith("MessageParticipant does not run in hold flows, the reference says")


def test_the_flow_type_is_also_read_from_the_designer_metadata() -> None:
    document = minimal_flow(say("Hello", "Hi"))
    document["Metadata"] = {"type": "customerHold"}
    assert len(warnings_for(document, "Hello")) == 1


def test_the_flows_page_lists_every_action_type_with_its_source() -> None:
    page = (ROOT / "docs" / "flows.md").read_text(encoding="utf-8")
    assert [kind for kind, spec in CANONICAL_TYPES.items() if f"| [`{kind}`]({spec.source})" not in page] == []
