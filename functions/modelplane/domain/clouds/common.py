"""What every cloud cluster shares: its inputs, and how composed resources are named and linked."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from modelplane.domain import api, taints

MAX_NAME = 63
HASH_LENGTH = 5
POOL_LABEL = api.POOL_LABEL
SYSTEM_LABEL = "modelplane.ai/system"
"""On every node of the system pool, where the serving stack's own pods may go."""
GPU_TAINT = api.GPU_TAINT
GPU_TAINT_VALUE = api.GPU_TAINT_VALUE
GPU_TAINT_SPEC = taints.spelled(GPU_TAINT, taints.NO_SCHEDULE, GPU_TAINT_VALUE)
"""The GPU taint as kubectl writes it (``key=value:Effect``), which AKS' ``nodeTaints`` take."""
ROLE_LABEL = "modelplane.ai/role"
"""Labels each composed resource with its role, so siblings select it among the composite's."""
KUBECONFIG_KEY = "kubeconfig"
# Composed keys every cloud composite uses alike: its adapter and teardown read them back.
CLUSTER_KEY = "cluster"
"""The key every cloud composite composes its Kubernetes cluster under."""
PROVIDER_CONFIG_KEY = "kubernetes-provider-config"
HELM_CONFIG_KEY = "helm-provider-config"
STORAGE_CLASS_KEY = "storage-class"
KUBERNETES = api.KUBERNETES_OBJECT
HELM = api.HELM

# Fabrics a pool may ask for (the XRDs' enum values).
NO_FABRIC = "None"
EFA = "EFA"
INFINIBAND = "InfiniBand"


@dataclass(frozen=True)
class ProviderConfig:
    """The provider config whose credentials create the cloud resources."""

    kind: str = "ClusterProviderConfig"
    name: str = "default"

    def ref(self) -> dict[str, str]:
        """Return it as a managed resource's ``providerConfigRef``."""
        return {"kind": self.kind, "name": self.name}


@dataclass(frozen=True)
class SystemPool:
    """The non-GPU pool that runs the serving stack.

    Attributes:
        machine_type: The cloud's instance type, machine type, VM size, platform or plan.
        node_count: Its fixed size.
        disk_size_gb: Boot disk size.
        name: Its name where the cloud shows one (the AKS default pool, the VKE inline pool).
        preset: The platform's preset (Nebius), if any.
    """

    machine_type: str
    node_count: int
    disk_size_gb: int
    name: str = "system"
    preset: str | None = None


@dataclass(frozen=True)
class GpuPool:
    """One GPU pool, as the cloud cluster's spec gives it.

    Attributes:
        name: The pool's name; its nodes carry ``modelplane.ai/pool=<name>``.
        machine_type: The cloud's instance type, machine type, VM size, platform or plan.
        node_count: The nodes to start with.
        min_node_count: The autoscaling floor.
        max_node_count: The autoscaling ceiling.
        zones: Where the nodes run; empty lets the cloud choose among the cluster's.
        disk_size_gb: Boot disk size, None for the cloud's default.
        accelerator_type: The GPU type (GKE attaches it to the machine), if any.
        accelerator_count: GPUs per node (0: unsaid).
        capacity_reservation_id: An EC2 Capacity Block the nodes come from (EKS).
        preset: The platform's preset (Nebius).
        drivers_preset: The GPU driver preset the nodes' image carries (Nebius).
        fabric: ``None``, ``EFA`` (EKS) or ``InfiniBand`` (AKS, Nebius).
        infiniband_fabric: The physical InfiniBand fabric a Nebius pool joins.
    """

    name: str
    machine_type: str
    node_count: int
    min_node_count: int
    max_node_count: int
    zones: tuple[str, ...] = ()
    disk_size_gb: int | None = None
    accelerator_type: str | None = None
    accelerator_count: int = 0
    capacity_reservation_id: str | None = None
    preset: str | None = None
    drivers_preset: str | None = None
    fabric: str = NO_FABRIC
    infiniband_fabric: str | None = None


