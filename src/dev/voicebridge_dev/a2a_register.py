"""``voicebridge a2a register``: Amazon Connect's side of the streaming transport, through the APIs that make it.

deploy/a2a-streaming.yaml runs the agent server and makes the API key Connect presents to it (a secret under a
customer-managed KMS key that Connect may use). What remains is API-only, or not yet in the resource schemas
CloudFormation is checked against (the stack's header says which), and is done here, in the order of the Amazon
Connect Administrator Guide's "Set up collaboration with an external AI agent" (docs/deploying.md, "Streaming
transport"):

0. the API key's secret is checked, not changed: Connect can read it only under a customer-managed KMS key;
1. the AppIntegrations application: ``ApplicationType`` ``A2A_SERVER``, ``ApplicationSourceConfig.ExternalUrlConfig``
   ``AccessUrl`` the server's ``wss://`` URL, ``AuthConfig`` ``API_KEY`` with the secret;
2. its association with the instance (``CreateIntegrationAssociation``, ``IntegrationType`` ``APPLICATION``);
3. the AI agent (qconnect, ``ORCHESTRATION``): one ``handoffAgentConfiguration`` to the application with
   ``immediateHandoff`` and ``audioStreamingEnabled``, and the ``Complete`` and ``Escalate`` tools of type
   ``RETURN_TO_CONTROL`` that hand the call back to the flow; then a published version of it, whose ARN the flow names;
4. the security profile: the application allowed (``AllowedAIAgents``, type ``THIRD_PARTY``), and the profile
   associated with the AI agent, unversioned and versioned.

Each step reads first (list, get, describe) and creates or updates only what differs, so a second run changes
nothing::

    registrar = Registrar(boto3_api(clients, print))
    registered = registrar.register(registration)
    print(registered.agent_version_arn)

With ``dry_run_api`` no call is made at all, none read: each call a first registration makes is printed with its
parameters, and the values only a call would return are shown as ``<...>``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from botocore import xform_name

APPLICATION_TYPE = "A2A_SERVER"
RETURN_TO_CONTROL_TOOLS = ("Complete", "Escalate")
"""The outcomes the flow branches on (``$.Lex.SessionAttributes.Tool``). An audio immediate-handoff orchestrator must
declare ``Complete`` (docs/protocols.md, "Registering an external AI agent with Amazon Connect"); ``Escalate``, the
agent asking for a person, is declared alike."""
HANDOFF_INSTRUCTION = (
    "Hand every voice contact to this agent at once. It speaks with the caller in its own voice, and finishes with "
    "Complete when the caller is done or Escalate when the caller needs a person."
)

_INSTANCE_ARN = re.compile(r"arn:aws[a-z-]*:connect:[a-z0-9-]+:\d{12}:instance/(?P<id>[0-9a-f-]+)")
_SECRET_ARN = re.compile(r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+")
_WSS_URL = re.compile(r"wss://[^/\s?#]+(/\S*)?")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:[A-Z0-9_$]+)?")
_ASSISTANT = re.compile(r"[0-9a-f-]{36}|arn:aws[a-z-]*:wisdom:[a-z0-9-]+:\d{12}:assistant/[0-9a-f-]{36}")
_NAME = re.compile(r"[a-zA-Z0-9_.-]{1,100}")

Api = Callable[[str, str, Mapping[str, Any]], dict[str, Any]]
"""One AWS call: ``(service, operation, parameters) -> response``, the operation as its API reference names it."""


class RegistrationError(Exception):
    """The registration cannot be made as asked (a bad argument, or an account that disagrees with it)."""


@dataclass(frozen=True, slots=True)
class Registration:
    """What Connect needs to know of the deployed server, and where in Connect it goes."""

    instance_arn: str
    assistant: str
    """The Amazon Q in Connect assistant (id or ARN) associated with the instance."""
    url: str
    """The server's ``wss://`` URL (the stack's StreamingUrl output)."""
    secret_arn: str
    """The API key's secret (the stack's StreamingApiKeySecretArn output)."""
    security_profile_id: str
    orchestration_prompt_id: str
    """An ``ORCHESTRATION`` AI prompt (``aws qconnect list-ai-prompts``), which the API requires of the agent."""
    name: str = "voicebridge-streaming"
    """The application's name and namespace, and the AI agent's name."""
    locale: str = ""

    def __post_init__(self) -> None:
        problems = [
            f"{what} {value!r} {meaning}"
            for what, value, pattern, meaning in (
                ("instance", self.instance_arn, _INSTANCE_ARN, "is not a Connect instance ARN"),
                ("assistant", self.assistant, _ASSISTANT, "is not an assistant id or ARN"),
                ("url", self.url, _WSS_URL, "is not a wss:// URL (audio streaming needs a WebSocket)"),
                ("secret", self.secret_arn, _SECRET_ARN, "is not a Secrets Manager secret ARN"),
                ("orchestration prompt", self.orchestration_prompt_id, _UUID, "is not an AI prompt id"),
                ("name", self.name, _NAME, "must be 1-100 letters, digits, '_', '.' or '-'"),
            )
            if not pattern.fullmatch(value)
        ]
        if not self.security_profile_id.strip():
            problems.append("security profile id is empty")
        if problems:
            raise RegistrationError("; ".join(problems))

    @property
    def instance_id(self) -> str:
        match = _INSTANCE_ARN.fullmatch(self.instance_arn)
        assert match is not None
        return match["id"]


@dataclass(frozen=True, slots=True)
class Registered:
    """What the registration made or found: the flow's session attribute names ``agent_version_arn``."""

    application_arn: str
    application_id: str
    agent_arn: str
    agent_id: str
    agent_version_arn: str
    changed: bool


