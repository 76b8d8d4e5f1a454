"""Run a scenario: each step's events, then reconcile passes until the fleet settles.

A pass reconciles every ModelDeployment once, in name order, the way the function
runs in a cluster: it reads the InferenceClusters its ``clusterSelector`` matches and
every ModelReplica of the fleet, schedules (:func:`modelplane.planning.plan`, the
function's own decision) and composes its ModelReplicas
(:func:`modelplane.planning.replica_manifests`, the function's own manifests). What it composes replaces its replicas in the one shared ledger at
once, so the next deployment (and the next pass) observes them. At the end of a pass
every new replica starts (see :mod:`.world`), so moves that wait for a Ready
replacement finish a pass later.

A step has converged when a whole pass changes nothing; a step that has not after
``max_passes`` passes is recorded as not converged, with the fleet as it then is.

Each capacity mode (:mod:`.results`) plays the whole timeline on a fleet of its own,
with every published pool counted as the mode says, so modes never see each other's
replicas.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import struct_pb2 as structpb

from modelplane import planning
from modelplane.domain import naming, rollout
from modelplane.domain.api import TEMPLATE_HASH_LABEL
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.admission import rank
from modelplane.domain.scheduling.ledger import Ledger
from modelplane.domain.scheduling.placement import NotNeeded, PassedOver, ScaledDown
from modelplane.planning import (
    Rolled,
    as_struct,
    read_cache,
    read_fleet,
    read_replica,
    read_strategy,
    roll,
    surge_for,
    template_hash,
)
from modelplane.simulate import results as rs
from modelplane.simulate import scenario as sc
from modelplane.simulate.world import DELETED, Key, Removal, Replica, World

DEFAULT_MAX_PASSES = 20
SCALED_DOWN = explain.drop_reason(ScaledDown())
STALLED = "Stalled"  # a rollout pass that changed nothing

# Called after every pass: (step index, number of steps, pass).
Progress = Callable[[int, int, int], None]


def check(scenario: sc.Scenario) -> None:
    """Replay every event on the fleet without scheduling, so a bad event is found first.

    Raises:
        sc.ScenarioError: an object or event is wrong, named with where it is.
    """
    world = World(scenario.fleet)
    for step in scenario.steps:
        for located in step.events:
            world.apply(located)


def simulate(
    scenario: sc.Scenario,
    *,
    max_passes: int = DEFAULT_MAX_PASSES,
    progress: Progress | None = None,
    modes: tuple[str, ...] = rs.MODES,
) -> rs.Simulation:
    """Run every step of a scenario and record what the fleet does, once per capacity mode.

    Args:
        modes: The capacity modes to run (:data:`rs.CAPACITY`): ``declared`` counts each
            pool as it declares; ``nodes`` and ``devices`` count every pool so, to compare.

    Raises:
        sc.ScenarioError: the scenario is wrong (checked before anything runs).
    """
    check(scenario)
    total = (len(scenario.steps) + 1) * len(modes)
    runs: list[list[rs.ModeResult]] = []
    for n, mode in enumerate(modes):
        offset = n * (len(scenario.steps) + 1)
        runs.append(_run(scenario, rs.CAPACITY[mode], max_passes, offset, total, progress))
    names = ["the fleet as given", *(s.name for s in scenario.steps)]
    events = [(), *(tuple(e.event.describe() for e in s.events) for s in scenario.steps)]
    steps = tuple(
        rs.StepResult(
            i, names[i], events[i], {m: run[i] for m, run in zip(modes, runs, strict=True)}
        )
        for i in range(len(names))
    )
    return rs.Simulation(scenario.name, scenario.description, max_passes, steps, modes)


def _run(
    scenario: sc.Scenario,
    capacity: str | None,
    max_passes: int,
    offset: int,
    total: int,
    progress: Progress | None,
) -> list[rs.ModeResult]:
    """Play the whole timeline with pools counted as ``capacity`` (None: as declared)."""
    world = World(scenario.fleet, capacity)
    results = [_step(world, offset, [], max_passes, total, progress)]
    for index, step in enumerate(scenario.steps, 1):
        removed: list[Removal] = []
        for located in step.events:
            removed += world.apply(located)
        results.append(_step(world, offset + index, removed, max_passes, total, progress))
    return results


@dataclass
class _Settling:
    """What a step records while its passes run."""

    changes: list[rs.Change] = field(default_factory=list)
    moving: set[str] = field(default_factory=set)
    planned: dict[Key, planning.Planned] = field(default_factory=dict)
    rollout: list[rs.RolloutPass] = field(default_factory=list)
    rolling: set[Key] = field(default_factory=set)


def _step(
    world: World,
    index: int,
    removed: list[Removal],
    max_passes: int,
    total: int,
    progress: Progress | None,
) -> rs.ModeResult:
    settling = _Settling()
    settling.changes += [
        rs.Change(0, _ref(r.deployment), r.replica, r.cluster, "removed", r.reason) for r in removed
    ]
    converged, passes = False, 0
    racing, world.racing = world.racing, False
    while passes < max_passes and not converged:
        passes += 1
        settling.planned = {}
        changed = False
        # Racing reconciles all read the fleet as it was when the pass began.
        snapshot = world.observed_replicas() if racing and passes == 1 else None
        for key in sorted(world.deployments):
            changed |= _reconcile(world, key, passes, settling, snapshot)
        changed |= world.start_replicas()
        changed |= world.republish()  # the clusters' reconciles: a drained pool goes
        converged = not changed
        if progress is not None:
            progress(index, total, passes)
    return rs.ModeResult(
        passes=passes,
        converged=converged,
        deployments=tuple(
            _record(world, key, settling.planned[key]) for key in sorted(settling.planned)
        ),
        changes=tuple(settling.changes),
        moves=_moves(settling.changes),
        shortfalls=tuple(_shortfalls(settling.planned)),
        pools=_pools(world),
        rollout=tuple(settling.rollout),
    )


def _reconcile(
    world: World,
    key: Key,
    pass_: int,
    settling: _Settling,
    snapshot: list[structpb.Struct] | None = None,
) -> bool:
    """Reconcile one deployment against the shared ledger; tell whether anything changed.

    ``snapshot``: the fleet's replicas as read when concurrent reconciles began (None:
    as they are now, after the reconciles before this one).
    """
    model, deployment = world.deployment(key)
    xr = world.deployments[key]
    spec = model.spec.template.spec if model.spec else None
    selector = (
        spec.cluster_selector.match_labels if spec and spec.cluster_selector else None
    ) or {}
    clusters = [
        world.cluster_struct(name)
        for name, doc in sorted(world.clusters.items())
        if _matches(doc, selector)  # Crossplane answers the requirement by these labels
    ]
    replicas = snapshot if snapshot is not None else world.observed_replicas()
    cache_name = planning.cache_name(model)
    found = world.caches.get((key[0], cache_name)) if cache_name else None
    cache = read_cache(cache_name, True, [as_struct(found)] if found is not None else [])
    strategy = read_strategy(xr)
    current = template_hash(xr)
    ready = {r.name for r in world.owned(key) if world.replica_ready(r)}
    surge = surge_for(deployment, strategy, current, ready)
    planned = planning.plan(deployment, cache, clusters, replicas, surge)
    settling.planned[key] = planned
    rolled = roll(xr, deployment, strategy, planned.placement, planned.state, ready, planned.surge)
    desired = [
        m.manifest
        for m in planning.replica_manifests(
            xr, deployment, rolled.placement, planned.state, rolled.labels
        )
    ]
    changed = _replace_owned(world, key, desired, planned, pass_, settling)
    _record_rollout(world, key, rolled, current, pass_, settling)
    return changed


def _record_rollout(
    world: World, key: Key, rolled: Rolled, current: str, pass_: int, settling: _Settling
) -> None:
    """Record a rollout's pass: from the first pass with an old replica until it is done."""
    owned = list(world.owned(key))
    old = sum(1 for r in owned if _template(r.manifest) not in (current, None))
    if not old and key not in settling.rolling:
        return
    wanted = max(world.deployment(key)[1].replicas, 0)
    ready = sum(1 for r in owned if world.replica_ready(r))
    reason = rolled.progress.reason
    last = next((r for r in reversed(settling.rollout) if r.deployment == _ref(key)), None)
    counts = (len(owned) - old, old, max(wanted - ready, 0), ready)
    if last is not None and (last.updated, last.old, last.unavailable, last.ready) == counts:
        # No clock here: a pass that moves nothing is where the function's progress
        # deadline would run out (ProgressDeadlineExceeded) if nothing changes.
        reason = STALLED if reason == rollout.PROGRESSING else reason
    settling.rollout.append(rs.RolloutPass(pass_, _ref(key), *counts, reason))
    if old or rolled.progress.reason != rollout.COMPLETE:
        settling.rolling.add(key)
    else:
        settling.rolling.discard(key)


