"""The fleet reader's short paths read what the careful reader reads, or leave it to it.

A replica as the API server writes it is read by ``_plain_replica`` (and its engines by
``_plain_engines``), which check less per field; anything they do not expect goes to
the careful reader. Here every shape is read both ways: the short path either answers
exactly as the careful one does or declines. So with ``_plain_cluster`` for clusters.
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import DecodeError
from modelplane import planning
from modelplane.planning import clusters as cluster_reader
from modelplane.planning import fields as fleet_fields
from modelplane.planning import lazy
from modelplane.planning import replicas as replica_reader

from tests.compose.deployments import inference_cluster
from tests.compose.test_fleet_memo import CLUSTERS, REPLICAS, _replica
from tests.compose.test_fleet_read import _set

Doc = dict[str, Any]

MEMBER = {
    "role": "Standalone",
    "nodePoolName": "gpu-l4",
    "deviceRequests": [{"name": "gpu", "deviceClassName": "gpu.nvidia.com", "count": 2}],
}
SHAPES = [
    *REPLICAS,
    pytest.param(_replica(_set("spec.engines[0].copies", 3)), id="copies"),
    pytest.param(_replica(_set("spec.engines[0].copies", 0)), id="copies-zero"),
    pytest.param(_replica(_set("spec.engines[0].copies", 1.5)), id="copies-fraction"),
    pytest.param(_replica(_set("spec.engines[0].copies", "2")), id="copies-text"),
    pytest.param(_replica(_set("spec.engines[0].name", None)), id="engine-name-null"),
    pytest.param(_replica(_set("spec.engines[0].members[0].role", None)), id="role-null"),
    pytest.param(_replica(_set("spec.engines[0].members[0].role", 7)), id="role-number"),
    pytest.param(_replica(_set("spec.engines[0].members[0].nodePoolName", 7)), id="pool-number"),
    pytest.param(_replica(_set("spec.engines[0].members", [MEMBER, MEMBER])), id="two-members"),
    pytest.param(
        _replica(_set("spec.engines[0].members", [{"role": "Standalone"}, MEMBER])),
        id="first-member-claims-nothing",
    ),
    pytest.param(
        _replica(
            _set(
                "spec.engines",
                [
                    {"name": "a", "members": [MEMBER]},
                    {"name": "b", "copies": 2, "members": [MEMBER | {"nodePoolName": "gpu-h"}]},
                ],
            )
        ),
        id="two-engines",
    ),
    pytest.param(
        _replica(_set("spec.engines[0].members[0].deviceRequests", [{"count": "x"}, 3])),
        id="odd-requests",
    ),
    pytest.param(_replica(_set("metadata.labels", None)), id="labels-null"),
    pytest.param(_replica(_set("spec.clusterName", None)), id="cluster-null"),
    pytest.param(_replica(_set("spec.clusterName", ""), _set("metadata.labels", {})), id="nowhere"),
]


def _careful(obj: Any) -> Any:
    planning.forget()
    try:
        return replica_reader._careful_replica(obj.fields)
    except planning.UnreadableError as exc:
        return str(exc)


def _short(obj: Any) -> Any:
    planning.forget()
    try:
        return replica_reader._plain_replica(obj.fields)
    except planning.UnreadableError as exc:
        return str(exc)


@pytest.mark.parametrize("decode", [lazy.Struct, lazy.Object], ids=["one-level", "object"])
@pytest.mark.parametrize("doc", SHAPES)
def test_the_short_path_reads_as_the_careful_one_or_declines(doc: Doc, decode: Any) -> None:
    obj = decode.FromString(planning.as_struct(doc).SerializeToString())
    short = _short(obj)
    if short is not fleet_fields._MISSING:
        assert short == _careful(obj)


def test_a_replica_as_the_api_server_writes_it_takes_the_short_path() -> None:
    obj = lazy.Object.FromString(planning.as_struct(_replica()).SerializeToString())
    read = _short(obj)
    assert read is not fleet_fields._MISSING
    assert read == _careful(obj)
    assert read.engines


@pytest.mark.parametrize("doc", SHAPES)
def test_engines_read_the_same_by_either_path(doc: Doc) -> None:
    spec = lazy.Object.FromString(planning.as_struct(doc).SerializeToString()).fields.get("spec")
    engines = spec.struct_value.fields.get("engines") if spec is not None else None
    if engines is None or engines.WhichOneof("kind") != "list_value":
        return
    encoded = engines.list_value
    try:
        careful: Any = replica_reader._careful_engines(encoded)
    except planning.UnreadableError as exc:
        careful = str(exc)
    short = replica_reader._plain_engines(encoded)
    if short is not fleet_fields._MISSING:
        assert short == careful


def test_an_object_read_at_once_reads_as_one_read_level_by_level() -> None:
    encoded = planning.as_struct(_replica()).SerializeToString()
    by_level, at_once = lazy.Struct.FromString(encoded), lazy.Object.FromString(encoded)
    assert _careful(at_once) == _careful(by_level)
    meta = at_once.fields["metadata"].struct_value
    assert not isinstance(meta, bytes)  # decoded with the object
    assert isinstance(at_once.fields["spec"].struct_value.fields["engines"].list_value, bytes)


@pytest.mark.parametrize("decode", [lazy.Struct, lazy.Object], ids=["one-level", "object"])
@pytest.mark.parametrize("doc", CLUSTERS)
def test_a_cluster_reads_by_the_short_path_as_by_the_careful_one(doc: Doc, decode: Any) -> None:
    obj = decode.FromString(planning.as_struct(doc).SerializeToString())
    planning.forget()
    try:
        short = cluster_reader._plain_cluster(obj.fields)
    except DecodeError:
        short = "cannot be read"
    planning.forget()
    try:
        careful: Any = cluster_reader._careful_cluster(obj.fields)
    except DecodeError:
        careful = "cannot be read"
    if short is not fleet_fields._MISSING:
        assert careful == (short if isinstance(short, str) else (short, []))


def test_a_cluster_as_its_controller_writes_it_takes_the_short_path() -> None:
    doc = inference_cluster("c1", labels={"tier": "gpu"})
    obj = lazy.Object.FromString(planning.as_struct(doc).SerializeToString())
    short = cluster_reader._plain_cluster(obj.fields)
    assert short is not fleet_fields._MISSING
    assert (short, []) == cluster_reader._careful_cluster(obj.fields)
    assert short.pools
