"""InferenceCluster: publish its GPU pools for the scheduler, and plan the cloud cluster.

Pure: it takes the cluster's pools and the InferenceClasses they name as plain values
and returns plain values; the compose adapter reads and writes the resources.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

PROVISIONED = ("GKE", "EKS", "AKS", "Nebius", "Vultr")

# The per-cloud fields of a class's provisioning block that name the node shape, and
# the fields the cloud cluster's node pool takes them as.
SHAPE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "GKE": ("machineType",),
    "EKS": ("instanceType",),
    "AKS": ("vmSize",),
    "Nebius": ("platform", "preset"),
    "Vultr": ("plan",),
}
# Which clouds take a pool's zones, its boot disk size, and which fabric each takes.
ZONED = ("GKE", "EKS")
NO_DISK = ("Vultr",)
FABRICS: Mapping[str, str] = {"EKS": "EFA", "AKS": "InfiniBand", "Nebius": "InfiniBand"}
CLUSTER_KINDS: Mapping[str, str] = {
    "GKE": "GKECluster",
    "EKS": "EKSCluster",
    "AKS": "AKSCluster",
    "Nebius": "NebiusCluster",
    "Vultr": "VultrCluster",
}
LOCATION_FIELDS: Mapping[str, str] = {
    "GKE": "region",
    "EKS": "region",
    "AKS": "location",
    "Vultr": "region",
}


@dataclass(frozen=True)
class Pool:
    """One GPU pool as the InferenceCluster declares it."""

    name: str
    class_name: str
    node_count: int
    min_node_count: int | None = None
    max_node_count: int | None = None
    zones: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # fabric, capacityBlock: passed on
    capacity: str = "Nodes"  # Nodes | Devices: whether its pods may share a node


@dataclass(frozen=True)
class Problem:
    """A pool that can't be published or provisioned, and why."""

    pool: str
    reason: str  # ClassNotFound | NotProvisionable | ProviderMismatch
    detail: str

    def __str__(self) -> str:
        """Say what is wrong in the words a platform team uses."""
        return f"pool {self.pool}: {self.detail}" if self.pool else self.detail


def location_problems(source: str, location: Mapping[str, Any] | None) -> list[Problem]:
    """Return why a provisioned cluster's location block can't place it (the XRD requires
    it; a request that bypassed the API server may not have it)."""
    where = f"spec.cluster.{source.lower()}"
    if not isinstance(location, Mapping):
        return [Problem("", "NotProvisionable", f"{where} is missing")]
    key = LOCATION_FIELDS.get(source)
    if key is not None and not location.get(key):
        return [Problem("", "NotProvisionable", f"{where}.{key} is missing")]
    return []


def schedulable_nodes(pool: Pool) -> int:
    """Return how many nodes the scheduler may count on (decisions: max if set, else count).

    A pool that starts at zero nodes but may grow is schedulable: its nodes appear when
    a pod goes Pending.
    """
    return pool.max_node_count if pool.max_node_count is not None else pool.node_count


