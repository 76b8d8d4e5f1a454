"""Read the fleet (InferenceClusters, ModelReplicas, the ModelCache) into scheduler values.

A ModelDeployment's request carries every ModelReplica of the fleet: 10,000 of them on
a large fleet. Converting each whole Struct to a dict would cost more than scheduling,
so these readers take only the fields the scheduler needs, straight from the Struct's
``fields`` maps (C-level access; a missing key or a value of the wrong type reads as
empty). Plain dicts (``modelplane plan`` reads YAML) go through :func:`as_struct` first,
so there is one reader for both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

from crossplane.function import resource
from google.protobuf import struct_pb2 as structpb

from modelplane.domain.dra.device import Attribute, Device
from modelplane.domain.scheduling.fleet import (
    CacheFootprint,
    Claim,
    Cluster,
    Deployment,
    ExistingReplica,
    Fleet,
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
_MISSING = object()
T = TypeVar("T")
# Enough for a 10,000 replica fleet and its clusters, several times over; beyond it the
# memo starts again rather than grow without bound.
MEMO_LIMIT = 65_536
_EFFECTS: dict[str, Effect] = {"NoSchedule": NO_SCHEDULE, "NoExecute": NO_EXECUTE}
Fields = Any  # a Struct's ``fields`` map (protobuf's MessageMap of str -> Value)


def as_struct(obj: structpb.Struct | Mapping[str, Any]) -> structpb.Struct:
    """Return a Struct for a Struct or a plain dict."""
    if isinstance(obj, structpb.Struct):
        return obj
    return resource.dict_to_struct(dict(obj))


def _sub(fields: Fields, key: str) -> Fields:
    """The fields of a nested object (empty when missing or not an object)."""
    return fields.get(key, _EMPTY).struct_value.fields


def _text(fields: Fields, key: str) -> str:
    return str(fields.get(key, _EMPTY).string_value)


def _items(fields: Fields, key: str) -> Any:
    """The Values of a nested list (empty when missing or not a list)."""
    return fields.get(key, _EMPTY).list_value.values


def _number(fields: Fields, key: str, default: int) -> int:
    value = fields.get(key)
    if value is None or value.WhichOneof("kind") != "number_value":
        return default
    return int(value.number_value)


def _string_map(fields: Fields) -> dict[str, str]:
    return {
        str(k): str(v.string_value)
        for k, v in fields.items()
        if v.WhichOneof("kind") == "string_value"
    }


def is_ready(fields: Fields) -> bool:
    """Tell whether an object's status carries the condition Ready=True."""
    for value in _items(_sub(fields, "status"), "conditions"):
        condition = value.struct_value.fields
        if _text(condition, "type") == "Ready" and _text(condition, "status") == "True":
            return True
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
    entries = (_pool_device(v.struct_value.fields) for v in raw.list_value.values)
    return tuple(d for d in entries if d is not None)


# Pools of one InferenceClass publish the same devices: one tuple serves them all, which
# also lets the scheduler fit each (member, device list) once.
_pool_devices: _Memo[tuple[PoolDevice, ...]] = _Memo(_devices)


def _pool_device(fields: Fields) -> PoolDevice | None:
    name, driver = _text(fields, "name"), _text(fields, "driver")
    if not name or not driver:
        return None
    attributes = {
        str(key): attribute
        for key, value in _sub(fields, "attributes").items()
        if (attribute := _attribute(value.struct_value.fields)) is not None
    }
    capacity = {
        str(key): quantity
        for key, value in _sub(fields, "capacity").items()
        if (quantity := _text(value.struct_value.fields, "value"))
    }
    claim: Claim = "Synthetic" if _text(fields, "claim") == "Synthetic" else "DRA"
    return PoolDevice(
        name=name,
        device=Device.build(driver, attributes, capacity),
        count=_number(fields, "count", 0),
        claim=claim,
        device_class_name=_text(fields, "deviceClassName"),
    )


def _attribute(fields: Fields) -> Attribute | None:
    """One typed attribute: exactly one of string, bool, int or version."""
    for key, value in fields.items():
        kind = value.WhichOneof("kind")
        if key in ("string", "version") and kind == "string_value":
            return Attribute(key, str(value.string_value))
        if key == "bool" and kind == "bool_value":
            return Attribute("bool", bool(value.bool_value))
        if key == "int" and kind == "number_value":
            return Attribute("int", int(value.number_value))
    return None


def read_cluster(obj: structpb.Struct) -> Cluster | None:
    """Read one InferenceCluster with its status; None when it has no name."""
    fields = obj.fields
    meta = _sub(fields, "metadata")
    name = _text(meta, "name")
    if not name:
        return None
    taints = tuple(
        Taint(_text(t, "key"), effect, _text(t, "value"))
        for value in _items(_sub(fields, "spec"), "taints")
        if (effect := _EFFECTS.get(_text(t := value.struct_value.fields, "effect"))) is not None
    )
    status = _sub(fields, "status")
    pools: tuple[Pool, ...] | None = None
    if status.get("gpuPools", _EMPTY).WhichOneof("kind") == "list_value":
        pools = tuple(
            Pool(_text(p, "name"), _number(p, "nodes", 0), _pool_devices(p.get("devices", _EMPTY)))
            for value in _items(status, "gpuPools")
            if _text(p := value.struct_value.fields, "name")
        )
    return Cluster(
        name=name,
        labels=labels(_string_map(_sub(meta, "labels"))),
        taints=taints,
        ready=is_ready(fields),
        gateway_address=_text(_sub(status, "gateway"), "address"),
        pools=pools,
    )


