"""The fleet scheduler's phases over existing replicas: retain (what keeps its cluster and
index, what must move and how it goes make before break), fill, and scale down (docs
L2823-L2946). The other rules: test_scheduler.py."""

from __future__ import annotations

import pytest
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
)
from modelplane.domain.scheduling.placement import (
    ClusterDeselected,
    ClusterGone,
    Duplicate,
    Evicted,
    NotAdmitted,
    Overcommitted,
    PoolGone,
    PoolNoLongerFits,
    ScaledDown,
)
from modelplane.domain.taints import Toleration

from tests.domain.scheduler_kit import (
    cluster,
    deployment,
    engine,
    existing,
    fleet,
    gpu,
    leader,
    memory_at_least,
    pool,
    reasons,
    request,
    run,
    standalone,
    where,
    worker,
)
from tests.domain.test_scheduler import (
    EVICTING,
    H100,
    L4,
    MAINTENANCE,
    Case,
    check,
    own_replica,
    wants,
)

# --- retain ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "dropped"),
    [
        pytest.param(cluster("a", pool("gpu", 1), ready=False), None, id="not-ready-retained"),
        pytest.param(cluster("a", pool("gpu", 1), gateway=""), None, id="no-gateway-retained"),
        pytest.param(
            cluster("a", pool("gpu", 1), taints=[MAINTENANCE]), None, id="noschedule-stays"
        ),
        pytest.param(
            cluster("a", pool("gpu", 1), taints=[EVICTING]), Evicted, id="noexecute-evicts"
        ),
        pytest.param(
            cluster("a", pool("gpu", 1), labels_={"modelplane.ai/region": "eu"}),
            None,
            id="labels-irrelevant-without-selector",
        ),
    ],
)
def test_retain(target: object, dropped: type | None) -> None:
    placement = run(wants("20Gi"), fleet(target, replicas=[own_replica("a")]))  # type: ignore[arg-type]
    if dropped is None:
        assert [(r.cluster, r.index, r.new) for r in placement.replicas] == [("a", 0, False)]
        assert placement.dropped == ()
        assert placement.moving == ()
    else:
        assert [type(d.reason) for d in placement.dropped] == [dropped]
        assert all(r.new for r in placement.replicas)


@pytest.mark.parametrize(
    ("target", "reason"),
    [
        pytest.param(cluster("a", pool("other", 1)), PoolGone, id="pool-gone"),
        pytest.param(
            cluster("a", pool("gpu", 1, gpu("10Gi"))), PoolNoLongerFits, id="pool-no-longer-fits"
        ),
    ],
)
def test_a_replica_that_must_move_keeps_running_while_nothing_replaces_it(
    target: object, reason: type
) -> None:
    # Nothing else fits: the replica stays exactly as it is, and says why it must move.
    placement = run(wants("40Gi"), fleet(target, replicas=[own_replica("a")]), ready=["qwen-a-0"])  # type: ignore[arg-type]
    assert placement.dropped == ()
    assert [(m.cluster, m.index, type(m.reason)) for m in placement.moving] == [("a", 0, reason)]


def test_make_before_break_keeps_the_old_replica_until_the_new_one_is_ready() -> None:
    old = own_replica("a")
    clusters = (cluster("a", pool("gpu", 1, gpu("10Gi"))), cluster("b", pool("gpu", 1)))
    # Pass 1: the pool no longer fits the edited selector; a replacement goes to b.
    first = run(wants("20Gi"), fleet(*clusters, replicas=[old]), ready=[old.name])
    assert where(first) == [("b", 0, ("gpu",))]
    assert [(m.cluster, type(m.reason)) for m in first.moving] == [("a", PoolNoLongerFits)]
    assert first.dropped == ()
    # Pass 2: the replacement exists but is not Ready yet: both stay.
    new = own_replica("b")
    second = run(wants("20Gi"), fleet(*clusters, replicas=[old, new]), ready=[old.name])
    assert [(r.cluster, r.new) for r in second.replicas] == [("b", False)]
    assert [m.cluster for m in second.moving] == ["a"]
    # Pass 3: the replacement is Ready: the old replica goes.
    third = run(wants("20Gi"), fleet(*clusters, replicas=[old, new]), ready=[old.name, new.name])
    assert third.moving == ()
    assert [(d.cluster, type(d.reason)) for d in third.dropped] == [("a", PoolNoLongerFits)]


def test_moving_replicas_keep_their_index_from_replacements_on_the_same_cluster() -> None:
    # The pinned pool no longer fits, another pool of the same cluster does.
    target = cluster("a", pool("gpu", 1, gpu("10Gi")), pool("big", 1))
    placement = run(wants("20Gi"), fleet(target, replicas=[own_replica("a")]))
    assert where(placement) == [("a", 1, ("big",))]
    assert [(m.cluster, m.index) for m in placement.moving] == [("a", 0)]


