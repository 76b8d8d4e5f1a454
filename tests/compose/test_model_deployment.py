"""ModelDeployment: requirements, placement, composed replicas and endpoints, and reporting."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning
from modelplane.dev import render
from modelplane.domain import api, naming
from modelplane.planning import rolling

from tests.compose.deployments import (
    API,
    GATEWAY,
    NS,
    as_fleet,
    call,
    call_answered,
    desired,
    efa_device,
    events,
    gpu_device,
    inference_cluster,
    member,
    model_cache,
    model_deployment,
    of_kind,
    other_replica,
    status,
)
from tests.requests import conditions

# --- requirements ----------------------------------------------------------------------------


def _requirements(
    rsp: fnv1.RunFunctionResponse,
) -> dict[str, tuple[str, str, str | None, dict[str, str] | None, str | None]]:
    out = {}
    for name, sel in rsp.requirements.resources.items():
        which = sel.WhichOneof("match")
        out[name] = (
            sel.api_version,
            sel.kind,
            sel.match_name if which == "match_name" else None,
            dict(sel.match_labels.labels) if which == "match_labels" else None,
            sel.namespace if sel.HasField("namespace") else None,
        )
    return out


OWN = (API, "ModelReplica", None, {api.DEPLOYMENT_LABEL: "qwen-demo"}, NS)
WHOLE: dict[str, Any] = {
    planning.CLUSTERS: (API, "InferenceCluster", None, {}, None),
    planning.REPLICAS: (API, "ModelReplica", None, {}, None),
}


def _narrow(*clusters: str) -> dict[str, Any]:
    """The narrow view's requirements: its own replicas, each hosting cluster by name and
    the replicas labelled as running on it."""
    out: dict[str, Any] = {planning.OWN: OWN}
    for name in clusters:
        out[planning.cluster_requirement(name)] = (API, "InferenceCluster", name, None, None)
        on = {api.CLUSTER_LABEL: name}
        out[planning.on_cluster_requirement(name)] = (API, "ModelReplica", None, on, None)
    return out


def test_a_first_call_asks_for_its_own_replicas_its_cache_and_the_fleet_to_place() -> None:
    xr = model_deployment(selector={"modelplane.ai/region": "us"}, cache="qwen3-coder")
    rsp = call(xr, answered=False)
    selected = (API, "InferenceCluster", None, {"modelplane.ai/region": "us"}, None)
    # Nothing composed yet, so it will place: the fleet's clusters (with their ledgers)
    # are asked for at once; never every replica of the fleet.
    assert _requirements(rsp) == {
        planning.OWN: OWN,
        planning.CACHE: (API, "ModelCache", "qwen3-coder", None, NS),
        planning.CLUSTERS: selected,
    }
    assert desired(rsp) == {}
    assert conditions(rsp)["ReplicasScheduled"][:2] == ("Unknown", "Scheduling")


def _on(cluster: str) -> dict[str, Any]:
    """The requirement of the replicas on a cluster, by its label."""
    on = {api.CLUSTER_LABEL: cluster}
    return {planning.on_cluster_requirement(cluster): (API, "ModelReplica", None, on, None)}


def _published(cluster: dict[str, Any]) -> dict[str, Any]:
    """A cluster as its function publishes it with nothing on it: an empty ledger."""
    return {**cluster, "status": {**cluster["status"], "ledger": {"replicas": []}}}


@pytest.mark.parametrize(
    ("xr", "clusters"),
    [
        pytest.param(model_deployment(), WHOLE[planning.CLUSTERS], id="every-cluster"),
        pytest.param(
            model_deployment(selector={"modelplane.ai/region": "us"}),
            (API, "InferenceCluster", None, {"modelplane.ai/region": "us"}, None),
            id="selected-clusters",
        ),
    ],
)
def test_a_deployment_that_must_place_reads_the_clusters_then_where_it_places(
    xr: dict[str, Any], clusters: Any
) -> None:
    narrow = call_answered(xr, {planning.OWN: []})
    assert _requirements(narrow) == {planning.OWN: OWN, planning.CLUSTERS: clusters}
    assert desired(narrow) == {}  # held until the fleet is read
    fleet = [_published(inference_cluster("a", labels={"modelplane.ai/region": "us"}))]
    placing = call_answered(xr, {planning.OWN: [], planning.CLUSTERS: fleet})
    # It would place on "a": it reads the replicas there before it answers.
    assert _requirements(placing) == {**_requirements(narrow), **_on("a")}
    assert desired(placing) == {}
    on_a = planning.on_cluster_requirement("a")
    placed = call_answered(xr, {planning.OWN: [], planning.CLUSTERS: fleet, on_a: []})
    assert _requirements(placed) == _requirements(placing)  # the loop settles on it
    assert {r["spec"]["clusterName"] for r in as_fleet(placed)} == {"a"}


def _placed_and_ready() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The getting-started deployment placed on a fleet of two clusters, its replica
    Ready: the deployment, the fleet's replicas, and what it composed (as observed)."""
    xr = model_deployment()
    clusters = [inference_cluster("eks-us-east"), inference_cluster("eks-us-west")]
    first = call(xr, clusters)
    replicas = as_fleet(first, ready=True)
    observed = desired(first)
    for value in observed.values():
        if value["kind"] == "ModelReplica":
            value["status"] = replicas[0]["status"]
    return xr, replicas, observed


