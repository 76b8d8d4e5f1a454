"""The steady reconcile: a ModelDeployment that places nothing reads only what is its own.

A ModelDeployment's placement needs the whole fleet only to place: fill weighs every
cluster its selector matches, and a pool's free nodes count every replica on it. Once
its replicas are all placed, retain, scale down and admission (which is per pool) read
only its own replicas, the clusters they run on and the replicas on those clusters
(docs/design/loop-cost.md section 5a). So each call first requires that **narrow
view**: its own replicas (by the deployment label, in its namespace), each hosting
cluster by name (whatever the selector says now) and the replicas on each (by the
cluster label, every namespace). When the narrow view is steady (:func:`is_steady`) it
answers from it; otherwise it requires the whole fleet too, and answers from that.

Both views take the verdict on the same narrow state (:func:`narrowed` cuts it out of
the whole fleet's), so a call that holds the whole fleet and one that holds only the
narrow view ask for the same requirements and Crossplane's requirement loop settles.
"""

from __future__ import annotations

from collections.abc import Iterable

from modelplane.domain.scheduling.fleet import Fleet
from modelplane.planning.fields import Item, object_key, object_name
from modelplane.planning.fleet import FleetState
from modelplane.planning.identities import raw_identities
from modelplane.planning.planner import Planned


def hosting(state: FleetState) -> list[str]:
    """The clusters the deployment's own (indexed) replicas run on, sorted."""
    return sorted({cluster for cluster, _ in state.own})


def narrowed(state: FleetState) -> FleetState:
    """The narrow view cut out of the whole fleet's state: the hosting clusters and the
    replicas on them (the deployment's own among them)."""
    on = set(hosting(state))
    clusters = {name: found for name, found in state.clusters.items() if name in on}
    replicas = tuple(r for r in state.fleet.replicas if r.cluster in on)
    fleet = Fleet(tuple(clusters.values()), replicas, state.fleet.complete)
    return FleetState(fleet, clusters, dict(state.own), set(state.ready))


def is_steady(planned: Planned) -> bool:
    """The narrow view's verdict: every wanted replica kept where it is (nothing new,
    nothing dropped or moving), no hold, no rolling update adding replicas."""
    placement = planned.placement
    return (
        planned.surge == 0
        and placement.hold is None
        and not placement.dropped
        and not placement.moving
        and len(placement.replicas) == placement.wanted
        and all(not p.new for p in placement.replicas)
    )


def distinct(items: Iterable[Item]) -> list[Item]:
    """Each object once: an own replica is required twice, as own and as on its cluster.

    Once is by its uid and resourceVersion as encoded (one object is the same pair
    however Go ordered its maps), read for all items in one C-level pass; by namespace
    and name where there is none.
    """
    found = list(items)
    raws = raw_identities(found) or [(b"", b"")] * len(found)
    seen: set[object] = set()
    out: list[Item] = []
    for item, raw in zip(found, raws, strict=True):
        key: object = raw if raw[0] and raw[1] else object_name(item) or object_key(item)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
