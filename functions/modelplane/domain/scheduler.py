"""The fleet scheduler: a pure function from observed state to a placement.

Each call recomputes the whole placement from scratch (docs L2832-L2840) in phases:

1. **Ledger.** Every existing replica of the fleet charges its pinned pools; this
   deployment's own replicas are then released, to be charged again as retained.
2. **Retain.** Each of the deployment's replicas keeps its cluster and index if the
   cluster still exists and still matches the ``clusterSelector``, carries no
   NoExecute taint the deployment does not tolerate, and every engine's pinned pool is
   still published and still fits the (possibly edited) device selectors. A degraded
   cluster (not Ready, no gateway address) keeps its replicas; capacity is not
   re-checked, so a healthy replica never moves.
   An existing replica that must move because of an edit (its cluster no longer
   matches or is no longer seen, its pool is gone or no longer fits, an added engine
   finds no pool, or a ``copies`` edit grew it beyond its pool) is not dropped: it
   keeps running exactly as it is, charging what it charged, while replacements are
   placed, and goes only once enough of them are Ready (make before break). An
   untolerated NoExecute taint is the exception the docs state: delete, then reschedule.
   **Admit.** Every pool admits the existing replicas charged there in one order that
   every reconcile of every deployment computes the same way from the same fleet
   (:mod:`.scheduling.admission`: Ready first, then oldest, then namespace and name).
   A replica of this deployment the order leaves beyond its pool's capacity (two
   deployments raced for the last node, the pool shrank or lost nodes), or whose pods
   stay unschedulable beyond the grace period, moves like an edit's move above, unless
   it is Ready: a Ready replica is kept and reported, never moved for this.
3. **Scale down.** Beyond ``spec.replicas``, drop from the cluster hosting the most
   of this deployment's replicas (ties: the greater cluster name), highest index first.
4. **Fill.** Place the shortfall one replica at a time on the eligible cluster hosting
   the fewest of this deployment's replicas (ties: cluster name), at the lowest free
   index there. Eligible means Ready, with a gateway address, matching the selector and
   the ModelCache footprint, tolerating every taint, and with a pool for every engine
   that has the free nodes for it.
5. **Settle moves.** Of the replicas that must move, keep as many as the Ready
   replicas fall short of ``spec.replicas`` (the Ready ones first), and drop the rest
   (first, when fill fell short, those not admitted and not Ready). What the dropped
   ones held is filled again at once, at new indexes: one call converges.
6. **Explain.** Every cluster that cannot take one more replica, or was not needed,
   gets typed reasons.

Nothing new is placed while a device selector does not compile, runs past its CEL
cost limit (counted in cost units, see ``scheduling.selectors``), or the referenced
ModelCache is unresolved; what is placed stays placed.
"""

from __future__ import annotations

import heapq
import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from modelplane.domain.scheduling import holds, sharing
from modelplane.domain.scheduling.admission import Rank, rank
from modelplane.domain.scheduling.fit import (
    EngineFit,
    EngineOptions,
    PoolFitter,
    Selectors,
    choose_pools,
)
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Demand,
    Deployment,
    ExistingReplica,
    Fleet,
    FleetCluster,
    PinnedEngine,
    Pods,
    Pool,
    clusters_by_name,
    in_place_order,
)
from modelplane.domain.scheduling.ledger import Ledger, refusals
from modelplane.domain.scheduling.placement import (
    MOVE_REASONS,
    CacheUnresolved,
    ClusterDeselected,
    ClusterGone,
    ClusterReason,
    DroppedReplica,
    DropReason,
    Duplicate,
    EnginePlacement,
    Evicted,
    Held,
    Hold,
    InvalidSelector,
    KeptOvercommitted,
    NoGateway,
    NoPoolFits,
    NoPoolForEngine,
    NoPools,
    NoRoom,
    NotAdmitted,
    NotNeeded,
    NotReady,
    NotSelected,
    OutsideCache,
    Overcommitted,
    PassedOver,
    PlacedReplica,
    Placement,
    PoolDraining,
    PoolGone,
    PoolNoLongerFits,
    Repelled,
    ScaledDown,
    Unschedulable,
)
from modelplane.domain.scheduling.selectors import CelSelectors, SelectorCostError
from modelplane.domain.taints import NO_EXECUTE, untolerated

