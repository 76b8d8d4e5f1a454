"""The ModelDeployment's fleet read: one object it cannot read never breaks a deployment.

Every team's ModelDeployment reads the whole fleet, so an InferenceCluster, a ModelReplica
or a ModelCache with a field of the wrong type must be read around: skipped (another
team's replica), kept without what is unreadable (a cluster keeps what runs on it and
gets nothing new; this deployment's replica is scheduled again), and named with the
field. And label values derived from long names are valid, and selected on as written.
"""

from __future__ import annotations

import copy
import datetime
import re
from collections.abc import Callable
from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning
from modelplane.domain import api, naming
from modelplane.domain.scheduling.fleet import CacheFootprint, Fleet
from modelplane.models.modeldeployment import ModelDeployment

from tests.compose.deployments import (
    NS,
    as_fleet,
    call,
    desired,
    events,
    gpu_device,
    inference_cluster,
    model_cache,
    model_deployment,
    of_kind,
    other_replica,
)

Doc = dict[str, Any]
Mutation = Callable[[Doc], None]

# Python's own words for what went wrong; no message may show them.
PYTHON_TEXT = ("Traceback", "Error", "NoneType", "object has no attribute", "not subscriptable")


def _deployment(xr: Doc | None = None) -> Any:
    xr = xr or model_deployment()
    return planning.read_deployment(ModelDeployment.model_validate(xr), xr)


def _set(path: str, value: Any) -> Mutation:
    """Set a field given as ``a.b[0].c`` (keys holding dots or slashes in ``["..."]``)."""

    def mutate(doc: Doc) -> None:
        parts = _parts(path)
        target: Any = doc
        for part in parts[:-1]:
            target = target[part]
        target[parts[-1]] = value

    return mutate


def _both(*mutations: Mutation) -> Mutation:
    def mutate(doc: Doc) -> None:
        for mutation in mutations:
            mutation(doc)

    return mutate


def _parts(path: str) -> list[str | int]:
    tokens = re.findall(r'\["([^"]*)"\]|\[(\d+)\]|([^.\[]+)', path)
    return [key or (int(index) if index else name) for key, index, name in tokens]


DEPLOYMENT_LABEL_PATH = f'metadata.labels["{api.DEPLOYMENT_LABEL}"]'

# --- another team's ModelReplica ------------------------------------------------------------

BAD_REPLICAS = [
    pytest.param(_set("metadata", "x"), "metadata is a string, not an object", id="metadata"),
    pytest.param(
        _set("metadata.labels", ["a"]), "metadata.labels is a list, not an object", id="labels"
    ),
    pytest.param(
        _set(DEPLOYMENT_LABEL_PATH, 5),
        f'metadata.labels["{api.DEPLOYMENT_LABEL}"] is a number, not a string',
        id="label-not-a-string",
    ),
    pytest.param(_set("spec", []), "spec is a list, not an object", id="spec"),
    pytest.param(_set("spec.clusterName", 7), "spec.clusterName is a number", id="cluster-name"),
    pytest.param(
        _set("spec.engines", "qwen"), "spec.engines is a string, not a list", id="engines"
    ),
    pytest.param(
        _set("spec.engines", ["qwen"]), "spec.engines[0] is a string, not an object", id="engine"
    ),
    pytest.param(
        _set("spec.engines[0].members", {"role": "Standalone"}),
        "spec.engines[0].members is an object, not a list",
        id="members",
    ),
    pytest.param(
        _set("spec.engines[0].copies", "two"),
        "spec.engines[0].copies is a string, not a number",
        id="copies-text",
    ),
    pytest.param(
        _set("spec.engines[0].copies", 1.5),
        "spec.engines[0].copies is 1.5, not a whole number of at least 0",
        id="copies-fraction",
    ),
    pytest.param(
        _both(
            _set("spec.engines[0].members[0].role", "Worker"),
            _set("spec.engines[0].members[0].worker", [3]),
        ),
        "spec.engines[0].members[0].worker is a list, not an object",
        id="worker",
    ),
    pytest.param(
        _both(
            _set("spec.engines[0].members[0].role", "Worker"),
            _set("spec.engines[0].members[0].worker", {"nodes": "3"}),
        ),
        "spec.engines[0].members[0].worker.nodes is a string, not a number",
        id="worker-nodes",
    ),
    pytest.param(
        _set("spec.engines[0].members[0].role", {"Worker": True}),
        "spec.engines[0].members[0].role is an object, not a string",
        id="role",
    ),
    pytest.param(
        _set("spec.engines[0].members[0].nodePoolName", ["gpu-l4"]),
        "spec.engines[0].members[0].nodePoolName is a list, not a string",
        id="pool",
    ),
]


