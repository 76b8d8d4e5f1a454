"""Whether a ModelDeployment's replicas are scheduled: the ``ReplicasScheduled`` condition a
placement earns (decisions.md, "Conditions"): True ``ReplicasCreated`` or ``OverCommitted``
(a Ready replica kept on a pool that does not admit it); False ``Scheduling``,
``NoClusters``, ``InvalidNodeSelector``, ``SelectorCostExceeded``,
``InsufficientCapacity``, ``OverCommitted`` (a replica moves because its pool does not
admit it) or ``Unschedulable`` (because its pods stayed unschedulable).

It is the planner's verdict, so ``modelplane plan`` and ``modelplane simulate`` report
the same words the function writes.
"""

from __future__ import annotations

from modelplane.domain.cache import CacheStatus
from modelplane.domain.conditions import Condition
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
    Unschedulable,
)
from modelplane.domain.text import cut
from modelplane.kit import listed
from modelplane.planning.cache import CacheState

# Long enough to name a dozen clusters, short enough for `kubectl describe`.
MESSAGE_LIMIT = 1024
SCHEDULED = "ReplicasScheduled"


def scheduled_condition(
    deployment: Deployment, placement: Placement, cache: CacheState
) -> Condition:
    """Return ``ReplicasScheduled`` for a placement."""
    wanted, placed = max(deployment.replicas, 0), len(placement.replicas)
    keeping = f"keeping {placed} placed {replicas_word(placed)}, placing none"
    hold = placement.hold
    if isinstance(hold, CostlySelector):
        return Condition(
            SCHEDULED, False, "SelectorCostExceeded", cap(f"{explain.hold(hold)}; {keeping}")
        )
    if isinstance(hold, InvalidSelector):
        return Condition(
            SCHEDULED, False, "InvalidNodeSelector", cap(f"{explain.hold(hold)}; {keeping}")
        )
    if isinstance(hold, CacheUnresolved) and placed < wanted:
        what = "not found" if cache.status is CacheStatus.MISSING else "not read yet"
        return Condition(
            SCHEDULED,
            False,
            "Scheduling",
            f"waiting for ModelCache {hold.cache} ({what}); {keeping}",
        )
    moving = _moving_text(placement)
    if placed >= wanted and not moving:
        done = f"{placed} of {wanted} {replicas_word(wanted)} placed"
        if placement.overcommitted:
            return Condition(
                SCHEDULED, True, "OverCommitted", cap(f"{done}; {_kept_text(placement)}")
            )
        return Condition(SCHEDULED, True, "ReplicasCreated", done)
    head = f"placed {placed} of {wanted} {replicas_word(wanted)}"
    if placed >= wanted:
        return Condition(SCHEDULED, False, _moving_reason(placement), cap(f"{head}; {moving}"))
    tail = f"; {moving}" if moving else ""
    if placement.overcommitted:
        tail += f"; {_kept_text(placement)}"
    if placement.selected == 0:
        text = f"{head}: no InferenceCluster {_selector_text(deployment)}{tail}"
        return Condition(SCHEDULED, False, "NoClusters", cap(text))
    head += tail
    why = explain.summary(_passed_over(placement), MESSAGE_LIMIT - len(head) - 2)
    return Condition(SCHEDULED, False, "InsufficientCapacity", cap(f"{head}; {why}"))


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
    return f"keeping Ready {listed(kept, sep=', ')}: a Ready replica is never moved for this"


def _moving_text(placement: Placement) -> str:
    """Say which replicas keep running until their replacements are Ready, and why."""
    if not placement.moving:
        return ""
    moves = [f"{m.name} on {m.cluster} ({explain.drop_reason(m.reason)})" for m in placement.moving]
    return f"keeping {listed(moves, sep=', ')} running until replacements are Ready"


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


def replicas_word(n: int) -> str:
    """``replica`` or ``replicas``, as ``n`` says."""
    return "replica" if n == 1 else "replicas"
