"""AKSCluster: the provider-upjet-azure managed resources of one AKS cluster.

A resource group, a virtual network and subnet, the cluster (system-assigned identity,
local account kept so its kubeconfig embeds a cluster-admin client certificate, a
``system`` default node pool) and one KubernetesClusterNodePool per GPU pool. Field names
follow the namespaced ``*.azure.m.upbound.io`` v1beta1 CRDs, where single nested blocks
(``defaultNodePool``, ``identity``) are objects.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.domain.clouds.common import (
    GPU_TAINT,
    GPU_TAINT_VALUE,
    POOL_LABEL,
    provider_config_ref,
    resource_name,
)

AZURE = "azure.m.upbound.io/v1beta1"
NETWORK = "network.azure.m.upbound.io/v1beta1"
CONTAINER = "containerservice.azure.m.upbound.io/v1beta1"
# The azure provider publishes kube_config_raw under this connection-secret key.
KUBECONFIG_KEY = "kubeconfig"
STORAGE_CLASS = "modelplane-rwx-fs"  # the ServingStack composes it on AKS
# Not "system": a GPU pool may take that name, and AKS pool names are unique per cluster.
SYSTEM_POOL = "mpsystem"
ADDRESS_SPACE = "10.224.0.0/12"
SUBNET_PREFIX = "10.224.0.0/16"
CLUSTER_KEY = "cluster"


def kubeconfig_secret(name: str) -> str:
    """Return the name of the Secret the cluster writes its kubeconfig to."""
    return resource_name(name, "kubeconfig")


def resources(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Return every managed resource of the AKS cluster, keyed by composed-resource name.

    Args:
        name: The AKSCluster's name; the resource group, network and cluster take it.
        namespace: The AKSCluster's namespace, where every managed resource lives.
        spec: The AKSCluster's spec.
    """
    common = {"providerConfigRef": provider_config_ref(spec)}
    location = spec["location"]
    same = {"name": name, "namespace": namespace}
    out = {
        "resource-group": _mr(AZURE, "ResourceGroup", same, {"location": location}, common),
        "virtual-network": _mr(
            NETWORK,
            "VirtualNetwork",
            same,
            {
                "addressSpace": [ADDRESS_SPACE],
                "location": location,
                "resourceGroupNameRef": {"name": name},
            },
            common,
        ),
        "subnet": _mr(
            NETWORK,
            "Subnet",
            same,
            {
                "addressPrefixes": [SUBNET_PREFIX],
                "resourceGroupNameRef": {"name": name},
                "virtualNetworkNameRef": {"name": name},
            },
            common,
        ),
        CLUSTER_KEY: _cluster(name, namespace, spec, common),
    }
    for pool in spec["nodePools"]:
        out[f"pool-{pool['name']}"] = _node_pool(name, namespace, pool, common)
    return out


def _mr(
    api_version: str,
    kind: str,
    metadata: Mapping[str, Any],
    for_provider: Mapping[str, Any],
    common: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": dict(metadata),
        "spec": {"forProvider": dict(for_provider), **common},
    }


def _cluster(
    name: str, namespace: str, spec: Mapping[str, Any], common: Mapping[str, Any]
) -> dict[str, Any]:
    system = spec.get("systemPool") or {}
    for_provider: dict[str, Any] = {
        "defaultNodePool": {
            "name": SYSTEM_POOL,
            "nodeCount": system.get("nodeCount", 1),
            "onlyCriticalAddonsEnabled": True,
            "osDiskSizeGb": system.get("diskSizeGb", 100),
            "vmSize": system.get("vmSize", "Standard_D4s_v5"),
            "vnetSubnetIdRef": {"name": name},
        },
        "dnsPrefix": name,
        "identity": {"type": "SystemAssigned"},
        # The kubeconfig's client certificate belongs to the local cluster-admin account.
        "localAccountDisabled": False,
        "location": spec["location"],
        "resourceGroupNameRef": {"name": name},
    }
    if "version" in spec:
        for_provider["kubernetesVersion"] = spec["version"]
    manifest = _mr(
        CONTAINER, "KubernetesCluster", {"name": name, "namespace": namespace}, for_provider, common
    )
    manifest["spec"]["writeConnectionSecretToRef"] = {"name": kubeconfig_secret(name)}
    return manifest


def _node_pool(
    cluster: str, namespace: str, pool: Mapping[str, Any], common: Mapping[str, Any]
) -> dict[str, Any]:
    for_provider: dict[str, Any] = {
        "kubernetesClusterIdRef": {"name": cluster},
        "mode": "User",
        "nodeCount": pool["nodeCount"],
        "nodeLabels": {POOL_LABEL: pool["name"]},
        "nodeTaints": [f"{GPU_TAINT}={GPU_TAINT_VALUE}:NoSchedule"],
        "vmSize": pool["vmSize"],
        "vnetSubnetIdRef": {"name": cluster},
    }
    if "diskSizeGb" in pool:
        for_provider["osDiskSizeGb"] = pool["diskSizeGb"]
    if pool.get("maxNodeCount") is not None:
        for_provider["autoScalingEnabled"] = True
        for_provider["minCount"] = pool.get("minNodeCount", pool["nodeCount"])
        for_provider["maxCount"] = pool["maxNodeCount"]
    metadata = {
        "name": resource_name(cluster, pool["name"]),
        "namespace": namespace,
        # The AKS pool takes the (<= 12 character) pool name, not the object's name.
        "annotations": {"crossplane.io/external-name": pool["name"]},
    }
    return _mr(CONTAINER, "KubernetesClusterNodePool", metadata, for_provider, common)


def status(name: str, namespace: str, cluster_ready: bool) -> dict[str, Any]:
    """Return the AKSCluster's status: the kubeconfig Secret once the cluster is Ready."""
    out: dict[str, Any] = {"cache": {"storageClassName": STORAGE_CLASS}}
    if cluster_ready:
        out["kubeconfigSecretRef"] = {
            "key": KUBECONFIG_KEY,
            "name": kubeconfig_secret(name),
            "namespace": namespace,
        }
    return out