class Registrar:
    """Makes Connect's side of the streaming transport, changing only what differs from ``Registration``."""

    def __init__(self, api: Api) -> None:
        self._api = api
        self._changed = False

    def register(self, registration: Registration) -> Registered:
        self._check_secret(registration)
        application_arn, application_id = self._application(registration)
        self._association(registration, application_arn)
        configuration = agent_configuration(registration, application_id)
        agent_arn, agent_id = self._agent(registration, configuration)
        version_arn = self._version(registration, configuration, agent_arn, agent_id)
        self._security_profile(registration, application_arn, (agent_arn, version_arn))
        return Registered(application_arn, application_id, agent_arn, agent_id, version_arn, self._changed)

    # --- the calls ---------------------------------------------------------------------------------------------

    def _read(self, service: str, operation: str, **params: Any) -> dict[str, Any]:
        return self._api(service, operation, params)

    def _write(self, service: str, operation: str, **params: Any) -> dict[str, Any]:
        self._changed = True
        return self._api(service, operation, params)

    def _pages(self, service: str, operation: str, key: str, **params: Any) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        token_name = "nextToken" if service == "qconnect" else "NextToken"
        while True:
            page = self._read(service, operation, **params)
            items.extend(page.get(key, []))
            token = page.get(token_name)
            if not token:
                return items
            params[token_name] = token

    def _named(
        self, name: str, name_key: str, service: str, operation: str, key: str, **params: Any
    ) -> dict[str, Any] | None:
        """The first item of a listing whose ``name_key`` is ``name``; None when no item is named so."""
        return next(
            (item for item in self._pages(service, operation, key, **params) if item.get(name_key) == name), None
        )

    # --- 0. the secret Connect reads the key from ---------------------------------------------------------------

    def _check_secret(self, registration: Registration) -> None:
        """Refuses a secret under an AWS managed key: Connect could not read it, and every call would be refused
        at the upgrade, long after this registration said it was done."""
        key = self._read("secretsmanager", "DescribeSecret", SecretId=registration.secret_arn).get("KmsKeyId")
        manager = self._read("kms", "DescribeKey", KeyId=key)["KeyMetadata"].get("KeyManager") if key else "AWS"
        if manager != "CUSTOMER":
            raise RegistrationError(
                f"secret {registration.secret_arn} is encrypted with an AWS managed key, which Connect cannot use: "
                "encrypt it with a customer-managed key whose policy lets connect.amazonaws.com decrypt "
                "(deploy/a2a-streaming.yaml makes one)"
            )

    # --- 1. the application ---------------------------------------------------------------------------------------

    def _application(self, registration: Registration) -> tuple[str, str]:
        wanted = {
            "ApplicationSourceConfig": {"ExternalUrlConfig": {"AccessUrl": registration.url}},
            "ApplicationType": APPLICATION_TYPE,
            "AuthConfig": {"AuthType": "API_KEY", "CredentialProviderIdentifier": registration.secret_arn},
        }
        found = self._named(registration.name, "Name", "appintegrations", "ListApplications", "Applications")
        if found is None:
            created = self._write(
                "appintegrations",
                "CreateApplication",
                Name=registration.name,
                Namespace=registration.name,
                Description="voicebridge streaming agent server (A2A, audio both ways)",
                **wanted,
            )
            return str(created["Arn"]), str(created["Id"])
        arn = str(found["Arn"])
        current = self._read("appintegrations", "GetApplication", Arn=arn)
        if current.get("ApplicationType", APPLICATION_TYPE) != APPLICATION_TYPE:
            raise RegistrationError(
                f"application {registration.name!r} exists as {current['ApplicationType']}, not {APPLICATION_TYPE}: "
                "choose another --name"
            )
        if not _contains(current, wanted):
            self._write("appintegrations", "UpdateApplication", Arn=arn, **wanted)
        return arn, str(current.get("Id") or found["Id"])

    # --- 2. its association with the instance ---------------------------------------------------------------

    def _association(self, registration: Registration, application_arn: str) -> None:
        associations = self._pages(
            "connect",
            "ListIntegrationAssociations",
            "IntegrationAssociationSummaryList",
            InstanceId=registration.instance_id,
            IntegrationType="APPLICATION",
        )
        if not any(a.get("IntegrationArn") == application_arn for a in associations):
            self._write(
                "connect",
                "CreateIntegrationAssociation",
                InstanceId=registration.instance_id,
                IntegrationType="APPLICATION",
                IntegrationArn=application_arn,
            )

    # --- 3. the AI agent and its version ----------------------------------------------------------------------

    def _agent(self, registration: Registration, configuration: dict[str, Any]) -> tuple[str, str]:
        found = self._named(
            registration.name,
            "name",
            "qconnect",
            "ListAIAgents",
            "aiAgentSummaries",
            assistantId=registration.assistant,
            origin="CUSTOMER",
        )
        if found is None:
            created = self._write(
                "qconnect",
                "CreateAIAgent",
                assistantId=registration.assistant,
                name=registration.name,
                type="ORCHESTRATION",
                configuration=configuration,
                visibilityStatus="PUBLISHED",
                description="Hands voice contacts to the voicebridge streaming agent server",
            )["aiAgent"]
            return str(created["aiAgentArn"]), str(created["aiAgentId"])
        if found.get("type") != "ORCHESTRATION":
            kind = found.get("type")
            raise RegistrationError(
                f"AI agent {registration.name!r} exists as {kind}, not ORCHESTRATION: choose another --name"
            )
        agent_id = str(found["aiAgentId"])
        current = self._read("qconnect", "GetAIAgent", assistantId=registration.assistant, aiAgentId=agent_id)
        if not _contains(current["aiAgent"].get("configuration", {}), configuration):
            self._write(
                "qconnect",
                "UpdateAIAgent",
                assistantId=registration.assistant,
                aiAgentId=agent_id,
                visibilityStatus="PUBLISHED",
                configuration=configuration,
            )
        return str(found["aiAgentArn"]), agent_id

    def _version(self, registration: Registration, configuration: dict[str, Any], agent_arn: str, agent_id: str) -> str:
        """The newest version holding the configuration, made if none does: a change takes effect only once it is
        published as a version."""
        versions = [
            version
            for version in self._pages(
                "qconnect",
                "ListAIAgentVersions",
                "aiAgentVersionSummaries",
                assistantId=registration.assistant,
                aiAgentId=agent_id,
            )
            if _contains((version.get("aiAgentSummary") or {}).get("configuration", {}), configuration)
        ]
        if versions:
            number = max(version["versionNumber"] for version in versions)
        else:
            number = self._write(
                "qconnect", "CreateAIAgentVersion", assistantId=registration.assistant, aiAgentId=agent_id
            )["versionNumber"]
        # A version is its agent's id qualified by the number (the qconnect API's UuidWithQualifier).
        return f"{agent_arn}:{number}"

    # --- 4. the security profile ----------------------------------------------------------------------------

    def _security_profile(self, registration: Registration, application_arn: str, agents: tuple[str, ...]) -> None:
        allowed = self._pages(
            "connect",
            "ListSecurityProfileAIAgents",
            "AllowedAIAgents",
            InstanceId=registration.instance_id,
            SecurityProfileId=registration.security_profile_id,
        )
        entry = {"Arn": application_arn, "Type": "THIRD_PARTY"}
        if entry not in allowed:
            # The list given replaces the profile's: what it allowed before is kept.
            self._write(
                "connect",
                "UpdateSecurityProfile",
                InstanceId=registration.instance_id,
                SecurityProfileId=registration.security_profile_id,
                AllowedAIAgents=[*allowed, entry],
            )
        for agent in agents:
            profiles = self._pages(
                "connect",
                "ListEntitySecurityProfiles",
                "SecurityProfiles",
                InstanceId=registration.instance_id,
                EntityType="AI_AGENT",
                EntityArn=agent,
            )
            if not any(profile.get("Id") == registration.security_profile_id for profile in profiles):
                self._write(
                    "connect",
                    "AssociateSecurityProfiles",
                    InstanceId=registration.instance_id,
                    SecurityProfiles=[{"Id": registration.security_profile_id}],
                    EntityType="AI_AGENT",
                    EntityArn=agent,
                )


