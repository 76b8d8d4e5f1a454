"""VultrCluster: the provider-vultr managed resources of one VKE cluster.

A ``Kubernetes`` cluster (VKE makes its VPC) with the system pool inline, which
provider-vultr honours only at creation, and one ``NodePools`` per GPU pool. Field names
follow the namespaced ``kubernetes.vultr.m.upbound.io`` v1alpha1 CRDs. ``NodePools`` has
no reference to its cluster, so a GPU pool is composed once the cluster reports its id.
There is no RWX storage on Vultr, so the status carries no cache.
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

API = "kubernetes.vultr.m.upbound.io/v1alpha1"
CLUSTER_KEY = "cluster"
SYSTEM_POOL = "system"
# Unverified: upjet publishes a sensitive Terraform attribute under ``attribute.<name>``;
# whether the value is the raw kubeconfig or Vultr's base64 of it is not checked.
KUBECONFIG_KEY = "attribute.kube_config"
# Unverified: VKE names versions like ``v1.33.0+1``; the XRD takes ``1.33``.
DEFAULT_VERSION = "v1.33.0+1"


def vke_version(version: str | None) -> str:
    """Return the VKE version string for an XRD ``1.xx`` version (a default when unset)."""
    return f"v{version}.0+1" if version else DEFAULT_VERSION


def kubeconfig_secret(name: str) -> str:
    """Return the name of the Secret the cluster writes its kubeconfig to."""
    return resource_name(name, "kubeconfig")


def cluster(name: str, namespace: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """Return the VKE cluster with its inline system pool."""
    system = spec.get("systemPool") or {}
    return {
        "apiVersion": API,
        "kind": "Kubernetes",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "forProvider": {
                "label": name,
                "nodePools": [
                    {
                        "label": SYSTEM_POOL,
                        "nodeQuantity": system.get("nodeCount", 1),
                        "plan": system.get("plan", "vc2-4c-8gb"),
                    }
                ],
                "region": spec["region"],
                "version": vke_version(spec.get("version")),
            },
            "providerConfigRef": provider_config_ref(spec),
            "writeConnectionSecretToRef": {"name": kubeconfig_secret(name)},
        },
    }


def node_pool(
    cluster_name: str,
    namespace: str,
    cluster_id: str,
    pool: Mapping[str, Any],
    spec: Mapping[str, Any],
) -> dict[str, Any]:
    """Return the VKE node pool of one GPU pool, attached to the cluster ``cluster_id``."""
    for_provider: dict[str, Any] = {
        "clusterId": cluster_id,
        "label": pool["name"],
        "labels": {POOL_LABEL: pool["name"]},
        "nodeQuantity": pool["nodeCount"],
        "plan": pool["plan"],
        "taints": [{"effect": "NoSchedule", "key": GPU_TAINT, "value": GPU_TAINT_VALUE}],
    }
    if pool.get("maxNodeCount") is not None:  # VKE's autoscaler resizes the pool
        for_provider["autoScaler"] = True
        for_provider["minNodes"] = pool.get("minNodeCount", pool["nodeCount"])
        for_provider["maxNodes"] = pool["maxNodeCount"]
    return {
        "apiVersion": API,
        "kind": "NodePools",
        "metadata": {"name": resource_name(cluster_name, pool["name"]), "namespace": namespace},
        "spec": {"forProvider": for_provider, "providerConfigRef": provider_config_ref(spec)},
    }


def resources(
    name: str, namespace: str, spec: Mapping[str, Any], cluster_id: str | None
) -> dict[str, dict[str, Any]]:
    """Return every managed resource, keyed by composed-resource name.

    Args:
        name: The VultrCluster's name; the VKE cluster takes it as its label.
        namespace: The VultrCluster's namespace, where every managed resource lives.
        spec: The VultrCluster's spec.
        cluster_id: The VKE cluster's id once observed; GPU pools wait for it.
    """
    out = {CLUSTER_KEY: cluster(name, namespace, spec)}
    if cluster_id:
        for key, pool in zip(pool_keys(spec), spec["nodePools"], strict=True):
            out[key] = node_pool(name, namespace, cluster_id, pool, spec)
    return out


def pool_keys(spec: Mapping[str, Any]) -> list[str]:
    """Return the composed-resource keys of the spec's GPU pools, in spec order."""
    return [f"pool-{pool['name']}" for pool in spec["nodePools"]]


def status(name: str, namespace: str, cluster_ready: bool) -> dict[str, Any]:
    """Return the VultrCluster's status: the kubeconfig Secret once the cluster is Ready."""
    if not cluster_ready:
        return {}
    ref = {"key": KUBECONFIG_KEY, "name": kubeconfig_secret(name), "namespace": namespace}
    return {"kubeconfigSecretRef": ref}
