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

import pytest
from modelplane.dev.fakes import base as fakes

from tests.loop.conftest import Fleets
from tests.loop.racing import TEAMS, charged, pending, pool_nodes, race_then_settle

pytestmark = pytest.mark.loop

FLEET = "scale-eks"
PASSES = 6


@pytest.mark.parametrize("first", TEAMS, ids=[f"{t}-reconciled-first" for t in TEAMS])
def test_two_deployments_racing_for_one_node_converge(converged: Fleets, first: str) -> None:
    plane = converged.get(FLEET).plane.clone()
    race = race_then_settle(plane, first, "eks-eu-central", PASSES)
    nodes = pool_nodes(plane)
    over = {k: n for k, n in charged(plane).items() if n > nodes.get(k, 0)}
    assert not over, f"over-committed pools {over} (nodes {nodes}): {race.story}"
    assert pending(plane) == [], race.story
    assert fakes.condition_is(plane.get(race.keys[race.winner]), "Ready"), race.story
