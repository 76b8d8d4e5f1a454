"""Read the fleet (InferenceClusters, ModelReplicas, the ModelCache) into scheduler values.

A ModelDeployment's request carries every ModelReplica of the fleet: 10,000 of them on
a large fleet, read on every call, encoded anew by Crossplane each time (Go's protobuf
writes map entries in a different order on every call, so the same object never comes
as the same bytes twice). So:

- each object is read once, and remembered by its uid and resourceVersion, read from
  its ``metadata`` alone (:data:`lazy.Head`); by a digest of its content only when it
  has neither (:func:`object_key`);
- an object not seen before is decoded in one call as deep as it is read (a replica by
  :data:`lazy.Replica`, a cluster by :data:`lazy.Tree`), so a replica's pod template is
  never decoded, and read by a short path with few Python-level steps that declines
  anything not as the API server writes it (``_plain_*``), which the careful reader then
  reads and names;
- what many objects share is read once per content, keyed by a deterministic encoding
  of what the reader reads of it: a replica's engines (every replica of a deployment on
  one pool has the same), a pool's devices (which the scheduler then fits once).

Decoded Structs and plain dicts (``modelplane plan`` reads YAML, through
:func:`as_struct`) are encoded first, so there is one reader for all of them.

A missing or null field reads as absent. A field of the wrong type (a string where a
list belongs, a label that is no string, a count that is no whole number, a capacity
that is no quantity) makes the object unreadable (:class:`UnreadableError` names the field),
and one unreadable object never breaks a deployment:

- a ModelReplica of another deployment is skipped: its pools are not charged;
- a ModelReplica of this deployment is kept without its engines, which are scheduled
  again (on its cluster, where they fit);
- an InferenceCluster keeps what runs on it and gets nothing new (as if its pools were
  not published yet), with what of it reads: its name, string labels, gateway;
- the ModelCache reads as unresolved: nothing new is placed, nothing placed moves.

Each is named in :attr:`FleetState.skipped` or :attr:`CacheState.problem`, which
:func:`warnings` turns into the Warning the function reports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeAlias, TypeVar, cast

from crossplane.function import resource
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb
from google.protobuf.message import DecodeError

from modelplane.compose.model_deployment import lazy
from modelplane.domain import naming, semver
from modelplane.domain import quantity as qty
from modelplane.domain.dra.device import Attribute, Device
from modelplane.domain.scheduling import sharing
from modelplane.domain.scheduling.fleet import (
    CAPACITIES,
    CacheFootprint,
    Capacity,
    Claim,
    Demand,
    Deployment,
    ExistingReplica,
    Fleet,
    FleetCluster,
    ObservedCapacity,
    PinnedEngine,
    Pool,
    PoolDevice,
    labels,
)
from modelplane.domain.taints import NO_EXECUTE, NO_SCHEDULE, Effect, Taint

DEPLOYMENT_LABEL = "modelplane.ai/deployment"
CLUSTER_LABEL = "modelplane.ai/cluster"
INDEX_LABEL = "modelplane.ai/replica-index"

_EMPTY = structpb.Value()
_NO_FIELDS: Any = structpb.Struct().fields  # read only: never written to
_MISSING = object()
T = TypeVar("T")
# The least a memo generation holds (it grows to hold one call's fleet): a 10,000 replica
# fleet and its clusters, several times over.
MEMO_LIMIT = 65_536
# A replica index label longer than this is no index (int() refuses 4,300 digits).
_INDEX_DIGITS = 9
# How many unreadable objects a Warning names before it counts the rest.
WARNING_NAMES = 3
_EFFECTS: dict[str, Effect] = {"NoSchedule": NO_SCHEDULE, "NoExecute": NO_EXECUTE}
_TYPES = {
    "null_value": "null",
    "number_value": "a number",
    "string_value": "a string",
    "bool_value": "a boolean",
    "struct_value": "an object",
    "list_value": "a list",
    None: "empty",
}
Fields = Any  # a Struct's ``fields`` map (protobuf's MessageMap of str -> Value)


class UnreadableError(ValueError):
    """A field of a fleet object that is not of the type its schema gives it.

    Attributes:
        path: The field, e.g. ``status.gpuPools[0].nodes``.
        problem: What is wrong with it, e.g. ``is a string, not a number``.
    """

    def __init__(self, path: str, problem: str) -> None:
        """Name the field and what is wrong with it."""
        super().__init__(f"{path} {problem}")
        self.path = path
        self.problem = problem

    def within(self, parent: str) -> UnreadableError:
        """The same problem, with the path of the object or list holding the field."""
        joined = f"{parent}{self.path}" if self.path.startswith("[") else f"{parent}.{self.path}"
        return UnreadableError(joined, self.problem)


def as_item(obj: Item | Mapping[str, Any]) -> Item:
    """Return a fleet object as it is when decoded or encoded, else as a Struct."""
    return obj if isinstance(obj, bytes) else as_struct(obj)


def as_struct(obj: structpb.Struct | Mapping[str, Any]) -> structpb.Struct:
    """Return a Struct for a Struct or a plain dict.

    A dict that is no JSON (a YAML timestamp, say) converts with such values as text; one
    that cannot convert at all reads as an empty object (which every reader skips).
    """
    if isinstance(obj, structpb.Struct):
        return obj
    try:
        return resource.dict_to_struct(dict(obj))
    except (json_format.ParseError, TypeError, ValueError, RecursionError):
        pass
    try:
        return resource.dict_to_struct(json.loads(json.dumps(obj, default=str)))
    except (json_format.ParseError, TypeError, ValueError, RecursionError):
        return structpb.Struct()


# --- typed reads: absent reads as empty, the wrong type raises UnreadableError ------------------


def _value(fields: Fields, key: str, kind: str) -> Any:
    """The Value at ``key`` if it holds ``kind``; None if absent or null."""
    value = fields.get(key)
    if value is None:
        return None
    got = value.WhichOneof("kind")
    if got == kind:
        return value
    if got is None or got == "null_value":
        return None
    error = UnreadableError(key, f"is {_TYPES[got]}, not {_TYPES[kind]}")
    raise error


def _fields_of(value: Any) -> Fields:
    """The fields of a Value holding an object: decoded, or still encoded (.lazy).

    Anything else reads as an empty object (callers check the kind first when it
    matters).
    """
    inner = value.struct_value
    return _decode_struct(inner).fields if isinstance(inner, bytes) else inner.fields


def _values_of(value: Any) -> Any:
    """The values of a Value holding a list: decoded, or still encoded (.lazy)."""
    inner = value.list_value
    return _decode_list(inner).values if isinstance(inner, bytes) else inner.values


def _lenient(value: Any) -> Fields:
    """:func:`_fields_of` for what only names an object: what does not decode is empty."""
    try:
        return _fields_of(value)
    except DecodeError:
        return _NO_FIELDS


def _encoded(item: Item) -> Any:
    """A fleet object decoded for reading, however it came.

    It is decoded in one call down to every field the readers read (:data:`lazy.Tree`).
    When that fails, its first levels are decoded (:data:`lazy.Object`), and failing that
    it is read one level at a time, so what does read is read and the rest is named as
    before; bytes that are no Struct read as an empty object, which every reader skips.
    """
    encoded = item if isinstance(item, bytes) else item.SerializeToString()
    for decode in (_decode_tree, _decode_object, _decode_struct):
        try:
            return decode(encoded)
        except DecodeError:
            continue
    return lazy.Struct()


_decode_struct, _decode_list = lazy.Struct.FromString, lazy.ListValue.FromString
_decode_object = lazy.Object.FromString
_decode_tree, _decode_head = lazy.Tree.FromString, lazy.Head.FromString
_decode_replica = lazy.Replica.FromString


def _sub(fields: Fields, key: str) -> Fields:
    """The fields of a nested object (empty when absent)."""
    value = _value(fields, key, "struct_value")
    return _NO_FIELDS if value is None else _fields_of(value)


def _at(fields: Fields, key: str, read: Callable[[Fields], T]) -> T:
    """Read the object at ``key``; a problem inside it is named with ``key`` in its path."""
    inner = _sub(fields, key)
    try:
        return read(inner)
    except UnreadableError as exc:
        error = exc.within(key)
        raise error from None


def _text(fields: Fields, key: str) -> str:
    value = _value(fields, key, "string_value")
    return "" if value is None else str(value.string_value)


def _objects(fields: Fields, key: str) -> list[Fields]:
    """The objects of a nested list (empty when absent)."""
    value = _value(fields, key, "list_value")
    if value is None:
        return []
    out = []
    for i, item in enumerate(_values_of(value)):
        got = item.WhichOneof("kind")
        if got != "struct_value":
            error = UnreadableError(f"{key}[{i}]", f"is {_TYPES[got]}, not an object")
            raise error
        out.append(_fields_of(item))
    return out


def _whole(fields: Fields, key: str, default: int) -> int:
    """A count: a whole number of at least 0."""
    value = _value(fields, key, "number_value")
    if value is None:
        return default
    number = float(value.number_value)
    if not number.is_integer() or number < 0:
        error = UnreadableError(key, f"is {number:g}, not a whole number of at least 0")
        raise error
    return int(number)


def _label(labels_: Fields, key: str) -> str:
    value = labels_.get(key)
    if value is None:
        return ""
    got = value.WhichOneof("kind")
    if got != "string_value":
        error = UnreadableError(f'labels["{key}"]', f"is {_TYPES[got]}, not a string")
        raise error
    return str(value.string_value)


def _string_map(fields: Fields, key: str) -> dict[str, str]:
    """A map of strings (labels, matchLabels): every value must be a string."""
    found = _sub(fields, key)
    out = {}
    for name, value in found.items():
        got = value.WhichOneof("kind")
        if got != "string_value":
            error = UnreadableError(f'{key}["{name}"]', f"is {_TYPES[got]}, not a string")
            raise error
        out[str(name)] = str(value.string_value)
    return out


def is_ready(fields: Fields) -> bool:
    """Tell whether an object's status carries the condition Ready=True.

    Lenient: a status or conditions of the wrong type read as not Ready.
    """
    status = _lenient(fields.get("status", _EMPTY))
    for value in _values_of(status.get("conditions", _EMPTY)):
        condition = _lenient(value)
        kind, state = condition.get("type", _EMPTY), condition.get("status", _EMPTY)
        if kind.string_value == "Ready" and state.string_value == "True":
            return True
    return False


def _ready(status: Fields) -> bool:
    """Ready=True among the conditions, which must be objects with string fields."""
    for i, condition in enumerate(_objects(status, "conditions")):
        try:
            if _text(condition, "type") == "Ready" and _text(condition, "status") == "True":
                return True
        except UnreadableError as exc:
            error = exc.within(f"conditions[{i}]")
            raise error from None
    return False


# --- reading each distinct object once ------------------------------------------------------


def content_key(message: Any) -> bytes:
    """A message's identity by content: a digest of its deterministic encoding.

    Deterministic, so that the same content read from encodings whose map entries came
    in different orders (Go's protobuf writes a new order every time) has one key.
    """
    return hashlib.blake2b(message.SerializeToString(deterministic=True), digest_size=16).digest()


Item: TypeAlias = structpb.Struct | bytes  # a fleet object, decoded or still encoded (see .wire)


def decoded(item: Item) -> structpb.Struct:
    """A fleet object as a Struct; an encoding that does not decode reads as empty."""
    if not isinstance(item, bytes):
        return item
    try:
        return structpb.Struct.FromString(item)
    except DecodeError:
        return structpb.Struct()


def object_key(message: Item) -> tuple[str, str] | bytes:
    """An object's identity: its ``(uid, resourceVersion)``, else a digest of its content.

    The API server gives every object a uid and changes its resourceVersion on every
    write, status included, so the pair names one content exactly. It is read from the
    object's ``metadata`` alone, decoded or encoded: Crossplane encodes each request anew
    and Go's protobuf writes map entries in a different order every time, so the same
    object never arrives as the same bytes twice and a digest of them would never match.
    Objects without them (YAML read by ``modelplane plan``, tests) are keyed by their
    content.
    """
    key = identity(_head(message)) if isinstance(message, bytes) else identity(message)
    if key is not None:
        return key
    return hashlib.sha256(message).digest() if isinstance(message, bytes) else content_key(message)


def _head(encoded: bytes) -> Any:
    """An encoded object's first two levels (:data:`lazy.Head`); empty if they do not decode."""
    try:
        return _decode_head(encoded)
    except DecodeError:
        return lazy.Struct()


def identity(obj: Any) -> tuple[str, str] | None:
    """``(uid, resourceVersion)`` of an object (a Struct, or one read with .lazy), if both."""
    meta = obj.fields.get("metadata")
    if meta is None or meta.WhichOneof("kind") != "struct_value":
        return None
    inner = meta.struct_value
    try:
        found = _decode_struct(inner).fields if isinstance(inner, bytes) else inner.fields
    except DecodeError:
        return None
    uid, version = found.get("uid"), found.get("resourceVersion")
    if uid is None or version is None:
        return None
    key = (str(uid.string_value), str(version.string_value))  # "" unless strings
    return key if key[0] and key[1] else None


class _Memo(Generic[T]):
    """Remembers what a message reads as, by its identity, across calls.

    Every call of every ModelDeployment reads the same fleet, and most of it is
    unchanged since the last call. The result is a pure function of the content, which
    the key names, so a remembered one is exact.

    Memory is bounded by two generations: entries are remembered in the young one; when
    it is full it becomes the old one (and the old one is dropped), and an old entry used
    again moves back to the young one. So what a fleet no longer holds (earlier
    resourceVersions, deleted objects) goes after at most two generations, and what every
    call reads stays. A generation holds at least :data:`MEMO_LIMIT` entries and at least
    one call's worth (:meth:`expect`), so a fleet of any size is read once, not every call.
    """

    def __init__(self, read: Callable[[Any], T], key: Callable[[Any], Any] = content_key) -> None:
        self._read = read
        self._key = key
        self.limit = MEMO_LIMIT
        self._young: dict[Any, T] = {}
        self._old: dict[Any, T] = {}

    def expect(self, count: int) -> None:
        """Make room for a call that reads ``count`` messages."""
        self.limit = max(self.limit, count)

    def __call__(self, message: Any) -> T:
        key = self._key(message)
        found = self._young.get(key, _MISSING)
        if found is _MISSING:
            found = self._old.pop(key, _MISSING)
            if found is _MISSING:
                found = self._read(message)
            if len(self._young) >= self.limit:
                self._old, self._young = self._young, {}
            self._young[key] = cast("T", found)
        return cast("T", found)

    def __len__(self) -> int:
        """How many entries are remembered, in both generations."""
        return len(self._young) + len(self._old)

    def clear(self) -> None:
        """Forget everything (tests and benchmarks measure cold calls with it)."""
        self._young.clear()
        self._old.clear()


# --- InferenceClusters ----------------------------------------------------------------------


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
        kind = value.WhichOneof("kind")
        if kind != "struct_value":
            error = UnreadableError(f"devices[{i}]", f"is {_TYPES[kind]}, not an object")
            raise error
        try:
            entry = _pool_device(_fields_of(value))
        except UnreadableError as exc:
            error = exc.within(f"devices[{i}]")
            raise error from None
        if entry is not None:
            entries.append(entry)
    return tuple(entries)


# Pools of one InferenceClass publish the same devices: one tuple serves them all, which
# also lets the scheduler fit each (member, device list) once.
_pool_devices: _Memo[tuple[PoolDevice, ...]] = _Memo(_devices)


def _pool_device(fields: Fields) -> PoolDevice | None:
    name, driver = _text(fields, "name"), _text(fields, "driver")
    attributes = {}
    for key, value in _sub(fields, "attributes").items():
        kind = value.WhichOneof("kind")
        if kind != "struct_value":
            error = UnreadableError(f'attributes["{key}"]', f"is {_TYPES[kind]}, not an object")
            raise error
        try:
            attribute = _attribute(_fields_of(value))
        except UnreadableError as exc:
            error = exc.within(f'attributes["{key}"]')
            raise error from None
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
    if plain is not _MISSING:
        return cast("FleetCluster", plain), []
    return _careful_cluster(fields)


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
        plain = _plain_pools(found.list_value.values)
        return _pools(status) if plain is _MISSING else cast("tuple[Pool, ...]", plain)
    return _encoded_pools(found.list_value)


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
        try:
            read = _pool_devices(devices)
            observed = _observed(pool) if "observed" in pool else None
        except UnreadableError:
            return _MISSING  # _pools names it, with the pool's place
        pools.append(Pool(str(name.string_value), int(count), read, shape, observed))
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
        except UnreadableError as exc:
            error = exc.within(f"gpuPools[{i}]")
            raise error from None
        if name:
            pools.append(Pool(name, nodes, devices, capacity, observed))
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
        return ObservedCapacity(_whole(fields, "nodes", 0))
    except UnreadableError as exc:
        error = exc.within("observed")
        raise error from None


def _capacity(text: str) -> Capacity:
    """A pool's ``capacity``: Nodes when unset (whole nodes per pod), or Devices (shared)."""
    if text in ("", "Nodes"):
        return "Nodes"
    if text == "Devices":
        return "Devices"
    error = UnreadableError("capacity", f"is {text!r}, not one of {', '.join(CAPACITIES)}")
    raise error


_encoded_pools: _Memo[tuple[Pool, ...] | None] = _Memo(_pools_encoded, bytes)


# --- ModelReplicas --------------------------------------------------------------------------


def read_replica(obj: structpb.Struct) -> ExistingReplica | None:
    """Read one ModelReplica: whose it is, where it runs, what each engine charges.

    This runs for every replica of the fleet on every call, so it reads each field once.

    Raises:
        UnreadableError: a field it reads is of the wrong type (the first one found).
    """
    plain = _plain_replica(obj.fields)
    if plain is not _MISSING:
        return cast("ExistingReplica | None", plain)
    return _careful_replica(obj.fields)


def _careful_replica(fields: Fields) -> ExistingReplica | None:
    """:func:`read_replica` for any replica: every field checked, the first problem named."""
    meta = _sub(fields, "metadata")
    try:
        found = _sub(meta, "labels")
        namespace, name = _text(meta, "namespace"), _text(meta, "name")
        cluster_label, index = _label(found, CLUSTER_LABEL), _label(found, INDEX_LABEL)
        deployment = _label(found, DEPLOYMENT_LABEL)
    except UnreadableError as exc:
        error = exc.within("metadata")
        raise error from None
    spec = _sub(fields, "spec")
    try:
        cluster = _text(spec, "clusterName") or cluster_label
        engines = spec.get("engines")
        if engines is None:
            pinned: tuple[PinnedEngine, ...] = ()
        elif isinstance(engines.list_value, bytes) and engines.WhichOneof("kind") == "list_value":
            pinned = _encoded_engines(engines.list_value)
        else:
            pinned = _engines(spec)
    except UnreadableError as exc:
        error = exc.within("spec")
        raise error from None
    if not cluster:
        return None
    return ExistingReplica(
        namespace=namespace,
        deployment=deployment,
        cluster=cluster,
        index=_index(index),
        engines=pinned,
        name=name,
    )


_STRING, _OBJECT, _LIST = "string_value", "struct_value", "list_value"


# What the short path reads of a ModelReplica, in one place: each (key in metadata,
# labels or spec) must be a non-empty string for it to take the replica. (A field read
# for admission order, say, goes here and into ExistingReplica.)
_REPLICA_META = ("namespace", "name")
_REPLICA_LABELS = (DEPLOYMENT_LABEL, CLUSTER_LABEL, INDEX_LABEL)


def _plain_replica(fields: Fields, engines_of: Callable[[Any], Any] | None = None) -> Any:
    """:func:`read_replica` for a replica as the API server writes them, in fewer steps.

    A fleet of 10,000 replicas is read in full whenever the function has not seen it
    (a restart, a new pod, every object that changed), so this path reads a replica
    decoded in one call (:data:`lazy.Tree`) with as few Python-level steps as it can: a
    string read from a Value of another kind is empty, so a non-empty one is a string
    and needs no kind check. Anything else (an absent or empty field, a null, a wrong
    type, an object decoded otherwise) returns ``_MISSING`` and the careful reader reads
    the replica, naming what is wrong; what this returns, the careful reader returns too.
    """
    meta, spec = fields.get("metadata"), fields.get("spec")
    if meta is None or spec is None:
        return _MISSING
    meta, spec = meta.struct_value, spec.struct_value
    if isinstance(meta, bytes) or isinstance(spec, bytes):
        return _MISSING  # not decoded as a tree: the careful reader
    meta, spec = meta.fields, spec.fields
    found = meta.get("labels")
    cluster, engines = spec.get("clusterName"), spec.get("engines")
    if found is None or cluster is None or engines is None:
        return _MISSING
    labels_ = found.struct_value.fields
    texts = [_plain_text(meta, key) for key in _REPLICA_META]
    texts += [_plain_text(labels_, key) for key in _REPLICA_LABELS]
    where = cluster.string_value
    if not where or not all(texts):
        return _MISSING
    if engines_of is None:
        found = engines.list_value
        if isinstance(found, bytes):  # decoded a few levels deep (lazy.Object)
            if engines.WhichOneof("kind") != _LIST:
                return _MISSING
            try:
                pinned = _encoded_engines(found)
            except UnreadableError as exc:  # as the careful reader names it
                error = exc.within("spec")
                raise error from None
            return _plain_replica_tail(texts, where, pinned)
        pinned = _plain_engine_values(found.values)
    else:
        pinned = engines_of(engines)
    return _plain_replica_tail(texts, where, pinned)


def _plain_replica_tail(texts: list[str], where: str, pinned: Any) -> Any:
    if pinned is _MISSING:
        return _MISSING
    namespace, name, deployment, _, index = texts
    return ExistingReplica(
        namespace=namespace,
        deployment=deployment,
        cluster=str(where),
        index=_index(index),
        engines=pinned,
        name=name,
    )


def _shared_replica(item: Item) -> Any:
    """:func:`_plain_replica` on a replica decoded as :data:`lazy.Replica`, whose engines
    are read once per content (``_MISSING`` when the short path does not take it).

    Every replica of a deployment on one pool has the same engines, but Go's protobuf
    never encodes them the same twice. Decoded only as deep as the reader reads, with the
    rest dropped, their deterministic encoding names what the reader reads of them: a
    key that equal engines share, however they were encoded.
    """
    encoded = item if isinstance(item, bytes) else item.SerializeToString()
    try:
        obj = _decode_replica(encoded)
    except DecodeError:
        return _MISSING
    found = _plain_replica(obj.fields, _engines_by_content)
    if isinstance(found, ExistingReplica):  # what admission orders by, as the careful path
        return _with_admission(found, obj.fields)
    return found


def _engines_by_content(engines: Any) -> Any:
    """A replica's engines (a Value of :data:`lazy.Replica`), read once per content."""
    engines.DiscardUnknownFields()
    return _engines_read(engines.SerializeToString(deterministic=True))


def _engines_from_key(key: bytes) -> Any:
    return _plain_engine_values(lazy.ReplicaSpecValue.FromString(key).list_value.values)


# What a replica's engines read as, by their content as :data:`lazy.Replica` decodes them
# (``_MISSING`` when the careful reader must read them).
_engines_read: _Memo[Any] = _Memo(_engines_from_key, bytes)


def _plain_text(fields: Fields, key: str) -> str:
    """A string field as the short path reads it: empty when absent or no string."""
    value = fields.get(key)
    return "" if value is None else str(value.string_value)


def _plain_engine_values(engines: Any) -> Any:
    """:func:`_plain_engines` on engines decoded as a tree; ``_MISSING`` for the careful
    reader (which also reads an empty list: it may be no list at all)."""
    if not len(engines):
        return _MISSING
    pinned = []
    for engine in engines:
        fields = engine.struct_value.fields  # empty unless an object
        members = fields.get("members")
        name = fields.get("name")
        copies = _plain_copies(fields)
        if members is None or copies is None:
            return _MISSING
        if name is not None and not name.string_value and name.WhichOneof("kind") != _STRING:
            return _MISSING
        values = members.list_value.values
        if not len(values):
            return _MISSING
        pool, pods = "", 0
        demands = []
        for member in values:
            found = member.struct_value.fields
            if not len(found):
                return _MISSING
            on, role, requests = (found.get(k) for k in ("nodePoolName", "role", "deviceRequests"))
            if on is not None:
                text = on.string_value
                if not text and on.WhichOneof("kind") != _STRING:
                    return _MISSING
                pool = pool or str(text)
            if requests is None:
                continue
            claims = requests.list_value.values
            if not len(claims):
                if requests.WhichOneof("kind") in (_LIST, "null_value"):
                    continue
                return _MISSING
            if role is not None:
                kind = role.string_value
                if kind == "Worker" or (not kind and role.WhichOneof("kind") != _STRING):
                    return _MISSING  # a worker's count of nodes: the careful reader
            pods += 1
            demands.append(_claims(claims))
        shared = sharing.pods((d, copies) for d in demands)
        text = str(name.string_value) if name is not None else ""
        pinned.append(PinnedEngine(text, pool, copies * pods, shared))
    return tuple(pinned)


def _index(text: str) -> int:
    """A replica index label's value; -1 when it is no index."""
    if text.isascii() and text.isdigit() and len(text) <= _INDEX_DIGITS:
        return int(text)
    return -1


def _engines_encoded(encoded: bytes) -> tuple[PinnedEngine, ...]:
    try:
        plain = _plain_engines(encoded)
    except DecodeError:
        plain = _MISSING  # the careful reader says where
    if plain is not _MISSING:
        return cast("tuple[PinnedEngine, ...]", plain)
    return _careful_engines(encoded)


def _careful_engines(encoded: bytes) -> tuple[PinnedEngine, ...]:
    spec = lazy.Struct()
    spec.fields["engines"].list_value = encoded
    return _engines(spec.fields)


# A replica's engines by their encoding: every replica of a deployment on one pool has the
# same, so a fleet's replicas share a few hundred. (What does not read raises: not kept.)
_encoded_engines: _Memo[tuple[PinnedEngine, ...]] = _Memo(_engines_encoded, bytes)


def _plain_engines(encoded: bytes) -> Any:
    """:func:`_engines` for engines as the API server writes them, in fewer steps.

    A fleet the function has not seen brings some engines it has not read (every
    deployment's pod template differs), each read in full. Every field read must be
    of its type, and no member a Worker; otherwise it returns ``_MISSING`` and the
    careful reader reads them, naming what is wrong. What it returns, it returns as
    the careful reader does.
    """
    pinned = []
    for engine in _decode_list(encoded).values:
        if engine.WhichOneof("kind") != _OBJECT:
            return _MISSING
        fields = _fields_of(engine)
        name, members, copies = fields.get("name"), fields.get("members"), _plain_copies(fields)
        if members is None or members.WhichOneof("kind") != _LIST or copies is None:
            return _MISSING
        if name is not None and name.WhichOneof("kind") != _STRING:
            return _MISSING
        pool, pods = "", 0
        demands = []
        for member in _values_of(members):
            if member.WhichOneof("kind") != _OBJECT:
                return _MISSING
            found = _fields_of(member)
            on, role, requests = (found.get(k) for k in ("nodePoolName", "role", "deviceRequests"))
            if on is not None and on.WhichOneof("kind") != _STRING:
                return _MISSING
            pool = pool or (str(on.string_value) if on is not None else "")
            if requests is None:
                continue
            if requests.WhichOneof("kind") != _LIST:
                return _MISSING
            values = _values_of(requests)
            if not len(values):
                continue
            if role is not None and (
                role.WhichOneof("kind") != _STRING or role.string_value == "Worker"
            ):
                return _MISSING  # a worker's count of nodes: the careful reader
            pods += 1
            demands.append(_claims(values))
        shared = sharing.pods((d, copies) for d in demands)
        pinned.append(
            PinnedEngine(str(name.string_value) if name else "", pool, copies * pods, shared)
        )
    return tuple(pinned)


def _plain_copies(engine: Fields) -> int | None:
    """An engine's copies as :func:`_pinned` reads them; None when they would not read."""
    copies = engine.get("copies")
    if copies is None:
        return 1
    if copies.WhichOneof("kind") != "number_value":
        return None
    number = float(copies.number_value)
    return max(int(number), 1) if number.is_integer() and number >= 0 else None


def _engines(spec: Fields) -> tuple[PinnedEngine, ...]:
    pinned = []
    for i, engine in enumerate(_objects(spec, "engines")):
        try:
            pinned.append(_pinned(engine))
        except UnreadableError as exc:
            error = exc.within(f"engines[{i}]")
            raise error from None
    return tuple(pinned)


def _pinned(engine: Fields) -> PinnedEngine:
    """An engine's pool and node cost: pods x copies of the members that claim devices.

    Hot (every replica of the fleet): only the fields that count are read, and checked.
    """
    pool, pods = "", 0
    claimed: list[tuple[Demand, int]] = []
    for i, member in enumerate(_objects(engine, "members")):
        try:
            pool = pool or _text(member, "nodePoolName")
            requests = _value(member, "deviceRequests", "list_value")
            if requests is None or not len(_values_of(requests)):
                continue
            demand = _claims(_values_of(requests))
            if _text(member, "role") != "Worker":
                pods += 1
                claimed.append((demand, 1))
                continue
            worker = _sub(member, "worker")
            try:
                workers = max(_whole(worker, "nodes", 1), 1)
            except UnreadableError as exc:
                error = exc.within("worker")
                raise error from None
            pods += workers
            claimed.append((demand, workers))
        except UnreadableError as exc:
            error = exc.within(f"members[{i}]")
            raise error from None
    copies = max(_whole(engine, "copies", 1), 1)
    if any(_text(m, "role") == "Worker" for m in _objects(engine, "members")):
        claimed = [(sharing.gang(d), n) for d, n in claimed]  # a node of its own each
    shared = sharing.pods((d, copies * n) for d, n in claimed)
    return PinnedEngine(_text(engine, "name"), pool, copies * pods, shared)


def _claims(requests: Any) -> Demand:
    """What one pod of a member claims: its deviceRequests' classes and counts.

    Lenient, as nothing but a pool whose pods share nodes reads them: a request that is
    no object claims nothing, a count that is no whole number of at least 1 reads as 1.
    """
    found = []
    for value in requests:
        if value.WhichOneof("kind") != "struct_value":
            continue
        request = _fields_of(value)
        device_class = request.get("deviceClassName", _EMPTY)
        count = request.get("count", _EMPTY)
        number = count.number_value if count.WhichOneof("kind") == "number_value" else 1
        whole = int(number) if float(number).is_integer() and number >= 1 else 1
        found.append((str(device_class.string_value), whole))
    return sharing.demand(found)


# --- reading each object once, and what cannot be read -------------------------------------


@dataclass(frozen=True)
class Skipped:
    """A fleet object that cannot be read: who it is, as far as that reads, and why.

    Attributes:
        what: ``Kind namespace/name`` (or ``Kind name``).
        problem: The field and what is wrong with it.
        replica: For a ModelReplica, what of it reads (no engines): whose it is and where.
    """

    what: str
    problem: str
    replica: ExistingReplica | None = None


def _describe(kind: str, fields: Fields) -> str:
    meta = _lenient(fields.get("metadata", _EMPTY))
    name = str(meta.get("name", _EMPTY).string_value) or "(unnamed)"
    namespace = str(meta.get("namespace", _EMPTY).string_value)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


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


def _replica_or_skipped(item: Item) -> ExistingReplica | Skipped | None:
    """Read a replica: by the short path when it takes it, else decoded for the careful one."""
    fast = _shared_replica(item)
    if fast is not _MISSING:
        return cast("ExistingReplica | None", fast)
    obj = _encoded(item)
    try:
        found = read_replica(obj)
        return None if found is None else _with_admission(found, obj.fields)
    except UnreadableError as exc:
        problem = str(exc)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError, DecodeError):
        problem = "cannot be read"
    fields = obj.fields
    meta = _lenient(fields.get("metadata", _EMPTY))
    found = _lenient(meta.get("labels", _EMPTY))
    spec = _lenient(fields.get("spec", _EMPTY))
    cluster = spec.get("clusterName", _EMPTY).string_value
    identity = ExistingReplica(
        namespace=str(meta.get("namespace", _EMPTY).string_value),
        deployment=str(found.get(DEPLOYMENT_LABEL, _EMPTY).string_value),
        cluster=str(cluster or found.get(CLUSTER_LABEL, _EMPTY).string_value),
        index=_index(str(found.get(INDEX_LABEL, _EMPTY).string_value)),
        name=str(meta.get("name", _EMPTY).string_value),
    )
    return Skipped(_describe("ModelReplica", fields), problem, identity)


