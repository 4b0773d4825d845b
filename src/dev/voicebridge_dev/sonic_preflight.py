"""``voicebridge sonic preflight``: what a Sonic deployment needs, checked before it is tried.

Each check reads one AWS API and says OK or FAIL, with the reason::

    checks = sagemaker_checks(clients, model_package=arn, instance_type="ml.g6e.xlarge", instances=2)
    print(report(checks))

    OK    model package: arn:aws:sagemaker:…:model-package/sonic-3-5 is Completed
    OK    real-time instance type: the package supports ml.g6e.xlarge
    FAIL  endpoint quota: ml.g6e.xlarge for endpoint usage is 0, which is short of the 2 needed (request an …)

SageMaker (the Marketplace model package behind the endpoint the stack creates):

- ``sagemaker:DescribeModelPackage``: the package is ``Completed``, and lists the instance type among its
  ``InferenceSpecification.SupportedRealtimeInferenceInstanceTypes``;
- Service Quotas (``ListServiceQuotas``, else ``ListAWSDefaultServiceQuotas``, service ``sagemaker``): the quota
  ``<instance type> for endpoint usage`` covers the instances the endpoint may scale to.

Self-managed (``deploy/sonic-self-managed.yaml``):

- ``ecr:DescribeImages``: the Sonic image is in the private repository under its tag;
- ``ec2:DescribeInstanceTypeOfferings`` and ``DescribeInstanceTypes``: the region offers the GPU instance type, with
  one GPU (one task each);
- ``ssm:GetParameter``: the ECS GPU-optimised AMI's public parameter resolves in the region;
- Service Quotas (service ``ec2``): ``Running On-Demand G and VT instances``, counted in vCPUs, covers the instances
  at their vCPUs each.

A quota is the account's ceiling, not what is free under it: what other endpoints or instances already use counts
against it too, and is not subtracted here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

ECS_GPU_AMI_PARAMETER = "/aws/service/ecs/optimized-ami/amazon-linux-2023/gpu/recommended/image_id"
EC2_GPU_QUOTA = "Running On-Demand G and VT instances"
"""Quota code L-DB2E81BA, counted in vCPUs: G (G4dn, G5, G6, G6e…) and VT instances share it."""


@dataclass(frozen=True)
class Check:
    """One requirement and whether the account meets it."""

    name: str
    ok: bool
    detail: str

    def line(self) -> str:
        return f"{'OK' if self.ok else 'FAIL':<5} {self.name}: {self.detail}"


Clients = Callable[[str], Any]
"""Gives the boto3 client of a service (``"sagemaker"``, ``"service-quotas"``, …)."""


def report(checks: Iterable[Check]) -> str:
    return "\n".join(check.line() for check in checks)


def sagemaker_checks(clients: Clients, *, model_package: str, instance_type: str, instances: int) -> list[Check]:
    """What a SageMaker endpoint of ``instances`` × ``instance_type`` from ``model_package`` needs."""
    checks: list[Check] = []
    try:
        package = clients("sagemaker").describe_model_package(ModelPackageName=model_package)
    except (ClientError, BotoCoreError) as exc:
        checks.append(Check("model package", False, f"{model_package} cannot be described: {_reason(exc)}"))
        checks.append(Check("real-time instance type", False, "unknown: the package could not be described"))
    else:
        status = package.get("ModelPackageStatus", "unknown")
        checks.append(Check("model package", status == "Completed", f"{model_package} is {status}"))
        supported = package.get("InferenceSpecification", {}).get("SupportedRealtimeInferenceInstanceTypes", [])
        if instance_type in supported:
            checks.append(Check("real-time instance type", True, f"the package supports {instance_type}"))
        else:
            listed = ", ".join(supported) or "none"
            detail = f"the package does not support {instance_type} for real-time inference (it lists {listed})"
            checks.append(Check("real-time instance type", False, detail))
    quota = f"{instance_type} for endpoint usage"
    checks.append(_quota_check(clients, "endpoint quota", "sagemaker", quota, instances))
    return checks


def self_managed_checks(
    clients: Clients, *, repository: str, tag: str, instance_type: str, instances: int
) -> list[Check]:
    """What the self-managed stack with ``instances`` × ``instance_type`` running ``repository:tag`` needs."""
    checks = [_image_check(clients, repository, tag)]
    vcpus, instance_checks = _instance_type_checks(clients, instance_type)
    checks.extend(instance_checks)
    checks.append(_ami_check(clients))
    if vcpus is None:
        checks.append(Check("G and VT vCPU quota", False, f"unknown: the vCPUs of {instance_type} are not known"))
    else:
        needed = vcpus * instances
        name = f"G and VT vCPU quota ({instances} × {instance_type} = {needed} vCPUs)"
        checks.append(_quota_check(clients, name, "ec2", EC2_GPU_QUOTA, needed))
    return checks


def _image_check(clients: Clients, repository: str, tag: str) -> Check:
    name = f"image {repository}:{tag}"
    try:
        images = clients("ecr").describe_images(repositoryName=repository, imageIds=[{"imageTag": tag}])
    except (ClientError, BotoCoreError) as exc:
        return Check(name, False, f"not found in ECR: {_reason(exc)}")
    [image] = images["imageDetails"][:1] or [{}]
    size = image.get("imageSizeInBytes")
    digest = image.get("imageDigest", "no digest")
    return Check(name, True, f"{digest}" + (f", {size / 2**30:.1f} GiB" if size else ""))


def _instance_type_checks(clients: Clients, instance_type: str) -> tuple[int | None, list[Check]]:
    ec2 = clients("ec2")
    try:
        offered = ec2.describe_instance_type_offerings(
            LocationType="region", Filters=[{"Name": "instance-type", "Values": [instance_type]}]
        )["InstanceTypeOfferings"]
        described = ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"]
    except (ClientError, BotoCoreError) as exc:
        return None, [Check(f"instance type {instance_type}", False, f"cannot be described: {_reason(exc)}")]
    if not offered or not described:
        return None, [Check(f"instance type {instance_type}", False, "not offered in this region")]
    info = described[0]
    vcpus = int(info["VCpuInfo"]["DefaultVCpus"])
    gpus = info.get("GpuInfo", {}).get("Gpus", [])
    count = sum(int(gpu.get("Count", 0)) for gpu in gpus)
    names = ", ".join(f"{gpu.get('Manufacturer', '')} {gpu.get('Name', '')}".strip() for gpu in gpus) or "no GPU"
    detail = f"offered here: {count} GPU ({names}), {vcpus} vCPUs"
    if count != 1:
        return vcpus, [Check(f"instance type {instance_type}", False, f"{detail}; the stack runs one task per GPU")]
    return vcpus, [Check(f"instance type {instance_type}", True, detail)]


def _ami_check(clients: Clients) -> Check:
    try:
        value = clients("ssm").get_parameter(Name=ECS_GPU_AMI_PARAMETER)["Parameter"]["Value"]
    except (ClientError, BotoCoreError) as exc:
        return Check("ECS GPU AMI", False, f"{ECS_GPU_AMI_PARAMETER} does not resolve: {_reason(exc)}")
    return Check("ECS GPU AMI", True, f"{ECS_GPU_AMI_PARAMETER} is {value}")


def _quota_check(clients: Clients, name: str, service: str, quota_name: str, needed: int) -> Check:
    try:
        value = _quota_value(clients("service-quotas"), service, quota_name)
    except (ClientError, BotoCoreError) as exc:
        return Check(name, False, f"{quota_name} cannot be read: {_reason(exc)}")
    if value is None:
        return Check(name, False, f"no quota named {quota_name!r} for {service}")
    verdict = "covers" if value >= needed else "is short of"
    detail = f"{quota_name} is {value:g}, which {verdict} the {needed} needed"
    if value < needed:
        detail += " (request an increase in Service Quotas)"
    return Check(name, value >= needed, detail)


def _quota_value(quotas: Any, service: str, quota_name: str) -> float | None:
    """The account's value of the quota: its applied value, else the default (a quota never raised)."""
    for operation in ("list_service_quotas", "list_aws_default_service_quotas"):
        for page in quotas.get_paginator(operation).paginate(ServiceCode=service):
            for quota in page.get("Quotas", []):
                if quota.get("QuotaName") == quota_name:
                    return float(quota["Value"])
    return None


def _reason(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'error')}: {error.get('Message', '')}".rstrip(": ")
    return f"{type(exc).__name__}: {exc}"
