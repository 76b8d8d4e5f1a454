"""InferenceCluster: keep a removed or replaced node pool while ModelReplicas pin it.

The adapter's side of :mod:`modelplane.domain.draining`: it reads which pools exist
(published before, or in the observed cloud cluster), which the spec would replace, and
which the cluster's ModelReplicas (already required by ``modelplane.ai/cluster=<name>``)
pin; then it holds those pools' node groups as observed, publishes them draining, and
says so in the ``PoolsDraining`` condition and a Warning event naming the replicas.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import cluster as domain
from modelplane.domain import draining
from modelplane.domain.draining import Drain

CLOUD_KEY = "cluster"  # the InferenceCluster's cloud cluster resource


def plan(
    req: fnv1.RunFunctionRequest,
    source: str,
    pools: Sequence[domain.Pool],
    classes: Mapping[str, Any],
    problems: Sequence[domain.Problem],
) -> list[Drain]:
    """Return the pools kept draining for the replicas pinned to them."""
    xr = kit.composite(req)
    shown = kit.mapping(xr, "status").get("gpuPools") or []
    observed = observed_node_pools(req)
    existing = {p.get("name") for p in [*shown, *observed] if isinstance(p, Mapping)}
    declared = [p.name for p in pools]
    replaced: list[str] = []
    if source in domain.PROVISIONED and not problems:
        location = kit.mapping(xr, "spec", "cluster").get(source.lower()) or {}
        desired = domain.cloud_cluster_spec(source, location, pools, classes)["nodePools"]
        replaced = draining.replaced(desired, observed)
    pinned = draining.pins(kit.required(req, "replicas"))
    return draining.drains(declared, {str(n) for n in existing if n}, replaced, pinned)


def observed_node_pools(req: fnv1.RunFunctionRequest) -> list[Mapping[str, Any]]:
    """The GPU node pools of the cloud cluster as it exists (none before it is composed)."""
    found = kit.mapping(kit.observed(req, CLOUD_KEY), "spec").get("nodePools")
    return [p for p in found if isinstance(p, Mapping)] if isinstance(found, list) else []


def hold_node_pools(
    req: fnv1.RunFunctionRequest, spec: dict[str, Any], drains: Sequence[Drain]
) -> dict[str, Any]:
    """Return the cloud cluster's spec with the draining pools' node groups as observed."""
    if not drains:
        return spec
    pools = draining.held_node_pools(spec["nodePools"], observed_node_pools(req), drains)
    return {**spec, "nodePools": pools}


def removed(drains: Sequence[Drain]) -> list[str]:
    """The draining pools the spec no longer declares (still observed and published)."""
    return [d.pool for d in drains if d.why == draining.REMOVED]


def report(rsp: fnv1.RunFunctionResponse, drains: Sequence[Drain]) -> None:
    """Say which pools drain and for which replicas: a condition, and a Warning event."""
    if not drains:
        kit.set_condition(rsp, "PoolsDraining", False, "NoneDraining", "no pool is draining")
        return
    message = "; ".join(map(str, drains))
    kit.set_condition(rsp, "PoolsDraining", True, "PinnedReplicas", message)
    kit.warn(rsp, message)
