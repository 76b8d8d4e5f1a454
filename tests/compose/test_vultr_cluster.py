"""VultrCluster: the VKE cluster, its GPU pools once it has an id, its kubeconfig once Ready."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render

from tests.compose.test_aks_cluster import _composed_cloud_xr
from tests.requests import conditions, request

PLATFORM = render.ROOT / "examples/getting-started/build-the-platform/vultr/platform.yaml"
XR: dict[str, Any] = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "VultrCluster",
    "metadata": {"name": "vultr-ewr", "namespace": "modelplane-system"},
    "spec": {
        "region": "ewr",
        "nodePools": [{"name": "gpu-l40s", "nodeCount": 1, "plan": "vcg-l40s-16c-180g-48vram"}],
    },
}


def _cluster(ready: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    return {
        "apiVersion": "vke.vultr.m.upbound.io/v1beta1",
        "kind": "Kubernetes",
        "metadata": {"name": "vultr-ewr"},
        "status": status,
    }


@pytest.mark.parametrize(
    ("observed", "kubeconfig"),
    [
        pytest.param(None, False, id="nothing-observed"),
        pytest.param({"cluster": _cluster("False")}, False, id="not-ready"),
        pytest.param({"cluster": _cluster("True")}, True, id="ready"),
    ],
)
def test_pools_reference_the_cluster_and_the_kubeconfig_waits_for_readiness(
    observed: dict[str, Any] | None, kubeconfig: bool
) -> None:
    rsp = runtime.run(request(XR, observed=observed), registry.COMPOSERS)
    # A pool references the cluster: the provider attaches it once the cluster exists.
    gate = ["gpu-operator-validator", "kubernetes-provider-config"] if kubeconfig else []
    assert sorted(rsp.desired.resources) == sorted(["cluster", "pool-gpu-l40s", *gate])
    status = kit.struct_to_dict(rsp.desired.composite.resource).get("status", {})
    assert ("kubeconfigSecretRef" in status) is kubeconfig
    assert "cache" not in status  # no RWX storage on Vultr
    pool = kit.struct_to_dict(rsp.desired.resources["pool-gpu-l40s"].resource)
    assert pool["kind"] == "KubernetesNodePool"
    assert pool["spec"]["forProvider"]["clusterIdRef"] == {"name": "vultr-ewr"}
    assert conditions(rsp)["KubeconfigReady"][0] == ("True" if kubeconfig else "False")


def _validator(ready: str | None) -> dict[str, Any]:
    status = {"conditions": [{"type": "Ready", "status": ready}]} if ready else {}
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": "vultr-ewr-gpu-operator-validator"},
        "status": status,
    }


@pytest.mark.parametrize(
    ("validator", "want"),
    [
        pytest.param(None, ("False", "WaitingForCluster"), id="not-yet-observed"),
        pytest.param(_validator("False"), ("False", "Validating"), id="drivers-coming-up"),
        pytest.param(_validator("True"), ("True", "Available"), id="every-gpu-node-validated"),
    ],
)
def test_the_cluster_is_ready_only_once_the_gpu_operator_validates(
    validator: dict[str, Any] | None, want: tuple[str, str]
) -> None:
    observed = {"cluster": _cluster("True")}
    if validator is not None:
        observed["gpu-operator-validator"] = validator
    rsp = runtime.run(request(XR, observed=observed), registry.COMPOSERS)
    assert conditions(rsp)["GPUOperatorReady"][:2] == want
    gate = rsp.desired.resources["gpu-operator-validator"]
    # The Object is only as ready as the DaemonSet it observes, and so is the composite.
    assert (gate.ready == fnv1.READY_TRUE) is (want[0] == "True")
    manifest = kit.struct_to_dict(gate.resource)
    assert manifest["spec"]["managementPolicies"] == ["Observe"]
    assert manifest["spec"]["providerConfigRef"] == {
        "kind": "ProviderConfig",
        "name": "vultr-ewr-kubernetes",
    }


def test_the_gate_stays_while_the_cluster_flaps() -> None:
    observed = {"cluster": _cluster("False"), "gpu-operator-validator": _validator("True")}
    observed["kubernetes-provider-config"] = {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "ProviderConfig",
        "metadata": {"name": "vultr-ewr-kubernetes"},
    }
    rsp = runtime.run(request(XR, observed=observed), registry.COMPOSERS)
    assert {"gpu-operator-validator", "kubernetes-provider-config"} <= set(rsp.desired.resources)


def test_malformed_spec_is_a_fatal_result_not_a_crash() -> None:
    rsp = runtime.run(request({**XR, "spec": {"nodePools": []}}), registry.COMPOSERS)
    assert rsp.results[0].severity == fnv1.SEVERITY_FATAL


@pytest.mark.crank
def test_getting_started_vultr_cluster_renders(functions: render.Functions) -> None:
    xr = _composed_cloud_xr(functions, PLATFORM, "VultrCluster")
    out = render.render(xr, functions)
    kinds = sorted(d["kind"] for d in out[1:] if d.get("kind") != "Event")
    assert kinds == ["Kubernetes", "KubernetesNodePool"]
    cluster = next(d for d in out if d["kind"] == "Kubernetes")
    assert cluster["spec"]["forProvider"]["region"] == xr["spec"]["region"]
