"""The fleet scheduler, one rule at a time (docs L2823-L2946, L4579-L4653, decisions.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Deployment,
    DeviceRequest,
    ExistingReplica,
    Fleet,
    PoolDevice,
)
from modelplane.domain.scheduling.placement import (
    CacheUnresolved,
    ConflictMiss,
    CountMiss,
    InvalidSelector,
    NoPoolFits,
    NoRoom,
    NothingOffered,
    SelectorMiss,
    SyntheticOnly,
)
from modelplane.domain.taints import Taint

from tests.domain.scheduler_kit import (
    architecture,
    cluster,
    deployment,
    driver,
    efa,
    engine,
    existing,
    fleet,
    gpu,
    leader,
    memory_at_least,
    nic,
    pool,
    reasons,
    request,
    run,
    standalone,
    where,
    worker,
)

L4 = gpu("23034Mi")
L40S = gpu("46068Mi")
A100_40 = gpu("40960Mi", arch="Ampere")
H100 = gpu("81559Mi", arch="Hopper")
H200_8 = gpu("140Gi", count=8, arch="Hopper")

MAINTENANCE = Taint("modelplane.ai/maintenance", "NoSchedule")
EVICTING = Taint("modelplane.ai/maintenance", "NoExecute")


def wants(memory: str, replicas: int = 1, **kwargs: object) -> Deployment:
    """A one-GPU Standalone deployment asking for at least ``memory``."""
    member = standalone(request("gpu", 1, memory_at_least(memory)))
    return deployment("qwen", replicas, engine("qwen", member), **kwargs)  # type: ignore[arg-type]


def own_replica(cluster_: str, index: int = 0, pool_: str = "gpu") -> ExistingReplica:
    """One of this deployment's replicas, on ``pool_`` of ``cluster_`` at ``index``."""
    return existing("qwen", cluster_, index, {"qwen": (pool_, 1)})


@dataclass
class Case:
    """A scheduling case: the deployment, the fleet, and where replicas must land."""

    deployment: Deployment
    fleet: Fleet
    want: list[tuple[str, int, tuple[str, ...]]]
    cache: CacheFootprint | None = None
    passed_over: dict[str, list[str]] = field(default_factory=dict)


def check(case: Case) -> None:
    placement = run(case.deployment, case.fleet, cache=case.cache)
    assert where(placement) == case.want
    for name, kinds in case.passed_over.items():
        assert reasons(placement).get(name) == kinds, name


# --- two-level matching ---------------------------------------------------------------


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            Case(
                wants("20Gi", selector={"modelplane.ai/region": "us-west"}),
                fleet(
                    cluster("a", pool("gpu", 1), labels_={"modelplane.ai/region": "us-east"}),
                    cluster("b", pool("gpu", 1), labels_={"modelplane.ai/region": "us-west"}),
                ),
                [("b", 0, ("gpu",))],
                passed_over={"a": ["NotSelected"]},
            ),
            id="cluster-selector-by-label",
        ),
        pytest.param(
            Case(
                wants("20Gi", selector={"tier": "h100"}),
                fleet(cluster("a", pool("gpu", 1))),
                [],
                passed_over={"a": ["NotSelected"]},
            ),
            id="missing-label-never-matches",
        ),
        pytest.param(
            Case(wants("20Gi"), fleet(cluster("a", pool("gpu", 1))), [("a", 0, ("gpu",))]),
            id="unset-selector-matches-every-cluster",
        ),
        pytest.param(
            Case(
                wants("40Gi"),
                fleet(cluster("l4", pool("gpu", 1, L4)), cluster("l40s", pool("gpu", 1, L40S))),
                [("l40s", 0, ("gpu",))],
                passed_over={"l4": ["NoPoolFits"]},
            ),
            id="docs-40Gi-takes-L40S-not-L4",
        ),
        pytest.param(
            Case(
                wants("35Gi"),
                fleet(cluster("a", pool("l4", 1, L4), pool("a100", 1, A100_40))),
                [("a", 0, ("a100",))],
            ),
            id="docs-35Gi-takes-A100-40-pool",
        ),
        pytest.param(
            Case(wants("80Gi"), fleet(cluster("a", pool("gpu", 1, H100))), []),
            id="docs-H100-81559Mi-is-below-80Gi",
        ),
        pytest.param(
            Case(
                deployment(
                    "qwen",
                    1,
                    engine("qwen", standalone(request("gpu", 1, architecture("Hopper")))),
                ),
                fleet(cluster("a", pool("ada", 1, L40S), pool("hopper", 1, H100))),
                [("a", 0, ("hopper",))],
            ),
            id="attribute-selector",
        ),
    ],
)
def test_two_level_matching(case: Case) -> None:
    check(case)


