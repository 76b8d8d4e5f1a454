"""Admission: every reconcile agrees who a pool holds, and racing deployments converge.

The convergence tests run rounds in which every deployment reads the SAME stale fleet
(as concurrent reconciles do: each call sees the fleet as it was when it began), then
a model of the workload cluster's kube-scheduler runs the pods: pods that run stay on
their node, pending ones take the first node with room for all they claim, in their
creation order, and a replica is Ready when all its pods run. The model is written from
how kube-scheduler binds pods, not from the scheduler under test.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest
from modelplane.domain.scheduling import explain
from modelplane.domain.scheduling.admission import OverCommit, rank
from modelplane.domain.scheduling.fleet import (
    Capacity,
    Deployment,
    ExistingReplica,
    Fleet,
    FleetCluster,
    ObservedCapacity,
    PinnedEngine,
    Pool,
)
from modelplane.domain.scheduling.placement import NotAdmitted, Placement, Unschedulable

from tests.domain.scheduler_kit import (
    NVIDIA,
    cluster,
    deployment,
    engine,
    existing,
    fleet,
    gpu,
    pool,
    request,
    run,
    standalone,
)


def _gpus(
    gpus: int, replicas: int = 1, name: str = "qwen", namespace: str = "ml-team"
) -> Deployment:
    """A deployment of ``replicas`` replicas, each one pod claiming ``gpus`` GPUs."""
    member = standalone(request("gpu", gpus))
    return deployment(name, replicas, engine("qwen", member), namespace=namespace)


def _pool(
    nodes: int, per_node: int = 1, capacity: Capacity = "Nodes", seen: int | None = None
) -> Pool:
    found = dataclasses.replace(pool("gpu", nodes, gpu(count=per_node)), capacity=capacity)
    if seen is not None:
        found = dataclasses.replace(found, observed=ObservedCapacity(seen))
    return found


def _on(
    dep: str,
    cluster_: str,
    *,
    created: str,
    ready: bool = False,
    index: int = 0,
    namespace: str = "ml-team",
) -> ExistingReplica:
    replica = existing(dep, cluster_, index, {"qwen": ("gpu", 1)}, namespace=namespace)
    return dataclasses.replace(replica, created=created, ready=ready)


T1, T2, T3 = "2026-12-01T10:00:00Z", "2026-12-01T10:00:05Z", "2026-12-01T10:01:00Z"


# --- one call: who is admitted ------------------------------------------------------------


def test_the_younger_of_two_replicas_on_a_one_node_pool_moves_and_says_why() -> None:
    racing = fleet(
        cluster("c1", _pool(1)),
        cluster("c2", _pool(1)),
        replicas=[_on("alpha", "c1", created=T1), _on("beta", "c1", created=T2)],
    )
    older = run(_gpus(1, name="alpha"), racing)
    younger = run(_gpus(1, name="beta"), racing)
    assert [(r.cluster, r.new) for r in older.replicas] == [("c1", False)]
    assert older.moving == ()
    # Make before break: the younger keeps running while its replacement lands on c2.
    assert [(r.cluster, r.new) for r in younger.replicas] == [("c2", True)]
    assert [(m.cluster, m.name) for m in younger.moving] == [("c1", "beta-c1-0")]
    reason = younger.moving[0].reason
    assert reason == NotAdmitted("qwen", OverCommit("c1", "gpu", 1, 1, 1))
    assert explain.drop_reason(reason) == (
        "engine qwen: pool gpu on c1 is over-committed: it has 1 node, "
        "replicas admitted before this one take 1, this one needs 1"
    )


def test_the_order_is_creation_time_whatever_the_names() -> None:
    racing = fleet(
        cluster("c1", _pool(1)),
        cluster("c2", _pool(1)),
        replicas=[_on("alpha", "c1", created=T2), _on("beta", "c1", created=T1)],
    )
    assert run(_gpus(1, name="alpha"), racing).moving[0].name == "alpha-c1-0"
    assert run(_gpus(1, name="beta"), racing).moving == ()


def test_same_creation_time_orders_by_namespace_then_name() -> None:
    replicas = [
        _on("alpha", "c1", created=T1, namespace="team-b"),
        _on("beta", "c1", created=T1, namespace="team-a"),
    ]
    racing = fleet(cluster("c1", _pool(1)), cluster("c2", _pool(1)), replicas=replicas)
    assert run(_gpus(1, name="alpha", namespace="team-b"), racing).moving[0].name == "alpha-c1-0"
    assert run(_gpus(1, name="beta", namespace="team-a"), racing).moving == ()
    assert sorted(replicas, key=rank)[0].namespace == "team-a"


def test_a_ready_replica_holds_its_node_before_an_older_pending_one() -> None:
    # kube-scheduler ran the younger one's pod: it is what holds the node, so the older
    # Pending one is the one that moves.
    racing = fleet(
        cluster("c1", _pool(1)),
        cluster("c2", _pool(1)),
        replicas=[_on("alpha", "c1", created=T1), _on("beta", "c1", created=T2, ready=True)],
    )
    assert run(_gpus(1, name="beta"), racing, ready=["beta-c1-0"]).moving == ()
    moved = run(_gpus(1, name="alpha"), racing)
    assert [m.name for m in moved.moving] == ["alpha-c1-0"]
    assert [r.cluster for r in moved.replicas] == ["c2"]


def test_a_ready_replica_on_an_over_committed_pool_is_kept_and_reported() -> None:
    # The pool shrank under two Ready replicas: nothing is moved, the over-commit shows.
    shrunk = fleet(
        cluster("c1", _pool(1)),
        cluster("c2", _pool(1)),
        replicas=[
            _on("alpha", "c1", created=T1, ready=True),
            _on("beta", "c1", created=T2, ready=True),
        ],
    )
    placement = run(_gpus(1, name="beta"), shrunk, ready=["beta-c1-0"])
    assert [(r.cluster, r.new) for r in placement.replicas] == [("c1", False)]
    assert placement.moving == ()
    assert placement.dropped == ()
    assert [(k.name, k.over.capacity, k.over.charged) for k in placement.overcommitted] == [
        ("beta-c1-0", 1, 1)
    ]


def test_no_room_anywhere_lets_a_pending_over_committed_replica_go_and_says_why() -> None:
    # Not Ready, so it serves nothing, and no replacement can start: it goes now (its pod
    # would wait for a node forever) and the shortfall names the full pool.
    racing = fleet(
        cluster("c1", _pool(1)),
        replicas=[_on("alpha", "c1", created=T1), _on("beta", "c1", created=T2)],
    )
    placement = run(_gpus(1, name="beta"), racing)
    assert placement.replicas == ()
    assert placement.moving == ()
    assert [(d.name, type(d.reason)) for d in placement.dropped] == [("beta-c1-0", NotAdmitted)]
    assert placement.short == 1
    assert [type(r).__name__ for p in placement.passed_over for r in p.reasons] == ["NoRoom"]


def test_a_ready_over_committed_replica_stays_even_with_no_room_elsewhere() -> None:
    racing = fleet(
        cluster("c1", _pool(1)),
        replicas=[
            _on("alpha", "c1", created=T1, ready=True),
            _on("beta", "c1", created=T2, ready=True),
        ],
    )
    placement = run(_gpus(1, name="beta"), racing, ready=["beta-c1-0"])
    assert [r.cluster for r in placement.replicas] == ["c1"]
    assert placement.dropped == ()


def test_observed_capacity_below_declared_over_commits_the_pool() -> None:
    lost = fleet(
        cluster("c1", _pool(2, seen=1)),
        cluster("c2", _pool(1)),
        replicas=[_on("alpha", "c1", created=T1), _on("beta", "c1", created=T2)],
    )
    placement = run(_gpus(1, name="beta"), lost)
    reason = placement.moving[0].reason
    assert isinstance(reason, NotAdmitted)
    assert reason.over.observed
    assert "it has 1 node (observed; fewer than declared)" in explain.drop_reason(reason)
    assert [r.cluster for r in placement.replicas] == ["c2"]


@pytest.mark.parametrize(
    ("declared", "seen", "usable"), [(3, None, 3), (3, 2, 2), (2, 5, 2), (2, -1, 0)]
)
def test_a_pool_charges_the_smaller_of_declared_and_observed(
    declared: int, seen: int | None, usable: int
) -> None:
    assert _pool(declared, seen=seen).usable_nodes == usable


def test_a_stuck_replica_moves_make_before_break() -> None:
    stuck = dataclasses.replace(
        _on("alpha", "c1", created=T1), stuck="0/1 nodes are available: 1 Insufficient gpu"
    )
    placement = run(
        _gpus(1, name="alpha"),
        fleet(cluster("c1", _pool(2)), cluster("c2", _pool(1)), replicas=[stuck]),
    )
    assert placement.moving[0].reason == Unschedulable(
        "0/1 nodes are available: 1 Insufficient gpu"
    )
    assert [(r.cluster, r.new) for r in placement.replicas] == [("c2", True)]


def test_devices_pool_admits_whole_replicas_in_order_where_earlier_pods_left_room() -> None:
    # One node of 4 GPUs; each replica is one pod of 3 GPUs: only the first fits.
    racing = fleet(
        cluster("c1", _pool(1, 4, "Devices")),
        cluster("c2", _pool(1, 4, "Devices")),
        replicas=[_dev("alpha", "c1", 3, T1), _dev("beta", "c1", 3, T2)],
    )
    assert run(_gpus(3, name="alpha"), racing).moving == ()
    younger = run(_gpus(3, name="beta"), racing)
    reason = younger.moving[0].reason
    assert isinstance(reason, NotAdmitted)
    assert reason.over.unit == "pods"
    assert "its 1 pod finds no node with room for all it claims" in explain.drop_reason(reason)
    assert [r.cluster for r in younger.replicas] == ["c2"]


def _dev(
    dep: str, cluster_: str, gpus: int, created: str, *, ready: bool = False
) -> ExistingReplica:
    pods = ((((NVIDIA, gpus),), 1),)
    pinned = (PinnedEngine("qwen", "gpu", 1, pods),)
    return ExistingReplica(
        "ml-team", dep, cluster_, 0, pinned, f"{dep}-{cluster_}-0", created, ready
    )


def test_running_pods_are_charged_where_they_run_not_repacked() -> None:
    # Two 4-GPU nodes; pods arrived 2, 1, then 3 GPUs: the 2 and the 1 share node A
    # (1 left), the 3 took node B (1 left). Re-packed from scratch, largest first
    # (3+1 | 2), node B would show 2 free and take a new 2-GPU pod that the real layout
    # has no room for.
    running = [
        _dev("alpha", "c1", 2, T1, ready=True),
        _dev("beta", "c1", 1, T2, ready=True),
        _dev("gamma", "c1", 3, T3, ready=True),
    ]
    busy = fleet(cluster("c1", _pool(2, 4, "Devices")), replicas=running)
    assert run(_gpus(2, name="delta"), busy).replicas == ()
    assert [r.cluster for r in run(_gpus(1, name="delta"), busy).replicas] == ["c1"]


# --- rounds of concurrent reconciles against a model of kube-scheduler --------------------


@dataclass
class _World:
    """The fleet, and the workload clusters' nodes and where each running pod sits."""

    clusters: list[FleetCluster]
    nodes: dict[tuple[str, str], list[int]]  # GPUs per node, by (cluster, pool)
    replicas: list[ExistingReplica] = field(default_factory=list)
    bound: dict[str, list[tuple[tuple[str, str], int, int]]] = field(default_factory=dict)
    tick: int = 0

    def fleet(self) -> Fleet:
        return Fleet(tuple(self.clusters), tuple(self.replicas))

    def reconcile_all(self, deployments: Sequence[Deployment], order: Sequence[int]) -> None:
        """Every deployment reads the same fleet (stale for all but the first writer)."""
        seen = self.fleet()
        results: dict[str, list[ExistingReplica]] = {}
        for i in order:
            dep = deployments[i]
            ready = [r.name for r in seen.replicas if r.deployment == dep.name and r.ready]
            results[dep.name] = self._apply(dep, run(dep, seen, ready=ready), seen)
        self.replicas = [r for d in deployments for r in results[d.name]]
        self.tick += 1

    def _apply(self, dep: Deployment, placement: Placement, seen: Fleet) -> list[ExistingReplica]:
        mine = {(r.cluster, r.index): r for r in seen.replicas if r.deployment == dep.name}
        out = [mine[(m.cluster, m.index)] for m in placement.moving]
        for placed in placement.replicas:
            if not placed.new:
                out.append(mine[(placed.cluster, placed.index)])
                continue
            pins = tuple(
                PinnedEngine(e.engine, e.pool, e.nodes, e.pods) for e in placed.engines or ()
            )
            name = f"{dep.name}-{placed.cluster}-{placed.index}"
            created = f"2026-12-01T10:{self.tick:02d}:00Z"
            out.append(
                ExistingReplica(
                    dep.namespace, dep.name, placed.cluster, placed.index, pins, name, created
                )
            )
        return out

    def kube_scheduler(self) -> None:
        """Run what can run: bound pods stay, pending replicas bind in creation order."""
        names = {r.name for r in self.replicas}
        for gone in [n for n in self.bound if n not in names]:
            del self.bound[gone]
        free = {key: list(sizes) for key, sizes in self.nodes.items()}
        for name, pods in list(self.bound.items()):
            if any(node >= len(free[key]) for key, node, _ in pods):
                del self.bound[name]  # its node is gone: so are its pods
                continue
            for key, node, gpus in pods:
                free[key][node] -= gpus
        for replica in sorted(self.replicas, key=lambda r: (r.created, r.name)):
            if replica.name in self.bound:
                continue
            trial = {key: list(v) for key, v in free.items()}
            pods = []
            for pinned in replica.engines:
                key = (replica.cluster, pinned.pool)
                wants = [sum(c for _, c in d) for d, n in pinned.pods for _ in range(n)]
                for gpus in wants or [1] * pinned.nodes:
                    room = [i for i, f in enumerate(trial[key]) if f >= gpus]
                    if not room:
                        break
                    trial[key][room[0]] -= gpus
                    pods.append((key, room[0], gpus))
                else:
                    continue
                break
            else:
                self.bound[replica.name] = pods
                free = trial
        self.replicas = [dataclasses.replace(r, ready=r.name in self.bound) for r in self.replicas]

    def settle(
        self, deployments: Sequence[Deployment], order: Sequence[int], rounds: int = 12
    ) -> int:
        """Run rounds until nothing changes; return how many it took."""
        for count in range(1, rounds + 1):
            before = list(self.replicas)
            self.reconcile_all(deployments, order)
            self.kube_scheduler()
            if self.replicas == before:
                return count
        raise AssertionError(f"no convergence in {rounds} rounds: {self.replicas}")

    def per_pool(self) -> dict[tuple[str, str], int]:
        used: dict[tuple[str, str], int] = {}
        for replica in self.replicas:
            for pinned in replica.engines:
                key = (replica.cluster, pinned.pool)
                used[key] = used.get(key, 0) + max(pinned.nodes, 1)
        return used