def test_a_steady_deployment_asks_only_for_what_is_its_own() -> None:
    xr, replicas, observed = _placed_and_ready()
    clusters = [inference_cluster("eks-us-east"), inference_cluster("eks-us-west")]
    whole = call(xr, clusters, replicas, observed=observed)
    (cluster,) = {r["spec"]["clusterName"] for r in replicas}
    assert _requirements(whole) == _narrow(cluster)
    others = [
        other_replica("other", cluster, "gpu-l4"),
        other_replica("far", "eks-us-west", "gpu-l4"),
    ]
    answered = {
        planning.OWN: replicas,
        planning.cluster_requirement(cluster): [
            c for c in clusters if c["metadata"]["name"] == cluster
        ],
        planning.on_cluster_requirement(cluster): [*replicas, others[0]],
    }
    narrow = call_answered(xr, answered, observed=observed)
    assert _requirements(narrow) == _requirements(whole)
    with_others = call(xr, clusters, [*replicas, *others], observed=observed)
    assert narrow.desired == with_others.desired
    assert list(narrow.conditions) == list(with_others.conditions)
    assert list(narrow.results) == list(with_others.results)


def test_a_first_call_asks_at_once_for_the_clusters_its_replicas_were_observed_on() -> None:
    xr, replicas, observed = _placed_and_ready()
    (cluster,) = {r["spec"]["clusterName"] for r in replicas}
    first = call(xr, answered=False, observed=observed)
    assert _requirements(first) == _narrow(cluster)  # one call fewer without Crossplane's seed
    kept = {k: {f: v for f, v in o.items() if f != "status"} for k, o in observed.items()}
    assert desired(first) == kept


def test_a_deployment_scaled_or_edited_asks_at_once_for_the_fleet() -> None:
    xr, _, observed = _placed_and_ready()
    scaled = {**xr, "spec": {**xr["spec"], "replicas": 2}}
    assert planning.CLUSTERS in _requirements(call(scaled, answered=False, observed=observed))
    edited = copy.deepcopy(xr)
    engine = edited["spec"]["template"]["spec"]["engines"][0]
    engine["members"][0]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm:v0.24.0"
    assert planning.CLUSTERS in _requirements(call(edited, answered=False, observed=observed))
    assert planning.CLUSTERS not in _requirements(call(xr, answered=False, observed=observed))


