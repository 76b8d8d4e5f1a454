"""Decode a ModelDeployment's request without decoding its fleet, which it reads itself.

A ModelDeployment's request carries every InferenceCluster and ModelReplica of the
fleet: 15 MiB on a 10,000 replica fleet, which protobuf decodes into some 80 MiB of
Struct messages in a tenth of a second, on every call, though the fleet reader only
needs the objects it has not read before. :func:`decode_request` decodes the request
with the fleet's objects left as their encoded bytes (protobuf's ``bytes`` and a
message share the wire format), so the reader can key its memo by a digest of the
bytes and decode only the objects it has not seen.

The bytes travel in the request Crossplane's gRPC types define: each fleet item's
``resource`` stays empty and its encoding is held in ``connection_details`` under
:data:`ENCODED` (fleet objects have no connection details). :func:`encoded_items`
reads them back. Requests of other kinds decode as usual.

A server decodes with it through ``modelplane.registry.decode_request``
(``modelplane.runtime.add_function_runner`` registers a runner that does).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from operator import attrgetter, methodcaller
from typing import Any, overload

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf import (
    descriptor_pb2,
    descriptor_pool,
    duration_pb2,
    message_factory,
    struct_pb2,
)

# A ModelDeployment's requirement names: the keys Crossplane answers under.
CLUSTERS = "inferenceclusters"
REPLICAS = "modelreplicas"
CACHE = "modelcache"
# The narrow view's requirements (modelplane.planning.steady): its own replicas, and per
# hosting cluster the cluster by name and the replicas on it.
OWN = "modelreplicas-own"
_CLUSTER = "inferencecluster-"
_ON = "modelreplicas-on-"
# The requirements whose items stay encoded: the fleet a ModelDeployment reads.
FLEET = (CLUSTERS, REPLICAS)


def cluster_requirement(cluster: str) -> str:
    """The requirement of a hosting InferenceCluster, by name."""
    return f"{_CLUSTER}{cluster}"


def on_cluster_requirement(cluster: str) -> str:
    """The requirement of every ModelReplica on a hosting cluster, by its cluster label."""
    return f"{_ON}{cluster}"


def on_cluster_of(requirement: str) -> str | None:
    """The cluster an :func:`on_cluster_requirement` names; None for any other."""
    return requirement[len(_ON) :] if requirement.startswith(_ON) else None


def is_fleet(name: str) -> bool:
    """Tell whether a requirement's items are fleet objects, which stay encoded."""
    return name in FLEET or name == OWN or name.startswith((_CLUSTER, _ON))


KIND = "ModelDeployment"
ENCODED = "modelplane.ai/encoded-resource"
_PACKAGE = "modelplane.wire"


def _encoded_schema() -> Any:
    """RunFunctionRequest as Crossplane defines it, but each ``Resources`` item encoded.

    Built from the generated descriptor, so it follows the installed SDK's schema.
    """
    proto = descriptor_pb2.FileDescriptorProto()
    fnv1.DESCRIPTOR.CopyToProto(proto)
    proto.name, source = "modelplane/wire/run_function.proto", proto.package
    proto.package = _PACKAGE
    proto.ClearField("service")
    items = next(m for m in proto.message_type if m.name == "Resource")
    encoded = proto.message_type.add()
    encoded.CopyFrom(items)
    encoded.name = "EncodedResource"
    field = next(f for f in encoded.field if f.name == "resource")
    field.type = descriptor_pb2.FieldDescriptorProto.TYPE_BYTES
    field.ClearField("type_name")
    for message in proto.message_type:
        _rename(message, f".{source}.", f".{_PACKAGE}.")
    holder = next(m for m in proto.message_type if m.name == "Resources")
    next(f for f in holder.field if f.name == "items").type_name = f".{_PACKAGE}.EncodedResource"
    pool = descriptor_pool.DescriptorPool()
    for dependency in (struct_pb2, duration_pb2):
        file = descriptor_pb2.FileDescriptorProto()
        dependency.DESCRIPTOR.CopyToProto(file)
        pool.Add(file)
    pool.Add(proto)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName(f"{_PACKAGE}.RunFunctionRequest")
    )


def _rename(message: descriptor_pb2.DescriptorProto, old: str, new: str) -> None:
    for field in message.field:
        if field.type_name.startswith(old):
            field.type_name = new + field.type_name[len(old) :]
    for nested in message.nested_type:
        _rename(nested, old, new)


