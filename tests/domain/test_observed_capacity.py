"""Observed capacity: which of a pool's nodes count, and the devices their slices publish."""

from __future__ import annotations

from typing import Any

from modelplane.domain import observed_capacity as oc
from modelplane.domain.workload.pods import GPU_TOLERATION

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def node(
    name: str,
    pool: str | None = "gpu",
    *,
    ready: str | None = "True",
    taints: list[dict[str, str]] | None = None,
    cordoned: bool = False,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"modelplane.ai/pool": pool} if pool else {}}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    spec: dict[str, Any] = {"taints": [GPU_TAINT] if taints is None else taints}
    if cordoned:
        spec["unschedulable"] = True
    conditions = [{"type": "Ready", "status": ready}] if ready else []
    return {"kind": "Node", "metadata": meta, "spec": spec, "status": {"conditions": conditions}}


def slice_(node_name: str, count: int, driver: str = "gpu.nvidia.com", generation: int = 1) -> Any:
    return {
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node_name}-{driver}-{generation}"},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": generation, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{i}"} for i in range(count)],
        },
    }


def test_engine_pods_tolerate_exactly_the_gpu_taint_the_verdict_assumes() -> None:
    assert (GPU_TOLERATION["key"], GPU_TOLERATION["effect"]) == ("nvidia.com/gpu", "NoSchedule")


def test_a_ready_schedulable_gpu_node_counts() -> None:
    assert oc.node_verdict(node("n1")) == oc.NodeVerdict("n1", "gpu")
    assert oc.node_verdict(node("n1")).usable  # type: ignore[union-attr]


def test_nodes_outside_pools_are_not_judged() -> None:
    assert oc.node_verdict(node("system", pool=None)) is None
    assert oc.node_verdict({"kind": "Node"}) is None


def test_each_reason_a_node_is_left_out() -> None:
    cases = {
        "deleting": (node("a", deleting=True, ready="False"), oc.DELETING),
        "never reported": (node("b", ready=None), oc.NOT_READY),
        "not ready": (node("c", ready="Unknown"), oc.NOT_READY),
        "cordoned": (node("d", cordoned=True), oc.CORDONED),
    }
    for what, (raw, reason) in cases.items():
        verdict = oc.node_verdict(raw)
        assert verdict is not None, what
        assert verdict.reason == reason, what
        assert not verdict.usable


def test_untolerated_taints_leave_a_node_out_but_not_prefer_or_the_gpu_taint() -> None:
    tainted = node(
        "t",
        taints=[
            GPU_TAINT,
            {"key": "maintenance", "value": "yes", "effect": "NoExecute"},
            {"key": "soft", "effect": "PreferNoSchedule"},
        ],
    )
    verdict = oc.node_verdict(tainted)
    assert verdict == oc.NodeVerdict("t", "gpu", oc.TAINTED, "maintenance=yes:NoExecute")
    assert str(verdict) == "t Tainted (maintenance=yes:NoExecute)"
    # The GPU key with NoExecute is not what the engine pods tolerate (NoSchedule only).
    gpu_evict = node("e", taints=[{"key": "nvidia.com/gpu", "effect": "NoExecute"}])
    assert oc.node_verdict(gpu_evict).reason == oc.TAINTED  # type: ignore[union-attr]
    soft = node("s", taints=[GPU_TAINT, {"key": "soft", "effect": "PreferNoSchedule"}])
    assert oc.node_verdict(soft).usable  # type: ignore[union-attr]


def test_many_taints_are_named_up_to_a_bound() -> None:
    many = [{"key": f"k{i}", "effect": "NoSchedule"} for i in range(7)]
    verdict = oc.node_verdict(node("m", taints=many))
    assert verdict is not None
    assert verdict.detail.endswith("and 3 more")


