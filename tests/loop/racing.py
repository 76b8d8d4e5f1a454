"""Two teams' ModelDeployments racing for one free node, shared by the loop tests.

Each team's deployment is qwen-west's, renamed and free to go anywhere with room. Their
first reconciles run concurrently (:meth:`ControlPlane.reconcile_together`: each reads the
fleet as it was before either placed), so both take the free cluster's node; then passes
run until nothing changes, and exactly one of them keeps a replica there.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from modelplane.dev.fakes.base import Key, describe, get_path
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import history_text

TEAMS = ("alpha", "beta")


def team(name: str, template: dict[str, Any]) -> dict[str, Any]:
    """Return ``template`` (a ModelDeployment) as team ``name``'s, placed anywhere with room."""
    doc = copy.deepcopy(template)
    doc["metadata"] = {"name": name, "namespace": template["metadata"]["namespace"]}
    spec = doc["spec"]["template"]["spec"]
    spec.pop("clusterSelector", None)  # anywhere with room
    return doc


def deployment(plane: ControlPlane, name: str) -> Key:
    """Return the key of ModelDeployment ``name``."""
    return next(k for k in plane.store if k[1] == "ModelDeployment" and k[3] == name)


def replicas_of(plane: ControlPlane, owner: Key) -> list[Key]:
    """Return the ModelReplicas ``owner`` composes."""
    return [k for k in plane.composed_by(owner) if k[1] == "ModelReplica"]


def charged(plane: ControlPlane) -> dict[tuple[str, str], int]:
    """Nodes every ModelReplica charges, per (cluster, pool)."""
    out: dict[tuple[str, str], int] = {}
    for key, obj in plane.store.items():
        if key[1] != "ModelReplica":
            continue
        cluster = str(get_path(obj, "spec.clusterName"))
        for engine in get_path(obj, "spec.engines") or ():
            for member in engine.get("members") or ():
                if member.get("deviceRequests"):
                    where = (cluster, str(member.get("nodePoolName")))
                    out[where] = out.get(where, 0) + int(engine.get("copies", 1))
    return out


def pool_nodes(plane: ControlPlane) -> dict[tuple[str, str], int]:
    """Nodes every GPU pool has, per (cluster, pool), as the clusters report them."""
    return {
        (key[3], str(pool["name"])): int(pool["nodes"])
        for key, obj in plane.store.items()
        if key[1] == "InferenceCluster"
        for pool in get_path(obj, "status.gpuPools") or ()
    }


def pending(plane: ControlPlane) -> list[str]:
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


@dataclass
class Race:
    """How a race settled: each team's deployment, who won, and the history to explain it."""

    keys: dict[str, Key]
    winner: str
    loser: str
    story: str


def race_then_settle(plane: ControlPlane, first: str, free: str, passes: int) -> Race:
    """Race the two teams (``first`` reconciled first) for cluster ``free``, then settle.

    Asserts what every race must end in: both took ``free`` at once, then the first one
    keeps one Ready replica, the other has none and says InsufficientCapacity.
    """
    template = plane.get(deployment(plane, "qwen-west"))
    for name in TEAMS:
        plane.put(team(name, template))
    keys = {t: deployment(plane, t) for t in TEAMS}
    order = [first, *(t for t in TEAMS if t != first)]
    plane.reconcile_together([keys[t] for t in order])
    raced = {
        t: [str(get_path(plane.get(k), "spec.clusterName")) for k in replicas_of(plane, keys[t])]
        for t in TEAMS
    }
    assert raced == {t: [free] for t in TEAMS}, f"both should take the free node: {raced}"
    records = plane.converge(passes)
    story = f"\nhistory:\n{history_text(records)}\n{plane.report([keys[t] for t in TEAMS])}"
    winner, loser = order
    won = replicas_of(plane, keys[winner])
    assert len(won) == 1, f"{winner} should keep its replica: {story}"
    assert plane.ready(won[0]), f"{winner}'s replica should run: {story}"
    assert replicas_of(plane, keys[loser]) == [], f"{loser} should have no replica left: {story}"
    scheduled = plane.conditions(keys[loser]).get("ReplicasScheduled") or {}
    assert (scheduled.get("status"), scheduled.get("reason")) == (
        "False",
        "InsufficientCapacity",
    ), story
    return Race(keys, winner, loser, story)
