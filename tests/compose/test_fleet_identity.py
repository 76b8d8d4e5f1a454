"""Fleet objects are remembered by identity, however their bytes are ordered.

Crossplane encodes each request anew with Go's protobuf, which writes a Struct's map
entries in a different order every time: the same object never arrives as the same bytes
twice. The fleet reader keys what it remembers by ``(uid, resourceVersion)``, read from
the encoded object's ``metadata`` alone, so a re-ordered encoding of an object it has read
is not read again, and a new resourceVersion is.
"""

from __future__ import annotations

import copy
from typing import Any, cast

import pytest
from google.protobuf import struct_pb2
from modelplane import planning
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.planning import fleet as fleet_reader
from modelplane.planning import replicas as replica_reader
from modelplane.planning.memo import Memo

from tests.compose.deployments import inference_cluster, other_replica
from tests.compose.test_fleet_memo import REPLICAS
from tests.compose.test_fleet_read import _set

Doc = dict[str, Any]


def _encoded_in_order(value: Any, order: int) -> bytes:
    """A Struct's encoding with every map's entries rotated by ``order`` (as Go may write).

    A Struct's entries are independent length-delimited fields, so any order of them is
    a valid encoding of the same object.
    """
    entries = []
    for key, item in value.items():
        entry = struct_pb2.Struct()
        entry.fields[key].CopyFrom(_value_in_order(item, order))
        entries.append(entry.SerializeToString())
    shift = order % max(len(entries), 1)
    return b"".join(entries[shift:] + entries[:shift])


def _value_in_order(item: Any, order: int) -> struct_pb2.Value:
    value = struct_pb2.Value()
    if isinstance(item, dict):
        value.struct_value.MergeFromString(_encoded_in_order(item, order))
    elif isinstance(item, list):
        for element in item:
            value.list_value.values.add().CopyFrom(_value_in_order(element, order))
    else:
        value.MergeFrom(planning.as_struct({"v": item}).fields["v"])
    return value


def _identified(doc: Doc, uid: str, version: str) -> Doc:
    doc = copy.deepcopy(doc)
    doc["metadata"] |= {"uid": uid, "resourceVersion": version}
    return doc


def _replica(version: str = "7", pool: str = "gpu-l4") -> Doc:
    doc = _identified(other_replica("llama", "c1", "gpu-l4"), "u-replica", version)
    _set("spec.engines[0].members[0].nodePoolName", pool)(doc)
    return doc


def test_reordered_encodings_differ_in_bytes_but_not_in_content() -> None:
    encodings = {_encoded_in_order(_replica(), order) for order in range(4)}
    assert len(encodings) > 1
    decoded = {
        struct_pb2.Struct.FromString(e).SerializeToString(deterministic=True) for e in encodings
    }
    assert len(decoded) == 1


def test_an_encoded_object_is_keyed_by_its_uid_and_resource_version() -> None:
    for order in range(3):
        assert planning.object_key(_encoded_in_order(_replica(), order)) == "9:u-replica7"
    assert planning.object_key(planning.as_struct(_replica())) == "9:u-replica7"


def test_no_two_uid_and_resource_version_pairs_share_a_key() -> None:
    one = planning.object_key(planning.as_struct(_identified(_replica(), "u-ab", "7")))
    two = planning.object_key(planning.as_struct(_identified(_replica(), "u-a", "b7")))
    assert one != two


def test_an_object_reordered_is_read_once() -> None:
    planning.forget()
    reads = [
        planning.read_fleet([], [_encoded_in_order(_replica(), order)]).fleet.replicas[0]
        for order in range(4)
    ]
    assert all(read is reads[0] for read in reads)
    assert [(e.pool, e.nodes) for e in reads[0].engines] == [("gpu-l4", 1)]


def test_a_new_resource_version_is_read_again() -> None:
    planning.forget()
    planning.read_fleet([], [_encoded_in_order(_replica(), 0)])
    moved = _encoded_in_order(_replica(version="8", pool="gpu-h100"), 1)
    edited = planning.read_fleet([], [moved]).fleet.replicas[0]
    assert [(e.pool, e.nodes) for e in edited.engines] == [("gpu-h100", 1)]


