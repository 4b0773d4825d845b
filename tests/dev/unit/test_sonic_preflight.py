"""``voicebridge sonic preflight``: one line per requirement, OK or FAIL with the reason, exit 0 only when all pass.

moto answers SageMaker's DescribeModelPackage, ECR's DescribeImages, EC2's instance-type calls and SSM's public
parameters; it has no SageMaker or EC2 quotas, so Service Quotas is botocore's Stubber, answering as the service does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from voicebridge_dev.cli import main
from voicebridge_dev.sonic_preflight import EC2_GPU_QUOTA, Check, report, sagemaker_checks, self_managed_checks

REGION = "us-east-1"
REPOSITORY = "cartesia/sonic"
TAG = "sonic-3.5-2026.06"


def quota(name: str, value: float, code: str = "L-00000000") -> dict[str, Any]:
    return {"ServiceCode": "any", "QuotaName": name, "QuotaCode": code, "Value": value, "Unit": "None"}


class Quotas:
    """Service Quotas as the account has them: applied values, and the defaults of quotas never raised."""

    def __init__(self, applied: dict[str, list[dict[str, Any]]], defaults: dict[str, list[dict[str, Any]]]) -> None:
        self.client = boto3.client("service-quotas", region_name=REGION)
        self.stubber = Stubber(self.client)
        self.applied, self.defaults = applied, defaults

    def expect(self, service: str, *, falls_back: bool) -> None:
        self.stubber.add_response(
            "list_service_quotas", {"Quotas": self.applied.get(service, [])}, {"ServiceCode": service}
        )
        if falls_back:
            self.stubber.add_response(
                "list_aws_default_service_quotas", {"Quotas": self.defaults.get(service, [])}, {"ServiceCode": service}
            )

    def refuse(self, code: str) -> None:
        self.stubber.add_client_error("list_service_quotas", service_error_code=code, service_message="not allowed")


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    with mock_aws():
        yield


def clients_with(quotas: Quotas) -> Any:
    def clients(service: str) -> Any:
        make: Any = boto3.client
        return quotas.client if service == "service-quotas" else make(service, region_name=REGION)

    return clients


def model_package(instance_types: list[str]) -> str:
    created = boto3.client("sagemaker", region_name=REGION).create_model_package(
        ModelPackageName="sonic-3-5",
        InferenceSpecification={
            "Containers": [{"Image": f"123456789012.dkr.ecr.{REGION}.amazonaws.com/sonic:3.5"}],
            "SupportedContentTypes": ["application/json"],
            "SupportedResponseMIMETypes": ["text/event-stream"],
            "SupportedRealtimeInferenceInstanceTypes": instance_types,
        },
    )
    return str(created["ModelPackageArn"])


def pushed_image() -> None:
    ecr = boto3.client("ecr", region_name=REGION)
    ecr.create_repository(repositoryName=REPOSITORY)
    manifest = '{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json"}'
    ecr.put_image(repositoryName=REPOSITORY, imageManifest=manifest, imageTag=TAG)


def by_name(checks: list[Check]) -> dict[str, Check]:
    return {check.name.split(" (")[0]: check for check in checks}


# --- SageMaker


def test_a_completed_package_that_supports_the_type_within_quota_passes(aws: None) -> None:
    arn = model_package(["ml.g6e.xlarge", "ml.g6e.2xlarge"])
    quotas = Quotas({"sagemaker": [quota("ml.g6e.xlarge for endpoint usage", 4, "L-B0729CB4")]}, {})
    quotas.expect("sagemaker", falls_back=False)

    with quotas.stubber:
        checks = sagemaker_checks(clients_with(quotas), model_package=arn, instance_type="ml.g6e.xlarge", instances=2)

    assert report(checks).splitlines() == [
        f"OK    model package: {arn} is Completed",
        "OK    real-time instance type: the package supports ml.g6e.xlarge",
        "OK    endpoint quota: ml.g6e.xlarge for endpoint usage is 4, which covers the 2 needed",
    ]
    quotas.stubber.assert_no_pending_responses()


def test_an_instance_type_the_package_does_not_list_fails_and_says_what_it_lists(aws: None) -> None:
    arn = model_package(["ml.g6e.xlarge"])
    quotas = Quotas({"sagemaker": [quota("ml.g5.xlarge for endpoint usage", 4)]}, {})
    quotas.expect("sagemaker", falls_back=False)

    with quotas.stubber:
        checks = by_name(
            sagemaker_checks(clients_with(quotas), model_package=arn, instance_type="ml.g5.xlarge", instances=1)
        )

    assert not checks["real-time instance type"].ok
    assert checks["real-time instance type"].detail.endswith("(it lists ml.g6e.xlarge)")
    assert checks["model package"].ok and checks["endpoint quota"].ok


def test_a_quota_never_raised_is_read_from_its_default_and_too_small_fails(aws: None) -> None:
    arn = model_package(["ml.g6e.xlarge"])
    quotas = Quotas({"sagemaker": []}, {"sagemaker": [quota("ml.g6e.xlarge for endpoint usage", 0)]})
    quotas.expect("sagemaker", falls_back=True)

    with quotas.stubber:
        checks = by_name(
            sagemaker_checks(clients_with(quotas), model_package=arn, instance_type="ml.g6e.xlarge", instances=2)
        )

    assert checks["endpoint quota"].line() == (
        "FAIL  endpoint quota: ml.g6e.xlarge for endpoint usage is 0, which is short of the 2 needed "
        "(request an increase in Service Quotas)"
    )


def test_a_package_that_cannot_be_described_fails_both_package_checks(aws: None) -> None:
    quotas = Quotas({"sagemaker": [quota("ml.g6e.xlarge for endpoint usage", 2)]}, {})
    quotas.expect("sagemaker", falls_back=False)
    missing = f"arn:aws:sagemaker:{REGION}:123456789012:model-package/nothing-here"

    with quotas.stubber:
        checks = by_name(
            sagemaker_checks(clients_with(quotas), model_package=missing, instance_type="ml.g6e.xlarge", instances=2)
        )

    assert not checks["model package"].ok and "cannot be described" in checks["model package"].detail
    assert not checks["real-time instance type"].ok
    assert checks["endpoint quota"].ok


def test_a_package_still_being_made_is_not_ready(aws: None) -> None:
    sagemaker = boto3.client("sagemaker", region_name=REGION)
    stubber = Stubber(sagemaker)
    stubber.add_response(
        "describe_model_package",
        {
            "ModelPackageName": "sonic",
            "ModelPackageArn": f"arn:aws:sagemaker:{REGION}:123456789012:model-package/sonic",
            "CreationTime": "2026-06-01T00:00:00Z",
            "ModelPackageStatus": "InProgress",
            "ModelPackageStatusDetails": {"ValidationStatuses": [], "ImageScanStatuses": []},
        },
    )
    quotas = Quotas({"sagemaker": [quota("ml.g6e.xlarge for endpoint usage", 2)]}, {})
    quotas.expect("sagemaker", falls_back=False)

    def clients(service: str) -> Any:
        return sagemaker if service == "sagemaker" else quotas.client

    with stubber, quotas.stubber:
        checks = by_name(sagemaker_checks(clients, model_package="sonic", instance_type="ml.g6e.xlarge", instances=1))

    assert checks["model package"].line().startswith("FAIL  model package: sonic is InProgress")


# --- self-managed


def test_an_image_a_gpu_type_the_ami_and_enough_vcpus_pass(aws: None) -> None:
    pushed_image()
    quotas = Quotas({"ec2": [quota(EC2_GPU_QUOTA, 64, "L-DB2E81BA")]}, {})
    quotas.expect("ec2", falls_back=False)

    with quotas.stubber:
        checks = self_managed_checks(
            clients_with(quotas), repository=REPOSITORY, tag=TAG, instance_type="g6e.xlarge", instances=8
        )

    assert [check.ok for check in checks] == [True] * 4, report(checks)
    named = by_name(checks)
    assert named[f"image {REPOSITORY}:{TAG}"].detail.startswith("sha256:")
    assert named["instance type g6e.xlarge"].detail == "offered here: 1 GPU (NVIDIA L40S), 4 vCPUs"
    assert named["ECS GPU AMI"].detail.startswith(
        "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id is ami-"
    )
    assert named["G and VT vCPU quota"].line() == (
        "OK    G and VT vCPU quota (8 × g6e.xlarge = 32 vCPUs): Running On-Demand G and VT instances is 64, "
        "which covers the 32 needed"
    )


def test_a_missing_image_fails_with_ecrs_reason(aws: None) -> None:
    pushed_image()
    quotas = Quotas({"ec2": [quota(EC2_GPU_QUOTA, 64)]}, {})
    quotas.expect("ec2", falls_back=False)

    with quotas.stubber:
        checks = self_managed_checks(
            clients_with(quotas), repository=REPOSITORY, tag="not-pushed", instance_type="g6.xlarge", instances=2
        )

    image = checks[0]
    assert (image.ok, image.name) == (False, f"image {REPOSITORY}:not-pushed")
    assert "ImageNotFoundException" in image.detail


def test_too_few_vcpus_for_the_fleet_fails(aws: None) -> None:
    pushed_image()
    quotas = Quotas({"ec2": []}, {"ec2": [quota(EC2_GPU_QUOTA, 8)]})
    quotas.expect("ec2", falls_back=True)

    with quotas.stubber:
        checks = by_name(
            self_managed_checks(
                clients_with(quotas), repository=REPOSITORY, tag=TAG, instance_type="g6.2xlarge", instances=4
            )
        )

    assert not checks["G and VT vCPU quota"].ok
    assert "is 8, which is short of the 32 needed" in checks["G and VT vCPU quota"].detail


def test_a_multi_gpu_type_fails_the_one_task_per_gpu_rule(aws: None) -> None:
    pushed_image()
    quotas = Quotas({"ec2": [quota(EC2_GPU_QUOTA, 768)]}, {})
    quotas.expect("ec2", falls_back=False)

    with quotas.stubber:
        checks = by_name(
            self_managed_checks(
                clients_with(quotas), repository=REPOSITORY, tag=TAG, instance_type="g6e.12xlarge", instances=2
            )
        )

    assert not checks["instance type g6e.12xlarge"].ok
    assert "4 GPU" in checks["instance type g6e.12xlarge"].detail


def test_quotas_that_cannot_be_read_fail_with_the_reason(aws: None) -> None:
    pushed_image()
    quotas = Quotas({}, {})
    quotas.refuse("AccessDeniedException")

    with quotas.stubber:
        checks = by_name(
            self_managed_checks(
                clients_with(quotas), repository=REPOSITORY, tag=TAG, instance_type="g5.xlarge", instances=2
            )
        )

    assert checks["G and VT vCPU quota"].detail == (
        "Running On-Demand G and VT instances cannot be read: AccessDeniedException: not allowed"
    )


# --- the command


@pytest.fixture
def stubbed_quotas(aws: None, monkeypatch: pytest.MonkeyPatch) -> Quotas:
    """The command's own session, with Service Quotas answered by the stubber."""
    quotas = Quotas({"ec2": [quota(EC2_GPU_QUOTA, 64)]}, {})
    build: Any = boto3.session.Session.client

    def client(session: boto3.session.Session, service: str, *args: Any, **kwargs: Any) -> Any:
        return quotas.client if service == "service-quotas" else build(session, service, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "client", client)
    return quotas


def test_the_command_prints_a_line_per_check_and_exits_0_when_all_pass(
    stubbed_quotas: Quotas, capsys: pytest.CaptureFixture[str]
) -> None:
    pushed_image()
    stubbed_quotas.expect("ec2", falls_back=False)

    with stubbed_quotas.stubber:
        status = main(
            [
                *("sonic", "preflight", "self-managed"),
                *("--image-repository", REPOSITORY, "--image-tag", TAG, "--instances", "8", "--region", REGION),
            ]
        )

    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    assert len(lines) == 4 and all(line.startswith("OK    ") for line in lines)


def test_the_command_exits_1_when_a_check_fails(stubbed_quotas: Quotas, capsys: pytest.CaptureFixture[str]) -> None:
    stubbed_quotas.expect("ec2", falls_back=False)

    with stubbed_quotas.stubber:
        status = main(["sonic", "preflight", "self-managed", "--image-repository", "none", "--image-tag", TAG])

    out = capsys.readouterr().out
    assert status == 1
    assert out.splitlines()[0].startswith("FAIL  image none:")
