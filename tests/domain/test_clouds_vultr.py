"""VultrCluster domain: the VKE cluster and its GPU node pools."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.domain.clouds import vultr

SPEC: dict[str, Any] = {
    "region": "ewr",
    "nodePools": [{"name": "gpu-l40s", "nodeCount": 1, "plan": "vcg-l40s-16c-180g-48vram"}],
}


def test_cluster_has_the_inline_system_pool_and_writes_its_kubeconfig() -> None:
    cluster = vultr.cluster("vultr-ewr", "modelplane-system", SPEC)
    assert (cluster["apiVersion"], cluster["kind"]) == (
        "kubernetes.vultr.m.upbound.io/v1alpha1",
        "Kubernetes",
    )
    for_provider = cluster["spec"]["forProvider"]
    assert (for_provider["label"], for_provider["region"]) == ("vultr-ewr", "ewr")
    assert for_provider["nodePools"] == [
        {
            "label": "system",
            "nodeQuantity": 1,
            "plan": "vc2-4c-8gb",
        }
    ]
    assert cluster["spec"]["writeConnectionSecretToRef"] == {"name": "vultr-ewr-kubeconfig"}


@pytest.mark.parametrize(
    ("version", "want"),
    [
        pytest.param(None, vultr.DEFAULT_VERSION, id="default"),
        pytest.param("1.32", "v1.32.0+1", id="minor"),
    ],
)
def test_vke_version(version: str | None, want: str) -> None:
    assert vultr.vke_version(version) == want


def test_gpu_pools_wait_for_the_cluster_id() -> None:
    assert sorted(vultr.resources("vultr-ewr", "ns", SPEC, None)) == ["cluster"]
    out = vultr.resources("vultr-ewr", "ns", SPEC, "c-123")
    assert sorted(out) == ["cluster", "pool-gpu-l40s"]
    pool = out["pool-gpu-l40s"]
    assert (pool["kind"], pool["metadata"]["name"]) == ("NodePools", "vultr-ewr-gpu-l40s")
    for_provider = pool["spec"]["forProvider"]
    assert for_provider["clusterId"] == "c-123"
    assert for_provider["labels"] == {"modelplane.ai/pool": "gpu-l40s"}
    assert for_provider["taints"] == [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}
    ]


@pytest.mark.parametrize(
    ("pool", "want"),
    [
        pytest.param({"nodeCount": 2}, {"nodeQuantity": 2}, id="fixed-size"),
        pytest.param(
            {"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3},
            {"nodeQuantity": 1, "autoScaler": True, "minNodes": 1, "maxNodes": 3},
            id="autoscaled",
        ),
        pytest.param(
            {"nodeCount": 0, "maxNodeCount": 2},
            {"nodeQuantity": 0, "autoScaler": True, "minNodes": 0, "maxNodes": 2},
            id="scale-from-zero",
        ),
    ],
)
def test_gpu_pool_scaling(pool: dict[str, Any], want: dict[str, Any]) -> None:
    raw = {"name": "gpu", "plan": "vcg-a100-1c-6g-4vram", **pool}
    for_provider = vultr.node_pool("c", "ns", "id", raw, SPEC)["spec"]["forProvider"]
    keys = ("nodeQuantity", "autoScaler", "minNodes", "maxNodes")
    assert {k: for_provider[k] for k in keys if k in for_provider} == want


@pytest.mark.parametrize(
    ("ready", "want"),
    [
        pytest.param(False, {}, id="not-ready"),
        pytest.param(
            True,
            {
                "kubeconfigSecretRef": {
                    "key": vultr.KUBECONFIG_KEY,
                    "name": "v-kubeconfig",
                    "namespace": "ns",
                }
            },
            id="ready-has-no-cache",
        ),
    ],
)
def test_status(ready: bool, want: dict[str, Any]) -> None:
    assert vultr.status("v", "ns", ready) == want
