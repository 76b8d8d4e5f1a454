"""Admission through the function: racing ModelDeployments read the same fleet and agree.

Two deployments applied together both took the last node of c1's one-node pool. Each
call reads the fleet's ModelReplicas as they are (creationTimestamp and Ready condition
included) and every call agrees who the pool holds: the older replica stays, the
younger, not Ready, gets a replacement on c2 and keeps running until it is Ready.
"""

from __future__ import annotations

import copy
from typing import Any

from modelplane import planning
from modelplane.domain.scheduling.fleet import ExistingReplica
from modelplane.domain.scheduling.sharing import GANG
from modelplane.planning import replicas as replica_reader

from tests.compose.deployments import (
    as_fleet,
    call,
    events,
    inference_cluster,
    model_deployment,
    of_kind,
)
from tests.compose.test_fleet_read import _deployment
from tests.requests import conditions

OLDER, YOUNGER = "2026-12-01T10:00:00Z", "2026-12-01T10:00:03Z"
ONE_NODE = [
    inference_cluster("c1", (("gpu-l4", 1, ()),)),
    inference_cluster("c2", (("gpu-l4", 1, ()),)),
]


def _placed_on_c1(name: str, created: str, *, ready: bool = False) -> dict[str, Any]:
    """The deployment's replica as a first call composed it on c1, as it then exists."""
    only_c1 = [inference_cluster("c1", (("gpu-l4", 1, ()),))]
    (replica,) = as_fleet(call(model_deployment(name), only_c1))
    replica = copy.deepcopy(replica)
    replica["metadata"]["creationTimestamp"] = created
    state = "True" if ready else "False"
    replica["status"] = {"conditions": [{"type": "Ready", "status": state, "reason": "Available"}]}
    return replica


def _clusters(rsp: Any) -> list[str]:
    return sorted(r["spec"]["clusterName"] for r in of_kind(rsp, "ModelReplica").values())


def test_the_younger_racer_gets_a_replacement_and_says_which_pool_is_over_committed() -> None:
    fleet_ = [_placed_on_c1("alpha", OLDER), _placed_on_c1("beta", YOUNGER)]
    older = call(model_deployment("alpha"), ONE_NODE, fleet_)
    assert _clusters(older) == ["c1"]
    assert conditions(older)["ReplicasScheduled"][:2] == ("True", "ReplicasCreated")
    younger = call(model_deployment("beta"), ONE_NODE, fleet_)
    assert _clusters(younger) == ["c1", "c2"]  # make before break
    status, reason, message = conditions(younger)["ReplicasScheduled"]
    assert (status, reason) == ("False", "OverCommitted")
    over = (
        "pool gpu-l4 on c1 is over-committed: it has 1 node, "
        "replicas admitted before this one take 1, this one needs 1"
    )
    assert over in message
    assert any(over in e and "keeps running until a replacement is Ready" for e in events(younger))


def test_the_ready_racer_holds_the_node_whatever_its_age() -> None:
    fleet_ = [_placed_on_c1("alpha", OLDER), _placed_on_c1("beta", YOUNGER, ready=True)]
    assert _clusters(call(model_deployment("beta"), ONE_NODE, fleet_)) == ["c1"]
    assert _clusters(call(model_deployment("alpha"), ONE_NODE, fleet_)) == ["c1", "c2"]


def test_a_ready_replica_on_an_over_committed_pool_stays_and_is_reported() -> None:
    fleet_ = [_placed_on_c1("alpha", OLDER, ready=True), _placed_on_c1("beta", YOUNGER, ready=True)]
    rsp = call(model_deployment("beta"), ONE_NODE, fleet_)
    assert _clusters(rsp) == ["c1"]
    assert conditions(rsp)["ReplicasScheduled"][:2] == ("True", "OverCommitted")
    assert any("is Ready on an over-committed pool, so it stays" in e for e in events(rsp))


def test_the_fleet_read_carries_what_admission_orders_by() -> None:
    replica = _placed_on_c1("beta", YOUNGER, ready=True)
    stuck = copy.deepcopy(replica)
    stuck["status"] = {
        "conditions": [
            {"type": "Ready", "status": "False", "reason": "Creating"},
            {
                "type": "ModelReady",
                "status": "False",
                "reason": replica_reader.UNSCHEDULABLE,
                "message": "0/2 nodes are available: 2 Insufficient nvidia.com/gpu",
                "lastTransitionTime": "2026-01-02T03:04:05Z",
            },
        ]
    }
    state = planning.read_fleet(
        [],
        [planning.as_struct(replica), planning.as_struct(stuck)],
        _deployment(model_deployment("beta")),
    )
    first, second = state.fleet.replicas
    assert isinstance(first, ExistingReplica)
    assert (first.created, first.ready, first.stuck) == (YOUNGER, True, "")
    assert (second.ready, second.stuck, second.stuck_since) == (
        False,
        "0/2 nodes are available: 2 Insufficient nvidia.com/gpu",
        "2026-01-02T03:04:05Z",
    )


def test_a_gang_replica_reads_as_pods_that_each_take_a_node() -> None:
    gang = {
        "name": "e",
        "members": [
            {
                "role": role,
                "nodePoolName": "gpu-l4",
                "deviceRequests": [
                    {"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 1}
                ],
                "template": {"spec": {"containers": [{"name": "engine"}]}},
                **({"worker": {"nodes": 2}} if role == "Worker" else {}),
            }
            for role in ("Leader", "Worker")
        ],
    }
    replica = _placed_on_c1("gamma", OLDER)
    replica["spec"]["engines"] = [gang]
    state = planning.read_fleet([], [planning.as_struct(replica)])
    (read,) = state.fleet.replicas
    (pinned,) = read.engines
    assert pinned.nodes == 3
    assert pinned.pods == ((((GANG, 1), ("gpu.nvidia.com", 1)), 3),)
