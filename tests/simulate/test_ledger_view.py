"""The ledger path (docs/design/loop-cost.md section 5b) answers as the whole fleet does.

A ModelDeployment that must place reads the selected clusters with their published
ledgers (``status.ledger``: one line per replica on the cluster), the replicas of the
clusters it runs on, and, before it answers, the replicas of every cluster it places on.
Where the ledgers are current, that must give the placement the whole fleet gives: the
same replicas, drops, moves and over-commitments, and the same explanations of every
other cluster (which come from the ledgers' charges).

Each call of :func:`modelplane.planning.plan` that ``modelplane simulate`` makes, on every
example scenario (taints, drains, lost nodes, racing deployments, rolling updates, GPU
sharing on ``capacity: Devices`` pools...) and on generated churn, is made again the way
the function makes it on the ledgers, and the two placements must be equal.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from google.protobuf import struct_pb2 as structpb
from modelplane import kit, planning
from modelplane.domain import api
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.planning import Planned

from tests.simulate.conftest import EXAMPLES, simulate_data
from tests.simulate.test_steady_view import _cluster_of, _labels, _namespace, churn


@dataclass
class Seen:
    """What the spy saw: placing calls compared, how many widened, and the objects read."""

    calls: int = 0
    widened: int = 0
    full_objects: int = 0
    ledger_objects: int = 0
    disagreements: list[str] = field(default_factory=list)


def _name(obj: structpb.Struct) -> str:
    return str(obj.fields["metadata"].struct_value.fields["name"].string_value)


def _published(
    clusters: list[structpb.Struct], replicas: list[structpb.Struct]
) -> list[structpb.Struct]:
    """Each cluster with the ledger its InferenceCluster function publishes."""
    on: dict[str, list[structpb.Struct]] = {}
    for replica in replicas:
        on.setdefault(_labels(replica).get(api.CLUSTER_LABEL, ""), []).append(replica)
    out = []
    for cluster in clusters:
        copy = structpb.Struct()
        copy.CopyFrom(cluster)
        status = copy.fields["status"].struct_value
        pools = kit.struct_to_dict(status).get("gpuPools") or []
        ledger, _ = planning.published_ledger(_name(cluster), pools, on.get(_name(cluster), []))
        if ledger is not None:
            status.fields["ledger"].struct_value.update(ledger)
        out.append(copy)
    return out


def on_the_ledgers(
    deployment: Deployment,
    cache: Any,
    clusters: list[structpb.Struct],
    replicas: list[structpb.Struct],
    surge: Any,
    plan: Callable[..., Planned],
) -> tuple[Planned, int, int]:
    """Plan as the function does on the ledgers: its own replicas and those on the
    clusters it runs on read, the rest from the ledgers; widened to every cluster it
    places on until each is read. Returns the plan, the widenings and the objects read."""
    own = [
        r
        for r in replicas
        if _labels(r).get(api.DEPLOYMENT_LABEL) == deployment.name
        and _namespace(r) == deployment.namespace
    ]
    published = _published(clusters, replicas)
    exact = {c for r in own if (c := _cluster_of(r))}
    for widened in range(3):
        tally = planning.tallied(published, exact, deployment)
        read = [r for r in replicas if r in own or _labels(r).get(api.CLUSTER_LABEL) in exact]
        planned = plan(deployment, cache, published, read, surge, tallied=tally.replicas)
        needed = {*exact, *tally.unpublished, *(p.cluster for p in planned.placement.replicas)}
        if needed <= exact:
            return planned, widened, len(published) + len(read)
        exact |= needed
    raise AssertionError(f"{deployment.name}: the clusters to read did not settle")


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    """Spy on the simulator: every plan is made again on the ledgers."""
    found = Seen()
    plan: Callable[..., Planned] = planning.plan

    def spied_plan(
        deployment: Deployment, cache: Any, clusters: Any, replicas: Any, surge: Any = None
    ) -> Planned:
        clusters, replicas = list(clusters), list(replicas)
        full = plan(deployment, cache, clusters, replicas, surge)
        ledgers, widened, objects = on_the_ledgers(
            deployment, cache, clusters, replicas, surge, plan
        )
        found.calls += 1
        found.widened += widened
        found.full_objects += len(clusters) + len(replicas)
        found.ledger_objects += objects
        if (ledgers.placement, ledgers.scheduled) != (full.placement, full.scheduled):
            found.disagreements.append(
                f"{deployment.namespace}/{deployment.name}: "
                f"ledgers {ledgers.placement} != whole fleet {full.placement}"
            )
        return full

    monkeypatch.setattr(planning, "plan", spied_plan)  # the simulator calls planning.plan
    return found


SCENARIOS = [
    *(str(p) for p in sorted(EXAMPLES.glob("*.yaml"))),
    *(f"churn-{seed}" for seed in range(3)),
]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: Path(s).stem)
def test_the_ledgers_answer_as_the_whole_fleet(scenario: str, seen: Seen, tmp_path: Path) -> None:
    """Every example scenario, and generated churn on the docs' scaled fleet
    (:func:`tests.simulate.test_steady_view.churn`)."""
    if scenario.startswith("churn-"):
        path = tmp_path / "churn.yaml"
        rng = random.Random(int(scenario.removeprefix("churn-")))
        path.write_text(yaml.safe_dump(churn(rng), sort_keys=False))
        scenario = str(path)
    simulate_data(scenario)
    assert seen.calls > 0, "the spy saw no reconcile"
    assert not seen.disagreements, "\n".join(seen.disagreements[:3])
