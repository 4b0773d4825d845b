"""``voicebridge sonic preflight self-managed --eks``: what deploy/eks/ needs of the cluster, read from the EKS API.

moto answers ECR, EC2's instance types, IAM's OIDC providers and STS; it models EKS clusters and node groups but not
add-ons, Pod Identity associations or cluster versions, so EKS is botocore's Stubber throughout, each answer checked
against the service model as the service would send it. Service Quotas is stubbed as in test_sonic_preflight.py.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from tests.dev.unit.test_sonic_preflight import (
    REGION,
    REPOSITORY,
    TAG,
    Quotas,
    aws,
    by_name,
    pushed_image,
    quota,
)
from voicebridge_dev.cli import main
from voicebridge_dev.sonic_preflight import EC2_GPU_QUOTA, report, self_managed_checks

__all__ = ["aws"]

CLUSTER = "voice"
ISSUER = f"https://oidc.eks.{REGION}.amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE"


class Eks:
    """The EKS API of one cluster, answering in the order the checks ask."""

    def __init__(self) -> None:
        self.client = boto3.client("eks", region_name=REGION)
        self.stubber = Stubber(self.client)

    def cluster(
        self, *, status: str = "ACTIVE", version: str = "1.35", issuer: str = ISSUER, auto: bool = False
    ) -> None:
        self.stubber.add_response(
            "describe_cluster",
            {
                "cluster": {
                    "name": CLUSTER,
                    "status": status,
                    "version": version,
                    "identity": {"oidc": {"issuer": ISSUER}},
                    "computeConfig": {"enabled": auto},
                }
            },
            {"name": CLUSTER},
        )

    def version(self, version: str = "1.35", support: str = "STANDARD_SUPPORT") -> None:
        self.stubber.add_response(
            "describe_cluster_versions",
            {
                "clusterVersions": [
                    {
                        "clusterVersion": version,
                        "versionStatus": support,
                        "endOfStandardSupportDate": datetime(2027, 3, 27, tzinfo=UTC),
                    }
                ]
            },
            {"clusterVersions": [version]},
        )

    def addon(self, name: str, status: str | None) -> None:
        if status is None:
            self.stubber.add_client_error(
                "describe_addon",
                service_error_code="ResourceNotFoundException",
                service_message=f"No addon: {name} found in cluster: {CLUSTER}",
                expected_params={"clusterName": CLUSTER, "addonName": name},
            )
        else:
            self.stubber.add_response(
                "describe_addon",
                {"addon": {"addonName": name, "clusterName": CLUSTER, "status": status}},
                {"clusterName": CLUSTER, "addonName": name},
            )

    def associations(self, namespace: str, service_account: str, *, found: bool) -> None:
        associations = (
            [
                {
                    "clusterName": CLUSTER,
                    "namespace": namespace,
                    "serviceAccount": service_account,
                    "associationId": f"a-{service_account}",
                }
            ]
            if found
            else []
        )
        self.stubber.add_response(
            "list_pod_identity_associations",
            {"associations": associations},
            {"clusterName": CLUSTER, "namespace": namespace, "serviceAccount": service_account},
        )

    def nodegroups(self, groups: dict[str, str]) -> None:
        self.stubber.add_response("list_nodegroups", {"nodegroups": list(groups)}, {"clusterName": CLUSTER})
        for name, ami_type in groups.items():
            self.stubber.add_response(
                "describe_nodegroup",
                {"nodegroup": {"nodegroupName": name, "clusterName": CLUSTER, "amiType": ami_type}},
                {"clusterName": CLUSTER, "nodegroupName": name},
            )

    def ready(self, *, karpenter: bool = True, groups: dict[str, str] | None = None) -> None:
        """A cluster that has all the manifests need."""
        self.cluster()
        self.version()
        self.addon("eks-pod-identity-agent", "ACTIVE")
        self.associations("keda", "keda-operator", found=True)
        self.nodegroups(groups or {})
        self.associations("kube-system", "karpenter", found=karpenter)
        self.addon("aws-efs-csi-driver", "ACTIVE")


def gpu_quota(vcpus: float) -> Quotas:
    quotas = Quotas({"ec2": [quota(EC2_GPU_QUOTA, vcpus, "L-DB2E81BA")]}, {})
    quotas.expect("ec2", falls_back=False)
    return quotas


def clients_with(eks: Eks, quotas: Quotas) -> Any:
    def clients(service: str) -> Any:
        make: Any = boto3.client
        return {"eks": eks.client, "service-quotas": quotas.client}.get(service) or make(service, region_name=REGION)

    return clients


def checks_of(eks: Eks, quotas: Quotas, *, instances: int = 4) -> dict[str, Any]:
    with eks.stubber, quotas.stubber:
        checks = self_managed_checks(
            clients_with(eks, quotas),
            repository=REPOSITORY,
            tag=TAG,
            instance_type="g6e.xlarge",
            instances=instances,
            eks_cluster=CLUSTER,
        )
    eks.stubber.assert_no_pending_responses()
    return by_name(checks)


def test_a_ready_cluster_with_karpenter_passes_every_check(aws: None) -> None:
    pushed_image()
    eks = Eks()
    eks.ready()

    checks = checks_of(eks, gpu_quota(64))

    assert [check.ok for check in checks.values()] == [True] * len(checks), report(checks.values())
    assert list(checks) == [
        f"image {REPOSITORY}:{TAG}",
        "instance type g6e.xlarge",
        f"EKS cluster {CLUSTER}",
        "pod credentials",
        "KEDA's CloudWatch identity",
        "GPU nodes",
        "NVIDIA device plugin",
        "EFS CSI driver",
        "G and VT vCPU quota",
    ]
    assert checks[f"EKS cluster {CLUSTER}"].detail == "ACTIVE, Kubernetes 1.35, in standard support until 2027-03-27"
    assert checks["pod credentials"].detail == "EKS Pod Identity: the eks-pod-identity-agent add-on is ACTIVE"
    assert "Karpenter's AL2023 nodes need it: deploy/eks/base/nvidia-device-plugin.yaml" in (
        checks["NVIDIA device plugin"].detail
    )


def test_a_version_in_extended_support_fails_with_the_upgrade(aws: None) -> None:
    pushed_image()
    eks = Eks()
    eks.cluster(version="1.31")
    eks.version("1.31", "EXTENDED_SUPPORT")
    eks.addon("eks-pod-identity-agent", "ACTIVE")
    eks.associations("keda", "keda-operator", found=True)
    eks.nodegroups({})
    eks.associations("kube-system", "karpenter", found=True)
    eks.addon("aws-efs-csi-driver", "ACTIVE")

    check = checks_of(eks, gpu_quota(64))[f"EKS cluster {CLUSTER}"]

    assert check.line() == (
        f"FAIL  EKS cluster {CLUSTER}: ACTIVE, Kubernetes 1.31, which is EXTENDED_SUPPORT "
        "(upgrade it: aws eks update-cluster-version)"
    )


def test_a_cluster_that_cannot_be_described_stops_the_cluster_checks_but_not_the_quota(aws: None) -> None:
    pushed_image()
    eks = Eks()
    eks.stubber.add_client_error("describe_cluster", service_error_code="ResourceNotFoundException")

    checks = checks_of(eks, gpu_quota(64))

    assert list(checks) == [
        f"image {REPOSITORY}:{TAG}",
        "instance type g6e.xlarge",
        f"EKS cluster {CLUSTER}",
        "G and VT vCPU quota",
    ]
    assert "ResourceNotFoundException" in checks[f"EKS cluster {CLUSTER}"].detail
    assert checks["G and VT vCPU quota"].ok


def irsa_cluster(eks: Eks) -> None:
    eks.cluster()
    eks.version()
    eks.addon("eks-pod-identity-agent", None)
    eks.associations("keda", "keda-operator", found=False)
    eks.nodegroups({"gpu": "BOTTLEROCKET_x86_64_NVIDIA"})
    eks.associations("kube-system", "karpenter", found=False)
    eks.addon("aws-efs-csi-driver", "ACTIVE")


def test_without_the_pod_identity_agent_an_iam_oidc_provider_for_the_issuer_is_irsa(aws: None) -> None:
    pushed_image()
    boto3.client("iam", region_name=REGION).create_open_id_connect_provider(
        Url=ISSUER, ClientIDList=["sts.amazonaws.com"], ThumbprintList=["9e99a48a9960b14926bb7f3b02e22da2b0ab7280"]
    )
    eks = Eks()
    irsa_cluster(eks)

    checks = checks_of(eks, gpu_quota(64))

    provider = ISSUER.removeprefix("https://")
    assert checks["pod credentials"].line() == (
        f"OK    pod credentials: IRSA: the cluster's OIDC issuer {provider} is an IAM OIDC provider"
    )
    assert not checks["KEDA's CloudWatch identity"].ok
    assert "create-pod-identity-association" in checks["KEDA's CloudWatch identity"].detail


def test_neither_pod_identity_nor_an_oidc_provider_fails_with_the_add_on_to_create(aws: None) -> None:
    pushed_image()
    eks = Eks()
    irsa_cluster(eks)

    check = checks_of(eks, gpu_quota(64))["pod credentials"]

    assert not check.ok
    assert check.detail.endswith(f"(aws eks create-addon --cluster-name {CLUSTER} --addon-name eks-pod-identity-agent)")


def test_a_bottlerocket_nvidia_node_group_brings_its_own_device_plugin(aws: None) -> None:
    pushed_image()
    eks = Eks()
    irsa_cluster(eks)

    checks = checks_of(eks, gpu_quota(64))

    assert checks["GPU nodes"].detail == "from node group gpu (BOTTLEROCKET_x86_64_NVIDIA)"
    assert checks["NVIDIA device plugin"].detail == "gpu include it"


def test_no_gpu_node_group_and_no_karpenter_fails_with_both_ways_to_get_gpu_nodes(aws: None) -> None:
    pushed_image()
    eks = Eks()
    eks.ready(karpenter=False, groups={"system": "AL2023_x86_64_STANDARD"})

    checks = checks_of(eks, gpu_quota(64))

    assert not checks["GPU nodes"].ok
    assert "deploy/eks/base/gpu-nodes.yaml" in checks["GPU nodes"].detail
    assert "--ami-type AL2023_x86_64_NVIDIA" in checks["GPU nodes"].detail
    assert not checks["NVIDIA device plugin"].ok


def test_a_missing_efs_csi_add_on_fails_with_the_add_on_to_create(aws: None) -> None:
    pushed_image()
    eks = Eks()
    eks.cluster()
    eks.version()
    eks.addon("eks-pod-identity-agent", "ACTIVE")
    eks.associations("keda", "keda-operator", found=True)
    eks.nodegroups({})
    eks.associations("kube-system", "karpenter", found=True)
    eks.addon("aws-efs-csi-driver", None)

    check = checks_of(eks, gpu_quota(64))["EFS CSI driver"]

    assert not check.ok
    assert f"aws eks create-addon --cluster-name {CLUSTER} --addon-name aws-efs-csi-driver" in check.detail


def test_too_few_vcpus_for_the_gpu_nodes_fails(aws: None) -> None:
    pushed_image()
    eks = Eks()
    eks.ready()

    check = checks_of(eks, gpu_quota(8), instances=4)["G and VT vCPU quota"]

    assert not check.ok and "is 8, which is short of the 16 needed" in check.detail


def test_the_command_needs_a_cluster_with_eks(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["sonic", "preflight", "self-managed", "--eks", "--image-repository", REPOSITORY, "--image-tag", TAG])

    assert status == 2
    assert "--cluster" in capsys.readouterr().err


def test_the_command_runs_the_eks_checks_and_exits_0_when_all_pass(
    aws: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pushed_image()
    eks, quotas = Eks(), gpu_quota(64)
    eks.ready()
    build: Any = boto3.session.Session.client

    def client(session: boto3.session.Session, service: str, *args: Any, **kwargs: Any) -> Any:
        stubbed = {"eks": eks.client, "service-quotas": quotas.client}
        return stubbed.get(service) or build(session, service, *args, **kwargs)

    monkeypatch.setattr(boto3.session.Session, "client", client)

    with eks.stubber, quotas.stubber:
        status = main(
            [
                *("sonic", "preflight", "self-managed", "--eks", "--cluster", CLUSTER),
                *("--image-repository", REPOSITORY, "--image-tag", TAG, "--instances", "4", "--region", REGION),
            ]
        )

    lines = capsys.readouterr().out.splitlines()
    assert status == 0
    assert len(lines) == 9 and all(line.startswith("OK    ") for line in lines)