UNSCHEDULABLE = "Unschedulable"
"""The ``ModelReady`` reason of a ModelReplica whose pods the workload cluster cannot
schedule. (Crossplane keeps a composite's ``Ready`` to itself: a function cannot give it
a reason, so the replica says it on its own condition.)"""
MODEL_READY = "ModelReady"


def _with_admission(replica: ExistingReplica, fields: Fields) -> ExistingReplica:
    """Add what admission orders by: creation time, readiness, and whether it is stuck.

    Lenient: a field of the wrong type reads as unknown (""), never as a problem, since
    where the replica runs and what it charges are already read.
    """
    meta = _lenient(fields.get("metadata", _EMPTY))
    created = str(meta.get("creationTimestamp", _EMPTY).string_value)
    status = _lenient(fields.get("status", _EMPTY))
    ready, stuck, since = False, "", ""
    for value in _values_of(status.get("conditions", _EMPTY)):
        condition = _lenient(value)
        typ = condition.get("type", _EMPTY).string_value
        if typ == "Ready":
            ready = condition.get("status", _EMPTY).string_value == "True"
        elif (
            typ == MODEL_READY
            and condition.get("reason", _EMPTY).string_value == UNSCHEDULABLE
            and condition.get("status", _EMPTY).string_value == "False"
        ):
            stuck = str(condition.get("message", _EMPTY).string_value) or UNSCHEDULABLE
            since = str(condition.get("lastTransitionTime", _EMPTY).string_value)
    if not (created or ready or stuck):
        return replica
    return replace(replica, created=created, ready=ready, stuck=stuck, stuck_since=since)


