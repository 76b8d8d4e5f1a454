"""Read a ModelReplica: whose it is, where it runs, what each engine charges, and what
admission orders it by.

Every replica of the fleet is read on every call it has not been seen before, so a short
path (``_plain_*``) reads one as the API server writes it in few Python-level steps, and
the careful reader reads anything else, naming the first problem; the two must agree
(``tests/compose/test_fleet_plain.py``). Engines that many replicas share are read once
per content (:data:`.memo.MEMO`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from sys import intern
from typing import Any, cast

from google.protobuf import struct_pb2 as structpb
from google.protobuf.message import DecodeError

from modelplane.domain.api import CLUSTER_LABEL, DEPLOYMENT_LABEL, INDEX_LABEL
from modelplane.domain.scheduling import sharing
from modelplane.domain.scheduling.fleet import (
    Demand,
    ExistingReplica,
    PinnedEngine,
)
from modelplane.planning import agreement, lazy
from modelplane.planning.fields import (
    _EMPTY,
    _MISSING,
    Fields,
    Item,
    Skipped,
    UnreadableError,
    _decode_list,
    _decode_replica,
    _describe,
    _encoded,
    _fields_of,
    _label,
    _lenient,
    _objects,
    _sub,
    _text,
    _value,
    _values_of,
    _whole,
    identity,
)
from modelplane.planning.memo import MEMO, Memo

# A replica index label longer than this is no index (int() refuses 4,300 digits).
_INDEX_DIGITS = 9


def read_replica(obj: structpb.Struct) -> ExistingReplica | None:
    """Read one ModelReplica: whose it is, where it runs, what each engine charges.

    This runs for every replica of the fleet on every call, so it reads each field once.

    Raises:
        UnreadableError: a field it reads is of the wrong type (the first one found).
    """
    plain = _plain_replica(obj.fields)
    if plain is _MISSING:
        return _careful_replica(obj.fields)
    if agreement.CHECKING:
        agreement.check("ModelReplica", plain, lambda: _careful_replica(obj.fields))
    return cast("ExistingReplica | None", plain)


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
    """A replica decoded as :data:`lazy.Replica` and read by :func:`_admitted_replica`, its
    engines once per content (``_MISSING`` when the short path does not take it).

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
    return _admitted_replica(obj.fields)


def _admitted_replica(fields: Fields) -> Any:
    """:func:`_plain_replica` and :func:`_with_admission` in one pass, on a replica decoded
    as :data:`lazy.Replica` (every object it reads decoded, none left as bytes).

    This is what a fleet never seen costs per replica (10,000 on a large fleet), so it
    reaches each field once, keeps what it reached in locals, and builds the replica
    once: each step on a decoded message is a Python-level call. It takes what
    :func:`_plain_replica` takes and reads it as that and :func:`_with_admission` do;
    anything else returns ``_MISSING``.
    """
    meta, spec = fields.get("metadata"), fields.get("spec")
    if meta is None or spec is None:
        return _MISSING
    meta, spec = meta.struct_value.fields, spec.struct_value.fields
    found, where, engines = meta.get("labels"), spec.get("clusterName"), spec.get("engines")
    if found is None or where is None or engines is None:
        return _MISSING
    label = found.struct_value.fields.get
    namespace, name = meta.get("namespace"), meta.get("name")
    deployment, cluster, index = label(DEPLOYMENT_LABEL), label(CLUSTER_LABEL), label(INDEX_LABEL)
    if namespace is None or name is None or deployment is None or cluster is None or index is None:
        return _MISSING
    namespace, name, where = namespace.string_value, name.string_value, where.string_value
    deployment, index = deployment.string_value, index.string_value
    if not (namespace and name and where and deployment and index and cluster.string_value):
        return _MISSING
    pinned = _engines_by_content(engines)
    if pinned is _MISSING:
        return _MISSING
    created = meta.get("creationTimestamp")
    ready, stuck, since = _admission(fields.get("status"))
    return ExistingReplica(
        # Shared by many replicas: one string each, not one per replica remembered.
        intern(namespace),
        intern(deployment),
        intern(where),
        _index(index),
        pinned,
        name,
        "" if created is None else created.string_value,
        ready,
        stuck,
        since,
    )


