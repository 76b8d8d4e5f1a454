"""InferenceCluster domain: published pools and the cloud cluster's spec."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.domain import cluster

GPU = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 1}
L4_EKS: dict[str, Any] = {
    "devices": [GPU],
    "provisioning": {
        "provider": "EKS",
        "eks": {
            "instanceType": "g6.xlarge",
            "diskSizeGb": 100,
            "accelerator": {"type": "nvidia-l4", "count": 1},
        },
    },
}
BYO: dict[str, Any] = {"devices": [GPU]}


@pytest.mark.parametrize(
    ("pool", "want"),
    [
        pytest.param(cluster.Pool("p", "c", 2), 2, id="node-count"),
        pytest.param(
            cluster.Pool("p", "c", 0, max_node_count=1), 1, id="scale-from-zero-counts-max"
        ),
        pytest.param(
            cluster.Pool("p", "c", 3, min_node_count=1, max_node_count=3), 3, id="max-wins"
        ),
    ],
)
def test_schedulable_nodes(pool: cluster.Pool, want: int) -> None:
    assert cluster.schedulable_nodes(pool) == want


def test_gpu_pools_publish_class_devices_and_skip_missing_classes() -> None:
    pools = [cluster.Pool("gpu-l4", "l4", 1), cluster.Pool("gpu-x", "missing", 1)]
    published, problems = cluster.gpu_pools(pools, {"l4": L4_EKS})
    assert published == [{"name": "gpu-l4", "nodes": 1, "devices": [GPU]}]
    assert [(p.pool, p.reason) for p in problems] == [("gpu-x", "ClassNotFound")]
    assert str(problems[0]) == "pool gpu-x: InferenceClass missing not found"


@pytest.mark.parametrize(
    ("source", "classes", "want"),
    [
        pytest.param("EKS", {"c": L4_EKS}, [], id="matching-provider"),
        pytest.param("EKS", {"c": BYO}, ["NotProvisionable"], id="class-without-provisioning"),
        pytest.param("GKE", {"c": L4_EKS}, ["ProviderMismatch"], id="other-cloud"),
        pytest.param("EKS", {}, [], id="missing-class-reported-elsewhere"),
    ],
)
def test_provisioning_problems(source: str, classes: dict[str, Any], want: list[str]) -> None:
    problems = cluster.provisioning_problems(source, [cluster.Pool("p", "c", 1)], classes)
    assert [p.reason for p in problems] == want


def test_cloud_cluster_spec_carries_shape_zones_and_eks_extras() -> None:
    pool = cluster.Pool(
        "gpu-l4", "c", 1, max_node_count=4, zones=("us-east-1a",), extra={"fabric": {"type": "EFA"}}
    )
    spec = cluster.cloud_cluster_spec("EKS", {"region": "us-east-1"}, [pool], {"c": L4_EKS})
    assert spec == {
        "region": "us-east-1",
        "nodePools": [
            {
                "name": "gpu-l4",
                "role": "GPU",
                "nodeCount": 1,
                "minNodeCount": 1,
                "maxNodeCount": 4,
                "zones": ["us-east-1a"],
                "instanceType": "g6.xlarge",
                "diskSizeGb": 100,
                "gpu": {"acceleratorType": "nvidia-l4", "acceleratorCount": 1},
                "fabric": {"type": "EFA"},
            }
        ],
    }


def test_nebius_has_no_location_and_passes_its_presets() -> None:
    nebius = {
        "provisioning": {
            "provider": "Nebius",
            "nebius": {
                "platform": "gpu-h100-sxm",
                "preset": "1gpu-16vcpu-200gb",
                "driversPreset": "cuda13.0",
            },
        }
    }
    spec = cluster.cloud_cluster_spec(
        "Nebius", {}, [cluster.Pool("h100", "n", 0, max_node_count=1)], {"n": nebius}
    )
    assert "region" not in spec
    assert spec["nodePools"][0] == {
        "name": "h100",
        "role": "GPU",
        "nodeCount": 0,
        "minNodeCount": 0,
        "maxNodeCount": 1,
        "platform": "gpu-h100-sxm",
        "preset": "1gpu-16vcpu-200gb",
        "gpu": {"driversPreset": "cuda13.0"},
    }


def test_the_location_block_gives_the_version_and_the_credentials() -> None:
    location = {
        "region": "us-east-1",
        "kubernetesVersion": "1.36",
        "credentials": {"kind": "ProviderConfig", "name": "team-a"},
    }
    spec = cluster.cloud_cluster_spec("EKS", location, [cluster.Pool("p", "c", 1)], {"c": L4_EKS})
    assert spec["kubernetesVersion"] == "1.36"
    assert spec["credentials"] == {"kind": "ProviderConfig", "name": "team-a"}
    bare = cluster.cloud_cluster_spec(
        "EKS", {"region": "us-east-1"}, [cluster.Pool("p", "c", 1)], {"c": L4_EKS}
    )
    assert "kubernetesVersion" not in bare
    assert "credentials" not in bare


def _provisioning(source: str, **block: Any) -> dict[str, Any]:
    return {"provisioning": {"provider": source, source.lower(): block}}


@pytest.mark.parametrize(
    ("source", "block", "fabric", "want"),
    [
        pytest.param(
            "EKS", {"instanceType": "p5.48xlarge"}, {"type": "EFA"}, {"type": "EFA"}, id="eks-efa"
        ),
        pytest.param("EKS", {"instanceType": "p5.48xlarge"}, {"type": "None"}, None, id="eks-none"),
        pytest.param(
            "AKS",
            {"vmSize": "Standard_ND96isr_H100_v5"},
            {"type": "InfiniBand"},
            "InfiniBand",
            id="aks-a-string",
        ),
        pytest.param(
            "Nebius",
            {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"},
            {"type": "InfiniBand", "infiniband": {"fabric": "fabric-2"}},
            {"type": "InfiniBand", "infiniband": {"fabric": "fabric-2"}},
            id="nebius-with-its-fabric",
        ),
        pytest.param(
            "GKE", {"machineType": "a3-highgpu-8g"}, {"type": "None"}, None, id="gke-none"
        ),
    ],
)
def test_each_cloud_spells_the_fabric_its_own_way(
    source: str, block: dict[str, Any], fabric: dict[str, Any], want: Any
) -> None:
    pool = cluster.Pool("gpu", "c", 1, extra={"fabric": fabric})
    node_pool = cluster.cloud_node_pool(
        source, pool, _provisioning(source, **block)["provisioning"]
    )
    assert node_pool.get("fabric") == want


def test_only_eks_takes_a_capacity_block_and_vultr_no_disk() -> None:
    block = {"capacityBlock": {"capacityReservationId": "cr-1"}}
    eks = cluster.cloud_node_pool(
        "EKS", cluster.Pool("p", "c", 1, extra=block), {"eks": {"instanceType": "p5en.48xlarge"}}
    )
    assert eks["capacityBlock"] == {"capacityReservationId": "cr-1"}
    vultr = cluster.cloud_node_pool(
        "Vultr",
        cluster.Pool("p", "c", 1, zones=("ewr-1",)),
        {"vultr": {"plan": "vcg-l40s-16c-180g-48vram", "diskSizeGb": 100}},
    )
    assert "diskSizeGb" not in vultr
    assert "zones" not in vultr