# Fleet objects are keyed by identity (object_key): one seen before costs the decode of
# its metadata alone (lazy.Head), however Go's protobuf ordered its maps this time.
_clusters: _Memo[tuple[FleetCluster | None, Skipped | None]] = _Memo(
    _cluster_or_skipped, object_key
)
_replicas: _Memo[ExistingReplica | Skipped | None] = _Memo(_replica_or_skipped, object_key)


def forget() -> None:
    """Forget every fleet object read so far, so the next call reads all of it afresh."""
    for memo in (
        _pool_devices,
        _encoded_pools,
        _encoded_engines,
        _engines_read,
        _clusters,
        _replicas,
    ):
        memo.clear()


@dataclass
class FleetState:
    """The fleet as read: the scheduler's view plus facts about the deployment's replicas.

    Attributes:
        fleet: Every cluster and replica, as the scheduler sees them.
        clusters: The clusters by name.
        own: The deployment's existing ModelReplicas by (cluster, index), as read.
        ready: Names of the deployment's replicas that report Ready.
        skipped: Each object that could not be read (wholly or in part), and how it
            was read instead; for :func:`warnings`.
    """

    fleet: Fleet
    clusters: dict[str, FleetCluster]
    own: dict[tuple[str, int], structpb.Struct] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)


def read_fleet(
    clusters: Iterable[Item],
    replicas: Iterable[Item],
    deployment: Deployment | None = None,
) -> FleetState:
    """Read the fleet's InferenceClusters and ModelReplicas.

    A replica of ``deployment`` without a readable index still charges its pools, but
    the deployment does not claim it. What cannot be read is handled as the module says
    and listed in :attr:`FleetState.skipped`; nothing here raises.
    """
    clusters = clusters if isinstance(clusters, Sequence) else list(clusters)
    replicas = replicas if isinstance(replicas, Sequence) else list(replicas)
    _clusters.expect(len(clusters))
    _replicas.expect(len(replicas))
    by_name: dict[str, FleetCluster] = {}
    skipped: list[str] = []
    complete = True
    for obj in clusters:
        cluster, problem = _clusters(obj)
        complete &= cluster is not None  # a cluster read without a name may still exist
        if problem is not None:
            kept = "it keeps what runs on it and gets nothing new" if cluster else "skipped"
            skipped.append(f"{problem.what}: {problem.problem} ({kept})")
        if cluster is not None:
            by_name.setdefault(cluster.name, cluster)
    existing: list[ExistingReplica] = []
    state = FleetState(Fleet(), by_name, skipped=skipped)
    for obj in replicas:
        read = _replicas(obj)
        if isinstance(read, Skipped):
            replica = read.replica
            if deployment is None or replica is None or not replica.cluster:
                skipped.append(f"{read.what}: {read.problem} (skipped)")
                continue
            if not _is_own(replica, deployment):
                skipped.append(f"{read.what}: {read.problem} (skipped; its pools are not charged)")
                continue
            skipped.append(f"{read.what}: {read.problem} (its engines are scheduled again)")
            read = replica
        if read is None:
            continue
        replica = read
        if deployment is not None and _is_own(replica, deployment):
            if replica.index < 0:
                replica = replace(replica, namespace="", deployment="", index=0)
            else:
                own = decoded(obj)  # the deployment's own few, composed from as they are
                state.own.setdefault((replica.cluster, replica.index), own)
                if is_ready(own.fields):
                    state.ready.add(replica.name)
        existing.append(replica)
    state.fleet = Fleet(tuple(by_name.values()), tuple(existing), complete)
    return state