@pytest.mark.parametrize(("mutate", "says"), BAD_REPLICAS)
def test_another_team_s_unreadable_replica_is_skipped_and_named(
    mutate: Mutation, says: str
) -> None:
    bad = other_replica("theirs", "eks-a", "gpu-l4")
    mutate(bad)
    good = other_replica("also-theirs", "eks-a", "gpu-l4")
    state = planning.read_fleet(
        [planning.as_struct(inference_cluster("eks-a", [("gpu-l4", 4, ())]))],
        [planning.as_struct(bad), planning.as_struct(good)],
        _deployment(),
    )
    assert [r.deployment for r in state.fleet.replicas] == ["also-theirs"]
    (skipped,) = state.skipped
    assert says in skipped, skipped
    assert skipped.startswith("ModelReplica "), skipped
    assert skipped.endswith("(skipped; its pools are not charged)"), skipped
    (warning,) = planning.warnings(state)
    assert says in warning


@pytest.mark.parametrize(("mutate", "says"), BAD_REPLICAS)
def test_another_team_s_unreadable_replica_breaks_no_deployment(
    mutate: Mutation, says: str
) -> None:
    """The whole function: no Fatal, the same placement as without the bad replica."""
    del says
    bad = other_replica("theirs", "eks-a", "gpu-l4")
    mutate(bad)
    clusters = [inference_cluster("eks-a", [("gpu-l4", 4, ())])]
    rsp = call(model_deployment(replicas=2), clusters, [bad])
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    without = call(model_deployment(replicas=2), clusters, [])
    assert desired(rsp).keys() == desired(without).keys()
    assert len(of_kind(rsp, "ModelReplica")) == 2
    _no_python_text(rsp)


def test_the_function_warns_naming_the_unreadable_object_and_field() -> None:
    bad = other_replica("theirs", "eks-a", "gpu-l4")
    bad["spec"]["engines"] = "qwen"
    rsp = call(model_deployment(), [inference_cluster("eks-a")], [bad])
    name = bad["metadata"]["name"]
    assert any(
        f"ModelReplica other-team/{name}: spec.engines is a string, not a list" in message
        for message in events(rsp)
    ), events(rsp)


def test_a_replica_index_of_thousands_of_digits_is_no_index() -> None:
    replica = other_replica("theirs", "eks-a", "gpu-l4")
    replica["metadata"]["labels"][api.INDEX_LABEL] = "9" * 5000
    read = planning.read_replica(planning.as_struct(replica))
    assert read is not None
    assert read.index == -1


def test_this_deployment_s_unreadable_replica_is_kept_and_scheduled_again() -> None:
    """A replica of ours with a corrupt spec is composed again from the deployment."""
    xr = model_deployment()
    clusters = [inference_cluster("eks-a", [("gpu-l4", 4, ())])]
    first = call(xr, clusters)
    (ours,) = as_fleet(first, ready=True)
    key = next(iter(of_kind(first, "ModelReplica")))
    ours["spec"]["engines"] = [{"name": "qwen", "members": "corrupt"}]
    state = planning.read_fleet(
        [planning.as_struct(c) for c in clusters], [planning.as_struct(ours)], _deployment(xr)
    )
    (skipped,) = state.skipped
    assert "spec.engines[0].members is a string, not a list" in skipped
    assert skipped.endswith("(its engines are scheduled again)")
    assert list(state.own) == [("eks-a", 0)]
    again = call(xr, clusters, [ours], observed={key: ours})
    assert list(of_kind(again, "ModelReplica")) == [key]
    assert desired(again)[key]["spec"] == desired(first)[key]["spec"]