def _world(capacity: Capacity, per_node: int, sizes: dict[str, int]) -> _World:
    clusters = [cluster(name, _pool(n, per_node, capacity)) for name, n in sizes.items()]
    nodes = {(name, "gpu"): [per_node] * n for name, n in sizes.items()}
    return _World(clusters, nodes)


@pytest.mark.parametrize("capacity", ["Nodes", "Devices"])
@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["alpha-reconciled-first", "beta-first"])
def test_two_deployments_racing_for_one_node_converge(
    capacity: Capacity, order: tuple[int, int]
) -> None:
    gpus = 1 if capacity == "Nodes" else 3
    world = _world(capacity, 1 if capacity == "Nodes" else 4, {"c1": 1, "c2": 1})
    deps = [_gpus(gpus, name="alpha"), _gpus(gpus, name="beta")]
    world.settle(deps, order)
    # Both read an empty fleet and took c1: one moved to c2, and both run.
    assert sorted(r.cluster for r in world.replicas) == ["c1", "c2"]
    assert all(r.ready for r in world.replicas)
    assert world.per_pool() == {("c1", "gpu"): 1, ("c2", "gpu"): 1}


@pytest.mark.parametrize("capacity", ["Nodes", "Devices"])
def test_a_burst_beyond_the_fleet_places_exactly_the_room(capacity: Capacity) -> None:
    gpus = 1 if capacity == "Nodes" else 3
    world = _world(capacity, 1 if capacity == "Nodes" else 4, {"c1": 1, "c2": 2})
    deps = [_gpus(gpus, name=f"m{i}") for i in range(5)]
    world.settle(deps, range(5))
    assert len(world.replicas) == 3
    assert all(r.ready for r in world.replicas)
    # The oldest (here: the names, created together) hold the room, the rest wait.
    assert sorted(r.deployment for r in world.replicas) == ["m0", "m1", "m2"]
    for dep in deps[3:]:
        assert run(dep, world.fleet()).short == 1