def _template(manifest: Mapping[str, Any]) -> str | None:
    """The template hash a composed replica carries (None: none)."""
    labels = (manifest.get("metadata") or {}).get("labels") or {}
    value = labels.get(TEMPLATE_HASH_LABEL)
    return None if value is None else str(value)


def _replace_owned(
    world: World,
    key: Key,
    desired: list[dict[str, object]],
    planned: planning.Planned,
    pass_: int,
    settling: _Settling,
) -> bool:
    """Put what a deployment composed in the ledger in place of what it had."""
    before = {r.name: r for r in world.owned(key)}
    placement, dep = planned.placement, _ref(key)
    changed = False
    kept: set[str] = set()
    for manifest in desired:
        replica = Replica(manifest, started=False)
        old = before.get(replica.name)
        _stamp(replica.manifest, world, old)
        kept.add(replica.name)
        if old is None:
            world.replicas[(replica.namespace, replica.name)] = replica
            settling.changes.append(rs.Change(pass_, dep, replica.name, replica.cluster, "placed"))
            changed = True
        elif old.manifest != manifest:
            # A new template restarts the replica's pods; anything else leaves them running.
            same = (
                _template(old.manifest) == _template(manifest)
                or old.manifest.get("spec") == manifest.get("spec")  # only labelled now
            )
            replica.started = old.started and same
            replica.started_at = old.started_at if replica.started else 0
            if not same:
                what = f"template {_template(manifest)}"
                settling.changes.append(
                    rs.Change(pass_, dep, replica.name, replica.cluster, "updated", what)
                )
            world.replicas[(replica.namespace, replica.name)] = replica
            changed = True
    reasons = {d.name: explain.drop_reason(d.reason) for d in placement.dropped}
    for name, old in sorted(before.items()):
        if name not in kept:
            del world.replicas[(old.namespace, name)]
            reason = reasons.get(name, "no longer composed")
            settling.changes.append(rs.Change(pass_, dep, name, old.cluster, "removed", reason))
            settling.moving.discard(name)
            changed = True
    for moving in placement.moving:
        if moving.name not in settling.moving:
            settling.moving.add(moving.name)
            reason = explain.drop_reason(moving.reason)
            settling.changes.append(
                rs.Change(pass_, dep, moving.name, moving.cluster, "moving", reason)
            )
    return changed