def gpu_pools(
    pools: Sequence[Pool], classes: Mapping[str, Mapping[str, Any]]
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Return ``status.gpuPools`` for the pools whose class exists, and the others' problems.

    A pool that lets its pods share nodes (``capacity: Devices``) says so in its entry.

    Args:
        pools: The cluster's pools, in spec order.
        classes: InferenceClass specs by class name.
    """
    published: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for pool in pools:
        spec = classes.get(pool.class_name)
        if spec is None:
            detail = f"InferenceClass {pool.class_name} not found"
            problems.append(Problem(pool.name, "ClassNotFound", detail))
            continue
        devices = [dict(d) for d in spec.get("devices", [])]
        entry = {"name": pool.name, "nodes": schedulable_nodes(pool), "devices": devices}
        if pool.capacity == "Devices":
            # Published only when opted in: pools that don't read exactly as before.
            entry["capacity"] = "Devices"
        published.append(entry)
    return published, problems


def keep_flapping_pools(
    pools: Sequence[Pool], published: Sequence[Mapping[str, Any]], shown: Sequence[Any]
) -> list[dict[str, Any]]:
    """Return ``status.gpuPools``: each pool in spec order, freshly published, or else as
    it was shown before (a pool still in the spec whose class can't be read right now).

    Replicas are pinned to published pools; a class that is missing for a moment (being
    replaced, say) must not make them move. A pool removed from the spec goes.

    Args:
        pools: The cluster's pools, in spec order.
        published: What :func:`gpu_pools` published now.
        shown: The ``status.gpuPools`` published before (entries that aren't mappings
            are ignored).
    """
    fresh = {p["name"]: dict(p) for p in published}
    before = {p.get("name"): dict(p) for p in shown if isinstance(p, Mapping)}
    kept = (fresh.get(pool.name) or before.get(pool.name) for pool in pools)
    return [p for p in kept if p is not None]


def provisioning_problems(
    source: str, pools: Sequence[Pool], classes: Mapping[str, Mapping[str, Any]]
) -> list[Problem]:
    """Return why a provisioned cluster's pools can't be created from their classes."""
    problems: list[Problem] = []
    for pool in pools:
        spec = classes.get(pool.class_name)
        if spec is None:
            continue  # reported by gpu_pools
        provisioning = spec.get("provisioning")
        if provisioning is None:
            detail = f"InferenceClass {pool.class_name} has no provisioning block; a {source} cluster needs one"
            problems.append(Problem(pool.name, "NotProvisionable", detail))
        elif provisioning.get("provider") != source:
            detail = (
                f"InferenceClass {pool.class_name} provisions on {provisioning.get('provider')}, "
                f"not {source}"
            )
            problems.append(Problem(pool.name, "ProviderMismatch", detail))
    return problems


def cloud_node_pool(source: str, pool: Pool, provisioning: Mapping[str, Any]) -> dict[str, Any]:
    """Return one GPU pool of the cloud cluster's spec, from the pool and its class.

    The class gives the node shape, the disk size and the GPUs (``gpu``: the accelerator's
    type and count, and Nebius' driver preset); the pool its counts, zones (GKE, EKS),
    fabric (EFA on EKS, InfiniBand on AKS and Nebius; each cloud's composite spells it its
    own way) and Capacity Block (EKS).
    """
    block = provisioning.get(source.lower()) or {}
    node_pool: dict[str, Any] = {"name": pool.name, "role": "GPU", "nodeCount": pool.node_count}
    node_pool["minNodeCount"] = (
        pool.min_node_count if pool.min_node_count is not None else pool.node_count
    )
    if pool.max_node_count is not None:
        node_pool["maxNodeCount"] = pool.max_node_count
    if pool.zones and source in ZONED:
        node_pool["zones"] = list(pool.zones)
    for key in SHAPE_FIELDS[source]:
        if key in block:
            node_pool[key] = block[key]
    if "diskSizeGb" in block and source not in NO_DISK:
        node_pool["diskSizeGb"] = block["diskSizeGb"]
    gpu = _gpu(block)
    if gpu:
        node_pool["gpu"] = gpu
    fabric = _fabric(source, pool.extra.get("fabric"))
    if fabric is not None:
        node_pool["fabric"] = fabric
    if source == "EKS" and "capacityBlock" in pool.extra:
        node_pool["capacityBlock"] = dict(pool.extra["capacityBlock"])
    return node_pool


def _gpu(block: Mapping[str, Any]) -> dict[str, Any]:
    """Return a class's provisioning block's GPUs as the cloud pool's ``gpu``."""
    accelerator = block.get("accelerator")
    gpu: dict[str, Any] = {}
    if isinstance(accelerator, Mapping):
        if accelerator.get("type"):
            gpu["acceleratorType"] = accelerator["type"]
        if accelerator.get("count"):
            gpu["acceleratorCount"] = accelerator["count"]
    if block.get("driversPreset"):
        gpu["driversPreset"] = block["driversPreset"]
    return gpu


def _fabric(source: str, fabric: Any) -> Any:
    """Return the cloud pool's ``fabric`` for the InferenceCluster pool's, or None for none."""
    kind = fabric.get("type") if isinstance(fabric, Mapping) else None
    if kind is None or kind != FABRICS.get(source):
        return None  # None, or a fabric this cloud does not take (the XRD refuses those)
    if source == "AKS":
        return kind
    if source == "Nebius":
        return {"type": kind, "infiniband": dict(fabric.get("infiniband") or {})}
    return {"type": kind}


def cloud_cluster_spec(
    source: str,
    location: Mapping[str, Any],
    pools: Sequence[Pool],
    classes: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """Return the spec of the <Cloud>Cluster that provisions ``pools`` on ``source``.

    The location block gives the region (or location), and, when set, the Kubernetes
    version and the provider config whose credentials create the cluster.

    Call only when :func:`provisioning_problems` found none.
    """
    spec: dict[str, Any] = {}
    if source in LOCATION_FIELDS:
        key = LOCATION_FIELDS[source]
        spec[key] = location[key]
    if location.get("kubernetesVersion"):
        spec["kubernetesVersion"] = location["kubernetesVersion"]
    credentials = location.get("credentials")
    if isinstance(credentials, Mapping) and credentials:
        spec["credentials"] = dict(credentials)
    spec["nodePools"] = [
        cloud_node_pool(source, pool, classes[pool.class_name]["provisioning"]) for pool in pools
    ]
    return spec
