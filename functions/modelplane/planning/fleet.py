"""Read the fleet (InferenceClusters, ModelReplicas, the ModelCache) into scheduler values.

A ModelDeployment's request carries every ModelReplica of the fleet: 10,000 of them on
a large fleet, read on every call, encoded anew by Crossplane each time (Go's protobuf
writes map entries in a different order on every call, so the same object never comes
as the same bytes twice). So:

- each object is read once, and remembered (:data:`.memo.MEMO`) by its uid and
  resourceVersion, read from its ``metadata`` alone (:data:`lazy.Head`); by a digest of
  its content only when it has neither (:func:`.fields.object_key`). When most of the
  last call's replicas were new, a replica's key is read from its deep decode instead
  (:func:`.replicas.read_keyed_by_decode`), which a new one needs anyway. Objects seen
  again are found in bulk, by C-level steps alone, by the raw bytes of their uid and
  resourceVersion (:mod:`.identities`), and only the others read one by one;
- an object not seen before is decoded in one call as deep as it is read (a replica by
  :data:`lazy.Replica`, a cluster by :data:`lazy.Tree`), so a replica's pod template is
  never decoded, and read by a short path with few Python-level steps that declines
  anything not as the API server writes it (``_plain_*`` in :mod:`.clusters` and
  :mod:`.replicas`), which the careful reader then reads and names (the two must agree:
  :mod:`.agreement`);
- what many objects share is read once per content, keyed by a deterministic encoding
  of what the reader reads of it: a replica's engines (every replica of a deployment on
  one pool has the same), a pool's devices (which the scheduler then fits once).

Decoded Structs and plain dicts (``modelplane plan`` reads YAML, through
:func:`.fields.as_struct`) are encoded first, so there is one reader for all of them.

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

Each is named in :attr:`FleetState.skipped` or :attr:`.cache.CacheState.problem`, which
:func:`warnings` turns into the Warning the function reports.

Crossplane lists required resources from its informer cache, whose store is a Go map: the
fleet comes in a new order on every call. The fleet is handed on in one order (clusters
and replicas by name) and the Warning names objects in text order, so a steady fleet is
the same fleet to the placement memo and gives the same response, however it was listed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter

from google.protobuf import struct_pb2 as structpb

from modelplane.domain import naming
from modelplane.domain.scheduling.fleet import (
    Deployment,
    ExistingReplica,
    Fleet,
    FleetCluster,
)
from modelplane.planning.cache import CacheState
from modelplane.planning.clusters import _cluster_or_skipped
from modelplane.planning.fields import (
    _MISSING,
    UNNAMED,
    Item,
    Skipped,
    T,
    decoded,
    is_ready,
    object_key,
)
from modelplane.planning.identities import KnownObjects
from modelplane.planning.memo import MEMO, Memo
from modelplane.planning.replicas import _replica_or_skipped, read_keyed_by_decode

# How many unreadable objects a Warning names before it counts the rest.
WARNING_NAMES = 3


def _cluster_named(read: tuple[FleetCluster | None, Skipped | None]) -> str | None:
    cluster, skipped = read
    return cluster.name if cluster is not None else _skipped_named(skipped)


def _replica_named(read: ExistingReplica | Skipped | None) -> tuple[str, str] | str | None:
    if isinstance(read, ExistingReplica):
        return (read.namespace, read.name) if read.name else None
    return _skipped_named(read)


def _skipped_named(skipped: Skipped | None) -> str | None:
    """What cannot be read is named as its Warning names it (None: it has no name)."""
    return skipped.what if skipped is not None and UNNAMED not in skipped.what else None


# Fleet objects are keyed by identity (object_key): one seen before costs the decode of
# its metadata alone (lazy.Head), however Go's protobuf ordered its maps this time.
# Named (the cluster's name, the replica's namespace and name), a new version of an
# object takes the place of its earlier one.
_clusters: Memo[tuple[FleetCluster | None, Skipped | None]] = MEMO.add(
    "clusters", _cluster_or_skipped, object_key, _cluster_named
)
_replicas: Memo[ExistingReplica | Skipped | None] = MEMO.add(
    "replicas", _replica_or_skipped, object_key, _replica_named
)
# And found in bulk by the raw bytes of their uid and resourceVersion, once seen that way.
_known_clusters = KnownObjects(_clusters)
_known_replicas = KnownObjects(_replicas)

NEW_SHARE = 0.5
"""When more than this share of the last call's replicas were new, each replica of this
call is keyed from its deep decode (:func:`.replicas.read_keyed_by_decode`): one decode
of a new replica instead of two, one decode of a known one that costs twice the
``metadata`` decode it needs otherwise. Either way a replica reads the same."""


@dataclass
class _LastCall:
    """What the last call of :func:`read_fleet` found: the share of its replicas that were
    new (calls of several threads may interleave: it only chooses how to decode)."""

    new_share: float = 1.0
    listings: dict[frozenset[int], tuple[ExistingReplica, ...]] = field(default_factory=dict)
    """The last calls' replicas as listed (:func:`_listed`), by the ids of their values: a
    few, as a call reads the narrow view, the ledgers' fleet or the whole one in turn."""


_LAST = _LastCall()


LISTINGS_KEPT = 4


def forget_listings() -> None:
    """Forget the last calls' listings: a replica they hold was superseded or forgotten
    (a listing serves a fleet whose replicas are all unchanged; it would keep dead ones)."""
    _LAST.listings.clear()