def test_a_pool_that_shrinks_under_its_replicas_moves_the_pending_one() -> None:
    world = _world("Nodes", 1, {"c1": 2, "c2": 0})
    deps = [_gpus(1, name="alpha"), _gpus(1, name="beta")]
    world.settle(deps, (0, 1))
    assert sorted(r.cluster for r in world.replicas) == ["c1", "c1"]
    # c1 loses a node (observed), c2 gains one: the replica on the lost node goes Pending
    # and moves; the one still running is never moved.
    world.clusters = [
        cluster("c1", _pool(2, seen=1)),
        cluster("c2", _pool(1)),
    ]
    world.nodes = {("c1", "gpu"): [1], ("c2", "gpu"): [1]}
    world.kube_scheduler()
    survivor = next(r.name for r in world.replicas if r.ready)
    world.settle(deps, (1, 0))
    assert all(r.ready for r in world.replicas)
    assert sorted((r.cluster, r.name == survivor) for r in world.replicas) == [
        ("c1", True),
        ("c2", False),
    ]


# --- observed devices: a node that publishes fewer devices than its class declares -------


def _short_pool(
    capacity: Capacity, per_node: int, published: Sequence[int], declared: int | None = None
) -> Pool:
    """A pool whose nodes publish ``published`` GPUs each (its class declares ``per_node``)."""
    groups: dict[int, int] = {}
    for count in published:
        groups[count] = groups.get(count, 0) + 1
    layout = tuple(
        (((NVIDIA, count),) if count else (), nodes) for count, nodes in sorted(groups.items())
    )
    seen = ObservedCapacity(len(published), layout)
    found = _pool(len(published) if declared is None else declared, per_node, capacity)
    return dataclasses.replace(found, observed=seen)