def test_pools_count_usable_nodes_and_their_devices_only() -> None:
    nodes = [
        node("a1"),
        node("a2", cordoned=True),
        node("a3"),
        node("b1", pool="big"),
        node("b2", pool="big", ready="False"),
        node("sys", pool=None),
    ]
    slices = [slice_("a1", 4), slice_("a2", 4), slice_("a3", 2), slice_("b1", 8), slice_("b2", 8)]
    slices.append(slice_("a1", 1, driver="dra.net"))
    slices.append(slice_("gone", 8))  # a node that is not observed: no pool
    pools = oc.observe_pools(nodes, slices)
    assert sorted(pools) == ["big", "gpu"]
    gpu = pools["gpu"]
    assert (gpu.nodes, dict(gpu.devices or {})) == (2, {"dra.net": 1, "gpu.nvidia.com": 6})
    assert [str(v) for v in gpu.left_out] == ["a2 Cordoned"]
    assert (pools["big"].nodes, dict(pools["big"].devices or {})) == (1, {"gpu.nvidia.com": 8})
    assert gpu.status() == {
        "nodes": 2,
        "devices": [{"driver": "dra.net", "count": 1}, {"driver": "gpu.nvidia.com", "count": 6}],
        # per node, since a pod needs all it claims on one node: a1 publishes 4 GPUs and
        # a NIC, a3 only 2 GPUs
        "nodeDevices": [
            {
                "nodes": 1,
                "devices": [
                    {"driver": "dra.net", "count": 1},
                    {"driver": "gpu.nvidia.com", "count": 4},
                ],
            },
            {"nodes": 1, "devices": [{"driver": "gpu.nvidia.com", "count": 2}]},
        ],
        "unavailable": [{"name": "a2", "reason": "Cordoned"}],
    }


def test_nodes_that_publish_alike_are_one_group_most_nodes_first() -> None:
    nodes = [node(f"n{i}") for i in range(5)] + [node("bare")]
    slices = [slice_(f"n{i}", 2 if i == 4 else 4) for i in range(5)]
    gpu = oc.observe_pools(nodes, slices)["gpu"]
    assert gpu.layout == (
        ((("gpu.nvidia.com", 4),), 4),
        ((), 1),  # "bare" publishes no slice: no device DRA could allocate there
        ((("gpu.nvidia.com", 2),), 1),
    )


def test_past_the_xrd_bound_the_rarest_layouts_publish_nothing() -> None:
    nodes = [node(f"n{i}") for i in range(40)]
    slices = [slice_(f"n{i}", i + 1) for i in range(40)]
    published = oc.observe_pools(nodes, slices)["gpu"].status()["nodeDevices"]
    assert len(published) == oc.MAX_LAYOUTS
    assert published[-1] == {"nodes": 40 - (oc.MAX_LAYOUTS - 1), "devices": []}
    assert sum(g["nodes"] for g in published) == 40


def test_unknown_devices_are_not_published_as_none() -> None:
    pools = oc.devices_unknown(oc.observe_pools([node("a1")], []))
    assert pools["gpu"].status() == {"nodes": 1}


def test_only_the_newest_generation_of_a_slice_pool_counts() -> None:
    slices = [slice_("a1", 4, generation=1), slice_("a1", 2, generation=2)]
    pools = oc.observe_pools([node("a1")], slices)
    assert dict(pools["gpu"].devices or {}) == {"gpu.nvidia.com": 2}


def test_a_declared_pool_with_no_node_observed_has_none() -> None:
    pools = oc.for_pools(oc.observe_pools([node("a1")], []), ["gpu", "lost"])
    assert (pools["gpu"].nodes, pools["lost"].nodes) == (1, 0)
    assert pools["lost"].status() == {"nodes": 0, "devices": [], "nodeDevices": []}


def test_the_result_does_not_depend_on_the_order_observed() -> None:
    nodes = [node(f"n{i}", cordoned=i % 3 == 0) for i in range(9)]
    slices = [slice_(f"n{i}", 2) for i in range(9)]
    forward = oc.observe_pools(nodes, slices)
    backward = oc.observe_pools(list(reversed(nodes)), list(reversed(slices)))
    assert forward == backward
    assert forward["gpu"].status()["unavailable"][0]["name"] == "n0"


def test_an_autoscaled_pool_counts_up_to_its_max_less_the_nodes_that_take_no_pods() -> None:
    # Scaled to zero: no node runs, yet the autoscaler adds one for a Pending pod.
    zero = oc.ObservedPool("gpu", 0)
    one_cordoned = oc.ObservedPool("big", 1, left_out=(oc.NodeVerdict("n2", "big", oc.CORDONED),))
    fixed = oc.ObservedPool("fixed", 1)
    got = oc.with_autoscaling(
        {"gpu": zero, "big": one_cordoned, "fixed": fixed}, {"gpu": 1, "big": 4}
    )
    assert got["gpu"].nodes == 1
    assert got["big"].nodes == 3  # the cordoned node holds a slot of the max
    assert got["fixed"].nodes == 1  # a fixed pool counts what runs