def _stamp(manifest: dict[str, Any], world: World, old: Replica | None) -> None:
    """Give a composed replica the creationTimestamp the API server gave (or gives) it."""
    meta = manifest["metadata"]
    if old is None:
        meta["creationTimestamp"] = world.stamp()
    elif "creationTimestamp" in old.manifest["metadata"]:
        meta["creationTimestamp"] = old.manifest["metadata"]["creationTimestamp"]


def _record(world: World, key: Key, planned: planning.Planned) -> rs.DeploymentRecord:
    moving = {m.name: explain.drop_reason(m.reason) for m in planned.placement.moving}
    replicas = []
    for replica in world.owned(key):
        read = read_replica(as_struct(replica.manifest))
        index = read.index if read is not None else -1
        engines = read.engines if read is not None else ()
        replicas.append(
            rs.ReplicaRecord(
                replica.name,
                replica.cluster,
                index,
                world.replica_ready(replica),
                engines,
                moving.get(replica.name, ""),
            )
        )
    replicas.sort(key=lambda r: (r.cluster, r.index, r.name))
    return rs.DeploymentRecord(
        deployment=_ref(key),
        wanted=max(planned.deployment.replicas, 0),
        replicas=tuple(replicas),
        scheduled=planned.scheduled,
        passed_over=_passed_over(planned),
    )


def _passed_over(planned: planning.Planned) -> tuple[PassedOver, ...]:
    return tuple(
        p
        for p in planned.placement.passed_over
        if not any(isinstance(r, NotNeeded) for r in p.reasons)
    )


def _shortfalls(planned: dict[Key, planning.Planned]) -> list[rs.Shortfall]:
    found = []
    for key in sorted(planned):
        wanted = max(planned[key].deployment.replicas, 0)
        placed = len(planned[key].placement.replicas)
        if placed >= wanted:
            continue
        reason, message = planned[key].scheduled.reason, planned[key].scheduled.message
        found.append(
            rs.Shortfall(_ref(key), wanted, placed, reason, message, _passed_over(planned[key]))
        )
    return found