def test_scaling_down_during_a_move_drops_the_moving_replicas() -> None:
    target = cluster("a", pool("gpu", 1, gpu("10Gi")))
    placement = run(wants("20Gi", replicas=0), fleet(target, replicas=[own_replica("a")]))
    assert placement.moving == ()
    assert [type(d.reason) for d in placement.dropped] == [PoolNoLongerFits]


def test_grown_copies_that_overcommit_the_pool_move_make_before_break() -> None:
    member = standalone(request("gpu", 1, memory_at_least("20Gi")))
    grown = deployment("qwen", 1, engine("qwen", member, copies=2))
    old = own_replica("a")  # charges 1 node of a's 1-node pool
    clusters = (cluster("a", pool("gpu", 1)), cluster("b", pool("gpu", 2)))
    placement = run(grown, fleet(*clusters, replicas=[old]), ready=[old.name])
    assert [(m.cluster, type(m.reason)) for m in placement.moving] == [("a", Overcommitted)]
    assert where(placement) == [("b", 0, ("gpu",))]
    # The old replica still charges only what it charged: the pool is not overcommitted.
    usage = {(u.cluster, u.pool): u.free_after for u in placement.pools}
    assert usage[("a", "gpu")] == 0


def test_grown_copies_with_room_stay_in_place() -> None:
    member = standalone(request("gpu", 1, memory_at_least("20Gi")))
    grown = deployment("qwen", 1, engine("qwen", member, copies=2))
    placement = run(grown, fleet(cluster("a", pool("gpu", 2)), replicas=[own_replica("a")]))
    assert placement.moving == ()
    assert [(r.cluster, r.index, r.new) for r in placement.replicas] == [("a", 0, False)]


def test_deleted_cluster_replaced_elsewhere() -> None:
    # The docs: a deleted cluster's replicas stop being emitted, at once.
    placement = run(wants("20Gi"), fleet(cluster("b", pool("gpu", 1)), replicas=[own_replica("a")]))
    assert [type(d.reason) for d in placement.dropped] == [ClusterGone]
    assert placement.moving == ()
    assert [(r.cluster, r.index, r.new) for r in placement.replicas] == [("b", 0, True)]


def test_a_cluster_the_selector_no_longer_returns_is_a_move() -> None:
    # With a clusterSelector, a cluster missing from the answer may only be deselected.
    dep = wants("40Gi", selector={"modelplane.ai/region": "us-west"})
    placement = run(dep, fleet(replicas=[own_replica("east")]), ready=["qwen-east-0"])
    assert placement.dropped == ()
    assert [(m.cluster, m.reason) for m in placement.moving] == [
        ("east", ClusterGone(selecting=True))
    ]


def test_edited_cluster_selector_moves_replicas() -> None:
    dep = wants("20Gi", selector={"modelplane.ai/region": "us-west"})
    placement = run(
        dep,
        fleet(
            cluster("east", pool("gpu", 1), labels_={"modelplane.ai/region": "us-east"}),
            cluster("west", pool("gpu", 1), labels_={"modelplane.ai/region": "us-west"}),
            replicas=[own_replica("east")],
        ),
    )
    assert [type(m.reason) for m in placement.moving] == [ClusterDeselected]
    assert placement.dropped == ()
    assert where(placement) == [("west", 0, ("gpu",))]


def test_tolerated_noexecute_stays() -> None:
    dep = wants("20Gi", tolerations=[Toleration("modelplane.ai/maintenance", "Exists")])
    placement = run(
        dep, fleet(cluster("a", pool("gpu", 1), taints=[EVICTING]), replicas=[own_replica("a")])
    )
    assert [(r.cluster, r.new) for r in placement.replicas] == [("a", False)]


def test_drain_moves_to_a_cluster_that_fits() -> None:
    placement = run(
        wants("20Gi"),
        fleet(
            cluster("gpu-us-east", pool("gpu", 1), taints=[EVICTING]),
            cluster("gpu-us-west", pool("gpu", 1)),
            replicas=[own_replica("gpu-us-east")],
        ),
    )
    assert where(placement) == [("gpu-us-west", 0, ("gpu",))]
    assert placement.dropped[0].reason == Evicted((EVICTING,))


def test_drain_without_room_runs_short() -> None:
    placement = run(
        wants("20Gi"),
        fleet(
            cluster("gpu-us-east", pool("gpu", 1), taints=[EVICTING]),
            cluster("gpu-us-west", pool("gpu", 1)),
            replicas=[
                own_replica("gpu-us-east"),
                existing("other", "gpu-us-west", 0, {"o": ("gpu", 1)}),
            ],
        ),
    )
    assert placement.replicas == ()
    assert reasons(placement) == {"gpu-us-east": ["Repelled"], "gpu-us-west": ["NoRoom"]}