_EncodedRequest = _encoded_schema()


def decode_request(
    data: bytes | memoryview, release: Callable[[], None] | None = None
) -> fnv1.RunFunctionRequest:
    """Decode a request; a ModelDeployment's fleet items stay encoded (:func:`encoded_items`).

    ``data`` may be any buffer (a worker reads a large request from shared memory): the
    decoded request copies what it keeps, so the buffer may go once this returns.
    ``release``, if given, is called as soon as ``data`` is no longer read (before the
    fleet is copied into the request), so a caller can let the buffer go then: a large
    request is then held twice at most, not three times (the buffer, its wire decode,
    the request). It is not called when the request decodes whole.

    The fleet's items move into the request one at a time, then the rest of the request
    (small) is decoded into it, so the request is never held twice.
    """
    encoded = _EncodedRequest()
    encoded.ParseFromString(data)
    composite = encoded.observed.composite.resource.fields.get("kind")
    if composite is None or composite.string_value != KIND or not _fleet_in(encoded):
        del encoded
        whole = fnv1.RunFunctionRequest()
        whole.ParseFromString(data)
        return whole
    if release is not None:
        release()
    req = fnv1.RunFunctionRequest()
    for name, found in _fleet_in(encoded):
        into = (
            req.required_resources if found is encoded.required_resources else req.extra_resources
        )
        target = into[name]  # answered, even when empty
        for item in found[name].items:
            target.items.add().connection_details[ENCODED] = item.resource
        del found[name]
    req.MergeFromString(encoded.SerializeToString())
    return req


def _fleet_in(encoded: Any) -> list[tuple[str, Any]]:
    """The fleet requirements a request answers: (name, the map answering it)."""
    return [
        (name, found)
        for found in (encoded.required_resources, encoded.extra_resources)
        for name in sorted(found)
        if is_fleet(name)
    ]


class EncodedItems(Sequence[bytes | struct_pb2.Struct]):
    """A requirement's items, each one's encoding when held encoded, else its Struct.

    Each is taken from the request when asked for, so a fleet is never held twice.
    """

    def __init__(self, found: fnv1.Resources) -> None:
        """Read the items of ``found``."""
        self._items = found.items

    def __len__(self) -> int:
        """How many items the requirement has."""
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> bytes | struct_pb2.Struct: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[bytes | struct_pb2.Struct]: ...

    def __getitem__(self, index: int | slice) -> Any:
        """An item (or a list of them)."""
        if isinstance(index, slice):
            return [self._one(item) for item in self._items[index]]
        return self._one(self._items[index])

    def __iter__(self) -> Iterator[bytes | struct_pb2.Struct]:
        """Each item in turn."""
        for item in self._items:
            yield self._one(item)

    def encodings(self) -> Iterator[bytes | None]:
        """Each item's encoding, taken by C-level steps alone (no Python frame per item);
        None for an item held decoded."""
        return map(_ENCODING, map(_DETAILS, self._items))

    @staticmethod
    def _one(item: fnv1.Resource) -> bytes | struct_pb2.Struct:
        raw = item.connection_details.get(ENCODED)
        return item.resource if raw is None else raw


# get, not []: reading a missing key of a protobuf map inserts it.
_DETAILS, _ENCODING = attrgetter("connection_details"), methodcaller("get", ENCODED)


def encoded_items(found: fnv1.Resources) -> EncodedItems:
    """A requirement's items: each one's encoding when held encoded, else its Struct."""
    return EncodedItems(found)


def fleet_items(req: fnv1.RunFunctionRequest, name: str) -> Sequence[bytes | struct_pb2.Struct]:
    """The fleet objects Crossplane fetched for a requirement: decoded or still encoded."""
    found = req.required_resources.get(name) or req.extra_resources.get(name)
    return () if found is None else encoded_items(found)


def read_by_label(req: fnv1.RunFunctionRequest) -> frozenset[str]:
    """The clusters whose replicas the request holds (answered by their cluster label)."""
    names = (on_cluster_of(n) for n in (*req.required_resources, *req.extra_resources))
    return frozenset(name for name in names if name is not None)


def deterministic_bytes(rsp: fnv1.RunFunctionResponse) -> bytes:
    """A response's bytes, the same in every process (map entries in key order)."""
    return bytes(rsp.SerializeToString(deterministic=True))
