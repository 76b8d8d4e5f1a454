"""The ledger path: a ModelDeployment that must place reads the clusters' published ledgers
(``status.ledger``) instead of every ModelReplica of the fleet, and the replicas of the
clusters it runs on or places on (docs/design/loop-cost.md section 5b).

Each case runs Crossplane's requirement loop in process (:func:`tests.inprocess.reconcile`)
against a store of the fleet, and compares with the same deployment answered from the whole
fleet (every replica, as before the ledger)."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning
from modelplane.domain import api
from modelplane.domain.scheduling.fleet import ExistingReplica, PinnedEngine
from modelplane.planning import tally

from tests.compose.deployments import (
    as_fleet,
    call,
    desired,
    events,
    gpu_device,
    inference_cluster,
    member,
    model_deployment,
    other_replica,
)
from tests.compose.test_inference_cluster import _cluster, _run, _status
from tests.inprocess import Store, reconcile

Doc = dict[str, Any]


def _with_ledgers(clusters: Sequence[Doc], replicas: Sequence[Doc]) -> list[Doc]:
    """The clusters as their InferenceCluster function publishes them: each with the
    ledger of the replicas labelled as on it."""
    out = []
    for cluster in clusters:
        name = cluster["metadata"]["name"]
        on_it = [
            planning.as_struct(r)
            for r in replicas
            if r["metadata"]["labels"].get(api.CLUSTER_LABEL) == name
        ]
        published = copy.deepcopy(cluster)
        pools = published["status"]["gpuPools"]
        ledger, _ = planning.published_ledger(name, pools, on_it)
        if ledger is not None:
            published["status"]["ledger"] = ledger
        out.append(published)
    return out


def _by_ledgers(
    xr: Doc, clusters: Sequence[Doc], replicas: Sequence[Doc], observed: Doc | None = None
) -> fnv1.RunFunctionResponse:
    """Reconcile the deployment as Crossplane would, its requirements answered from the
    fleet, the clusters publishing their ledgers."""
    planning.forget()
    return reconcile(xr, Store([*clusters, *replicas]), observed)


def _asked(rsp: fnv1.RunFunctionResponse) -> set[str]:
    return set(rsp.requirements.resources)


def _same_answer(a: fnv1.RunFunctionResponse, b: fnv1.RunFunctionResponse) -> None:
    assert desired(a) == desired(b)
    assert a.desired.composite == b.desired.composite
    assert list(a.conditions) == list(b.conditions)
    assert list(a.results) == list(b.results)


def _full_and_free() -> tuple[list[Doc], list[Doc]]:
    """Three clusters of one L4 node each; another team's replica fills the first."""
    clusters = [inference_cluster(n) for n in ("eks-a", "eks-b", "eks-c")]
    return clusters, [other_replica("other", "eks-a", "gpu-l4")]


def _two_node_pools() -> tuple[list[Doc], list[Doc]]:
    """Four clusters of two L4 nodes, two teams' replicas spread over three of them."""
    clusters = [inference_cluster(f"eks-{n}", [("gpu-l4", 2, ())]) for n in "abcd"]
    replicas = [
        other_replica("chat", "eks-a", "gpu-l4"),
        other_replica("chat", "eks-b", "gpu-l4", namespace="team-b"),
        other_replica("embed", "eks-b", "gpu-l4"),
        other_replica("embed", "eks-c", "gpu-l4", namespace="team-c"),
    ]
    return clusters, replicas


FLEETS = {"one-full": _full_and_free, "two-node-pools": _two_node_pools}


@pytest.mark.parametrize("wanted", [1, 2, 3, 5])
@pytest.mark.parametrize("fleet", sorted(FLEETS))
def test_placing_by_ledgers_answers_as_the_whole_fleet(fleet: str, wanted: int) -> None:
    clusters, replicas = FLEETS[fleet]()
    xr = model_deployment(replicas=wanted)
    by_ledgers = _by_ledgers(xr, _with_ledgers(clusters, replicas), replicas)
    assert planning.REPLICAS not in _asked(by_ledgers)  # it never read the whole fleet
    _same_answer(by_ledgers, call(xr, clusters, replicas))


