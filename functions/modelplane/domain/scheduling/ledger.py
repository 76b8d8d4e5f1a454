"""The fleet ledger: every published pool's nodes and what replicas already charge there.

It is indexed by ``(cluster, pool)``, so charging a replica or asking what a pool has
free costs the same on a fleet of 10 pools or 10,000. A charge against a pool that is
not published is ignored: nothing is placed there, and nothing can be overcommitted.

A pool charges whole nodes per pod (the docs' rule), unless it publishes
``capacity: Devices``: then its pods share nodes, each needing what it claims on one
node (:mod:`.sharing`), and what it has free is the nodes no pod uses.

A pool has the smaller of its declared and observed nodes (:attr:`Pool.usable_nodes`),
and each node the devices it publishes once they are observed (:mod:`.observed_devices`).
Charges of existing replicas carry their admission rank (:mod:`.admission`): the ledger
then says which of them the pool cannot hold (:meth:`Ledger.overcommitted`), and on a
Devices pool it places their pods in that order, where they run, packing only new pods.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence

from modelplane.domain.scheduling import observed_devices, sharing
from modelplane.domain.scheduling.admission import OverCommit, Rank
from modelplane.domain.scheduling.admission import rank as rank_of
from modelplane.domain.scheduling.fleet import Demand, ExistingReplica, FleetCluster, Pods
from modelplane.domain.scheduling.placement import (
    DeviceShortage,
    NotAdmitted,
    PoolUsage,
    Shortage,
    Unschedulable,
)

PoolKey = tuple[str, str]


class _SharedPool:
    """A pool whose pods share nodes: the pods charged there, placed when asked.

    Ranked charges (existing replicas) are placed in admission order, each where the
    earlier ones left room; unranked ones (new placements) are packed after them.
    """

    def __init__(self, node: sharing.NodeShape, offers: dict[sharing.Vector, int]) -> None:
        self.node = node
        self.offers = offers  # what each node offers: {devices per class: nodes}
        self.nodes = sum(offers.values())
        self.ranked: dict[Rank, dict[Demand, int]] = {}
        self.pods: dict[Demand, int] = defaultdict(int)
        self._packed: tuple[sharing.Packing, tuple[bool, ...]] | None = None

    def charge(self, pods: Pods, sign: int, rank: Rank | None) -> None:
        target = self.pods if rank is None else self.ranked.setdefault(rank, defaultdict(int))
        for claimed, count in pods:
            target[claimed] += sign * count
        if rank is not None and not any(n > 0 for n in target.values()):
            del self.ranked[rank]
        self._packed = None

    def _order(self) -> list[Rank]:
        return sorted(self.ranked)

    def _pack(self) -> tuple[sharing.Packing, tuple[bool, ...]]:
        if self._packed is None:
            entries = [self.ranked[r] for r in self._order()]
            self._packed = sharing.pack_in_order(self.node, self.offers, entries, self.pods)
        return self._packed

    def packing(self, extra: Pods = ()) -> sharing.Packing:
        """The pods charged (and ``extra`` new ones) on the nodes."""
        if not extra:
            return self._pack()[0]
        more = dict(self.pods)
        for claimed, count in extra:
            more[claimed] = more.get(claimed, 0) + count
        entries = [self.ranked[r] for r in self._order()]
        return sharing.pack_in_order(self.node, self.offers, entries, more)[0]

    def refused(self) -> list[Rank]:
        """The ranked charges whose pods find no room after those admitted before them."""
        fits = self._pack()[1]
        return [r for r, ok in zip(self._order(), fits, strict=True) if not ok]

    def free(self) -> int:
        """Nodes no pod uses; negative (pods without a node) when overcommitted."""
        packed = self.packing()
        return packed.empty_nodes if packed.fits else -packed.unplaced


class Ledger:
    """Free nodes per published pool, with the charges of the replicas placed so far."""

    def __init__(self, clusters: Iterable[FleetCluster]) -> None:
        """Open a ledger on every pool the clusters publish, with nothing charged yet."""
        self._nodes: dict[PoolKey, int] = {}
        self._declared: dict[PoolKey, int] = {}
        self._used: dict[PoolKey, int] = {}
        self._ranked: dict[PoolKey, dict[Rank, int]] = {}  # opened by a pool's first rank
        self._shared: dict[PoolKey, _SharedPool] = {}
        self._short: dict[PoolKey, bool] = {}  # some node offers fewer devices than declared
        for cluster in clusters:
            for pool in cluster.pools or ():
                key = (cluster.name, pool.name)
                self._nodes[key] = pool.usable_nodes
                self._declared[key] = max(pool.nodes, 0)
                self._used[key] = 0
                if pool.capacity == "Devices":
                    node = sharing.shape(pool.devices)
                    offers = observed_devices.layout(pool, node.classes, node.per_node)
                    self._shared[key] = _SharedPool(node, offers)
                    self._short[key] = offers.get(node.per_node, 0) < self._nodes[key]
                else:
                    self._shared.pop(key, None)  # of two pools of one name, the last counts
                    self._short.pop(key, None)

    def charge(
        self, cluster: str, pool: str, nodes: int, pods: Pods = (), rank: Rank | None = None
    ) -> None:
        """Charge ``nodes`` to a pool (a negative number releases them).

        A pool whose pods share nodes charges the ``pods`` instead (released with a
        negative ``nodes``). ``rank`` is an existing replica's place in admission order;
        None for a new placement.
        """
        key = (cluster, pool)
        if key in self._used:
            self._used[key] += nodes
            if rank is not None and nodes:
                ranked = self._ranked.setdefault(key, {})
                ranked[rank] = ranked.get(rank, 0) + nodes
                if ranked[rank] <= 0:
                    del ranked[rank]
            shared = self._shared.get(key)
            if shared is not None and pods:
                shared.charge(pods, -1 if nodes < 0 else 1, rank)

    def charge_replicas(self, replicas: Iterable[ExistingReplica], sign: int) -> None:
        """Charge (``sign`` 1) or release (-1) what existing replicas record, ranked.

        As :meth:`charge` for each pinned engine, in one loop: a fleet's every replica
        is charged on each call, so the per-replica steps count.
        """
        charge, used = self.charge, self._used
        for replica in replicas:
            cluster, order = replica.cluster, None
            for pinned in replica.engines:
                if (cluster, pinned.pool) in used:  # else ignored, as charge does
                    order = order or rank_of(replica)
                    charge(cluster, pinned.pool, sign * pinned.nodes, pinned.pods, order)

    def overcommitted(self, cluster: str, pool: str) -> list[tuple[Rank, int, int]]:
        """Return the existing replicas the pool cannot hold, in admission order.

        Each as ``(rank, charged before it, what it needs)``: nodes charged by the
        replicas admitted before it and its own nodes; on a pool whose pods share nodes,
        the nodes those use and its pod count.
        """
        key = (cluster, pool)
        shared = self._shared.get(key)
        if shared is not None:
            refused = set(shared.refused())
            if not refused:
                return []
            used = shared.nodes - shared.packing().empty_nodes
            return [(r, used, sum(shared.ranked[r].values())) for r in sorted(refused)]
        out: list[tuple[Rank, int, int]] = []
        admitted = 0
        capacity = self._nodes.get(key, 0)
        for rank, nodes in sorted(self._ranked.get(key, {}).items()):
            if admitted + nodes <= capacity:
                admitted += nodes
            else:
                out.append((rank, admitted, nodes))
        return out

    def over_commit(self, cluster: str, pool: str, charged: int, needed: int) -> OverCommit:
        """What an over-committed pool has and what is charged there, for the reason."""
        unit = "pods" if self.shares(cluster, pool) else "nodes"
        lost = self.observed_below_declared(cluster, pool)
        return OverCommit(cluster, pool, self.nodes(cluster, pool), charged, needed, unit, lost)

    def declared(self, cluster: str, pool: str) -> int:
        """Return a pool's declared node count (:meth:`nodes` is what it charges against)."""
        return self._declared.get((cluster, pool), 0)

    def observed_below_declared(self, cluster: str, pool: str) -> bool:
        """Tell whether the pool has fewer usable nodes than it declares (it lost some),
        or, on a pool whose pods share nodes, a node publishing fewer devices."""
        key = (cluster, pool)
        return self._nodes.get(key, 0) < self._declared.get(key, 0) or self._short.get(key, False)

    def free(self, cluster: str, pool: str) -> int:
        """Return a pool's free nodes (negative when retained replicas overcommit it).

        On a pool whose pods share nodes: the nodes no pod uses, or minus the pods that
        find no node when overcommitted.
        """
        key = (cluster, pool)
        shared = self._shared.get(key)
        if shared is not None:
            return shared.free()
        return self._nodes.get(key, 0) - self._used.get(key, 0)

    def nodes(self, cluster: str, pool: str) -> int:
        """Return a pool's published node count."""
        return self._nodes.get((cluster, pool), 0)

    def shares(self, cluster: str, pool: str) -> bool:
        """Tell whether a pool's pods share nodes (it publishes ``capacity: Devices``)."""
        return (cluster, pool) in self._shared

    def packing(self, cluster: str, pool: str) -> sharing.Packing | None:
        """Return where a pool's pods sit on its nodes; None unless its pods share nodes."""
        shared = self._shared.get((cluster, pool))
        return None if shared is None else shared.packing()

    def snapshot(self) -> dict[PoolKey, int]:
        """Return every pool's free nodes now."""
        nodes = self._nodes
        free = {key: nodes[key] - used for key, used in self._used.items()}
        # A pool whose pods share nodes has free what its packing leaves (see free).
        for key, shared in self._shared.items():
            free[key] = shared.free()
        return free

    def usage(self, before: dict[PoolKey, int]) -> tuple[PoolUsage, ...]:
        """Every pool's nodes and free nodes ``before`` (a :meth:`snapshot`) and now, sorted."""
        nodes, after = self._nodes, self.snapshot()
        return tuple(
            PoolUsage(key[0], key[1], nodes[key], before[key], after[key]) for key in sorted(nodes)
        )

    def room(self, cluster: str) -> Room:
        """Start trying one replica's engines on a cluster's pools."""
        return Room(self, cluster)

    def shortage(
        self, cluster: str, pool: str, nodes: int, pods: Pods
    ) -> Shortage | DeviceShortage:
        """Say what a pool lacks for a replica's engines needing ``nodes`` (or ``pods``)."""
        shared = self._shared.get((cluster, pool))
        if shared is None:
            return Shortage(pool, self.free(cluster, pool), self.nodes(cluster, pool), nodes)
        packed = shared.packing()
        width = len(shared.node.classes)
        total = tuple(sum(v[i] * n for v, n in shared.offers.items()) for i in range(width))
        free = tuple(max(n, 0) for n in packed.free_devices)
        roomiest = max((v for v, _ in packed.free), key=lambda v: (sum(v), v), default=())
        return DeviceShortage(
            pool,
            shared.node.totals(free),
            shared.node.totals(total),
            pods,
            shared.node.totals(roomiest) if any(roomiest) else (),
        )

    def __iter__(self) -> Iterator[PoolKey]:
        """Iterate over every published pool, as ``(cluster, pool)``."""
        return iter(self._nodes)


