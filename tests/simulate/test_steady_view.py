"""The claim behind docs/design/loop-cost.md section 5: a steady reconcile needs only
what is its own.

A ModelDeployment reconcile reads every InferenceCluster its selector matches and every
ModelReplica of the fleet. The design has a *steady* reconcile read only its own
replicas, the clusters they run on (by name) and the replicas on those clusters (by
their ``modelplane.ai/cluster`` label), and read the whole fleet only when that view
says something must be placed, moved or dropped. That is safe only if, whenever the
narrow view says "steady", the whole fleet would have given the same placement, the
same ``ReplicasScheduled`` and the same ModelReplicas.

This test checks it on every reconcile of every example scenario of ``modelplane
simulate`` (taints, drains, lost nodes, racing deployments, rolling updates, GPU
sharing...): each call of :func:`modelplane.planning.plan` is made again on the narrow
view, and where :func:`modelplane.planning.is_steady` (the function's own verdict) says
steady, the two answers must agree. tests/compose/test_model_deployment.py checks the
function's requirements and its two paths; this is the evidence the design rests on.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import struct_pb2 as structpb
from modelplane import planning
from modelplane.domain import api
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.planning import Planned
from modelplane.simulate import engine
from modelplane.simulate.world import World

from tests.simulate.conftest import EXAMPLES, deployment, simulate_data


@dataclass
class Tally:
    """What the spy saw: reconciles, how many of them the narrow view calls steady,
    and the objects each view reads."""

    world: World | None = None
    calls: int = 0
    steady: int = 0
    full_objects: int = 0
    narrow_objects: int = 0
    disagreements: list[str] = field(default_factory=list)


def _labels(obj: structpb.Struct) -> dict[str, str]:
    meta = obj.fields["metadata"].struct_value.fields if "metadata" in obj.fields else {}
    found = meta["labels"].struct_value.fields if "labels" in meta else {}
    return {k: v.string_value for k, v in found.items()}


def _namespace(obj: structpb.Struct) -> str:
    meta = obj.fields["metadata"].struct_value.fields
    return meta["namespace"].string_value if "namespace" in meta else ""


def _cluster_of(obj: structpb.Struct) -> str:
    spec = obj.fields["spec"].struct_value.fields if "spec" in obj.fields else {}
    return spec["clusterName"].string_value if "clusterName" in spec else ""


def narrow_view(
    world: World, deployment: Deployment, replicas: Iterable[structpb.Struct]
) -> tuple[list[structpb.Struct], list[structpb.Struct]]:
    """The clusters and replicas a steady reconcile would require: its own replicas (by
    the deployment label, in its namespace), the clusters they run on (by name, whatever
    the selector says), and every replica labelled as running on those clusters."""
    every = list(replicas)
    own = [
        r
        for r in every
        if _labels(r).get(api.DEPLOYMENT_LABEL) == deployment.name
        and _namespace(r) == deployment.namespace
    ]
    hosting = sorted({c for r in own if (c := _cluster_of(r))})
    clusters = [world.cluster_struct(name) for name in hosting if name in world.clusters]
    on_hosting = [r for r in every if r in own or _labels(r).get(api.CLUSTER_LABEL) in set(hosting)]
    return clusters, on_hosting


def _answer(planned: Planned) -> tuple[Any, ...]:
    """What a reconcile's output is made of: the placement's decisions (not its
    explanations of other clusters, which a placed deployment does not report) and the
    condition."""
    p = planned.placement
    return (p.wanted, p.replicas, p.dropped, p.moving, p.overcommitted, p.hold, planned.scheduled)


@pytest.fixture
def tally(monkeypatch: pytest.MonkeyPatch) -> Tally:
    """Spy on the simulator: every plan is made again on the narrow view."""
    seen = Tally()
    reconcile: Callable[..., bool] = engine._reconcile
    plan = planning.plan

    def spied_reconcile(world: World, *args: Any, **kwargs: Any) -> bool:
        seen.world = world
        return reconcile(world, *args, **kwargs)

    def spied_plan(
        deployment: Deployment, cache: Any, clusters: Any, replicas: Any, surge: Any = None
    ) -> Planned:
        clusters, replicas = list(clusters), list(replicas)
        full = plan(deployment, cache, clusters, replicas, surge)
        assert seen.world is not None
        some_clusters, some_replicas = narrow_view(seen.world, deployment, replicas)
        narrow = plan(deployment, cache, some_clusters, some_replicas, surge)
        seen.calls += 1
        seen.full_objects += len(clusters) + len(replicas)
        seen.narrow_objects += len(some_clusters) + len(some_replicas)
        if planning.is_steady(narrow):
            seen.steady += 1
            if _answer(narrow) != _answer(full):
                seen.disagreements.append(
                    f"{deployment.namespace}/{deployment.name}: "
                    f"narrow {_answer(narrow)} != full {_answer(full)}"
                )
        return full

    monkeypatch.setattr(engine, "_reconcile", spied_reconcile)
    monkeypatch.setattr(planning, "plan", spied_plan)  # the simulator calls planning.plan
    return seen


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.yaml")))
def test_a_steady_narrow_view_answers_as_the_whole_fleet(name: str, tally: Tally) -> None:
    simulate_data(str(EXAMPLES / f"{name}.yaml"))
    _check(tally)


@pytest.mark.parametrize("seed", range(6))
def test_a_steady_narrow_view_answers_as_the_whole_fleet_under_churn(
    seed: int, tally: Tally, tmp_path: Path
) -> None:
    """A generated timeline on the docs' scaled fleet (three clusters, pools grown to
    three nodes): deployments applied (some racing), scaled, moved by selector and
    deleted; clusters tainted (NoSchedule, NoExecute), not Ready, untainted; nodes lost,
    cordoned and restored; pools resized."""
    path = tmp_path / "churn.yaml"
    path.write_text(yaml.safe_dump(churn(random.Random(seed)), sort_keys=False))
    simulate_data(str(path))
    _check(tally)


def _check(tally: Tally) -> None:
    assert tally.calls > 0, "the spy saw no reconcile"
    assert tally.steady > 0, "no reconcile was steady: nothing was compared"
    assert not tally.disagreements, "\n".join(tally.disagreements)


# -- a generated timeline -------------------------------------------------------------------

POOLS = [("eks-us-east", "gpu-l4"), ("eks-us-west", "gpu-l40s"), ("eks-eu-central", "gpu-l40s")]
REGIONS = ["us-east", "us-west", "eu-central"]
MEMORY = ["16Gi", "20Gi", "40Gi"]
MAINTENANCE = "modelplane.ai/maintenance"


def churned_deployment(name: str, rng: random.Random) -> dict[str, Any]:
    """A one-engine ModelDeployment of 1-3 replicas, a GPU memory floor, maybe a region
    and a toleration of the maintenance taint."""
    spec: dict[str, Any] = {}
    if rng.random() < 0.3:
        spec["clusterSelector"] = {"matchLabels": {"modelplane.ai/region": rng.choice(REGIONS)}}
    if rng.random() < 0.3:
        spec["tolerations"] = [{"key": MAINTENANCE, "operator": "Exists"}]
    return deployment(name, rng.randint(1, 3), rng.choice(MEMORY), **spec)


def churn(rng: random.Random, steps: int = 24) -> dict[str, Any]:
    """A scenario: the fleet grown, then ``steps`` steps of one to three random events."""
    grow = [{"setPoolNodes": {"cluster": c, "pool": p, "nodes": 3}} for c, p in POOLS]
    timeline: list[dict[str, Any]] = [{"name": "grow every pool", "events": grow}]
    fleet = _Churn()
    for step in range(steps):
        events: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            events += fleet.event(rng, step)
        timeline.append({"name": f"step {step}", "events": events})
    return {
        "kind": "Scenario",
        "name": "churn",
        "include": [str(EXAMPLES.parent / f) for f in FLEET],
        "timeline": timeline,
    }


FLEET = [
    "getting-started/platform.yaml",
    "getting-started/fleet/inference-cluster.yaml",
    "getting-started/scale-the-platform/eks/platform-scale.yaml",
]


@dataclass
class _Churn:
    """What the timeline has done so far, so each event is one the fleet can take."""

    live: list[str] = field(default_factory=list)
    tainted: set[str] = field(default_factory=set)
    down: set[tuple[str, str]] = field(default_factory=set)

    def event(self, rng: random.Random, step: int) -> list[dict[str, Any]]:
        """One random event (two for a race)."""
        cluster, pool = rng.choice(POOLS)
        roll = rng.random()
        if roll < 0.3 or not self.live:
            names = [f"m{step}-{i}-{len(self.live)}" for i in range(rng.randint(1, 3))]
            self.live += names
            applied = [{"apply": [churned_deployment(n, rng) for n in names]}]
            return [{"race": {}}, *applied] if len(names) > 1 else applied
        return self._change(rng, roll, cluster, pool)

    def _change(
        self, rng: random.Random, roll: float, cluster: str, pool: str
    ) -> list[dict[str, Any]]:
        target = f"ml/{rng.choice(self.live)}"
        if roll < 0.45:
            return [{"editDeployment": {"deployment": target, "replicas": rng.randint(0, 4)}}]
        if roll < 0.5:
            region = {"modelplane.ai/region": rng.choice(REGIONS)}
            return [{"editDeployment": {"deployment": target, "clusterSelector": region}}]
        if roll < 0.55:
            gone = rng.choice(self.live)
            self.live.remove(gone)
            return [{"delete": {"kind": "ModelDeployment", "name": gone, "namespace": "ml"}}]
        if roll < 0.7:
            return [self._taint(rng, cluster)]
        if roll < 0.76:
            return [{"setClusterReady": {"cluster": cluster, "ready": rng.random() < 0.5}}]
        if roll < 0.92:
            return [self._nodes(rng, cluster, pool)]
        return [{"setPoolNodes": {"cluster": cluster, "pool": pool, "nodes": rng.randint(1, 3)}}]

    def _taint(self, rng: random.Random, cluster: str) -> dict[str, Any]:
        if cluster in self.tainted:
            self.tainted.discard(cluster)
            return {"untaint": {"cluster": cluster, "key": MAINTENANCE}}
        self.tainted.add(cluster)
        effect = rng.choice(["NoSchedule", "NoExecute"])
        return {"taint": {"cluster": cluster, "key": MAINTENANCE, "effect": effect}}

    def _nodes(self, rng: random.Random, cluster: str, pool: str) -> dict[str, Any]:
        if (cluster, pool) in self.down:
            self.down.discard((cluster, pool))
            return {"restoreNodes": {"cluster": cluster, "pool": pool}}
        self.down.add((cluster, pool))
        how = rng.choice(["loseNodes", "cordonNodes"])
        return {how: {"cluster": cluster, "pool": pool, "nodes": 1}}