# --- pools: every request of a member, counts, one pool per engine ----------------------


def test_member_needs_every_request() -> None:
    member = standalone(
        request("gpu", 8, memory_at_least("120Gi")), request("efa", 16, driver("dra.net"))
    )
    dep = deployment("coder", 1, engine("coder", member))
    placement = run(
        dep,
        fleet(
            cluster("a", pool("no-efa", 2, H200_8)), cluster("b", pool("h200", 2, H200_8, efa()))
        ),
    )
    assert where(placement) == [("b", 0, ("h200",))]
    claims = placement.replicas[0].engines[0].members[0].claims  # type: ignore[index]
    assert [(c.name, c.device_class_name, c.count) for c in claims] == [
        ("gpu", "gpu.nvidia.com", 8),
        ("efa", "efa.networking.k8s.aws", 16),
    ]


@pytest.mark.parametrize(
    ("requests", "devices", "want_miss"),
    [
        pytest.param(
            (request("gpu", 8, memory_at_least("20Gi")),), (L4,), CountMiss("gpu", 8, 1), id="count"
        ),
        pytest.param(
            (request("gpu", 1, memory_at_least("20Gi")),),
            (gpu(count=0),),
            NothingOffered("gpu"),
            id="count-zero-offers-nothing",
        ),
        pytest.param(
            (request("gpu", 1, memory_at_least("40Gi")),),
            (L4,),
            SelectorMiss("gpu", memory_at_least("40Gi")),
            id="selector",
        ),
        pytest.param(
            (request("a", 5, driver("gpu.nvidia.com")), request("b", 5, driver("gpu.nvidia.com"))),
            (gpu(count=8),),
            ConflictMiss(("a", "b")),
            id="entry-count-shared-between-requests",
        ),
    ],
)
def test_pool_does_not_fit(
    requests: tuple[DeviceRequest, ...], devices: tuple[PoolDevice, ...], want_miss: object
) -> None:
    dep = deployment("m", 1, engine("m", standalone(*requests)))
    placement = run(dep, fleet(cluster("a", pool("p", 4, *devices))))
    assert placement.replicas == ()
    (reason,) = placement.passed_over[0].reasons
    assert isinstance(reason, NoPoolFits)
    assert reason.misses[0].miss == want_miss


def test_entry_count_shared_between_requests_that_fit() -> None:
    member = standalone(
        request("a", 4, driver("gpu.nvidia.com")), request("b", 4, driver("gpu.nvidia.com"))
    )
    placement = run(
        deployment("m", 1, engine("m", member)), fleet(cluster("c", pool("p", 1, gpu(count=8))))
    )
    assert where(placement) == [("c", 0, ("p",))]


def test_engine_never_splits_across_pools() -> None:
    gang = engine(
        "coder",
        leader(request("gpu", 1, architecture("Hopper"))),
        worker(1, request("gpu", 1, architecture("Ada Lovelace"))),
    )
    placement = run(
        deployment("coder", 1, gang),
        fleet(cluster("a", pool("hopper", 4, H100), pool("ada", 4, L40S))),
    )
    assert placement.replicas == ()
    assert reasons(placement) == {"a": ["NoPoolFits"]}


def test_engines_of_a_replica_may_use_different_pools_of_one_cluster() -> None:
    prefill = engine("prefill", standalone(request("gpu", 1, architecture("Hopper"))))
    decode = engine("decode", standalone(request("gpu", 1, architecture("Ada Lovelace"))))
    placement = run(
        deployment("pd", 1, prefill, decode),
        fleet(
            cluster("a", pool("hopper", 1, H100)),
            cluster("b", pool("ada", 1, L40S), pool("hopper", 1, H100)),
        ),
    )
    assert where(placement) == [("b", 0, ("hopper", "ada"))]


# --- node cost: pods x copies, only for members that claim a DRA device ------------------


@pytest.mark.parametrize(
    ("eng", "cost"),
    [
        pytest.param(engine("e", standalone()), 1, id="standalone"),
        pytest.param(engine("e", standalone(), copies=3), 3, id="copies"),
        pytest.param(engine("e", leader(request()), worker(3, request())), 4, id="gang"),
        pytest.param(
            engine("e", leader(request()), worker(3, request()), copies=2), 8, id="gang-copies"
        ),
        pytest.param(engine("e", leader(), worker(2, request())), 2, id="leader-claims-nothing"),
        pytest.param(
            engine("e", standalone(request("nic", 1, 'device.driver == "nic.nvidia.com"'))),
            0,
            id="only-synthetic-costs-nothing",
        ),
    ],
)
def test_node_cost(eng: object, cost: int) -> None:
    placement = run(
        deployment("d", 1, eng),  # type: ignore[arg-type]
        fleet(cluster("a", pool("p", 8, L4, nic()))),
    )
    (replica,) = placement.replicas
    assert replica.engines is not None
    assert replica.engines[0].nodes == cost
    assert placement.pools[0].free_after == 8 - cost


