"""A node pool removed under a running replica, on the mini control plane: its node group
stays until the replica has moved to another pool and is Ready there, then goes.

The getting-started fleet runs qwen-demo on eks-us-east's pool gpu-l4. The platform team
adds a pool gpu-l4-b of the same class, then removes gpu-l4 from the spec. Every
reconcile is watched: while the old replica exists, gpu-l4's NodeGroup exists; the
replica is never without a Ready replacement (make before break); at the end the
replica runs on gpu-l4-b, Ready, and the NodeGroup of gpu-l4 is gone.
"""

from __future__ import annotations

import pytest
from modelplane.dev.fakes.base import Key, Obj, describe, get_path
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import Reconciled, history_text

from tests.loop.conftest import Converged, Fleets
from tests.loop.contract import DEPLOYMENT, _admissible, _kind, _located, _own_replicas
from tests.loop.test_rollout import _fresh_ready

FLEET = "getting-started"
CLUSTER = _kind("InferenceCluster", name="eks-us-east")
OLD, NEW = "gpu-l4", "gpu-l4-b"
PASSES = 12


def _node_group(plane: ControlPlane, pool: str) -> Key | None:
    found = [k for k in plane.find("NodeGroup") if k[-1].endswith(f"nodegroup-{pool}")]
    return found[0] if found else None


def _pool_of(plane: ControlPlane, replica: Key) -> str:
    member = plane.get(replica)["spec"]["engines"][0]["members"][0]
    return str(member["nodePoolName"])


def _published(plane: ControlPlane, cluster: Key) -> dict[str, bool]:
    pools = get_path(plane.get(cluster), "status.gpuPools") or []
    return {str(p["name"]): bool(p.get("draining")) for p in pools}


@pytest.fixture(scope="module")
def two_pools(converged: Fleets) -> tuple[ControlPlane, Key, Key]:
    """getting-started with a second L4 pool beside gpu-l4; qwen-demo still on gpu-l4."""
    done: Converged = converged.get(FLEET)
    plane = done.plane.clone()
    cluster = _located(plane, CLUSTER, "the getting-started cluster")

    def add(obj: Obj) -> None:
        first = obj["spec"]["nodePools"][0]
        obj["spec"]["nodePools"].append({**first, "name": NEW})

    _admissible(plane.edit(cluster, add))
    records = plane.converge(PASSES)
    deployment = _located(plane, DEPLOYMENT, "the getting-started ModelDeployment")
    mine = _own_replicas(plane, deployment)
    where = [_pool_of(plane, k) for k in mine]
    if where != [OLD] or not _fresh_ready(plane, mine[0]) or _node_group(plane, NEW) is None:
        pytest.fail(
            f"precondition: one Ready replica on {OLD} and a node group for {NEW}, got {where}:\n"
            f"{plane.report()}\nhistory:\n{history_text(records)}",
            pytrace=False,
        )
    return plane, cluster, deployment


def test_a_removed_pool_s_node_group_stays_until_the_replica_is_ready_elsewhere(
    two_pools: tuple[ControlPlane, Key, Key],
) -> None:
    plane, cluster, deployment = two_pools
    plane = plane.clone()
    old_replica = _own_replicas(plane, deployment)[0]
    broken: list[str] = []
    timeline: list[str] = []

    def watch(cp: ControlPlane, result: Reconciled) -> None:
        mine = _own_replicas(cp, deployment)
        where = f"pass {len(cp.history) + 1}, reconciling {describe(result.key)}"
        if old_replica in mine and _node_group(cp, OLD) is None:
            broken.append(
                f"{where}: {OLD}'s node group went while {describe(old_replica)} ran there"
            )
        if not any(_fresh_ready(cp, k) for k in mine):
            broken.append(f"{where}: no Ready replica")

    plane.watchers.append(watch)

    def remove(obj: Obj) -> None:
        obj["spec"]["nodePools"] = [p for p in obj["spec"]["nodePools"] if p["name"] != OLD]

    _admissible(plane.edit(cluster, remove))
    records = []
    saw_draining = False
    for _ in range(PASSES):
        record = plane.run_pass()
        records.append(record)
        mine = _own_replicas(plane, deployment)
        saw_draining |= _published(plane, cluster).get(OLD, False)
        timeline.append(
            ", ".join(
                f"{k[-1]}@{_pool_of(plane, k)}{'(Ready)' if _fresh_ready(plane, k) else ''}"
                for k in mine
            )
            + f" | node groups: {', '.join(p for p in (OLD, NEW) if _node_group(plane, p))}"
        )
        if record.quiet:
            break
    mine = _own_replicas(plane, deployment)
    story = "\n".join(f"  pass {i}: {t}" for i, t in enumerate(timeline, 1))
    context = f"\ntimeline:\n{story}\n{plane.report()}\nhistory:\n{history_text(records)}"
    assert broken == [], "\n".join(broken) + context
    assert saw_draining, f"{OLD} was never published draining" + context
    assert [_pool_of(plane, k) for k in mine] == [NEW], context
    assert all(_fresh_ready(plane, k) for k in mine), context
    assert old_replica not in mine, context
    assert _node_group(plane, OLD) is None, f"{OLD}'s node group stayed" + context
    assert _node_group(plane, NEW) is not None, context
    assert _published(plane, cluster) == {NEW: False}, context
    assert records[-1].quiet, "the fleet never settled" + context
