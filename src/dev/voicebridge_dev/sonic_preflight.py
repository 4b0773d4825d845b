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

Self-managed on Amazon EKS (``deploy/eks/``, ``--eks``): the image, the instance type and the vCPU quota as above,
and what the manifests rely on in the cluster, read from the EKS API alone (no Kubernetes credentials needed):

- ``eks:DescribeCluster`` and ``DescribeClusterVersions``: the cluster is ``ACTIVE`` on a version in standard support;
- ``eks:DescribeAddon`` (``eks-pod-identity-agent``), else the cluster's OIDC issuer and
  ``iam:GetOpenIDConnectProvider``: pods can get AWS credentials (EKS Pod Identity, or IRSA);
- ``eks:ListPodIdentityAssociations``: KEDA's operator (``keda``/``keda-operator``) has a role for CloudWatch;
- ``eks:ListNodegroups``, ``DescribeNodegroup`` and ``ListPodIdentityAssociations`` (``kube-system``/``karpenter``):
  GPU nodes can come, from a managed node group on an NVIDIA AMI or from Karpenter, and which of them needs the NVIDIA
  device plugin (the AL2023 NVIDIA AMI does, Bottlerocket's NVIDIA variant has it: Amazon EKS User Guide, "Install
  Kubernetes device plugin for GPUs");
- ``eks:DescribeAddon`` (``aws-efs-csi-driver``): the EFS CSI driver mounts the weights.

What only the Kubernetes API shows (Karpenter's and KEDA's CRDs, the device plugin running, a self-installed CSI
driver, an IRSA annotation) is not read: each such finding says so.

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
    clients: Clients, *, repository: str, tag: str, instance_type: str, instances: int, eks_cluster: str | None = None
) -> list[Check]:
    """What the self-managed fleet of up to ``instances`` × ``instance_type`` running ``repository:tag`` needs: on
    the ECS stack, or, given ``eks_cluster``, on that EKS cluster (``deploy/eks/``)."""
    checks = [_image_check(clients, repository, tag)]
    vcpus, instance_checks = _instance_type_checks(clients, instance_type)
    checks.extend(instance_checks)
    checks.extend([_ami_check(clients)] if eks_cluster is None else _cluster_checks(clients, eks_cluster))
    checks.append(_gpu_quota_check(clients, instance_type, vcpus, instances))
    return checks


def _cluster_checks(clients: Clients, cluster: str) -> list[Check]:
    """What the EKS cluster itself needs: none past the first when it cannot be described."""
    eks = clients("eks")
    try:
        described = eks.describe_cluster(name=cluster)["cluster"]
    except (ClientError, BotoCoreError) as exc:
        return [Check(f"EKS cluster {cluster}", False, f"cannot be described: {_reason(exc)}")]
    return [
        _cluster_check(eks, cluster, described),
        _pod_identity_check(clients, eks, cluster, described),
        _keda_identity_check(eks, cluster),
        *_gpu_node_checks(eks, cluster, described),
        _efs_csi_check(eks, cluster),
    ]


def _gpu_quota_check(clients: Clients, instance_type: str, vcpus: int | None, instances: int) -> Check:
    if vcpus is None:
        return Check("G and VT vCPU quota", False, f"unknown: the vCPUs of {instance_type} are not known")
    needed = vcpus * instances
    name = f"G and VT vCPU quota ({instances} × {instance_type} = {needed} vCPUs)"
    return _quota_check(clients, name, "ec2", EC2_GPU_QUOTA, needed)


def _cluster_check(eks: Any, cluster: str, described: dict[str, Any]) -> Check:
    name = f"EKS cluster {cluster}"
    status, version = described.get("status", "unknown"), described.get("version", "unknown")
    if status != "ACTIVE":
        return Check(name, False, f"is {status}, not ACTIVE (wait for it, or fix what its health reports)")
    try:
        versions = eks.describe_cluster_versions(clusterVersions=[version])["clusterVersions"]
    except (ClientError, BotoCoreError) as exc:
        return Check(name, False, f"ACTIVE, Kubernetes {version}, whose support cannot be read: {_reason(exc)}")
    support = versions[0].get("versionStatus", "unknown") if versions else "not listed"
    ends = versions[0].get("endOfStandardSupportDate") if versions else None
    if support == "STANDARD_SUPPORT":
        until = f" until {ends:%Y-%m-%d}" if ends else ""
        return Check(name, True, f"ACTIVE, Kubernetes {version}, in standard support{until}")
    fix = "upgrade it: aws eks update-cluster-version"
    return Check(name, False, f"ACTIVE, Kubernetes {version}, which is {support} ({fix})")


def _addon_status(eks: Any, cluster: str, addon: str) -> str | None:
    """The add-on's status, or None when the cluster does not have it."""
    try:
        return str(eks.describe_addon(clusterName=cluster, addonName=addon)["addon"].get("status", "unknown"))
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            return None
        raise


def _addon_check(eks: Any, cluster: str, name: str, addon: str, means: str = "") -> tuple[Check | None, str | None]:
    """The check ``name`` where the add-on settles it (it cannot be read: failed; it is ACTIVE: passed, the detail
    led by what that ``means``), else None; and the add-on's status (None: the cluster does not have it)."""
    try:
        status = _addon_status(eks, cluster, addon)
    except (ClientError, BotoCoreError) as exc:
        return Check(name, False, f"the {addon} add-on cannot be read: {_reason(exc)}"), None
    if status == "ACTIVE":
        return Check(name, True, f"{means}the {addon} add-on is ACTIVE"), status
    return None, status