def test_zero_cost_engine_rides_on_a_full_pool() -> None:
    eng = engine("e", standalone(request("nic", 1, 'device.driver == "nic.nvidia.com"')))
    full = existing("other", "a", 0, {"x": ("p", 1)})
    placement = run(
        deployment("d", 1, eng), fleet(cluster("a", pool("p", 1, L4, nic())), replicas=[full])
    )
    assert where(placement) == [("a", 0, ("p",))]


# --- the fleet ledger ------------------------------------------------------------------


def test_other_deployments_charge_their_pinned_pools() -> None:
    others = [
        existing("llama", "a", 0, {"llama": ("gpu", 2)}),
        existing("qwen", "b", 0, {"qwen": ("gpu", 1)}, namespace="other-team"),
    ]
    placement = run(
        wants("20Gi", 2),
        fleet(cluster("a", pool("gpu", 2)), cluster("b", pool("gpu", 2)), replicas=others),
    )
    assert where(placement) == [("b", 0, ("gpu",))]
    # b hosts the one replica and is now full too: both say why no third fits.
    assert reasons(placement) == {"a": ["NoRoom"], "b": ["NoRoom"]}
    assert placement.short == 1


def test_charges_on_unpublished_pools_are_ignored() -> None:
    ghost = existing("llama", "a", 0, {"llama": ("gone", 5)})
    placement = run(wants("20Gi"), fleet(cluster("a", pool("gpu", 1)), replicas=[ghost]))
    assert where(placement) == [("a", 0, ("gpu",))]


def test_retained_replicas_charge_at_their_current_cost() -> None:
    # The deployment now runs 2 copies: its retained replica charges 2 nodes, leaving none.
    dep = deployment("qwen", 2, engine("qwen", standalone(), copies=2))
    mine = existing("qwen", "a", 0, {"qwen": ("gpu", 1)})
    placement = run(dep, fleet(cluster("a", pool("gpu", 3)), replicas=[mine]))
    assert where(placement) == [("a", 0, ("gpu",))]
    assert placement.pools[0].free_before == 2
    assert placement.pools[0].free_after == 1


@pytest.mark.parametrize("nodes", [1, 2, 5])
def test_never_overcommits_a_pool(nodes: int) -> None:
    placement = run(wants("20Gi", 10), fleet(cluster("a", pool("gpu", nodes))))
    assert len(placement.replicas) == nodes
    assert placement.pools[0].free_after == 0


# --- synthetic devices ---------------------------------------------------------------------


def test_synthetic_matched_but_never_claimed() -> None:
    member = standalone(
        request("gpu", 8, architecture("Hopper")),
        request("nic", 1, 'device.driver == "nic.nvidia.com"'),
    )
    placement = run(
        deployment("d", 1, engine("d", member)),
        fleet(cluster("byo", pool("h100", 2, gpu("81559Mi", count=8, arch="Hopper"), nic()))),
    )
    engines = placement.replicas[0].engines
    assert engines is not None
    assert [c.name for c in engines[0].members[0].claims] == ["gpu"]
    assert engines[0].nodes == 1


def test_synthetic_never_strands_a_member_that_could_claim_a_real_device() -> None:
    fake_gpu = gpu("81559Mi", arch="Hopper", claim="Synthetic")
    real_gpu = gpu("81559Mi", arch="Hopper")
    member = standalone(request("gpu", 1, architecture("Hopper")))
    dep = deployment("d", 2, engine("d", member))
    placement = run(dep, fleet(cluster("a", pool("fake", 4, fake_gpu), pool("real", 1, real_gpu))))
    assert where(placement) == [("a", 0, ("real",))]
    (passed,) = placement.passed_over
    assert isinstance(passed.reasons[0], NoRoom)


def test_synthetic_match_counts_when_no_pool_has_a_real_one() -> None:
    fake_gpu = gpu("81559Mi", arch="Hopper", claim="Synthetic")
    member = standalone(request("gpu", 1, architecture("Hopper")))
    placement = run(
        deployment("d", 1, engine("d", member, copies=1)),
        fleet(
            cluster("a", pool("fake", 4, fake_gpu), pool("real", 1, H100)),
            replicas=[existing("o", "a", 0, {"o": ("real", 1)})],
        ),
    )
    assert placement.replicas == ()
    assert isinstance(placement.passed_over[0].reasons[0], NoRoom)
    placement = run(
        deployment("d", 1, engine("d", member)),
        fleet(cluster("a", pool("fake", 4, fake_gpu), pool("real", 1, gpu("10Gi", arch="Ada")))),
    )
    # No pool offers a real Hopper GPU, so the Synthetic one is a legitimate match.
    assert where(placement) == [("a", 0, ("fake",))]


