"""VultrCluster: the provider-upjet-vultr managed resources of one VKE cluster.

A ``Kubernetes`` cluster (VKE makes its VPC) with the system pool inline, which the
provider honours only at creation, and one ``KubernetesNodePool`` per GPU pool, attached
to the cluster by reference. Kinds and fields follow the namespaced
``vke.vultr.m.upbound.io`` v1beta1 CRDs of ``upbound/provider-upjet-vultr``: the inline
pool is one object (``nodePools``), labels and taints are lists of ``{key, value}``.

The control plane is highly available (``haControlplanes``: VKE runs three control-plane
nodes), set only at creation (``initProvider``): VKE cannot switch it on an existing
cluster, and a cluster made before stays as it is rather than being replaced.

A GPU pool that autoscales (``minNodeCount`` below ``maxNodeCount``) turns on VKE's
autoscaler (the pool's ``autoScaler``, ``minNodes``, ``maxNodes``) and sets its node count
only at creation (``initProvider``), so the autoscaler owns it afterwards. The provider
writes the decoded kubeconfig to the connection Secret under ``kubeconfig``. There is no
RWX storage on Vultr, so the status carries no cache.

GPU readiness: VKE installs NVIDIA's GPU operator on GPU nodes itself, and a node's GPUs
serve only once the operator's validator pod on it is ready. Once the kubeconfig exists
the cluster composes a provider-kubernetes ProviderConfig for itself and an observe-only
Object of the validator DaemonSet (``gpu-operator/nvidia-operator-validator``), ready only
when every pod it schedules is ready (and, where a pool has nodes, at least one is): the
VultrCluster, and so its InferenceCluster, is Ready only after that, so no model lands on
a node whose driver is not up.
"""

from __future__ import annotations

from typing import Any

from modelplane.domain.clouds.common import (
    CLUSTER_KEY,
    KUBERNETES,
    PROVIDER_CONFIG_KEY,
    CloudCluster,
    GpuPool,
    autoscales,
    gpu_node_labels,
    gpu_taint,
    kubeconfig_ref,
    kubeconfig_secret,
    on_cluster,
    provider_configs,
    resource_name,
    scaling,
    system_node_labels,
)

API = "vke.vultr.m.upbound.io/v1beta1"
SYSTEM_POOL = "system"
SYSTEM_PLAN = "vc2-4c-8gb"
KUBECONFIG_KEY = "kubeconfig"
"""The provider base64-decodes VKE's ``kube_config`` into this connection-secret key."""
DEFAULT_VERSION = "v1.35.0+1"
"""VKE names its versions ``v<major>.<minor>.<patch>+<build>``."""
GPU_OPERATOR_KEY = "gpu-operator-validator"
WORKLOAD_KEYS = (PROVIDER_CONFIG_KEY, GPU_OPERATOR_KEY)
"""What :func:`workload_resources` composes once the kubeconfig exists, kept from then on."""
GPU_OPERATOR_NAMESPACE = "gpu-operator"
GPU_OPERATOR_VALIDATOR = "nvidia-operator-validator"
"""The GPU operator's validator DaemonSet: its pod on a node is ready once the driver, the
container toolkit, CUDA and the device plugin there all validate."""
OBSERVE = ["Observe"]


def vke_version(version: str | None) -> str:
    """Return the VKE version for a spec's version: as given when it names a build,
    ``v`` added when missing, and a bare minor (``1.35``) as its ``.0+1`` build."""
    if not version:
        return DEFAULT_VERSION
    bare = version.removeprefix("v")
    if bare.count(".") == 1:
        return f"v{bare}.0+1"
    return f"v{bare}"


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
                    "labels": _pairs(system_node_labels()),
                    "nodeQuantity": system.node_count,
                    "plan": system.machine_type,
                },
                "region": spec.region,
                "version": vke_version(spec.version),
            },
            # HA is chosen when VKE creates the cluster; it cannot change afterwards.
            "initProvider": {"haControlplanes": True},
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
        "labels": _pairs(gpu_node_labels(pool)),
        "plan": pool.machine_type,
        "taints": [gpu_taint("NoSchedule")],
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


def validator_ready_query(spec: CloudCluster) -> str:
    """Return the CEL readiness query of the validator DaemonSet's Object.

    Every pod it schedules must be ready. Where a pool starts with nodes, at least one pod
    must be scheduled too: an operator that has not yet reached the GPU nodes schedules
    none, and zero of zero would read as ready. Pools that all start empty (scaled from
    zero) have no validator pod until a model's pods bring nodes, so zero is ready then.
    """
    status = "object.status"
    query = (
        f"has({status}) && has({status}.desiredNumberScheduled) && has({status}.numberReady)"
        f" && {status}.numberReady == {status}.desiredNumberScheduled"
    )
    if any(pool.node_count > 0 for pool in spec.pools):
        query += f" && {status}.desiredNumberScheduled > 0"
    return query


def workload_resources(spec: CloudCluster) -> dict[str, dict[str, Any]]:
    """Return what reaches the cluster itself once its kubeconfig exists: a
    provider-kubernetes ProviderConfig, and the observe-only Object of the GPU operator's
    validator DaemonSet that gates the cluster's readiness on its GPUs (none without GPU
    pools)."""
    secret = kubeconfig_ref(kubeconfig_secret(spec.name), spec.namespace, KUBECONFIG_KEY)
    out = provider_configs(spec, secret, families=(KUBERNETES,))
    if not spec.pools:
        return out
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": GPU_OPERATOR_VALIDATOR, "namespace": GPU_OPERATOR_NAMESPACE},
    }
    config = out[PROVIDER_CONFIG_KEY]["metadata"]["name"]
    gate = on_cluster(spec, GPU_OPERATOR_KEY, manifest, config)
    # Observe only: VKE owns the operator; we read its DaemonSet and never write it.
    gate["spec"]["managementPolicies"] = list(OBSERVE)
    gate["spec"]["readiness"] = {
        "policy": "DeriveFromCelQuery",
        "celQuery": validator_ready_query(spec),
    }
    return {**out, GPU_OPERATOR_KEY: gate}


def status(spec: CloudCluster, cluster_ready: bool) -> dict[str, Any]:
    """Return the VultrCluster's status: the kubeconfig Secret once the cluster is Ready."""
    if not cluster_ready:
        return {}
    secret = kubeconfig_secret(spec.name)
    return {"kubeconfigSecretRef": kubeconfig_ref(secret, spec.namespace, KUBECONFIG_KEY)}
