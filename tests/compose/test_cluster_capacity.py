"""InferenceCluster observes its workload cluster's Nodes and ResourceSlices.

What provider-kubernetes shows is written here as it shows it: the collections' conditions
and, for each member Object, ``status.atProvider.manifest``.
"""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import kit, planning, registry, runtime
from modelplane.compose import cluster_capacity
from modelplane.dev import schemas
from modelplane.domain.scheduling.fleet import ObservedCapacity

from tests.compose.deployments import inference_cluster
from tests.compose.test_inference_cluster import CLASS, _cluster
from tests.domain.test_observed_capacity import node as any_node
from tests.domain.test_observed_capacity import slice_
from tests.requests import conditions, request


def node(name: str, pool: str | None = "gpu-l4", **kw: Any) -> dict[str, Any]:
    return any_node(name, pool, **kw)


TRUE = [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "True"}]


def collection(
    conds: list[dict[str, str]] | None = None,
    name: str = "eks-us-east-nodes",
    labelled: bool = True,
) -> dict[str, Any]:
    """A collection as provider-kubernetes v1.3.1 writes it after a successful list and sync:
    both conditions and the membership label, in one status update."""
    status: dict[str, Any] = {"conditions": conds or TRUE}
    if labelled:
        status["membershipLabel"] = {"kubernetes.crossplane.io/owned-by-collection": name}
    return {
        "apiVersion": "x",
        "kind": "ObservedObjectCollection",
        "metadata": {"name": name},
        "status": status,
    }


def observed_collections(**kw: Any) -> dict[str, Any]:
    return {
        "observe-nodes": collection(name="eks-us-east-nodes", **kw),
        "observe-resource-slices": collection(name="eks-us-east-resource-slices", **kw),
    }


def member(manifest: dict[str, Any] | None, synced: dict[str, str] | None = None) -> Any:
    name = (manifest or {}).get("metadata", {}).get("name", "pending")
    status: dict[str, Any] = {"conditions": [synced or {"type": "Synced", "status": "True"}]}
    if manifest is not None:
        status["atProvider"] = {"manifest": manifest}
    return {
        "apiVersion": "kubernetes.m.crossplane.io/v1alpha1",
        "kind": "Object",
        "metadata": {"name": f"eks-us-east-nodes-{name}"},
        "status": status,
    }


def run(
    nodes: list[Any],
    slices: list[Any],
    observed: dict[str, Any] | None = None,
    published: dict[str, Any] | None = None,
) -> fnv1.RunFunctionResponse:
    """Run the function; ``published`` is the pool's observed entry its status holds."""
    xr = _cluster("Existing")
    xr["spec"]["nodePools"][0]["nodeCount"] = 3
    if published is not None:
        xr["status"] = {"gpuPools": [{"name": "gpu-l4", "nodes": 3, "observed": published}]}
    required = {
        "classes": [CLASS],
        "replicas": [],
        "caches": [],
        "observe-nodes": nodes,
        "observe-resource-slices": slices,
    }
    seen = observed_collections()
    if observed is not None:
        seen = observed
    return runtime.run(request(xr, observed=seen, required=required), registry.COMPOSERS)


def pools(rsp: fnv1.RunFunctionResponse) -> list[dict[str, Any]]:
    status = kit.struct_to_dict(rsp.desired.composite.resource).get("status", {})
    return list(status["gpuPools"])


def test_collections_observe_pool_nodes_and_slices_through_the_clusters_provider_config() -> None:
    rsp = run([], [])
    nodes = kit.struct_to_dict(rsp.desired.resources["observe-nodes"].resource)
    assert nodes["apiVersion"] == "kubernetes.m.crossplane.io/v1alpha1"
    assert nodes["kind"] == "ObservedObjectCollection"
    assert nodes["metadata"] == {"name": "eks-us-east-nodes", "namespace": "modelplane-system"}
    assert nodes["spec"]["providerConfigRef"] == {
        "kind": "ClusterProviderConfig",
        "name": "eks-us-east",
    }
    assert nodes["spec"]["observeObjects"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "selector": {"matchExpressions": [{"key": "modelplane.ai/pool", "operator": "Exists"}]},
    }
    slices = kit.struct_to_dict(rsp.desired.resources["observe-resource-slices"].resource)
    assert slices["spec"]["observeObjects"]["kind"] == "ResourceSlice"
    # Observation informs the scheduler; it never holds the cluster's readiness back.
    assert rsp.desired.resources["observe-nodes"].ready == fnv1.READY_TRUE
    wanted = rsp.requirements.resources["observe-nodes"]
    assert dict(wanted.match_labels.labels) == {
        "kubernetes.crossplane.io/owned-by-collection": "eks-us-east-nodes"
    }
    assert wanted.namespace == "modelplane-system"


