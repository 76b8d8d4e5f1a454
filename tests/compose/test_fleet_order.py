"""Crossplane lists a requirement's objects from its informer cache, a Go map: the fleet
comes in a new order on every call. The same fleet in any order is the same fleet: the
placement is remembered across orders, and the response and its Warning are the same."""

from __future__ import annotations

import random

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning, registry, runtime

from benches.fleets import fleet_request
from tests.compose.deployments import inference_cluster, other_replica
from tests.compose.test_fleet_read import _deployment, unreadable_replicas

ORDERS = 3


def _listed_anew(req: fnv1.RunFunctionRequest, seed: int) -> fnv1.RunFunctionRequest:
    """``req`` with each requirement's objects in another order, as a new list brings them."""
    listed = fnv1.RunFunctionRequest()
    listed.CopyFrom(req)
    for name in sorted(req.required_resources):
        items = [fnv1.Resource() for _ in req.required_resources[name].items]
        for copy, item in zip(items, req.required_resources[name].items, strict=True):
            copy.CopyFrom(item)
        random.Random(seed).shuffle(items)
        del listed.required_resources[name].items[:]
        listed.required_resources[name].items.extend(items)
    return listed


def test_the_fleet_reads_the_same_in_any_order() -> None:
    clusters = [planning.as_struct(inference_cluster(f"eks-{c}")) for c in "abcd"]
    replicas = [
        planning.as_struct(other_replica(f"theirs-{i}", f"eks-{'abcd'[i % 4]}", "gpu-l4"))
        for i in range(12)
    ]
    fleets = []
    for seed in range(ORDERS):
        random.Random(seed).shuffle(clusters)
        random.Random(seed).shuffle(replicas)
        fleets.append(planning.read_fleet(clusters, replicas, _deployment()).fleet)
    assert fleets == [fleets[0]] * ORDERS
    assert [c.name for c in fleets[0].clusters] == ["eks-a", "eks-b", "eks-c", "eks-d"]


def test_replicas_of_one_name_in_many_namespaces_read_the_same_in_any_order() -> None:
    # Teams deploy the same model under the same name: their replicas share a name and
    # differ by namespace alone, and the listing's order must not decide theirs.
    clusters = [planning.as_struct(inference_cluster("eks-a"))]
    replicas = [
        planning.as_struct(other_replica("llama", "eks-a", "gpu-l4", namespace=f"team-{t}"))
        for t in range(6)
    ]
    fleets = []
    for seed in range(ORDERS):
        random.Random(seed).shuffle(replicas)
        fleets.append(planning.read_fleet(clusters, replicas, _deployment()).fleet)
    assert fleets == [fleets[0]] * ORDERS
    assert [r.namespace for r in fleets[0].replicas] == [f"team-{t}" for t in range(6)]


def test_a_steady_fleet_listed_anew_is_the_last_listing_and_a_changed_one_is_sorted() -> None:
    planning.forget()
    clusters = [planning.as_struct(inference_cluster("eks-a"))]
    replicas = [
        planning.as_struct(other_replica(f"m-{i}", "eks-a", "gpu-l4", namespace=f"team-{i % 3}"))
        for i in range(9)
    ]
    first = planning.read_fleet(clusters, replicas, _deployment()).fleet.replicas
    random.Random(1).shuffle(replicas)
    assert planning.read_fleet(clusters, replicas, _deployment()).fleet.replicas is first
    gone = replicas.pop(4)
    fewer = planning.read_fleet(clusters, replicas, _deployment()).fleet.replicas
    named = sorted((r.name, r.namespace) for r in first if r.name != gone["metadata"]["name"])
    assert [(r.name, r.namespace) for r in fewer] == named
    assert planning.read_fleet(clusters, [*replicas, gone], _deployment()).fleet.replicas == first


def test_a_fleet_listed_anew_is_scheduled_once_and_answered_the_same() -> None:
    req = fleet_request(20, 100)
    planning.forget()
    first = runtime.run(req, registry.COMPOSERS).SerializeToString(deterministic=True)
    hits = planning.MEMO.placements.hits
    for seed in range(ORDERS):
        again = runtime.run(_listed_anew(req, seed), registry.COMPOSERS)
        assert again.SerializeToString(deterministic=True) == first
    assert planning.MEMO.placements.hits - hits == ORDERS


def test_the_warning_names_the_same_objects_in_any_order() -> None:
    bad = unreadable_replicas(5)
    warnings = []
    for seed in range(ORDERS):
        random.Random(seed).shuffle(bad)
        warnings.append(planning.warnings(planning.read_fleet([], bad, _deployment())))
    assert warnings == [warnings[0]] * ORDERS
    assert "theirs-0" in warnings[0][0]
    assert "theirs-4" not in warnings[0][0]  # named in text order: 0, 1, 2; then counted
