"""Observed capacity through Crossplane's reconciler: each InferenceCluster observes its
workload cluster's Nodes and ResourceSlices (the fakes report what provider-kubernetes'
ObservedObjectCollection controller would) and publishes what it finds per pool."""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.dev.fakes.base import get_path
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.nodes import NodeState, node_name

from tests.loop.conftest import Fleets

pytestmark = pytest.mark.loop

FLEET = "scale-eks"
PASSES = 5


def _clusters(plane: ControlPlane) -> dict[str, dict[str, Any]]:
    return {k[3]: plane.get(k) for k in plane.find("InferenceCluster")}


def _observed(plane: ControlPlane, cluster: str) -> dict[str, Any]:
    pools = get_path(_clusters(plane)[cluster], "status.gpuPools") or []
    return {p["name"]: p.get("observed") for p in pools}


def _condition(plane: ControlPlane, cluster: str) -> dict[str, Any]:
    key = plane.one("InferenceCluster", cluster)
    return plane.conditions(key).get("CapacityObserved") or {}


def test_every_cluster_publishes_what_its_nodes_and_slices_hold(converged: Fleets) -> None:
    plane = converged.get(FLEET).plane
    clusters = _clusters(plane)
    assert clusters, f"{FLEET} has no InferenceCluster"
    for name, cluster in clusters.items():
        cond = _condition(plane, name)
        assert (cond.get("status"), cond.get("reason")) == ("True", "Observed"), plane.report()
        declared = {p["name"]: p for p in get_path(cluster, "spec.nodePools")}
        published = {p["name"]: p for p in get_path(cluster, "status.gpuPools")}
        for pool, entry in published.items():
            observed = entry["observed"]
            assert observed["nodes"] == declared[pool].get("nodeCount", 1), (name, pool)
            dra = [d for d in entry["devices"] if d.get("claim", "DRA") == "DRA"]
            want: dict[str, int] = {}
            for d in dra:
                want[d["driver"]] = want.get(d["driver"], 0) + d["count"] * observed["nodes"]
            got = {d["driver"]: d["count"] for d in observed["devices"]}
            assert got == {k: v for k, v in want.items() if v}, (name, pool)


def test_lost_cordoned_and_tainted_nodes_leave_the_count(converged: Fleets) -> None:
    plane = converged.get(FLEET).plane.clone()
    name = sorted(_clusters(plane))[0]
    count = 4

    def grow(obj: dict[str, Any]) -> None:
        obj["spec"]["nodePools"][0]["nodeCount"] = count

    cluster = plane.edit(plane.one("InferenceCluster", name), grow)
    pool = get_path(cluster, "spec.nodePools")[0]
    plane.converge(PASSES)
    assert _observed(plane, name)[pool["name"]]["nodes"] == count, plane.report()
    states = [NodeState.LOST, NodeState.CORDONED, NodeState.TAINTED, NodeState.NOT_READY]
    changed = {node_name(name, pool["name"], i): s for i, s in enumerate(states)}
    for node, state in changed.items():
        plane.providers.nodes[(name, node)] = state
    plane.converge(PASSES)
    observed = _observed(plane, name)[pool["name"]]
    assert observed["nodes"] == count - len(changed), plane.report()
    reasons = {u["name"]: u["reason"] for u in observed.get("unavailable", [])}
    expected = {"cordoned": "Cordoned", "tainted": "Tainted", "not-ready": "NotReady"}
    assert reasons == {n: expected[s.value] for n, s in changed.items() if s is not NodeState.LOST}
    assert (
        f"{pool['name']}: {count - len(changed)} usable node" in _condition(plane, name)["message"]
    )
    # Restored: the count comes back.
    plane.providers.nodes.clear()
    plane.converge(PASSES)
    assert _observed(plane, name)[pool["name"]]["nodes"] == count


def _pools_of(plane: ControlPlane, replica: Any) -> set[str]:
    spec = plane.get(replica)["spec"]
    return {
        str(m["nodePoolName"])
        for e in spec.get("engines") or ()
        for m in e.get("members") or ()
        if m.get("nodePoolName")
    }


def test_a_replica_whose_pool_is_lost_is_replaced_make_before_break(converged: Fleets) -> None:
    """Every node of a replica's pool lost: its pods stop, the cluster observes no usable
    node, the pool is over-committed, and the replica moves where there is room; the old
    one is gone once its replacement is Ready."""
    plane = converged.get(FLEET).plane.clone()
    replicas = sorted(k for k in plane.find("ModelReplica") if plane.ready(k))
    assert replicas, plane.report()
    replica = replicas[0]
    cluster = str(get_path(plane.get(replica), "spec.clusterName"))
    pools = _pools_of(plane, replica)
    ic = _clusters(plane)[cluster]
    for pool in get_path(ic, "spec.nodePools"):
        if pool["name"] in pools:
            for i in range(int(pool.get("nodeCount", 1))):
                node = node_name(cluster, pool["name"], i)
                plane.providers.nodes[(cluster, node)] = NodeState.LOST
    deployment = plane.get(replica)["metadata"]["labels"]["modelplane.ai/deployment"]
    records = plane.converge(PASSES * 2)
    observed = _observed(plane, cluster)
    assert all(observed[p]["nodes"] == 0 for p in pools), observed
    now = [
        k
        for k in plane.find("ModelReplica", namespace=replica[2])
        if plane.get(k)["metadata"]["labels"].get("modelplane.ai/deployment") == deployment
    ]
    placed = {k: str(get_path(plane.get(k), "spec.clusterName")) for k in now}
    history = "\n".join(r.summary() for r in records)
    assert replica not in now, f"the replica on the lost pool stays: {placed}\n{history}"
    assert now, f"nothing replaced {replica[3]}:\n{plane.report()}"
    assert all(plane.ready(k) for k in now), f"{placed}\n{plane.report()}"
    for k in now:
        assert not (placed[k] == cluster and _pools_of(plane, k) & pools), placed