def agent_configuration(registration: Registration, application_id: str) -> dict[str, Any]:
    """The orchestrator's configuration: hand every contact to the application at once, audio both ways."""
    orchestration: dict[str, Any] = {
        "orchestrationAIPromptId": registration.orchestration_prompt_id,
        "connectInstanceArn": registration.instance_arn,
        "toolConfigurations": [{"toolName": name, "toolType": "RETURN_TO_CONTROL"} for name in RETURN_TO_CONTROL_TOOLS],
        "multiAgentConfigurations": [
            {
                "handoffAgentConfiguration": {
                    "agentTarget": {"applicationId": application_id},
                    "instruction": {"instruction": HANDOFF_INSTRUCTION},
                    "audioStreamingEnabled": True,
                    "immediateHandoff": True,
                }
            }
        ],
    }
    if registration.locale:
        orchestration["locale"] = registration.locale
    return {"orchestrationAIAgentConfiguration": orchestration}


def _contains(actual: Any, wanted: Any) -> bool:
    """``actual`` holds everything ``wanted`` says (the service may add fields of its own)."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(k in actual and _contains(actual[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(wanted)
            and all(_contains(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


# --- where the calls go -----------------------------------------------------------------------------------------

_DRY_RUN_ANSWERS: dict[str, dict[str, Any]] = {
    "DescribeSecret": {"KmsKeyId": "<the secret's KMS key>"},
    "DescribeKey": {"KeyMetadata": {"KeyManager": "CUSTOMER"}},
    "ListApplications": {"Applications": []},
    "CreateApplication": {"Arn": "<application ARN>", "Id": "<application id>"},
    "ListIntegrationAssociations": {"IntegrationAssociationSummaryList": []},
    "ListAIAgents": {"aiAgentSummaries": []},
    "CreateAIAgent": {"aiAgent": {"aiAgentArn": "<AI agent ARN>", "aiAgentId": "<AI agent id>"}},
    "ListAIAgentVersions": {"aiAgentVersionSummaries": []},
    "CreateAIAgentVersion": {"versionNumber": "<version>"},
    "ListSecurityProfileAIAgents": {"AllowedAIAgents": []},
    "ListEntitySecurityProfiles": {"SecurityProfiles": []},
}


def describe_call(service: str, operation: str, params: Mapping[str, Any]) -> str:
    """One line: the service, the operation as the API reference names it, and its parameters as JSON."""
    return f"{service} {operation} {json.dumps(params, sort_keys=True)}"


def dry_run_api(out: Callable[[str], None]) -> Api:
    """Prints each call and makes none, answering as an account where nothing of the registration exists yet."""

    def call(service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        out(describe_call(service, operation, params))
        return dict(_DRY_RUN_ANSWERS.get(operation, {}))

    return call


def boto3_api(clients: Callable[[str], Any], out: Callable[[str], None]) -> Api:
    """Makes each call with the client of its service, printing those that change something (all but the reads:
    List, Get and Describe)."""

    def call(service: str, operation: str, params: Mapping[str, Any]) -> dict[str, Any]:
        if not operation.startswith(("List", "Get", "Describe")):
            out(describe_call(service, operation, params))
        response: dict[str, Any] = getattr(clients(service), xform_name(operation))(**params)
        response.pop("ResponseMetadata", None)
        return response

    return call
