"""The workload clusters' nodes in the simulator: lost and cordoned nodes, and pods that
start where there is room.

It stands in for kube-scheduler and the node lifecycle, pool by pool:

- a lost node takes its pods with it: the replicas that started last lose theirs first
  (they go Pending, so not Ready) when the nodes left cannot hold every running one;
- a cordoned node keeps its pods but takes no new one;
- a pending replica starts, oldest first (creationTimestamp, then name), once the pool's
  schedulable nodes have room for all its pods (whole nodes, or on a ``capacity:
  Devices`` pool its pods packed where the running ones left room).

The InferenceCluster observes what is left (``status.gpuPools[].observed.nodes``: the
declared nodes less the lost and cordoned ones), which is what the scheduler charges.
A cluster that publishes no pools runs whatever is placed on it, as before.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from modelplane.domain.scheduling.admission import Rank
from modelplane.domain.scheduling.fleet import ExistingReplica, FleetCluster, ObservedCapacity
from modelplane.domain.scheduling.ledger import Ledger


@dataclass
class Down:
    """A pool's nodes that take no new pod: lost ones (gone) and cordoned ones."""

    lost: int = 0
    cordoned: int = 0


def observe(gpu_pools: list[dict[str, Any]], down: Mapping[str, Down]) -> list[dict[str, Any]]:
    """Return a cluster's published pools with what it observes of the ones with nodes down."""
    out = []
    for published in gpu_pools:
        entry = {k: v for k, v in published.items() if k != "observed"}
        found = down.get(str(entry.get("name")))
        if found is not None and (found.lost or found.cordoned):
            left = int(entry.get("nodes") or 0) - found.lost - found.cordoned
            entry["observed"] = {"nodes": max(left, 0)}
        out.append(entry)
    return out


Running = tuple[ExistingReplica, int]  # a started replica and when it started


def lost_pods(
    clusters: Iterable[FleetCluster],
    running: Iterable[Running],
    down: Mapping[tuple[str, str], Down],
) -> set[str]:
    """Names of the running replicas whose pods the nodes still alive cannot hold."""
    live = Ledger(_alive(clusters, down))
    ranks: dict[Rank, str] = {}
    for replica, started in running:
        order = _started(replica, started)
        ranks[order] = replica.name
        _charge(live, replica, order)
    gone: set[str] = set()
    for cluster, pool in live:
        gone.update(ranks[r] for r, _, _ in live.overcommitted(cluster, pool))
    return gone


class Scheduler:
    """Start pending replicas where the schedulable nodes have room for all their pods."""

    def __init__(self, clusters: Iterable[FleetCluster], running: Iterable[Running]) -> None:
        """Charge what runs against the nodes that take pods (not lost, not cordoned)."""
        clusters = list(clusters)
        self._published = {c.name for c in clusters if c.pools is not None}
        self._free = Ledger(clusters)  # pools as observed: lost and cordoned nodes out
        for replica, started in running:
            _charge(self._free, replica, _started(replica, started))

    def start(self, replica: ExistingReplica, now: int) -> bool:
        """Bind the replica's pods if there is room; tell whether they now run."""
        if replica.cluster not in self._published:
            return True
        room = self._free.room(replica.cluster)
        if not all(room.take(e.pool, e.nodes, e.pods) for e in replica.engines):
            return False
        _charge(self._free, replica, _started(replica, now))
        return True


def _alive(
    clusters: Iterable[FleetCluster], down: Mapping[tuple[str, str], Down]
) -> list[FleetCluster]:
    """The clusters with each pool's nodes still alive (cordoned ones hold their pods)."""
    out = []
    for cluster in clusters:
        if cluster.pools is None:
            out.append(cluster)
            continue
        pools = tuple(
            dataclasses.replace(
                p,
                observed=ObservedCapacity(p.nodes - down.get((cluster.name, p.name), Down()).lost),
            )
            for p in cluster.pools
        )
        out.append(dataclasses.replace(cluster, pools=pools))
    return out


def _started(replica: ExistingReplica, started: int) -> Rank:
    return (0, f"{started:012d}", replica.namespace, replica.name, replica.cluster, replica.index)


def _charge(ledger: Ledger, replica: ExistingReplica, order: Rank) -> None:
    for engine in replica.engines:
        ledger.charge(replica.cluster, engine.pool, engine.nodes, engine.pods, order)
