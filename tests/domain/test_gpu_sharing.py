"""GPU-granular capacity (opt-in): a pool with ``capacity: Devices`` lets pods share nodes.

The ledger charges whole nodes per pod unless a pool opts in; then each pod needs the
devices it claims on one node (:mod:`modelplane.domain.scheduling.sharing`).
"""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from modelplane.domain.scheduling import explain, sharing
from modelplane.domain.scheduling.fleet import (
    Capacity,
    Deployment,
    FleetCluster,
    PinnedEngine,
    Pods,
    Pool,
)
from modelplane.domain.scheduling.ledger import Ledger
from modelplane.domain.scheduling.placement import DeviceShortage, NoRoom

from tests.domain.scheduler_kit import (
    NVIDIA,
    cluster,
    deployment,
    efa,
    engine,
    existing,
    fleet,
    gpu,
    leader,
    nic,
    pool,
    reasons,
    request,
    run,
    standalone,
    where,
    worker,
)

FOUR = sharing.pods([(((NVIDIA, 4),), 1)])  # one pod claiming 4 GPUs


def _h100(nodes: int = 2, capacity: Capacity = "Nodes") -> Pool:
    """A pool of 8-GPU nodes."""
    return dataclasses.replace(
        pool("h100", nodes, gpu("81559Mi", count=8, arch="Hopper")),
        capacity=capacity,
    )


def _ledger(*pools: Pool) -> Ledger:
    return Ledger([FleetCluster("c", pools=pools)])


def _fill(ledger: Ledger, pods: Pods, nodes: int = 1) -> int:
    """Charge one engine at a time while the pool has room; return how many fit."""
    placed = 0
    while ledger.room("c").take("h100", nodes, pods):
        ledger.charge("c", "h100", nodes, pods)
        placed += 1
        assert placed < 100
    return placed


# --- the ledger in both modes ----------------------------------------------------------


def test_two_8_gpu_nodes_hold_two_4_gpu_pods_when_charged_whole_nodes() -> None:
    assert _fill(_ledger(_h100()), FOUR) == 2


def test_two_8_gpu_nodes_hold_four_4_gpu_pods_when_they_share_nodes() -> None:
    ledger = _ledger(_h100(capacity="Devices"))
    assert _fill(ledger, FOUR) == 4
    assert ledger.free("c", "h100") == 0
    packed = ledger.packing("c", "h100")
    assert packed is not None
    assert packed.free_devices == (0,)


def test_a_pod_needs_what_it_claims_on_one_node() -> None:
    ledger = _ledger(_h100(capacity="Devices"))
    three = sharing.pods([(((NVIDIA, 3),), 1)])
    assert _fill(ledger, three) == 4  # 2 per node: 2 GPUs left on each, 4 in all
    packed = ledger.packing("c", "h100")
    assert packed is not None
    assert packed.free_devices == (4,)
    four = ledger.room("c")
    assert not four.take("h100", 1, FOUR)  # 4 free, but never 4 on one node
    assert ledger.room("c").take("h100", 1, sharing.pods([(((NVIDIA, 2),), 2)]))


def test_sharing_packs_so_a_whole_node_stays_free() -> None:
    ledger = _ledger(_h100(capacity="Devices"))
    for _ in range(2):
        ledger.charge("c", "h100", 1, FOUR)
    assert ledger.free("c", "h100") == 1  # both on one node (fullest node with room)
    assert ledger.room("c").take("h100", 1, sharing.pods([(((NVIDIA, 8),), 1)]))


def test_an_engine_s_pods_are_tried_together() -> None:
    ledger = _ledger(_h100(nodes=1, capacity="Devices"))
    room = ledger.room("c")
    assert room.take("h100", 1, FOUR)
    assert room.take("h100", 1, FOUR)
    assert not room.take("h100", 1, FOUR)  # with the two taken, the node is full
    room.give_back("h100", 1, FOUR)
    assert room.take("h100", 1, FOUR)


