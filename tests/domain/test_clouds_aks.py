"""AKSCluster domain: the azure managed resources of one AKS cluster."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.compose import _clouds, aks_cluster
from modelplane.domain.clouds import aks, common

SPEC: dict[str, Any] = {
    "location": "westeurope",
    "nodePools": [
        {"name": "gpua10", "nodeCount": 1, "vmSize": "Standard_NV36ads_A10_v5", "diskSizeGb": 100}
    ],
}


def _cluster(name: str = "aks-westeurope", **changes: Any) -> common.CloudCluster:
    xr = {"metadata": {"name": name, "namespace": "modelplane-system"}, "spec": {**SPEC, **changes}}
    return _clouds.read_cluster(xr, xr["spec"], aks_cluster.SHAPE)


def _resources(**changes: Any) -> dict[str, dict[str, Any]]:
    return aks.resources(_cluster(**changes))


def test_composes_the_network_the_cluster_and_one_pool_per_gpu_pool() -> None:
    out = _resources()
    assert {k: v["kind"] for k, v in out.items()} == {
        "resource-group": "ResourceGroup",
        "virtual-network": "VirtualNetwork",
        "subnet": "Subnet",
        "cluster": "KubernetesCluster",
        "pool-gpua10": "KubernetesClusterNodePool",
    }
    assert all(m["metadata"]["namespace"] == "modelplane-system" for m in out.values())
    assert all(
        m["spec"]["forProvider"].get("location", "westeurope") == "westeurope" for m in out.values()
    )


def test_cluster_keeps_its_local_account_and_writes_its_kubeconfig() -> None:
    cluster = _resources()["cluster"]["spec"]
    assert cluster["forProvider"]["identity"] == {"type": "SystemAssigned"}
    assert cluster["forProvider"]["localAccountDisabled"] is False
    assert cluster["writeConnectionSecretToRef"] == {"name": "aks-westeurope-kubeconfig"}
    system = cluster["forProvider"]["defaultNodePool"]
    assert (system["name"], system["vmSize"], system["nodeCount"]) == (
        aks.SYSTEM_POOL,
        "Standard_D4s_v5",
        1,
    )
    assert system["vnetSubnetIdRef"] == {"name": "aks-westeurope"}


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        pytest.param({}, {}, id="defaults-omit-version"),
        pytest.param({"kubernetesVersion": "1.34"}, {"kubernetesVersion": "1.34"}, id="version"),
    ],
)
def test_cluster_version(spec: dict[str, Any], want: dict[str, Any]) -> None:
    for_provider = _resources(**spec)["cluster"]["spec"]["forProvider"]
    assert {k: v for k, v in for_provider.items() if k == "kubernetesVersion"} == want


@pytest.mark.parametrize(
    ("pool", "want", "init"),
    [
        pytest.param({"nodeCount": 2}, {"nodeCount": 2}, None, id="fixed-size"),
        pytest.param(
            {"nodeCount": 2, "minNodeCount": 2, "maxNodeCount": 2},
            {"nodeCount": 2},
            None,
            id="floor-is-ceiling",
        ),
        pytest.param(
            {"nodeCount": 1, "minNodeCount": 1, "maxNodeCount": 4},
            {"autoScalingEnabled": True, "minCount": 1, "maxCount": 4},
            {"nodeCount": 1},
            id="autoscaled",
        ),
        pytest.param(
            {"nodeCount": 0, "maxNodeCount": 2},
            {"autoScalingEnabled": True, "minCount": 0, "maxCount": 2},
            {"nodeCount": 0},
            id="scale-from-zero",
        ),
    ],
)
def test_gpu_pool_scaling(
    pool: dict[str, Any], want: dict[str, Any], init: dict[str, Any] | None
) -> None:
    raw = {"name": "gpuh100", "vmSize": "Standard_ND96isr_H100_v5", **pool}
    spec = _resources(nodePools=[raw])["pool-gpuh100"]["spec"]
    keys = ("nodeCount", "autoScalingEnabled", "minCount", "maxCount")
    assert {k: spec["forProvider"][k] for k in keys if k in spec["forProvider"]} == want
    assert spec.get("initProvider") == init  # the autoscaler owns the count once created


def test_gpu_pool_is_labelled_tainted_and_named_after_the_pool() -> None:
    pool = _resources()["pool-gpua10"]
    for_provider = pool["spec"]["forProvider"]
    assert for_provider["nodeLabels"] == {"modelplane.ai/pool": "gpua10"}
    assert for_provider["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert (for_provider["vmSize"], for_provider["osDiskSizeGb"]) == (
        "Standard_NV36ads_A10_v5",
        100,
    )
    assert for_provider["kubernetesClusterIdRef"] == {"name": "aks-westeurope"}
    assert pool["metadata"]["annotations"] == {"crossplane.io/external-name": "gpua10"}


def test_a_declared_system_pool_is_the_default_node_pool() -> None:
    system = {"name": "system", "role": "System", "vmSize": "Standard_D8s_v5", "nodeCount": 2}
    out = _resources(nodePools=[system, *SPEC["nodePools"]])
    default = out["cluster"]["spec"]["forProvider"]["defaultNodePool"]
    assert (default["name"], default["vmSize"], default["nodeCount"]) == (
        "system",
        "Standard_D8s_v5",
        2,
    )
    assert default["nodeLabels"] == {"modelplane.ai/system": "true"}
    assert sorted(k for k in out if k.startswith("pool-")) == ["pool-gpua10"]


def test_an_infiniband_pool_is_labelled_with_its_fabric() -> None:
    raw = {**SPEC["nodePools"][0], "fabric": "InfiniBand"}
    labels = _resources(nodePools=[raw])["pool-gpua10"]["spec"]["forProvider"]["nodeLabels"]
    assert labels == {"modelplane.ai/pool": "gpua10", "modelplane.ai/fabric": "infiniband"}


def test_credentials_select_the_provider_config() -> None:
    creds = {"kind": "ProviderConfig", "name": "team-a"}
    out = _resources(credentials=creds)
    assert {m["spec"]["providerConfigRef"]["name"] for m in out.values()} == {"team-a"}


@pytest.mark.parametrize(
    ("ready", "want"),
    [
        pytest.param(False, None, id="not-ready"),
        pytest.param(
            True,
            {"key": "kubeconfig", "name": "aks-westeurope-kubeconfig", "namespace": "ns"},
            id="ready",
        ),
    ],
)
def test_status_reports_the_kubeconfig_once_ready(ready: bool, want: Any) -> None:
    cluster = _cluster()
    status = aks.status(cluster, ready)
    if want is not None:
        want = {**want, "namespace": cluster.namespace}
    assert status.get("kubeconfigSecretRef") == want
    assert status["cache"] == {"storageClassName": "modelplane-rwx-fs"}


@pytest.mark.parametrize(
    ("parent", "suffix"),
    [
        pytest.param("short", "pool", id="short"),
        pytest.param("x" * 60, "gpu-pool", id="long"),
        pytest.param("a-" * 30, "b", id="long-dashes"),
    ],
)
def test_child_names_are_valid_and_stable(parent: str, suffix: str) -> None:
    name = common.resource_name(parent, suffix)
    assert len(name) <= 63
    assert not name.endswith("-")
    assert name == common.resource_name(parent, suffix)
    if len(f"{parent}-{suffix}") <= 63:
        assert name == f"{parent}-{suffix}"
    else:
        assert name != common.resource_name(parent, suffix + "x")