@dataclass(frozen=True)
class CloudCluster:
    """A cloud cluster to compose.

    Attributes:
        name: The composite's name; every composed name starts with it.
        namespace: The composite's namespace, where every composed resource lives.
        region: The cloud region (the Azure location; empty on Nebius, whose project has one).
        version: The Kubernetes version, or None to let the cloud choose (AKS).
        provider_config: The provider config that creates the resources.
        system: The system pool.
        pools: The GPU pools, in the composite's order.
    """

    name: str
    namespace: str
    region: str
    version: str | None
    provider_config: ProviderConfig
    system: SystemPool
    pools: tuple[GpuPool, ...] = field(default_factory=tuple)


class ClusterError(ValueError):
    """The cluster cannot be composed as asked; the message says why."""


def resource_name(cluster: str, suffix: str, *, limit: int = MAX_NAME) -> str:
    """Return ``<cluster>-<suffix>``, or a shortened stable form when that is too long.

    Args:
        cluster: The composite's name.
        suffix: What the resource is, e.g. ``subnet-private-us-east-1a``.
        limit: The longest name allowed (63 for Kubernetes; shorter for some clouds).

    Returns:
        The full name if it fits, else its prefix, ``-`` and 5 hex digits of its sha256.
    """
    full = f"{cluster}-{suffix}"
    if len(full) <= limit:
        return full
    digest = hashlib.sha256(full.encode()).hexdigest()[:HASH_LENGTH]
    return f"{full[: limit - HASH_LENGTH - 1].rstrip('-')}-{digest}"


def label_value(role: str) -> str:
    """Return ``role`` as a valid label value: itself, or a stable shortening past 63 characters."""
    if len(role) <= MAX_NAME:
        return role
    digest = hashlib.sha256(role.encode()).hexdigest()[:HASH_LENGTH]
    return f"{role[: MAX_NAME - HASH_LENGTH - 1].rstrip('-')}-{digest}"


def selector(role: str) -> dict[str, Any]:
    """Return a selector for the composite's own resource labelled with ``role``."""
    return {"matchControllerRef": True, "matchLabels": {ROLE_LABEL: label_value(role)}}


def ref(name: str) -> dict[str, str]:
    """Return a reference to a sibling by name (namespaced references default to ours)."""
    return {"name": name}


