"""The GKE cluster's managed resources: network, identity, cluster, node pools."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

import pytest
from modelplane.domain.clouds import common, gke

SYSTEM = common.SystemPool(machine_type="e2-standard-4", node_count=1, disk_size_gb=100)
L4 = common.GpuPool(
    name="gpu-l4",
    machine_type="g2-standard-8",
    node_count=1,
    min_node_count=1,
    max_node_count=4,
    zones=("us-central1-a", "us-central1-c"),
    disk_size_gb=200,
    accelerator_type="nvidia-l4",
    accelerator_count=1,
)


def _cluster(*pools: common.GpuPool, name: str = "gke-us-central") -> common.CloudCluster:
    return common.CloudCluster(
        name=name,
        namespace="modelplane-system",
        region="us-central1",
        version="1.35",
        provider_config=common.ProviderConfig("ClusterProviderConfig", "default"),
        system=SYSTEM,
        pools=pools or (L4,),
    )


def _for(manifest: dict[str, Any]) -> dict[str, Any]:
    return dict(manifest["spec"]["forProvider"])


def test_every_kind_is_composed() -> None:
    manifests = gke.resources(_cluster(L4, replace(L4, name="gpu-h100")))
    kinds = Counter((m["apiVersion"], m["kind"]) for m in manifests.values())
    assert kinds == {
        ("compute.gcp.m.upbound.io/v1beta1", "Network"): 1,
        ("compute.gcp.m.upbound.io/v1beta1", "Subnetwork"): 1,
        ("container.gcp.m.upbound.io/v1beta1", "Cluster"): 1,
        ("container.gcp.m.upbound.io/v1beta1", "NodePool"): 3,
        ("cloudplatform.gcp.m.upbound.io/v1beta1", "ServiceAccount"): 1,
        ("cloudplatform.gcp.m.upbound.io/v1beta1", "ServiceAccountKey"): 1,
        ("cloudplatform.gcp.m.upbound.io/v1beta1", "ProjectService"): 1,
    }
    for manifest in manifests.values():
        assert manifest["spec"]["providerConfigRef"] == {
            "kind": "ClusterProviderConfig",
            "name": "default",
        }


def test_the_cluster_is_regional_dra_ready_and_writes_its_kubeconfig() -> None:
    manifest = gke.resources(_cluster())["cluster"]
    cluster = _for(manifest)
    assert cluster["location"] == "us-central1"
    assert cluster["minMasterVersion"] == "1.35"
    assert cluster["removeDefaultNodePool"] is True
    assert cluster["deletionProtection"] is False
    assert cluster["releaseChannel"] == {"channel": "RAPID"}
    assert cluster["addonsConfig"]["gcpFilestoreCsiDriverConfig"] == {"enabled": True}
    assert cluster["networkSelector"] == common.selector("network")
    assert cluster["subnetworkSelector"] == common.selector("subnetwork")
    ranges = {
        r["rangeName"] for r in _for(gke.resources(_cluster())["subnetwork"])["secondaryIpRange"]
    }
    policy = cluster["ipAllocationPolicy"]
    assert {policy["clusterSecondaryRangeName"], policy["servicesSecondaryRangeName"]} == ranges
    assert manifest["spec"]["writeConnectionSecretToRef"] == {"name": "gke-us-central-kubeconfig"}


@dataclass(frozen=True)
class PoolCase:
    reason: str
    pool: common.GpuPool
    want_autoscaling: dict[str, Any]
    want_initial: int
    want_locations: list[str]


POOL_CASES = [
    PoolCase(
        "totals from the pool, one initial node per zone",
        L4,
        {"locationPolicy": "ANY", "totalMinNodeCount": 1, "totalMaxNodeCount": 4},
        1,
        ["us-central1-a", "us-central1-c"],
    ),
    PoolCase(
        "initial nodes spread over zones, rounded up",
        replace(L4, node_count=3, min_node_count=3, max_node_count=6),
        {"locationPolicy": "ANY", "totalMinNodeCount": 3, "totalMaxNodeCount": 6},
        2,
        ["us-central1-a", "us-central1-c"],
    ),
    PoolCase(
        "no zones: the cluster's first zone",
        replace(L4, zones=(), node_count=2, min_node_count=0, max_node_count=2),
        {"locationPolicy": "ANY", "totalMinNodeCount": 0, "totalMaxNodeCount": 2},
        2,
        ["us-central1-a"],
    ),
]


@pytest.mark.parametrize("case", POOL_CASES, ids=[c.reason for c in POOL_CASES])
def test_gpu_node_pools_are_shaped_labelled_tainted_and_scaled(case: PoolCase) -> None:
    pool = _for(gke.resources(_cluster(case.pool))[f"nodepool-{case.pool.name}"])
    assert pool["autoscaling"] == case.want_autoscaling
    assert pool["initialNodeCount"] == case.want_initial
    assert pool["nodeLocations"] == case.want_locations
    assert pool["clusterSelector"] == common.selector("cluster")
    config = pool["nodeConfig"]
    assert config["machineType"] == case.pool.machine_type
    assert config["diskSizeGb"] == case.pool.disk_size_gb
    assert config["labels"]["modelplane.ai/pool"] == case.pool.name
    assert config["taint"] == [
        {"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "present"}
    ]
    [accelerator] = config["guestAccelerator"]
    assert (accelerator["type"], accelerator["count"]) == ("nvidia-l4", 1)
    assert config["serviceAccountSelector"] == common.selector("service-account")


def test_the_system_pool_is_plain_and_in_one_zone() -> None:
    pool = _for(gke.resources(_cluster())["nodepool-system"])
    config = pool["nodeConfig"]
    assert "taint" not in config
    assert "guestAccelerator" not in config
    assert "modelplane.ai/pool" not in config["labels"]
    assert pool["nodeLocations"] == ["us-central1-a"]
    assert pool["initialNodeCount"] == 1
    assert config["machineType"] == "e2-standard-4"


def test_the_key_is_written_and_the_grant_waits_for_the_account_email() -> None:
    manifests = gke.resources(_cluster())
    assert "iam-container-admin" not in manifests
    key = manifests["service-account-key"]
    assert key["spec"]["writeConnectionSecretToRef"] == {"name": "gke-us-central-identity"}
    assert _for(key)["serviceAccountIdSelector"] == common.selector("service-account")
    grant = _for(
        gke.iam_member(_cluster(), "sa@p.iam.gserviceaccount.com", "p")["iam-container-admin"]
    )
    assert grant == {
        "member": "serviceAccount:sa@p.iam.gserviceaccount.com",
        "project": "p",
        "role": "roles/container.admin",
    }


@pytest.mark.parametrize("length", [1, 20, 40, 63], ids=lambda n: f"name of {n}")
def test_cloud_names_fit_gcp_limits_and_are_stable(length: int) -> None:
    name = "g" * length
    manifests = gke.resources(_cluster(L4, name=name))
    assert manifests == gke.resources(_cluster(L4, name=name))
    account = manifests["service-account"]["metadata"]["name"]
    assert 6 <= len(account) <= 30
    for key in ("cluster", "nodepool-system", "nodepool-gpu-l4"):
        assert len(manifests[key]["metadata"]["name"]) <= 40, key
    assert all(len(m["metadata"]["name"]) <= 63 for m in manifests.values())


def test_the_filestore_api_is_enabled_and_never_turned_off() -> None:
    api = _for(gke.resources(_cluster())["filestore-api"])
    assert api == {"disableOnDestroy": False, "service": "file.googleapis.com"}


def test_workload_identity_waits_for_the_project() -> None:
    without = gke.resources(_cluster())
    assert "workloadIdentityConfig" not in _for(without["cluster"])
    assert all(
        "workloadMetadataConfig" not in _for(m)["nodeConfig"]
        for m in without.values()
        if m["kind"] == "NodePool"
    )
    known = gke.resources(_cluster(), "my-project")
    assert _for(known["cluster"])["workloadIdentityConfig"] == {
        "workloadPool": "my-project.svc.id.goog"
    }
    pools = [_for(m)["nodeConfig"] for m in known.values() if m["kind"] == "NodePool"]
    assert len(pools) == 2
    assert all(p["workloadMetadataConfig"] == {"mode": "GKE_METADATA"} for p in pools)


def test_the_cache_class_is_filestore_on_the_cluster_network_reached_with_the_key() -> None:
    kubeconfig = common.kubeconfig_ref("gke-us-central-kubeconfig", "modelplane-system")
    out = gke.workload_resources(_cluster(), kubeconfig)
    assert sorted(out) == ["kubernetes-provider-config", "storage-class"]
    config = out["kubernetes-provider-config"]["spec"]
    assert config["credentials"]["secretRef"] == kubeconfig
    assert config["identity"] == {
        "type": "GoogleApplicationCredentials",
        "source": "Secret",
        "secretRef": {
            "name": "gke-us-central-identity",
            "namespace": "modelplane-system",
            "key": "private_key",
        },
    }
    manifest = out["storage-class"]["spec"]["forProvider"]["manifest"]
    network = gke.resources(_cluster())["network"]["metadata"]["name"]
    assert manifest["metadata"]["name"] == "modelplane-rwx-filestore"
    assert manifest["provisioner"] == "filestore.csi.storage.gke.io"
    assert manifest["parameters"] == {"network": network, "tier": "enterprise"}