def test_a_scale_up_by_ledgers_answers_as_the_whole_fleet_and_keeps_what_runs() -> None:
    clusters, others = _two_node_pools()
    xr = model_deployment(replicas=1)
    first = call(xr, clusters, others)
    own = as_fleet(first, ready=True)
    scaled = model_deployment(replicas=4)
    replicas = [*others, *own]
    observed = desired(first)
    by_ledgers = _by_ledgers(scaled, _with_ledgers(clusters, replicas), replicas, observed)
    _same_answer(by_ledgers, call(scaled, clusters, replicas, observed=observed))
    assert set(desired(first)) <= set(desired(by_ledgers))


def test_each_new_replica_is_checked_against_the_replicas_on_its_cluster() -> None:
    """A ledger older than a replica placed meanwhile says the first cluster is free; the
    call reads that cluster's replicas before it answers, and places elsewhere."""
    clusters, replicas = _full_and_free()
    stale = _with_ledgers(clusters, [])  # eks-a's ledger does not have the other replica yet
    rsp = _by_ledgers(model_deployment(), stale, replicas)
    assert {r["spec"]["clusterName"] for r in as_fleet(rsp)} == {"eks-b"}
    assert planning.on_cluster_requirement("eks-a") in _asked(rsp) or (
        planning.REPLICAS in _asked(rsp)
    )


def test_a_cluster_without_a_ledger_has_its_replicas_read() -> None:
    clusters, replicas = _full_and_free()
    published = _with_ledgers(clusters[1:], replicas)
    rsp = _by_ledgers(model_deployment(), [clusters[0], *published], replicas)
    assert planning.on_cluster_requirement("eks-a") in _asked(rsp)
    assert {r["spec"]["clusterName"] for r in as_fleet(rsp)} == {"eks-b"}


def test_a_ledger_line_of_its_own_deleted_replica_charges_nothing() -> None:
    """Its own replicas are read, never taken from a ledger: a line of one is a ledger
    older than its deletion, so it neither charges its pool nor comes back."""
    clusters = [inference_cluster("eks-a"), inference_cluster("eks-b")]
    gone = other_replica("qwen-demo", "eks-a", "gpu-l4", namespace="ml-team")
    published = _with_ledgers(clusters, [gone])
    xr = model_deployment()
    rsp = _by_ledgers(xr, published, [])
    _same_answer(rsp, call(xr, clusters, []))
    assert {r["spec"]["clusterName"] for r in as_fleet(rsp)} == {"eks-a"}


def test_an_unreadable_ledger_has_the_clusters_replicas_read() -> None:
    clusters, replicas = _full_and_free()
    published = _with_ledgers(clusters, replicas)
    published[0]["status"]["ledger"]["replicas"] = ["not a ledger line"]
    rsp = _by_ledgers(model_deployment(), published, replicas)
    assert planning.on_cluster_requirement("eks-a") in _asked(rsp)
    assert {r["spec"]["clusterName"] for r in as_fleet(rsp)} == {"eks-b"}


# --- the lines ---------------------------------------------------------------------------


SHARED = ExistingReplica(
    namespace="ml-team",
    deployment="llama",
    cluster="c1",
    index=3,
    engines=(
        PinnedEngine("llama", "h100", 0, (((("gpu.nvidia.com", 4),), 2), ((), 1))),
        PinnedEngine("router", "cpu", 1),
    ),
    name="llama-c1-3",
    created="2026-12-04T10:00:00Z",
)


@pytest.mark.parametrize(
    "replica",
    [
        SHARED,
        ExistingReplica("ns", "d", "c1", 0, (), "d-c1-0"),
        ExistingReplica("", "", "c1", -1, (PinnedEngine("e", "p", 2),), "orphan"),
    ],
)
def test_a_ledger_line_reads_back_as_the_replica_it_was_written_from(
    replica: ExistingReplica,
) -> None:
    (back,) = tally.read("c1", [tally.line(replica)])
    assert back == replica


