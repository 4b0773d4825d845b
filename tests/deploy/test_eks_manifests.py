"""deploy/eks/ as ``kubectl apply -k`` would build it: every overlay renders, every resource passes the Kubernetes
schemas of the EKS versions in standard support, the custom resources pass Karpenter's and KEDA's, and the pieces
name each other right (labels and selectors, ports, probe paths, the claim, the ServiceAccount, taints).

The Kubernetes schemas are the ``kubernetes-validate`` package's. EKS's release calendar (Amazon EKS User Guide,
"Understand the Kubernetes version lifecycle on EKS") gives 1.34 standard support until 2026-12-02 and 1.35 until
2027-03-27; 1.36 and 1.37, which the package has, are checked too, so the manifests keep working as clusters move up.
Karpenter's and KEDA's schemas come from the ``@kubernetes-models/karpenter`` and ``@kubernetes-models/keda`` npm
packages (``make eks-manifests`` installs them; without them those tests skip, as ``make unit`` runs).
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.fixtures import ROOT
from voicebridge.sonic.synthesizer import STREAM_SECONDS_METRIC
from voicebridge.telemetry import NAMESPACE
from voicebridge_dev.eks_manifests import KustomizationError, PlaceholderError, json_patch, render, to_yaml

EKS = ROOT / "deploy" / "eks"
OVERLAYS = sorted(path.parent.name for path in (EKS / "overlays").glob("*/kustomization.yaml"))
KUBERNETES_VERSIONS = ("1.34.0", "1.35.0", "1.36.0", "1.37.0")
CUSTOM_KINDS = {"NodePool", "EC2NodeClass", "ScaledObject", "TriggerAuthentication"}
MODELS = os.environ.get("VOICEBRIDGE_K8S_MODELS", "")


def rendered(overlay: str) -> list[dict[str, Any]]:
    return render(EKS / "overlays" / overlay, allow_placeholders=True)


def one(resources: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    [found] = [r for r in resources if r["kind"] == kind and (name is None or r["metadata"]["name"] == name)]
    return found


def pod_spec(resources: list[dict[str, Any]]) -> dict[str, Any]:
    return dict(one(resources, "Deployment", "sonic")["spec"]["template"]["spec"])


def sonic_container(resources: list[dict[str, Any]]) -> dict[str, Any]:
    [container] = pod_spec(resources)["containers"]
    return dict(container)


def matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def tolerates(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> bool:
    for toleration in tolerations:
        if toleration.get("key") != taint["key"] or toleration.get("effect") not in (None, taint["effect"]):
            continue
        if toleration.get("operator") == "Exists" or toleration.get("value") == taint.get("value"):
            return True
    return False


def test_there_is_an_nlb_and_an_alb_overlay() -> None:
    assert OVERLAYS == ["alb", "nlb"]


# --- schemas


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_kubernetes_resource_passes_the_schemas_strictly(overlay: str, version: str) -> None:
    checked = []
    for resource in rendered(overlay):
        if resource["kind"] in CUSTOM_KINDS:
            continue
        kubernetes_validate.validate(resource, version, strict=True)
        checked.append(resource["kind"])
    assert {"Deployment", "Service", "PersistentVolume", "PodDisruptionBudget", "DaemonSet"} <= set(checked)


def test_the_schemas_catch_a_misspelt_field() -> None:
    deployment = one(rendered("nlb"), "Deployment")
    deployment["spec"]["template"]["spec"]["terminationGracePeriod"] = 70

    with pytest.raises(kubernetes_validate.ValidationError, match="terminationGracePeriod"):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[0], strict=True)


def custom_resource_errors(resources: list[dict[str, Any]]) -> dict[str, list[str]]:
    done = subprocess.run(
        ["node", str(Path(__file__).with_name("custom_resources.mjs")), MODELS],
        input=json.dumps(resources),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    return {f"{line['kind']}/{line['name']}": line["errors"] for line in lines}


needs_models = pytest.mark.skipif(not MODELS, reason="VOICEBRIDGE_K8S_MODELS not set (make eks-manifests sets it)")


@needs_models
@pytest.mark.parametrize("overlay", OVERLAYS)
def test_karpenter_and_keda_resources_pass_their_schemas(overlay: str) -> None:
    custom = [resource for resource in rendered(overlay) if resource["kind"] in CUSTOM_KINDS]

    assert custom_resource_errors(custom) == {
        "ScaledObject/sonic": [],
        "TriggerAuthentication/sonic-cloudwatch": [],
        "NodePool/sonic-gpu": [],
        "EC2NodeClass/sonic-gpu": [],
    }


@needs_models
def test_the_custom_schemas_catch_a_wrong_value() -> None:
    pool = one(rendered("nlb"), "NodePool")
    pool["spec"]["template"]["spec"]["requirements"][0]["operator"] = "Among"

    errors = custom_resource_errors([pool])["NodePool/sonic-gpu"]

    assert errors and "operator" in errors[0]


# --- cross-references


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_service_pdb_policy_and_scaler_select_the_deployments_pods(overlay: str) -> None:
    resources = rendered(overlay)
    deployment = one(resources, "Deployment", "sonic")
    labels = deployment["spec"]["template"]["metadata"]["labels"]

    assert matches(deployment["spec"]["selector"]["matchLabels"], labels)
    assert matches(one(resources, "Service", "sonic")["spec"]["selector"], labels)
    assert matches(one(resources, "PodDisruptionBudget", "sonic")["spec"]["selector"]["matchLabels"], labels)
    assert matches(one(resources, "NetworkPolicy", "sonic")["spec"]["podSelector"]["matchLabels"], labels)
    for spread in pod_spec(resources)["topologySpreadConstraints"]:
        assert matches(spread["labelSelector"]["matchLabels"], labels)
    target = one(resources, "ScaledObject", "sonic")["spec"]["scaleTargetRef"]
    assert (target.get("kind", "Deployment"), target["name"]) == ("Deployment", deployment["metadata"]["name"])


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_ports_and_probes_are_the_containers_contract(overlay: str) -> None:
    resources = rendered(overlay)
    container = sonic_container(resources)
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}

    assert ports == {"http": 8080}
    assert container["args"] == ["serve"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/ping", "port": "http"}
    [service_port] = one(resources, "Service", "sonic")["spec"]["ports"]
    assert service_port["targetPort"] in ports
    [rule] = one(resources, "NetworkPolicy", "sonic")["spec"]["ingress"]
    assert [port["port"] for port in rule["ports"]] == [service_port["targetPort"]]


def test_the_nlb_is_internal_by_pod_ip_checks_ping_and_keeps_to_its_zone() -> None:
    service = one(rendered("nlb"), "Service", "sonic")
    annotations = service["metadata"]["annotations"]
    prefix = "service.beta.kubernetes.io/aws-load-balancer-"

    assert (service["spec"]["type"], service["spec"]["loadBalancerClass"]) == ("LoadBalancer", "service.k8s.aws/nlb")
    assert annotations[prefix + "scheme"] == "internal"
    assert annotations[prefix + "nlb-target-type"] == "ip"
    assert annotations[prefix + "attributes"] == "load_balancing.cross_zone.enabled=false"
    readiness = sonic_container(rendered("nlb"))["readinessProbe"]["httpGet"]["path"]
    assert annotations[prefix + "healthcheck-path"] == readiness
    assert "deregistration_delay.timeout_seconds=30" in annotations[prefix + "target-group-attributes"]


def test_the_alb_routes_to_the_least_busy_pod_of_the_service() -> None:
    resources = rendered("alb")
    ingress = one(resources, "Ingress", "sonic")
    annotations = ingress["metadata"]["annotations"]
    [path] = ingress["spec"]["rules"][0]["http"]["paths"]
    service = one(resources, "Service", "sonic")

    assert path["backend"]["service"] == {"name": "sonic", "port": {"name": service["spec"]["ports"][0]["name"]}}
    assert annotations["alb.ingress.kubernetes.io/scheme"] == "internal"
    assert annotations["alb.ingress.kubernetes.io/target-type"] == "ip"
    assert annotations["alb.ingress.kubernetes.io/healthcheck-path"] == "/ping"
    assert (
        "load_balancing.algorithm.type=least_outstanding_requests"
        in (annotations["alb.ingress.kubernetes.io/target-group-attributes"])
    )
    assert service["spec"]["type"] == "ClusterIP"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_weights_claim_binds_the_efs_volume_read_only(overlay: str) -> None:
    resources = rendered(overlay)
    claim = one(resources, "PersistentVolumeClaim", "sonic-weights")
    volume = one(resources, "PersistentVolume", "sonic-weights")
    [mounted] = [v for v in pod_spec(resources)["volumes"] if "persistentVolumeClaim" in v]

    assert mounted["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"], "readOnly": True}
    assert claim["spec"]["volumeName"] == volume["metadata"]["name"]
    assert volume["spec"]["claimRef"] == {"namespace": claim["metadata"]["namespace"], "name": "sonic-weights"}
    assert claim["spec"]["accessModes"] == volume["spec"]["accessModes"] == ["ReadOnlyMany"]
    assert claim["spec"]["storageClassName"] == volume["spec"]["storageClassName"]
    storage_class = one(resources, "StorageClass", volume["spec"]["storageClassName"])
    assert storage_class["provisioner"] == volume["spec"]["csi"]["driver"] == "efs.csi.aws.com"
    [mount] = [m for m in sonic_container(resources)["volumeMounts"] if m["name"] == mounted["name"]]
    assert (mount["mountPath"], mount["readOnly"]) == ("/opt/ml/model", True)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_pods_use_the_service_account_and_namespace_made_for_them(overlay: str) -> None:
    resources = rendered(overlay)
    account = one(resources, "ServiceAccount")
    namespace = one(resources, "Namespace")["metadata"]["name"]

    assert pod_spec(resources)["serviceAccountName"] == account["metadata"]["name"]
    namespaced = [r for r in resources if r["metadata"].get("namespace") not in (None, "kube-system")]
    assert {r["metadata"]["namespace"] for r in namespaced} == {namespace}


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_gpu_pods_land_on_the_node_pool_and_tolerate_its_taint(overlay: str) -> None:
    resources = rendered(overlay)
    pool = one(resources, "NodePool", "sonic-gpu")
    node_class = one(resources, "EC2NodeClass")
    taints = pool["spec"]["template"]["spec"]["taints"]
    plugin = one(resources, "DaemonSet", "nvidia-device-plugin")["spec"]["template"]["spec"]

    assert pod_spec(resources)["nodeSelector"] == {"karpenter.sh/nodepool": pool["metadata"]["name"]}
    assert pool["spec"]["template"]["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": node_class["metadata"]["name"],
    }
    for taint in taints:
        assert tolerates(pod_spec(resources)["tolerations"], taint)
        assert tolerates(plugin["tolerations"], taint)
    assert sonic_container(resources)["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_the_node_pool_offers_one_gpu_g6e_g6_g5_in_one_zone_from_the_al2023_ami() -> None:
    resources = rendered("nlb")
    requirements = {r["key"]: r for r in one(resources, "NodePool")["spec"]["template"]["spec"]["requirements"]}
    node_class = one(resources, "EC2NodeClass")["spec"]

    assert set(requirements["karpenter.k8s.aws/instance-family"]["values"]) == {"g6e", "g6", "g5"}
    assert requirements["karpenter.k8s.aws/instance-gpu-count"]["values"] == ["1"]
    assert len(requirements["topology.kubernetes.io/zone"]["values"]) == 1
    assert node_class["amiSelectorTerms"][0]["alias"].startswith("al2023@")
    assert node_class["placementGroupSelector"] == {"name": "sonic-gpu"}
    assert node_class["metadataOptions"]["httpPutResponseHopLimit"] == 1


def test_replicas_spread_one_a_node_and_two_survive_a_disruption() -> None:
    resources = rendered("nlb")
    spec = pod_spec(resources)
    deployment = one(resources, "Deployment")["spec"]

    assert [c["topologyKey"] for c in spec["topologySpreadConstraints"]] == ["kubernetes.io/hostname"]
    assert deployment["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert one(resources, "PodDisruptionBudget")["spec"]["minAvailable"] == 2
    assert one(resources, "ScaledObject")["spec"]["minReplicaCount"] == 2


def test_draining_outlasts_the_load_balancers_deregistration_delay() -> None:
    resources = rendered("nlb")
    annotations = one(resources, "Service")["metadata"]["annotations"]
    attributes = annotations["service.beta.kubernetes.io/aws-load-balancer-target-group-attributes"]
    delay = int(dict(pair.split("=") for pair in attributes.split(","))["deregistration_delay.timeout_seconds"])
    pre_stop = sonic_container(resources)["lifecycle"]["preStop"]["sleep"]["seconds"]

    assert pre_stop > delay
    # What is left of the grace period after preStop is SageMaker's 30 s between SIGTERM and SIGKILL.
    assert pod_spec(resources)["terminationGracePeriodSeconds"] - pre_stop == 30


def test_the_scaler_reads_the_metric_the_bridge_writes_and_aims_at_three_streams_a_replica() -> None:
    scaled = one(rendered("nlb"), "ScaledObject")["spec"]
    [trigger] = scaled["triggers"]
    metadata = trigger["metadata"]
    dimensions = dict(zip(metadata["dimensionName"].split(";"), metadata["dimensionValue"].split(";"), strict=True))

    assert (metadata["namespace"], metadata["metricName"]) == (NAMESPACE, STREAM_SECONDS_METRIC)
    assert dimensions["SonicBackend"] == "container"
    assert set(dimensions) == {"service", "SonicBackend", "SonicTarget"}
    assert (metadata["metricStat"], metadata["metricStatPeriod"]) == ("Sum", "60")
    # Little's law: a minute's stream-seconds over 60 is the streams open; 3 a replica, as the ECS stack's target.
    assert float(metadata["targetMetricValue"]) / int(metadata["metricStatPeriod"]) == 3
    assert trigger["metricType"] == "AverageValue"
    assert metadata["minMetricValue"] == "0"
    assert int(metadata["metricCollectionTime"]) % int(metadata["metricStatPeriod"]) == 0
    down = scaled["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert down["stabilizationWindowSeconds"] == 600


# --- the renderer


def test_an_overlay_with_values_left_to_fill_in_is_refused_naming_each() -> None:
    with pytest.raises(PlaceholderError) as refused:
        render(EKS / "overlays" / "nlb")

    assert "PersistentVolume sonic-weights: /spec/csi/volumeHandle" in refused.value.found
    assert "Deployment sonic/sonic: /spec/template/spec/containers/0/image" in refused.value.found


@pytest.fixture
def account(tmp_path: Path) -> Iterator[Path]:
    """A copy of deploy/eks with every REPLACE value filled in, as a customer's would be."""
    values = {
        "REPLACE-account.dkr.ecr.REPLACE-region.amazonaws.com": "111122223333.dkr.ecr.eu-west-1.amazonaws.com",
        "sha256:REPLACE": "sha256:" + "a" * 64,
        "fs-REPLACE::fsap-REPLACE": "fs-0123456789abcdef0::fsap-0123456789abcdef0",
        "REPLACE-vpc-cidr": "10.20.0.0/16",
        "REPLACE-zone": "eu-west-1a",
        "REPLACE-karpenter-node-role": "KarpenterNodeRole-voice",
        "REPLACE-cluster-name": "voice",
        "REPLACE-sonic-host": "sonic.voice.internal",
        "REPLACE-region": "eu-west-1",
        "REPLACE-subnet-a": "subnet-0aaa",
        "REPLACE-subnet-b": "subnet-0bbb",
        "REPLACE-subnet": "subnet-0aaa",
        "REPLACE-security-group": "sg-0ccc",
    }
    for source in EKS.rglob("*.yaml"):
        text = source.read_text(encoding="utf-8")
        if source.parent.name in ("account", "nlb", "alb"):
            for placeholder, value in values.items():
                text = text.replace(placeholder, value)
        copy = tmp_path / source.relative_to(EKS)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(text, encoding="utf-8")
    yield tmp_path


