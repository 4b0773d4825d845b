"""deploy/a2a-streaming.yaml as deployed: the A2A agent server on Fargate (ARM64) behind an internet-facing HTTPS load
balancer, draining so a deployment never cuts a call under an hour, scaling on live sessions per task, exactly the
grants the server's calls need, the API key under a KMS key Connect may use for it alone; and how template.yaml nests
it."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from typing import Any

import pytest

from tests.fixtures import ROOT
from voicebridge.config import Settings
from voicebridge_dev.template import load_template

STACK = load_template(ROOT / "deploy" / "a2a-streaming.yaml")
RESOURCES: dict[str, Any] = STACK["Resources"]
PARAMETERS: dict[str, Any] = STACK["Parameters"]
MAIN = load_template(ROOT / "template.yaml")


def of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {name: resource for name, resource in RESOURCES.items() if resource["Type"] == kind}


def container() -> dict[str, Any]:
    [definition] = RESOURCES["TaskDefinition"]["Properties"]["ContainerDefinitions"]
    return dict(definition)


def environment() -> dict[str, Any]:
    return {item["Name"]: item["Value"] for item in container()["Environment"]}


def task_statements() -> dict[str, dict[str, Any]]:
    """The task role's statements by Sid, a conditional one with the condition that grants it."""
    found: dict[str, dict[str, Any]] = {}
    for policy in RESOURCES["TaskRole"]["Properties"]["Policies"]:
        for statement in policy["PolicyDocument"]["Statement"]:
            if "Fn::If" in statement:
                condition, granted, otherwise = statement["Fn::If"]
                assert otherwise == {"Ref": "AWS::NoValue"}
                found[granted["Sid"]] = {**granted, "GrantedWhen": condition}
            else:
                found[statement["Sid"]] = statement
    return found


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def attributes(resource: str, key: str) -> dict[str, Any]:
    return {item["Key"]: item["Value"] for item in RESOURCES[resource]["Properties"][key] if "Key" in item}


# --- the stack ---------------------------------------------------------------------------------------------------


def test_it_is_a_plain_cloudformation_stack_deployable_alone() -> None:
    assert "Transform" not in STACK
    assert [p for p, spec in PARAMETERS.items() if "Default" not in spec] == [
        "ImageRepositoryName",
        "ImageTag",
        "DomainName",
        "CertificateArn",
        "VpcId",
        "LoadBalancerSubnetIds",
        "TaskSubnetIds",
        "ConnectInstanceArn",
        "TurnTableName",
        "CallRecordBucketName",
        "CartesiaApiKeySecretArn",
    ]


