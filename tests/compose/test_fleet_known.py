"""A steady call finds the objects it read before in bulk, by the raw bytes of their uid
and resourceVersion (:mod:`modelplane.planning.identities`), and must still notice every
change: a new resourceVersion, a new uid, an object added or removed, and any encoding of
an identity that is not the one protobuf writes (those are read the exact way)."""

from __future__ import annotations

from typing import Any

import pytest
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import struct_pb2
from modelplane import planning
from modelplane.domain.scheduling.fleet import Deployment
from modelplane.planning import fleet as fleet_reader
from modelplane.planning import identities, wire

from tests.compose.deployments import inference_cluster, other_replica
from tests.compose.test_fleet_identity import _encoded_in_order, _identified

Doc = dict[str, Any]
OWN = Deployment("other-team", "llama", 1, ())
STEADY = 3  # calls until found in bulk: by decode (new), by decode (aliased), in bulk


def _replicas(count: int, version: str = "1") -> list[Doc]:
    return [
        _identified(other_replica("llama", f"c{i}", "gpu-l4"), f"u-{i}", version)
        for i in range(count)
    ]


def _steady(docs: list[Doc], calls: int = STEADY) -> list[planning.FleetState]:
    return [
        planning.read_fleet([], [_encoded_in_order(d, order) for d in docs], OWN)
        for order in range(calls)
    ]


def _misses() -> int:
    return fleet_reader._replicas.misses


def test_a_steady_fleet_is_found_in_bulk_and_read_once() -> None:
    docs = _replicas(5)
    planning.forget()
    before = _misses()
    states = _steady(docs, STEADY + 2)
    assert _misses() - before == len(docs)
    last = states[-1].fleet.replicas
    assert all(a is b for a, b in zip(states[STEADY - 1].fleet.replicas, last, strict=True))
    assert [s.fleet for s in states] == [states[0].fleet] * len(states)
    fleet_reader._replicas.last_key = None
    planning.read_fleet([], [_encoded_in_order(d, 1) for d in docs], OWN)
    assert fleet_reader._replicas.last_key is None  # found in bulk: none keyed one by one


@pytest.mark.parametrize(
    ("at", "cluster", "uid", "version"),
    [(1, "c9", "u-1", "2"), (2, "c7", "u-new", "1")],
    ids=["a new resourceVersion", "a new uid"],
)
def test_a_changed_identity_found_in_bulk_is_read_again(
    at: int, cluster: str, uid: str, version: str
) -> None:
    docs = _replicas(3)
    planning.forget()
    _steady(docs)
    changed = _identified(other_replica("llama", cluster, "gpu-h100"), uid, version)
    fleet = [*docs[:at], changed, *docs[at + 1 :]]
    before = _misses()
    state = planning.read_fleet([], [_encoded_in_order(d, at) for d in fleet])
    assert _misses() - before == 1
    clusters = sorted(r.cluster for r in state.fleet.replicas)
    assert clusters == sorted([*(f"c{i}" for i in range(3) if i != at), cluster])


def test_objects_added_and_removed_are_noticed_in_bulk() -> None:
    docs = _replicas(4)
    planning.forget()
    _steady(docs)
    added = _identified(other_replica("llama", "c8", "gpu-l4"), "u-8", "1")
    state = planning.read_fleet([], [_encoded_in_order(d, 2) for d in [*docs[1:], added]])
    assert sorted(r.cluster for r in state.fleet.replicas) == ["c1", "c2", "c3", "c8"]


def test_clusters_are_found_in_bulk_and_a_change_noticed() -> None:
    one = _identified(inference_cluster("c1"), "u-c1", "1")
    planning.forget()
    reads = [planning.read_fleet([_encoded_in_order(one, o)], []).clusters["c1"] for o in range(3)]
    assert reads[1] is reads[2]
    taller = _identified(inference_cluster("c1", [("gpu-l4", 9, ())]), "u-c1", "2")
    pools = planning.read_fleet([_encoded_in_order(taller, 0)], []).clusters["c1"].pools
    assert pools is not None
    assert pools[0].nodes == 9


def _value(text: str) -> bytes:
    return bytes(struct_pb2.Value(string_value=text).SerializeToString())