def test_prefers_claiming_a_real_device_within_a_pool() -> None:
    fake = gpu("81559Mi", arch="Hopper", claim="Synthetic", name="fake")
    member = standalone(request("gpu", 1, architecture("Hopper")))
    placement = run(
        deployment("d", 1, engine("d", member)), fleet(cluster("a", pool("p", 1, fake, H100)))
    )
    engines = placement.replicas[0].engines
    assert engines is not None
    assert [c.name for c in engines[0].members[0].claims] == ["gpu"]


def test_synthetic_only_miss_is_reported() -> None:
    fake_gpu = gpu("81559Mi", arch="Hopper", claim="Synthetic")
    gang = engine(
        "g",
        leader(request("gpu", 1, architecture("Hopper"))),
        worker(1, request("efa", 16, driver("dra.net"))),
    )
    placement = run(
        deployment("d", 1, gang),
        fleet(cluster("a", pool("fake", 4, fake_gpu, efa()), pool("real", 4, H100))),
    )
    assert placement.replicas == ()
    (reason,) = placement.passed_over[0].reasons
    assert isinstance(reason, NoPoolFits)
    assert [(m.pool, m.role, m.miss) for m in reason.misses] == [
        ("fake", "Leader", SyntheticOnly(("gpu",))),
        ("real", "Worker", SelectorMiss("efa", driver("dra.net"))),
    ]


# --- holds: nothing running is lost ------------------------------------------------------


def test_invalid_selector_places_nothing_new_and_keeps_what_runs() -> None:
    bad = standalone(request("gpu", 1, "device.capacity[ nope"))
    dep = deployment("qwen", 3, engine("qwen", bad))
    placement = run(dep, fleet(cluster("a", pool("gpu", 4)), replicas=[own_replica("a")]))
    assert [(r.cluster, r.index, r.engines) for r in placement.replicas] == [("a", 0, None)]
    assert isinstance(placement.hold, InvalidSelector)
    assert placement.hold.selector == "device.capacity[ nope"
    assert reasons(placement) == {"a": ["Held"]}
    assert placement.pools[0].free_after == 3


def test_unresolved_cache_places_nothing_new_and_keeps_what_runs() -> None:
    placement = run(
        wants("20Gi", 2),
        fleet(cluster("a", pool("gpu", 4)), replicas=[own_replica("a")]),
        cache=CacheFootprint("weights", resolved=False),
    )
    assert [(r.cluster, r.new) for r in placement.replicas] == [("a", False)]
    assert placement.hold == CacheUnresolved("weights")


def test_unpublished_pools_keep_replicas_as_they_are() -> None:
    placement = run(
        wants("20Gi"), fleet(cluster("a", unpublished=True), replicas=[own_replica("a")])
    )
    assert [(r.cluster, r.engines) for r in placement.replicas] == [("a", None)]


# --- determinism -----------------------------------------------------------------------


def test_same_placement_whatever_the_input_order() -> None:
    clusters = [cluster(n, pool("gpu", 2), pool("big", 1, H100)) for n in "dcab"]
    mine = [own_replica("c", 0), own_replica("a", 1)]
    others = [existing("x", "b", 0, {"x": ("gpu", 2)}), existing("y", "d", 0, {"y": ("big", 1)})]
    one = run(wants("20Gi", 5), fleet(*clusters, replicas=[*mine, *others]))
    two = run(
        wants("20Gi", 5), fleet(*reversed(clusters), replicas=[*reversed(others), *reversed(mine)])
    )
    assert one == two
    assert repr(one) == repr(two)


# --- explaining clusters passed over ----------------------------------------------------


@pytest.mark.parametrize(
    ("replicas", "want"),
    [
        pytest.param(1, {}, id="full-deployment-says-nothing-of-the-cluster-it-fills"),
        pytest.param(2, {"a": ["NoRoom"]}, id="short-deployment-names-its-full-cluster"),
    ],
)
def test_used_clusters_are_explained_only_when_short(
    replicas: int, want: dict[str, list[str]]
) -> None:
    placement = run(wants("20Gi", replicas), fleet(cluster("a", pool("gpu", 1))))
    assert where(placement) == [("a", 0, ("gpu",))]
    assert reasons(placement) == want
