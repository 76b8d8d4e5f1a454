"""What a ModelDeployment reports: ``status.replicas``, its conditions and its events.

Conditions and reasons follow decisions.md ("Conditions"): ``ReplicasScheduled``
(True ``ReplicasCreated``; False ``Scheduling``, ``NoClusters``, ``InvalidNodeSelector``,
``InsufficientCapacity``, ``OverCommitted``: a replica moves because its pool does not
admit it, ``Unschedulable``: because its pods stayed unschedulable; True
``OverCommitted`` when a Ready replica is kept on a pool that does not admit it),
``ReplicasReady`` (True ``AllReplicasReady``; False
``ModelStarting``, ``NoReplicasScheduled``) and ``ModelCacheResolved`` (False
``ModelCacheUnresolved``, ``ModelCacheNotFound``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane import kit
from modelplane.domain import rollout, workload
from modelplane.domain.cache import CacheStatus
from modelplane.domain.conditions import Condition
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import Placement, ScaledDown
from modelplane.planning import (
    ROLLOUT_CONDITION,
    CacheState,
    ComposedReplica,
    Rolled,
    replicas_word,
    scheduled_condition,
)

READY = "ReplicasReady"
CACHE = "ModelCacheResolved"


def report(
    rsp: fnv1.RunFunctionResponse,
    deployment: Deployment,
    placement: Placement,
    cache: CacheState,
    composed: list[ComposedReplica],
    ready_names: set[str],
    unreachable_names: set[str],
) -> None:
    """Write status, conditions, readiness and events for a placement."""
    total = len(composed)
    ready = sum(1 for r in composed if r.name in ready_names)
    unreachable = [f"{r.name} on {r.cluster}" for r in composed if r.name in unreachable_names]
    wanted = max(deployment.replicas, 0)
    kit.set_status(rsp, {"replicas": {"total": total, "ready": ready}})
    scheduled = scheduled_condition(deployment, placement, cache)
    for condition in (
        scheduled,
        ready_condition(wanted, total, ready, unreachable),
        cache_condition(cache),
    ):
        kit.set_condition(
            rsp, condition.type, condition.status, condition.reason, condition.message
        )
    kit.set_ready(rsp, total == wanted and ready == wanted)
    for message in warnings(deployment, placement, cache, scheduled):
        kit.warn(rsp, message)
    for dropped in placement.dropped:
        if isinstance(dropped.reason, ScaledDown):
            kit.inform(rsp, f"replica {dropped.name} on {dropped.cluster} removed: scaled down")


def ready_condition(
    wanted: int, total: int, ready: int, unreachable: Sequence[str] = ()
) -> Condition:
    """Return ``ReplicasReady``.

    ``unreachable`` says which replicas are not Ready because their cluster is out of
    reach (kept there all the same: the docs' retain rule), so the outage shows here.
    """
    if total == 0 and wanted > 0:
        return Condition(
            READY, False, "NoReplicasScheduled", f"0 of {wanted} {replicas_word(wanted)} placed"
        )
    if ready >= wanted and total == wanted:
        return Condition(
            READY, True, "AllReplicasReady", f"{ready} of {wanted} {replicas_word(wanted)} ready"
        )
    counted = f"{ready} of {wanted} {replicas_word(wanted)} ready"
    if unreachable:
        reached = kit.listed(list(unreachable), sep=", ")
        return Condition(
            READY, False, workload.UNREACHABLE, f"{counted}; cluster out of reach: {reached}"
        )
    return Condition(READY, False, "ModelStarting", counted)


def cache_condition(cache: CacheState) -> Condition:
    """Return ``ModelCacheResolved``."""
    match cache.status:
        case CacheStatus.NONE:
            return Condition(CACHE, True, "NoModelCache", "no modelCacheRef")
        case CacheStatus.UNKNOWN:
            return Condition(
                CACHE, False, "ModelCacheUnresolved", f"ModelCache {cache.name} not read yet"
            )
        case CacheStatus.MISSING:
            return Condition(
                CACHE, False, "ModelCacheNotFound", f"ModelCache {cache.name} not found"
            )
    return Condition(CACHE, True, "ModelCacheResolved", f"ModelCache {cache.name} found")


def warnings(
    deployment: Deployment, placement: Placement, cache: CacheState, scheduled: Condition
) -> list[str]:
    """Warning events: a shortfall or hold, a missing cache, a gang without a cache, moves."""
    events = []
    if not scheduled.status and scheduled.reason not in (
        "Scheduling",
        "OverCommitted",
        "Unschedulable",
    ):
        events.append(scheduled.message)
    if cache.status is CacheStatus.MISSING:
        events.append(f"ModelCache {cache.name} not found: placing no new replicas")
    if cache.status is CacheStatus.NONE:
        events.extend(
            f"engine {e.name} spans {1 + sum(m.pods for m in e.members if m.role == 'Worker')} "
            "nodes without a ModelCache: every pod downloads the weights itself; "
            "set spec.template.spec.modelCacheRef"
            for e in deployment.engines
            if e.is_gang
        )
    events.extend(
        f"replica {d.name} leaves {d.cluster}: {explain.drop_reason(d.reason)}"
        for d in placement.dropped
        if not isinstance(d.reason, ScaledDown)
    )
    events.extend(
        f"replica {m.name} on {m.cluster} must move ({explain.drop_reason(m.reason)}); "
        "it keeps running until a replacement is Ready"
        for m in placement.moving
    )
    events.extend(
        f"replica {k.name} on {k.cluster} is Ready on an over-committed pool, so it stays: "
        f"engine {k.engine}: {explain.overcommit(k.over)}"
        for k in placement.overcommitted
    )
    return events


def rollout_status(xr: Mapping[str, Any], rolled: Rolled) -> dict[str, Any]:
    """The rollout's status fields: ``observedGeneration`` and the updated counts."""
    generation = (xr.get("metadata") or {}).get("generation")
    out: dict[str, Any] = {}
    if isinstance(generation, int | float):
        out["observedGeneration"] = int(generation)
    return out


def report_rollout(
    rsp: fnv1.RunFunctionResponse, xr: Mapping[str, Any], rolled: Rolled, wanted: int
) -> None:
    """Write the rollout's status, its ``Progressing`` condition and its events."""
    kit.set_status(rsp, rollout_status(xr, rolled))
    fields = rsp.desired.composite.resource.fields["status"].struct_value.fields
    replicas = fields["replicas"].struct_value
    replicas.update({"updated": rolled.updated, "updatedReady": rolled.updated_ready})
    progress = rolled.progress
    kit.set_condition(rsp, ROLLOUT_CONDITION, progress.status, progress.reason, progress.message)
    if progress.reason == rollout.DEADLINE_EXCEEDED:
        kit.warn(rsp, f"rollout of {wanted} {replicas_word(wanted)} stopped: {progress.message}")
    for event in rolled.events:
        kit.inform(rsp, event)
