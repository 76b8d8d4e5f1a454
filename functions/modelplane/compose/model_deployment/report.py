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

from collections.abc import Sequence

from crossplane.function.proto.v1 import run_function_pb2 as fnv1

from modelplane.compose import _kit as kit
from modelplane.compose.model_deployment.fleet import CacheState
from modelplane.compose.model_deployment.manifests import ComposedReplica
from modelplane.domain import workload
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.domain.scheduling.placement import (
    CacheUnresolved,
    CostlySelector,
    InvalidSelector,
    NotAdmitted,
    NotNeeded,
    PassedOver,
    Placement,
    ScaledDown,
    Unschedulable,
)
from modelplane.domain.text import cut

# Long enough to name a dozen clusters, short enough for `kubectl describe`.
MESSAGE_LIMIT = 1024

Condition = tuple[bool, str, str]


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
    kit.set_condition(rsp, "ReplicasScheduled", *scheduled)
    kit.set_condition(rsp, "ReplicasReady", *ready_condition(wanted, total, ready, unreachable))
    kit.set_condition(rsp, "ModelCacheResolved", *cache_condition(cache))
    kit.set_ready(rsp, total == wanted and ready == wanted)
    for message in warnings(deployment, placement, cache, scheduled):
        kit.warn(rsp, message)
    for dropped in placement.dropped:
        if isinstance(dropped.reason, ScaledDown):
            kit.inform(rsp, f"replica {dropped.name} on {dropped.cluster} removed: scaled down")


def scheduled_condition(
    deployment: Deployment, placement: Placement, cache: CacheState
) -> Condition:
    """Return ``ReplicasScheduled`` as (status, reason, message)."""
    wanted, placed = max(deployment.replicas, 0), len(placement.replicas)
    keeping = f"keeping {placed} placed {_replicas(placed)}, placing none"
    hold = placement.hold
    if isinstance(hold, CostlySelector):
        return False, "SelectorCostExceeded", cap(f"{explain.hold(hold)}; {keeping}")
    if isinstance(hold, InvalidSelector):
        return False, "InvalidNodeSelector", cap(f"{explain.hold(hold)}; {keeping}")
    if isinstance(hold, CacheUnresolved) and placed < wanted:
        what = "not found" if cache.status == "missing" else "not read yet"
        return False, "Scheduling", f"waiting for ModelCache {hold.cache} ({what}); {keeping}"
    moving = _moving_text(placement)
    if placed >= wanted and not moving:
        done = f"{placed} of {wanted} {_replicas(wanted)} placed"
        if placement.overcommitted:
            return True, "OverCommitted", cap(f"{done}; {_kept_text(placement)}")
        return True, "ReplicasCreated", done
    head = f"placed {placed} of {wanted} {_replicas(wanted)}"
    if placed >= wanted:
        return False, _moving_reason(placement), cap(f"{head}; {moving}")
    tail = f"; {moving}" if moving else ""
    if placement.overcommitted:
        tail += f"; {_kept_text(placement)}"
    if placement.selected == 0:
        text = f"{head}: no InferenceCluster {_selector_text(deployment)}{tail}"
        return False, "NoClusters", cap(text)
    head += tail
    why = explain.summary(_passed_over(placement), MESSAGE_LIMIT - len(head) - 2)
    return False, "InsufficientCapacity", cap(f"{head}; {why}")


def _moving_reason(placement: Placement) -> str:
    """``OverCommitted`` or ``Unschedulable`` when that is why a replica moves, else
    ``Scheduling`` (an edit moves it)."""
    reasons = {type(m.reason) for m in placement.moving}
    if NotAdmitted in reasons:
        return "OverCommitted"
    if Unschedulable in reasons:
        return "Unschedulable"
    return "Scheduling"


def _kept_text(placement: Placement) -> str:
    """Say which Ready replicas stay on a pool that does not admit them, and why."""
    kept = [
        f"{k.name} (engine {k.engine}: {explain.overcommit(k.over)})"
        for k in placement.overcommitted
    ]
    return f"keeping Ready {kit.listed(kept, sep=', ')}: a Ready replica is never moved for this"


def _moving_text(placement: Placement) -> str:
    """Say which replicas keep running until their replacements are Ready, and why."""
    if not placement.moving:
        return ""
    moves = [f"{m.name} on {m.cluster} ({explain.drop_reason(m.reason)})" for m in placement.moving]
    return f"keeping {kit.listed(moves, sep=', ')} running until replacements are Ready"


def ready_condition(
    wanted: int, total: int, ready: int, unreachable: Sequence[str] = ()
) -> Condition:
    """Return ``ReplicasReady`` as (status, reason, message).

    ``unreachable`` says which replicas are not Ready because their cluster is out of
    reach (kept there all the same: the docs' retain rule), so the outage shows here.
    """
    if total == 0 and wanted > 0:
        return False, "NoReplicasScheduled", f"0 of {wanted} {_replicas(wanted)} placed"
    if ready >= wanted and total == wanted:
        return True, "AllReplicasReady", f"{ready} of {wanted} {_replicas(wanted)} ready"
    counted = f"{ready} of {wanted} {_replicas(wanted)} ready"
    if unreachable:
        return (
            False,
            workload.UNREACHABLE,
            f"{counted}; cluster out of reach: {kit.listed(list(unreachable), sep=', ')}",
        )
    return False, "ModelStarting", counted


def cache_condition(cache: CacheState) -> Condition:
    """Return ``ModelCacheResolved`` as (status, reason, message)."""
    match cache.status:
        case "none":
            return True, "NoModelCache", "no modelCacheRef"
        case "unknown":
            return False, "ModelCacheUnresolved", f"ModelCache {cache.name} not read yet"
        case "missing":
            return False, "ModelCacheNotFound", f"ModelCache {cache.name} not found"
    return True, "ModelCacheResolved", f"ModelCache {cache.name} found"


def warnings(
    deployment: Deployment, placement: Placement, cache: CacheState, scheduled: Condition
) -> list[str]:
    """Warning events: a shortfall or hold, a missing cache, a gang without a cache, moves."""
    events = []
    ok, reason, message = scheduled
    if not ok and reason not in ("Scheduling", "OverCommitted", "Unschedulable"):
        events.append(message)
    if cache.status == "missing":
        events.append(f"ModelCache {cache.name} not found: placing no new replicas")
    if cache.status == "none":
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


def cap(text: str) -> str:
    """Shorten a message to :data:`MESSAGE_LIMIT` characters."""
    return cut(text, MESSAGE_LIMIT)


def _passed_over(placement: Placement) -> list[PassedOver]:
    return [
        p for p in placement.passed_over if not any(isinstance(r, NotNeeded) for r in p.reasons)
    ]


def _selector_text(deployment: Deployment) -> str:
    if not deployment.cluster_selector:
        return "exists"
    wanted = ",".join(f"{k}={v}" for k, v in deployment.cluster_selector)
    return f"matches clusterSelector {wanted}"


def _replicas(n: int) -> str:
    return "replica" if n == 1 else "replicas"
