"""VultrCluster: the VKE cluster, its GPU pools once it has an id, its kubeconfig once Ready."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, server
from modelplane.compose import _kit as kit
from modelplane.dev import render

from tests.compose.test_aks_cluster import _composed_cloud_xr
from tests.requests import request

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


def _cluster(ready: str | None, cluster_id: str | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if ready is not None:
        status["conditions"] = [{"type": "Ready", "status": ready}]
    if cluster_id is not None:
        status["atProvider"] = {"id": cluster_id}
    return {
        "apiVersion": "x",
        "kind": "Kubernetes",
        "metadata": {"name": "vultr-ewr"},
        "status": status,
    }


@pytest.mark.parametrize(
    ("observed", "keys", "kubeconfig"),
    [
        pytest.param(None, ["cluster"], False, id="nothing-observed"),
        pytest.param(
            {"cluster": _cluster("False", "c-1")}, ["cluster", "pool-gpu-l40s"], False, id="has-id"
        ),
        pytest.param(
            {"cluster": _cluster("True", "c-1")}, ["cluster", "pool-gpu-l40s"], True, id="ready"
        ),
    ],
)
def test_pools_wait_for_the_id_and_the_kubeconfig_for_readiness(
    observed: dict[str, Any] | None, keys: list[str], kubeconfig: bool
) -> None:
    rsp = server.run(request(XR, observed=observed), registry.COMPOSERS)
    assert sorted(rsp.desired.resources) == keys
    status = kit.struct_to_dict(rsp.desired.composite.resource).get("status", {})
    assert ("kubeconfigSecretRef" in status) is kubeconfig
    assert "cache" not in status  # no RWX storage on Vultr
    if "pool-gpu-l40s" in keys:
        pool = kit.struct_to_dict(rsp.desired.resources["pool-gpu-l40s"].resource)
        assert pool["spec"]["forProvider"]["clusterId"] == "c-1"


def test_malformed_spec_is_a_fatal_result_not_a_crash() -> None:
    rsp = server.run(request({**XR, "spec": {"nodePools": []}}), registry.COMPOSERS)
    assert rsp.results[0].severity == fnv1.SEVERITY_FATAL


@pytest.mark.crank
def test_getting_started_vultr_cluster_renders(functions: render.Functions) -> None:
    xr = _composed_cloud_xr(functions, PLATFORM, "VultrCluster")
    out = render.render(xr, functions)
    kinds = sorted(d["kind"] for d in out[1:] if d.get("kind") != "Event")
    assert kinds == ["Kubernetes"]  # GPU pools wait for the cluster's id
    assert out[1]["spec"]["forProvider"]["region"] == xr["spec"]["region"]
