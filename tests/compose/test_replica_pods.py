"""ModelReplica: its engine pods observed, and Unschedulable from kube-scheduler's word."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane.compose import replica_pods

from tests.compose.test_model_replica import KEYS, cache, cluster, desired, object_state, run, xr
from tests.requests import conditions

SCHEDULER = "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes"


def pod(name: str, *, scheduled: str = "False", reason: str = "Unschedulable",
        phase: str = "Pending") -> dict[str, Any]:  # fmt: skip
    """An engine pod as provider-kubernetes observes it, wrapped in its member Object."""
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml-team"},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": "PodScheduled", "status": scheduled, "reason": reason,
                 "message": SCHEDULER if scheduled == "False" else ""},
            ],
        },
    }  # fmt: skip
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": f"llm-abcde-pods-{name}", "namespace": "ml-team"},
        "status": {"atProvider": {"manifest": manifest}},
    }


def starting() -> dict[str, dict[str, Any]]:
    """Every Object applied, the engine workload not available."""
    return {k: object_state(ready="False" if k == "engine-llm-workload" else "True") for k in KEYS}


def test_it_observes_its_engine_pods_through_the_clusters_provider_config() -> None:
    rsp = run(xr())
    found = desired(rsp)[replica_pods.KEY]
    assert found["kind"] == "ObservedObjectCollection"
    assert found["metadata"] == {"name": "llm-abcde-pods", "namespace": "ml-team"}
    assert found["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "eks-kubernetes",
    }
    watched = found["spec"]["observeObjects"]
    assert (watched["apiVersion"], watched["kind"], watched["namespace"]) == (
        "v1",
        "Pod",
        "ml-team",
    )
    # Engine pods only: the endpoint picker's pod carries the replica label, not the engine one.
    assert watched["selector"] == {
        "matchLabels": {"modelplane.ai/replica": "llm-abcde"},
        "matchExpressions": [{"key": "modelplane.ai/engine", "operator": "Exists"}],
    }
    assert rsp.desired.resources[replica_pods.KEY].ready == fnv1.READY_TRUE  # never gates
    wanted = rsp.requirements.resources[replica_pods.KEY]
    assert (wanted.kind, wanted.namespace) == ("Object", "ml-team")
    assert dict(wanted.match_labels.labels) == {
        "kubernetes.crossplane.io/owned-by-collection": "llm-abcde-pods"
    }


def test_a_pod_the_scheduler_cannot_place_makes_it_unschedulable_with_its_message() -> None:
    required = {"cluster": [cluster()], replica_pods.KEY: [pod("llm-abcde-llm-x1")]}
    rsp = run(xr(), required=required, observed=starting())
    status, reason, message = conditions(rsp)["ModelReady"]
    assert (status, reason) == ("False", "Unschedulable")
    assert message == f"an engine pod cannot be scheduled on eks: {SCHEDULER}"
    assert rsp.desired.composite.ready == fnv1.READY_FALSE


@pytest.mark.parametrize(
    "pods",
    [
        pytest.param([], id="no-pods-observed"),
        pytest.param([pod("a", scheduled="True", reason="", phase="Running")], id="running"),
        pytest.param([pod("a", reason="SchedulerError")], id="other-reason"),
        pytest.param([pod("a", phase="Running")], id="placed-since"),
    ],
)
def test_without_an_unschedulable_pod_it_is_only_starting(pods: list[dict[str, Any]]) -> None:
    required = {"cluster": [cluster()], replica_pods.KEY: pods}
    rsp = run(xr(), required=required, observed=starting())
    assert conditions(rsp)["ModelReady"][:2] == ("False", "ModelStarting")


def test_a_serving_replica_is_ready_whatever_a_surplus_pod_says() -> None:
    required = {"cluster": [cluster()], replica_pods.KEY: [pod("surge")]}
    rsp = run(xr(), required=required, observed={k: object_state() for k in KEYS})
    assert conditions(rsp)["ModelReady"][:2] == ("True", "Available")


def test_a_cache_not_ready_yet_says_so_rather_than_unschedulable() -> None:
    # Pods wait for the weights' claim (unbound claims are unschedulable too), not for room.
    required = {
        "cluster": [cluster()],
        "model-cache": [cache("Pending")],
        replica_pods.KEY: [pod("a")],
    }
    rsp = run(xr(cache="weights"), required=required, observed=starting())
    assert conditions(rsp)["ModelReady"][:2] == ("False", "ModelCacheNotReady")
