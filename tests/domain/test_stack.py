"""ServingStack plan: components per cloud and setting, their order, and the step gate."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from modelplane.domain import stack
from modelplane.domain.stack import Cloud, Component, Setting

PC = stack.ProviderConfig("eks-us-east")
RELEASES = {
    "cert-manager",
    "gateway-api-crds",
    "envoy-gateway",
    "ai-gateway-crds",
    "ai-gateway",
    "lws",
    "prometheus",
    "node-feature-discovery",
    "dra-driver-nvidia-gpu",
}
CRD_INSTALLER = {
    "crd-installer-serviceaccount",
    "crd-installer-clusterrole",
    "crd-installer-clusterrolebinding",
    "inference-extension-crds",
}
DRA = {"dra-driver-namespace", "dra-driver-quota", "dra-driver-nvidia-gpu"}
GATEWAY = {"envoy-proxy", "gateway-class", "gateway"}
BASE = {"namespace"} | RELEASES | CRD_INSTALLER | DRA | GATEWAY
# The README links it; the section moved there whole, with the other tool versions.
README = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def _stack(cloud: Cloud = Cloud.EKS, /, **settings: Setting) -> stack.Stack:
    components = {Component(k): v for k, v in settings.items()}
    return stack.Stack("eks-us-east", "modelplane-system", cloud, PC, components)


def _steps(plan: tuple[stack.Step, ...]) -> dict[str, stack.Step]:
    return {s.key: s for s in plan}


@pytest.mark.parametrize(
    ("cloud", "want"),
    [
        pytest.param(Cloud.EKS, BASE | {"aws-dranet"}, id="eks-adds-dranet"),
        pytest.param(Cloud.AKS, BASE | {"storage-class"}, id="aks-adds-its-storage-class"),
        pytest.param(Cloud.GKE, BASE, id="gke"),
        pytest.param(Cloud.NEBIUS, BASE | {"csi-mounted-fs-path"}, id="nebius-adds-its-csi"),
        pytest.param(Cloud.VULTR, BASE, id="vultr"),
        pytest.param(Cloud.EXISTING, BASE, id="existing"),
    ],
)
def test_plan_per_cloud(cloud: Cloud, want: set[str]) -> None:
    assert set(_steps(stack.plan(_stack(cloud)))) == want


@pytest.mark.parametrize(
    ("off", "gone"),
    [
        pytest.param("certManager", {"cert-manager"}, id="cert-manager"),
        pytest.param("gatewayAPI", set(), id="gateway-api-crds-still-carry-envoys"),
        pytest.param("inferenceExtension", CRD_INSTALLER, id="inference-extension"),
        pytest.param("envoyGateway", {"envoy-gateway", "ai-gateway-crds", "ai-gateway"},
                     id="envoy-gateway-and-its-extension"),
        pytest.param("aiGateway", {"ai-gateway-crds", "ai-gateway"}, id="ai-gateway"),
        pytest.param("leaderWorkerSet", {"lws"}, id="lws"),
        pytest.param("prometheus", {"prometheus"}, id="prometheus"),
        pytest.param("nodeFeatureDiscovery", {"node-feature-discovery"}, id="nfd"),
        pytest.param("nvidiaDRADriver", DRA, id="dra-driver"),
        pytest.param("dranet", {"aws-dranet"}, id="dranet"),
    ],
)  # fmt: skip
def test_disabled_component_is_not_installed(off: str, gone: set[str]) -> None:
    plan = _steps(stack.plan(_stack(**{off: Setting(enabled=False)})))
    assert set(plan) == (BASE | {"aws-dranet"}) - gone


def test_nebius_csi_driver_can_be_turned_off() -> None:
    plan = _steps(stack.plan(_stack(Cloud.NEBIUS, csiMountedFsPath=Setting(enabled=False))))
    assert set(plan) == BASE


def test_nebius_csi_driver_keeps_volumes_on_the_shared_filesystem() -> None:
    release = _steps(stack.plan(_stack(Cloud.NEBIUS)))["csi-mounted-fs-path"].resource
    for_provider = release["spec"]["forProvider"]
    assert for_provider["values"] == {"dataDir": "/mnt/modelplane-cache/csi-mounted-fs-path-data/"}
    assert for_provider["chart"]["name"] == "csi-mounted-fs-path"
    assert release["spec"]["providerConfigRef"] == PC.ref()


def test_without_gateway_api_and_envoy_no_crd_release() -> None:
    off = Setting(enabled=False)
    plan = _steps(stack.plan(_stack(gatewayAPI=off, envoyGateway=off)))
    assert "gateway-api-crds" not in plan


@pytest.mark.parametrize(
    ("settings", "key", "needs"),
    [
        pytest.param({}, "envoy-gateway", {"gateway-api-crds", "inference-extension-crds"},
                     id="envoy-after-both-crds"),
        pytest.param({"inferenceExtension": Setting(False)}, "envoy-gateway",
                     {"gateway-api-crds"}, id="envoy-without-inference-extension"),
        pytest.param({}, "ai-gateway", {"ai-gateway-crds", "envoy-gateway",
                     "inference-extension-crds"}, id="ai-gateway-after-envoy-and-crds"),
        pytest.param({}, "ai-gateway-crds", set(), id="ai-gateway-crds-first"),
        pytest.param({}, "gateway", {"namespace", "envoy-gateway", "ai-gateway"},
                     id="gateway-after-envoy-and-its-extension"),
        pytest.param({"aiGateway": Setting(False)}, "gateway", {"namespace", "envoy-gateway"},
                     id="gateway-without-the-extension"),
        pytest.param({"envoyGateway": Setting(False)}, "gateway",
                     {"namespace", "gateway-api-crds"}, id="gateway-on-users-envoy"),
        pytest.param({}, "inference-extension-crds", {"namespace"} | CRD_INSTALLER
                     - {"inference-extension-crds"}, id="crd-job-after-its-rbac"),
        pytest.param({}, "dra-driver-quota", {"dra-driver-namespace"}, id="quota-in-its-ns"),
        pytest.param({}, "dra-driver-nvidia-gpu", {"dra-driver-quota"},
                     id="dra-driver-after-its-quota"),
        pytest.param({}, "node-feature-discovery", set(), id="nfd-first"),
        pytest.param({}, "cert-manager", set(), id="cert-manager-first"),
    ],
)  # fmt: skip
def test_dependencies(settings: dict[str, Setting], key: str, needs: set[str]) -> None:
    plan = stack.plan(_stack(**settings))
    steps = _steps(plan)
    assert set(steps[key].needs) == needs
    order = [s.key for s in plan]
    assert all(order.index(n) < order.index(key) for n in needs), "a step follows its needs"


def _release(key: str, **settings: Setting) -> Mapping[str, Any]:
    return _steps(stack.plan(_stack(**settings)))[key].resource


def test_release_shape() -> None:
    release = _release("envoy-gateway")
    assert release["apiVersion"] == "helm.m.crossplane.io/v1beta1"
    assert release["metadata"] == {
        "annotations": {"crossplane.io/external-name": "envoy-gateway"},
        "name": "eks-us-east-envoy-gateway",
        "namespace": "modelplane-system",
    }
    assert release["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "eks-us-east",
    }
    assert release["spec"]["forProvider"]["chart"] == {
        "name": "gateway-helm",
        "repository": "oci://docker.io/envoyproxy",
        "version": "v1.8.3",
    }
    assert release["spec"]["forProvider"]["namespace"] == "envoy-gateway-system"


def test_every_release_is_a_row_of_the_chart_table() -> None:
    releases = {  # every chart is installed on some cloud: DRANET on EKS, the CSI on Nebius
        s.key: s.resource["spec"]["forProvider"]
        for cloud in (Cloud.EKS, Cloud.NEBIUS)
        for s in stack.plan(_stack(cloud))
        if s.resource["kind"] == "Release"
    }
    assert set(releases) == set(stack.stack_charts())
    assert set(stack.CHARTS) - set(stack.stack_charts()) == {"cluster-autoscaler"}
    for release, for_provider in releases.items():
        chart = stack.CHARTS[release]
        assert for_provider["chart"] == {
            "name": chart.name,
            "repository": chart.repository,
            "version": chart.version,
        }, release
        assert for_provider["namespace"] == chart.namespace, release


SEMVER = re.compile(r"^v?\d+\.\d+\.\d+$")


@pytest.mark.parametrize("release", sorted(stack.CHARTS))
def test_every_chart_is_pinned_to_an_exact_release(release: str) -> None:
    chart = stack.CHARTS[release]
    assert SEMVER.match(chart.version), f"{release}: {chart.version} is not an exact version"
    assert chart.repository.startswith(("https://", "oci://")), release


def test_the_table_pins_the_versions_issue_11_asks_for() -> None:
    charts = stack.CHARTS
    assert charts["envoy-gateway"].version.startswith("v1.8.")
    assert charts["gateway-api-crds"].version == charts["envoy-gateway"].version, (
        "the CRD chart and Envoy Gateway are one release"
    )
    assert charts["ai-gateway-crds"].version == charts["ai-gateway"].version
    assert charts["dra-driver-nvidia-gpu"].repository == (
        "oci://registry.k8s.io/dra-driver-nvidia/charts"
    ), "the DRA driver's home is now Kubernetes SIGs"


def test_readme_says_which_versions_are_installed() -> None:
    text = README.read_text()
    section = text[text.index("## Serving stack versions") :]
    for chart in stack.CHARTS.values():
        row = f"| `{chart.release}` | `{chart.name}` | `{chart.repository}` | {chart.version} |"
        assert row in section, f"docs/tools.md has no row for {chart.release}: {row}"
    assert f"Inference Extension CRDs {stack.INFERENCE_EXTENSION_VERSION}" in section


def test_version_overrides_the_pin() -> None:
    release = _release("lws", leaderWorkerSet=Setting(version="0.9.0"))
    assert release["spec"]["forProvider"]["chart"]["version"] == "0.9.0"
    job = _release("inference-extension-crds", inferenceExtension=Setting(version="v1.6.0"))
    manifest = job["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"]["name"] == "inference-extension-crds-v1-6-0"
    args = manifest["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-1].endswith("/v1.6.0/manifests.yaml")
    default = _release("inference-extension-crds")["spec"]["forProvider"]["manifest"]
    assert default["metadata"]["name"] == "inference-extension-crds-v1-5-0"


@pytest.mark.parametrize(
    ("settings", "want"),
    [
        pytest.param({}, "v1.8.3", id="pinned"),
        pytest.param({"envoyGateway": Setting(version="v1.8.1")}, "v1.8.1",
                     id="moves-with-envoy-gateway"),
        pytest.param({"envoyGateway": Setting(version="v1.8.1"),
                      "gatewayAPI": Setting(version="v1.8.2")}, "v1.8.2", id="its-own-wins"),
    ],
)  # fmt: skip
def test_crd_chart_follows_envoy_gateway(settings: dict[str, Setting], want: str) -> None:
    chart = _release("gateway-api-crds", **settings)["spec"]["forProvider"]["chart"]
    assert chart["version"] == want


def test_ai_gateway_charts_move_together() -> None:
    for key in ("ai-gateway-crds", "ai-gateway"):
        chart = _release(key, aiGateway=Setting(version="v1.0.1"))["spec"]["forProvider"]
        assert chart["chart"]["version"] == "v1.0.1", key
        assert chart["namespace"] == "envoy-ai-gateway-system", key


def test_crd_release_owns_envoy_gateways_crds_and_adopts_them_once() -> None:
    for_provider = _release("gateway-api-crds")["spec"]["forProvider"]
    assert for_provider["values"] == {
        "crds": {
            "envoyGateway": {"enabled": True},
            "gatewayAPI": {"channel": "standard", "enabled": True},
        }
    }
    assert for_provider["takeOwnership"] is True
    users = _release("gateway-api-crds", envoyGateway=Setting(False))["spec"]["forProvider"]
    assert users["values"]["crds"]["envoyGateway"] == {"enabled": False}, "not another's CRDs"
    envoy = _release("envoy-gateway")["spec"]["forProvider"]["values"]
    assert envoy["crds"] == {"enabled": False}, "one Release owns the CRDs"


def test_envoy_gateway_hands_inference_pools_to_the_ai_gateway() -> None:
    config = _release("envoy-gateway")["spec"]["forProvider"]["values"]["config"]["envoyGateway"]
    manager = config["extensionManager"]
    assert manager["backendResources"] == [
        {"group": "inference.networking.k8s.io", "kind": "InferencePool", "version": "v1"}
    ]
    assert manager["service"]["fqdn"] == {
        "hostname": "ai-gateway-controller.envoy-ai-gateway-system.svc.cluster.local",
        "port": 1063,
    }
    hooks = manager["hooks"]["xdsTranslator"]
    assert set(hooks["post"]) == {"Translation", "Cluster", "Route"}
    assert config["extensionApis"]["enableBackend"] is True
    alone = _release("envoy-gateway", aiGateway=Setting(False))["spec"]["forProvider"]["values"]
    assert "extensionManager" not in alone["config"]["envoyGateway"], (
        "an unreachable extension would stall every Gateway"
    )


def test_nfd_labels_tainted_gpu_nodes() -> None:
    values = _release("node-feature-discovery")["spec"]["forProvider"]["values"]
    assert {"effect": "NoSchedule", "operator": "Exists"} in values["worker"]["tolerations"]


def test_dra_driver_pods_run_under_a_critical_pod_quota() -> None:
    steps = _steps(stack.plan(_stack(Cloud.GKE)))
    namespace = steps["dra-driver-namespace"].resource["spec"]
    assert namespace["forProvider"]["manifest"]["metadata"]["name"] == "dra-driver-nvidia-gpu"
    assert "Delete" not in namespace["managementPolicies"]
    quota = steps["dra-driver-quota"].resource["spec"]["forProvider"]["manifest"]
    assert quota["kind"] == "ResourceQuota"
    assert quota["metadata"]["namespace"] == "dra-driver-nvidia-gpu"
    assert quota["spec"]["scopeSelector"]["matchExpressions"] == [
        {
            "operator": "In",
            "scopeName": "PriorityClass",
            "values": ["system-node-critical", "system-cluster-critical"],
        }
    ]
    assert int(quota["spec"]["hard"]["pods"]) >= 1000
    release = steps["dra-driver-nvidia-gpu"].resource["spec"]["forProvider"]
    assert release["namespace"] == "dra-driver-nvidia-gpu"


def test_prometheus_discovers_pod_monitors_everywhere() -> None:
    values = _release("prometheus")["spec"]["forProvider"]["values"]
    assert values["fullnameOverride"] == "prometheus", "its service is prometheus-prometheus"
    spec = values["prometheus"]["prometheusSpec"]
    assert spec["podMonitorSelectorNilUsesHelmValues"] is False
    assert spec["podMonitorNamespaceSelector"] == {}
    assert _release("prometheus")["spec"]["forProvider"]["namespace"] == "monitoring"


@pytest.mark.parametrize(
    ("cloud", "root"),
    [pytest.param(Cloud.GKE, "/home/kubernetes/bin/nvidia", id="gke"),
     pytest.param(Cloud.EKS, "/", id="eks")],
)  # fmt: skip
def test_dra_driver_finds_the_host_driver(cloud: Cloud, root: str) -> None:
    plan = _steps(stack.plan(_stack(cloud)))
    values = plan["dra-driver-nvidia-gpu"].resource["spec"]["forProvider"]["values"]
    assert values["nvidiaDriverRoot"] == root
    assert {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"} in values[
        "kubeletPlugin"
    ]["tolerations"]
    terms = values["kubeletPlugin"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    keys = {e["key"] for term in terms for e in term["matchExpressions"]}
    assert "feature.node.kubernetes.io/pci-10de.present" in keys, "found by NFD's PCI label"
    assert "modelplane.ai/pool" in keys
    assert values["gpuResourcesEnabledOverride"] is True
    assert values["resources"]["computeDomains"] == {"enabled": False}


def test_gateway_admits_routes_from_every_namespace() -> None:
    gateway = _steps(stack.plan(_stack()))["gateway"].resource
    manifest = gateway["spec"]["forProvider"]["manifest"]
    assert (manifest["metadata"]["name"], manifest["metadata"]["namespace"]) == (
        "modelplane",
        "modelplane-system",
    )
    assert manifest["spec"]["listeners"] == [
        {
            "allowedRoutes": {"namespaces": {"from": "All"}},
            "name": "http",
            "port": 80,
            "protocol": "HTTP",
        }
    ]
    assert "Programmed" in gateway["spec"]["readiness"]["celQuery"]


def test_gateway_takes_the_listeners_of_the_spec() -> None:
    listeners = (stack.Listener("web", 8080), stack.Listener("tls", 443, "HTTPS"))
    found = stack.Stack("s", "modelplane-system", Cloud.GKE, PC, listeners=listeners)
    manifest = _steps(stack.plan(found))["gateway"].resource["spec"]["forProvider"]["manifest"]
    web, tls = manifest["spec"]["listeners"]
    assert (web["name"], web["port"], web["protocol"]) == ("web", 8080, "HTTP")
    assert "tls" not in web
    assert tls["tls"] == {
        "certificateRefs": [{"group": "", "kind": "Secret", "name": "modelplane-gateway-tls"}],
        "mode": "Terminate",
    }
    assert all(lst["allowedRoutes"] == {"namespaces": {"from": "All"}} for lst in (web, tls))


def test_stack_builds_its_own_provider_configs_from_its_secrets() -> None:
    credentials = stack.Credentials(
        stack.SecretKey("west-kubeconfig", "kubeconfig"),
        "GoogleApplicationCredentials",
        stack.SecretKey("west-sa-key", "private_key"),
    )
    pc = stack.ProviderConfig("west", "ProviderConfig")
    found = stack.Stack("west", "platform", Cloud.GKE, pc, credentials=credentials)
    steps = _steps(stack.plan(found))
    configs = {k: steps[k].resource for k in ("provider-config-helm", "provider-config-kubernetes")}
    assert {c["apiVersion"] for c in configs.values()} == {
        "helm.m.crossplane.io/v1beta1",
        "kubernetes.m.crossplane.io/v1alpha1",
    }
    for config in configs.values():
        assert config["kind"] == "ProviderConfig"
        assert config["metadata"] == {
            "labels": {"app.kubernetes.io/managed-by": "modelplane"},
            "name": "west",
            "namespace": "platform",
        }
        assert config["spec"]["credentials"] == {
            "secretRef": {"key": "kubeconfig", "name": "west-kubeconfig", "namespace": "platform"},
            "source": "Secret",
        }
        assert config["spec"]["identity"]["type"] == "GoogleApplicationCredentials"
        assert config["spec"]["identity"]["secretRef"]["name"] == "west-sa-key"
    for step in steps.values():
        if step.resource["kind"] in ("Release", "Object"):
            assert step.resource["spec"]["providerConfigRef"] == {
                "kind": "ProviderConfig",
                "name": "west",
            }
    assert "provider-config-helm" not in _steps(stack.plan(_stack())), "only from Secrets"


def test_aks_storage_class_is_premium_azure_files() -> None:
    step = _steps(stack.plan(_stack(Cloud.AKS)))["storage-class"]
    manifest = step.resource["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"]["name"] == "modelplane-rwx-fs"
    assert manifest["provisioner"] == "file.csi.azure.com"
    assert manifest["parameters"]["skuName"] == "Premium_LRS"


def test_names_fit_and_differ_for_long_stack_names() -> None:
    long = stack.Stack("x" * 63, "modelplane-system", Cloud.AKS, PC)
    plan = stack.plan(long)
    names = [s.resource["metadata"]["name"] for s in plan]
    assert all(len(n) <= 63 for n in names)
    assert len(set(names)) == len(names)
    assert plan == stack.plan(long), "the same stack plans the same steps"


PLAN = stack.plan(_stack(Cloud.GKE))
ALL = {s.key for s in PLAN}
FIRST = {"namespace", "cert-manager", "gateway-api-crds", "ai-gateway-crds", "lws",
         "prometheus", "node-feature-discovery", "dra-driver-namespace"}  # fmt: skip


@pytest.mark.parametrize(
    ("observed", "composed"),
    [
        pytest.param({}, FIRST, id="nothing-yet"),
        pytest.param({"namespace": True}, FIRST | CRD_INSTALLER - {"inference-extension-crds"},
                     id="namespace-ready-brings-the-crd-rbac"),
        pytest.param(dict.fromkeys(FIRST | CRD_INSTALLER, True),
                     ALL - GATEWAY - {"ai-gateway", "dra-driver-nvidia-gpu"},
                     id="crds-ready-bring-envoy-and-the-quota"),
        pytest.param(dict.fromkeys(ALL - GATEWAY - {"ai-gateway"}, True), ALL - GATEWAY,
                     id="envoy-ready-brings-the-ai-gateway"),
        pytest.param(dict.fromkeys(ALL - GATEWAY, True), ALL, id="ai-gateway-brings-the-gateway"),
        pytest.param({"envoy-gateway": False, "namespace": False}, FIRST | {"envoy-gateway"},
                     id="composed-steps-are-kept"),
    ],
)  # fmt: skip
def test_gate(observed: dict[str, bool], composed: set[str]) -> None:
    progress = stack.gate(PLAN, observed)
    assert {s.key for s in progress.composed} == composed
    blocked = {s.key for s, _ in progress.blocked}
    assert blocked == ALL - composed
    assert not progress.ready


def test_gate_ready_only_when_every_step_is() -> None:
    assert stack.gate(PLAN, dict.fromkeys(ALL, True)).ready
    progress = stack.gate(PLAN, {**dict.fromkeys(ALL, True), "lws": False})
    assert not progress.ready
    assert progress.waiting() == ["LeaderWorkerSet 0.8.0 to become ready"]


def test_blocked_step_says_what_it_waits_for() -> None:
    progress = stack.gate(PLAN, {})
    envoy = next(why for s, why in progress.blocked if s.key == "envoy-gateway")
    assert envoy == (
        "the Gateway API and Envoy Gateway CRDs v1.8.3",
        f"the Inference Extension CRDs {stack.INFERENCE_EXTENSION_VERSION}",
    )
    driver = next(why for s, why in progress.blocked if s.key == "dra-driver-nvidia-gpu")
    assert driver == ("ResourceQuota dra-driver-nvidia-gpu/modelplane-critical-pods",)


@pytest.mark.parametrize(
    ("observed", "want"),
    [
        pytest.param(None, "", id="not-created"),
        pytest.param({"status": {}}, "", id="no-status"),
        pytest.param({"status": {"atProvider": {"manifest": {"status": {"addresses": []}}}}}, "",
                     id="no-address"),
        pytest.param({"status": {"atProvider": {"manifest": {"status": {"addresses": [
            {"type": "IPAddress", "value": "203.0.113.7"}, {"value": "198.51.100.1"}]}}}}},
            "203.0.113.7", id="first-address"),
    ],
)  # fmt: skip
def test_gateway_address(observed: Mapping[str, Any] | None, want: str) -> None:
    assert stack.gateway_address(observed) == want
