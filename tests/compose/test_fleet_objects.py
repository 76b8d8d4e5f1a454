"""The ModelDeployment's readers of fleet objects: the charges a replica carries, and the
pools and devices a cluster publishes."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane import planning
from modelplane.domain import api
from modelplane.domain.dra import Attribute
from modelplane.models.modeldeployment import ModelDeployment

from tests.compose.deployments import NS, gpu_device, inference_cluster, model_deployment

# --- reading the fleet -------------------------------------------------------------------------


def _fleet_replica(
    engines: list[dict[str, Any]], labels: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": "r", "namespace": NS, "labels": labels or {api.INDEX_LABEL: "2"}},
        "spec": {"clusterName": "a", "engines": engines},
    }


def _fleet_member(role: str, claims: bool, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"role": role, "nodePoolName": "p", **extra}
    if claims:
        out["deviceRequests"] = [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1}]
    return out


@pytest.mark.parametrize(
    ("engines", "want"),
    [
        pytest.param(
            [{"name": "e", "members": [_fleet_member("Standalone", True)]}],
            [("e", "p", 1)],
            id="standalone",
        ),
        pytest.param(
            [{"name": "e", "copies": 3, "members": [_fleet_member("Standalone", True)]}],
            [("e", "p", 3)],
            id="copies",
        ),
        pytest.param(
            [
                {
                    "name": "g",
                    "copies": 2,
                    "members": [
                        _fleet_member("Leader", False),
                        _fleet_member("Worker", True, worker={"nodes": 3}),
                    ],
                }
            ],
            [("g", "p", 6)],
            id="gang-leader-claims-nothing",
        ),
        pytest.param(
            [{"name": "e", "members": [_fleet_member("Standalone", False)]}],
            [("e", "p", 0)],
            id="no-claims",
        ),
    ],
)
def test_read_replica_charges(
    engines: list[dict[str, Any]], want: list[tuple[str, str, int]]
) -> None:
    replica = planning.read_replica(planning.as_struct(_fleet_replica(engines)))
    assert replica is not None
    assert [(e.name, e.pool, e.nodes) for e in replica.engines] == want
    assert (replica.cluster, replica.index, replica.namespace) == ("a", 2, NS)


def test_replica_without_index_is_nobody_s() -> None:
    dep = planning.read_deployment(
        ModelDeployment.model_validate(model_deployment()), model_deployment()
    )
    obj = _fleet_replica(
        [{"name": "qwen", "members": [_fleet_member("Standalone", True)]}],
        {api.DEPLOYMENT_LABEL: "qwen-demo", api.INDEX_LABEL: "first"},
    )
    state = planning.read_fleet([], [planning.as_struct(obj)], dep)
    (replica,) = state.fleet.replicas
    assert (replica.deployment, replica.namespace) == ("", "")
    assert state.own == {}


@pytest.mark.parametrize(
    ("status", "pools"),
    [
        pytest.param({}, None, id="not-published-yet"),
        pytest.param({"gpuPools": []}, (), id="published-none"),
        pytest.param(
            {"gpuPools": [{"name": "p", "nodes": 2}]}, (("p", 2, 0),), id="pool-without-devices"
        ),
    ],
)
def test_read_cluster_pools(
    status: dict[str, Any], pools: tuple[tuple[str, int, int], ...] | None
) -> None:
    obj = {
        "metadata": {"name": "c"},
        "spec": {
            "taints": [{"key": "k", "effect": "NoExecute"}, {"key": "x", "effect": "Sideways"}]
        },
        "status": status,
    }
    found = planning.read_cluster(planning.as_struct(obj))
    assert found is not None
    got = (
        None
        if found.pools is None
        else tuple((p.name, p.nodes, len(p.devices)) for p in found.pools)
    )
    assert got == pools
    assert [str(t) for t in found.taints] == ["k:NoExecute"]


def test_read_cluster_devices() -> None:
    device = {
        **gpu_device("81559Mi", 8),
        "attributes": {
            "architecture": {"string": "Hopper"},
            "cudaComputeCapability": {"version": "9.0.0"},
            "nvlink": {"bool": True},
            "numa": {"int": 2},
        },
    }
    found = planning.read_cluster(planning.as_struct(inference_cluster("c", [("p", 1, [device])])))
    assert found is not None
    assert found.pools is not None
    (entry,) = found.pools[0].devices
    assert (entry.name, entry.count, entry.claim, entry.device_class_name) == (
        "gpu",
        8,
        "DRA",
        "gpu.nvidia.com",
    )
    assert dict(entry.device.attributes) == {
        "gpu.nvidia.com/architecture": Attribute("string", "Hopper"),
        "gpu.nvidia.com/cudaComputeCapability": Attribute("version", "9.0.0"),
        "gpu.nvidia.com/nvlink": Attribute("bool", True),
        "gpu.nvidia.com/numa": Attribute("int", 2),
    }
    assert dict(entry.device.capacity) == {"gpu.nvidia.com/memory": "81559Mi"}
