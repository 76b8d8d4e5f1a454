"""Read the fleet (InferenceClusters, ModelReplicas, the ModelCache) into scheduler values.

A ModelDeployment's request carries every ModelReplica of the fleet: 10,000 of them on
a large fleet. Converting each whole Struct to a dict would cost more than scheduling,
so these readers take only the fields the scheduler needs, straight from the Struct's
``fields`` maps (C-level access). Plain dicts (``modelplane plan`` reads YAML) go
through :func:`as_struct` first, so there is one reader for both.

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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from crossplane.function import resource
from google.protobuf import json_format
from google.protobuf import struct_pb2 as structpb

from modelplane.domain import naming, semver
from modelplane.domain import quantity as qty
from modelplane.domain.dra.device import Attribute, Device
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Claim,
    Deployment,
    ExistingReplica,
    Fleet,
    FleetCluster,
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
# Enough for a 10,000 replica fleet and its clusters, several times over; beyond it the
# memo starts again rather than grow without bound.
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


def _sub(fields: Fields, key: str) -> Fields:
    """The fields of a nested object (empty when absent)."""
    value = _value(fields, key, "struct_value")
    return _NO_FIELDS if value is None else value.struct_value.fields


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
    for i, item in enumerate(value.list_value.values):
        got = item.WhichOneof("kind")
        if got != "struct_value":
            error = UnreadableError(f"{key}[{i}]", f"is {_TYPES[got]}, not an object")
            raise error
        out.append(item.struct_value.fields)
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
    status = fields.get("status", _EMPTY).struct_value.fields
    for value in status.get("conditions", _EMPTY).list_value.values:
        condition = value.struct_value.fields
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


class _Memo(Generic[T]):
    """Remembers what a message reads as, by a digest of its bytes, across calls.

    Every call of every ModelDeployment reads the same fleet, and most of it is
    unchanged since the last call: hashing a replica's bytes costs a third of reading
    it. The result is a pure function of the bytes, so a remembered one is exact.
    """

    def __init__(self, read: Callable[[Any], T], limit: int = MEMO_LIMIT) -> None:
        self._read = read
        self._limit = limit
        self._seen: dict[bytes, T] = {}

    def __call__(self, message: Any) -> T:
        key = hashlib.blake2b(message.SerializeToString(), digest_size=16).digest()
        found = self._seen.get(key, _MISSING)
        if found is _MISSING:
            if len(self._seen) >= self._limit:
                self._seen.clear()
            found = self._seen[key] = self._read(message)
        return cast("T", found)

    def clear(self) -> None:
        """Forget everything (tests and benchmarks measure cold calls with it)."""
        self._seen.clear()


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
    for i, value in enumerate(raw.list_value.values):
        kind = value.WhichOneof("kind")
        if kind != "struct_value":
            error = UnreadableError(f"devices[{i}]", f"is {_TYPES[kind]}, not an object")
            raise error
        try:
            entry = _pool_device(value.struct_value.fields)
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
            attribute = _attribute(value.struct_value.fields)
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
        text = _text(value.struct_value.fields, "value")
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
    pools = attempt(lambda: _at(fields, "status", _pools), None)
    if found is None:  # keep the labels that are strings
        meta = fields.get("metadata", _EMPTY).struct_value.fields
        raw = meta.get("labels", _EMPTY).struct_value.fields
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
        except UnreadableError as exc:
            error = exc.within(f"gpuPools[{i}]")
            raise error from None
        if name:
            pools.append(Pool(name, nodes, devices))
    return tuple(pools)


# --- ModelReplicas --------------------------------------------------------------------------


def read_replica(obj: structpb.Struct) -> ExistingReplica | None:
    """Read one ModelReplica: whose it is, where it runs, what each engine charges.

    This runs for every replica of the fleet on every call, so it reads each field once.

    Raises:
        UnreadableError: a field it reads is of the wrong type (the first one found).
    """
    fields = obj.fields
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
        pinned = () if engines is None else _engines(spec)
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


def _index(text: str) -> int:
    """A replica index label's value; -1 when it is no index."""
    if text.isascii() and text.isdigit() and len(text) <= _INDEX_DIGITS:
        return int(text)
    return -1


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
    for i, member in enumerate(_objects(engine, "members")):
        try:
            pool = pool or _text(member, "nodePoolName")
            requests = _value(member, "deviceRequests", "list_value")
            if requests is None or not len(requests.list_value.values):
                continue
            if _text(member, "role") != "Worker":
                pods += 1
                continue
            worker = _sub(member, "worker")
            try:
                pods += max(_whole(worker, "nodes", 1), 1)
            except UnreadableError as exc:
                error = exc.within("worker")
                raise error from None
        except UnreadableError as exc:
            error = exc.within(f"members[{i}]")
            raise error from None
    copies = max(_whole(engine, "copies", 1), 1)
    return PinnedEngine(_text(engine, "name"), pool, copies * pods)


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
    meta = fields.get("metadata", _EMPTY).struct_value.fields
    name = str(meta.get("name", _EMPTY).string_value) or "(unnamed)"
    namespace = str(meta.get("namespace", _EMPTY).string_value)
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def _cluster_or_skipped(obj: structpb.Struct) -> tuple[FleetCluster | None, Skipped | None]:
    try:
        cluster, problems = _read_cluster(obj)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError):
        return None, Skipped(_describe("InferenceCluster", obj.fields), "cannot be read")
    if not problems:
        return cluster, None
    return cluster, Skipped(_describe("InferenceCluster", obj.fields), str(problems[0]))


def _replica_or_skipped(obj: structpb.Struct) -> ExistingReplica | Skipped | None:
    try:
        return read_replica(obj)
    except UnreadableError as exc:
        problem = str(exc)
    except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError):
        problem = "cannot be read"
    fields = obj.fields
    meta = fields.get("metadata", _EMPTY).struct_value.fields
    found = meta.get("labels", _EMPTY).struct_value.fields
    spec = fields.get("spec", _EMPTY).struct_value.fields
    cluster = spec.get("clusterName", _EMPTY).string_value
    identity = ExistingReplica(
        namespace=str(meta.get("namespace", _EMPTY).string_value),
        deployment=str(found.get(DEPLOYMENT_LABEL, _EMPTY).string_value),
        cluster=str(cluster or found.get(CLUSTER_LABEL, _EMPTY).string_value),
        index=_index(str(found.get(INDEX_LABEL, _EMPTY).string_value)),
        name=str(meta.get("name", _EMPTY).string_value),
    )
    return Skipped(_describe("ModelReplica", fields), problem, identity)


_clusters: _Memo[tuple[FleetCluster | None, Skipped | None]] = _Memo(_cluster_or_skipped)
_replicas: _Memo[ExistingReplica | Skipped | None] = _Memo(_replica_or_skipped)


def forget() -> None:
    """Forget every fleet object read so far, so the next call reads all of it afresh."""
    for memo in (_pool_devices, _clusters, _replicas):
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
    clusters: Iterable[structpb.Struct],
    replicas: Iterable[structpb.Struct],
    deployment: Deployment | None = None,
) -> FleetState:
    """Read the fleet's InferenceClusters and ModelReplicas.

    A replica of ``deployment`` without a readable index still charges its pools, but
    the deployment does not claim it. What cannot be read is handled as the module says
    and listed in :attr:`FleetState.skipped`; nothing here raises.
    """
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
                replica = ExistingReplica("", "", replica.cluster, 0, replica.engines, replica.name)
            else:
                state.own.setdefault((replica.cluster, replica.index), obj)
                if is_ready(obj.fields):
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