def test_a_narrow_view_that_must_place_asks_for_the_fleets_clusters_and_holds() -> None:
    xr, replicas, observed = _placed_and_ready()
    (cluster,) = {r["spec"]["clusterName"] for r in replicas}
    (cluster,) = {r["spec"]["clusterName"] for r in replicas}
    answered = {
        planning.OWN: replicas,
        # Its pool is no longer published: the replica must move, which the hints
        # (all composed, all current) could not tell.
        planning.cluster_requirement(cluster): [inference_cluster(cluster, pools=())],
        planning.on_cluster_requirement(cluster): replicas,
    }
    rsp = call_answered(xr, answered, observed=observed)
    assert _requirements(rsp) == {**_narrow(cluster), planning.CLUSTERS: WHOLE[planning.CLUSTERS]}
    kept = {k: {f: v for f, v in o.items() if f != "status"} for k, o in observed.items()}
    assert desired(rsp) == kept  # what runs stays, as it is, until the fleet is read


# --- placement and composed resources --------------------------------------------------------


def test_getting_started_places_one_replica() -> None:
    xr = model_deployment()
    rsp = call(xr, [inference_cluster("eks-us-east")])
    name = naming.replica_name("qwen-demo", "eks-us-east", 0)
    want_member = member()
    want_member["nodePoolName"] = "gpu-l4"
    want_member["deviceRequests"] = [
        {
            "name": "gpu",
            "deviceClassName": "gpu.nvidia.com",
            "count": 1,
            "selectors": want_member.pop("nodeSelector")["devices"][0]["selectors"],
        }
    ]
    assert desired(rsp) == {
        "replica-eks-us-east-0": {
            "apiVersion": API,
            "kind": "ModelReplica",
            "metadata": {
                "name": name,
                "namespace": NS,
                "labels": {
                    api.CLUSTER_LABEL: "eks-us-east",
                    api.DEPLOYMENT_LABEL: "qwen-demo",
                    api.INDEX_LABEL: "0",
                    rolling.HASH_LABEL: rolling.template_hash(xr),
                },
            },
            "spec": {
                "clusterName": "eks-us-east",
                "engines": [{"name": "qwen", "members": [want_member]}],
            },
        }
    }
    assert status(rsp) == {"replicas": {"total": 1, "ready": 0, "updated": 1, "updatedReady": 0}}
    assert conditions(rsp) == {
        "ReplicasScheduled": ("True", "ReplicasCreated", "1 of 1 replica placed"),
        "ReplicasReady": ("False", "ModelStarting", "0 of 1 replica ready"),
        "ModelCacheResolved": ("True", "NoModelCache", "no modelCacheRef"),
        "Progressing": (
            "True",
            "ReplicasUpdating",
            "1 of 1 replica updated, 0 of them Ready, 1 running (maxSurge 1, maxUnavailable 0)",
        ),
    }
    assert rsp.desired.composite.ready == fnv1.READY_FALSE
    assert events(rsp) == []


def test_ready_replica_gets_an_endpoint() -> None:
    clusters = [inference_cluster("eks-us-east")]
    xr = model_deployment(labels={"team": "ml", api.DEPLOYMENT_LABEL: "spoofed"})
    first = call(xr, clusters)
    rsp = call(xr, clusters, as_fleet(first, ready=True))
    name = naming.replica_name("qwen-demo", "eks-us-east", 0)
    labels = {
        api.CLUSTER_LABEL: "eks-us-east",
        api.DEPLOYMENT_LABEL: "qwen-demo",
        api.INDEX_LABEL: "0",
        "team": "ml",
    }
    replica_labels = labels | {rolling.HASH_LABEL: rolling.template_hash(xr)}
    assert of_kind(rsp, "ModelEndpoint") == {
        "endpoint-eks-us-east-0": {
            "apiVersion": API,
            "kind": "ModelEndpoint",
            "metadata": {"name": name, "namespace": NS, "labels": replica_labels},
            "spec": {
                "url": f"http://{GATEWAY}/{NS}/{name}/v1",
                "rewritePath": f"/{NS}/{name}/",
            },
        }
    }
    replica_labels = labels | {rolling.HASH_LABEL: rolling.template_hash(xr)}
    assert (
        of_kind(rsp, "ModelReplica")["replica-eks-us-east-0"]["metadata"]["labels"]
        == replica_labels
    )
    assert of_kind(rsp, "ModelReplica") == of_kind(first, "ModelReplica") | {
        "replica-eks-us-east-0": of_kind(rsp, "ModelReplica")["replica-eks-us-east-0"]
    }
    assert status(rsp) == {"replicas": {"total": 1, "ready": 1, "updated": 1, "updatedReady": 1}}
    assert conditions(rsp)["ReplicasReady"] == ("True", "AllReplicasReady", "1 of 1 replica ready")
    # Ready, but the ModelService does not route to it yet: the rollout is not complete.
    ok, reason, message = conditions(rsp)["Progressing"]
    assert (ok, reason) == ("True", "ReplicasUpdating")
    assert "1 Ready replica not routed to yet (their ModelEndpoint is not Routed)" in message
    # Crossplane's own rule decides: Ready once every composed resource is.
    assert rsp.desired.composite.ready == fnv1.READY_UNSPECIFIED
    endpoint = of_kind(rsp, "ModelEndpoint")["endpoint-eks-us-east-0"]
    endpoint["status"] = {"conditions": [{"type": "Routed", "status": "True"}]}
    observed = {"endpoint-eks-us-east-0": endpoint}
    routed = call(xr, clusters, as_fleet(first, ready=True), observed=observed)
    assert conditions(routed)["Progressing"][:2] == ("True", "RolloutComplete")