def test_a_nodes_pool_counts_only_nodes_that_publish_every_declared_device() -> None:
    assert _short_pool("Nodes", 4, [4, 4, 2]).usable_nodes == 2
    assert _short_pool("Nodes", 4, [4, 0]).usable_nodes == 1
    assert _short_pool("Nodes", 4, [8, 4]).usable_nodes == 2  # more than declared: enough
    # Unknown devices (no nodeDevices): the declared devices stand.
    unknown = dataclasses.replace(_pool(3, 4), observed=ObservedCapacity(3))
    assert unknown.usable_nodes == 3


def test_a_devices_pool_holds_what_each_node_publishes() -> None:
    # Two nodes declared with 4 GPUs; the driver publishes 2 on one of them. Pods of 2
    # GPUs: the declared layout holds 4, the published one 3; a fourth is refused and the
    # message counts the 6 GPUs there are, not the 8 declared.
    shared = fleet(
        cluster("c1", _short_pool("Devices", 4, [4, 2])),
        replicas=[_dev(f"r{i}", "c1", 2, T1, ready=True) for i in range(3)],
    )
    placement = run(_gpus(2, name="late"), shared)
    assert placement.replicas == ()
    assert placement.short == 1
    assert run(_gpus(2, name="late"), fleet(cluster("c1", _pool(2, 4, "Devices")))).short == 0