__all__ = ["CelSelectors", "schedule"]


def schedule(
    deployment: Deployment,
    fleet: Fleet,
    *,
    cache: CacheFootprint | None = None,
    selectors: Selectors | None = None,
    ready: Iterable[str] = (),
) -> Placement:
    """Place a deployment's replicas on the fleet.

    Args:
        deployment: The ModelDeployment to place.
        fleet: Every InferenceCluster that may host it (others are simply unknown) and
            every ModelReplica of the fleet, of every deployment.
        cache: The referenced ModelCache's footprint; None when there is no reference.
        selectors: The CEL engine (default: the real one).
        ready: Names of the deployment's existing replicas that report Ready; a move
            waits for replacements among them.

    Returns:
        The placement: same inputs, same placement.
    """
    engine = selectors if selectors is not None else CelSelectors()
    hold: Hold | None = holds.invalid_selector(deployment, engine)
    if hold is None and cache is not None and not cache.resolved:
        hold = CacheUnresolved(cache.name)
    try:
        return _Run(deployment, fleet, cache, engine, hold, frozenset(ready)).placement()
    except SelectorCostError as exc:
        # Held like an invalid selector: the run again, matching no selector at all.
        costly = holds.costly_selector(deployment, exc)
        return _Run(deployment, fleet, cache, engine, costly, frozenset(ready)).placement()


@dataclass
class _Kept:
    """A replica of the deployment that the run keeps, with what it charges."""

    replica: PlacedReplica
    charges: list[tuple[str, int, Pods]] = field(default_factory=list)
    name: str = ""
    rank: Rank | None = None
    source: ExistingReplica | None = None