_replicas.on_clear(forget_listings)
_replicas.on_supersede(forget_listings)


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
    tallied: Sequence[ExistingReplica] = (),
) -> FleetState:
    """Read the fleet's InferenceClusters and ModelReplicas.

    ``tallied``: other deployments' replicas read already, from the ledgers of clusters
    whose replicas are not among ``replicas`` (:mod:`.tally`). A replica of
    ``deployment`` without a readable index still charges its pools, but the
    deployment does not claim it. What cannot be read is handled as the module says
    and listed in :attr:`FleetState.skipped`; nothing here raises.
    """
    clusters = clusters if isinstance(clusters, Sequence) else list(clusters)
    replicas = replicas if isinstance(replicas, Sequence) else list(replicas)
    _clusters.expect(len(clusters))
    _replicas.expect(len(replicas))
    by_name: dict[str, FleetCluster] = {}
    skipped: list[str] = []
    complete = True
    for cluster, problem in _read_all(clusters, _clusters, _known_clusters):
        complete &= cluster is not None  # a cluster read without a name may still exist
        if problem is not None:
            kept = "it keeps what runs on it and gets nothing new" if cluster else "skipped"
            skipped.append(f"{problem.what}: {problem.problem} ({kept})")
        if cluster is not None:
            by_name.setdefault(cluster.name, cluster)
    existing: list[ExistingReplica] = []
    state = FleetState(Fleet(), by_name, skipped=skipped)
    misses = _replicas.misses
    by_decode = _LAST.new_share > NEW_SHARE or not len(_replicas)
    if by_decode and not _known_replicas.mostly_known(replicas):
        reads = [_read_by_decode(obj) for obj in replicas]
    else:
        reads = _read_all(replicas, _replicas, _known_replicas)
    for at, found in enumerate(reads):
        read = found
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
                own = decoded(replicas[at])  # the deployment's own few, composed from as read
                state.own.setdefault((replica.cluster, replica.index), own)
                if is_ready(own.fields):
                    state.ready.add(replica.name)
        existing.append(replica)
    existing.extend(tallied)
    state.clusters = dict(sorted(by_name.items()))
    state.fleet = Fleet(tuple(state.clusters.values()), _listed(existing), complete)
    if replicas:
        _LAST.new_share = (_replicas.misses - misses) / len(replicas)
    return state


_BY_NAME = attrgetter("name")
_BY_NAMESPACE = attrgetter("namespace")


def _listed(replicas: list[ExistingReplica]) -> tuple[ExistingReplica, ...]:
    """The replicas in listing order: a recent call's tuple when they are the same values.

    A steady fleet reads as the same values (the memo's) on every call, in a new order
    each time: the same set of them is the same listing, found by their ids (exact, as
    the last listing keeps them alive) for a fraction of a sort, which at 5xL is memory
    bound (50,000 names scattered over the heap: ~45 ms). The placement memo then
    compares the fleet by identity.
    """
    ids = frozenset(map(id, replicas))
    last = _LAST.listings.get(ids)
    if last is not None and len(ids) == len(replicas) == len(last):
        return last
    _sort_for_listing(replicas)
    listed = tuple(replicas)
    if len(_LAST.listings) >= LISTINGS_KEPT:
        del _LAST.listings[next(iter(_LAST.listings))]  # the oldest
    _LAST.listings[ids] = listed
    return listed


def _sort_for_listing(replicas: list[ExistingReplica]) -> None:
    """Sort by name, then namespace: the same fleet in every order Crossplane lists it.

    The placement memo compares fleets as tuples, so an order that follows the listing
    (a new one on every call) would miss it and schedule again. Two stable sorts, by
    namespace and then by name, cost a third of one by a tuple key (45 against 135 ms at
    5xL), and the first is needed only when two replicas share a name (two teams'
    deployments of one model).
    """
    if len(set(map(_BY_NAME, replicas))) < len(replicas):
        replicas.sort(key=_BY_NAMESPACE)
    replicas.sort(key=_BY_NAME)


def _read_all(items: Sequence[Item], memo: Memo[T], known: KnownObjects[T]) -> list[T]:
    """What each item reads as: those remembered found in bulk by their raw identity
    (:class:`.identities.KnownObjects`), the others keyed and read one by one."""
    found = known.find(items)
    if found is None:
        return [memo(obj) for obj in items]
    reads = found[0]
    for at, read in enumerate(reads):
        if read is _MISSING:
            reads[at] = known.read(items[at])
    return reads


def _read_by_decode(obj: Item) -> ExistingReplica | Skipped | None:
    """A replica likely new, keyed from its deep decode (aliased if it was remembered)."""
    return _known_replicas.read(obj, _KEYED_BY_DECODE)


_KEYED_BY_DECODE = functools.partial(read_keyed_by_decode, memo=_replicas)


def _is_own(replica: ExistingReplica, deployment: Deployment) -> bool:
    """A replica is the deployment's when it is in its namespace and carries its label.

    The label holds the deployment's name as a label value (:func:`naming.label_value`),
    which is the name itself up to 63 characters.
    """
    return replica.namespace == deployment.namespace and replica.deployment == naming.label_value(
        deployment.name
    )


# --- the Warning ----------------------------------------------------------------------------


def warnings(state: FleetState, cache: CacheState | None = None) -> list[str]:
    """The Warning to report for what could not be read: one message, or none.

    It names the first :data:`WARNING_NAMES` objects, each with its bad field, and
    counts the rest, so a fleet of bad objects does not flood the composite's events.
    """
    problems = [
        *sorted(state.skipped),
        *([cache.problem] if cache is not None and cache.problem else []),
    ]
    if not problems:
        return []
    return [f"cannot read {len(problems)} fleet object(s): {named(problems)}"]


def named(problems: Sequence[str]) -> str:
    """The first :data:`WARNING_NAMES` problems, joined, and how many more there are."""
    more = len(problems) - WARNING_NAMES
    rest = f"; and {more} more" if more > 0 else ""
    return "; ".join(problems[:WARNING_NAMES]) + rest
