"""GPU-granular capacity through the functions: an InferenceCluster pool opts in with
``capacity: Devices``, publishes it in ``status.gpuPools``, and a ModelDeployment's
scheduler then lets its pods share that pool's nodes."""

from __future__ import annotations

import copy
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning

from tests.compose.deployments import (
    as_fleet,
    call,
    events,
    gpu_device,
    inference_cluster,
    member,
    model_deployment,
)
from tests.compose.test_inference_cluster import CLASS, _cluster, _run, _status
from tests.requests import conditions

# 2 nodes of 8 GPUs (46068Mi each), and a model whose pod claims 4 of them.
EIGHT = [gpu_device("46068Mi", count=8)]


def _four_gpu(replicas: int) -> dict[str, Any]:
    return model_deployment(
        "llama", replicas, engines=[{"name": "llama", "members": [member(count=4)]}]
    )


def _shared(name: str = "c1", capacity: str | None = "Devices") -> dict[str, Any]:
    cluster = inference_cluster(name, [("h100", 2, EIGHT)])
    if capacity is not None:
        cluster["status"]["gpuPools"][0]["capacity"] = capacity
    return cluster


def _placed(rsp: fnv1.RunFunctionResponse) -> int:
    return len(as_fleet(rsp))


# --- the ModelDeployment function --------------------------------------------------------


def test_a_pool_that_shares_nodes_takes_four_4_gpu_replicas_where_whole_nodes_take_two() -> None:
    assert _placed(call(_four_gpu(6), [_shared()])) == 4
    assert _placed(call(_four_gpu(6), [_shared(capacity=None)])) == 2
    assert _placed(call(_four_gpu(6), [_shared(capacity="Nodes")])) == 2


def test_placed_replicas_charge_their_devices_on_the_next_call() -> None:
    xr = _four_gpu(3)
    first = call(xr, [_shared()])
    assert _placed(first) == 3
    # Another deployment now sees the three replicas: 12 of 16 GPUs, one 4-GPU slot left.
    other = model_deployment("other", 2, engines=[{"name": "llama", "members": [member(count=4)]}])
    second = call(other, [_shared()], as_fleet(first))
    assert _placed(second) == 1
    message = (
        "placed 1 of 2 replicas; c1: pool h100 has 0 of 16 gpu.nvidia.com free, "
        "needs 1 pod of 4 gpu.nvidia.com on one node"
    )
    assert conditions(second)["ReplicasScheduled"] == ("False", "InsufficientCapacity", message)


def test_a_bad_published_capacity_is_named_and_the_cluster_gets_nothing_new() -> None:
    rsp = call(_four_gpu(1), [_shared(capacity="Gpus")])
    assert _placed(rsp) == 0
    assert any(
        "InferenceCluster c1: status.gpuPools[0].capacity is 'Gpus', not one of Nodes, Devices" in e
        for e in events(rsp)
    ), events(rsp)


def test_the_fleet_reader_reads_capacity_and_what_replicas_claim() -> None:
    found = planning.read_cluster(planning.as_struct(_shared()))
    assert found is not None
    assert found.pools is not None
    assert found.pools[0].capacity == "Devices"
    unset = planning.read_cluster(planning.as_struct(_shared(capacity=None)))
    assert unset is not None
    assert unset.pools is not None
    assert unset.pools[0].capacity == "Nodes"
    replicas = as_fleet(call(_four_gpu(1), [_shared()]))
    read = planning.read_replica(planning.as_struct(replicas[0]))
    assert read is not None
    assert read.engines[0].nodes == 1
    assert read.engines[0].pods == ((((("gpu.nvidia.com", 4),), 1)),)


# --- the InferenceCluster function publishes the opt-in ----------------------------------


def _with_capacity(capacity: str | None) -> dict[str, Any]:
    xr = _cluster("Existing")
    if capacity is not None:
        xr["spec"]["nodePools"][0]["capacity"] = capacity
    return xr


def test_a_pool_that_opts_in_publishes_capacity_devices() -> None:
    pools = _status(_run(_with_capacity("Devices")))["gpuPools"]
    assert pools == [
        {
            "name": "gpu-l4",
            "nodes": 1,
            "devices": copy.deepcopy(CLASS["spec"]["devices"]),
            "capacity": "Devices",
        }
    ]


def test_pools_that_do_not_opt_in_publish_as_before() -> None:
    for capacity in (None, "Nodes"):
        pools = _status(_run(_with_capacity(capacity)))["gpuPools"]
        assert [sorted(p) for p in pools] == [["devices", "name", "nodes"]]


def test_a_bad_capacity_on_a_pool_is_refused_naming_the_field() -> None:
    rsp = _run(_with_capacity("GPUs"))
    fatal = [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL]
    assert len(fatal) == 1
    assert "InferenceCluster eks-us-east" in fatal[0]
    assert "spec.nodePools[0].capacity" in fatal[0]
    assert "'Nodes'" in fatal[0]
    assert "'Devices'" in fatal[0]
    assert not rsp.desired.resources
