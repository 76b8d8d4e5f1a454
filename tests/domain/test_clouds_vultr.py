"""VultrCluster domain: the VKE cluster and its GPU node pools (provider-upjet-vultr)."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.compose import _clouds, vultr_cluster
from modelplane.dev.fakes.kubernetes import evaluate_query
from modelplane.domain.clouds import common, vultr

SPEC: dict[str, Any] = {
    "region": "ewr",
    "nodePools": [{"name": "gpu-l40s", "nodeCount": 1, "plan": "vcg-l40s-16c-180g-48vram"}],
}


def _cluster(**changes: Any) -> common.CloudCluster:
    xr = {"metadata": {"name": "vultr-ewr", "namespace": "ns"}, "spec": {**SPEC, **changes}}
    return _clouds.read_cluster(xr, xr["spec"], vultr_cluster.SHAPE)


def test_cluster_has_the_inline_system_pool_and_writes_its_kubeconfig() -> None:
    cluster = vultr.cluster(_cluster())
    assert (cluster["apiVersion"], cluster["kind"]) == (
        "vke.vultr.m.upbound.io/v1beta1",
        "Kubernetes",
    )
    for_provider = cluster["spec"]["forProvider"]
    assert (for_provider["label"], for_provider["region"]) == ("vultr-ewr", "ewr")
    assert for_provider["nodePools"] == {  # one object: the provider's inline pool
        "label": "system",
        "labels": [{"key": "modelplane.ai/system", "value": "true"}],
        "nodeQuantity": 1,
        "plan": "vc2-4c-8gb",
    }
    assert cluster["spec"]["writeConnectionSecretToRef"] == {"name": "vultr-ewr-kubeconfig"}
    assert cluster["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "default",
    }


def test_a_declared_system_pool_is_the_inline_pool() -> None:
    system = {"name": "workers", "role": "System", "plan": "vc2-6c-16gb", "nodeCount": 2}
    out = vultr.resources(_cluster(nodePools=[system, *SPEC["nodePools"]]))
    inline = out["cluster"]["spec"]["forProvider"]["nodePools"]
    assert (inline["label"], inline["plan"], inline["nodeQuantity"]) == (
        "workers",
        "vc2-6c-16gb",
        2,
    )
    assert sorted(out) == ["cluster", "pool-gpu-l40s"]


@pytest.mark.parametrize(
    ("version", "want"),
    [
        pytest.param(None, vultr.DEFAULT_VERSION, id="default"),
        pytest.param("1.35", "v1.35.0+1", id="minor"),
        pytest.param("v1.36.1+3", "v1.36.1+3", id="a-build-as-given"),
        pytest.param("1.36.1+3", "v1.36.1+3", id="a-build-without-v"),
    ],
)
def test_vke_version(version: str | None, want: str) -> None:
    assert vultr.vke_version(version) == want
    if version is not None:
        cluster = vultr.cluster(_cluster(kubernetesVersion=version))
        assert cluster["spec"]["forProvider"]["version"] == want


def test_gpu_pools_reference_the_cluster_and_are_labelled_and_tainted() -> None:
    out = vultr.resources(_cluster())
    assert sorted(out) == ["cluster", "pool-gpu-l40s"]
    pool = out["pool-gpu-l40s"]
    assert (pool["kind"], pool["metadata"]["name"]) == ("KubernetesNodePool", "vultr-ewr-gpu-l40s")
    for_provider = pool["spec"]["forProvider"]
    assert for_provider["clusterIdRef"] == {"name": out["cluster"]["metadata"]["name"]}
    assert for_provider["labels"] == [{"key": "modelplane.ai/pool", "value": "gpu-l40s"}]
    assert for_provider["taints"] == [
        {"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "present"}
    ]


@pytest.mark.parametrize(
    ("pool", "want", "init"),
    [
        pytest.param({"nodeCount": 2}, {"nodeQuantity": 2}, None, id="fixed-size"),
        pytest.param(
            {"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 3},
            {"autoScaler": True, "minNodes": 1, "maxNodes": 3},
            {"nodeQuantity": 1},
            id="autoscaled",
        ),
        pytest.param(
            {"nodeCount": 0, "maxNodeCount": 2},
            {"autoScaler": True, "minNodes": 0, "maxNodes": 2},
            {"nodeQuantity": 0},
            id="scale-from-zero",
        ),
    ],
)
def test_gpu_pool_scaling(
    pool: dict[str, Any], want: dict[str, Any], init: dict[str, Any] | None
) -> None:
    raw = {"name": "gpu", "plan": "vcg-a100-1c-6g-4vram", **pool}
    spec = vultr.resources(_cluster(nodePools=[raw]))["pool-gpu"]["spec"]
    keys = ("nodeQuantity", "autoScaler", "minNodes", "maxNodes")
    assert {k: spec["forProvider"][k] for k in keys if k in spec["forProvider"]} == want
    assert spec.get("initProvider") == init  # VKE's autoscaler owns the count once created


@pytest.mark.parametrize(
    ("ready", "want"),
    [
        pytest.param(False, {}, id="not-ready"),
        pytest.param(
            True,
            {
                "kubeconfigSecretRef": {
                    "key": "kubeconfig",
                    "name": "vultr-ewr-kubeconfig",
                    "namespace": "ns",
                }
            },
            id="ready-has-no-cache",
        ),
    ],
)
def test_status(ready: bool, want: dict[str, Any]) -> None:
    assert vultr.status(_cluster(), ready) == want


def test_the_control_plane_is_highly_available_from_creation() -> None:
    cluster = vultr.cluster(_cluster())
    # VKE chooses HA at creation only: an existing cluster is never replaced for it.
    assert cluster["spec"]["initProvider"] == {"haControlplanes": True}
    assert "haControlplanes" not in cluster["spec"]["forProvider"]


def test_the_gpu_operator_gate_observes_the_validator_daemonset() -> None:
    out = vultr.workload_resources(_cluster())
    assert sorted(out) == ["gpu-operator-validator", "kubernetes-provider-config"]
    config = out["kubernetes-provider-config"]
    assert config["metadata"]["name"] == "vultr-ewr-kubernetes"
    assert config["spec"]["credentials"]["secretRef"] == {
        "name": "vultr-ewr-kubeconfig",
        "namespace": "ns",
        "key": "kubeconfig",
    }
    gate = out["gpu-operator-validator"]["spec"]
    assert gate["managementPolicies"] == ["Observe"], "VKE owns the operator: never write it"
    assert gate["forProvider"]["manifest"] == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-operator-validator", "namespace": "gpu-operator"},
    }
    assert gate["readiness"]["policy"] == "DeriveFromCelQuery"


@pytest.mark.parametrize(
    ("node_count", "status", "ready"),
    [
        pytest.param(1, {"desiredNumberScheduled": 2, "numberReady": 2}, True, id="all-ready"),
        pytest.param(1, {"desiredNumberScheduled": 2, "numberReady": 1}, False, id="one-pending"),
        pytest.param(1, {"desiredNumberScheduled": 0, "numberReady": 0}, False, id="not-there"),
        pytest.param(0, {"desiredNumberScheduled": 0, "numberReady": 0}, True, id="from-zero"),
        pytest.param(1, {}, False, id="no-status"),
    ],
)
def test_the_gate_query(node_count: int, status: dict[str, int], ready: bool) -> None:
    pools = [{"name": "gpu-l40s", "nodeCount": node_count, "plan": "vcg-l40s-16c-180g-48vram"}]
    query = vultr.validator_ready_query(_cluster(nodePools=pools))
    assert evaluate_query(query, {"status": status}) is ready


def test_no_gpu_pool_no_gate() -> None:
    system = {"name": "workers", "role": "System", "plan": "vc2-6c-16gb", "nodeCount": 2}
    assert sorted(vultr.workload_resources(_cluster(nodePools=[system]))) == [
        "kubernetes-provider-config"
    ]
