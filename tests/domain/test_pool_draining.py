"""Draining pools: which pools an InferenceCluster keeps for pinned replicas, and how the
scheduler treats a pool published ``draining: true`` (nothing new; its replicas move,
make before break)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from modelplane.domain import draining
from modelplane.domain.scheduling.explain import cluster_reason, drop_reason
from modelplane.domain.scheduling.placement import PoolDraining
from modelplane.planning import as_struct, read_cluster
from modelplane.planning.fields import UnreadableError

from tests.domain.scheduler_kit import (
    cluster,
    deployment,
    engine,
    existing,
    fleet,
    memory_at_least,
    pool,
    request,
    run,
    standalone,
    where,
)


def _replica(ns: str, name: str, *pools: Any) -> dict[str, Any]:
    members = [{"nodePoolName": p} for p in pools]
    return {
        "metadata": {"name": name, "namespace": ns},
        "spec": {"engines": [{"members": members}]},
    }


def test_pins_lists_each_pool_s_replicas_sorted_and_skips_the_unreadable() -> None:
    replicas = [
        _replica("b", "r2", "gpu"),
        _replica("a", "r1", "gpu", "big"),
        {"metadata": {"namespace": "a"}, "spec": {}},  # no name
        {"metadata": {"name": "odd"}, "spec": {"engines": "not a list"}},
        _replica("a", "r3", 7, ""),  # pins nothing readable
    ]
    assert draining.pins(replicas) == {"big": ("a/r1",), "gpu": ("a/r1", "b/r2")}


def test_drains_keeps_removed_and_replaced_pools_only_while_pinned() -> None:
    pins = {"old": ("ml/a",), "gpu": ("ml/b",), "free": ()}
    found = draining.drains(["gpu", "new"], {"old", "gpu", "gone", "free"}, ["gpu"], pins)
    assert found == [
        draining.Drain("gpu", draining.REPLACED, ("ml/b",)),
        draining.Drain("old", draining.REMOVED, ("ml/a",)),
    ]
    assert draining.drains(["gpu"], {"gpu", "old"}, [], {}) == []


def test_only_fields_the_function_sets_other_than_counts_replace_nodes() -> None:
    observed = [{"name": "gpu", "instanceType": "g6.xlarge", "nodeCount": 1, "amiType": "x"}]
    assert (
        draining.replaced([{"name": "gpu", "instanceType": "g6.xlarge", "nodeCount": 4}], observed)
        == []
    )
    assert draining.replaced([{"name": "gpu", "instanceType": "g6e.xlarge"}], observed) == ["gpu"]
    assert draining.replaced([{"name": "new", "instanceType": "g6e.xlarge"}], observed) == []


# --- the scheduler --------------------------------------------------------------------------


def _wants(replicas: int = 1) -> Any:
    member = standalone(request("gpu", 1, memory_at_least("20Gi")))
    return deployment("qwen", replicas, engine("qwen", member))


def _draining(name: str, nodes: int) -> Any:
    return replace(pool(name, nodes), draining=True)


def _mine(cluster_: str, pool_: str = "gpu", index: int = 0) -> Any:
    return existing("qwen", cluster_, index, {"qwen": (pool_, 1)})


def test_nothing_new_lands_on_a_draining_pool_even_with_room() -> None:
    placement = run(_wants(2), fleet(cluster("a", _draining("gpu", 4), pool("other", 1))))
    assert where(placement) == [("a", 0, ("other",))]


def test_a_replica_on_a_draining_pool_moves_make_before_break() -> None:
    old = _mine("a")
    clusters = (cluster("a", _draining("gpu", 1)), cluster("b", pool("gpu", 1)))
    first = run(_wants(), fleet(*clusters, replicas=[old]), ready=[old.name])
    assert where(first) == [("b", 0, ("gpu",))]
    assert [(m.name, type(m.reason)) for m in first.moving] == [(old.name, PoolDraining)]
    assert first.dropped == ()
    new = _mine("b")
    second = run(_wants(), fleet(*clusters, replicas=[old, new]), ready=[old.name])
    assert [m.name for m in second.moving] == [old.name]  # the replacement is not Ready yet
    third = run(_wants(), fleet(*clusters, replicas=[old, new]), ready=[old.name, new.name])
    assert third.moving == ()
    assert [(d.name, type(d.reason)) for d in third.dropped] == [(old.name, PoolDraining)]
    assert "is draining" in drop_reason(third.dropped[0].reason)


def test_a_cluster_with_only_a_draining_pool_says_so() -> None:
    placement = run(_wants(), fleet(cluster("a", _draining("gpu", 4))))
    assert placement.replicas == ()
    (passed,) = placement.passed_over
    assert [cluster_reason(r) for r in passed.reasons] == [
        "no pool fits engine qwen (draining, taking nothing new: gpu)"
    ]


def test_with_nowhere_to_go_the_replica_keeps_running_on_the_draining_pool() -> None:
    old = _mine("a")
    placement = run(
        _wants(), fleet(cluster("a", _draining("gpu", 1)), replicas=[old]), ready=[old.name]
    )
    assert placement.dropped == ()
    assert [m.name for m in placement.moving] == [old.name]
    assert placement.replicas == ()


# --- reading what the cluster publishes ------------------------------------------------------


def _published(entry: dict[str, Any]) -> Any:
    gpu = {
        "name": "gpu",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": 1,
    }
    doc = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "a"},
        "status": {"gpuPools": [{"name": "gpu", "nodes": 1, "devices": [gpu], **entry}]},
    }
    return read_cluster(as_struct(doc))


@pytest.mark.parametrize(
    ("entry", "drains"), [({}, False), ({"draining": True}, True), ({"draining": False}, False)]
)
def test_the_fleet_reader_reads_draining(entry: dict[str, Any], drains: bool) -> None:
    found = _published(entry)
    assert found is not None
    assert found.pools is not None
    assert found.pools[0].draining is drains


def test_an_unreadable_draining_names_the_field() -> None:
    with pytest.raises(UnreadableError, match=r"gpuPools\[0\].*draining"):
        _published({"draining": "yes"})