class _Run:
    """One scheduling call's working state; :meth:`placement` runs the phases."""

    def __init__(
        self,
        deployment: Deployment,
        fleet: Fleet,
        cache: CacheFootprint | None,
        selectors: Selectors,
        hold: Hold | None,
        ready: frozenset[str] = frozenset(),
    ) -> None:
        self.deployment = deployment
        self.ready = ready
        self.cache = cache
        self.hold = hold
        self.clusters = clusters_by_name(fleet.clusters)
        self.complete = fleet.complete
        self.selector = dict(deployment.cluster_selector)
        self.fitter = PoolFitter(deployment.engines, selectors.matches)
        self.ledger = Ledger(self.clusters.values())
        self.kept: dict[tuple[str, int], _Kept] = {}
        self.indexes: dict[str, set[int]] = defaultdict(set)
        self.dropped: list[DroppedReplica] = []
        # Replicas that must move, still running and charging what they charged, and
        # the indexes they hold so that no replacement takes their name.
        self.moving: list[tuple[ExistingReplica, DropReason]] = []
        self.reserved: dict[str, set[int]] = defaultdict(set)
        self._options: dict[str, list[EngineOptions]] = {}
        self._gates: dict[str, tuple[ClusterReason, ...]] = {}
        own, others = self._split(fleet.replicas)
        self.ledger.charge_replicas(others, 1)
        self.ledger.charge_replicas(own, 1)
        self.before = self.ledger.snapshot()
        self.others = others
        self.kept_overcommitted: list[KeptOvercommitted] = []
        self.ledger.charge_replicas(own, -1)
        self.own = own

    # --- phases -------------------------------------------------------------------------

    def placement(self) -> Placement:
        """Run retain, scale down, fill and explain; return the placement."""
        self._retain()
        self._admit()
        self._relieve_overcommit()
        self._scale_down()
        if self.hold is None:
            self._fill()
        settled = len(self.dropped)
        self._drop_refused_without_room()
        moving = self._settle_moves()
        if self.hold is None and len(self.dropped) > settled:
            self._fill()  # in the room dropped moving replicas held: one call converges
        passed_over = self._explain()
        pools = self.ledger.usage(self.before)
        return Placement(
            wanted=self.deployment.replicas,
            replicas=tuple(k.replica for _, k in sorted(self.kept.items())),
            dropped=tuple(sorted(self.dropped, key=lambda d: (d.cluster, d.index, d.name))),
            passed_over=passed_over,
            hold=self.hold,
            selected=sum(1 for c in self.clusters.values() if self._not_selected(c) is None),
            pools=pools,
            moving=moving,
            overcommitted=tuple(
                sorted(self.kept_overcommitted, key=lambda k: (k.cluster, k.index))
            ),
        )

    def _split(
        self, replicas: Iterable[ExistingReplica]
    ) -> tuple[list[ExistingReplica], list[ExistingReplica]]:
        ns, name = self.deployment.namespace, self.deployment.name
        own: list[ExistingReplica] = []
        others: list[ExistingReplica] = []
        for replica in replicas:
            mine = replica.namespace == ns and replica.deployment == name
            (own if mine else others).append(replica)
        return in_place_order(own), others

    def _retain(self) -> None:
        pending: list[tuple[ExistingReplica, list[EnginePlacement], list[int]]] = []
        claimed: dict[tuple[str, int], str] = {}
        for replica in self.own:
            key = (replica.cluster, replica.index)
            holder = self._holder(key) or claimed.get(key)
            if holder is not None:
                self._drop(replica, Duplicate(holder))
                continue
            outcome = self._retain_one(replica)
            if isinstance(outcome, tuple):
                placed, missing = outcome
                if missing:
                    # Retained engines charge now; the added ones are pinned once every
                    # retained replica is charged.
                    self._charge_engines(replica.cluster, placed, 1)
                    pending.append((replica, placed, missing))
                    claimed[key] = replica.name
                else:
                    self._keep(replica, tuple(placed))
            elif isinstance(outcome, PlacedReplica):
                self._add(
                    _Kept(outcome, _charges(replica.engines), replica.name, rank(replica), replica)
                )
            else:
                self._leave(replica, outcome)
        for replica, placed, missing in pending:
            self._complete(replica, placed, missing)

    def _retain_one(
        self, replica: ExistingReplica
    ) -> tuple[list[EnginePlacement], list[int]] | PlacedReplica | DropReason:
        """Check one existing replica: the engines it keeps, kept as is, or why it goes."""
        cluster = self.clusters.get(replica.cluster)
        if cluster is None:
            return ClusterGone(selecting=bool(self.selector) or not self.complete)
        deselected = self._not_selected(cluster)
        if deselected is not None:
            return ClusterDeselected(deselected)
        evicting = untolerated(cluster.taints, self.deployment.tolerations, effect=NO_EXECUTE)
        if evicting:
            return Evicted(evicting)
        if isinstance(self.hold, InvalidSelector) or cluster.pools is None:
            return PlacedReplica(replica.cluster, replica.index, None)
        pools = {p.name: p for p in cluster.pools}
        placed: list[EnginePlacement] = []
        missing: list[int] = []
        for i, engine in enumerate(self.deployment.engines):
            pin = replica.pin(engine.name)
            if pin is None:
                missing.append(i)
                continue
            pool = pools.get(pin)
            if pool is None:
                return PoolGone(engine.name, pin)
            if pool.draining:
                return PoolDraining(engine.name, pin)  # moves, make before break
            fit = self.fitter.engine_on(i, pool)
            if not isinstance(fit, EngineFit):
                return PoolNoLongerFits(engine.name, pin, fit)
            placed.append(fit.placement)
        return placed, missing

    def _complete(
        self, replica: ExistingReplica, placed: list[EnginePlacement], missing: list[int]
    ) -> None:
        """Pin the engines a retained replica lacks (added to the deployment) on its cluster."""
        options = self._cluster_options(replica.cluster)
        chosen = choose_pools([options[i] for i in missing], self.ledger.room(replica.cluster))
        self._charge_engines(replica.cluster, placed, -1)
        if chosen is None:
            engine = self.deployment.engines[missing[0]].name
            self._leave(replica, NoPoolForEngine(engine))
            return
        by_name = {e.engine: e for e in [*placed, *(f.placement for f in chosen)]}
        engines = tuple(by_name[e.name] for e in self.deployment.engines)
        self._keep(replica, engines)

    def _admit(self) -> None:
        """Move the kept replicas admission refuses, unless Ready: those are reported."""
        staying = [k.source for k in self.kept.values() if k.source is not None]
        own = [*staying, *(r for r, _ in self.moving)]
        refused = refusals(self.clusters.values(), self.others, own)
        for key in sorted(self.kept):
            kept = self.kept[key]
            existing = kept.source
            if existing is None or kept.rank is None:
                continue
            reason = refused.get(kept.rank)
            if reason is None:
                continue
            if existing.ready or existing.name in self.ready:
                if isinstance(reason, NotAdmitted):
                    self.kept_overcommitted.append(
                        KeptOvercommitted(key[0], key[1], existing.name, reason.engine, reason.over)
                    )
                continue
            self._remove(*key)
            self._move(existing, reason)

    def _relieve_overcommit(self) -> None:
        """Move retained replicas whose grown footprint overcommits their pool.

        Capacity is not re-checked for a replica whose footprint did not grow, so a
        healthy replica never moves; one that an edit grew (``copies``) moves,
        highest cluster and index first, until its pool is no longer overcommitted.
        """
        own = {(r.cluster, r.index): r for r in self.own}
        for key in sorted(self.kept, reverse=True):
            kept, existing = self.kept[key], own.get(key)
            if existing is None or kept.replica.engines is None:
                continue
            recorded = {e.name: e.nodes for e in existing.engines}
            for engine in kept.replica.engines:
                free = self.ledger.free(key[0], engine.pool)
                if free < 0 and engine.nodes > recorded.get(engine.engine, 0):
                    self._remove(*key)
                    reason = Overcommitted(
                        engine.engine, engine.pool, engine.nodes, free + engine.nodes
                    )
                    self._move(existing, reason)
                    break

    def _scale_down(self) -> None:
        wanted = max(self.deployment.replicas, 0)
        excess = len(self.kept) - wanted
        if excess <= 0:
            return
        # Most-loaded cluster first (ties: the greater name), its highest index first.
        for _ in range(excess):
            cluster = max((c for c, held in self.indexes.items() if held), key=self._load)
            index = max(self.indexes[cluster])
            kept = self._remove(cluster, index)
            self.dropped.append(DroppedReplica(cluster, index, kept.name, ScaledDown()))

    def _load(self, cluster: str) -> tuple[int, str]:
        """How many of the deployment's replicas a cluster hosts, then its name: to scale down."""
        return len(self.indexes[cluster]), cluster

    def _fill(self) -> None:
        wanted = max(self.deployment.replicas, 0)
        if len(self.kept) >= wanted:
            return
        counts = Counter(cluster for cluster, _ in self.kept)
        # Pods that stayed unschedulable on a cluster tell what its pools declare is
        # not what it runs: a replacement goes elsewhere.
        stuck = {r.cluster for r, why in self.moving if isinstance(why, Unschedulable)}
        heap = [(counts[c], c) for c in self.clusters if c not in stuck and not self._ineligible(c)]
        heapq.heapify(heap)
        while len(self.kept) < wanted and heap:
            count, name = heapq.heappop(heap)
            chosen = self._fit_replica(name)
            if chosen is None:
                continue  # full for good: fill only ever takes capacity away
            index = self._lowest_free_index(name)
            engines = tuple(f.placement for f in chosen)
            placed = PlacedReplica(name, index, engines, new=True)
            self._add(_Kept(placed, _charges(engines)))
            heapq.heappush(heap, (count + 1, name))

    def _drop_refused_without_room(self) -> None:
        """When fill fell short, drop the moving replicas their pool does not admit and
        not Ready: they serve nothing, and their pods would wait for a node forever. A
        stuck one (Unschedulable) stays: the ledger had room for it, so dropped it would
        be placed there again; its pods start once the cluster frees a node."""
        if len(self.kept) >= max(self.deployment.replicas, 0):
            return
        staying: list[tuple[ExistingReplica, DropReason]] = []
        for replica, reason in self.moving:
            serving = replica.ready or replica.name in self.ready
            if isinstance(reason, NotAdmitted) and not serving:
                self._release(replica, reason)
            else:
                staying.append((replica, reason))
        self.moving = staying

    def _settle_moves(self) -> tuple[DroppedReplica, ...]:
        """Keep as many moving replicas as the Ready ones fall short of ``spec.replicas``
        (those that report Ready first); the others go, and with them what they charge."""
        wanted = max(self.deployment.replicas, 0)
        ready = sum(1 for k in self.kept.values() if k.name and k.name in self.ready)
        keep = max(wanted - ready, 0)
        order = sorted(
            self.moving, key=lambda m: (m[0].name not in self.ready, m[0].cluster, m[0].index)
        )
        staying: list[DroppedReplica] = []
        for replica, reason in order:
            if len(staying) < keep:
                staying.append(DroppedReplica(replica.cluster, replica.index, replica.name, reason))
            else:
                self._release(replica, reason)
        return tuple(sorted(staying, key=lambda d: (d.cluster, d.index, d.name)))

    def _release(self, replica: ExistingReplica, reason: DropReason) -> None:
        """Drop a moving replica and what it charges; its index stays reserved, so a
        replacement gets a name of its own, not the one Crossplane is deleting."""
        self._charge_recorded(replica, -1)
        self._drop(replica, reason)

    def _explain(self) -> tuple[PassedOver, ...]:
        used = {cluster for cluster, _ in self.kept}
        # A full deployment needs no word about the clusters it uses; a short one does,
        # since a used cluster with no room left is part of why it is short.
        short = len(self.kept) < max(self.deployment.replicas, 0)
        passed: list[PassedOver] = []
        for name in self.clusters:
            if name in used and not short:
                continue
            reasons = self._ineligible(name)
            if not reasons:
                if self.hold is not None:
                    reasons = (Held(),)
                elif self._fit_replica(name) is None:
                    reasons = (self._no_room(name),)
                elif name not in used:
                    reasons = (NotNeeded(),)
            if reasons:
                passed.append(PassedOver(name, reasons))
        return tuple(passed)

    # --- clusters -----------------------------------------------------------------------

    def _not_selected(self, cluster: FleetCluster) -> NotSelected | None:
        return NotSelected.first(self.selector, dict(cluster.labels)) if self.selector else None

    def _ineligible(self, name: str) -> tuple[ClusterReason, ...]:
        """Return why a cluster cannot take a new replica, capacity aside (memoized)."""
        found = self._gates.get(name)
        if found is None:
            found = self._gates[name] = self._gate(self.clusters[name])
        return found

    def _gate(self, cluster: FleetCluster) -> tuple[ClusterReason, ...]:
        deselected = self._not_selected(cluster)
        if deselected is not None:
            return (deselected,)
        reasons: list[ClusterReason] = []
        if self.cache is not None and not self.cache.covers(cluster):
            reasons.append(OutsideCache(self.cache.name))
        if not cluster.ready:
            reasons.append(NotReady())
        if not cluster.gateway_address:
            reasons.append(NoGateway())
        repelling = untolerated(cluster.taints, self.deployment.tolerations)
        if repelling:
            reasons.append(Repelled(repelling))
        if reasons or isinstance(self.hold, InvalidSelector):
            # Selectors that do not compile cannot be matched against pools at all.
            return tuple(reasons)
        if not cluster.pools:
            return (NoPools(unknown=cluster.pools is None),)
        draining = tuple(sorted(p.name for p in cluster.pools if p.draining))
        return tuple(
            NoPoolFits(o.engine.name, o.misses, draining)
            for o in self._cluster_options(cluster.name)
            if not o.fits
        )

    def _cluster_options(self, name: str) -> list[EngineOptions]:
        found = self._options.get(name)
        if found is None:
            # A draining pool takes nothing new: only the replicas it still runs.
            pools: Sequence[Pool] = [p for p in self.clusters[name].pools or () if not p.draining]
            found = [self.fitter.options(i, pools) for i in range(len(self.deployment.engines))]
            self._options[name] = found
        return found

    def _fit_replica(self, name: str) -> list[EngineFit] | None:
        return choose_pools(self._cluster_options(name), self.ledger.room(name))

    def _no_room(self, name: str) -> NoRoom:
        needed: dict[str, int] = defaultdict(int)
        pods: dict[str, list[tuple[Demand, int]]] = defaultdict(list)
        for options in self._cluster_options(name):
            for fit in options.fits:
                needed[fit.pool] += fit.nodes
                pods[fit.pool] += fit.placement.pods
        return NoRoom(
            tuple(
                self.ledger.shortage(name, pool, need, sharing.pods(pods[pool]))
                for pool, need in sorted(needed.items())
            )
        )

    def _lowest_free_index(self, cluster: str) -> int:
        taken = self.indexes[cluster] | self.reserved[cluster]
        return next(index for index in itertools.count() if index not in taken)

    # --- bookkeeping --------------------------------------------------------------------

    def _keep(self, replica: ExistingReplica, engines: tuple[EnginePlacement, ...]) -> None:
        placed = PlacedReplica(replica.cluster, replica.index, engines)
        self._add(_Kept(placed, _charges(engines), replica.name, rank(replica), replica))

    def _add(self, kept: _Kept) -> None:
        cluster, index = kept.replica.cluster, kept.replica.index
        self._charge(cluster, kept.charges, 1, kept.rank)
        self.kept[(cluster, index)] = kept
        self.indexes[cluster].add(index)

    def _remove(self, cluster: str, index: int) -> _Kept:
        kept = self.kept.pop((cluster, index))
        self._charge(cluster, kept.charges, -1, kept.rank)
        self.indexes[cluster].discard(index)
        return kept

    def _holder(self, key: tuple[str, int]) -> str | None:
        """Return the name of the replica already kept (or moving) at a cluster and index."""
        if key in self.kept:
            return self.kept[key].name
        return next((r.name for r, _ in self.moving if (r.cluster, r.index) == key), None)

    def _leave(self, replica: ExistingReplica, reason: DropReason) -> None:
        """An existing replica is no longer placed as it is: move it, or drop it at once.

        A cluster that no longer exists takes its replicas with it (the docs: they stop
        being emitted and Crossplane collects them); one that a clusterSelector may only
        have left out is a move.
        """
        if isinstance(reason, ClusterGone) and not reason.selecting:
            self._drop(replica, reason)
        elif isinstance(reason, MOVE_REASONS):
            self._move(replica, reason)
        else:
            self._drop(replica, reason)

    def _move(self, replica: ExistingReplica, reason: DropReason) -> None:
        self.moving.append((replica, reason))
        self.reserved[replica.cluster].add(replica.index)
        self._charge_recorded(replica, 1)

    def _drop(self, replica: ExistingReplica, reason: DropReason) -> None:
        self.dropped.append(DroppedReplica(replica.cluster, replica.index, replica.name, reason))

    def _charge_recorded(self, replica: ExistingReplica, sign: int) -> None:
        self.ledger.charge_replicas((replica,), sign)

    def _charge_engines(self, cluster: str, engines: Iterable[EnginePlacement], sign: int) -> None:
        self._charge(cluster, _charges(engines), sign)

    def _charge(
        self,
        cluster: str,
        charges: Iterable[tuple[str, int, Pods]],
        sign: int,
        order: Rank | None = None,
    ) -> None:
        for pool, nodes, pods in charges:
            self.ledger.charge(cluster, pool, sign * nodes, pods, order)


def _charges(engines: Iterable[EnginePlacement | PinnedEngine]) -> list[tuple[str, int, Pods]]:
    """What engines charge their pools: (pool, nodes, pods) each."""
    return [(e.pool, e.nodes, e.pods) for e in engines]