def _moves(changes: list[rs.Change]) -> tuple[rs.Move, ...]:
    """Pair each replica that left for a reason of the fleet with a new one of its deployment.

    A scale-down or a deleted deployment is no move. Replacements are paired in the
    order both happened; a move without one found nowhere to go.
    """
    left: dict[str, list[rs.Change]] = defaultdict(list)
    placed: dict[str, list[rs.Change]] = defaultdict(list)
    for change in changes:
        if change.change == "placed":
            placed[change.deployment].append(change)
        elif change.change == "removed" and change.reason not in (SCALED_DOWN, DELETED):
            left[change.deployment].append(change)
    # A replica placed and gone again in the step (it lost a race) went nowhere.
    gone_again = {(c.deployment, c.replica) for c in changes if c.change == "removed"}
    moves = []
    for deployment in sorted(left):
        targets = iter(
            p for p in placed.get(deployment, []) if (deployment, p.replica) not in gone_again
        )
        for gone in left[deployment]:
            target = next(targets, None)
            moves.append(
                rs.Move(
                    deployment,
                    gone.replica,
                    gone.cluster,
                    target.cluster if target else None,
                    gone.reason,
                )
            )
    return tuple(moves)


def _pools(world: World) -> tuple[rs.PoolUse, ...]:
    """Every published pool's nodes and what the fleet's replicas charge there."""
    clusters = [world.cluster_struct(n) for n in sorted(world.clusters)]
    replicas = world.observed_replicas()
    fleet = read_fleet(clusters, replicas).fleet
    ledger = Ledger(fleet.clusters)
    names = {(ns, naming.label_value(name)): f"{ns}/{name}" for ns, name in world.deployments}
    users: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for replica in fleet.replicas:
        owner = names.get((replica.namespace, replica.deployment))
        owner = owner or f"{replica.namespace}/{replica.deployment or replica.name}"
        for engine in replica.engines:
            ledger.charge(replica.cluster, engine.pool, engine.nodes, engine.pods, rank(replica))
            shared = ledger.shares(replica.cluster, engine.pool)
            used = sum(sum(c for _, c in d) * n for d, n in engine.pods) if shared else engine.nodes
            users[(replica.cluster, engine.pool)][owner] += used
    draining = {(c.name, p.name) for c in fleet.clusters for p in c.pools or () if p.draining}
    return tuple(
        _admitted(ledger, key, _pool_use(ledger, key, users[key]), draining)
        for key in sorted(ledger)
    )


def _admitted(
    ledger: Ledger, key: tuple[str, str], use: rs.PoolUse, draining: set[tuple[str, str]]
) -> rs.PoolUse:
    """Say what the pool declares when it observes fewer nodes, whom it does not admit,
    and whether it is draining."""
    cluster, pool = key
    declared = (
        ledger.declared(cluster, pool) if ledger.observed_below_declared(cluster, pool) else 0
    )
    refused = tuple(order[3] for order, _, _ in ledger.overcommitted(cluster, pool))
    return dataclasses.replace(
        use, declared=declared, overcommitted=refused, draining=key in draining
    )


def _pool_use(ledger: Ledger, key: tuple[str, str], users: dict[str, int]) -> rs.PoolUse:
    """A pool's use: nodes charged; where pods share nodes, the nodes they sit on and the
    devices they claim (a pod that finds no node counts a node, as it overcommits)."""
    cluster, pool = key
    nodes = ledger.nodes(cluster, pool)
    by_deployment = tuple(sorted((d, n) for d, n in users.items() if n))
    packed = ledger.packing(cluster, pool)
    if packed is None:
        return rs.PoolUse(cluster, pool, nodes, nodes - ledger.free(cluster, pool), by_deployment)
    devices = sum(packed.shape.per_node) * nodes
    return rs.PoolUse(
        cluster,
        pool,
        nodes,
        nodes - packed.empty_nodes + packed.unplaced,
        by_deployment,
        capacity="Devices",
        devices=devices,
        devices_used=devices - sum(packed.free_devices),
    )


def _matches(doc: dict[str, object], selector: dict[str, str]) -> bool:
    meta = doc.get("metadata")
    labels = (meta.get("labels") if isinstance(meta, dict) else None) or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _ref(key: Key) -> str:
    return f"{key[0]}/{key[1]}"