def managed(
    cluster: CloudCluster,
    api_version: str,
    kind: str,
    role: str,
    for_provider: Mapping[str, Any],
    *,
    name: str | None = None,
    connection_secret: str | None = None,
    init_provider: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return a namespaced managed resource of the cluster, labelled with its role.

    Args:
        cluster: The cluster the resource belongs to.
        api_version: The managed resource's apiVersion.
        kind: The managed resource's kind.
        role: What the resource is within the cluster; also its name suffix.
        for_provider: The resource's ``spec.forProvider``.
        name: Its name, if not ``<cluster>-<role>``.
        connection_secret: The Secret to write its connection details to, if any.
        init_provider: Fields set only at creation (``spec.initProvider``), which the
            provider then leaves to whoever changes them (an autoscaler), if any.
    """
    spec: dict[str, Any] = {
        "forProvider": dict(for_provider),
        "providerConfigRef": cluster.provider_config.ref(),
    }
    if init_provider:
        spec["initProvider"] = dict(init_provider)
    if connection_secret is not None:
        spec["writeConnectionSecretToRef"] = {"name": connection_secret}
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": name or resource_name(cluster.name, role),
            "namespace": cluster.namespace,
            "labels": {ROLE_LABEL: label_value(role)},
        },
        "spec": spec,
    }


def system_node_labels() -> dict[str, str]:
    """Return the labels of the system pool's nodes."""
    return {SYSTEM_LABEL: "true"}


def gpu_node_labels(pool: GpuPool) -> dict[str, str]:
    """Return the labels of a GPU pool's nodes: the pool's name, which pods select."""
    return {POOL_LABEL: pool.name}


def gpu_taint(effect: str) -> dict[str, str]:
    """Return the taint of a GPU pool's nodes, with ``effect`` as the cloud's API spells it."""
    return {"effect": effect, "key": GPU_TAINT, "value": GPU_TAINT_VALUE}


def scaling(pool: GpuPool) -> tuple[int, int, int]:
    """Return the pool's (min, desired, max) node counts, the desired one within the bounds."""
    low = min(pool.min_node_count, pool.node_count)
    high = max(pool.max_node_count, pool.node_count)
    return low, pool.node_count, high


def autoscales(pool: GpuPool) -> bool:
    """Tell whether the pool's size may change on its own (its floor is below its ceiling)."""
    low, _, high = scaling(pool)
    return low < high


def pool_zones(cluster: CloudCluster) -> list[str]:
    """Return every zone a pool names, sorted and without repeats."""
    return sorted({zone for pool in cluster.pools for zone in pool.zones})


def kubeconfig_secret(cluster: str) -> str:
    """Return the name of the Secret holding the cluster's kubeconfig, ``<cluster>-kubeconfig``.

    Every cloud names it so, whether the cloud writes it (AKS, GKE, VKE), ClusterAuth does
    (EKS) or the composition composes it (Nebius).
    """
    return resource_name(cluster, "kubeconfig")


def kubeconfig_ref(secret: str, namespace: str, key: str = KUBECONFIG_KEY) -> dict[str, str]:
    """Return a ``{name, namespace, key}`` reference to a Secret's key."""
    return {"name": secret, "namespace": namespace, "key": key}


def at_provider(resource: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return an observed managed resource's ``status.atProvider`` (empty if none)."""
    status = (resource or {}).get("status")
    found = status.get("atProvider") if isinstance(status, Mapping) else None
    return dict(found) if isinstance(found, Mapping) else {}


def provider_configs(
    cluster: CloudCluster,
    kubeconfig: Mapping[str, str],
    identity: Mapping[str, str] | None = None,
    *,
    families: tuple[str, ...] = (KUBERNETES,),
) -> dict[str, dict[str, Any]]:
    """Return the namespaced provider configs that reach the cluster itself, by composed key.

    Args:
        cluster: The cluster.
        kubeconfig: The kubeconfig Secret's ``{name, namespace, key}``.
        identity: The cloud identity to pair with a kubeconfig that holds no credentials:
            ``{type, name, namespace, key}`` (GKE's service account key, Nebius' credentials).
        families: The providers' API versions: provider-kubernetes, provider-helm, or both.

    Returns:
        ``kubernetes-provider-config`` and/or ``helm-provider-config``, each named
        ``<cluster>-kubernetes`` or ``<cluster>-helm``.
    """
    spec: dict[str, Any] = {"credentials": {"source": "Secret", "secretRef": dict(kubeconfig)}}
    if identity:
        spec["identity"] = {
            "type": identity["type"],
            "source": "Secret",
            "secretRef": {k: identity[k] for k in ("name", "namespace", "key")},
        }
    out: dict[str, dict[str, Any]] = {}
    for family in families:
        short, key = (
            ("helm", HELM_CONFIG_KEY) if family == HELM else ("kubernetes", PROVIDER_CONFIG_KEY)
        )
        out[key] = {
            "apiVersion": family,
            "kind": "ProviderConfig",
            "metadata": {
                "name": resource_name(cluster.name, short),
                "namespace": cluster.namespace,
            },
            "spec": spec,
        }
    return out


def on_cluster(
    cluster: CloudCluster, role: str, manifest: Mapping[str, Any], config: str
) -> dict[str, Any]:
    """Return a provider-kubernetes Object that applies ``manifest`` on the cluster itself.

    Args:
        cluster: The cluster.
        role: What the object is, also its name suffix (``storage-class``).
        manifest: The Kubernetes object to apply there.
        config: The name of the namespaced provider-kubernetes ProviderConfig that reaches it.
    """
    return {
        "apiVersion": KUBERNETES,
        "kind": "Object",
        "metadata": {"name": resource_name(cluster.name, role), "namespace": cluster.namespace},
        "spec": {
            "forProvider": {"manifest": dict(manifest)},
            "providerConfigRef": {"kind": "ProviderConfig", "name": config},
        },
    }