def test_an_account_with_every_value_filled_in_renders_with_them(account: Path) -> None:
    resources = render(account / "overlays" / "nlb")

    assert sonic_container(resources)["image"] == (
        "111122223333.dkr.ecr.eu-west-1.amazonaws.com/cartesia/sonic@sha256:" + "a" * 64
    )
    assert one(resources, "PersistentVolume")["spec"]["csi"]["volumeHandle"] == (
        "fs-0123456789abcdef0::fsap-0123456789abcdef0"
    )
    metadata = one(resources, "ScaledObject")["spec"]["triggers"][0]["metadata"]
    assert metadata["dimensionValue"] == "voicebridge;container;sonic.voice.internal"
    assert resources[0]["kind"] == "Namespace"


def test_the_rendered_stream_reads_back_as_the_same_resources() -> None:
    import yaml

    resources = rendered("alb")

    assert list(yaml.safe_load_all(to_yaml(resources))) == resources


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text, encoding="utf-8")
    return folder


CONFIG_MAP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: sonic}\ndata: {a: '1'}\n"


def test_a_field_kustomize_has_but_this_renderer_does_not_apply_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    write(tmp_path, "kustomization.yaml", "resources: [cm.yaml]\nnamespace: other\n")

    with pytest.raises(KustomizationError, match="does not apply: namespace"):
        render(tmp_path)