# --- ModelReplicas --------------------------------------------------------------------------


def read_replica(obj: structpb.Struct) -> ExistingReplica | None:
    """Read one ModelReplica: whose it is, where it runs, what each engine charges.

    This runs for every replica of the fleet on every call, so it reads each field once.
    """
    fields = obj.fields
    meta = fields.get("metadata", _EMPTY).struct_value.fields
    found = meta.get("labels", _EMPTY).struct_value.fields
    spec = fields.get("spec", _EMPTY).struct_value.fields
    cluster = spec.get("clusterName", _EMPTY).string_value
    cluster = cluster or found.get(CLUSTER_LABEL, _EMPTY).string_value
    if not cluster:
        return None
    index = found.get(INDEX_LABEL, _EMPTY).string_value
    return ExistingReplica(
        namespace=meta.get("namespace", _EMPTY).string_value,
        deployment=found.get(DEPLOYMENT_LABEL, _EMPTY).string_value,
        cluster=cluster,
        index=int(index) if index.isdigit() else -1,
        engines=tuple(
            _pinned(value.struct_value.fields)
            for value in spec.get("engines", _EMPTY).list_value.values
        ),
        name=meta.get("name", _EMPTY).string_value,
    )


def _pinned(engine: Fields) -> PinnedEngine:
    """An engine's pool and node cost: pods x copies of the members that claim devices."""
    pool, pods = "", 0
    for value in engine.get("members", _EMPTY).list_value.values:
        member = value.struct_value.fields
        pool = pool or member.get("nodePoolName", _EMPTY).string_value
        if len(member.get("deviceRequests", _EMPTY).list_value.values):
            worker = member.get("role", _EMPTY).string_value == "Worker"
            pods += max(_number(_sub(member, "worker"), "nodes", 1), 1) if worker else 1
    return PinnedEngine(_text(engine, "name"), pool, max(_number(engine, "copies", 1), 1) * pods)


_clusters: _Memo[Cluster | None] = _Memo(read_cluster)
_replicas: _Memo[ExistingReplica | None] = _Memo(read_replica)


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
    """

    fleet: Fleet
    clusters: dict[str, Cluster]
    own: dict[tuple[str, int], structpb.Struct] = field(default_factory=dict)
    ready: set[str] = field(default_factory=set)


def read_fleet(
    clusters: Iterable[structpb.Struct],
    replicas: Iterable[structpb.Struct],
    deployment: Deployment | None = None,
) -> FleetState:
    """Read the fleet's InferenceClusters and ModelReplicas.

    A replica of ``deployment`` without a readable index still charges its pools, but
    the deployment does not claim it.
    """
    by_name: dict[str, Cluster] = {}
    for obj in clusters:
        cluster = _clusters(obj)
        if cluster is not None:
            by_name.setdefault(cluster.name, cluster)
    existing: list[ExistingReplica] = []
    state = FleetState(Fleet(), by_name)
    for obj in replicas:
        replica = _replicas(obj)
        if replica is None:
            continue
        if deployment is not None and _is_own(replica, deployment):
            if replica.index < 0:
                replica = ExistingReplica("", "", replica.cluster, 0, replica.engines, replica.name)
            else:
                state.own.setdefault((replica.cluster, replica.index), obj)
                if is_ready(obj.fields):
                    state.ready.add(replica.name)
        existing.append(replica)
    state.fleet = Fleet(tuple(by_name.values()), tuple(existing))
    return state


def _is_own(replica: ExistingReplica, deployment: Deployment) -> bool:
    return replica.namespace == deployment.namespace and replica.deployment == deployment.name


# --- the ModelCache -------------------------------------------------------------------------


@dataclass(frozen=True)
class CacheState:
    """The referenced ModelCache: none referenced, unknown, missing, or found."""

    name: str = ""
    status: str = "none"  # none | unknown | missing | found
    footprint: CacheFootprint | None = None


def read_cache(name: str | None, answered: bool, found: list[structpb.Struct]) -> CacheState:
    """Read the referenced ModelCache into its footprint.

    The footprint is the cache's ``clusterSelector`` and, once its status lists where it
    stages, those clusters (except where staging failed).

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
    spec_selector = _sub(fields, "spec").get("clusterSelector", _EMPTY).struct_value.fields
    match = labels(_string_map(_sub(spec_selector, "matchLabels")))
    staged = [v.struct_value.fields for v in _items(_sub(fields, "status"), "clusters")]
    clusters = (
        frozenset(_text(c, "name") for c in staged if _text(c, "phase") != "Failed")
        if staged
        else None
    )
    return CacheState(name, "found", CacheFootprint(name, True, match or None, clusters))