def test_a_line_does_not_say_whether_its_replica_is_ready() -> None:
    """A Ready change on the workload cluster must not rewrite the InferenceCluster."""
    ready = dataclasses.replace(SHARED, ready=True, stuck="Unschedulable", stuck_since="x")
    assert tally.line(ready) == tally.line(SHARED)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ns name dep x -",  # an index that is no number
        "ns name dep 0",  # no creation time
        "ns name dep 0 - e=pool",  # an engine without its nodes
        "ns name dep 0 - e=pool:1:2@gpu*x",  # a device count that is no number
    ],
)
def test_a_line_that_does_not_parse_is_named(text: str) -> None:
    with pytest.raises(tally.TallyError, match=r"status\.ledger\.replicas\[0\]"):
        tally.read("c1", [text])


def test_the_inference_cluster_publishes_the_ledger_of_its_replicas() -> None:
    on_it = [
        other_replica("chat", "eks-us-east", "gpu-l4"),
        other_replica("embed", "eks-us-east", "gpu-l4", namespace="team-b"),
    ]
    status = _status(_run(_cluster(), replicas=on_it))
    lines = status["ledger"]["replicas"]
    assert [line.split(" ")[1] for line in lines] == sorted(r["metadata"]["name"] for r in on_it)
    assert tally.read("eks-us-east", lines) == tuple(
        planning.read_replica(planning.as_struct(r))
        for r in sorted(on_it, key=lambda r: r["metadata"]["name"])
    )


def test_a_cluster_whose_pool_shares_nodes_publishes_no_ledger() -> None:
    """Where pods sit on a shared pool follows admission order (Ready first), which a
    ledger does not say: its replicas are read instead."""
    on_it = [other_replica("chat", "eks-us-east", "gpu-l4")]
    assert planning.published_ledger("c1", [{"capacity": "Devices"}, {}], []) == (None, None)
    ledger, _ = planning.published_ledger("c1", [{"capacity": "Nodes"}, {}], [])
    assert ledger == {"replicas": []}
    assert "ledger" in _status(_run(_cluster(), replicas=on_it))


def test_a_pool_that_shares_nodes_has_its_replicas_read_and_answers_as_the_whole_fleet() -> None:
    eight = [gpu_device("46068Mi", count=8)]
    shared = inference_cluster("c1", [("h100", 2, eight)])
    shared["status"]["gpuPools"][0]["capacity"] = "Devices"
    other = inference_cluster("c2", [("h100", 2, eight)])
    other["status"]["gpuPools"][0]["capacity"] = "Devices"
    four = [{"name": "llama", "members": [member(count=4)]}]
    first = call(model_deployment("llama", 3, engines=four), [shared, other])
    replicas = as_fleet(first)
    xr = model_deployment("other", 3, engines=four)
    by_ledgers = _by_ledgers(xr, _with_ledgers([shared, other], replicas), replicas)
    assert planning.on_cluster_requirement("c1") in _asked(by_ledgers)
    _same_answer(by_ledgers, call(xr, [shared, other], replicas))


def test_a_replica_the_cluster_cannot_read_is_left_out_of_its_ledger_and_named() -> None:
    broken = other_replica("broken", "eks-us-east", "gpu-l4")
    broken["spec"]["engines"] = "not a list"
    on_it = [other_replica("chat", "eks-us-east", "gpu-l4"), broken]
    rsp = _run(_cluster(), replicas=on_it)
    lines = _status(rsp)["ledger"]["replicas"]
    assert [line.split(" ")[1] for line in lines] == [on_it[0]["metadata"]["name"]]
    (warning,) = [e for e in events(rsp) if "ModelReplica" in e]
    assert broken["metadata"]["name"] in warning
    assert "spec.engines" in warning
    assert "left out of status.ledger" in warning