def test_a_pod_needing_a_whole_declared_node_does_not_fit_a_short_one() -> None:
    # 4 GPUs declared per node, 3 published on each: a 4-GPU pod fits nowhere, though 6
    # GPUs are free in all.
    short = fleet(cluster("c1", _short_pool("Devices", 4, [3, 3])))
    assert run(_gpus(4, name="big"), short).short == 1
    assert run(_gpus(3, name="fits"), short).short == 0


def test_a_running_replica_on_a_node_that_lost_devices_is_over_committed_in_order() -> None:
    # One node of 4 declared, now publishing 2: the older 2-GPU pod keeps its place, the
    # younger (Pending) one is not admitted and moves where there is room.
    racing = fleet(
        cluster("c1", _short_pool("Devices", 4, [2])),
        cluster("c2", _pool(1, 4, "Devices")),
        replicas=[_dev("alpha", "c1", 2, T1), _dev("beta", "c1", 2, T2)],
    )
    assert run(_gpus(2, name="alpha"), racing).moving == ()
    younger = run(_gpus(2, name="beta"), racing)
    reason = younger.moving[0].reason
    assert isinstance(reason, NotAdmitted)
    assert reason.over.observed
    assert "(observed; fewer nodes or devices than declared)" in explain.drop_reason(reason)
    assert [r.cluster for r in younger.replicas] == ["c2"]


