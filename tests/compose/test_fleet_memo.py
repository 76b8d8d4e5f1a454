"""What the ModelDeployment function remembers across calls never changes its answer.

The fleet reader remembers each object by its uid and resourceVersion (by content when
it has none), reads a well-formed replica by a fast path that must agree with the
careful reader, and keeps each deployment's last placement while its inputs are equal.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any, cast

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning
from modelplane.domain import api
from modelplane.domain.scheduling import memo as memo_module
from modelplane.domain.scheduling.fleet import (
    Deployment,
    ExistingReplica,
    Fleet,
    FleetCluster,
    PinnedEngine,
)
from modelplane.domain.scheduling.memo import PlacementMemo
from modelplane.domain.scheduling.placement import Placement
from modelplane.planning import clusters as cluster_reader
from modelplane.planning import fields as fleet_fields
from modelplane.planning import fleet as fleet_reader
from modelplane.planning import lazy
from modelplane.planning import memo as fleet_memo
from modelplane.planning import replicas as replica_reader

from tests.compose.deployments import (
    as_fleet,
    call,
    inference_cluster,
    model_deployment,
    other_replica,
)
from tests.compose.test_fleet_read import BAD_CLUSTERS, BAD_REPLICAS, Mutation, _set

Doc = dict[str, Any]


def _replica(*mutations: Mutation) -> Doc:
    doc = other_replica("llama", "c1", "gpu-l4")
    for mutate in mutations:
        mutate(doc)
    return doc


# Replicas as the API server writes them, and with nulls (which read as absent) and every
# wrong type (which the reader names).
REPLICAS = [
    pytest.param(_replica(), id="standalone"),
    pytest.param(
        _replica(
            _set("spec.engines[0].members[0].role", "Worker"),
            _set("spec.engines[0].members[0].worker", {"nodes": 3}),
            _set("spec.engines[0].copies", 2),
        ),
        id="gang-copies",
    ),
    pytest.param(_replica(_set("spec.engines[0].members[0].deviceRequests", [])), id="no-devices"),
    pytest.param(_replica(_set("spec.engines", [])), id="no-engines"),
    pytest.param(_replica(_set("spec", {"clusterName": "c2"})), id="engines-absent"),
    pytest.param(_replica(_set("spec.clusterName", "")), id="cluster-from-label"),
    pytest.param(
        _replica(_set(f'metadata.labels["{api.INDEX_LABEL}"]', "x1")), id="index-not-a-number"
    ),
    pytest.param({"kind": "ModelReplica"}, id="nothing"),
    pytest.param(_replica(_set("spec.engines", None)), id="engines-null"),
    pytest.param(_replica(_set("metadata.namespace", None)), id="namespace-null"),
    pytest.param(
        _replica(_set("spec.engines[0].members[0].deviceRequests", None)), id="requests-null"
    ),
    *(pytest.param(_replica(cast("Mutation", p.values[0])), id=p.id) for p in BAD_REPLICAS),
    # What admission orders by (creation, Ready, stuck): every path reads it alike.
    pytest.param(
        _replica(
            _set("metadata.creationTimestamp", "2026-01-02T03:04:05Z"),
            _set("status", {"conditions": [{"type": "Ready", "status": "True"}]}),
        ),
        id="created-ready",
    ),
    pytest.param(
        _replica(
            _set(
                "status",
                {
                    "conditions": [
                        {"type": "Ready", "status": "False", "reason": "Creating"},
                        {
                            "type": "ModelReady",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/2 nodes are available",
                            "lastTransitionTime": "2026-01-02T03:04:05Z",
                        },
                    ]
                },
            )
        ),
        id="unschedulable",
    ),
]


def _outcome(read: Any, obj: Any) -> Any:
    """What a reader makes of an object (nothing remembered): its value, or its problem."""
    planning.forget()
    try:
        return read(obj)
    except planning.UnreadableError as exc:
        return str(exc)


def _encoding_of(doc: Doc) -> Any:
    return lazy.Struct.FromString(planning.as_struct(doc).SerializeToString())


@pytest.mark.parametrize("doc", REPLICAS)
def test_a_replica_reads_the_same_encoded_as_decoded(doc: Doc) -> None:
    decoded = _outcome(planning.read_replica, planning.as_struct(doc))
    assert _outcome(planning.read_replica, _encoding_of(doc)) == decoded


@pytest.mark.parametrize("doc", REPLICAS)
def test_the_short_paths_read_a_replica_as_the_careful_reader_does(doc: Doc) -> None:
    """Each short path either declines a replica or reads it as the careful reader."""
    careful = _outcome(lambda d: replica_reader._careful_replica(d.fields), planning.as_struct(doc))
    encoded = planning.as_struct(doc).SerializeToString()
    for decode in (lazy.Tree.FromString, lazy.Object.FromString):
        plain = _outcome(lambda d: replica_reader._plain_replica(d.fields), decode(encoded))
        assert plain is fleet_fields._MISSING or plain == careful
    if not isinstance(careful, str):  # with what admission orders by, read apart
        careful = replica_reader._with_admission(careful, planning.as_struct(doc).fields)
    planning.forget()
    shared = replica_reader._shared_replica(encoded)
    assert shared is fleet_fields._MISSING or shared == careful
    planning.forget()
    read = replica_reader._replica_or_skipped(encoded)
    if isinstance(careful, str):  # what the careful reader cannot read is skipped, named
        assert isinstance(read, planning.Skipped)
        assert read.problem == careful
    else:
        assert read == careful


def test_replicas_with_the_same_engines_read_the_same_engines() -> None:
    planning.forget()
    one, two = _replica(), _replica(_set("metadata.name", "llama-c1-1"))
    first = planning.read_fleet(
        [], [planning.as_struct(one), planning.as_struct(two)]
    ).fleet.replicas
    assert first[0].engines == first[1].engines
    assert first[0].name != first[1].name


def _cluster(*mutations: Mutation, **kwargs: Any) -> Doc:
    doc = inference_cluster("c1", **kwargs)
    for mutate in mutations:
        mutate(doc)
    return doc


CLUSTERS = [
    pytest.param(_cluster(), id="plain"),
    pytest.param(
        _cluster(
            labels={"tier": "gpu", "region": "eu"},
            taints=[
                {"key": "a", "effect": "NoSchedule", "value": "x"},
                {"key": "b", "effect": "PreferNoSchedule"},
                {"key": "c", "effect": "NoExecute"},
            ],
        ),
        id="labels-taints",
    ),
    pytest.param(_cluster(ready=False, gateway=""), id="not-ready-no-gateway"),
    pytest.param(
        _cluster(
            _set("status.conditions", [{"type": "Synced", "status": "True"}, {"type": "Ready"}])
        ),
        id="ready-without-status",
    ),
    pytest.param(_cluster(_set("status", {})), id="no-status"),
    pytest.param(_cluster(_set("status.gpuPools", [])), id="no-pools"),
    pytest.param(_cluster(_set("status.gpuPools[0].name", "")), id="pool-without-name"),
    pytest.param(_cluster(_set("status.gpuPools[0].devices", None)), id="devices-null"),
    pytest.param(_cluster(_set("metadata.name", "")), id="no-name"),
    pytest.param(_cluster(pools=[("a", 2, ()), ("b", 0, ())]), id="two-pools"),
    pytest.param(_cluster(_set("status.gpuPools[0].observed", {"nodes": 1})), id="observed"),
    pytest.param(_cluster(_set("status.gpuPools[0].observed", {"nodes": "x"})), id="observed-bad"),
    *(pytest.param(_cluster(cast("Mutation", p.values[0])), id=p.id) for p in BAD_CLUSTERS),
]


@pytest.mark.parametrize("doc", CLUSTERS)
def test_a_cluster_reads_the_same_encoded_as_decoded(doc: Doc) -> None:
    decoded = _outcome(planning.read_cluster, planning.as_struct(doc))
    assert _outcome(planning.read_cluster, _encoding_of(doc)) == decoded


@pytest.mark.parametrize("doc", CLUSTERS)
def test_the_short_path_reads_a_cluster_as_the_careful_reader_does(doc: Doc) -> None:
    careful = _outcome(lambda d: cluster_reader._careful_cluster(d.fields), planning.as_struct(doc))
    tree = lazy.Tree.FromString(planning.as_struct(doc).SerializeToString())
    plain = _outcome(lambda d: cluster_reader._plain_cluster(d.fields), tree)
    assert plain is fleet_fields._MISSING or (plain, []) == careful


def test_a_null_reads_as_absent() -> None:
    planning.forget()
    read = planning.read_fleet([], [planning.as_struct(_replica(_set("spec.engines", None)))])
    assert read.fleet.replicas[0].engines == ()
    assert not read.skipped


def _identified(doc: Doc, uid: str, version: str) -> Any:
    doc = copy.deepcopy(doc)
    doc["metadata"] |= {"uid": uid, "resourceVersion": version}
    return planning.as_struct(doc)


def test_an_object_is_read_once_per_uid_and_resource_version() -> None:
    planning.forget()
    first = planning.read_fleet([], [_identified(_replica(), "u1", "5")]).fleet.replicas[0]
    again = planning.read_fleet([], [_identified(_replica(), "u1", "5")]).fleet.replicas[0]
    assert again is first
    moved = _replica(_set("spec.engines[0].members[0].nodePoolName", "gpu-h100"))
    edited = planning.read_fleet([], [_identified(moved, "u1", "6")]).fleet.replicas[0]
    assert [(e.name, e.pool, e.nodes) for e in edited.engines] == [("e", "gpu-h100", 1)]


def test_an_object_without_uid_or_resource_version_is_read_once_per_content() -> None:
    planning.forget()
    doc = _replica()
    first = planning.read_fleet([], [planning.as_struct(doc)]).fleet.replicas[0]
    assert planning.read_fleet([], [planning.as_struct(doc)]).fleet.replicas[0] is first
    half = copy.deepcopy(doc)
    half["metadata"]["uid"] = "u1"  # a uid alone names no content
    assert planning.read_fleet([], [planning.as_struct(half)]).fleet.replicas[0] == first
    moved = _replica(_set("spec.engines[0].members[0].nodePoolName", "gpu-h100"))
    changed = planning.read_fleet([], [planning.as_struct(moved)]).fleet.replicas[0]
    assert changed.engines[0].pool == "gpu-h100"


def _counting_memo() -> tuple[Any, list[str]]:
    reads: list[str] = []

    def read(message: str) -> str:
        reads.append(message)
        return message.upper()

    return fleet_memo.Memo(read, key=lambda m: m), reads


def test_the_memo_remembers_a_fleet_larger_than_its_least_size() -> None:
    memo, reads = _counting_memo()
    memo.limit = 4
    names = [f"r{i}" for i in range(10)]
    memo.expect(len(names))
    for _ in range(3):
        assert [memo(n) for n in names] == [n.upper() for n in names]
    assert reads == names  # read once, on the first call


def test_the_memo_forgets_what_the_fleet_no_longer_holds() -> None:
    memo, reads = _counting_memo()
    memo.limit = 10
    for i in range(1000):
        memo(f"version-{i}")
        assert len(memo) <= 2 * memo.limit
    memo("version-999")
    assert len(reads) == 1000  # the latest is still remembered


def test_an_object_s_new_version_forgets_its_earlier_one() -> None:
    """Named (``object`` before ``@``), a memo holds each object's latest version read, not
    every version until its generation fills; a version read again stays remembered."""
    superseded: list[str] = []
    memo = fleet_memo.Memo(str.upper, key=lambda m: m, name=lambda read: read.split("@")[0])
    memo.on_supersede(lambda: superseded.append("listings"))
    for version in ("a@1", "b@1", "a@1", "a@2", "b@1"):
        memo(version)
    assert (len(memo), memo.misses, superseded) == (2, 3, ["listings"])
    unnamed = fleet_memo.Memo(str.upper, key=lambda m: m)
    for version in ("a@1", "a@2"):
        unnamed(version)
    assert len(unnamed) == 2


def test_a_replica_updated_is_held_once_and_the_listings_go() -> None:
    plain = [other_replica("llama", f"c{i}", "gpu-l4") for i in (0, 1)]
    docs = [_identified(doc, f"u-{i}", "1") for i, doc in enumerate(plain)]
    planning.forget()
    for _ in range(2):
        planning.read_fleet([], docs)
    assert len(fleet_reader._LAST.listings) == 1  # the same replicas: one listing
    updated = [docs[0], _identified(plain[1], "u-1", "2")]
    state = planning.read_fleet([], updated)
    assert len(fleet_reader._replicas) == 2  # u-1 at 1 forgotten once u-1 at 2 was read
    assert [r.name for r in fleet_reader._LAST.listings.popitem()[1]] == [
        r.name for r in state.fleet.replicas
    ]
    assert not fleet_reader._LAST.listings  # the one before, which held u-1 at 1, is gone


# --- the last placement -------------------------------------------------------------------------

DEPLOYMENT = Deployment("team", "qwen", 1, ())
CLUSTER = FleetCluster("c1", ready=True, gateway_address="10.0.0.1")
OTHER = ExistingReplica("other", "llama", "c1", 0, (PinnedEngine("e", "gpu", 1),), "llama-c1-0")


def _counting_schedule() -> tuple[Any, list[Fleet]]:
    calls: list[Fleet] = []

    def schedule(
        deployment: Deployment, found: Fleet, cache: Any, ready: frozenset[str]
    ) -> Placement:
        calls.append(found)
        return Placement(deployment.replicas, ())

    return schedule, calls


def test_the_last_placement_is_reused_while_the_inputs_are_equal() -> None:
    memo, (schedule, calls) = PlacementMemo(), _counting_schedule()
    found = Fleet((CLUSTER,), (OTHER,))
    first = memo.placement(schedule, DEPLOYMENT, found, None, frozenset())
    # Equal values read afresh (another status, same spec) are the same inputs.
    equal = Fleet((replace(CLUSTER),), (replace(OTHER),))
    assert memo.placement(schedule, DEPLOYMENT, equal, None, frozenset()) is first
    assert len(calls) == 1


@pytest.mark.parametrize(
    "change",
    [
        pytest.param({"fleet": Fleet((CLUSTER,), (replace(OTHER, engines=()),))}, id="charges"),
        pytest.param({"fleet": Fleet((replace(CLUSTER, ready=False),), (OTHER,))}, id="cluster"),
        pytest.param({"fleet": Fleet((CLUSTER,), (OTHER,), complete=False)}, id="complete"),
        pytest.param({"deployment": replace(DEPLOYMENT, replicas=2)}, id="deployment"),
        pytest.param({"ready": frozenset({"qwen-c1-0"})}, id="ready"),
    ],
)
def test_any_change_of_the_inputs_schedules_again(change: dict[str, Any]) -> None:
    memo, (schedule, calls) = PlacementMemo(), _counting_schedule()
    inputs: dict[str, Any] = {
        "deployment": DEPLOYMENT,
        "fleet": Fleet((CLUSTER,), (OTHER,)),
        "cache": None,
        "ready": frozenset(),
    }
    memo.placement(schedule, **inputs)
    memo.placement(schedule, **(inputs | change))
    assert len(calls) == 2


def test_the_placements_remembered_are_bounded_by_the_fleet_s_size() -> None:
    memo, (schedule, calls) = PlacementMemo(), _counting_schedule()
    # A fleet of a million objects: room for the fewest entries only.
    huge = Fleet((CLUSTER,), (OTHER,) * (memo_module.REFERENCES - 1))
    for i in range(memo_module.MIN_ENTRIES + 5):
        memo.placement(schedule, replace(DEPLOYMENT, name=f"d{i}"), huge, None, frozenset())
    assert len(memo) == memo_module.MIN_ENTRIES
    memo.placement(schedule, replace(DEPLOYMENT, name="d0"), huge, None, frozenset())
    assert len(calls) == memo_module.MIN_ENTRIES + 6  # the oldest went, so it is scheduled again


def test_the_function_answers_the_same_with_and_without_what_it_remembers() -> None:
    clusters = [inference_cluster(f"c{i}") for i in range(4)]
    xr = model_deployment(replicas=2)
    fleet_now: list[Doc] = [other_replica("llama", "c0", "gpu-l4")]
    for step in range(4):
        planning.forget()
        fresh = call(xr, clusters, fleet_now)
        again = call(xr, clusters, fleet_now)
        remembered = call(xr, clusters, fleet_now)
        assert _bytes(again) == _bytes(fresh) == _bytes(remembered), f"step {step}"
        fleet_now = [*fleet_now[:1], *as_fleet(fresh, ready=step % 2 == 1)]
        if step == 2:
            clusters = clusters[1:]  # a cluster goes: its replica moves


def _bytes(rsp: fnv1.RunFunctionResponse) -> bytes:
    return bytes(rsp.SerializeToString(deterministic=True))