def test_a_retained_replica_never_moves_for_a_better_cluster() -> None:
    placement = run(
        wants("20Gi"),
        fleet(
            cluster("a", pool("gpu", 1, L4)),
            cluster("b", pool("gpu", 8, H100)),
            replicas=[own_replica("a")],
        ),
    )
    assert [(r.cluster, r.new) for r in placement.replicas] == [("a", False)]


def test_duplicate_replicas_keep_the_first() -> None:
    twin = existing("qwen", "a", 0, {"qwen": ("gpu", 1)})
    first = existing("qwen", "a", 0, {"qwen": ("gpu", 1)})
    placement = run(wants("20Gi"), fleet(cluster("a", pool("gpu", 2)), replicas=[twin, first]))
    assert len(placement.replicas) == 1
    assert [type(d.reason) for d in placement.dropped] == [Duplicate]


def test_engine_added_to_the_deployment_is_pinned_on_the_same_cluster() -> None:
    dep = deployment("pd", 1, engine("prefill"), engine("decode"))
    old = existing("pd", "a", 0, {"prefill": ("gpu", 1)})
    placement = run(
        dep, fleet(cluster("a", pool("gpu", 2)), cluster("b", pool("gpu", 2)), replicas=[old])
    )
    assert where(placement) == [("a", 0, ("gpu", "gpu"))]
    assert placement.replicas[0].new is False


# --- fill ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            Case(
                wants("20Gi", 3),
                fleet(
                    cluster("c", pool("gpu", 4)),
                    cluster("a", pool("gpu", 4)),
                    cluster("b", pool("gpu", 4)),
                ),
                [("a", 0, ("gpu",)), ("b", 0, ("gpu",)), ("c", 0, ("gpu",))],
            ),
            id="spread-before-packing",
        ),
        pytest.param(
            Case(
                wants("20Gi", 5),
                fleet(cluster("a", pool("gpu", 4)), cluster("b", pool("gpu", 4))),
                [
                    ("a", 0, ("gpu",)),
                    ("a", 1, ("gpu",)),
                    ("a", 2, ("gpu",)),
                    ("b", 0, ("gpu",)),
                    ("b", 1, ("gpu",)),
                ],
            ),
            id="ties-broken-by-cluster-name",
        ),
        pytest.param(
            Case(
                wants("20Gi", 3),
                fleet(cluster("a", pool("gpu", 1)), cluster("b", pool("gpu", 4))),
                [("a", 0, ("gpu",)), ("b", 0, ("gpu",)), ("b", 1, ("gpu",))],
            ),
            id="packs-where-room-remains",
        ),
        pytest.param(
            Case(
                wants("20Gi", 1),
                fleet(
                    cluster("a", pool("gpu", 1), ready=False),
                    cluster("b", pool("gpu", 1), gateway=""),
                    cluster("c", pool("gpu", 1), taints=[MAINTENANCE]),
                    cluster("d", pool("gpu", 1), unpublished=True),
                    cluster("e"),
                    cluster("f", pool("gpu", 1)),
                ),
                [("f", 0, ("gpu",))],
                passed_over={
                    "a": ["NotReady"],
                    "b": ["NoGateway"],
                    "c": ["Repelled"],
                    "d": ["NoPools"],
                    "e": ["NoPools"],
                },
            ),
            id="eligibility",
        ),
        pytest.param(
            Case(
                wants("20Gi", 1, tolerations=[Toleration("", "Exists")]),
                fleet(cluster("a", pool("gpu", 1), taints=[MAINTENANCE, EVICTING])),
                [("a", 0, ("gpu",))],
            ),
            id="tolerated-taints-take-new-replicas",
        ),
        pytest.param(
            Case(
                wants("20Gi", 2),
                fleet(
                    cluster("a", pool("gpu", 1), labels_={"tier": "frontier"}),
                    cluster("b", pool("gpu", 1)),
                ),
                [("a", 0, ("gpu",))],
                cache=CacheFootprint("weights", match_labels=(("tier", "frontier"),)),
                passed_over={"b": ["OutsideCache"]},
            ),
            id="cache-footprint-by-selector",
        ),
        pytest.param(
            Case(
                wants("20Gi", 2),
                fleet(cluster("a", pool("gpu", 1)), cluster("b", pool("gpu", 1))),
                [("b", 0, ("gpu",))],
                cache=CacheFootprint("weights", clusters=frozenset({"b"})),
            ),
            id="cache-footprint-by-name",
        ),
    ],
)
def test_fill(case: Case) -> None:
    check(case)