def test_charging_order_does_not_change_what_is_free() -> None:
    shapes = [sharing.pods([(((NVIDIA, n),), 1)]) for n in (1, 2, 3, 4, 5, 6, 7, 8, 3, 2, 1, 6)]
    frees = set()
    for order in itertools.islice(itertools.permutations(shapes[:7]), 0, 5040, 97):
        ledger = _ledger(_h100(nodes=5, capacity="Devices"))
        for pods in order:
            ledger.charge("c", "h100", 1, pods)
        packed = ledger.packing("c", "h100")
        assert packed is not None
        frees.add((packed.free, packed.unplaced))
    assert len(frees) == 1


def test_releasing_gives_back_exactly_what_was_charged() -> None:
    ledger = _ledger(_h100(capacity="Devices"))
    before = ledger.snapshot()
    ledger.charge("c", "h100", 1, FOUR)
    ledger.charge("c", "h100", 2, sharing.pods([(((NVIDIA, 8),), 2)]))
    assert ledger.free("c", "h100") == -1  # three nodes' worth on two nodes: overcommitted
    ledger.charge("c", "h100", -2, sharing.pods([(((NVIDIA, 8),), 2)]))
    ledger.charge("c", "h100", -1, FOUR)
    assert ledger.snapshot() == before


def test_classes_are_counted_apart_and_synthetic_devices_never() -> None:
    node = sharing.shape((gpu(count=8), efa(16), nic(8)))
    assert node.classes == ("efa.networking.k8s.aws", NVIDIA)
    assert node.per_node == (16, 8)
    pod = sharing.demand([(NVIDIA, 4), ("efa.networking.k8s.aws", 8), (NVIDIA, 1)])
    assert pod == (("efa.networking.k8s.aws", 8), (NVIDIA, 5))
    packed = sharing.pack(node, 1, {pod: 2})
    assert packed.unplaced == 2 - 1  # the GPUs (5 + 5 > 8) decide, not the EFAs (16)


def test_a_pod_claiming_a_class_no_node_offers_finds_no_node() -> None:
    packed = sharing.pack(sharing.shape((gpu(count=8),)), 3, {(("other.example.com", 1),): 1})
    assert packed.unplaced == 1


def test_a_pool_charged_whole_nodes_reads_as_before() -> None:
    ledger = _ledger(_h100())
    ledger.charge("c", "h100", 1, FOUR)
    assert ledger.free("c", "h100") == 1
    assert not ledger.shares("c", "h100")
    assert ledger.packing("c", "h100") is None


# --- the scheduler ---------------------------------------------------------------------


def _four_gpu(replicas: int) -> Deployment:
    member = standalone(request("gpu", 4))
    return deployment("llama", replicas, engine("llama", member))


def test_deployment_packs_four_replicas_on_a_shared_pool_and_two_on_a_whole_one() -> None:
    dep = _four_gpu(8)
    shared = run(dep, fleet(cluster("a-shared", _h100(capacity="Devices"))))
    whole = run(dep, fleet(cluster("a-shared", _h100())))
    assert len(shared.replicas) == 4
    assert len(whole.replicas) == 2
    no_room = shared.passed_over[0].reasons[0]
    assert isinstance(no_room, NoRoom)
    assert no_room.shortages == (
        DeviceShortage("h100", ((NVIDIA, 0),), ((NVIDIA, 16),), (((((NVIDIA, 4),), 1)),)),
    )
    assert explain.cluster_reason(no_room) == (
        f"pool h100 has 0 of 16 {NVIDIA} free, needs 1 pod of 4 {NVIDIA} on one node"
    )


def test_other_deployments_replicas_charge_what_they_claim() -> None:
    theirs = existing("other", "c1", 0, {"e": ("h100", 1)})
    claimed = PinnedEngine("e", "h100", 1, sharing.pods([(((NVIDIA, 6),), 1)]))
    theirs = dataclasses.replace(theirs, engines=(claimed,))
    placed = run(_four_gpu(4), fleet(cluster("c1", _h100(capacity="Devices")), replicas=[theirs]))
    assert len(placed.replicas) == 2  # 6 of node 1 taken: 4 GPUs fit only on node 2, twice