def test_the_server_runs_on_fargate_arm64_from_a_private_repository_of_this_account() -> None:
    task = RESOURCES["TaskDefinition"]["Properties"]

    assert task["RequiresCompatibilities"] == ["FARGATE"]
    assert task["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}
    assert (task["Cpu"], task["Memory"]) == ({"Ref": "TaskCpu"}, {"Ref": "TaskMemoryMiB"})
    assert container()["Image"]["Fn::Sub"] == (
        "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/${ImageRepositoryName}:${ImageTag}"
    )


def test_the_container_runs_unprivileged_on_a_read_only_root_with_tmp_its_own() -> None:
    definition = container()

    assert definition["ReadonlyRootFilesystem"] is True
    assert definition["User"] == "10001:10001"
    assert definition["LinuxParameters"]["Capabilities"] == {"Drop": ["ALL"]}
    assert definition["MountPoints"] == [{"SourceVolume": "tmp", "ContainerPath": "/tmp", "ReadOnly": False}]
    assert RESOURCES["TaskDefinition"]["Properties"]["Volumes"] == [{"Name": "tmp"}]


# --- draining -------------------------------------------------------------------------------------------------


def test_a_leaving_task_keeps_its_calls_for_up_to_an_hour_the_load_balancers_most() -> None:
    assert attributes("TargetGroup", "TargetGroupAttributes")["deregistration_delay.timeout_seconds"] == {
        "Ref": "DeregistrationDelaySeconds"
    }
    assert PARAMETERS["DeregistrationDelaySeconds"]["Default"] == PARAMETERS["DeregistrationDelaySeconds"]["MaxValue"]
    assert PARAMETERS["DeregistrationDelaySeconds"]["MaxValue"] == 3600


def test_after_sigterm_the_server_drains_for_less_than_fargate_waits_before_sigkill() -> None:
    assert container()["StopTimeout"] == {"Ref": "StopTimeoutSeconds"}
    assert PARAMETERS["StopTimeoutSeconds"]["Default"] == PARAMETERS["StopTimeoutSeconds"]["MaxValue"] == 120
    assert environment()["A2A_DRAIN_S"] == {"Ref": "DrainSeconds"}
    assert PARAMETERS["DrainSeconds"]["Default"] == 110
    assert PARAMETERS["DrainSeconds"]["MaxValue"] < PARAMETERS["StopTimeoutSeconds"]["MaxValue"]
    # SIGTERM reaches the server even behind an init process.
    assert container()["LinuxParameters"]["InitProcessEnabled"] is True


def test_a_deployment_keeps_full_capacity_and_rolls_back_when_unhealthy() -> None:
    deployment = RESOURCES["Service"]["Properties"]["DeploymentConfiguration"]

    assert (deployment["MinimumHealthyPercent"], deployment["MaximumPercent"]) == (100, 200)
    assert deployment["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}


def test_the_load_balancer_routes_only_to_tasks_whose_health_answers_200() -> None:
    group = RESOURCES["TargetGroup"]["Properties"]

    assert (group["HealthCheckPath"], group["Matcher"]) == ("/health", {"HttpCode": "200"})
    assert (group["TargetType"], group["Protocol"], group["ProtocolVersion"]) == ("ip", "HTTP", "HTTP1")
    assert group["Port"] == {"Ref": "ContainerPort"}
    assert environment()["A2A_PORT"] == {"Ref": "ContainerPort"}


def test_a_connection_idle_both_ways_is_closed_after_two_minutes_by_default() -> None:
    assert attributes("LoadBalancer", "LoadBalancerAttributes")["idle_timeout.timeout_seconds"] == {
        "Ref": "IdleTimeoutSeconds"
    }
    assert PARAMETERS["IdleTimeoutSeconds"]["Default"] == 120


# --- the internet-facing side -------------------------------------------------------------------------------


def test_connect_reaches_an_internet_facing_https_listener_with_the_customers_certificate() -> None:
    balancer = RESOURCES["LoadBalancer"]["Properties"]
    [listener] = of_type("AWS::ElasticLoadBalancingV2::Listener").values()

    assert (balancer["Type"], balancer["Scheme"]) == ("application", "internet-facing")
    assert (listener["Properties"]["Protocol"], listener["Properties"]["Port"]) == ("HTTPS", 443)
    assert listener["Properties"]["Certificates"] == [{"CertificateArn": {"Ref": "CertificateArn"}}]
    assert listener["Properties"]["SslPolicy"].startswith("ELBSecurityPolicy-TLS13")


def test_only_443_is_open_to_the_internet_and_the_tasks_take_connections_from_the_load_balancer_only() -> None:
    [open_rule] = RESOURCES["LoadBalancerSecurityGroup"]["Properties"]["SecurityGroupIngress"]
    ingress = [r["Properties"] for r in of_type("AWS::EC2::SecurityGroupIngress").values()]

    assert (open_rule["CidrIp"], open_rule["FromPort"], open_rule["ToPort"]) == ("0.0.0.0/0", 443, 443)
    assert ingress == [
        {
            "GroupId": {"Ref": "TaskSecurityGroup"},
            "Description": "From the load balancer",
            "IpProtocol": "tcp",
            "FromPort": {"Ref": "ContainerPort"},
            "ToPort": {"Ref": "ContainerPort"},
            "SourceSecurityGroupId": {"Ref": "LoadBalancerSecurityGroup"},
        }
    ]
    assert "SecurityGroupIngress" not in RESOURCES["TaskSecurityGroup"]["Properties"]


def test_the_domains_alias_record_is_made_only_given_its_hosted_zone() -> None:
    record = RESOURCES["DomainRecord"]

    assert record["Condition"] == "HasHostedZone"
    assert record["Properties"]["AliasTarget"]["DNSName"] == {"Fn::GetAtt": ["LoadBalancer", "DNSName"]}
    assert STACK["Outputs"]["StreamingUrl"]["Value"] == {"Fn::Sub": "wss://${DomainName}"}


# --- scaling --------------------------------------------------------------------------------------------------


def test_the_service_scales_on_the_average_live_sessions_per_task_toward_its_target() -> None:
    [policy] = of_type("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    configuration = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    metric = configuration["CustomizedMetricSpecification"]

    assert configuration["TargetValue"] == {"Ref": "TargetSessionsPerTask"}
    assert (metric["MetricName"], metric["Statistic"]) == ("StreamingSessions", "Average")
    assert metric["Namespace"] == {"Ref": "MetricsNamespace"}
    assert metric["Dimensions"] == [{"Name": "service", "Value": {"Ref": "MetricsServiceName"}}]
    assert (PARAMETERS["MetricsNamespace"]["Default"], PARAMETERS["MetricsServiceName"]["Default"]) == (
        "VoiceBridge",
        "voicebridge",
    )


def test_it_scales_out_within_a_minute_and_in_slowly() -> None:
    [policy] = of_type("AWS::ApplicationAutoScaling::ScalingPolicy").values()
    configuration = policy["Properties"]["TargetTrackingScalingPolicyConfiguration"]

    assert configuration["ScaleOutCooldown"] == 60
    assert configuration["ScaleInCooldown"] >= 900
    target = RESOURCES["ScalableTarget"]["Properties"]
    assert (target["MinCapacity"], target["MaxCapacity"]) == ({"Ref": "MinTasks"}, {"Ref": "MaxTasks"})


# --- grants ---------------------------------------------------------------------------------------------------

TASK_GRANTS = {
    "ReadTheApiKey": ({"secretsmanager:GetSecretValue"}, {"Ref": "ApiKeySecret"}, None),
    "DecryptTheApiKey": ({"kms:Decrypt"}, {"Fn::GetAtt": ["ApiKeyKey", "Arn"]}, None),
    "ReadCartesiaKey": ({"secretsmanager:GetSecretValue"}, {"Ref": "CartesiaApiKeySecretArn"}, None),
    "AnnotateContacts": (
        {"connect:UpdateContactAttributes", "connect:GetContactAttributes"},
        {"Fn::Sub": "${ConnectInstanceArn}/contact/*"},
        None,
    ),
    "InvokeSonicEndpoint": (
        {"sagemaker:InvokeEndpoint", "sagemaker:InvokeEndpointWithResponseStream"},
        {"Fn::Sub": "arn:${AWS::Partition}:sagemaker:${AWS::Region}:${AWS::AccountId}:endpoint/${SonicEndpointName}"},
        "SonicOnSageMaker",
    ),
    "WriteTurns": (
        {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:Query", "dynamodb:BatchWriteItem"},
        {"Fn::Sub": "arn:${AWS::Partition}:dynamodb:${AWS::Region}:${AWS::AccountId}:table/${TurnTableName}"},
        None,
    ),
    "WriteCallRecords": (
        {"s3:PutObject"},
        {"Fn::Sub": "arn:${AWS::Partition}:s3:::${CallRecordBucketName}/records/*"},
        None,
    ),
    "AnnounceCallRecords": (
        {"events:PutEvents"},
        {"Fn::Sub": "arn:${AWS::Partition}:events:${AWS::Region}:${AWS::AccountId}:event-bus/default"},
        None,
    ),
    "FindPii": ({"comprehend:DetectPiiEntities"}, "*", "UseComprehend"),
    "UseDataKey": ({"kms:GenerateDataKey", "kms:Decrypt", "kms:DescribeKey"}, {"Ref": "DataKmsKeyArn"}, "HasDataKey"),
}
RESPONDER_GRANTS = {
    "InvokeResponderModel": "UseBedrockResponder",
    "InvokeResponderInferenceProfile": "UseBedrockModelId",
    "InvokeModelsThroughTheProfile": "UseBedrockResponder",
    "ApplyResponderGuardrail": "UseBedrockGuardrail",
    "AskResponderBot": "UseLexResponder",
    "InvokeResponderFunction": "UseLambdaResponder",
    "ReadResponderRules": "RulesInS3",
    "ReadResponderSystemPrompt": "SystemPromptInS3",
}


def test_the_task_role_is_granted_exactly_what_the_server_calls_on_its_own_resources() -> None:
    statements = task_statements()
    granted = {
        sid: (actions(statement), statement["Resource"], statement.get("GrantedWhen"))
        for sid, statement in statements.items()
        if sid not in RESPONDER_GRANTS
    }

    assert granted == TASK_GRANTS


def test_the_api_key_is_decrypted_only_through_secrets_manager() -> None:
    condition = task_statements()["DecryptTheApiKey"]["Condition"]
    assert condition == {"StringEquals": {"kms:ViaService": {"Fn::Sub": "secretsmanager.${AWS::Region}.amazonaws.com"}}}


def test_the_responder_grants_are_the_consumers_each_under_its_responders_condition() -> None:
    main = {
        statement["Fn::If"][1]["Sid"]: statement["Fn::If"]
        for policy in MAIN["Resources"]["TranscribeStreamFunction"]["Properties"]["Policies"]
        for statement in policy["Statement"]
        if "Fn::If" in statement
    }
    statements = task_statements()

    for sid, condition in RESPONDER_GRANTS.items():
        assert statements[sid]["GrantedWhen"] == condition == main[sid][0], sid
        assert (actions(statements[sid]), statements[sid]["Resource"]) == (
            actions(main[sid][1]),
            main[sid][1]["Resource"],
        ), sid


def test_no_role_carries_a_managed_policy_and_the_image_pull_names_its_repository() -> None:
    assert all("ManagedPolicyArns" not in role["Properties"] for role in of_type("AWS::IAM::Role").values())
    [pull] = [
        statement
        for policy in RESOURCES["TaskExecutionRole"]["Properties"]["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        if statement["Sid"] == "PullTheServerImage"
    ]
    assert pull["Resource"]["Fn::Sub"].endswith(":repository/${ImageRepositoryName}")


# --- the API key Connect presents ---------------------------------------------------------------------------


def test_the_api_key_is_generated_into_a_secret_under_the_stacks_own_kms_key() -> None:
    secret = RESOURCES["ApiKeySecret"]["Properties"]

    assert secret["KmsKeyId"] == {"Ref": "ApiKeyKey"}
    assert secret["GenerateSecretString"] == {"PasswordLength": 48, "ExcludePunctuation": True}
    assert environment()["A2A_API_KEY_SECRET_ARN"] == {"Ref": "ApiKeySecret"}
    assert RESOURCES["ApiKeyKey"]["Properties"]["EnableKeyRotation"] is True


def test_connect_may_decrypt_with_the_key_only_for_this_stacks_api_key() -> None:
    statements = {s["Sid"]: s for s in RESOURCES["ApiKeyKey"]["Properties"]["KeyPolicy"]["Statement"]}
    decrypt = statements["ConnectDecryptsTheApiKeyOnly"]
    secret_arn = decrypt["Condition"]["StringLike"]["kms:EncryptionContext:SecretARN"]["Fn::Sub"]

    assert (decrypt["Principal"], decrypt["Action"]) == ({"Service": "connect.amazonaws.com"}, "kms:Decrypt")
    name = RESOURCES["ApiKeySecret"]["Properties"]["Name"]["Fn::Sub"]
    # Secrets Manager appends six random characters to a secret's name in its ARN.
    assert secret_arn.endswith(f":secret:{name}-*")
    assert statements["ConnectDescribesTheKey"]["Action"] == "kms:DescribeKey"


def test_connect_may_read_the_secret_on_this_accounts_behalf_only() -> None:
    policy = RESOURCES["ApiKeySecretPolicy"]["Properties"]
    [statement] = policy["ResourcePolicy"]["Statement"]

    assert policy["BlockPublicPolicy"] is True
    assert (statement["Principal"], statement["Action"]) == (
        {"Service": "connect.amazonaws.com"},
        "secretsmanager:GetSecretValue",
    )
    assert statement["Condition"] == {"StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}}


# --- what the server is told -----------------------------------------------------------------------------------

# Where the server listens and how long it drains: read by ``python -m voicebridge.a2a`` itself, not settings.
LISTENER_VARIABLES = {"A2A_HOST", "A2A_PORT", "A2A_DRAIN_S"}
# The server's own settings: its key, and the lines it says of its own.
SERVER_VARIABLES = LISTENER_VARIABLES | {"A2A_API_KEY_SECRET_ARN", "A2A_LINES"}
POWERTOOLS_VARIABLES = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE", "POWERTOOLS_LOG_LEVEL"}
# The consumer's own: its hand-over between Lambda invocations, and the prompt bucket the flows play from.
FLOWS_PATH_ONLY = {"CONSUMER_HANDOFF_MS", "PROMPT_BUCKET"}


def test_every_variable_the_stack_sets_is_a_setting_the_code_reads() -> None:
    settings = {field.name.upper() for field in fields(Settings)}
    assert set(environment()) - settings == LISTENER_VARIABLES | POWERTOOLS_VARIABLES


def test_the_stacks_defaults_make_a_configuration_the_server_accepts() -> None:
    samples = {
        "ApiKeySecret": "arn:aws:secretsmanager:us-east-1:111111111111:secret:vb/a2a-api-key-AbCdEf",
        "CartesiaApiKeySecretArn": "arn:aws:secretsmanager:us-east-1:111111111111:secret:vb/cartesia-AbCdEf",
        "TurnTableName": "vb-turns",
        "CallRecordBucketName": "vb-records",
    }

    def value(given: Any) -> str:
        if isinstance(given, dict):
            name = given["Ref"]
            return str(samples[name] if name in samples else PARAMETERS[name]["Default"])
        return str(given)

    settings = Settings.from_env({name: value(given) for name, given in environment().items()})

    assert settings.a2a_api_key_secret_arn == samples["ApiKeySecret"]
    assert (settings.sonic_backend, settings.responder) == ("sagemaker", "scripted")


def test_the_agents_own_lines_reach_the_server_from_either_template() -> None:
    assert environment()["A2A_LINES"] == {"Ref": "AgentLines"}
    assert MAIN["Resources"]["StreamingAgent"]["Properties"]["Parameters"]["AgentLines"] == {
        "Ref": "StreamingAgentLines"
    }


def test_the_server_is_given_every_setting_the_consumer_is_given_but_the_flows_own() -> None:
    consumer = set(MAIN["Resources"]["TranscribeStreamFunction"]["Properties"]["Environment"]["Variables"])
    globals_ = set(MAIN["Globals"]["Function"]["Environment"]["Variables"])
    endpoints = {name for name in globals_ if name.startswith("AWS_ENDPOINT_URL_")}

    assert (consumer | globals_) - endpoints - FLOWS_PATH_ONLY == set(environment()) - SERVER_VARIABLES


# --- operations -----------------------------------------------------------------------------------------------


def test_logs_expire_and_are_written_without_holding_up_the_audio() -> None:
    options = container()["LogConfiguration"]["Options"]

    assert RESOURCES["ServerLogGroup"]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert (options["awslogs-group"], options["mode"]) == ({"Ref": "ServerLogGroup"}, "non-blocking")


def dashboard() -> dict[str, Any]:
    body, names = RESOURCES["Dashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    filled = re.sub(r"\$\{[^}]+\}", "1", body)
    assert set(names) <= set(re.findall(r"\$\{([^}.]+)\}", body))
    loaded: dict[str, Any] = json.loads(filled)
    return loaded


def test_the_dashboard_shows_sessions_latency_barge_ins_errors_tasks_and_the_load_balancer() -> None:
    shown = {metric[1] for widget in dashboard()["widgets"] for metric in widget["properties"].get("metrics", [])}

    assert {
        "StreamingSessions",
        "StreamingFirstAudioLatency",
        "BargeIns",
        "StreamingErrors",
        "RunningTaskCount",
        "CPUUtilization",
        "HTTPCode_ELB_5XX_Count",
        "UnHealthyHostCount",
    } <= shown


def test_alarms_watch_5xx_unhealthy_tasks_streaming_errors_first_audio_p90_and_cpu() -> None:
    watched = {
        (a["Properties"]["MetricName"], a["Properties"].get("ExtendedStatistic", a["Properties"].get("Statistic")))
        for a in of_type("AWS::CloudWatch::Alarm").values()
    }

    assert watched == {
        ("HTTPCode_ELB_5XX_Count", "Sum"),
        ("HTTPCode_Target_5XX_Count", "Sum"),
        ("UnHealthyHostCount", "Maximum"),
        ("StreamingErrors", "Sum"),
        ("StreamingFirstAudioLatency", "p90"),
        ("CPUUtilization", "Average"),
    }


def test_alarms_notify_the_topic_only_when_one_is_given() -> None:
    notify = {"Fn::If": ["HasAlarmTopic", [{"Ref": "AlarmTopicArn"}], {"Ref": "AWS::NoValue"}]}
    for name, alarm in of_type("AWS::CloudWatch::Alarm").items():
        assert (alarm["Properties"]["AlarmActions"], alarm["Properties"]["OKActions"]) == (notify, notify), name


# --- nested in template.yaml ---------------------------------------------------------------------------------


def test_template_nests_it_only_given_an_image_repository() -> None:
    nested = MAIN["Resources"]["StreamingAgent"]

    assert (nested["Type"], nested["Condition"]) == ("AWS::Serverless::Application", "CreateStreamingAgent")
    assert nested["Properties"]["Location"] == "deploy/a2a-streaming.yaml"
    assert MAIN["Conditions"]["CreateStreamingAgent"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "StreamingImageRepositoryName"}, ""]}]
    }
    assert MAIN["Parameters"]["StreamingImageRepositoryName"]["Default"] == ""


def test_template_gives_it_only_parameters_it_declares_and_every_one_it_requires() -> None:
    given = MAIN["Resources"]["StreamingAgent"]["Properties"]["Parameters"]

    assert set(given) <= set(PARAMETERS)
    assert {name for name, spec in PARAMETERS.items() if "Default" not in spec} <= set(given)


def test_template_refuses_a_server_without_an_instance_a_network_or_a_domain() -> None:
    rule = MAIN["Rules"]["StreamingAgentNeedsAnInstanceANetworkAndADomain"]
    needed = {next(iter(assertion["Assert"]["Fn::Not"][0].values()))[0]["Ref"] for assertion in rule["Assertions"]}

    assert rule["RuleCondition"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "StreamingImageRepositoryName"}, ""]}]}
    assert needed == {
        "ConnectInstanceArn",
        "StreamingImageTag",
        "StreamingDomainName",
        "StreamingCertificateArn",
        "StreamingVpcId",
        "StreamingLoadBalancerSubnetIds",
        "StreamingTaskSubnetIds",
    }