def test_a_long_cluster_name_gives_a_collection_name_the_crd_accepts() -> None:
    name = cluster_capacity.collection_name("c" * 200, "observe-resource-slices")
    assert len(name) <= 63
    assert name == cluster_capacity.collection_name("c" * 200, "observe-resource-slices")
    assert name != cluster_capacity.collection_name("c" * 201, "observe-resource-slices")


def test_observed_pool_publishes_usable_nodes_devices_and_what_is_left_out() -> None:
    nodes = [member(node("n1")), member(node("n2", cordoned=True)), member(node("sys", pool=None))]
    slices = [member(slice_("n1", 1)), member(slice_("n2", 1))]
    rsp = run(nodes, slices)
    (pool,) = pools(rsp)
    assert pool["nodes"] == 3  # declared stays as declared
    assert pool["observed"] == {
        "nodes": 1,
        "devices": [{"driver": "gpu.nvidia.com", "count": 1}],
        "nodeDevices": [{"nodes": 1, "devices": [{"driver": "gpu.nvidia.com", "count": 1}]}],
        "unavailable": [{"name": "n2", "reason": "Cordoned"}],
    }
    assert conditions(rsp)["CapacityObserved"] == (
        "True",
        "Observed",
        "gpu-l4: 1 usable node (n2 Cordoned)",
    )


def test_pool_label_mismatch_means_no_usable_node() -> None:
    rsp = run([member(node("n1", pool="other"))], [member(slice_("n1", 1))])
    assert pools(rsp)[0]["observed"] == {"nodes": 0, "devices": [], "nodeDevices": []}


def test_a_member_whose_node_is_gone_is_left_out() -> None:
    gone = {
        "type": "Synced",
        "status": "False",
        "reason": "ReconcileError",
        "message": "observe failed: external resource does not exist",
    }
    rsp = run([member(node("n1")), member(node("n2"), synced=gone)], [])
    assert pools(rsp)[0]["observed"]["nodes"] == 1


def test_declared_capacity_stands_until_everything_is_observed() -> None:
    cases = {
        "no collection yet": ({}, [member(node("n1"))], "the Nodes are not observed yet"),
        "collection failing": (
            {
                "observe-nodes": collection(
                    [{"type": "Synced", "status": "False", "message": "cannot reach the cluster"}]
                ),
                "observe-resource-slices": collection(name="eks-us-east-resource-slices"),
            },
            [member(node("n1"))],
            "observing the Nodes failed: cannot reach the cluster",
        ),
        # Ready stays True when a later list fails (only Synced goes False): Synced counts.
        "Ready but not Synced": (
            observed_collections(
                conds=[
                    {"type": "Synced", "status": "False", "message": "list nodes: forbidden"},
                    {"type": "Ready", "status": "True"},
                ]
            ),
            [member(node("n1"))],
            "observing the Nodes failed: list nodes: forbidden",
        ),
        # The provider writes the membership label with its first successful sync.
        "Ready without a membership label": (
            observed_collections(labelled=False),
            [member(node("n1"))],
            "the Nodes are not observed yet (the collection names no membership label)",
        ),
        # No member: the provider may have listed nothing, or the members are not read
        # yet; either way the pools are not zeroed on it.
        "no Node member": (None, [], cluster_capacity.EMPTY_NODES),
        "a member not read yet": (
            None,
            [member(node("n1")), member(None)],
            "1 of 2 observed Nodes not read yet",
        ),
    }
    for what, (observed, nodes, why) in cases.items():
        rsp = run(nodes, [], observed)
        assert "observed" not in pools(rsp)[0], what
        assert conditions(rsp)["CapacityObserved"] == (
            "False",
            "Declared",
            f"capacity is declared, not observed: {why}",
        ), what


def test_an_observation_lost_drops_the_observed_entry_published_before() -> None:
    xr_status = {"gpuPools": [{"name": "gpu-l4", "nodes": 3, "observed": {"nodes": 1}}]}
    entries = cluster_capacity.publish(
        xr_status["gpuPools"], cluster_capacity.Observation(None, "x")
    )
    assert entries == [{"name": "gpu-l4", "nodes": 3}]