def test_readiness_from_observed_composed_replicas() -> None:
    clusters = [inference_cluster("eks-us-east")]
    first = call(model_deployment(), clusters)
    observed = {
        k: {**v, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
        for k, v in desired(first).items()
    }
    rsp = call(model_deployment(), clusters, as_fleet(first), observed=observed)
    assert list(of_kind(rsp, "ModelEndpoint")) == ["endpoint-eks-us-east-0"]


@pytest.mark.parametrize(
    ("reason", "endpoint_kept"),
    [
        pytest.param("ModelStarting", True, id="a-flap-keeps-the-route"),
        pytest.param("ClusterUnreachable", False, id="an-unreachable-cluster-loses-it"),
    ],
)
def test_a_replica_not_ready_keeps_its_place_and_its_endpoint_unless_unreachable(
    reason: str, endpoint_kept: bool
) -> None:
    clusters = [inference_cluster("eks-us-east")]
    first = call(model_deployment(), clusters)
    serving = call(model_deployment(), clusters, as_fleet(first, ready=True))
    not_ready = [
        {"type": "Ready", "status": "False"},
        {"type": "ModelReady", "status": "False", "reason": reason, "message": "x"},
    ]
    replicas = [{**r, "status": {"conditions": not_ready}} for r in as_fleet(serving)]
    observed = {
        k: {**v, "status": {"conditions": not_ready}} if v["kind"] == "ModelReplica" else v
        for k, v in desired(serving).items()
    }
    rsp = call(model_deployment(), clusters, replicas, observed=observed)
    assert of_kind(rsp, "ModelReplica") == of_kind(serving, "ModelReplica"), "it stays put"
    assert bool(of_kind(rsp, "ModelEndpoint")) is endpoint_kept
    name = naming.replica_name("qwen-demo", "eks-us-east", 0)
    assert conditions(rsp)["ReplicasReady"] == (
        ("False", "ModelStarting", "0 of 1 replica ready")
        if endpoint_kept
        else (
            "False",
            "ClusterUnreachable",
            f"0 of 1 replica ready; cluster out of reach: {name} on eks-us-east",
        )
    )


def test_no_endpoint_without_a_gateway_address() -> None:
    clusters = [inference_cluster("eks-us-east", gateway="")]
    fleet = as_fleet(call(model_deployment(), [inference_cluster("eks-us-east")]), ready=True)
    rsp = call(model_deployment(), clusters, fleet)
    assert of_kind(rsp, "ModelEndpoint") == {}
    assert len(of_kind(rsp, "ModelReplica")) == 1, "a degraded cluster keeps its replica"


def test_gang_pins_every_member_and_claims_efa() -> None:
    gang_member = {
        "nodeSelector": {
            "devices": [
                {
                    "name": "gpu",
                    "count": 8,
                    "selectors": [{"cel": 'device.driver == "gpu.nvidia.com"'}],
                },
                {"name": "efa", "count": 16, "selectors": [{"cel": 'device.driver == "dra.net"'}]},
            ]
        }
    }
    engines = [
        {
            "name": "qwen3-coder",
            "members": [
                {**member("Leader", memory=""), **gang_member},
                {**member("Worker", memory="", worker={"nodes": 1}), **gang_member},
            ],
        }
    ]
    xr = model_deployment("qwen3-coder", engines=engines, cache="qwen3-coder")
    h200 = [gpu_device("140Gi", 8), efa_device()]
    rsp = call(
        xr,
        [inference_cluster("eks-coder", [("gpu-h200", 2, h200)])],
        caches=[model_cache("qwen3-coder")],
    )
    (replica,) = of_kind(rsp, "ModelReplica").values()
    members = replica["spec"]["engines"][0]["members"]
    assert [(m["role"], m["nodePoolName"]) for m in members] == [
        ("Leader", "gpu-h200"),
        ("Worker", "gpu-h200"),
    ]
    assert [
        [(d["name"], d["deviceClassName"], d["count"]) for d in m["deviceRequests"]]
        for m in members
    ] == [[("gpu", "gpu.nvidia.com", 8), ("efa", "efa.networking.k8s.aws", 16)]] * 2
    assert members[1]["worker"] == {"nodes": 1}
    assert replica["spec"]["modelCacheRef"] == {"name": "qwen3-coder"}
    assert conditions(rsp)["ModelCacheResolved"] == (
        "True",
        "ModelCacheResolved",
        "ModelCache qwen3-coder found",
    )
    assert events(rsp) == []


def test_gang_without_a_cache_warns() -> None:
    engines = [
        {"name": "big", "members": [member("Leader"), member("Worker", worker={"nodes": 3})]}
    ]
    rsp = call(model_deployment(engines=engines), [inference_cluster("a", [("p", 4, ())])])
    assert events(rsp) == [
        "engine big spans 4 nodes without a ModelCache: every pod downloads the weights itself; "
        "set spec.template.spec.modelCacheRef"
    ]
    assert len(of_kind(rsp, "ModelReplica")) == 1, "a warning, not a rejection"


# --- reporting a shortfall -------------------------------------------------------------------


def test_shortfall_names_each_cluster() -> None:
    xr = model_deployment(
        "qwen-west",
        3,
        engines=[{"name": "qwen", "members": [member(memory="40Gi")]}],
    )
    maintenance = {"key": "modelplane.ai/maintenance", "effect": "NoSchedule"}
    clusters = [
        inference_cluster("eks-us-east"),
        inference_cluster("gke-a", [("gpu", 1, [gpu_device("46068Mi")])], taints=[maintenance]),
        inference_cluster("nebius-1", [("gpu-h100", 2, [gpu_device("81559Mi")])]),
    ]
    rsp = call(xr, clusters, [other_replica("llama", "nebius-1", "gpu-h100")])
    message = (
        "placed 1 of 3 replicas; nebius-1: pool gpu-h100 has 0 of 2 nodes free, needs 1; "
        "eks-us-east: no pool fits engine qwen: gpu needs memory >= 40Gi; "
        "gke-a: taint modelplane.ai/maintenance:NoSchedule not tolerated"
    )
    assert conditions(rsp)["ReplicasScheduled"] == ("False", "InsufficientCapacity", message)
    assert events(rsp) == [message]
    assert status(rsp)["replicas"] == {"total": 1, "ready": 0, "updated": 1, "updatedReady": 0}


def test_shortfall_message_is_capped() -> None:
    clusters = [inference_cluster(f"cluster-{i:04}", [(f"pool-{i}", 0, ())]) for i in range(300)]
    rsp = call(model_deployment(replicas=2), clusters)
    _, reason, message = conditions(rsp)["ReplicasScheduled"]
    assert reason == "InsufficientCapacity"
    assert len(message) <= planning.MESSAGE_LIMIT
    assert message.startswith(
        "placed 0 of 2 replicas; cluster-0000: pool pool-0 has 0 of 0 nodes free"
    )


@pytest.mark.parametrize(
    ("clusters", "message"),
    [
        pytest.param(
            [],
            "placed 0 of 1 replica: no InferenceCluster matches clusterSelector tier=h100",
            id="selector",
        ),
        pytest.param(
            [inference_cluster("a", labels={"tier": "l4"})],
            "placed 0 of 1 replica: no InferenceCluster matches clusterSelector tier=h100",
            id="mismatch",
        ),
    ],
)
def test_no_clusters(clusters: list[dict[str, Any]], message: str) -> None:
    rsp = call(model_deployment(selector={"tier": "h100"}), clusters)
    assert conditions(rsp)["ReplicasScheduled"] == ("False", "NoClusters", message)
    assert conditions(rsp)["ReplicasReady"] == (
        "False",
        "NoReplicasScheduled",
        "0 of 1 replica placed",
    )


# --- nothing running is lost -------------------------------------------------------------------


def test_invalid_selector_keeps_what_runs() -> None:
    clusters = [inference_cluster("eks-us-east", [("gpu-l4", 4, ())])]
    placed = call(model_deployment(), clusters)
    broken = member(memory="20Gi")
    broken["nodeSelector"]["devices"][0]["selectors"] = [{"cel": "device.capacity[ oops"}]
    bad = {"name": "qwen", "members": [broken]}
    rsp = call(model_deployment(replicas=3, engines=[bad]), clusters, as_fleet(placed))
    assert of_kind(rsp, "ModelReplica") == of_kind(placed, "ModelReplica"), "kept exactly as it is"
    status_, reason, message = conditions(rsp)["ReplicasScheduled"]
    assert (status_, reason) == ("False", "InvalidNodeSelector")
    assert message.startswith(
        "engine qwen Standalone device gpu: selector 'device.capacity[ oops' is invalid: "
    )
    assert message.endswith("; keeping 1 placed replica, placing none")
    assert events(rsp) == [message]


@pytest.mark.parametrize(
    ("caches", "answered_reason", "scheduled"),
    [
        pytest.param(
            [],
            ("False", "ModelCacheNotFound", "ModelCache weights not found"),
            "waiting for ModelCache weights (not found); keeping 1 placed replica, placing none",
            id="missing",
        ),
        pytest.param(
            None,
            ("False", "ModelCacheUnresolved", "ModelCache weights not read yet"),
            "waiting for ModelCache weights (not read yet); keeping 1 placed replica, placing none",
            id="not-read-yet",
        ),
    ],
)
def test_unresolved_cache_keeps_what_runs(
    caches: list[dict[str, Any]] | None, answered_reason: tuple[str, str, str], scheduled: str
) -> None:
    clusters = [inference_cluster("a", [("gpu-l4", 4, ())])]
    placed = call(model_deployment(cache="weights"), clusters, caches=[model_cache("weights")])
    rsp = call(
        model_deployment(replicas=2, cache="weights"), clusters, as_fleet(placed), caches=caches
    )
    assert of_kind(rsp, "ModelReplica") == of_kind(placed, "ModelReplica")
    assert conditions(rsp)["ModelCacheResolved"] == answered_reason
    assert conditions(rsp)["ReplicasScheduled"] == ("False", "Scheduling", scheduled)


def test_unread_fleet_keeps_composed_resources() -> None:
    clusters = [inference_cluster("a")]
    placed = call(model_deployment(), clusters)
    observed = {
        k: {**v, "metadata": {**v["metadata"], "uid": "1234"}, "status": {"x": 1}}
        for k, v in desired(placed).items()
    }
    rsp = call(model_deployment(), answered=False, observed=observed)
    assert desired(rsp) == desired(placed)


def test_unreadable_deployment_keeps_composed_resources() -> None:
    clusters = [inference_cluster("a")]
    placed = call(model_deployment(), clusters)
    broken = model_deployment()
    broken["spec"]["template"]["spec"]["engines"] = "not a list"
    rsp = call(broken, clusters, as_fleet(placed), observed=desired(placed))
    assert desired(rsp) == desired(placed)
    assert conditions(rsp)["ReplicasScheduled"][:2] == ("False", "Scheduling")
    assert [r.severity for r in rsp.results] == [fnv1.SEVERITY_WARNING]


# --- drain, scale, the fleet ledger, the cache footprint ------------------------------------------


def test_drain_moves_the_replica_and_says_so() -> None:
    placed = call(
        model_deployment(), [inference_cluster("gpu-us-east"), inference_cluster("gpu-us-west")]
    )
    assert list(of_kind(placed, "ModelReplica")) == ["replica-gpu-us-east-0"]
    evict = {"key": "modelplane.ai/maintenance", "effect": "NoExecute"}
    clusters = [inference_cluster("gpu-us-east", taints=[evict]), inference_cluster("gpu-us-west")]
    rsp = call(model_deployment(), clusters, as_fleet(placed, ready=True))
    assert list(of_kind(rsp, "ModelReplica")) == ["replica-gpu-us-west-0"]
    old = naming.replica_name("qwen-demo", "gpu-us-east", 0)
    assert events(rsp) == [
        f"replica {old} leaves gpu-us-east: taint modelplane.ai/maintenance:NoExecute not tolerated"
    ]


def test_edited_cluster_selector_moves_the_replica_make_before_break() -> None:
    east = inference_cluster("east", labels={"modelplane.ai/region": "us-east"})
    west = inference_cluster("west", labels={"modelplane.ai/region": "us-west"})
    placed = call(model_deployment(selector={"modelplane.ai/region": "us-east"}), [east, west])
    edited = model_deployment(selector={"modelplane.ai/region": "us-west"})
    # Crossplane answers the clusters requirement through the new selector: east is left out.
    # The old replica keeps running until its replacement on west is Ready.
    moving = call(edited, [west], as_fleet(placed, ready=True))
    assert sorted(of_kind(moving, "ModelReplica")) == ["replica-east-0", "replica-west-0"]
    assert (
        of_kind(moving, "ModelReplica")["replica-east-0"]
        == (of_kind(placed, "ModelReplica")["replica-east-0"])
    )
    old = naming.replica_name("qwen-demo", "east", 0)
    scheduled = conditions(moving)["ReplicasScheduled"]
    assert scheduled[:2] == ("False", "Scheduling")
    assert f"keeping {old} on east" in scheduled[2]
    assert events(moving) == [
        f"replica {old} on east must move (its cluster no longer exists or no longer matches "
        "the clusterSelector); it keeps running until a replacement is Ready"
    ]
    done = call(edited, [west], as_fleet(moving, ready=True))
    assert list(of_kind(done, "ModelReplica")) == ["replica-west-0"]
    assert events(done) == [
        f"replica {old} leaves east: its cluster no longer exists or no longer matches "
        "the clusterSelector"
    ]


def test_scale_down_is_a_normal_event() -> None:
    clusters = [
        inference_cluster("a", [("gpu-l4", 4, ())]),
        inference_cluster("b", [("gpu-l4", 4, ())]),
    ]
    placed = call(model_deployment(replicas=3), clusters)
    assert sorted(of_kind(placed, "ModelReplica")) == ["replica-a-0", "replica-a-1", "replica-b-0"]
    rsp = call(model_deployment(replicas=1), clusters, as_fleet(placed))
    assert sorted(of_kind(rsp, "ModelReplica")) == ["replica-a-0"]
    assert events(rsp, fnv1.SEVERITY_NORMAL) == [
        f"replica {naming.replica_name('qwen-demo', 'a', 1)} on a removed: scaled down",
        f"replica {naming.replica_name('qwen-demo', 'b', 0)} on b removed: scaled down",
    ]


def test_other_deployments_in_other_namespaces_charge_the_ledger() -> None:
    clusters = [inference_cluster("a"), inference_cluster("b")]
    rsp = call(model_deployment(), clusters, [other_replica("qwen-demo", "a", "gpu-l4")])
    assert list(of_kind(rsp, "ModelReplica")) == ["replica-b-0"]


def test_cache_footprint_limits_new_replicas() -> None:
    clusters = [inference_cluster("a"), inference_cluster("b", labels={"tier": "frontier"})]
    rsp = call(
        model_deployment(cache="weights"),
        clusters,
        caches=[model_cache("weights", {"tier": "frontier"})],
    )
    assert list(of_kind(rsp, "ModelReplica")) == ["replica-b-0"]


def test_same_request_same_bytes() -> None:
    clusters = [inference_cluster(n, [("gpu-l4", 2, ())]) for n in ("c", "a", "b")]
    xr = model_deployment(replicas=4, labels={"b": "2", "a": "1"})
    one = call(xr, clusters, [other_replica("x", "b", "gpu-l4")])
    two = call(xr, list(reversed(clusters)), [other_replica("x", "b", "gpu-l4")])
    assert one.SerializeToString(deterministic=True) == two.SerializeToString(deterministic=True)


def test_output_fed_back_is_stable() -> None:
    clusters = [inference_cluster(n, [("gpu-l4", 2, ())]) for n in ("a", "b", "c")]
    xr = model_deployment(replicas=5)
    rsp = call(xr, clusters)
    for _ in range(3):
        again = call(xr, clusters, as_fleet(rsp))
        assert of_kind(again, "ModelReplica") == of_kind(rsp, "ModelReplica")
        rsp = again


# --- the docs' fleets, rendered by the real Crossplane CLI ------------------------------------

FLEETS = Path(__file__).resolve().parents[1] / "testdata" / "fleets"


def _documents(path: Path) -> list[dict[str, Any]]:
    files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
    return [d for f in files for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]


@pytest.mark.crank
@pytest.mark.parametrize(
    ("fleet", "want", "event"),
    [
        pytest.param(
            "getting-started", [("eks-us-east", 0, ["gpu-l4"])], None, id="getting-started"
        ),
        pytest.param(
            "scale-the-model", [("eks-us-west", 0, ["gpu-l40s"])], None, id="scale-the-model"
        ),
        pytest.param(
            "qwen3-coder", [("eks-coder", 0, ["gpu-h200", "gpu-h200"])], None, id="qwen3-coder"
        ),
        pytest.param("kimi-k2", [("eks-kimi", 0, ["gpu-h200", "gpu-h200"])], None, id="kimi-k2"),
        pytest.param(
            "drained-cluster",
            [("gpu-us-west", 0, ["gpu-a100"]), ("gpu-us-west", 1, ["gpu-a100"])],
            "leaves gpu-us-east: taint modelplane.ai/maintenance:NoExecute not tolerated",
            id="drained-cluster",
        ),
    ],
)
def test_rendered_by_crank(
    functions: render.Functions,
    fleet: str,
    want: list[tuple[str, int, list[str]]],
    event: str | None,
) -> None:
    documents = _documents(FLEETS / fleet)
    (xr,) = [d for d in documents if d["kind"] == "ModelDeployment"]
    out = render.render(xr, functions, required=[d for d in documents if d is not xr])
    replicas = sorted(
        (d for d in out if d.get("kind") == "ModelReplica"),
        key=lambda d: (d["spec"]["clusterName"], d["metadata"]["labels"][api.INDEX_LABEL]),
    )
    got = [
        (
            r["spec"]["clusterName"],
            int(r["metadata"]["labels"][api.INDEX_LABEL]),
            [m["nodePoolName"] for e in r["spec"]["engines"] for m in e["members"]],
        )
        for r in replicas
    ]
    assert got == want
    name = xr["metadata"]["name"]
    assert [r["metadata"]["name"] for r in replicas] == [
        naming.replica_name(name, c, i) for c, i, _ in want
    ]
    scheduled = next(c for c in out[0]["status"]["conditions"] if c["type"] == "ReplicasScheduled")
    assert (scheduled["status"], scheduled["reason"]) == ("True", "ReplicasCreated")
    results = [d.get("message", "") for d in out if d.get("kind") == "Event"]
    if event is not None:
        assert any(event in message for message in results), results
