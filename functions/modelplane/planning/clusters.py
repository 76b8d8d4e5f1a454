"""Read an InferenceCluster: its labels, taints, readiness, gateway and published pools.

A cluster is read by a short path (``_plain_*``) when every field is as the API server
writes it, else by the careful reader, which names each problem; the two must agree
(``tests/compose/test_fleet_plain.py``). Pools and devices that many clusters share are
read once per content (:data:`.memo.MEMO`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from google.protobuf import struct_pb2 as structpb
from google.protobuf.message import DecodeError

from modelplane.domain import quantity as qty
from modelplane.domain import semver
from modelplane.domain.dra import Attribute, Device
from modelplane.domain.scheduling.fleet import (
    CAPACITIES,
    Capacity,
    Claim,
    DriverCounts,
    FleetCluster,
    ObservedCapacity,
    Pool,
    PoolDevice,
    labels,
)
from modelplane.domain.taints import NO_EXECUTE, NO_SCHEDULE, Effect, Taint
from modelplane.planning import agreement, lazy
from modelplane.planning.fields import (
    _EMPTY,
    _MISSING,
    _TYPES,
    Fields,
    Item,
    Skipped,
    T,
    UnreadableError,
    _at,
    _describe,
    _encoded,
    _fields_of,
    _lenient,
    _object,
    _objects,
    _ready,
    _string_map,
    _sub,
    _text,
    _value,
    _values_of,
    _whole,
    content_key,
)
from modelplane.planning.memo import MEMO, Memo

_EFFECTS: dict[str, Effect] = {"NoSchedule": NO_SCHEDULE, "NoExecute": NO_EXECUTE}


def _devices(raw: structpb.Value) -> tuple[PoolDevice, ...]:
    """A pool's ``devices`` (a Value, so that equal lists are read once)."""
    got = raw.WhichOneof("kind")
    if got is None or got == "null_value":
        return ()
    if got != "list_value":
        error = UnreadableError("devices", f"is {_TYPES[got]}, not a list")
        raise error
    entries = []
    for i, value in enumerate(_values_of(raw)):
        entry = _object(value, _pool_device, "devices[{}]", i)
        if entry is not None:
            entries.append(entry)
    return tuple(entries)


# Pools of one InferenceClass publish the same devices: one tuple serves them all, which
# also lets the scheduler fit each (member, device list) once.
_pool_devices: Memo[tuple[PoolDevice, ...]] = MEMO.add("pool devices", _devices, content_key)


def _pool_device(fields: Fields) -> PoolDevice | None:
    name, driver = _text(fields, "name"), _text(fields, "driver")
    attributes = {}
    for key, value in _sub(fields, "attributes").items():
        attribute = _object(value, _attribute, 'attributes["{}"]', key)
        if attribute is not None:
            attributes[str(key)] = attribute
    capacity = {}
    for key, value in _sub(fields, "capacity").items():
        kind = value.WhichOneof("kind")
        if kind != "struct_value":
            error = UnreadableError(f'capacity["{key}"]', f"is {_TYPES[kind]}, not an object")
            raise error
        text = _text(_fields_of(value), "value")
        if not text:
            continue
        try:
            qty.parse(text)
        except qty.QuantityError:
            error = UnreadableError(f'capacity["{key}"].value', f"is {text!r}, not a quantity")
            raise error from None
        capacity[str(key)] = text
    claim: Claim = "Synthetic" if _text(fields, "claim") == "Synthetic" else "DRA"
    count = _whole(fields, "count", 0)
    device_class = _text(fields, "deviceClassName")
    if not name or not driver:
        return None
    return PoolDevice(
        name=name,
        device=Device.build(driver, attributes, capacity),
        count=count,
        claim=claim,
        device_class_name=device_class,
    )


def _attribute(fields: Fields) -> Attribute | None:
    """One typed attribute: exactly one of string, bool, int or version."""
    for key, value in fields.items():
        kind = value.WhichOneof("kind")
        if key == "string" and kind == "string_value":
            return Attribute(key, str(value.string_value))
        if key == "version" and kind == "string_value":
            text = str(value.string_value)
            try:
                semver.parse(text)
            except semver.SemverError:
                error = UnreadableError(key, f"is {text!r}, not a semantic version")
                raise error from None
            return Attribute(key, text)
        if key == "bool" and kind == "bool_value":
            return Attribute("bool", bool(value.bool_value))
        if key == "int" and kind == "number_value" and float(value.number_value).is_integer():
            return Attribute("int", int(value.number_value))
        if key in ("string", "version", "bool", "int"):
            error = UnreadableError(key, f"is {_TYPES[kind]}, not {_ATTRIBUTE_TYPES[key]}")
            raise error
    return None


_ATTRIBUTE_TYPES = {
    "string": "a string",
    "version": "a string",
    "bool": "a boolean",
    "int": "a whole number",
}


def read_cluster(obj: structpb.Struct) -> FleetCluster | None:
    """Read one InferenceCluster with its status; None when it has no name.

    Raises:
        UnreadableError: a field it reads is of the wrong type (the first one found).
    """
    cluster, problems = _read_cluster(obj)
    if problems:
        raise problems[0]
    return cluster


