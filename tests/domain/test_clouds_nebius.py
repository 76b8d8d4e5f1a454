"""The Nebius mk8s cluster's managed resources: network, cluster, node groups, fabric, storage."""

from __future__ import annotations

import base64
import json
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
from modelplane.domain.clouds import common, nebius

SYSTEM = common.SystemPool(
    machine_type="cpu-d3", node_count=2, disk_size_gb=100, preset="8vcpu-32gb"
)
H100 = common.GpuPool(
    name="gpu-h100",
    machine_type="gpu-h100-sxm",
    preset="8gpu-128vcpu-1600gb",
    node_count=0,
    min_node_count=0,
    max_node_count=8,
    disk_size_gb=200,
    accelerator_type="nvidia-h100",
    drivers_preset="cuda13.0",
    fabric="InfiniBand",
    infiniband_fabric="fabric-2",
)
L40S = common.GpuPool(
    name="gpu-l40s",
    machine_type="gpu-l40s-a",
    preset="1gpu-8vcpu-32gb",
    node_count=1,
    min_node_count=1,
    max_node_count=1,
)


def _cluster(*pools: common.GpuPool) -> common.CloudCluster:
    return common.CloudCluster(
        name="nebius-eu-north",
        namespace="platform",
        region="",
        version="1.34",
        provider_config=common.ProviderConfig("ClusterProviderConfig", "eu-north"),
        system=SYSTEM,
        pools=pools or (H100,),
    )


def _for(manifest: dict[str, Any]) -> dict[str, Any]:
    return dict(manifest["spec"]["forProvider"])


def test_every_kind_is_composed() -> None:
    manifests = nebius.resources(_cluster(H100, L40S), 2048)
    kinds = Counter((m["apiVersion"], m["kind"]) for m in manifests.values())
    assert kinds == {
        ("vpc.nebius.m.upbound.io/v1beta1", "Pool"): 1,
        ("vpc.nebius.m.upbound.io/v1beta1", "Network"): 1,
        ("vpc.nebius.m.upbound.io/v1beta1", "Subnet"): 1,
        ("mk8s.nebius.m.upbound.io/v1beta1", "Cluster"): 1,
        ("mk8s.nebius.m.upbound.io/v1beta1", "NodeGroup"): 3,
        ("compute.nebius.m.upbound.io/v1beta1", "Filesystem"): 1,
        ("compute.nebius.m.upbound.io/v1beta1", "GpuCluster"): 1,  # only H100 joins a fabric
        ("v1", "Secret"): 1,  # the nodes' cloud-init
    }
    for manifest in manifests.values():
        if manifest["kind"] != "Secret":
            assert manifest["spec"]["providerConfigRef"] == {
                "kind": "ClusterProviderConfig",
                "name": "eu-north",
            }
            assert _for(manifest)["name"] == manifest["metadata"]["name"]  # Nebius' own name
            assert "parentId" not in _for(manifest)  # the provider config's project


def test_the_cluster_has_a_public_endpoint_ha_etcd_and_the_spec_s_version() -> None:
    plane = _for(nebius.resources(_cluster(), 2048)["cluster"])["controlPlane"]
    assert plane == {
        "endpoints": {"publicEndpoint": {}},
        "etcdClusterSize": 3,
        "subnetIdSelector": common.selector("subnet"),
        "version": "1.34",
    }
    default = replace(_cluster(), version=None)
    assert _for(nebius.resources(default, 2048)["cluster"])["controlPlane"]["version"] == "1.34"


def test_the_subnet_uses_the_network_s_private_pool() -> None:
    out = nebius.resources(_cluster(), 2048)
    assert _for(out["pool"])["cidrs"] == [{"cidr": "10.0.0.0/16"}]
    assert _for(out["network"])["ipv4PrivatePools"] == {
        "pools": [{"idSelector": common.selector("pool")}]
    }
    assert _for(out["subnet"])["ipv4PrivatePools"] == {"useNetworkPools": True}