def _create_addon(cluster: str, addon: str) -> str:
    """The command that installs ``addon`` on the cluster."""
    return f"aws eks create-addon --cluster-name {cluster} --addon-name {addon}"


def _pod_identity_check(clients: Clients, eks: Any, cluster: str, described: dict[str, Any]) -> Check:
    name = "pod credentials"
    settled, agent = _addon_check(eks, cluster, name, "eks-pod-identity-agent", "EKS Pod Identity: ")
    if settled is not None:
        return settled
    issuer = described.get("identity", {}).get("oidc", {}).get("issuer", "")
    fix = _create_addon(cluster, "eks-pod-identity-agent")
    if issuer:
        provider = issuer.removeprefix("https://")
        try:
            account = clients("sts").get_caller_identity()["Account"]
            arn = f"arn:aws:iam::{account}:oidc-provider/{provider}"
            clients("iam").get_open_id_connect_provider(OpenIDConnectProviderArn=arn)
        except (ClientError, BotoCoreError):
            pass
        else:
            return Check(name, True, f"IRSA: the cluster's OIDC issuer {provider} is an IAM OIDC provider")
    agent_state = f"the eks-pod-identity-agent add-on is {agent}" if agent else "no eks-pod-identity-agent add-on"
    return Check(name, False, f"{agent_state} and no IAM OIDC provider for the cluster's issuer ({fix})")


def _associations(eks: Any, cluster: str, namespace: str, service_account: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for page in eks.get_paginator("list_pod_identity_associations").paginate(
        clusterName=cluster, namespace=namespace, serviceAccount=service_account
    ):
        found.extend(page.get("associations", []))
    return found


def _keda_identity_check(eks: Any, cluster: str) -> Check:
    name = "KEDA's CloudWatch identity"
    try:
        found = _associations(eks, cluster, "keda", "keda-operator")
    except (ClientError, BotoCoreError) as exc:
        return Check(name, False, f"Pod Identity associations cannot be listed: {_reason(exc)}")
    if found:
        return Check(name, True, f"keda/keda-operator has a Pod Identity association ({found[0]['associationId']})")
    fix = (
        f"aws eks create-pod-identity-association --cluster-name {cluster} --namespace keda "
        "--service-account keda-operator --role-arn <a role allowed cloudwatch:GetMetricData>; an IRSA annotation "
        "instead is not visible to the EKS API"
    )
    return Check(name, False, f"no Pod Identity association for keda/keda-operator ({fix})")


def _gpu_node_checks(eks: Any, cluster: str, described: dict[str, Any]) -> list[Check]:
    try:
        groups = [
            eks.describe_nodegroup(clusterName=cluster, nodegroupName=group)["nodegroup"]
            for page in eks.get_paginator("list_nodegroups").paginate(clusterName=cluster)
            for group in page.get("nodegroups", [])
        ]
        karpenter = _associations(eks, cluster, "kube-system", "karpenter")
    except (ClientError, BotoCoreError) as exc:
        reason = f"node groups cannot be read: {_reason(exc)}"
        return [Check("GPU nodes", False, reason), Check("NVIDIA device plugin", False, f"unknown: {reason}")]
    nvidia = [group for group in groups if "NVIDIA" in group.get("amiType", "") or "GPU" in group.get("amiType", "")]
    auto_mode = bool(described.get("computeConfig", {}).get("enabled"))
    sources = [f"node group {group['nodegroupName']} ({group['amiType']})" for group in nvidia]
    if karpenter:
        sources.append("Karpenter (kube-system/karpenter has a Pod Identity association)")
    if auto_mode:
        sources.append("EKS Auto Mode")
    if not sources:
        fix = (
            "install Karpenter, whose NodePool and EC2NodeClass are deploy/eks/base/gpu-nodes.yaml, or add a managed "
            "node group with --ami-type AL2023_x86_64_NVIDIA"
        )
        gpu_check = Check("GPU nodes", False, f"no NVIDIA node group and no Karpenter identity found ({fix})")
        return [gpu_check, Check("NVIDIA device plugin", False, "unknown: no GPU nodes to run it")]
    gpu_check = Check("GPU nodes", True, "from " + ", ".join(sources))
    bundled = [g["nodegroupName"] for g in nvidia if g["amiType"].startswith("BOTTLEROCKET")]
    needs_plugin = [g["nodegroupName"] for g in nvidia if not g["amiType"].startswith("BOTTLEROCKET")]
    if karpenter:
        needs_plugin.append("Karpenter's AL2023 nodes")
    parts = []
    if needs_plugin:
        parts.append(
            f"{', '.join(needs_plugin)} need it: deploy/eks/base/nvidia-device-plugin.yaml installs it (drop it where "
            "the NVIDIA GPU Operator runs); whether it runs is visible only to the Kubernetes API"
        )
    if bundled or auto_mode:
        parts.append(f"{', '.join([*bundled, *(['EKS Auto Mode'] if auto_mode else [])])} include it")
    return [gpu_check, Check("NVIDIA device plugin", True, "; ".join(parts))]


def _efs_csi_check(eks: Any, cluster: str) -> Check:
    name = "EFS CSI driver"
    settled, status = _addon_check(eks, cluster, name, "aws-efs-csi-driver")
    if settled is not None:
        return settled
    fix = _create_addon(cluster, "aws-efs-csi-driver")
    state = f"is {status}" if status else "is not installed as an add-on"
    return Check(
        name, False, f"the aws-efs-csi-driver add-on {state} ({fix}; one installed by Helm is not visible here)"
    )


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
