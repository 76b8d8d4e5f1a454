"""InferenceCluster: a pool removed, renamed or replaced under ModelReplicas drains first.

Its node group stays exactly as observed, it is published ``draining: true`` (so the
scheduler moves the replicas pinned there, make before break), a condition and a
Warning event name the replicas, and once none is pinned there it goes.
"""

from __future__ import annotations

import copy
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, registry, runtime

from tests.requests import conditions, request

L4 = {"name": "gpu", "driver": "gpu.nvidia.com", "deviceClassName": "gpu.nvidia.com", "count": 1}
L40S = {**L4, "attributes": {"productName": {"string": "L40S"}}}


def _class(name: str, instance: str, device: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceClass",
        "metadata": {"name": name},
        "spec": {
            "devices": [device],
            "provisioning": {"provider": "EKS", "eks": {"instanceType": instance}},
        },
    }


CLASSES = [_class("l4-1x-g6", "g6.xlarge", L4), _class("l40s-1x-g6e", "g6e.xlarge", L40S)]


def _cluster(*pools: tuple[str, str], shown: list[Any] | None = None) -> dict[str, Any]:
    xr: dict[str, Any] = {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "InferenceCluster",
        "metadata": {"name": "eks-us-east"},
        "spec": {
            "cluster": {"source": "EKS", "eks": {"region": "us-east-1"}},
            "nodePools": [{"name": n, "className": c, "nodeCount": 1} for n, c in pools],
        },
    }
    if shown is not None:
        xr["status"] = {"gpuPools": shown}
    return xr


def _replica(name: str, pool: str) -> dict[str, Any]:
    member = {"role": "Standalone", "nodePoolName": pool, "template": {}}
    return {
        "apiVersion": "modelplane.ai/v1alpha1",
        "kind": "ModelReplica",
        "metadata": {
            "name": name,
            "namespace": "ml-team",
            "labels": {"modelplane.ai/cluster": "eks-us-east"},
        },
        "spec": {"engines": [{"name": "qwen", "members": [member]}]},
    }


def _run(xr: dict[str, Any], cloud: dict[str, Any] | None, replicas: list[Any]) -> Any:
    required = {
        "classes": CLASSES,
        "replicas": replicas,
        "caches": [],
        "observe-nodes": [],
        "observe-resource-slices": [],
    }
    observed = {"cluster": cloud} if cloud is not None else None
    return runtime.run(request(xr, observed=observed, required=required), registry.COMPOSERS)


def _cloud(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.resources["cluster"].resource))


def _status(rsp: fnv1.RunFunctionResponse) -> dict[str, Any]:
    return dict(kit.struct_to_dict(rsp.desired.composite.resource).get("status", {}))


def _warnings(rsp: fnv1.RunFunctionResponse) -> list[str]:
    return [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_WARNING]