# --- InferenceClusters ----------------------------------------------------------------------

BAD_CLUSTERS = [
    pytest.param(
        _set("status.gpuPools", {"name": "gpu-l4"}),
        "status.gpuPools is an object, not a list",
        id="pools",
    ),
    pytest.param(
        _set("status.gpuPools[0]", "gpu-l4"),
        "status.gpuPools[0] is a string, not an object",
        id="pool",
    ),
    pytest.param(
        _set("status.gpuPools[0].nodes", "4"),
        "status.gpuPools[0].nodes is a string, not a number",
        id="nodes-text",
    ),
    pytest.param(
        _set("status.gpuPools[0].nodes", -2),
        "status.gpuPools[0].nodes is -2, not a whole number of at least 0",
        id="nodes-negative",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices", "gpu"),
        "status.gpuPools[0].devices is a string, not a list",
        id="devices",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].count", None),
        None,
        id="count-null-reads-as-absent",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].count", [1]),
        "status.gpuPools[0].devices[0].count is a list, not a number",
        id="count",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].capacity.memory.value", "lots"),
        "status.gpuPools[0].devices[0].capacity[\"memory\"].value is 'lots', not a quantity",
        id="capacity",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].capacity", ["memory"]),
        "status.gpuPools[0].devices[0].capacity is a list, not an object",
        id="capacity-list",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].attributes.architecture", {"version": "1.2"}),
        "attributes[\"architecture\"].version is '1.2', not a semantic version",
        id="version",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].attributes.architecture", {"int": "2"}),
        'attributes["architecture"].int is a string, not a whole number',
        id="int-attribute",
    ),
    pytest.param(
        _set("status.gpuPools[0].devices[0].attributes.architecture", "Ada"),
        'attributes["architecture"] is a string, not an object',
        id="attribute",
    ),
    pytest.param(
        _set("metadata.labels", {"region": 5}),
        'metadata.labels["region"] is a number, not a string',
        id="label-not-a-string",
    ),
    pytest.param(_set("spec.taints", "NoSchedule"), "spec.taints is a string", id="taints"),
    pytest.param(
        _set("status.conditions", {"type": "Ready"}),
        "status.conditions is an object, not a list",
        id="conditions",
    ),
    pytest.param(
        _set("status.gateway", "203.0.113.10"),
        "status.gateway is a string, not an object",
        id="gateway",
    ),
    pytest.param(_set("status", []), "status is a list, not an object", id="status"),
]


@pytest.mark.parametrize(("mutate", "says"), BAD_CLUSTERS)
def test_an_unreadable_cluster_keeps_its_replicas_and_gets_nothing_new(
    mutate: Mutation, says: str | None
) -> None:
    bad = inference_cluster("eks-bad", [("gpu-l4", 4, ())])
    mutate(bad)
    state = planning.read_fleet(
        [planning.as_struct(bad), planning.as_struct(inference_cluster("eks-good"))],
        [],
        _deployment(),
    )
    assert sorted(state.clusters) == ["eks-bad", "eks-good"]
    if says is None:
        assert state.skipped == []
        return
    assert state.clusters["eks-bad"].pools is None  # what runs stays, nothing new lands
    (skipped,) = state.skipped
    assert skipped.startswith("InferenceCluster eks-bad: "), skipped
    assert says in skipped, skipped
    assert skipped.endswith("(it keeps what runs on it and gets nothing new)")