def _admission(status: Any) -> tuple[bool, str, str]:
    """Ready, and why and since when it is stuck, as :func:`_with_admission` reads them
    from a status decoded as :data:`lazy.Replica` (a Value, or None)."""
    ready, stuck, since = False, "", ""
    if status is None:
        return ready, stuck, since
    conditions = status.struct_value.fields.get("conditions")
    if conditions is None:
        return ready, stuck, since
    for value in conditions.list_value.values:
        condition = value.struct_value.fields.get
        typ = condition("type")
        if typ is None:
            continue
        typ = typ.string_value
        if typ == "Ready":
            state = condition("status")
            ready = state is not None and state.string_value == "True"
        elif typ == MODEL_READY and _text_of(condition("reason")) == UNSCHEDULABLE:
            if _text_of(condition("status")) == "False":
                stuck = _text_of(condition("message")) or UNSCHEDULABLE
                since = _text_of(condition("lastTransitionTime"))
    return ready, stuck, since


def _text_of(value: Any) -> str:
    return "" if value is None else str(value.string_value)


def _engines_by_content(engines: Any) -> Any:
    """A replica's engines (a Value of :data:`lazy.Replica`), read once per content."""
    engines.DiscardUnknownFields()
    return _engines_read(engines.SerializeToString(deterministic=True))


def _engines_from_key(key: bytes) -> Any:
    return _plain_engine_values(lazy.ReplicaSpecValue.FromString(key).list_value.values)


# What a replica's engines read as, by their content as :data:`lazy.Replica` decodes them
# (``_MISSING`` when the careful reader must read them).
_engines_read: Memo[Any] = MEMO.add("replica engines by content", _engines_from_key, bytes)


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
    if plain is _MISSING:
        return _careful_engines(encoded)
    if agreement.CHECKING:
        agreement.check("spec.engines", plain, lambda: _careful_engines(encoded))
    return cast("tuple[PinnedEngine, ...]", plain)


def _careful_engines(encoded: bytes) -> tuple[PinnedEngine, ...]:
    spec = lazy.Struct()
    spec.fields["engines"].list_value = encoded
    return _engines(spec.fields)


# A replica's engines by their encoding: every replica of a deployment on one pool has the
# same, so a fleet's replicas share a few hundred. (What does not read raises: not kept.)
_encoded_engines: Memo[tuple[PinnedEngine, ...]] = MEMO.add(
    "replica engines by encoding", _engines_encoded, bytes
)


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


def _replica_or_skipped(item: Item) -> ExistingReplica | Skipped | None:
    """Read a replica: by the short path when it takes it, else decoded for the careful one."""
    return _short_or_careful(item, _shared_replica(item))


def read_keyed_by_decode(item: Item, memo: Memo[ExistingReplica | Skipped | None]) -> Any:
    """``memo(item)`` for a replica likely new: decoded once, as deep as it is read.

    The memo keys an encoded replica by a decode of its ``metadata`` alone
    (:func:`.fields.object_key`), and decodes it again, deeper, when it is new. On a fleet
    never seen that is two decodes of every replica; this takes its key from the one deep
    decode (:data:`lazy.Replica` decodes ``metadata`` whole), so the key, and so what it
    reads as, is the memo's own. What that decode does not take goes the memo's way.
    """
    if not isinstance(item, bytes):
        return memo(item)
    try:
        obj = _decode_replica(item)
    except DecodeError:
        return memo(item)
    key = identity(obj)
    if key is None:  # keyed by its content: the memo's way
        return memo(item)
    return memo.keyed(key, partial(_decoded_replica, obj), item)


def _decoded_replica(obj: Any, item: Item) -> ExistingReplica | Skipped | None:
    """:func:`_replica_or_skipped` of ``item``, decoded already as :data:`lazy.Replica`."""
    return _short_or_careful(item, _admitted_replica(obj.fields))


def _short_or_careful(item: Item, fast: Any) -> ExistingReplica | Skipped | None:
    """What the short path read (``fast``), checked when asked; else the careful reader's."""
    if fast is not _MISSING:
        if agreement.CHECKING:
            agreement.check("ModelReplica", fast, lambda: _careful_with_admission(item))
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


def _careful_with_admission(item: Item) -> ExistingReplica | None:
    """The careful reader alone, on a replica decoded for it, with what admission orders by."""
    obj = _encoded(item)
    found = _careful_replica(obj.fields)
    return None if found is None else _with_admission(found, obj.fields)


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