def _is_own(replica: ExistingReplica, deployment: Deployment) -> bool:
    """A replica is the deployment's when it is in its namespace and carries its label.

    The label holds the deployment's name as a label value (:func:`naming.label_value`),
    which is the name itself up to 63 characters.
    """
    return replica.namespace == deployment.namespace and replica.deployment == naming.label_value(
        deployment.name
    )


# --- the ModelCache -------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheState:
    """The referenced ModelCache: none referenced, unknown, missing, or found.

    Attributes:
        problem: Why the cache that was found could not be read (it then reads as
            ``unknown``: nothing new is placed, nothing placed moves).
    """

    name: str = ""
    status: str = "none"  # none | unknown | missing | found
    footprint: CacheFootprint | None = None
    problem: str = ""


def read_cache(name: str | None, answered: bool, found: list[structpb.Struct]) -> CacheState:
    """Read the referenced ModelCache into its footprint.

    The footprint is the cache's ``clusterSelector`` and, once its status lists where it
    stages, those clusters (except where staging failed). A cache that cannot be read
    reads as not read yet, with the problem said.

    Args:
        name: The referenced cache's name; None when the deployment references none.
        answered: Whether Crossplane has answered the cache requirement yet.
        found: What it answered: the cache, or nothing when it does not exist.
    """
    if name is None:
        return CacheState()
    if not answered:
        return CacheState(name, "unknown", CacheFootprint(name, resolved=False))
    if not found:
        return CacheState(name, "missing", CacheFootprint(name, resolved=False))
    fields = found[0].fields
    try:
        match = _at(fields, "spec", lambda s: _at(s, "clusterSelector", _match_labels))
        staged = _at(fields, "status", _staged)
    except UnreadableError as exc:
        problem = f"{_describe('ModelCache', fields)}: {exc} (read as not resolved)"
        return CacheState(name, "unknown", CacheFootprint(name, resolved=False), problem)
    return CacheState(name, "found", CacheFootprint(name, True, labels(match) or None, staged))