@pytest.mark.parametrize(("mutate", "says"), BAD_CLUSTERS)
def test_an_unreadable_cluster_breaks_no_deployment(mutate: Mutation, says: str | None) -> None:
    """Ours on the bad cluster stays as it is; a new one goes to a good cluster."""
    del says
    xr = model_deployment(replicas=1)
    bad = inference_cluster("eks-bad", [("gpu-l4", 4, ())])
    first = call(xr, [bad])
    ours = as_fleet(first, ready=True)
    observed = {k: v for k, v in desired(first).items() if v["kind"] == "ModelReplica"}
    mutate(bad)
    grown = copy.deepcopy(xr)
    grown["spec"]["replicas"] = 2
    rsp = call(grown, [bad, inference_cluster("eks-good")], ours, observed=observed)
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    replicas = of_kind(rsp, "ModelReplica")
    for key, before in observed.items():
        assert replicas[key]["spec"] == before["spec"], f"{key} changed"
    assert sorted(r["spec"]["clusterName"] for r in replicas.values()) == ["eks-bad", "eks-good"]
    _no_python_text(rsp)


def test_a_cluster_without_a_readable_name_is_skipped_and_named() -> None:
    bad = inference_cluster("x")
    bad["metadata"]["name"] = 12
    state = planning.read_fleet([planning.as_struct(bad)], [], _deployment())
    assert state.clusters == {}
    assert state.skipped == [
        "InferenceCluster (unnamed): metadata.name is a number, not a string (skipped)"
    ]


def test_a_cluster_read_strictly_raises_the_first_problem() -> None:
    bad = inference_cluster("x", [("gpu-l4", 1, ())])
    bad["status"]["gpuPools"][0]["nodes"] = "one"
    with pytest.raises(planning.UnreadableError) as raised:
        planning.read_cluster(planning.as_struct(bad))
    assert raised.value.path == "status.gpuPools[0].nodes"
    assert raised.value.problem == "is a string, not a number"


# --- the ModelCache -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "says"),
    [
        pytest.param(
            _set("spec.clusterSelector.matchLabels", {"region": 1}),
            'spec.clusterSelector.matchLabels["region"] is a number, not a string',
            id="selector-value",
        ),
        pytest.param(
            _set("spec.clusterSelector", "us"),
            "spec.clusterSelector is a string, not an object",
            id="selector",
        ),
        pytest.param(
            _set("status", {"clusters": {"eks-a": "Ready"}}),
            "status.clusters is an object, not a list",
            id="clusters",
        ),
        pytest.param(
            _set("status", {"clusters": [{"name": ["eks-a"]}]}),
            "status.clusters[0].name is a list, not a string",
            id="cluster-name",
        ),
    ],
)
def test_an_unreadable_cache_reads_as_unresolved_and_is_named(mutate: Mutation, says: str) -> None:
    cache = model_cache("qwen", {"region": "us"})
    mutate(cache)
    state = planning.read_cache("qwen", True, [planning.as_struct(cache)])
    assert (state.status, state.footprint) == (
        "unknown",
        CacheFootprint("qwen", resolved=False),
    )
    assert state.problem == f"ModelCache {NS}/qwen: {says} (read as not resolved)"
    empty = planning.FleetState(Fleet(), {})
    assert planning.warnings(empty, state) == [f"cannot read 1 fleet object(s): {state.problem}"]


def test_an_unreadable_cache_keeps_what_is_placed() -> None:
    xr = model_deployment(cache="qwen")
    cache = model_cache("qwen")
    clusters = [inference_cluster("eks-a")]
    first = call(xr, clusters, caches=[cache])
    observed = of_kind(first, "ModelReplica")
    assert len(observed) == 1
    cache["spec"]["clusterSelector"] = "everywhere"
    rsp = call(xr, clusters, as_fleet(first, ready=True), caches=[cache], observed=observed)
    assert [r.message for r in rsp.results if r.severity == fnv1.SEVERITY_FATAL] == []
    assert of_kind(rsp, "ModelReplica") == observed
    _no_python_text(rsp)


# --- the Warning ----------------------------------------------------------------------------


def unreadable_replicas(count: int) -> list[Any]:
    """``count`` replicas of other deployments whose ``spec.engines`` is no list."""
    bad = []
    for i in range(count):
        replica = other_replica(f"theirs-{i}", "eks-a", "gpu-l4")
        replica["spec"]["engines"] = "x"
        bad.append(planning.as_struct(replica))
    return bad