@pytest.mark.parametrize("capacity", ["Nodes", "Devices"])
@pytest.mark.parametrize(
    "order", [tuple(range(6)), tuple(reversed(range(6)))], ids=["oldest-first", "oldest-last"]
)
def test_racing_deployments_converge_on_the_devices_nodes_publish(
    capacity: Capacity, order: tuple[int, ...]
) -> None:
    # c1's class declares 4 GPUs on each of its 2 nodes, but its driver publishes 4 and 2;
    # c2's one node publishes its 4. Six deployments of one pod each. Nodes: a pod of 4
    # takes a whole node, so c1 holds 1 and c2 1 (room for 2, where the declared layout
    # says 3). Devices: pods of 2, so c1 holds 3 and c2 2 (room for 5, declared 6).
    # Every deployment reads the same stale fleet; whichever order they reconcile in,
    # they settle with exactly the room running, none Pending, the rest short.
    gpus = 4 if capacity == "Nodes" else 2
    world = _World(
        [
            cluster("c1", _short_pool(capacity, 4, [4, 2])),
            cluster("c2", _pool(1, 4, capacity)),
        ],
        {("c1", "gpu"): [4, 2], ("c2", "gpu"): [4]},
    )
    deps = [_gpus(gpus, name=f"m{i}") for i in range(6)]
    world.settle(deps, order)
    room = 2 if capacity == "Nodes" else 5
    assert len(world.replicas) == room
    assert all(r.ready for r in world.replicas), world.replicas
    short = [d.name for d in deps if run(d, world.fleet()).short]
    assert len(short) == 6 - room
