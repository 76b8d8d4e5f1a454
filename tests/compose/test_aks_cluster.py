"""AKSCluster: the azure managed resources, and the kubeconfig Secret once the cluster is Ready."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime
from modelplane.dev import render

from tests.requests import request

PLATFORM = render.ROOT / "examples/getting-started/build-the-platform/aks/platform.yaml"
XR: dict[str, Any] = {
    "apiVersion": "infrastructure.modelplane.ai/v1alpha1",
    "kind": "AKSCluster",
    "metadata": {"name": "aks-westeurope", "namespace": "modelplane-system"},
    "spec": {
        "location": "westeurope",
        "nodePools": [{"name": "gpua10", "nodeCount": 1, "vmSize": "Standard_NV36ads_A10_v5"}],
    },
}


def _run(
    observed: dict[str, Any] | None = None, xr: dict[str, Any] = XR
) -> fnv1.RunFunctionResponse:
    return runtime.run(request(xr, observed=observed), registry.COMPOSERS)


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def _cluster(ready: str) -> dict[str, Any]:
    return {
        "apiVersion": "containerservice.azure.m.upbound.io/v1beta1",
        "kind": "KubernetesCluster",
        "metadata": {"name": "aks-westeurope"},
        "status": {"conditions": [{"type": "Ready", "status": ready}]},
    }


@pytest.mark.parametrize(
    ("observed", "want"),
    [
        pytest.param(None, None, id="nothing-observed"),
        pytest.param({"cluster": _cluster("False")}, None, id="cluster-not-ready"),
        pytest.param(
            {"cluster": _cluster("True")},
            {
                "key": "kubeconfig",
                "name": "aks-westeurope-kubeconfig",
                "namespace": "modelplane-system",
            },
            id="cluster-ready",
        ),
    ],
)
def test_kubeconfig_secret_appears_once_the_cluster_is_ready(
    observed: dict[str, Any] | None, want: dict[str, Any] | None
) -> None:
    rsp = _run(observed)
    assert sorted(rsp.desired.resources) == [
        "cluster",
        "pool-gpua10",
        "resource-group",
        "subnet",
        "virtual-network",
    ]
    status = _status(rsp)
    assert status.get("kubeconfigSecretRef") == want
    assert status["cache"] == {"storageClassName": "modelplane-rwx-fs"}


def test_same_request_same_response() -> None:
    assert _run().SerializeToString(deterministic=True) == _run().SerializeToString(
        deterministic=True
    )


def test_malformed_spec_is_a_fatal_result_not_a_crash() -> None:
    rsp = _run(xr={**XR, "spec": {"nodePools": []}})
    assert rsp.results[0].severity == fnv1.SEVERITY_FATAL
    assert len(rsp.desired.resources) == 0


def _composed_cloud_xr(functions: render.Functions, path: Path, kind: str) -> dict[str, Any]:
    docs = render.load_documents(path)
    ic = next(d for d in docs if d["kind"] == "InferenceCluster")
    out = render.render(ic, functions, required=docs)
    return next(d for d in out if d.get("kind") == kind)


@pytest.mark.crank
def test_getting_started_aks_cluster_renders(functions: render.Functions) -> None:
    xr = _composed_cloud_xr(functions, PLATFORM, "AKSCluster")
    out = render.render(xr, functions)
    kinds = sorted(d["kind"] for d in out[1:] if d.get("kind") != "Event")
    assert kinds == [
        "KubernetesCluster",
        "KubernetesClusterNodePool",
        "ResourceGroup",
        "Subnet",
        "VirtualNetwork",
    ]
    pool = next(d for d in out if d.get("kind") == "KubernetesClusterNodePool")
    assert pool["spec"]["forProvider"]["vmSize"] == "Standard_NV36ads_A10_v5"
    assert "kubeconfigSecretRef" not in out[0].get("status", {})


def test_a_pool_the_spec_no_longer_names_is_released_quietly() -> None:
    """The cloud adapters release what their spec no longer names (kit.left_out)."""
    removed = {"apiVersion": "containerservice.azure.m.upbound.io/v1beta1", "kind": "X"}
    rsp = _run({"cluster": _cluster("True"), "pool-gpuold": removed})
    assert "pool-gpuold" not in rsp.desired.resources
    assert {"cluster", "pool-gpua10"} <= set(rsp.desired.resources)
    assert not [r for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]


def test_a_bad_edit_keeps_every_pool_composed_before() -> None:
    """A malformed spec is answered Fatal, naming the field: Crossplane applies nothing."""
    bad = {**XR, "spec": {**XR["spec"], "nodePools": [{"name": "gpua10", "role": "System"}] * 2}}
    rsp = _run({"cluster": _cluster("True"), "pool-gpua10": {"kind": "X"}}, xr=bad)
    assert kit.is_fatal(rsp)
    assert "spec.nodePools[0].vmSize: Field required" in rsp.results[0].message
    assert len(rsp.desired.resources) == 0