def test_the_warning_names_three_and_counts_the_rest() -> None:
    state = planning.read_fleet([], unreadable_replicas(5), _deployment())
    (warning,) = planning.warnings(state)
    assert warning.startswith("cannot read 5 fleet object(s): ModelReplica other-team/theirs-0")
    assert warning.count("spec.engines is a string, not a list") == 3
    assert warning.endswith("; and 2 more")


def test_nothing_unreadable_warns_nothing() -> None:
    state = planning.read_fleet(
        [planning.as_struct(inference_cluster("eks-a"))],
        [planning.as_struct(other_replica("theirs", "eks-a", "gpu-l4"))],
        _deployment(),
    )
    assert state.skipped == []
    assert planning.warnings(state, planning.read_cache(None, True, [])) == []


def test_a_yaml_document_that_is_no_json_still_reads() -> None:
    """``modelplane plan`` reads YAML, where a timestamp is no string."""
    cluster = inference_cluster("eks-a")
    cluster["metadata"]["creationTimestamp"] = datetime.datetime(2025, 1, 1, tzinfo=datetime.UTC)
    read = planning.read_cluster(planning.as_struct(cluster))
    assert read is not None
    assert read.name == "eks-a"


def test_deep_nesting_inside_a_replica_reads() -> None:
    """Fields nobody reads may nest as deep as Kubernetes allows; the reader never descends."""
    struct = planning.as_struct(other_replica("theirs", "eks-a", "gpu-l4"))
    engine = struct.fields["spec"].struct_value.fields["engines"].list_value.values[0]
    member = engine.struct_value.fields["members"].list_value.values[0].struct_value
    deep = member.fields["template"].struct_value
    for _ in range(5_000):
        deep = deep.fields["a"].struct_value
    read = planning.read_replica(struct)
    assert read is not None
    assert [(e.pool, e.nodes) for e in read.engines] == [("gpu-l4", 1)]


# --- label values derived from names --------------------------------------------------------

LONG = "qwen3-coder-480b-a35b-instruct-fp8-" + "x" * 100  # 134 characters, a valid name


def test_a_long_deployment_name_gives_valid_labels_and_its_replicas_stay_its_own() -> None:
    xr = model_deployment(LONG, replicas=2)
    clusters = [inference_cluster("eks-" + "c" * 80, [("gpu-l4", 4, ())])]
    first = call(xr, clusters)
    replicas = of_kind(first, "ModelReplica")
    assert len(replicas) == 2
    for replica in replicas.values():
        values = replica["metadata"]["labels"]
        assert values[api.DEPLOYMENT_LABEL] == naming.label_value(LONG)
        assert values[api.CLUSTER_LABEL] == naming.label_value(clusters[0]["metadata"]["name"])
        assert all(len(v) <= 63 for v in values.values())
    # Fed back as the fleet, they are recognised as the deployment's own: kept as they are.
    again = call(xr, clusters, as_fleet(first, ready=True), observed=replicas)
    assert of_kind(again, "ModelReplica") == replicas
    state = planning.read_fleet(
        [planning.as_struct(c) for c in clusters],
        [planning.as_struct(r) for r in as_fleet(first)],
        _deployment(xr),
    )
    assert sorted(state.own) == [
        (clusters[0]["metadata"]["name"], 0),
        (clusters[0]["metadata"]["name"], 1),
    ]


def _no_python_text(rsp: fnv1.RunFunctionResponse) -> None:
    texts = [r.message for r in rsp.results] + [c.message for c in rsp.conditions]
    for text in texts:
        shown = [t for t in PYTHON_TEXT if t in text]
        assert not shown, f"{text!r} shows {shown}"


def test_gpu_device_builder_is_the_one_the_fleet_publishes() -> None:
    """The mutations above edit the device the default cluster publishes."""
    assert inference_cluster("x")["status"]["gpuPools"][0]["devices"] == [gpu_device()]
