"""Racing ModelDeployments through Crossplane's loop: concurrent reconciles converge.

The scaled EKS fleet of the docs (eks-us-east and eks-us-west run qwen-demo and
qwen-west on their one node each; eks-eu-central's one L40S node is free). Two teams
apply a model each at once; their first reconciles run concurrently
(:meth:`ControlPlane.reconcile_together`: each reads the fleet as it was before either
placed), so both take eks-eu-central's node. The fake workload cluster binds GPU pods
first come, first served on each pool's nodes (:func:`modelplane.dev.loop.capacity.gpu_blocked`),
so the loser's pod is Pending, and its replica not Ready. Then passes run until nothing
changes: exactly one of them runs on the node, the other reports InsufficientCapacity,
no pool is over-committed and no GPU workload waits for a node, whichever reconciled
(and so created its replica) first.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from modelplane.dev.fakes import base as fakes
from modelplane.dev.fakes.base import Key, describe, get_path
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import history_text

from tests.loop.conftest import Fleets

pytestmark = pytest.mark.loop

FLEET = "scale-eks"
PASSES = 6
TEAMS = ("alpha", "beta")


def _team(name: str, template: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(template)
    doc["metadata"] = {"name": name, "namespace": template["metadata"]["namespace"]}
    spec = doc["spec"]["template"]["spec"]
    spec.pop("clusterSelector", None)  # anywhere with room
    return doc


def _deployment(plane: ControlPlane, name: str) -> Key:
    return next(k for k in plane.store if k[1] == "ModelDeployment" and k[3] == name)


def _replicas_of(plane: ControlPlane, deployment: Key) -> list[Key]:
    return [k for k in plane.composed_by(deployment) if k[1] == "ModelReplica"]


def _charged(plane: ControlPlane) -> dict[tuple[str, str], int]:
    """Nodes every ModelReplica charges, per (cluster, pool)."""
    charged: dict[tuple[str, str], int] = {}
    for key, obj in plane.store.items():
        if key[1] != "ModelReplica":
            continue
        cluster = str(get_path(obj, "spec.clusterName"))
        for engine in get_path(obj, "spec.engines") or ():
            for member in engine.get("members") or ():
                if member.get("deviceRequests"):
                    where = (cluster, str(member.get("nodePoolName")))
                    charged[where] = charged.get(where, 0) + int(engine.get("copies", 1))
    return charged


def _nodes(plane: ControlPlane) -> dict[tuple[str, str], int]:
    return {
        (key[3], str(pool["name"])): int(pool["nodes"])
        for key, obj in plane.store.items()
        if key[1] == "InferenceCluster"
        for pool in get_path(obj, "status.gpuPools") or ()
    }


def _pending(plane: ControlPlane) -> list[str]:
    """GPU workloads whose pods wait for a node, as the fake workload clusters report them."""
    out = []
    for key, obj in plane.store.items():
        if key[1] != "Object":
            continue
        manifest = get_path(obj, "status.atProvider.manifest") or {}
        for condition in get_path(manifest, "status.conditions") or ():
            if "wait for a node" in str(condition.get("message", "")):
                out.append(describe(key))
                break
    return sorted(out)


@pytest.mark.parametrize("first", TEAMS, ids=[f"{t}-reconciled-first" for t in TEAMS])
def test_two_deployments_racing_for_one_node_converge(converged: Fleets, first: str) -> None:
    plane = converged.get(FLEET).plane.clone()
    template = plane.get(_deployment(plane, "qwen-west"))
    for team in TEAMS:
        plane.put(_team(team, template))
    keys = {t: _deployment(plane, t) for t in TEAMS}
    order = [first, *(t for t in TEAMS if t != first)]
    plane.reconcile_together([keys[t] for t in order])
    raced = {
        t: [str(get_path(plane.get(k), "spec.clusterName")) for k in _replicas_of(plane, keys[t])]
        for t in TEAMS
    }
    assert raced == {t: ["eks-eu-central"] for t in TEAMS}, (
        f"both should take the free node: {raced}"
    )
    records = plane.converge(PASSES)
    story = f"\nhistory:\n{history_text(records)}\n{plane.report([keys[t] for t in TEAMS])}"
    winner, loser = order
    won = _replicas_of(plane, keys[winner])
    assert len(won) == 1, f"{winner} should keep its replica: {story}"
    assert plane.ready(won[0]), f"{winner}'s replica should run: {story}"
    assert _replicas_of(plane, keys[loser]) == [], f"{loser} should have no replica left: {story}"
    scheduled = plane.conditions(keys[loser]).get("ReplicasScheduled") or {}
    assert (scheduled.get("status"), scheduled.get("reason")) == (
        "False",
        "InsufficientCapacity",
    ), story
    nodes = _nodes(plane)
    over = {k: n for k, n in _charged(plane).items() if n > nodes.get(k, 0)}
    assert not over, f"over-committed pools {over} (nodes {nodes}): {story}"
    assert _pending(plane) == [], story
    assert fakes.condition_is(plane.get(keys[winner]), "Ready"), story