def test_a_gang_on_a_shared_pool_still_needs_a_node_per_pod() -> None:
    gang = engine(
        "coder",
        leader(request("gpu", 8)),
        worker(1, request("gpu", 8)),
    )
    dep = deployment("coder", 2, gang)
    placed = run(dep, fleet(cluster("c1", _h100(nodes=3, capacity="Devices"))))
    assert where(placed) == [("c1", 0, ("h100",))]
    assert reasons(placed) == {"c1": ["NoRoom"]}


def test_without_opt_in_placements_do_not_change() -> None:
    dep = _four_gpu(3)
    base = fleet(cluster("c1", _h100()), cluster("c2", _h100(nodes=1)))
    placed = run(dep, base)
    assert where(placed) == [("c1", 0, ("h100",)), ("c1", 1, ("h100",)), ("c2", 0, ("h100",))]
    assert [(p.pool, p.free_before, p.free_after) for p in placed.pools] == [
        ("h100", 2, 0),
        ("h100", 1, 0),
    ]


@pytest.mark.parametrize("capacity", ["Nodes", "Devices"])
def test_engines_that_claim_nothing_fit_a_full_pool(capacity: Capacity) -> None:
    dep = deployment(
        "cpu", 1, engine("cpu", standalone(request("nic", 1, 'device.driver == "nic.nvidia.com"')))
    )
    full = dataclasses.replace(pool("h100", 0, gpu(count=8), nic(8)), capacity=capacity)
    placed = run(dep, fleet(cluster("c1", full)))
    assert where(placed) == [("c1", 0, ("h100",))]


def test_a_gangs_pods_never_share_a_node_even_where_their_devices_would() -> None:
    # Leader and Worker claim 2 GPUs each: on one 8-GPU node they would fit together,
    # but a gang's pods run one per node (the docs), so one node holds no gang at all.
    gang = engine("coder", leader(request("gpu", 2)), worker(1, request("gpu", 2)))
    dep = deployment("coder", 1, gang)
    assert run(dep, fleet(cluster("c1", _h100(nodes=1, capacity="Devices")))).replicas == ()
    placed = run(dep, fleet(cluster("c1", _h100(nodes=2, capacity="Devices"))))
    assert where(placed) == [("c1", 0, ("h100",))]
    # Each of its pods takes a node of its own: nothing else fits beside them.
    assert [(p.free_before, p.free_after) for p in placed.pools] == [(2, 0)]


def test_a_gangs_pod_on_a_node_leaves_no_room_for_a_standalone_pod() -> None:
    gang = engine("coder", leader(request("gpu", 2)), worker(1, request("gpu", 2)))
    theirs = existing("coder", "c1", 0, {"coder": ("h100", 2)})
    pods = sharing.pods([(sharing.gang(((NVIDIA, 2),)), 2)])
    theirs = dataclasses.replace(theirs, engines=(PinnedEngine("coder", "h100", 2, pods),))
    busy = fleet(cluster("c1", _h100(nodes=3, capacity="Devices")), replicas=[theirs])
    placed = run(_four_gpu(2), busy)
    assert len(placed.replicas) == 2  # both on node 3: 8 GPUs, two pods of 4
    assert run(deployment("coder2", 1, gang), busy).replicas == ()  # one node left, needs two


def test_a_refusal_names_fragmentation_when_the_free_devices_are_spread_out() -> None:
    # Two 8-GPU nodes, each with 6 taken: 4 free in all, yet no node has 4 together.
    six = sharing.pods([(((NVIDIA, 6),), 2)])
    theirs = dataclasses.replace(
        existing("other", "c1", 0, {"other": ("h100", 2)}),
        engines=(PinnedEngine("other", "h100", 2, six),),
    )
    placed = run(_four_gpu(1), fleet(cluster("c1", _h100(capacity="Devices")), replicas=[theirs]))
    (no_room,) = placed.passed_over[0].reasons
    assert isinstance(no_room, NoRoom)
    assert explain.cluster_reason(no_room) == (
        f"pool h100 has 4 of 16 {NVIDIA} free, needs 1 pod of 4 {NVIDIA} on one node: "
        f"enough are free in all, but spread over nodes (at most 2 {NVIDIA} on one node); "
        "a node frees up when the pods on it go, or add nodes to the pool"
    )
