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
from tests.loop.racing import TEAMS, charged, pending, race_then_settle, replicas_of

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

    race = race_then_settle(plane, first, FREE, PASSES)
    keys, loser, story = race.keys, race.loser, race.story
    assert charged(plane).get((FREE, _pool(plane)["name"])) == 1, story
    assert pending(plane) == [], story

    # The driver publishes again: the loser finds the room and runs.
    plane.providers.nodes.clear()
    records = plane.converge(PASSES)
    story = (
        f"\n{FREE} publishes {_published(plane)}"
        f"\nhistory:\n{history_text(records)}\n{plane.report([keys[t] for t in TEAMS])}"
    )
    back = replicas_of(plane, keys[loser])
    assert len(back) == 1, story
    assert plane.ready(back[0]), story
    assert pending(plane) == [], story