def test_an_alias_is_the_one_encoding_of_an_identity() -> None:
    assert identities.alias_of("3:u-17") == (_value("u-1"), _value("7"))
    assert identities.alias_of(b"3:u-17") is None  # a key by content
    assert identities.alias_of("u" * 200 + "7") is None
    assert identities.alias_of(f"200:{'u' * 200}7") is None  # a 2-byte length
    raw = identities.raw_identities([planning.as_struct(_replicas(1)[0]).SerializeToString()])
    assert raw is not None
    assert raw[0] == identities.alias_of(planning.object_key(planning.as_struct(_replicas(1)[0])))


def test_an_identity_encoded_otherwise_is_read_the_exact_way() -> None:
    """A uid Value holding two strings reads as the last: never found by its bytes."""
    doc = _identified(other_replica("llama", "c1", "gpu-l4"), "u-2", "1")
    planning.forget()
    _steady([_identified(other_replica("llama", "c5", "gpu-l4"), "u-1", "1")])
    odd = _with_uid_value(doc, _value("u-1") + _value("u-2"))
    state = planning.read_fleet([], [odd], OWN)
    assert [r.name for r in state.fleet.replicas] == [doc["metadata"]["name"]]
    assert planning.object_key(odd) == "3:u-21"


def _with_uid_value(doc: Doc, value: bytes) -> bytes:
    """``doc`` encoded, its ``metadata.uid`` Value replaced by ``value``."""
    meta = {k: v for k, v in doc["metadata"].items() if k != "uid"}
    inner = bytes(planning.as_struct(meta).SerializeToString())
    entry = b"\n\x03uid\x12" + _varint(len(value)) + value
    inner += b"\n" + _varint(len(entry)) + entry
    value_bytes = b"\x2a" + _varint(len(inner)) + inner
    field = b"\n\x08metadata\x12" + _varint(len(value_bytes)) + value_bytes
    rest = planning.as_struct({k: v for k, v in doc.items() if k != "metadata"})
    return bytes(rest.SerializeToString()) + b"\n" + _varint(len(field)) + field


def _with_metadata_value(doc: Doc, tail: bytes) -> bytes:
    """``doc`` encoded, its ``metadata`` Value followed by ``tail`` (more of its fields)."""
    entries = []
    for key, item in doc.items():
        entry = struct_pb2.Struct()
        entry.fields[key].CopyFrom(planning.as_struct({"v": item}).fields["v"])
        encoded = entry.SerializeToString()
        if key == "metadata":
            value = entry.fields[key].SerializeToString() + tail
            inner = b"\n\x08metadata" + b"\x12" + _varint(len(value)) + value
            encoded = b"\n" + _varint(len(inner)) + inner
        entries.append(encoded)
    return b"".join(entries)


def _varint(number: int) -> bytes:
    out = b""
    while number >= 0x80:
        out += bytes([number & 0x7F | 0x80])
        number >>= 7
    return out + bytes([number])


def test_metadata_that_reads_as_no_object_is_not_found_by_its_first_kind() -> None:
    """A Value encoded as an object, then as a string, is a string (the last kind wins):
    its uid inside the object is no identity, so the replica is read by its content."""
    doc = _identified(other_replica("llama", "c1", "gpu-l4"), "u-1", "1")
    planning.forget()
    _steady([doc])
    odd = _with_metadata_value(doc, _value("x"))
    raws = identities.raw_identities([odd])
    assert raws == [(b"", b"")]
    state = planning.read_fleet([], [odd], OWN)
    assert state.fleet.replicas == ()
    assert state.skipped  # its metadata is a string: named, not read as the steady one


def test_decoded_items_are_read_one_by_one_and_left_unchanged() -> None:
    """Items a request holds decoded have no encoding to key in bulk; reading them must not
    add one (a protobuf map inserts a key that is read with [])."""
    found = fnv1.Resources()
    found.items.add().resource.CopyFrom(planning.as_struct(_replicas(1)[0]))
    items = wire.encoded_items(found)
    assert identities.raw_identities(items) is None
    assert wire.ENCODED not in found.items[0].connection_details
    planning.forget()
    assert [r.cluster for r in planning.read_fleet([], items).fleet.replicas] == ["c0"]
