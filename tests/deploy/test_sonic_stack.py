"""deploy/sonic-self-managed.yaml as deployed: Sonic containers on ECS GPU instances, one GPU each, behind an internal
load balancer with a readiness check, draining deployments, weights on EFS, least-privilege roles, and scaling on the
streams the bridge holds open, read under the very names the bridge writes them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.fixtures import ROOT
from voicebridge.sonic.backends import ContainerBackend
from voicebridge.sonic.synthesizer import STREAM_SECONDS_METRIC
from voicebridge.telemetry import NAMESPACE
from voicebridge_dev.template import load_template

STACK = load_template(ROOT / "deploy" / "sonic-self-managed.yaml")
RESOURCES: dict[str, Any] = STACK["Resources"]
PARAMETERS: dict[str, Any] = STACK["Parameters"]


def of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {name: resource for name, resource in RESOURCES.items() if resource["Type"] == kind}


def container() -> dict[str, Any]:
    [definition] = RESOURCES["TaskDefinition"]["Properties"]["ContainerDefinitions"]
    return dict(definition)


def statements(role: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in RESOURCES[role]["Properties"]["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]


def test_it_is_a_plain_cloudformation_stack_deployable_alone() -> None:
    assert "Transform" not in STACK
    assert [p for p, spec in PARAMETERS.items() if "Default" not in spec] == [
        "ImageRepositoryName",
        "ImageTag",
        "VpcId",
        "SubnetIds",
    ]


def test_instances_come_from_the_ecs_gpu_ami_of_its_public_ssm_parameter() -> None:
    ami = PARAMETERS["EcsGpuAmiId"]

    assert ami["Type"] == "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>"
    assert ami["Default"] == "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
    launch = RESOURCES["LaunchTemplate"]["Properties"]["LaunchTemplateData"]
    assert launch["ImageId"] == {"Ref": "EcsGpuAmiId"}


def test_the_instance_types_are_one_gpu_g6_g6e_and_g5_sizes() -> None:
    allowed = PARAMETERS["InstanceType"]["AllowedValues"]

    assert {name.split(".")[0] for name in allowed} == {"g6", "g6e", "g5"}
    # The 12xlarge, 24xlarge and 48xlarge sizes carry several GPUs; one task per instance would leave them idle.
    assert all(name.split(".")[1] in {"xlarge", "2xlarge", "4xlarge", "8xlarge"} for name in allowed)
    assert PARAMETERS["InstanceType"]["Default"] == "g6e.xlarge"


def test_each_task_reserves_one_gpu_and_its_instance() -> None:
    assert container()["ResourceRequirements"] == [{"Type": "GPU", "Value": "1"}]
    service = RESOURCES["Service"]["Properties"]
    assert service["PlacementConstraints"] == [{"Type": "distinctInstance"}]
    assert PARAMETERS["MinTasks"]["MinValue"] == 2
    assert service["DesiredCount"] == {"Ref": "MinTasks"}


def test_the_image_is_pulled_from_a_private_repository_of_this_account() -> None:
    image = container()["Image"]["Fn::Sub"]

    assert image == "${AWS::AccountId}.dkr.ecr.${AWS::Region}.${AWS::URLSuffix}/${ImageRepositoryName}:${ImageTag}"


def test_the_container_is_started_as_sagemaker_starts_it_and_serves_its_port() -> None:
    assert PARAMETERS["ContainerCommand"]["Default"] == "serve"
    assert PARAMETERS["ContainerPort"]["Default"] == 8080
    assert container()["PortMappings"] == [{"ContainerPort": {"Ref": "ContainerPort"}, "Protocol": "tcp"}]


def test_deployments_drain_and_roll_back_when_unhealthy() -> None:
    deployment = RESOURCES["Service"]["Properties"]["DeploymentConfiguration"]
    attributes = {
        item["Key"]: item["Value"] for item in RESOURCES["TargetGroup"]["Properties"]["TargetGroupAttributes"]
    }

    assert deployment["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}
    assert (deployment["MinimumHealthyPercent"], deployment["MaximumPercent"]) == (100, 200)
    assert attributes["deregistration_delay.timeout_seconds"] == {"Ref": "DeregistrationDelaySeconds"}
    assert container()["StopTimeout"] == {"Ref": "StopTimeoutSeconds"}
    # A prompt's generation never outlasts the bridge's 8 s deadline: the defaults let every stream finish.
    assert PARAMETERS["DeregistrationDelaySeconds"]["Default"] > 8
    assert PARAMETERS["StopTimeoutSeconds"]["MaxValue"] == 120


def test_an_internal_load_balancer_routes_to_ready_tasks_with_the_fewest_requests() -> None:
    balancer = RESOURCES["LoadBalancer"]["Properties"]
    group = RESOURCES["TargetGroup"]["Properties"]
    attributes = {item["Key"]: item["Value"] for item in group["TargetGroupAttributes"]}

    assert (balancer["Type"], balancer["Scheme"]) == ("application", "internal")
    assert group["HealthCheckPath"] == {"Ref": "HealthCheckPath"}
    assert PARAMETERS["HealthCheckPath"]["Default"] == "/ping"
    assert group["Matcher"] == {"HttpCode": "200"}
    assert (group["TargetType"], group["ProtocolVersion"]) == ("ip", "HTTP1")
    assert attributes["load_balancing.algorithm.type"] == "least_outstanding_requests"


def test_only_the_bridges_security_group_reaches_the_load_balancer() -> None:
    ingress = RESOURCES["LoadBalancerFromClients"]["Properties"]

    assert ingress["GroupId"] == {"Ref": "LoadBalancerSecurityGroup"}
    assert ingress["SourceSecurityGroupId"] == {"Ref": "ClientSecurityGroup"}
    open_ingress = [
        name
        for name, rule in of_type("AWS::EC2::SecurityGroupIngress").items()
        if "CidrIp" in rule["Properties"] or "CidrIpv6" in rule["Properties"]
    ]
    assert open_ingress == []


def test_weights_are_on_efs_mounted_into_every_task_over_tls_through_an_access_point() -> None:
    [volume] = RESOURCES["TaskDefinition"]["Properties"]["Volumes"]
    efs = volume["EFSVolumeConfiguration"]

    assert efs["TransitEncryption"] == "ENABLED"
    assert efs["AuthorizationConfig"] == {"AccessPointId": {"Ref": "WeightsAccessPoint"}, "IAM": "ENABLED"}
    assert container()["MountPoints"] == [
        {"SourceVolume": "weights", "ContainerPath": {"Ref": "WeightsMountPath"}, "ReadOnly": False}
    ]
    assert RESOURCES["WeightsFileSystem"]["Properties"]["Encrypted"] is True


def test_one_az_means_one_subnet_and_a_cluster_placement_group() -> None:
    group = RESOURCES["AutoScalingGroup"]["Properties"]

    assert RESOURCES["PlacementGroup"] == {
        "Type": "AWS::EC2::PlacementGroup",
        "Condition": "OneAz",
        "Properties": {"Strategy": "cluster"},
    }
    assert group["PlacementGroup"] == {"Fn::If": ["OneAz", {"Ref": "PlacementGroup"}, {"Ref": "AWS::NoValue"}]}
    one_subnet = {"Fn::If": ["OneAz", [{"Fn::Select": [0, {"Ref": "SubnetIds"}]}], {"Ref": "SubnetIds"}]}
    assert group["VPCZoneIdentifier"] == one_subnet
    assert RESOURCES["Service"]["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]["Subnets"] == one_subnet


def test_vpc_endpoints_cover_ecr_s3_logs_and_what_the_agents_call() -> None:
    names = {
        resource["Properties"]["ServiceName"]["Fn::Sub"].removeprefix("com.amazonaws.${AWS::Region}.")
        for resource in of_type("AWS::EC2::VPCEndpoint").values()
    }

    assert names == {"ecr.api", "ecr.dkr", "s3", "logs", "monitoring", "ecs", "ecs-agent", "ecs-telemetry"}
    assert all(resource["Condition"] == "CreateEndpoints" for resource in of_type("AWS::EC2::VPCEndpoint").values())
    assert RESOURCES["S3GatewayEndpoint"]["Properties"]["VpcEndpointType"] == "Gateway"


def test_the_capacity_provider_follows_tasks_and_drains_what_it_removes() -> None:
    provider = RESOURCES["CapacityProvider"]["Properties"]["AutoScalingGroupProvider"]

    assert provider["ManagedScaling"]["Status"] == "ENABLED"
    assert (provider["ManagedTerminationProtection"], provider["ManagedDraining"]) == ("ENABLED", "ENABLED")
    assert RESOURCES["AutoScalingGroup"]["Properties"]["NewInstancesProtectedFromScaleIn"] is True


def test_no_role_carries_a_managed_policy_and_the_image_pull_names_its_repository() -> None:
    assert all("ManagedPolicyArns" not in role["Properties"] for role in of_type("AWS::IAM::Role").values())
    [pull] = [s for s in statements("TaskExecutionRole") if s["Sid"] == "PullTheSonicImage"]
    assert pull["Resource"]["Fn::Sub"].endswith(":repository/${ImageRepositoryName}")
    [mount] = statements("TaskRole")
    assert mount["Condition"]["StringEquals"].keys() == {"elasticfilesystem:AccessPointArn"}


def test_every_wildcard_resource_is_an_action_that_takes_none_or_is_conditioned() -> None:
    unscoped = {
        (role, action)
        for role in of_type("AWS::IAM::Role")
        for statement in statements(role)
        if statement["Resource"] == "*" and "Condition" not in statement
        for action in ([statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"])
    }

    assert unscoped == {
        ("TaskExecutionRole", "ecr:GetAuthorizationToken"),
        ("InstanceRole", "ecs:DiscoverPollEndpoint"),
    }


def test_instances_require_imdsv2_and_keep_tasks_from_it() -> None:
    launch = RESOURCES["LaunchTemplate"]["Properties"]["LaunchTemplateData"]
    user_data = launch["UserData"]["Fn::Base64"]["Fn::Sub"]

    assert launch["MetadataOptions"]["HttpTokens"] == "required"
    assert "ECS_AWSVPC_BLOCK_IMDS=true" in user_data
    assert "ECS_ENABLE_GPU_SUPPORT=true" in user_data
    assert all(device["Ebs"]["Encrypted"] for device in launch["BlockDeviceMappings"])


def test_gpu_metrics_reach_cloudwatch_from_the_agents_nvidia_plugin_and_container_insights_is_on() -> None:
    user_data = RESOURCES["LaunchTemplate"]["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]["Fn::Sub"]

    assert '"nvidia_gpu"' in user_data and '"utilization_gpu"' in user_data
    assert RESOURCES["Cluster"]["Properties"]["ClusterSettings"] == [{"Name": "containerInsights", "Value": "enhanced"}]


def test_every_log_group_expires() -> None:
    assert all("RetentionInDays" in group["Properties"] for group in of_type("AWS::Logs::LogGroup").values())
    log = container()["LogConfiguration"]
    assert log["Options"]["awslogs-group"] == {"Ref": "ContainerLogGroup"}


def scaling_queries() -> dict[str, dict[str, Any]]:
    policy = RESOURCES["StreamsPerTaskScaling"]["Properties"]
    metrics = policy["TargetTrackingScalingPolicyConfiguration"]["CustomizedMetricSpecification"]["Metrics"]
    return {query["Id"]: query for query in metrics}


def test_the_service_scales_on_streams_per_task_never_on_cpu() -> None:
    policies = of_type("AWS::ApplicationAutoScaling::ScalingPolicy")
    queries = scaling_queries()

    assert list(policies) == ["StreamsPerTaskScaling"]
    configuration = policies["StreamsPerTaskScaling"]["Properties"]["TargetTrackingScalingPolicyConfiguration"]
    assert "PredefinedMetricSpecification" not in configuration
    assert configuration["TargetValue"] == {"Ref": "TargetStreamsPerTask"}
    [answer] = [query for query in queries.values() if query["ReturnData"]]
    assert answer["Expression"] == "FILL(streamseconds, 0) / 60 / tasks"
    tasks = queries["tasks"]["MetricStat"]["Metric"]
    assert (tasks["Namespace"], tasks["MetricName"]) == ("ECS/ContainerInsights", "RunningTaskCount")


def test_the_streams_are_read_under_the_names_the_bridge_writes_them() -> None:
    metric = scaling_queries()["streamseconds"]["MetricStat"]
    dimensions = {item["Name"]: item["Value"] for item in metric["Metric"]["Dimensions"]}

    assert metric["Stat"] == "Sum"
    assert metric["Metric"]["MetricName"] == STREAM_SECONDS_METRIC
    assert PARAMETERS["StreamsMetricNamespace"]["Default"] == NAMESPACE
    assert PARAMETERS["StreamsMetricServiceName"]["Default"] == "voicebridge"
    assert dimensions["SonicBackend"] == "container"
    # The fleet's target is the host of the base URL the stack hands the bridge: its identity's second half.
    target = {"Fn::If": ["HasHostName", {"Ref": "LoadBalancerHostName"}, {"Fn::GetAtt": ["LoadBalancer", "DNSName"]}]}
    assert dimensions["SonicTarget"] == target
    assert STACK["Outputs"]["SonicMetricTarget"]["Value"] == target


@pytest.mark.parametrize(
    ("base_url", "target"),
    [
        ("http://internal-sonic-123.us-east-1.elb.amazonaws.com", "internal-sonic-123.us-east-1.elb.amazonaws.com"),
        ("https://sonic.internal.example.com", "sonic.internal.example.com"),
    ],
)
def test_the_bridge_names_the_fleet_by_the_host_of_the_stacks_base_url(base_url: str, target: str) -> None:
    backend, _, named = ContainerBackend(base_url).identity.partition(":")

    assert (backend, named) == ("container", target)


def test_the_base_url_output_is_that_host_over_http_or_https() -> None:
    assert STACK["Outputs"]["SonicBaseUrl"]["Value"] == {
        "Fn::If": [
            "HasCertificate",
            {"Fn::Sub": "https://${LoadBalancerHostName}"},
            {"Fn::Sub": "http://${LoadBalancer.DNSName}"},
        ]
    }