def _settled(*pools: tuple[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster as one reconcile leaves it: its published status and its cloud cluster."""
    rsp = _run(_cluster(*pools), None, [])
    cloud = _cloud(rsp)
    cloud["spec"]["nodePools"][0]["amiType"] = "AL2023_x86_64_NVIDIA"  # a default filled in
    return _cluster(*pools, shown=_status(rsp)["gpuPools"]), cloud


def test_a_removed_pool_with_a_replica_on_it_is_held_and_published_draining() -> None:
    xr, cloud = _settled(("gpu-l4", "l4-1x-g6"), ("gpu-l40s", "l40s-1x-g6e"))
    shown = copy.deepcopy(xr["status"]["gpuPools"])
    xr["spec"]["nodePools"] = xr["spec"]["nodePools"][1:]  # gpu-l4 removed
    rsp = _run(xr, cloud, [_replica("qwen-a", "gpu-l4"), _replica("other", "gpu-l40s")])
    # The node group stays, exactly as observed (its filled-in default too), after the spec's.
    pools = _cloud(rsp)["spec"]["nodePools"]
    assert [p["name"] for p in pools] == ["gpu-l40s", "gpu-l4"]
    assert pools[1] == cloud["spec"]["nodePools"][0]
    # Published as shown, draining; the spec's pools as ever.
    published = _status(rsp)["gpuPools"]
    assert published == [shown[1], {**shown[0], "draining": True}]
    status, reason, message = conditions(rsp)["PoolsDraining"]
    assert (status, reason) == ("True", "PinnedReplicas")
    assert "pool gpu-l4 (removed from spec.nodePools)" in message
    assert "ModelReplica ml-team/qwen-a" in message
    assert "other" not in message
    assert any("ModelReplica ml-team/qwen-a" in w for w in _warnings(rsp))


def test_once_no_replica_pins_it_the_removed_pool_goes() -> None:
    xr, cloud = _settled(("gpu-l4", "l4-1x-g6"), ("gpu-l40s", "l40s-1x-g6e"))
    xr["spec"]["nodePools"] = xr["spec"]["nodePools"][1:]
    draining = _run(xr, cloud, [_replica("qwen-a", "gpu-l4")])
    xr["status"] = _status(draining)  # the draining entry was published
    cloud = _cloud(draining)
    rsp = _run(xr, cloud, [_replica("qwen-b", "gpu-l40s")])  # the replica has moved
    assert [p["name"] for p in _cloud(rsp)["spec"]["nodePools"]] == ["gpu-l40s"]
    assert [p["name"] for p in _status(rsp)["gpuPools"]] == ["gpu-l40s"]
    assert "draining" not in _status(rsp)["gpuPools"][0]
    assert conditions(rsp)["PoolsDraining"][:2] == ("False", "NoneDraining")
    assert _warnings(rsp) == []


def test_a_renamed_pool_drains_the_old_name_beside_the_new() -> None:
    xr, cloud = _settled(("gpu-l4", "l4-1x-g6"))
    xr["spec"]["nodePools"][0]["name"] = "gpu-l4-b"
    rsp = _run(xr, cloud, [_replica("qwen-a", "gpu-l4")])
    pools = _cloud(rsp)["spec"]["nodePools"]
    assert [(p["name"], p["instanceType"]) for p in pools] == [
        ("gpu-l4-b", "g6.xlarge"),
        ("gpu-l4", "g6.xlarge"),
    ]
    published = _status(rsp)["gpuPools"]
    assert [(p["name"], p.get("draining")) for p in published] == [
        ("gpu-l4-b", None),
        ("gpu-l4", True),
    ]


def test_a_class_change_that_replaces_the_nodes_waits_for_the_replicas_to_move() -> None:
    xr, cloud = _settled(("gpu", "l4-1x-g6"))
    shown = copy.deepcopy(xr["status"]["gpuPools"])
    xr["spec"]["nodePools"][0]["className"] = "l40s-1x-g6e"  # a new instance type
    rsp = _run(xr, cloud, [_replica("qwen-a", "gpu")])
    # The nodes stay the old shape and the pool publishes what they are, draining.
    assert _cloud(rsp)["spec"]["nodePools"] == cloud["spec"]["nodePools"]
    assert _status(rsp)["gpuPools"] == [{**shown[0], "draining": True}]
    assert "pool gpu (its nodes would be replaced)" in conditions(rsp)["PoolsDraining"][2]
    # Once nothing runs there, the new shape and the new class's devices.
    xr["status"] = _status(rsp)
    after = _run(xr, cloud, [])
    assert _cloud(after)["spec"]["nodePools"][0]["instanceType"] == "g6e.xlarge"
    assert _status(after)["gpuPools"] == [{"name": "gpu", "nodes": 1, "devices": [L40S]}]


def test_scaling_a_pinned_pool_replaces_no_nodes_and_drains_nothing() -> None:
    xr, cloud = _settled(("gpu", "l4-1x-g6"))
    xr["spec"]["nodePools"][0]["nodeCount"] = 3
    rsp = _run(xr, cloud, [_replica("qwen-a", "gpu")])
    assert _cloud(rsp)["spec"]["nodePools"][0]["nodeCount"] == 3
    assert "draining" not in _status(rsp)["gpuPools"][0]
    assert conditions(rsp)["PoolsDraining"][0] == "False"


def test_a_removed_pool_nothing_pins_goes_at_once() -> None:
    xr, cloud = _settled(("gpu-l4", "l4-1x-g6"), ("gpu-l40s", "l40s-1x-g6e"))
    xr["spec"]["nodePools"] = xr["spec"]["nodePools"][1:]
    rsp = _run(xr, cloud, [_replica("qwen-b", "gpu-l40s")])
    assert [p["name"] for p in _cloud(rsp)["spec"]["nodePools"]] == ["gpu-l40s"]
    assert [p["name"] for p in _status(rsp)["gpuPools"]] == ["gpu-l40s"]


def test_the_same_request_gives_the_same_bytes() -> None:
    xr, cloud = _settled(("gpu-l4", "l4-1x-g6"), ("gpu-l40s", "l40s-1x-g6e"))
    xr["spec"]["nodePools"] = xr["spec"]["nodePools"][1:]
    replicas = [_replica("z", "gpu-l4"), _replica("a", "gpu-l4")]
    one = _run(xr, cloud, replicas).SerializeToString(deterministic=True)
    two = _run(xr, cloud, list(reversed(replicas))).SerializeToString(deterministic=True)
    assert one == two