def test_fill_takes_the_lowest_free_index() -> None:
    mine = [own_replica("a", 1), own_replica("a", 3)]
    placement = run(wants("20Gi", 4), fleet(cluster("a", pool("gpu", 8)), replicas=mine))
    assert [(r.index, r.new) for r in placement.replicas] == [
        (0, True),
        (1, False),
        (2, True),
        (3, False),
    ]


def test_fill_counts_retained_replicas_when_spreading() -> None:
    mine = [own_replica("a", 0), own_replica("a", 1)]
    placement = run(
        wants("20Gi", 4),
        fleet(cluster("a", pool("gpu", 8)), cluster("b", pool("gpu", 8)), replicas=mine),
    )
    assert where(placement) == [
        ("a", 0, ("gpu",)),
        ("a", 1, ("gpu",)),
        ("b", 0, ("gpu",)),
        ("b", 1, ("gpu",)),
    ]


# --- scale down -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("placed", "replicas", "want"),
    [
        pytest.param(
            [("a", 0), ("a", 1), ("b", 0)], 2, [("a", 0), ("b", 0)], id="most-loaded-first"
        ),
        pytest.param([("a", 0), ("b", 0)], 1, [("a", 0)], id="ties-greater-name"),
        pytest.param([("a", 0), ("a", 2), ("a", 5)], 1, [("a", 0)], id="greater-index"),
        pytest.param(
            [("a", 0), ("a", 1), ("b", 0), ("b", 1), ("c", 0)],
            2,
            [("a", 0), ("b", 0)],
            id="levels-then-names",
        ),
        pytest.param([("a", 0), ("b", 0)], 0, [], id="to-zero"),
    ],
)
def test_scale_down(
    placed: list[tuple[str, int]], replicas: int, want: list[tuple[str, int]]
) -> None:
    mine = [own_replica(c, i) for c, i in placed]
    placement = run(
        wants("20Gi", replicas),
        fleet(
            cluster("a", pool("gpu", 8)),
            cluster("b", pool("gpu", 8)),
            cluster("c", pool("gpu", 8)),
            replicas=mine,
        ),
    )
    assert [(r.cluster, r.index) for r in placement.replicas] == want
    assert all(isinstance(d.reason, ScaledDown) for d in placement.dropped)
    dropped = [(d.cluster, d.index) for d in placement.dropped]
    assert dropped == sorted(set(placed) - set(want))
    assert all(type(d.cluster) is str for d in placement.dropped)


# --- a moving replica that goes frees its room for the replacement in the same call -----
# (found by test_scheduler_properties: each took a second reconcile to place one)


def test_a_refused_replica_that_goes_leaves_its_room_to_its_replacement_at_once() -> None:
    # An edit shrank the pending replica from two nodes to one; its pool has one node
    # left, so the pool does not admit it as recorded and no replacement fits beside it.
    # It goes, and its replacement takes the room it held: same call, under a new name
    # (Crossplane is deleting the old one's).
    dep = deployment("qwen", 1, engine("e0", standalone(request("gpu", 1))))
    shrunk = existing("qwen", "c1", 0, {"e0": ("gpu", 2)})
    placement = run(dep, fleet(cluster("c1", pool("gpu", 1, gpu())), replicas=[shrunk]))
    assert [(d.name, type(d.reason)) for d in placement.dropped] == [("qwen-c1-0", NotAdmitted)]
    assert [(r.cluster, r.index, r.new) for r in placement.replicas] == [("c1", 1, True)]
    assert placement.moving == ()


def test_a_moving_replica_not_kept_leaves_its_room_to_the_replacement_at_once() -> None:
    # An edit added a GPU to engine e0, whose pool p1 has no node: both replicas must
    # move. One stays while its replacement starts; the other goes, and the replacement
    # takes the p2 node its engine e1 held.
    dep = deployment(
        "qwen",
        1,
        engine("e0", standalone(request("gpu", 1))),
        engine("e1", leader(), worker(1)),
    )
    pools = (pool("p1", 0, gpu()), pool("p2", 1, gpu()))
    replicas = [
        existing("qwen", "c1", 0, {"e0": ("p1", 0), "e1": ("p1", 0)}),
        existing("qwen", "c1", 1, {"e0": ("p1", 0), "e1": ("p2", 1)}),
    ]
    placement = run(dep, fleet(cluster("c1", *pools), replicas=replicas))
    assert [(m.name, type(m.reason)) for m in placement.moving] == [("qwen-c1-0", Overcommitted)]
    assert [(d.name, type(d.reason)) for d in placement.dropped] == [("qwen-c1-1", Overcommitted)]
    assert [(r.cluster, r.index, r.new) for r in placement.replicas] == [("c1", 2, True)]