def test_a_strategic_merge_patch_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    write(
        tmp_path,
        "kustomization.yaml",
        "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap}\n    patch: |-\n      data: {a: '2'}\n",
    )

    with pytest.raises(KustomizationError, match="only JSON 6902"):
        render(tmp_path)


def test_a_patch_whose_target_selects_nothing_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    write(
        tmp_path,
        "kustomization.yaml",
        "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap, name: setings}\n"
        "    patch: '[{op: remove, path: /data}]'\n",
    )

    with pytest.raises(KustomizationError, match="selects no resource"):
        render(tmp_path)


def test_a_resource_defined_twice_is_refused(tmp_path: Path) -> None:
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    write(tmp_path / "inner", "cm.yaml", CONFIG_MAP)
    write(tmp_path / "inner", "kustomization.yaml", "resources: [cm.yaml]\n")
    write(tmp_path, "kustomization.yaml", "resources: [cm.yaml, inner]\n")

    with pytest.raises(KustomizationError, match="ConfigMap sonic/settings is defined twice"):
        render(tmp_path)


def test_a_patch_to_a_path_that_is_not_there_names_the_operation(tmp_path: Path) -> None:
    write(tmp_path, "cm.yaml", CONFIG_MAP)
    write(
        tmp_path,
        "kustomization.yaml",
        "resources: [cm.yaml]\npatches:\n  - target: {kind: ConfigMap}\n"
        "    patch: '[{op: replace, path: /data/b, value: x}]'\n",
    )

    with pytest.raises(KustomizationError, match=r"ConfigMap sonic/settings: .*'/data/b'"):
        render(tmp_path)


