"""VultrCluster: the provider-upjet-vultr managed resources of one VKE cluster.

A ``Kubernetes`` cluster (VKE makes its VPC) with the system pool inline, which the
provider honours only at creation, and one ``KubernetesNodePool`` per GPU pool, attached
to the cluster by reference. Kinds and fields follow the namespaced
``vke.vultr.m.upbound.io`` v1beta1 CRDs of ``upbound/provider-upjet-vultr``: the inline
pool is one object (``nodePools``), labels and taints are lists of ``{key, value}``.

A GPU pool that autoscales (``minNodeCount`` below ``maxNodeCount``) turns on VKE's
autoscaler and sets its node count only at creation (``initProvider``), so the autoscaler
owns it afterwards. The provider writes the decoded kubeconfig to the connection Secret
under ``kubeconfig``. There is no RWX storage on Vultr, so the status carries no cache.
"""

from __future__ import annotations

from typing import Any

from modelplane.domain.clouds.common import (
    GPU_TAINT,
    GPU_TAINT_VALUE,
    POOL_LABEL,
    SYSTEM_LABEL,
    CloudCluster,
    GpuPool,
    autoscales,
    kubeconfig_ref,
    resource_name,
    scaling,
)

API = "vke.vultr.m.upbound.io/v1beta1"
CLUSTER_KEY = "cluster"
SYSTEM_POOL = "system"
SYSTEM_PLAN = "vc2-4c-8gb"
KUBECONFIG_KEY = "kubeconfig"
"""The provider base64-decodes VKE's ``kube_config`` into this connection-secret key."""
DEFAULT_VERSION = "v1.35.0+1"
"""VKE names its versions ``v<major>.<minor>.<patch>+<build>``."""


def vke_version(version: str | None) -> str:
    """Return the VKE version for a spec's version: as given when it names a build,
    ``v`` added when missing, and a bare minor (``1.35``) as its ``.0+1`` build."""
    if not version:
        return DEFAULT_VERSION
    bare = version.removeprefix("v")
    if bare.count(".") == 1:
        return f"v{bare}.0+1"
    return f"v{bare}"


def kubeconfig_secret(name: str) -> str:
    """Return the name of the Secret the cluster writes its kubeconfig to."""
    return resource_name(name, "kubeconfig")


def _pairs(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": k, "value": v} for k, v in sorted(values.items())]


def cluster(spec: CloudCluster) -> dict[str, Any]:
    """Return the VKE cluster with its inline system pool."""
    system = spec.system
    return {
        "apiVersion": API,
        "kind": "Kubernetes",
        "metadata": {"name": spec.name, "namespace": spec.namespace},
        "spec": {
            "forProvider": {
                "label": spec.name,
                "nodePools": {
                    "label": system.name,
                    "labels": _pairs({SYSTEM_LABEL: "true"}),
                    "nodeQuantity": system.node_count,
                    "plan": system.machine_type,
                },
                "region": spec.region,
                "version": vke_version(spec.version),
            },
            "providerConfigRef": spec.provider_config.ref(),
            "writeConnectionSecretToRef": {"name": kubeconfig_secret(spec.name)},
        },
    }


def node_pool(spec: CloudCluster, pool: GpuPool) -> dict[str, Any]:
    """Return the VKE node pool of one GPU pool, attached to the cluster by reference."""
    low, desired, high = scaling(pool)
    for_provider: dict[str, Any] = {
        "clusterIdRef": {"name": spec.name},
        "label": pool.name,
        "labels": _pairs({POOL_LABEL: pool.name}),
        "plan": pool.machine_type,
        "taints": [{"effect": "NoSchedule", "key": GPU_TAINT, "value": GPU_TAINT_VALUE}],
    }
    out: dict[str, Any] = {"forProvider": for_provider}
    if autoscales(pool):  # VKE's autoscaler resizes the pool
        for_provider["autoScaler"] = True
        for_provider["minNodes"] = low
        for_provider["maxNodes"] = high
        out["initProvider"] = {"nodeQuantity": desired}
    else:
        for_provider["nodeQuantity"] = desired
    return {
        "apiVersion": API,
        "kind": "KubernetesNodePool",
        "metadata": {"name": resource_name(spec.name, pool.name), "namespace": spec.namespace},
        "spec": {**out, "providerConfigRef": spec.provider_config.ref()},
    }


def resources(spec: CloudCluster) -> dict[str, dict[str, Any]]:
    """Return every managed resource, keyed by composed-resource name."""
    out = {CLUSTER_KEY: cluster(spec)}
    for pool in spec.pools:
        out[pool_key(pool.name)] = node_pool(spec, pool)
    return out


def pool_key(name: str) -> str:
    """Return the composed-resource key of a GPU pool."""
    return f"pool-{name}"


def status(spec: CloudCluster, cluster_ready: bool) -> dict[str, Any]:
    """Return the VultrCluster's status: the kubeconfig Secret once the cluster is Ready."""
    if not cluster_ready:
        return {}
    secret = kubeconfig_secret(spec.name)
    return {"kubeconfigSecretRef": kubeconfig_ref(secret, spec.namespace, KUBECONFIG_KEY)}
