"""Read a cloud cluster composite (EKSCluster, GKECluster) into the clouds' plain Cluster."""

from __future__ import annotations

from typing import Any

from modelplane.compose import _kit as kit
from modelplane.domain.clouds import common

SYSTEM_NODES = 1
SYSTEM_DISK_GB = 100


def read_cluster(
    xr: dict[str, Any], spec: Any, *, shape: str, version: str, system_shape: str
) -> common.CloudCluster:
    """Return the cluster an already validated composite asks for.

    Args:
        xr: The composite, as a dict.
        spec: Its validated model's spec (None raises :class:`common.ClusterError`).
        shape: The node-shape field of its pools, e.g. ``instanceType``.
        version: The Kubernetes version when the spec names none.
        system_shape: The system pool's node shape when the spec names none.
    """
    if spec is None:
        msg = "spec is missing"
        raise common.ClusterError(msg)
    credentials = spec.credentials
    identity = kit.meta(xr)
    system = xr["spec"].get("systemPool") or {}
    return common.CloudCluster(
        name=identity.name,
        namespace=identity.namespace,
        region=spec.region,
        version=spec.version or version,
        provider_config=common.ProviderConfig(
            kind=(credentials and credentials.kind) or common.ProviderConfig.kind,
            name=(credentials and credentials.name) or common.ProviderConfig.name,
        ),
        system=common.SystemPool(
            machine_type=system.get(shape) or system_shape,
            node_count=system.get("nodeCount") or SYSTEM_NODES,
            disk_size_gb=system.get("diskSizeGb") or SYSTEM_DISK_GB,
        ),
        pools=tuple(read_pool(p, shape) for p in xr["spec"]["nodePools"]),
    )


def read_pool(raw: dict[str, Any], shape: str) -> common.GpuPool:
    """Return one GPU pool of the composite's spec (``shape`` names its node-shape field)."""
    accelerator = raw.get("accelerator") or {}
    return common.GpuPool(
        name=raw["name"],
        machine_type=raw[shape],
        node_count=raw["nodeCount"],
        min_node_count=_or(raw.get("minNodeCount"), raw["nodeCount"]),
        max_node_count=_or(raw.get("maxNodeCount"), raw["nodeCount"]),
        zones=tuple(raw.get("zones") or ()),
        disk_size_gb=raw.get("diskSizeGb"),
        accelerator_type=accelerator.get("type"),
        accelerator_count=accelerator.get("count", 0),
        capacity_reservation_id=(raw.get("capacityBlock") or {}).get("capacityReservationId"),
    )


def _or(value: Any, default: int) -> int:
    """A node count that may be unset (absent or null) falls back to ``default``."""
    return default if value is None else int(value)
