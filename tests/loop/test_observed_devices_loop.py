"""Observed devices through Crossplane's loop: a node whose DRA driver publishes no device
holds no GPU pod, and deployments racing for what is left converge on it.

The scaled EKS fleet of the docs (eks-us-east and eks-us-west run qwen-demo and
qwen-west on their one node each; eks-eu-central has one free L40S node). eks-eu-central
grows to two nodes, and the second one's driver publishes nothing: the node is Ready and
schedulable, so a count of nodes says two, but DRA can allocate a GPU on one only. Two
teams apply a model each at once (:meth:`ControlPlane.reconcile_together`: both read the
fleet as it was before either placed). The fake workload cluster binds GPU pods only on
nodes that publish devices (:func:`modelplane.dev.loop.capacity.gpu_blocked`). Whichever
reconciled first: one runs, the other reports InsufficientCapacity, nothing is Pending,
and no pool holds more than its nodes publish. The driver back: the other one runs too.
"""

from __future__ import annotations

from typing import Any

import pytest
from modelplane.dev.fakes.base import get_path
from modelplane.dev.loop.nodes import NodeState, node_name
from modelplane.dev.loop.records import history_text

from tests.loop.conftest import Fleets
from tests.loop.test_admission_loop import (
    TEAMS,
    _charged,
    _deployment,
    _pending,
    _replicas_of,
    _team,
)

pytestmark = pytest.mark.loop

FLEET = "scale-eks"
PASSES = 6
FREE = "eks-eu-central"


def _pool(plane: Any) -> dict[str, Any]:
    pools: list[dict[str, Any]] = get_path(
        plane.get(plane.one("InferenceCluster", FREE)), "spec.nodePools"
    )
    return pools[0]


def _published(plane: Any) -> dict[str, Any]:
    found = get_path(plane.get(plane.one("InferenceCluster", FREE)), "status.gpuPools")
    return next(p for p in found if p["name"] == _pool(plane)["name"])


@pytest.mark.parametrize("first", TEAMS, ids=[f"{t}-reconciled-first" for t in TEAMS])
def test_racing_deployments_converge_on_the_nodes_that_publish_devices(
    converged: Fleets, first: str
) -> None:
    plane = converged.get(FLEET).plane.clone()

    def grow(obj: dict[str, Any]) -> None:
        pool = obj["spec"]["nodePools"][0]
        pool.update(nodeCount=2, minNodeCount=2, maxNodeCount=2)  # a fixed pool of 2

    plane.edit(plane.one("InferenceCluster", FREE), grow)
    bare = node_name(FREE, _pool(plane)["name"], 1)
    plane.providers.nodes[(FREE, bare)] = NodeState.NO_DEVICES
    plane.converge(PASSES)
    observed = _published(plane).get("observed") or {}
    assert (_published(plane)["nodes"], observed.get("nodes")) == (2, 2), plane.report()
    assert [g["nodes"] for g in observed["nodeDevices"] if not g["devices"]] == [1], observed

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
    assert raced == {t: [FREE] for t in TEAMS}, f"both should take the free node: {raced}"
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
    assert _charged(plane).get((FREE, _pool(plane)["name"])) == 1, story
    assert _pending(plane) == [], story

    # The driver publishes again: the loser finds the room and runs.
    plane.providers.nodes.clear()
    records = plane.converge(PASSES)
    story = (
        f"\n{FREE} publishes {_published(plane)}"
        f"\nhistory:\n{history_text(records)}\n{plane.report([keys[t] for t in TEAMS])}"
    )
    back = _replicas_of(plane, keys[loser])
    assert len(back) == 1, story
    assert plane.ready(back[0]), story
    assert _pending(plane) == [], story
