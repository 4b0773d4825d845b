"""Flows as the console exports them in late 2026 (issue 29): the Agentic CX block, data-table writes and lists, the
console's own parameter forms, and Voice ID's blocks after its end of support."""

from __future__ import annotations

from typing import Any

from tests.fixtures.flows import CORPUS, condition, minimal_flow, step
from voicebridge_dev.flows import validate
from voicebridge_dev.flows.rules import VOICE_ID_ENDED

AGENTIC_EXPORT = (
    CORPUS / "sample-aicc-builder-for-amazon-connect-ai-agent" / ("_reference-console-export-agentic-cx-block.json")
)
NO_MATCH = [{"NextAction": "Bye", "ErrorType": "NoMatchingError"}]


def problems(*actions: dict[str, Any]) -> list[str]:
    return [str(p) for p in validate(minimal_flow(*actions), warnings=True)]


def hooks(parameters: dict[str, Any]) -> dict[str, Any]:
    return step("Hooks", "UpdateContactEventHooks", parameters, NextAction="Bye", Errors=NO_MATCH)


def test_a_console_export_of_the_agentic_cx_block_validates_with_no_error_or_warning() -> None:
    assert validate(AGENTIC_EXPORT.read_text(encoding="utf-8"), warnings=True) == []


def test_the_agentic_cx_block_branches_on_escalation() -> None:
    block = step(
        "Agent",
        "ConnectParticipantWithAgenticCX",
        {"AgentConfiguration": {"WorkspaceId": "w", "ApplicationId": "a", "Alias": "p"}},
        NextAction="Bye",
        Conditions=[condition("Escalation")],
        Errors=[*NO_MATCH, {"NextAction": "Bye", "ErrorType": "InputTimeLimitExceeded"}],
    )
    assert problems(block) == []


def test_the_agentic_cx_blocks_context_variables_are_a_map_of_strings() -> None:
    configuration = {"WorkspaceId": "w", "ApplicationId": "a", "Alias": "p", "ContextVariables": {"n": 1}}
    block = step("Agent", "ConnectParticipantWithAgenticCX", {"AgentConfiguration": configuration}, Errors=NO_MATCH)
    assert any("ContextVariables.n must be a string" in p for p in problems(block))


def test_a_data_table_write_and_list_are_known_types() -> None:
    table = {"DataTableId": "$.Attributes.table"}
    write = step("Write", "UpsertDataTableValues", {**table, "LockVersion": "1"}, NextAction="List", Errors=NO_MATCH)
    listed = step("List", "ListDataTableValues", {**table, "PrimaryKeyGroups": []}, NextAction="Bye", Errors=NO_MATCH)
    assert problems(write, listed) == []


def test_an_event_hook_turned_off_by_event_hooks_configuration_alone_is_accepted() -> None:
    assert problems(hooks({"EventHooksConfiguration": {"CustomerWhisper": {"DisableExecution": "true"}}})) == []


def test_event_hooks_without_either_form_is_refused() -> None:
    assert any("EventHooks or EventHooksConfiguration must be set" in p for p in problems(hooks({})))


def test_event_hooks_configuration_takes_disable_execution_true_or_false() -> None:
    reasons = problems(hooks({"EventHooksConfiguration": {"CustomerWhisper": {"DisableExecution": "yes"}}}))
    assert any("DisableExecution must be" in p for p in reasons)


def test_a_case_linked_to_the_current_contact_gets_no_warning() -> None:
    create = step(
        "Case",
        "CreateCase",
        {"LinkContactToCase": "true", "CaseTemplateId": "${CaseTemplateId}", "ContactToLink": "Current"},
        NextAction="Bye",
        Errors=NO_MATCH,
    )
    assert problems(create) == []


def test_the_consoles_from_segment_rehydration_is_accepted() -> None:
    resume = step(
        "Resume",
        "CreatePersistentContactAssociation",
        {"RehydrationType": "From Segment", "SourceContactId": "$.Attributes.previous"},
        NextAction="Bye",
        Errors=NO_MATCH,
    )
    assert problems(resume) == []


def test_a_voice_id_block_is_accepted_with_a_warning_that_its_support_ended() -> None:
    check = step(
        "Voice",
        "CheckVoiceId",
        {"CheckVoiceIdOption": "enrollmentStatus"},
        NextAction="Bye",
        Conditions=[condition("Enrolled")],
        Errors=NO_MATCH,
    )
    assert [p for p in validate(minimal_flow(check)) if not p.warning] == []
    assert problems(check) == [f"Voice: {VOICE_ID_ENDED}"]


def test_the_older_voice_id_blocks_are_accepted_with_the_same_warning() -> None:
    set_voice = step(
        "Set",
        "SetSecurityBehavior",
        {"VoiceAuthentication": "50", "SecurityBehaviorOption": "Enable"},
        NextAction="Check",
        Errors=NO_MATCH,
    )
    check = step("Check", "CheckSecurityStatus", {}, NextAction="Bye", Conditions=[condition("Authenticated")])
    assert problems(set_voice, check) == [f"Set: {VOICE_ID_ENDED}", f"Check: {VOICE_ID_ENDED}"]
