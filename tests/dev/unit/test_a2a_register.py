"""``voicebridge a2a register``: Connect's side of the streaming transport, made through its APIs (botocore's Stubber
checks each call against the service models botocore ships, and its order), idempotent, and a dry run that calls
nothing."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from voicebridge_dev.a2a_register import (
    Registrar,
    Registration,
    RegistrationError,
    agent_configuration,
    boto3_api,
    dry_run_api,
)
from voicebridge_dev.cli import main

ACCOUNT = "111111111111"
INSTANCE_ID = "c8c0e68d-0000-4000-8000-000000000000"
INSTANCE_ARN = f"arn:aws:connect:us-east-1:{ACCOUNT}:instance/{INSTANCE_ID}"
ASSISTANT = "11111111-2222-4333-8444-555555555555"
SECRET = f"arn:aws:secretsmanager:us-east-1:{ACCOUNT}:secret:vb/a2a-api-key-AbCdEf"
PROFILE = "99999999-0000-4000-8000-000000000000"
PROMPT = "22222222-3333-4444-8555-666666666666"
APP_ID = "33333333-4444-4555-8666-777777777777"
APP_ARN = f"arn:aws:app-integrations:us-east-1:{ACCOUNT}:application/{APP_ID}"
AGENT_ID = "44444444-5555-4666-8777-888888888888"
AGENT_ARN = f"arn:aws:wisdom:us-east-1:{ACCOUNT}:ai-agent/{ASSISTANT}/{AGENT_ID}"
URL = "wss://agent.example.com"
REGISTRATION = Registration(
    instance_arn=INSTANCE_ARN,
    assistant=ASSISTANT,
    url=URL,
    secret_arn=SECRET,
    security_profile_id=PROFILE,
    orchestration_prompt_id=PROMPT,
)
CONFIGURATION = agent_configuration(REGISTRATION, APP_ID)
WANTED_APPLICATION = {
    "ApplicationSourceConfig": {"ExternalUrlConfig": {"AccessUrl": URL}},
    "ApplicationType": "A2A_SERVER",
    "AuthConfig": {"AuthType": "API_KEY", "CredentialProviderIdentifier": SECRET},
}
ENTRY = {"Arn": APP_ARN, "Type": "THIRD_PARTY"}
AGENT_SUMMARY = {
    "name": "voicebridge-streaming",
    "assistantId": ASSISTANT,
    "assistantArn": f"arn:aws:wisdom:us-east-1:{ACCOUNT}:assistant/{ASSISTANT}",
    "aiAgentId": AGENT_ID,
    "type": "ORCHESTRATION",
    "aiAgentArn": AGENT_ARN,
    "visibilityStatus": "PUBLISHED",
}


class Account:
    """Stubbed clients of the three services, each answering in the order the calls are expected."""

    def __init__(self) -> None:
        session = boto3.session.Session(aws_access_key_id="a", aws_secret_access_key="b", region_name="us-east-1")
        # The services are named at run time, and boto3's typed overloads know them only by literal name.
        make_client: Callable[..., Any] = session.client
        services = ("secretsmanager", "kms", "appintegrations", "connect", "qconnect")
        self.clients = {name: make_client(name) for name in services}
        self.stubs = {name: Stubber(client) for name, client in self.clients.items()}
        self.printed: list[str] = []

    def expect(
        self, service: str, operation: str, params: dict[str, Any], response: dict[str, Any] | None = None
    ) -> None:
        self.stubs[service].add_response(operation, response or {}, params)

    @contextmanager
    def active(self) -> Iterator[Registrar]:
        for stub in self.stubs.values():
            stub.activate()
        yield Registrar(boto3_api(self.clients.__getitem__, self.printed.append))
        for stub in self.stubs.values():
            stub.assert_no_pending_responses()
            stub.deactivate()


KEY_ARN = f"arn:aws:kms:us-east-1:{ACCOUNT}:key/66666666-7777-4888-8999-000000000000"


def secret_under(account: Account, key: str | None, manager: str = "CUSTOMER") -> None:
    described = {"ARN": SECRET, "Name": "vb/a2a-api-key", **({"KmsKeyId": key} if key else {})}
    account.expect("secretsmanager", "describe_secret", {"SecretId": SECRET}, described)
    if key:
        metadata = {"KeyId": key.rsplit("/", 1)[-1], "KeyManager": manager}
        account.expect("kms", "describe_key", {"KeyId": key}, {"KeyMetadata": metadata})


def application_exists(account: Account, application: dict[str, Any]) -> None:
    summary = {"Arn": APP_ARN, "Id": APP_ID, "Name": "voicebridge-streaming", "Namespace": "voicebridge-streaming"}
    account.expect("appintegrations", "list_applications", {}, {"Applications": [summary]})
    account.expect(
        "appintegrations", "get_application", {"Arn": APP_ARN}, {"Arn": APP_ARN, "Id": APP_ID, **application}
    )


def association_exists(account: Account) -> None:
    account.expect(
        "connect",
        "list_integration_associations",
        {"InstanceId": INSTANCE_ID, "IntegrationType": "APPLICATION"},
        {"IntegrationAssociationSummaryList": [{"IntegrationArn": APP_ARN, "IntegrationType": "APPLICATION"}]},
    )


def agent_exists(account: Account, configuration: dict[str, Any]) -> None:
    account.expect(
        "qconnect",
        "list_ai_agents",
        {"assistantId": ASSISTANT, "origin": "CUSTOMER"},
        {"aiAgentSummaries": [AGENT_SUMMARY]},
    )
    account.expect(
        "qconnect",
        "get_ai_agent",
        {"assistantId": ASSISTANT, "aiAgentId": AGENT_ID},
        {"aiAgent": {**AGENT_SUMMARY, "configuration": configuration}},
    )


def versions(account: Account, *configurations: dict[str, Any]) -> None:
    summaries = [
        {
            "versionNumber": number,
            "aiAgentSummary": {**AGENT_SUMMARY, "configuration": configuration},
        }
        for number, configuration in enumerate(configurations, start=1)
    ]
    account.expect(
        "qconnect",
        "list_ai_agent_versions",
        {"assistantId": ASSISTANT, "aiAgentId": AGENT_ID},
        {"aiAgentVersionSummaries": summaries},
    )


def profile_allows(account: Account, allowed: list[dict[str, str]]) -> None:
    account.expect(
        "connect",
        "list_security_profile_ai_agents",
        {"InstanceId": INSTANCE_ID, "SecurityProfileId": PROFILE},
        {"AllowedAIAgents": allowed},
    )


def entity_has_profile(account: Account, entity: str, profiles: list[str]) -> None:
    account.expect(
        "connect",
        "list_entity_security_profiles",
        {"InstanceId": INSTANCE_ID, "EntityType": "AI_AGENT", "EntityArn": entity},
        {"SecurityProfiles": [{"Id": profile} for profile in profiles]},
    )


def profile_associated(account: Account, entity: str) -> None:
    account.expect(
        "connect",
        "associate_security_profiles",
        {
            "InstanceId": INSTANCE_ID,
            "SecurityProfiles": [{"Id": PROFILE}],
            "EntityType": "AI_AGENT",
            "EntityArn": entity,
        },
    )


def profile_in_place(account: Account, version: int = 1) -> None:
    profile_allows(account, [ENTRY])
    entity_has_profile(account, AGENT_ARN, [PROFILE])
    entity_has_profile(account, f"{AGENT_ARN}:{version}", [PROFILE])


def everything_in_place(account: Account, *, agent_versions: int = 1) -> None:
    secret_under(account, KEY_ARN)
    application_exists(account, WANTED_APPLICATION)
    association_exists(account)
    agent_exists(account, CONFIGURATION)
    versions(account, *[CONFIGURATION] * agent_versions)
    profile_in_place(account, agent_versions)


# --- a first registration -----------------------------------------------------------------------------------


def test_a_first_registration_creates_each_piece_in_order_and_names_the_new_version() -> None:
    account = Account()
    secret_under(account, KEY_ARN)
    account.expect("appintegrations", "list_applications", {}, {})
    account.expect(
        "appintegrations",
        "create_application",
        {
            "Name": "voicebridge-streaming",
            "Namespace": "voicebridge-streaming",
            "Description": ANY,
            **WANTED_APPLICATION,
        },
        {"Arn": APP_ARN, "Id": APP_ID},
    )
    account.expect(
        "connect",
        "list_integration_associations",
        {"InstanceId": INSTANCE_ID, "IntegrationType": "APPLICATION"},
        {"IntegrationAssociationSummaryList": []},
    )
    account.expect(
        "connect",
        "create_integration_association",
        {"InstanceId": INSTANCE_ID, "IntegrationType": "APPLICATION", "IntegrationArn": APP_ARN},
    )
    account.expect(
        "qconnect", "list_ai_agents", {"assistantId": ASSISTANT, "origin": "CUSTOMER"}, {"aiAgentSummaries": []}
    )
    created_agent = {**AGENT_SUMMARY, "configuration": CONFIGURATION}
    account.expect(
        "qconnect",
        "create_ai_agent",
        {
            "assistantId": ASSISTANT,
            "name": "voicebridge-streaming",
            "type": "ORCHESTRATION",
            "configuration": CONFIGURATION,
            "visibilityStatus": "PUBLISHED",
            "description": ANY,
        },
        {"aiAgent": created_agent},
    )
    versions(account)
    account.expect(
        "qconnect",
        "create_ai_agent_version",
        {"assistantId": ASSISTANT, "aiAgentId": AGENT_ID},
        {"aiAgent": created_agent, "versionNumber": 1},
    )
    other = {"Arn": f"arn:aws:app-integrations:us-east-1:{ACCOUNT}:application/other", "Type": "THIRD_PARTY"}
    profile_allows(account, [other])
    account.expect(
        "connect",
        "update_security_profile",
        {"InstanceId": INSTANCE_ID, "SecurityProfileId": PROFILE, "AllowedAIAgents": [other, ENTRY]},
    )
    for entity in (AGENT_ARN, f"{AGENT_ARN}:1"):
        entity_has_profile(account, entity, [])
        profile_associated(account, entity)

    with account.active() as registrar:
        registered = registrar.register(REGISTRATION)

    assert registered.agent_version_arn == f"{AGENT_ARN}:1"
    assert (registered.application_arn, registered.application_id, registered.changed) == (APP_ARN, APP_ID, True)


def test_the_agent_hands_every_contact_to_the_application_at_once_with_audio_both_ways() -> None:
    orchestration = CONFIGURATION["orchestrationAIAgentConfiguration"]
    [collaborator] = orchestration["multiAgentConfigurations"]
    handoff = collaborator["handoffAgentConfiguration"]

    assert handoff["agentTarget"] == {"applicationId": APP_ID}
    assert (handoff["immediateHandoff"], handoff["audioStreamingEnabled"]) == (True, True)
    assert orchestration["connectInstanceArn"] == INSTANCE_ARN
    assert orchestration["orchestrationAIPromptId"] == PROMPT


def test_the_agent_returns_control_to_the_flow_with_the_outcomes_it_branches_on() -> None:
    tools = CONFIGURATION["orchestrationAIAgentConfiguration"]["toolConfigurations"]

    assert tools == [
        {"toolName": "Complete", "toolType": "RETURN_TO_CONTROL"},
        {"toolName": "Escalate", "toolType": "RETURN_TO_CONTROL"},
    ]


def test_a_locale_is_set_on_the_agent_only_when_given() -> None:
    with_locale = Registration(**{**_fields(REGISTRATION), "locale": "en_US"})

    assert "locale" not in CONFIGURATION["orchestrationAIAgentConfiguration"]
    assert agent_configuration(with_locale, APP_ID)["orchestrationAIAgentConfiguration"]["locale"] == "en_US"


# --- idempotency ---------------------------------------------------------------------------------------------


def test_a_second_registration_reads_everything_and_changes_nothing() -> None:
    account = Account()
    everything_in_place(account)

    with account.active() as registrar:
        registered = registrar.register(REGISTRATION)

    assert registered.changed is False
    assert registered.agent_version_arn == f"{AGENT_ARN}:1"
    assert account.printed == []


def test_a_moved_url_updates_the_application_and_nothing_else() -> None:
    account = Account()
    secret_under(account, KEY_ARN)
    moved = {
        **WANTED_APPLICATION,
        "ApplicationSourceConfig": {"ExternalUrlConfig": {"AccessUrl": "wss://old.example.com"}},
    }
    application_exists(account, moved)
    account.expect("appintegrations", "update_application", {"Arn": APP_ARN, **WANTED_APPLICATION})
    association_exists(account)
    agent_exists(account, CONFIGURATION)
    versions(account, CONFIGURATION)
    profile_in_place(account)

    with account.active() as registrar:
        assert registrar.register(REGISTRATION).changed is True

    assert [line.split(" {")[0] for line in account.printed] == ["appintegrations UpdateApplication"]


def test_fields_the_service_adds_to_what_was_asked_count_as_no_difference() -> None:
    account = Account()
    richer = {
        "orchestrationAIAgentConfiguration": {
            **CONFIGURATION["orchestrationAIAgentConfiguration"],
            "locale": "en_US",
        }
    }
    secret_under(account, KEY_ARN)
    application_exists(account, {**WANTED_APPLICATION, "Description": "as made", "Permissions": []})
    association_exists(account)
    agent_exists(account, richer)
    versions(account, richer)
    profile_in_place(account)

    with account.active() as registrar:
        assert registrar.register(REGISTRATION).changed is False


def test_a_changed_agent_is_updated_and_published_as_a_new_version() -> None:
    account = Account()
    old = agent_configuration(REGISTRATION, "55555555-0000-4000-8000-000000000000")
    secret_under(account, KEY_ARN)
    application_exists(account, WANTED_APPLICATION)
    association_exists(account)
    agent_exists(account, old)
    account.expect(
        "qconnect",
        "update_ai_agent",
        {
            "assistantId": ASSISTANT,
            "aiAgentId": AGENT_ID,
            "visibilityStatus": "PUBLISHED",
            "configuration": CONFIGURATION,
        },
        {},
    )
    versions(account, old)
    account.expect(
        "qconnect",
        "create_ai_agent_version",
        {"assistantId": ASSISTANT, "aiAgentId": AGENT_ID},
        {"versionNumber": 2},
    )
    profile_allows(account, [ENTRY])
    entity_has_profile(account, AGENT_ARN, [PROFILE])
    entity_has_profile(account, f"{AGENT_ARN}:2", [])
    profile_associated(account, f"{AGENT_ARN}:2")

    with account.active() as registrar:
        assert registrar.register(REGISTRATION).agent_version_arn == f"{AGENT_ARN}:2"


def test_the_newest_version_holding_the_configuration_is_the_one_named() -> None:
    account = Account()
    everything_in_place(account, agent_versions=3)

    with account.active() as registrar:
        assert registrar.register(REGISTRATION).agent_version_arn == f"{AGENT_ARN}:3"


def test_an_application_of_another_type_under_the_name_is_refused_not_changed() -> None:
    account = Account()
    secret_under(account, KEY_ARN)
    application_exists(account, {**WANTED_APPLICATION, "ApplicationType": "STANDARD"})

    with pytest.raises(RegistrationError, match="STANDARD"), account.active() as registrar:
        registrar.register(REGISTRATION)


@pytest.mark.parametrize(("key", "manager"), [(None, "AWS"), (KEY_ARN, "AWS")], ids=["default key", "aws managed key"])
def test_a_secret_connect_cannot_decrypt_is_refused_before_anything_is_made(key: str | None, manager: str) -> None:
    account = Account()
    secret_under(account, key, manager)

    with pytest.raises(RegistrationError, match="customer-managed key"), account.active() as registrar:
        registrar.register(REGISTRATION)


# --- the dry run ---------------------------------------------------------------------------------------------


def test_a_dry_run_prints_every_call_of_a_first_registration_with_its_parameters() -> None:
    printed: list[str] = []

    Registrar(dry_run_api(printed.append)).register(REGISTRATION)

    assert [" ".join(line.split(" ")[:2]) for line in printed] == [
        "secretsmanager DescribeSecret",
        "kms DescribeKey",
        "appintegrations ListApplications",
        "appintegrations CreateApplication",
        "connect ListIntegrationAssociations",
        "connect CreateIntegrationAssociation",
        "qconnect ListAIAgents",
        "qconnect CreateAIAgent",
        "qconnect ListAIAgentVersions",
        "qconnect CreateAIAgentVersion",
        "connect ListSecurityProfileAIAgents",
        "connect UpdateSecurityProfile",
        "connect ListEntitySecurityProfiles",
        "connect AssociateSecurityProfiles",
        "connect ListEntitySecurityProfiles",
        "connect AssociateSecurityProfiles",
    ]
    assert f'"CredentialProviderIdentifier": "{SECRET}"' in printed[3]
    assert '"audioStreamingEnabled": true' in printed[7]


def test_the_dry_run_command_makes_no_call(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def no_client(*args: object, **kwargs: object) -> None:
        raise AssertionError("a dry run made a client")

    monkeypatch.setattr(boto3.session.Session, "client", no_client)

    status = main(["a2a", "register", "--dry-run", *_arguments()])

    out = capsys.readouterr().out
    assert status == 0
    assert "appintegrations CreateApplication" in out
    assert "AI agent version (StreamingAIAgentVersionArn): <AI agent ARN>:<version>" in out


# --- bad arguments -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("url", "https://agent.example.com", "wss://"),
        ("instance_arn", "c8c0e68d-0000-4000-8000-000000000000", "instance"),
        ("secret_arn", "vb/a2a-api-key", "secret"),
        ("orchestration_prompt_id", "prompt", "prompt"),
        ("security_profile_id", " ", "security profile"),
    ],
)
def test_a_bad_argument_is_refused_before_any_call(field: str, value: str, named: str) -> None:
    with pytest.raises(RegistrationError, match=named):
        Registration(**{**_fields(REGISTRATION), field: value})


def test_the_command_says_what_is_wrong_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    arguments = _arguments()
    arguments[arguments.index("--url") + 1] = "https://agent.example.com"

    assert main(["a2a", "register", "--dry-run", *arguments]) == 2
    assert "wss://" in capsys.readouterr().err


def _fields(registration: Registration) -> dict[str, Any]:
    return {name: getattr(registration, name) for name in Registration.__slots__}


def _arguments() -> list[str]:
    return [
        "--instance-arn",
        INSTANCE_ARN,
        "--assistant",
        ASSISTANT,
        "--url",
        URL,
        "--secret-arn",
        SECRET,
        "--security-profile-id",
        PROFILE,
        "--orchestration-prompt-id",
        PROMPT,
    ]