class Room:
    """One replica's engines tried on a cluster's pools: what they would take together.

    An engine that costs no nodes (claims no devices) fits any pool it matches, even a
    full one.
    """

    def __init__(self, ledger: Ledger, cluster: str) -> None:
        """Try on ``cluster`` with nothing taken yet."""
        self._ledger = ledger
        self._cluster = cluster
        self._nodes: dict[str, int] = defaultdict(int)
        self._pods: dict[str, list[tuple[Demand, int]]] = defaultdict(list)

    def take(self, pool: str, nodes: int, pods: Pods) -> bool:
        """Take room for an engine if the pool has it, with what is taken so far."""
        shared = self._ledger._shared.get((self._cluster, pool))
        if shared is None:
            if nodes and self._nodes[pool] + nodes > self._ledger.free(self._cluster, pool):
                return False
        elif pods and not shared.packing((*self._pods[pool], *pods)).fits:
            return False
        self._nodes[pool] += nodes
        self._pods[pool].extend(pods)
        return True

    def give_back(self, pool: str, nodes: int, pods: Pods) -> None:
        """Give back what :meth:`take` took for an engine (the last one taken on the pool)."""
        self._nodes[pool] -= nodes
        if pods:
            del self._pods[pool][-len(pods) :]


def refusals(
    clusters: Iterable[FleetCluster],
    others: Iterable[ExistingReplica],
    own: Sequence[ExistingReplica],
) -> dict[Rank, NotAdmitted | Unschedulable]:
    """Say which of the deployment's replicas (``own``) their pools do not admit, and why.

    Every other replica of the fleet charges, as it is, and of the deployment's own
    those that stay (kept or moving): one it drops now (a duplicate, an evicted one)
    is going and is not admitted ahead of anyone. The ledger opens only the pools of
    the clusters ``own`` is on and takes only the charges to pools ``own`` uses: what a
    pool admits depends on its own charges alone, so the rest of the fleet (most of it)
    would be charged for nothing.
    """
    used = {(r.cluster, e.pool) for r in own for e in r.engines}
    hosting = {cluster for cluster, _ in used}
    ledger = Ledger(c for c in clusters if c.name in hosting)
    for replica in (*others, *own):
        if replica.cluster not in hosting:
            continue
        for pinned in replica.engines:
            if (replica.cluster, pinned.pool) in used:
                ledger.charge(
                    replica.cluster, pinned.pool, pinned.nodes, pinned.pods, rank_of(replica)
                )
    mine = {rank_of(r): r for r in own}
    refused: dict[Rank, NotAdmitted | Unschedulable] = {}
    for cluster, pool in sorted(used):
        for found, charged, needed in ledger.overcommitted(cluster, pool):
            candidate = mine.get(found)
            if candidate is not None and found not in refused:
                over = ledger.over_commit(cluster, pool, charged, needed)
                refused[found] = NotAdmitted(candidate.engine_on(pool), over)
    for found, replica in mine.items():
        if replica.stuck and found not in refused:
            refused[found] = Unschedulable(replica.stuck)
    return refused