def _match_labels(selector: Fields) -> dict[str, str]:
    return _string_map(selector, "matchLabels")


def _staged(status: Fields) -> frozenset[str] | None:
    """The clusters the cache stages to (those not Failed); None until it lists any."""
    staged = []
    for i, entry in enumerate(_objects(status, "clusters")):
        try:
            staged.append((_text(entry, "name"), _text(entry, "phase")))
        except UnreadableError as exc:
            error = exc.within(f"clusters[{i}]")
            raise error from None
    if not staged:
        return None
    return frozenset(name for name, phase in staged if phase != "Failed")


# --- the Warning ----------------------------------------------------------------------------


def warnings(state: FleetState, cache: CacheState | None = None) -> list[str]:
    """The Warning to report for what could not be read: one message, or none.

    It names the first :data:`WARNING_NAMES` objects, each with its bad field, and
    counts the rest, so a fleet of bad objects does not flood the composite's events.
    """
    problems = [*state.skipped, *([cache.problem] if cache is not None and cache.problem else [])]
    if not problems:
        return []
    named = "; ".join(problems[:WARNING_NAMES])
    more = len(problems) - WARNING_NAMES
    rest = f"; and {more} more" if more > 0 else ""
    return [f"cannot read {len(problems)} fleet object(s): {named}{rest}"]
