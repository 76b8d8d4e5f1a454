"""A burst of ModelDeployments herded onto the one cluster Ready yet converges.

``make bench-loop`` M applies its clusters and deployments at once: the deployments'
first reconciles run together while one cluster is Ready, each reads the fleet as it was
before any placed (:meth:`ControlPlane.reconcile_together`), so every one of them fills
that cluster (the fill takes the cluster with the fewest of *this* deployment's replicas,
ties by name), far past its nodes. Admission then leaves the newer replicas out: with no
room anywhere else yet they go at once (10, then 4 replicas), and the fill places them
again once the other clusters are Ready (10). On the e2e control plane the
fleet held 112 ModelReplicas for 60 wanted while its fake providers had stopped
reporting. Here the loop's fakes keep reporting, and the burst must end where a calm
apply would: every deployment with exactly its replicas, all Ready, no pool charged past
its nodes, no GPU pod waiting for a node.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from modelplane.dev.fakes.base import Key, Obj, get_path
from modelplane.dev.loop import fakes
from modelplane.dev.loop.apis import EXAMPLES
from modelplane.dev.loop.fleets import GATEWAY, PROVIDER_CONFIGS, _load
from modelplane.dev.loop.harness import ControlPlane
from modelplane.dev.loop.records import history_text

from benches import loop as bench
from tests.loop.racing import charged, pending, pool_nodes, replicas_of

pytestmark = pytest.mark.loop

CLUSTERS = 3
NODES = 4  # per cluster: 12 in all, for 10 replicas
DEPLOYMENTS = 5
REPLICAS = 2
PASSES = 12
CLASS_FILE = "platform/inference-class/inference-class-h100-byo.yaml"


def _platform() -> list[Obj]:
    """What the fleet stands on, as the bench applies it, with the docs' prerequisites."""
    docs = [*_load(EXAMPLES / GATEWAY), *_load(EXAMPLES / CLASS_FILE)]
    docs.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bench.NAMESPACE}})
    prerequisites = [d for path in PROVIDER_CONFIGS for d in _load(EXAMPLES / path)]
    prerequisites += fakes.installation()
    return [*prerequisites, *docs]


def _cluster(i: int) -> list[Obj]:
    name = bench.cluster_name(i)
    doc = bench._existing_cluster(name, NODES)
    return [*fakes.user_secrets([doc]), doc]


def _held(plane: ControlPlane) -> int:
    return sum(1 for key in plane.store if key[1] == "ModelReplica")


def _placed(plane: ControlPlane) -> dict[str, int]:
    """ModelReplicas per cluster."""
    out: dict[str, int] = {}
    for key, obj in plane.store.items():
        if key[1] == "ModelReplica":
            cluster = str(get_path(obj, "spec.clusterName"))
            out[cluster] = out.get(cluster, 0) + 1
    return out


@dataclass
class Herd:
    plane: ControlPlane
    deployments: list[Key]
    herded: dict[str, int]  # ModelReplicas per cluster after the burst's first reconciles
    held: list[int]  # ModelReplicas after the burst, then after every pass
    story: str


@pytest.fixture(scope="module")
def herd(loop_functions: dict[str, str]) -> Herd:
    """One cluster converged, then the other clusters and a burst of deployments at once."""
    plane = ControlPlane([*_platform(), *_cluster(0)], loop_functions)
    plane.converge(10)
    assert not plane.unready(), plane.report()
    for i in range(1, CLUSTERS):
        for doc in _cluster(i):
            plane.put(doc)
    deployments = [
        plane.put(bench._deployment(bench.deployment_name(i), REPLICAS)) for i in range(DEPLOYMENTS)
    ]
    plane.reconcile_together(deployments)
    herded = _placed(plane)
    held = [_held(plane)]
    records = []
    for _ in range(PASSES):
        records.append(plane.run_pass())
        held.append(_held(plane))
        if records[-1].quiet:
            break
    story = (
        f"\nherded {herded}, held per pass {held}\n"
        f"history:\n{history_text(records)}\n{plane.report()}"
    )
    return Herd(plane, deployments, herded, held, story)


def test_a_burst_herds_onto_the_ready_cluster(herd: Herd) -> None:
    # The premise: the burst's first reconciles put every replica on the one Ready
    # cluster, past its nodes (were it not so, the next test would prove nothing).
    assert herd.herded == {bench.cluster_name(0): DEPLOYMENTS * REPLICAS}, herd.story
    assert DEPLOYMENTS * REPLICAS > NODES


def test_a_herded_burst_converges_to_what_was_asked(herd: Herd) -> None:
    plane = herd.plane
    for key in herd.deployments:
        replicas = replicas_of(plane, key)
        assert len(replicas) == REPLICAS, f"{key[3]} holds {len(replicas)}: {herd.story}"
        assert all(plane.ready(r) for r in replicas), f"{key[3]} not all Ready: {herd.story}"
    nodes = pool_nodes(plane)
    over = {k: n for k, n in charged(plane).items() if n > nodes.get(k, 0)}
    assert not over, f"over-committed pools {over} (nodes {nodes}): {herd.story}"
    assert pending(plane) == [], herd.story
    assert herd.held[-1] == DEPLOYMENTS * REPLICAS, herd.story
