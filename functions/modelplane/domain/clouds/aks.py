"""AKSCluster: the provider-upjet-azure managed resources of one AKS cluster.

A resource group, a virtual network and subnet, the cluster (system-assigned identity,
local account kept so its kubeconfig embeds a cluster-admin client certificate, the
system pool as its default node pool, the Kubernetes version the spec names or AKS'
default) and one KubernetesClusterNodePool per GPU pool. Field names follow the
namespaced ``*.azure.m.upbound.io`` v1beta1 CRDs, where single nested blocks
(``defaultNodePool``, ``identity``) are objects.

A GPU pool that autoscales (``minNodeCount`` below ``maxNodeCount``) turns on AKS'
cluster autoscaler for the pool and sets its node count only at creation
(``initProvider``), so the autoscaler owns it afterwards. A pool with fabric
``InfiniBand`` needs nothing more composed: with the subscription's
``AKSInfinibandSupport`` feature, AKS lands an InfiniBand-capable pool's scale set on one
fabric; its nodes are labelled ``modelplane.ai/fabric=infiniband``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelplane.domain.clouds.common import (
    CLUSTER_KEY,
    GPU_TAINT_SPEC,
    INFINIBAND,
    CloudCluster,
    GpuPool,
    autoscales,
    gpu_node_labels,
    kubeconfig_ref,
    kubeconfig_secret,
    resource_name,
    scaling,
    system_node_labels,
)
from modelplane.domain.stack_objects import AKS_STORAGE_CLASS

AZURE = "azure.m.upbound.io/v1beta1"
NETWORK = "network.azure.m.upbound.io/v1beta1"
CONTAINER = "containerservice.azure.m.upbound.io/v1beta1"
# The azure provider publishes kube_config_raw under this connection-secret key.
KUBECONFIG_KEY = "kubeconfig"
STORAGE_CLASS = AKS_STORAGE_CLASS  # the ServingStack composes it on AKS
SYSTEM_POOL = "mpsystem"
"""The system pool's name when the spec declares none (a GPU pool may be named system)."""
SYSTEM_VM_SIZE = "Standard_D4s_v5"
FABRIC_LABEL = "modelplane.ai/fabric"
ADDRESS_SPACE = "10.224.0.0/12"
SUBNET_PREFIX = "10.224.0.0/16"


def resources(cluster: CloudCluster) -> dict[str, dict[str, Any]]:
    """Return every managed resource of the AKS cluster, keyed by composed-resource name.

    The resource group, network, subnet and cluster take the composite's name.
    """
    name = cluster.name
    same = {"name": name, "namespace": cluster.namespace}
    location = cluster.region
    out = {
        "resource-group": _mr(cluster, AZURE, "ResourceGroup", same, {"location": location}),
        "virtual-network": _mr(cluster, NETWORK, "VirtualNetwork", same, {
            "addressSpace": [ADDRESS_SPACE],
            "location": location,
            "resourceGroupNameRef": {"name": name},
        }),
        "subnet": _mr(cluster, NETWORK, "Subnet", same, {
            "addressPrefixes": [SUBNET_PREFIX],
            "resourceGroupNameRef": {"name": name},
            "virtualNetworkNameRef": {"name": name},
        }),
        CLUSTER_KEY: _cluster(cluster),
    }  # fmt: skip
    for pool in cluster.pools:
        out[f"pool-{pool.name}"] = _node_pool(cluster, pool)
    return out


def _mr(
    cluster: CloudCluster,
    api_version: str,
    kind: str,
    metadata: Mapping[str, Any],
    for_provider: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": dict(metadata),
        "spec": {
            "forProvider": dict(for_provider),
            "providerConfigRef": cluster.provider_config.ref(),
        },
    }


def _cluster(cluster: CloudCluster) -> dict[str, Any]:
    system = cluster.system
    for_provider: dict[str, Any] = {
        "defaultNodePool": {
            "name": system.name,
            "nodeCount": system.node_count,
            "nodeLabels": system_node_labels(),
            "onlyCriticalAddonsEnabled": True,
            "osDiskSizeGb": system.disk_size_gb,
            "vmSize": system.machine_type,
            "vnetSubnetIdRef": {"name": cluster.name},
        },
        "dnsPrefix": cluster.name,
        "identity": {"type": "SystemAssigned"},
        # The kubeconfig's client certificate belongs to the local cluster-admin account.
        "localAccountDisabled": False,
        "location": cluster.region,
        "resourceGroupNameRef": {"name": cluster.name},
    }
    if cluster.version:
        for_provider["kubernetesVersion"] = cluster.version
    metadata = {"name": cluster.name, "namespace": cluster.namespace}
    manifest = _mr(cluster, CONTAINER, "KubernetesCluster", metadata, for_provider)
    manifest["spec"]["writeConnectionSecretToRef"] = {"name": kubeconfig_secret(cluster.name)}
    return manifest


def _node_pool(cluster: CloudCluster, pool: GpuPool) -> dict[str, Any]:
    labels = gpu_node_labels(pool)
    if pool.fabric == INFINIBAND:
        labels[FABRIC_LABEL] = "infiniband"
    for_provider: dict[str, Any] = {
        "kubernetesClusterIdRef": {"name": cluster.name},
        "mode": "User",
        "nodeLabels": labels,
        "nodeTaints": [GPU_TAINT_SPEC],
        "vmSize": pool.machine_type,
        "vnetSubnetIdRef": {"name": cluster.name},
    }
    if pool.disk_size_gb is not None:
        for_provider["osDiskSizeGb"] = pool.disk_size_gb
    low, desired, high = scaling(pool)
    init: dict[str, Any] = {}
    if autoscales(pool):
        for_provider["autoScalingEnabled"] = True
        for_provider["minCount"] = low
        for_provider["maxCount"] = high
        init["nodeCount"] = desired  # the autoscaler owns it once the pool exists
    else:
        for_provider["nodeCount"] = desired
    metadata = {
        "name": resource_name(cluster.name, pool.name),
        "namespace": cluster.namespace,
        # The AKS pool takes the (<= 12 character) pool name, not the object's name.
        "annotations": {"crossplane.io/external-name": pool.name},
    }
    manifest = _mr(cluster, CONTAINER, "KubernetesClusterNodePool", metadata, for_provider)
    if init:
        manifest["spec"]["initProvider"] = init
    return manifest


def status(cluster: CloudCluster, cluster_ready: bool) -> dict[str, Any]:
    """Return the AKSCluster's status: the kubeconfig Secret once the cluster is Ready."""
    out: dict[str, Any] = {"cache": {"storageClassName": STORAGE_CLASS}}
    if cluster_ready:
        secret = kubeconfig_secret(cluster.name)
        out["kubeconfigSecretRef"] = kubeconfig_ref(secret, cluster.namespace, KUBECONFIG_KEY)
    return out