@pytest.mark.crank
@pytest.mark.skipif(not schemas.available(), reason="schemas not fetched: tools/schemas/fetch.sh")
def test_the_collections_validate_against_provider_kubernetes_crd() -> None:
    rsp = run([], [])
    docs = [kit.struct_to_dict(rsp.desired.resources[k].resource) for k in cluster_capacity.KEYS]
    report = schemas.validate(docs)
    assert report.ok, "\n".join(report.failures + report.missing) or report.output


def test_the_scheduler_reads_the_observed_nodes_and_charges_the_smaller() -> None:
    cluster = inference_cluster("eks-a")
    cluster["status"]["gpuPools"][0]["nodes"] = 3
    plain = planning.read_cluster(planning.as_struct(cluster))
    assert plain is not None
    assert plain.pools is not None
    assert plain.pools[0].observed is None  # not observed: the declared size stands
    assert plain.pools[0].usable_nodes == 3
    cluster["status"]["gpuPools"][0]["observed"] = {"nodes": 1, "devices": []}
    seen = planning.read_cluster(planning.as_struct(cluster))
    assert seen is not None
    assert seen.pools is not None
    assert seen.pools[0].observed == ObservedCapacity(1)
    assert seen.pools[0].usable_nodes == 1


def test_an_unreadable_observed_count_is_named() -> None:
    cluster = inference_cluster("eks-a")
    cluster["status"]["gpuPools"][0]["observed"] = {"nodes": -1}
    with pytest.raises(planning.UnreadableError, match=r"gpuPools\[0\]\.observed\.nodes"):
        planning.read_cluster(planning.as_struct(cluster))


def test_no_resource_slice_observed_leaves_the_devices_unknown_but_counts_the_nodes() -> None:
    rsp = run([member(node("n1")), member(node("n2", cordoned=True))], [])
    assert pools(rsp)[0]["observed"] == {
        "nodes": 1,
        "unavailable": [{"name": "n2", "reason": "Cordoned"}],
    }
    assert conditions(rsp)["CapacityObserved"][0] == "True"


def test_a_node_without_a_slice_publishes_no_device_once_slices_are_observed() -> None:
    rsp = run([member(node("n1")), member(node("n2"))], [member(slice_("n1", 1))])
    assert pools(rsp)[0]["observed"]["nodeDevices"] == [
        {"nodes": 1, "devices": []},  # ties by what the nodes publish
        {"nodes": 1, "devices": [{"driver": "gpu.nvidia.com", "count": 1}]},
    ]


def test_the_scheduler_reads_the_observed_node_devices_and_counts_full_nodes_only() -> None:
    cluster = inference_cluster("eks-a")
    pool = cluster["status"]["gpuPools"][0]
    pool["nodes"] = 3
    driver = pool["devices"][0]["driver"]
    declared = pool["devices"][0]["count"]
    pool["observed"] = {
        "nodes": 3,
        "devices": [{"driver": driver, "count": 2 * declared}],
        "nodeDevices": [
            {"nodes": 2, "devices": [{"driver": driver, "count": declared}]},
            {"nodes": 1, "devices": []},
        ],
    }
    seen = planning.read_cluster(planning.as_struct(cluster))
    assert seen is not None
    assert seen.pools is not None
    assert seen.pools[0].observed == ObservedCapacity(3, ((((driver, declared),), 2), ((), 1)))
    assert seen.pools[0].usable_nodes == 2  # the node that publishes nothing holds no pod


def test_an_unreadable_node_devices_entry_is_named() -> None:
    cluster = inference_cluster("eks-a")
    cluster["status"]["gpuPools"][0]["observed"] = {
        "nodes": 1,
        "nodeDevices": [{"nodes": 1, "devices": [{"driver": "d", "count": "two"}]}],
    }
    with pytest.raises(
        planning.UnreadableError,
        match=r"gpuPools\[0\]\.observed\.nodeDevices\[0\]\.devices\[0\]\.count",
    ):
        planning.read_cluster(planning.as_struct(cluster))


def test_an_empty_node_collection_after_an_observation_zeroes_the_pools() -> None:
    # Observed before with two nodes: the read held their members, and loses them only
    # once the provider deletes them, which it does when its list no longer matches.
    rsp = run([], [], published={"nodes": 2, "devices": []})
    assert pools(rsp)[0]["observed"] == {"nodes": 0, "devices": [], "nodeDevices": []}
    assert conditions(rsp)["CapacityObserved"] == ("True", "Observed", "gpu-l4: 0 usable nodes")
    # Never observed before: the same read is "not observed yet".
    first = run([], [])
    assert "observed" not in pools(first)[0]
    assert conditions(first)["CapacityObserved"][1] == "Declared"
