"""The fleet ledger: every published pool's nodes and what replicas already charge there.

It is indexed by ``(cluster, pool)``, so charging a replica or asking what a pool has
free costs the same on a fleet of 10 pools or 10,000. A charge against a pool that is
not published is ignored: nothing is placed there, and nothing can be overcommitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from modelplane.domain.scheduling.fleet import FleetCluster

PoolKey = tuple[str, str]


class Ledger:
    """Free nodes per published pool, with the charges of the replicas placed so far."""

    def __init__(self, clusters: Iterable[FleetCluster]) -> None:
        """Open a ledger on every pool the clusters publish, with nothing charged yet."""
        self._nodes: dict[PoolKey, int] = {}
        self._used: dict[PoolKey, int] = {}
        for cluster in clusters:
            for pool in cluster.pools or ():
                self._nodes[(cluster.name, pool.name)] = max(pool.nodes, 0)
                self._used[(cluster.name, pool.name)] = 0

    def charge(self, cluster: str, pool: str, nodes: int) -> None:
        """Charge ``nodes`` to a pool (a negative number releases them)."""
        key = (cluster, pool)
        if key in self._used:
            self._used[key] += nodes

    def free(self, cluster: str, pool: str) -> int:
        """Return a pool's free nodes (negative when retained replicas overcommit it)."""
        key = (cluster, pool)
        return self._nodes.get(key, 0) - self._used.get(key, 0)

    def nodes(self, cluster: str, pool: str) -> int:
        """Return a pool's published node count."""
        return self._nodes.get((cluster, pool), 0)

    def snapshot(self) -> dict[PoolKey, int]:
        """Return every pool's free nodes now."""
        return {key: self._nodes[key] - used for key, used in self._used.items()}

    def __iter__(self) -> Iterator[PoolKey]:
        """Iterate over every published pool, as ``(cluster, pool)``."""
        return iter(self._nodes)