def _read_cluster(obj: structpb.Struct) -> tuple[FleetCluster | None, list[UnreadableError]]:
    """Read what of a cluster reads; any problem leaves its pools unknown (None)."""
    fields = obj.fields
    plain = _plain_cluster(fields)
    if plain is _MISSING:
        return _careful_cluster(fields)
    if agreement.CHECKING:
        agreement.check("InferenceCluster", (plain, []), lambda: _careful_cluster(fields))
    return cast("FleetCluster", plain), []


def _careful_cluster(fields: Fields) -> tuple[FleetCluster | None, list[UnreadableError]]:
    """:func:`_read_cluster` for any cluster: every part read apart, every problem kept."""
    problems: list[UnreadableError] = []

    def attempt(read: Callable[[], T], default: T) -> T:
        try:
            return read()
        except UnreadableError as exc:
            if str(exc) not in {str(p) for p in problems}:
                problems.append(exc)
            return default

    name = attempt(lambda: _at(fields, "metadata", lambda m: _text(m, "name")), "")
    if not name:
        return None, problems
    found = attempt(lambda: _at(fields, "metadata", lambda m: _string_map(m, "labels")), None)
    no_taints: tuple[Taint, ...] = ()
    taints = attempt(lambda: _at(fields, "spec", _taints), no_taints)
    ready = attempt(lambda: _at(fields, "status", _ready), False)
    gateway = attempt(
        lambda: _at(fields, "status", lambda s: _at(s, "gateway", lambda g: _text(g, "address"))),
        "",
    )
    pools = attempt(lambda: _at(fields, "status", _published), None)
    if found is None:  # keep the labels that are strings
        meta = _lenient(fields.get("metadata", _EMPTY))
        raw = _lenient(meta.get("labels", _EMPTY))
        found = {
            str(k): str(v.string_value)
            for k, v in raw.items()
            if v.WhichOneof("kind") == "string_value"
        }
    cluster = FleetCluster(
        name=name,
        labels=labels(found),
        taints=taints,
        ready=ready,
        gateway_address=gateway,
        pools=None if problems else pools,
    )
    return cluster, problems


def _plain_cluster(fields: Fields) -> Any:
    """:func:`_read_cluster` for a cluster without problems, each object decoded once.

    A named cluster whose every field reads is read as the careful reader reads it, in
    its order (so a part that does not decode fails here where it fails there); at the
    first problem it returns ``_MISSING`` and the careful reader reads the cluster,
    collecting every problem.
    """
    try:
        meta = _sub(fields, "metadata")
        name = _text(meta, "name")
        if not name:
            return _MISSING
        found = _string_map(meta, "labels")
        taints = _taints(_sub(fields, "spec"))
        status = _sub(fields, "status")
        ready = _ready(status)
        gateway = _text(_sub(status, "gateway"), "address")
        pools = _published(status)
    except UnreadableError:
        return _MISSING
    return FleetCluster(
        name=name,
        labels=labels(found),
        taints=taints,
        ready=ready,
        gateway_address=gateway,
        pools=pools,
    )


def _taints(spec: Fields) -> tuple[Taint, ...]:
    taints = []
    for i, taint in enumerate(_objects(spec, "taints")):
        try:
            key, effect, value = _text(taint, "key"), _text(taint, "effect"), _text(taint, "value")
        except UnreadableError as exc:
            error = exc.within(f"taints[{i}]")
            raise error from None
        if effect in _EFFECTS:
            taints.append(Taint(key, _EFFECTS[effect], value))
    return tuple(taints)


def _published(status: Fields) -> tuple[Pool, ...] | None:
    """:func:`_pools`, once per encoding of the list (clusters of one template share it)."""
    found = status.get("gpuPools")
    if found is None or found.WhichOneof("kind") != "list_value":
        return _pools(status)
    if not isinstance(found.list_value, bytes):
        return _pools_by_content(found.SerializeToString(deterministic=True))
    return _encoded_pools(found.list_value)


def _pools_of_content(key: bytes) -> tuple[Pool, ...] | None:
    """The pools a ``gpuPools`` Value's deterministic encoding reads as (raises as
    :func:`_pools` does: what does not read is not remembered)."""
    status = structpb.Struct()
    status.fields["gpuPools"].MergeFromString(key)
    plain = _plain_pools(status.fields["gpuPools"].list_value.values)
    if plain is _MISSING:
        return _pools(status.fields)
    if agreement.CHECKING:
        agreement.check("status.gpuPools", plain, lambda: _pools(status.fields))
    return cast("tuple[Pool, ...]", plain)


# A cluster's published pools by their content: clusters of one shape (the same node
# pools, classes and node counts) publish the same list, which Go's protobuf never
# encodes the same twice; re-encoded deterministically, equal lists have one key.
_pools_by_content: Memo[tuple[Pool, ...] | None] = MEMO.add(
    "pools by content", _pools_of_content, bytes
)