def test_a_gpu_group_is_shaped_labelled_tainted_and_joins_its_fabric() -> None:
    out = nebius.resources(_cluster(), 2048)
    group = _for(out["nodegroup-gpu-h100"])
    template = group["template"]
    assert template["resources"] == {"platform": "gpu-h100-sxm", "preset": "8gpu-128vcpu-1600gb"}
    assert template["bootDisk"] == {"sizeGibibytes": 200, "type": "NETWORK_SSD"}
    assert template["gpuSettings"] == {"driversPreset": "cuda13.0"}
    assert template["metadata"]["labels"] == {"modelplane.ai/pool": "gpu-h100"}
    assert template["taints"] == [
        {"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "present"}
    ]
    assert template["gpuCluster"] == {"idSelector": common.selector("gpu-cluster-fabric-2")}
    assert _for(out["gpu-cluster-fabric-2"])["infinibandFabric"] == "fabric-2"
    assert group["autoscaling"] == {"maxNodeCount": 8, "minNodeCount": 0}
    assert "fixedNodeCount" not in group  # mk8s refuses both
    assert group["parentIdSelector"] == common.selector("cluster")


def test_a_fixed_group_has_a_fixed_count_and_no_fabric() -> None:
    group = _for(nebius.resources(_cluster(L40S), 2048)["nodegroup-gpu-l40s"])
    assert group["fixedNodeCount"] == 1
    assert "autoscaling" not in group
    assert "gpuCluster" not in group["template"]
    assert "gpuSettings" not in group["template"]


def test_pools_on_one_fabric_share_one_gpu_cluster() -> None:
    other = replace(H100, name="gpu-h100-b")
    third = replace(H100, name="gpu-h100-c", infiniband_fabric="fabric-3")
    assert nebius.fabrics(_cluster(H100, other, third, L40S)) == ["fabric-2", "fabric-3"]


def test_every_group_mounts_the_shared_filesystem_through_its_cloud_init() -> None:
    out = nebius.resources(_cluster(H100, L40S), 4096)
    assert _for(out["filesystem"])["sizeGibibytes"] == 4096
    groups = [_for(m)["template"] for m in out.values() if m["kind"] == "NodeGroup"]
    assert len(groups) == 3
    for template in groups:
        assert template["filesystems"] == [
            {
                "attachMode": "READ_WRITE",
                "existingFilesystem": {"idSelector": common.selector("filesystem")},
                "mountTag": nebius.MOUNT_TAG,
            }
        ]
        assert template["cloudInitUserDataSecretRef"] == {
            "key": "userData",
            "name": out["node-init"]["metadata"]["name"],
        }
    user_data = base64.b64decode(out["node-init"]["data"]["userData"]).decode()
    header, body = user_data.split("\n", 1)
    assert header == "#cloud-config"
    assert json.loads(body)["mounts"] == [
        [nebius.MOUNT_TAG, nebius.MOUNT_PATH, "virtiofs", "defaults,nofail", "0", "2"]
    ]
    system = _for(out["nodegroup-system"])
    assert system["fixedNodeCount"] == 2
    assert system["template"]["resources"] == {"platform": "cpu-d3", "preset": "8vcpu-32gb"}
    assert system["template"]["metadata"]["labels"] == {"modelplane.ai/system": "true"}


STATUS = {
    "atProvider": {
        "status": {
            "controlPlane": {
                "endpoints": {
                    "publicEndpoint": "pu.mk8scluster-e00abc.mk8s.eu-north1.nebius.cloud:443"
                },
                "auth": {
                    "clusterCaCertificate": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
                },
            }
        }
    }
}


@pytest.mark.parametrize(
    ("observed", "want"),
    [
        pytest.param(None, ("", ""), id="not-created"),
        pytest.param(
            {"status": {"atProvider": {"status": {}}}}, ("", ""), id="no-control-plane-yet"
        ),
        pytest.param({"status": {"atProvider": "garbage"}}, ("", ""), id="unreadable"),
    ],
)
def test_the_endpoint_waits_for_what_the_cluster_reports(observed: Any, want: Any) -> None:
    assert nebius.endpoint(observed) == want


def test_the_kubeconfig_carries_the_endpoint_and_ca_and_no_credentials() -> None:
    server, ca = nebius.endpoint({"status": STATUS})
    config = json.loads(nebius.kubeconfig(_cluster(), server, ca))
    (cluster,) = config["clusters"]
    assert cluster["cluster"]["server"] == f"https://{server}"
    assert base64.b64decode(cluster["cluster"]["certificate-authority-data"]).decode() == ca
    assert config["users"] == [{"name": "nebius-eu-north", "user": {}}]
    assert config["current-context"] == "nebius-eu-north"


CONFIG = {
    "apiVersion": "nebius.m.upbound.io/v1beta1",
    "kind": "ClusterProviderConfig",
    "metadata": {"name": "eu-north"},
    "spec": {
        "credentials": {
            "source": "Secret",
            "secretRef": {
                "name": "nebius-credentials",
                "namespace": "crossplane-system",
                "key": "credentials.json",
            },
        },
        "identity": {"type": "ServiceAccount"},
        "projectID": "project-e00abc",
    },
}


@pytest.mark.parametrize(
    ("config", "want"),
    [
        pytest.param(
            CONFIG,
            {
                "type": "NebiusServiceAccountCredentials",
                "name": "nebius-credentials",
                "namespace": "crossplane-system",
                "key": "credentials.json",
            },
            id="cluster-provider-config",
        ),
        pytest.param(
            {"spec": {"credentials": {"source": "Secret", "secretRef": {"name": "n", "key": "k"}}}},
            {
                "type": "NebiusServiceAccountCredentials",
                "name": "n",
                "namespace": "platform",
                "key": "k",
            },
            id="namespaced-provider-config",
        ),
        pytest.param(None, None, id="missing"),
        pytest.param(
            {"spec": {"credentials": {"source": "InjectedIdentity"}}}, None, id="no-secret"
        ),
    ],
)
def test_the_identity_is_the_provider_config_s_credentials(config: Any, want: Any) -> None:
    assert nebius.identity(config, "platform") == want


def test_access_pairs_the_kubeconfig_with_the_identity_for_the_storage_class() -> None:
    server, ca = nebius.endpoint({"status": STATUS})
    alone = nebius.access_resources(_cluster(), server, ca, None)
    assert sorted(alone) == ["kubeconfig"]  # the Secret needs no identity
    identity = nebius.identity(CONFIG, "platform")
    out = nebius.access_resources(_cluster(), server, ca, identity)
    assert sorted(out) == ["kubeconfig", "kubernetes-provider-config", "storage-class"]
    config = out["kubernetes-provider-config"]["spec"]
    assert config["credentials"]["secretRef"] == {
        "name": "nebius-eu-north-kubeconfig",
        "namespace": "platform",
        "key": "kubeconfig",
    }
    assert config["identity"]["type"] == "NebiusServiceAccountCredentials"
    manifest = out["storage-class"]["spec"]["forProvider"]["manifest"]
    assert (manifest["metadata"]["name"], manifest["provisioner"]) == (
        "modelplane-rwx-fs",
        "mounted-fs-path.csi.nebius.ai",
    )