def test_the_streaming_flow_is_made_only_with_the_instance_the_queue_and_what_register_printed() -> None:
    flow = MAIN["Resources"]["VoiceAgentStreamingFlow"]
    condition = MAIN["Conditions"]["CreateStreamingFlow"]["Fn::And"]

    assert flow["Condition"] == "CreateStreamingFlow"
    assert condition[0] == {"Condition": "CreateListenOnlyFlow"}
    assert {item["Fn::Not"][0]["Fn::Equals"][0]["Ref"] for item in condition[1:]} == {
        "StreamingAssistantArn",
        "StreamingLexBotAliasArn",
        "StreamingAIAgentVersionArn",
    }


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        (
            "StreamingAIAgentVersionArn",
            "arn:aws:wisdom:us-east-1:111111111111:ai-agent/"
            "11111111-2222-4333-8444-555555555555/44444444-5555-4666-8777-888888888888:1",
        ),
        (
            "StreamingAIAgentVersionArn",
            "arn:aws:wisdom:us-east-1:111111111111:ai-agent/"
            "11111111-2222-4333-8444-555555555555/44444444-5555-4666-8777-888888888888:$LATEST",
        ),
        ("StreamingLexBotAliasArn", "arn:aws:lex:us-east-1:111111111111:bot-alias/ABCDEFGHIJ/TSTALIASID"),
        (
            "StreamingAssistantArn",
            "arn:aws:wisdom:us-east-1:111111111111:assistant/11111111-2222-4333-8444-555555555555",
        ),
        ("StreamingDomainName", "agent.example.com"),
    ],
)
def test_template_takes_each_documented_form_of_the_streaming_parameters(parameter: str, value: str) -> None:
    assert re.fullmatch(MAIN["Parameters"][parameter]["AllowedPattern"], value)


def test_the_outputs_give_the_url_and_secret_register_needs() -> None:
    outputs = MAIN["Outputs"]

    assert outputs["StreamingUrl"]["Value"] == {"Fn::GetAtt": ["StreamingAgent", "Outputs.StreamingUrl"]}
    assert outputs["StreamingApiKeySecretArn"]["Value"] == {"Fn::GetAtt": ["StreamingAgent", "Outputs.ApiKeySecretArn"]}
    assert {outputs[name]["Condition"] for name in ("StreamingUrl", "StreamingApiKeySecretArn")} == {
        "CreateStreamingAgent"
    }