def _plain_pools(values: Any) -> Any:
    """:func:`_pools` for pools as clusters publish them, in fewer steps.

    Every pool must have a name, a whole count of nodes and its devices (a number or
    string read from a Value of another kind is empty, so only an empty one needs its
    kind checked); otherwise it returns ``_MISSING`` and :func:`_pools` reads them,
    naming what is wrong. What this returns, :func:`_pools` returns too.
    """
    pools = []
    for value in values:
        pool = value.struct_value.fields
        name, nodes, devices = pool.get("name"), pool.get("nodes"), pool.get("devices")
        if name is None or nodes is None or devices is None or not name.string_value:
            return _MISSING
        count = nodes.number_value
        if not count.is_integer() or count < 0:
            return _MISSING
        if not count and nodes.WhichOneof("kind") != "number_value":
            return _MISSING
        capacity = pool.get("capacity")
        text = "Nodes" if capacity is None else capacity.string_value
        if text not in ("Nodes", "Devices"):
            return _MISSING
        shape: Capacity = "Devices" if text == "Devices" else "Nodes"
        draining = pool.get("draining")
        if draining is not None and draining.WhichOneof("kind") != "bool_value":
            return _MISSING
        try:
            read = _pool_devices(devices)
            observed = _observed(pool) if "observed" in pool else None
        except UnreadableError:
            return _MISSING  # _pools names it, with the pool's place
        drains = draining is not None and bool(draining.bool_value)
        pools.append(Pool(str(name.string_value), int(count), read, shape, observed, drains))
    return tuple(pools)


def _pools_encoded(encoded: bytes) -> tuple[Pool, ...] | None:
    status = lazy.Struct()
    status.fields["gpuPools"].list_value = encoded
    return _pools(status.fields)


def _pools(status: Fields) -> tuple[Pool, ...] | None:
    """The published pools; None while there are none (no ``gpuPools`` yet)."""
    if _value(status, "gpuPools", "list_value") is None:
        return None
    pools = []
    for i, pool in enumerate(_objects(status, "gpuPools")):
        try:
            name = _text(pool, "name")
            nodes = _whole(pool, "nodes", 0)
            devices = _pool_devices(pool.get("devices", _EMPTY))
            capacity = _capacity(_text(pool, "capacity"))
            observed = _observed(pool)
            draining = _value(pool, "draining", "bool_value")
        except UnreadableError as exc:
            error = exc.within(f"gpuPools[{i}]")
            raise error from None
        if name:
            drains = draining is not None and bool(draining.bool_value)
            pools.append(Pool(name, nodes, devices, capacity, observed, drains))
    return tuple(pools)


def _observed(pool: Fields) -> ObservedCapacity | None:
    """A pool's ``observed`` capacity (what the cluster shows); None while unknown."""
    found = _value(pool, "observed", "struct_value")
    if found is None:
        return None
    fields = _fields_of(found)
    try:
        if _value(fields, "nodes", "number_value") is None:
            return None
        layout = None
        if _value(fields, "nodeDevices", "list_value") is not None:
            layout = tuple(
                _object(entry, _node_devices, "nodeDevices[{}]", i)
                for i, entry in enumerate(_values_of(fields["nodeDevices"]))
            )
        return ObservedCapacity(_whole(fields, "nodes", 0), layout)
    except UnreadableError as exc:
        error = exc.within("observed")
        raise error from None


def _node_devices(fields: Fields) -> tuple[DriverCounts, int]:
    """One ``observed.nodeDevices`` group: what each of its nodes publishes, and how many.

    A driver named twice counts once, with the sum (the status is ours, but a hand-edited
    one must not count devices twice)."""
    counts: dict[str, int] = {}
    for i, entry in enumerate(_objects(fields, "devices")):
        try:
            driver, count = _text(entry, "driver"), _whole(entry, "count", 0)
        except UnreadableError as exc:
            error = exc.within(f"devices[{i}]")
            raise error from None
        if driver and count:
            counts[driver] = counts.get(driver, 0) + count
    return tuple(sorted(counts.items())), _whole(fields, "nodes", 0)


def _capacity(text: str) -> Capacity:
    """A pool's ``capacity``: Nodes when unset (whole nodes per pod), or Devices (shared)."""
    if text in ("", "Nodes"):
        return "Nodes"
    if text == "Devices":
        return "Devices"
    error = UnreadableError("capacity", f"is {text!r}, not one of {', '.join(CAPACITIES)}")
    raise error


_encoded_pools: Memo[tuple[Pool, ...] | None] = MEMO.add("pools by encoding", _pools_encoded, bytes)


def _cluster_or_skipped(item: Item) -> tuple[FleetCluster | None, Skipped | None]:
    """Read a cluster, decoded in one call (:func:`_encoded`)."""
    obj = _encoded(item)
    try:
        cluster, problems = _read_cluster(obj)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError, DecodeError):
        return None, Skipped(_describe("InferenceCluster", obj.fields), "cannot be read")
    if not problems:
        return cluster, None
    return cluster, Skipped(_describe("InferenceCluster", obj.fields), str(problems[0]))
