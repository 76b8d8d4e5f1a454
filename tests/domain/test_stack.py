"""ServingStack plan: components per cloud and setting, their order, and the step gate."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from modelplane.domain import stack
from modelplane.domain.stack import Cloud, Component, Setting

PC = stack.ProviderConfig("eks-us-east")
RELEASES = {
    "cert-manager",
    "gateway-api-crds",
    "envoy-gateway",
    "lws",
    "prometheus",
    "nvidia-dra-driver-gpu",
}
CRD_INSTALLER = {
    "crd-installer-serviceaccount",
    "crd-installer-clusterrole",
    "crd-installer-clusterrolebinding",
    "inference-extension-crds",
}
GATEWAY = {"envoy-proxy", "gateway-class", "gateway"}
BASE = {"namespace"} | RELEASES | CRD_INSTALLER | GATEWAY


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
        pytest.param(Cloud.NEBIUS, BASE, id="nebius"),
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
        pytest.param("gatewayAPI", {"gateway-api-crds"}, id="gateway-api"),
        pytest.param("inferenceExtension", CRD_INSTALLER, id="inference-extension"),
        pytest.param("envoyGateway", {"envoy-gateway"}, id="envoy-gateway"),
        pytest.param("leaderWorkerSet", {"lws"}, id="lws"),
        pytest.param("prometheus", {"prometheus"}, id="prometheus"),
        pytest.param("nvidiaDRADriver", {"nvidia-dra-driver-gpu"}, id="dra-driver"),
        pytest.param("dranet", {"aws-dranet"}, id="dranet"),
    ],
)
def test_disabled_component_is_not_installed(off: str, gone: set[str]) -> None:
    plan = _steps(stack.plan(_stack(**{off: Setting(enabled=False)})))
    assert set(plan) == (BASE | {"aws-dranet"}) - gone


@pytest.mark.parametrize(
    ("settings", "key", "needs"),
    [
        pytest.param({}, "envoy-gateway", {"gateway-api-crds", "inference-extension-crds"},
                     id="envoy-after-both-crds"),
        pytest.param({"gatewayAPI": Setting(False)}, "envoy-gateway",
                     {"inference-extension-crds"}, id="envoy-without-gateway-api"),
        pytest.param({"gatewayAPI": Setting(False), "inferenceExtension": Setting(False)},
                     "envoy-gateway", set(), id="envoy-alone"),
        pytest.param({}, "gateway", {"namespace", "envoy-gateway"}, id="gateway-after-envoy"),
        pytest.param({"envoyGateway": Setting(False)}, "gateway",
                     {"namespace", "gateway-api-crds"}, id="gateway-on-users-envoy"),
        pytest.param({}, "inference-extension-crds", {"namespace"} | CRD_INSTALLER
                     - {"inference-extension-crds"}, id="crd-job-after-its-rbac"),
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
        "version": stack.CHARTS[Component.ENVOY_GATEWAY].version,
    }
    assert release["spec"]["forProvider"]["namespace"] == "envoy-gateway-system"


def test_version_overrides_the_pin() -> None:
    release = _release("lws", leaderWorkerSet=Setting(version="0.9.0"))
    assert release["spec"]["forProvider"]["chart"]["version"] == "0.9.0"
    job = _release("inference-extension-crds", inferenceExtension=Setting(version="v1.5.0"))
    manifest = job["spec"]["forProvider"]["manifest"]
    assert manifest["metadata"]["name"] == "inference-extension-crds-v1-5-0"
    args = manifest["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[-1].endswith("/v1.5.0/manifests.yaml")


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
    values = plan["nvidia-dra-driver-gpu"].resource["spec"]["forProvider"]["values"]
    assert values["nvidiaDriverRoot"] == root
    assert {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"} in values[
        "kubeletPlugin"
    ]["tolerations"]


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
FIRST = {"namespace", "cert-manager", "gateway-api-crds", "lws", "prometheus",
         "nvidia-dra-driver-gpu"}  # fmt: skip


@pytest.mark.parametrize(
    ("observed", "composed"),
    [
        pytest.param({}, FIRST, id="nothing-yet"),
        pytest.param({"namespace": True}, FIRST | CRD_INSTALLER - {"inference-extension-crds"},
                     id="namespace-ready-brings-the-crd-rbac"),
        pytest.param(dict.fromkeys(FIRST | CRD_INSTALLER, True), ALL - GATEWAY,
                     id="crds-ready-bring-envoy"),
        pytest.param(dict.fromkeys(ALL - GATEWAY, True), ALL, id="envoy-ready-brings-the-gateway"),
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
    assert progress.waiting() == [
        f"LeaderWorkerSet {stack.CHARTS[Component.LEADER_WORKER_SET].version} to become ready"
    ]


def test_blocked_step_says_what_it_waits_for() -> None:
    progress = stack.gate(PLAN, {})
    envoy = next(why for s, why in progress.blocked if s.key == "envoy-gateway")
    assert envoy == (
        f"the Gateway API CRDs {stack.CHARTS[Component.GATEWAY_API].version}",
        f"the Inference Extension CRDs {stack.INFERENCE_EXTENSION_VERSION}",
    )


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