@pytest.mark.parametrize(
    ("document", "operation", "expected"),
    [
        ({"a": [1, 2]}, {"op": "add", "path": "/a/1", "value": 9}, {"a": [1, 9, 2]}),
        ({"a": [1, 2]}, {"op": "add", "path": "/a/-", "value": 9}, {"a": [1, 2, 9]}),
        ({"a": {"b/c": 1}}, {"op": "replace", "path": "/a/b~1c", "value": 2}, {"a": {"b/c": 2}}),
        ({"a": [1, 2]}, {"op": "remove", "path": "/a/0"}, {"a": [2]}),
        ({"a": 1}, {"op": "move", "from": "/a", "path": "/b"}, {"b": 1}),
        ({"a": {"x": 1}}, {"op": "copy", "from": "/a", "path": "/b"}, {"a": {"x": 1}, "b": {"x": 1}}),
        ({"a": 1}, {"op": "test", "path": "/a", "value": 1}, {"a": 1}),
    ],
)
def test_json_patch_follows_rfc_6902(document: Any, operation: dict[str, Any], expected: Any) -> None:
    assert json_patch(document, operation) == expected


@pytest.mark.parametrize(
    "operation",
    [
        {"op": "replace", "path": "/missing", "value": 1},
        {"op": "add", "path": "/a/5", "value": 1},
        {"op": "add", "path": "/a/01", "value": 1},
        {"op": "test", "path": "/a/0", "value": 2},
        {"op": "merge", "path": "/a", "value": 1},
    ],
)
def test_json_patch_refuses_what_rfc_6902_calls_an_error(operation: dict[str, Any]) -> None:
    with pytest.raises((KeyError, IndexError, ValueError)):
        json_patch({"a": [1]}, operation)
