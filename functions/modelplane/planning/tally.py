"""The ledger an InferenceCluster publishes: what each ModelReplica on it charges.

A ModelDeployment that must place weighs every cluster its selector matches, and a
pool's free nodes count every replica charged there. Reading every ModelReplica of the
fleet for that costs a placing reconcile R objects (10,000 at L). Each InferenceCluster
already requires the replicas on it (by its cluster label), so it publishes what they
charge in ``status.ledger.replicas``, one line per replica, and a placing deployment
reads C clusters instead of R replicas (docs/design/loop-cost.md section 5b).

A line holds what the scheduler reads of another deployment's replica on a cluster
whose pools charge whole nodes (its namespace, name, deployment label, index, creation
time and each engine's pin), separated by single spaces::

    <namespace> <name> <deployment> <index> <created or -> <engine> ...

and each engine as ``<name>=<pool>:<nodes>``, followed on a pool whose pods share nodes
by ``:<pods>@<class>*<count>+<class>*<count>`` per demand, demands joined by ``,``.
Names, label values, pool and device class names hold none of these separators, so a
line parses with ``str.split`` alone: about a tenth of reading the replica it stands for.

Not whether it is Ready: a whole-node pool's free nodes are its nodes less every charge,
in any order, and admission order (Ready first) is read only on the pools of a
deployment's own replicas, whose replicas it reads. So a line changes only when a replica
comes, goes or is pinned anew, as the cluster's ``InUse`` does, and a Ready change on the
workload cluster costs no write of the InferenceCluster (each of which wakes every
deployment that requires it). A cluster with a pool whose pods share nodes
(``capacity: Devices``) publishes no ledger: there, where pods sit, and so what is free,
follows admission order, Ready first; its replicas are read (:func:`published_ledger`).

A line reads back as the :class:`ExistingReplica` it was written from but for Ready and
what is only read of a deployment's own replicas (``stuck``). A ledger that does not parse
is not used: the cluster's replicas are read instead.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from google.protobuf.message import DecodeError

from modelplane.domain import naming
from modelplane.domain.scheduling.fleet import (
    Demand,
    Deployment,
    ExistingReplica,
    PinnedEngine,
    Pods,
)
from modelplane.planning.fields import (
    Item,
    Skipped,
    _decode_object,
    _sub,
    _text,
    _values_of,
    object_key,
)
from modelplane.planning.fleet import _known_replicas, _read_all, _replicas, forget_listings, named
from modelplane.planning.identities import KnownObjects
from modelplane.planning.memo import MEMO, Memo
from modelplane.planning.steady import distinct
from modelplane.planning.wire import (
    CLUSTERS,
    OWN,
    fleet_items,
    on_cluster_requirement,
    read_by_label,
)

_NONE = "-"


class TallyError(ValueError):
    """A ledger line that does not parse."""


def line(replica: ExistingReplica) -> str:
    """The ledger line of a replica (see the module); an empty text reads as ``-``."""
    engines = " ".join(_engine(e) for e in replica.engines)
    head = (
        f"{replica.namespace or _NONE} {replica.name} {replica.deployment or _NONE} "
        f"{replica.index} {replica.created or _NONE}"
    )
    return f"{head} {engines}" if engines else head


def _engine(engine: PinnedEngine) -> str:
    text = f"{engine.name}={engine.pool}:{engine.nodes}"
    if not engine.pods:
        return text
    return f"{text}:{','.join(_pods(demand, count) for demand, count in engine.pods)}"


def _pods(demand: Demand, count: int) -> str:
    return f"{count}@{'+'.join(f'{cls}*{n}' for cls, n in demand)}"


@dataclass(frozen=True)
class Lines:
    """A cluster's ledger as its InferenceCluster publishes it.

    Attributes:
        lines: A line per readable replica on it, in namespace and name order.
        unreadable: Each replica left out because it cannot be read: what it is and why
            (the Warning its cluster reports: a placing deployment no longer reads it).
    """

    lines: list[str]
    unreadable: list[str]

    def warning(self) -> str | None:
        """One Warning naming the first unreadable replicas (:func:`.fleet.named`)."""
        if not self.unreadable:
            return None
        return (
            f"cannot read {len(self.unreadable)} ModelReplica(s) on this cluster: "
            f"{named(self.unreadable)} (left out of status.ledger: the pools they pin are "
            "not charged)"
        )


def published_ledger(
    cluster: str, gpu_pools: Iterable[Mapping[str, Any]], replicas: Iterable[Item]
) -> tuple[dict[str, Any] | None, str | None]:
    """What an InferenceCluster publishes as ``status.ledger`` (None: no ledger, as a
    cluster with a pool whose pods share nodes publishes none; see the module), and the
    Warning naming the replicas on it that cannot be read, if any."""
    if any(pool.get("capacity") == "Devices" for pool in gpu_pools):
        return None, None
    lines = ledger_lines(cluster, replicas)
    return {"replicas": lines.lines}, lines.warning()


def ledger_lines(cluster: str, replicas: Iterable[Item]) -> Lines:
    """The ledger of ``cluster``.

    ``replicas`` are the ModelReplicas carrying the cluster's label; one that cannot be
    read is left out and named, as a placing deployment reading it would skip it
    (charging none of its pools); one that names another cluster is left out.
    """
    found = list(replicas)
    _replicas.expect(len(found))
    listed: list[ExistingReplica] = []
    unreadable: list[str] = []
    for read in _read_all(found, _replicas, _known_replicas):
        if isinstance(read, Skipped):
            unreadable.append(f"{read.what}: {read.problem}")
        elif read is not None and read.cluster == cluster:
            listed.append(read)
    listed.sort(key=lambda r: (r.namespace, r.name, r.index))
    return Lines([line(r) for r in listed], sorted(unreadable))


def read(cluster: str, lines: Sequence[str]) -> tuple[ExistingReplica, ...]:
    """The replicas a cluster's ledger lines stand for.

    Raises:
        TallyError: a line does not parse (the message names which, 0-based).
    """
    out = []
    for at, text in enumerate(lines):
        try:
            out.append(_replica(cluster, text))
        except (ValueError, IndexError):
            msg = f"status.ledger.replicas[{at}] is not a ledger line: {text[:80]!r}"
            raise TallyError(msg) from None
    return tuple(out)


def _replica(cluster: str, text: str) -> ExistingReplica:
    namespace, name, deployment, index, created, *rest = text.split(" ", 5)
    if not name:
        raise ValueError(text)
    # Positional (namespace, deployment, cluster, index, engines, name, created): a line
    # per replica of the fleet, and keywords cost a third more.
    return ExistingReplica(
        "" if namespace == _NONE else namespace,
        "" if deployment == _NONE else deployment,
        cluster,
        int(index),
        _engines(rest[0]) if rest else (),
        name,
        "" if created == _NONE else created,
    )


_ENGINES: dict[str, tuple[PinnedEngine, ...]] = {}
_ENGINES_KEPT = 4096
"""Engine pins read once per text: every replica of a deployment on one pool has the
same (a tenth of a line's cost at L); a bound, as the texts come from the fleet."""


def _engines(text: str) -> tuple[PinnedEngine, ...]:
    found = _ENGINES.get(text)
    if found is None:
        found = tuple(_read_engine(e) for e in text.split(" "))
        if len(_ENGINES) >= _ENGINES_KEPT:
            _ENGINES.clear()
        _ENGINES[text] = found
    return found


def _read_engine(text: str) -> PinnedEngine:
    name, _, pin = text.partition("=")
    pool, nodes, *pods = pin.split(":")
    if not name or not pool or len(pods) > 1:
        raise ValueError(text)
    return PinnedEngine(name, pool, int(nodes), _read_pods(pods[0]) if pods else ())


def _read_pods(text: str) -> Pods:
    out = []
    for entry in text.split(","):
        count, _, demand = entry.partition("@")
        claims = tuple(_claim(c) for c in demand.split("+")) if demand else ()
        out.append((claims, int(count)))
    return tuple(out)


def _claim(text: str) -> tuple[str, int]:
    cls, _, count = text.rpartition("*")
    if not cls:
        raise ValueError(text)
    return cls, int(count)


# --- a placing deployment's side: the ledgers of the clusters it reads ---------------------


@dataclass(frozen=True)
class Ledger:
    """One InferenceCluster's published ledger, as read.

    Attributes:
        cluster: The cluster's name ("" when it has none).
        replicas: What its lines stand for; None when it publishes no ledger, or one that
            does not read (a line that does not parse, a value that is no text): its
            replicas must then be read.
        deployments: The ``(namespace, deployment)`` of each, once.
    """

    cluster: str
    replicas: tuple[ExistingReplica, ...] | None
    deployments: frozenset[tuple[str, str]] = frozenset()

    @classmethod
    def of(cls, cluster: str, replicas: tuple[ExistingReplica, ...]) -> Ledger:
        """The ledger of ``replicas``, with the deployments they are of."""
        return cls(cluster, replicas, frozenset((r.namespace, r.deployment) for r in replicas))


def _read_ledger(item: Item) -> Ledger:
    """A cluster's ``metadata.name`` and ``status.ledger.replicas``, decoded no deeper than
    its first levels (the list of lines once more)."""
    name = ""
    try:
        fields = (_decode_object(item) if isinstance(item, bytes) else item).fields
        name = _text(_sub(fields, "metadata"), "name")
        found = _sub(_sub(fields, "status"), "ledger").get("replicas")
        if found is None or found.WhichOneof("kind") != "list_value":
            return Ledger(name, None)
        lines = []
        for value in _values_of(found):
            if value.WhichOneof("kind") != "string_value":
                return Ledger(name, None)
            lines.append(str(value.string_value))
        return Ledger.of(name, read(name, lines))
    except (ValueError, TypeError, DecodeError):  # TallyError among them: read its replicas
        return Ledger(name, None)


_ledgers: Memo[Ledger] = MEMO.add(
    "cluster ledgers", _read_ledger, object_key, lambda ledger: ledger.cluster or None
)
_ledgers.on_supersede(forget_listings)  # a listing holds the replicas of its lines
_known_ledgers = KnownObjects(_ledgers)  # found in bulk by raw identity, as fleet objects are


@dataclass(frozen=True)
class Tallied:
    """The replicas a placing call takes from the clusters' ledgers.

    Attributes:
        replicas: Those of other deployments on the clusters read by ledger.
        unpublished: Clusters with no usable ledger (read exactly or not): their replicas
            must be read.
    """

    replicas: tuple[ExistingReplica, ...]
    unpublished: tuple[str, ...]


def tallied(clusters: Sequence[Item], exact: Collection[str], deployment: Deployment) -> Tallied:
    """What the ledgers of ``clusters`` say, but of those in ``exact`` (whose replicas the
    call reads). A line of the deployment's own replicas is left out: its own are read
    (a line of one is a ledger older than its deletion)."""
    _ledgers.expect(len(clusters))
    own = (deployment.namespace, naming.label_value(deployment.name))
    out: list[ExistingReplica] = []
    unpublished: set[str] = set()
    for found in _read_all(clusters, _ledgers, _known_ledgers):
        if found.cluster and found.replicas is None:
            unpublished.add(found.cluster)
        if not found.cluster or found.cluster in exact or found.replicas is None:
            continue
        if own in found.deployments:
            out.extend(r for r in found.replicas if (r.namespace, r.deployment) != own)
        else:
            out.extend(found.replicas)
    return Tallied(tuple(out), tuple(sorted(unpublished)))


@dataclass(frozen=True)
class LedgerView:
    """What a placing call holds: the selected clusters, the replicas it reads (its own,
    and those of the clusters it holds by label), and what the other clusters' ledgers say.

    Attributes:
        exact: The clusters whose replicas it reads.
    """

    clusters: Sequence[Item]
    replicas: list[Item]
    tallied: Tallied
    exact: frozenset[str]


def ledger_view(req: fnv1.RunFunctionRequest, deployment: Deployment) -> LedgerView:
    """The fleet a placing call holds, as it plans on it (its own replicas read once,
    though required both as its own and as on their cluster)."""
    exact = read_by_label(req)
    clusters = fleet_items(req, CLUSTERS)
    on_them = (item for c in sorted(exact) for item in fleet_items(req, on_cluster_requirement(c)))
    replicas = distinct([*on_them, *fleet_items(req, OWN)])
    return LedgerView(clusters, replicas, tallied(clusters, exact, deployment), exact)