def test_a_cluster_reordered_is_read_once_and_as_when_decoded() -> None:
    doc = _identified(inference_cluster("c1"), "u-cluster", "3")
    planning.forget()
    reads = [planning.read_fleet([_encoded_in_order(doc, o)], []).clusters["c1"] for o in range(3)]
    assert all(read is reads[0] for read in reads)
    planning.forget()
    assert planning.read_fleet([planning.as_struct(doc)], []).clusters["c1"] == reads[0]


def test_objects_without_identity_are_read_by_content() -> None:
    doc = other_replica("llama", "c1", "gpu-l4")
    doc["metadata"].pop("uid", None)
    doc["metadata"].pop("resourceVersion", None)
    planning.forget()
    reads = [
        planning.read_fleet([], [_encoded_in_order(doc, o)]).fleet.replicas[0] for o in range(3)
    ]
    assert reads[0] == reads[1] == reads[2]
    assert planning.object_key(_encoded_in_order(doc, 0)) != planning.object_key(
        _encoded_in_order(doc, 1)
    )


def test_an_identity_that_is_no_string_keys_by_content() -> None:
    doc = _replica()
    doc["metadata"]["uid"] = 5
    assert isinstance(planning.object_key(_encoded_in_order(doc, 0)), bytes)
    doc = _replica()
    doc["metadata"]["resourceVersion"] = ""
    assert isinstance(planning.object_key(planning.as_struct(doc)), bytes)


def test_pools_of_one_class_share_their_devices_however_encoded() -> None:
    """The scheduler fits a member once per device list (by identity): clusters whose
    pools publish the same devices must share one list, whatever their map order."""
    one = _identified(inference_cluster("c1"), "u-1", "1")
    two = _identified(inference_cluster("c2"), "u-2", "1")
    planning.forget()
    state = planning.read_fleet([_encoded_in_order(one, 0), _encoded_in_order(two, 1)], [])
    first, second = state.clusters["c1"].pools, state.clusters["c2"].pools
    assert first is not None
    assert second is not None
    assert first[0].devices
    assert first[0].devices is second[0].devices


def _every_replica_shape() -> list[Doc]:
    """Every replica of the fleet reader's tests, with an identity and (as written) without."""
    docs = [cast("Doc", p.values[0]) for p in REPLICAS]
    named = [_identified(d, f"u-{i}", "4") for i, d in enumerate(docs) if _has_metadata(d)]
    return named + docs  # those without identity: keyed by content


def _distinct(doc: Doc, at: int) -> Doc:
    """The shape under a name of its own: objects of one name are versions of one object
    (the memo keeps the latest read), and these are distinct replicas."""
    name = doc["metadata"].get("name")
    if isinstance(name, str) and name:
        doc["metadata"]["name"] = f"{name[:50]}-{at}"
    return doc


def _has_metadata(doc: Doc) -> bool:
    return isinstance(doc.get("metadata"), dict)


@pytest.mark.parametrize("order", [0, 1])
def test_a_replica_keyed_from_its_deep_decode_reads_and_keys_as_the_memo(order: int) -> None:
    """A fleet never seen is keyed from each replica's one deep decode: the same key, so
    the same entry, and the same read as the memo's own way (metadata decoded alone)."""
    for doc in _every_replica_shape():
        encoded = _encoded_in_order(doc, order)
        memo = Memo(replica_reader._replica_or_skipped, planning.object_key)
        found = replica_reader.read_keyed_by_decode(encoded, memo)
        assert (memo.misses, len(memo)) == (1, 1)
        assert memo(encoded) is found  # the memo's key is the same: not read again
        assert memo.misses == 1
        planning.forget()
        assert found == replica_reader._replica_or_skipped(encoded)


def test_a_fleet_reads_the_same_whether_its_replicas_were_new_or_known() -> None:
    """The first call keys every replica from its deep decode (all new), the second too
    (the first found all new), the third by metadata alone (the second found none new)."""
    shapes = [d for d in _every_replica_shape() if _has_metadata(d)]
    docs = [_distinct(_identified(d, f"u-{i}", "1"), i) for i, d in enumerate(shapes)]
    own = Deployment("other-team", "llama", 1, ())
    planning.forget()
    misses = fleet_reader._replicas.misses
    states = []
    for order in range(3):
        states.append(planning.read_fleet([], [_encoded_in_order(d, order) for d in docs], own))
        assert fleet_reader._replicas.misses - misses == len(docs)  # read once, ever
    assert [s.fleet for s in states] == [states[0].fleet] * 3
    assert [s.skipped for s in states] == [states[0].skipped] * 3
