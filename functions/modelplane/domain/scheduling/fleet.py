"""What the scheduler reads: the deployment, the fleet's clusters and its replicas.

All values are frozen and hold tuples, never dicts, so they hash and compare by
content. Label maps are sorted ``(key, value)`` tuples; build them with :func:`labels`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import astuple, dataclass, field
from typing import Literal

from modelplane.domain.dra import Device
from modelplane.domain.scheduling import observed_devices
from modelplane.domain.taints import Taint, Toleration

Role = Literal["Standalone", "Leader", "Worker"]
Claim = Literal["DRA", "Synthetic"]
Labels = tuple[tuple[str, str], ...]
# How a pool's capacity is counted: whole nodes per pod (the docs' rule), or, where the
# pool opts in, the devices of each node, so that several pods may share a node.
Capacity = Literal["Nodes", "Devices"]
CAPACITIES: tuple[Capacity, ...] = ("Nodes", "Devices")
# What one pod claims: ``(deviceClassName, count)`` pairs, sorted, one per class.
Demand = tuple[tuple[str, int], ...]
# An engine's pods on its pool: ``(demand, how many pods)`` pairs, sorted, one per demand.
Pods = tuple[tuple[Demand, int], ...]


def labels(mapping: Mapping[str, str] | None) -> Labels:
    """Return a label map as the sorted tuple the scheduler's values hold."""
    return tuple(sorted((mapping or {}).items()))


# --- the deployment -------------------------------------------------------------------


@dataclass(frozen=True)
class DeviceRequest:
    """One entry of a member's ``nodeSelector.devices``: what each of its pods needs."""

    name: str
    count: int = 1
    selectors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Member:
    """One member of an engine: a Standalone pod, a gang's Leader, or its Workers."""

    role: Role
    devices: tuple[DeviceRequest, ...] = ()
    worker_nodes: int = 1

    @property
    def pods(self) -> int:
        """Pods per copy: ``worker.nodes`` for a Worker, 1 for a Standalone or Leader."""
        return max(self.worker_nodes, 1) if self.role == "Worker" else 1


@dataclass(frozen=True)
class Engine:
    """An engine of the replica's topology; all its members share one pool."""

    name: str
    members: tuple[Member, ...]
    copies: int = 1

    @property
    def is_gang(self) -> bool:
        """Tell whether the engine spans nodes (a Leader with Workers)."""
        return any(m.role == "Worker" for m in self.members)


@dataclass(frozen=True)
class Deployment:
    """A ModelDeployment as the scheduler sees it.

    Attributes:
        unschedulable_after_seconds: How long a replica may report Unschedulable before
            it is moved (``spec.unschedulableAfterSeconds``; :mod:`.stuck`).
    """

    namespace: str
    name: str
    replicas: int
    engines: tuple[Engine, ...]
    cluster_selector: Labels = ()
    tolerations: tuple[Toleration, ...] = ()
    unschedulable_after_seconds: int = 300


@dataclass(frozen=True)
class CacheFootprint:
    """Where a referenced ModelCache stages its weights, so where new replicas may land.

    Attributes:
        name: The ModelCache's name.
        resolved: False while the cache is missing or not yet read: then nothing new is
            placed, and what is placed stays.
        match_labels: The cache's cluster selector; None stages everywhere.
        clusters: If set, only these clusters (for example the cache's status).
    """

    name: str
    resolved: bool = True
    match_labels: Labels | None = None
    clusters: frozenset[str] | None = None

    def covers(self, cluster: FleetCluster) -> bool:
        """Tell whether the cache stages its weights on ``cluster``."""
        if self.clusters is not None and cluster.name not in self.clusters:
            return False
        if self.match_labels:
            have = dict(cluster.labels)
            return all(have.get(k) == v for k, v in self.match_labels)
        return True


# --- the fleet ------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolDevice:
    """One device entry of a pool's InferenceClass."""

    name: str
    device: Device
    count: int
    claim: Claim = "DRA"
    device_class_name: str = ""


# What one observed node publishes: ``(driver, devices)`` pairs, sorted by driver.
DriverCounts = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class ObservedCapacity:
    """What the workload cluster shows of a pool: its nodes that exist, are Ready and
    take pods (not cordoned, no untolerated taint beyond the GPU one).

    The InferenceCluster publishes it once it observes the cluster; until then (or while
    observing fails) a pool has none, and its declared size is all the scheduler knows.

    Attributes:
        node_devices: Those nodes grouped by the devices their ResourceSlices publish,
            as ``(what one node publishes, how many nodes)``; None while unknown (then
            every node is taken to publish what its class declares). Nodes counted in
            ``nodes`` beyond these groups are an autoscaled pool's nodes to come, which
            arrive with their declared devices.
    """

    nodes: int
    node_devices: tuple[tuple[DriverCounts, int], ...] | None = None


@dataclass(frozen=True)
class Pool:
    """A GPU node pool a cluster publishes in ``status.gpuPools``.

    Attributes:
        nodes: The declared node count.
        observed: What the cluster shows of the pool; None while unknown.
        draining: The pool left its cluster's spec (removed, renamed, or its nodes
            replaced by a class change) and stays only for the replicas pinned there:
            nothing new is placed on it, and those replicas move (make before break).
    """

    name: str
    nodes: int
    devices: tuple[PoolDevice, ...] = ()
    capacity: Capacity = "Nodes"
    observed: ObservedCapacity | None = None
    draining: bool = False

    @property
    def usable_nodes(self) -> int:
        """The nodes the scheduler charges against: the smaller of declared and observed.

        A pool never holds more than it declares (the cloud bills that size), nor more
        than runs (a lost or cordoned node takes no pod), so lost capacity over-commits
        the pool and admission (:mod:`.admission`) decides who stays. On a pool that
        charges whole nodes, a node publishing fewer devices than its class declares
        does not count either (:func:`.observed_devices.short_nodes`): a pod charged a
        whole node may claim all of them. A pool whose pods share nodes counts every
        node, each with what it publishes (:func:`.observed_devices.layout`).
        """
        declared = max(self.nodes, 0)
        if self.observed is None:
            return declared
        short = 0 if self.capacity == "Devices" else observed_devices.short_nodes(self)
        return min(declared, max(self.observed.nodes - short, 0))


@dataclass(frozen=True)
class FleetCluster:
    """An InferenceCluster as the scheduler sees it.

    Attributes:
        pools: The published pools; None while the cluster has not published them yet,
            which keeps the replicas on it as they are.
    """

    name: str
    labels: Labels = ()
    taints: tuple[Taint, ...] = ()
    ready: bool = False
    gateway_address: str = ""
    pools: tuple[Pool, ...] | None = ()


@dataclass(frozen=True, slots=True)  # one per replica's engine: no __dict__ each
class PinnedEngine:
    """An existing replica's engine: the pool it is pinned to and what it charges there.

    Attributes:
        pods: What its pods claim, which a pool whose pods share nodes charges instead of
            ``nodes``.
    """

    name: str
    pool: str
    nodes: int = 0
    pods: Pods = ()


@dataclass(frozen=True, slots=True)  # 50,000 on a 5xL fleet, remembered: no __dict__ each
class ExistingReplica:
    """A ModelReplica that exists in the fleet, of any deployment.

    Attributes:
        created: Its ``metadata.creationTimestamp`` (RFC 3339, so text order is time
            order); "" when unknown. Admission order (:mod:`.admission`) reads it.
        ready: It reports Ready: its pods run, so it holds what it runs on.
        stuck: Why its pods cannot be scheduled where it is ("": not stuck): its
            ``ModelReady`` reason ``Unschedulable`` and message. The scheduler sees it
            only once it has held for the deployment's grace period
            (:func:`.stuck.past_grace`); it is then over-committed.
        stuck_since: When that began (the condition's ``lastTransitionTime``).
    """

    namespace: str
    deployment: str
    cluster: str
    index: int
    engines: tuple[PinnedEngine, ...] = ()
    name: str = ""
    created: str = ""
    ready: bool = False
    stuck: str = ""
    stuck_since: str = ""

    def pin(self, engine: str) -> str | None:
        """Return the pool an engine of this replica is pinned to, if it has one."""
        return next((e.pool for e in self.engines if e.name == engine), None)

    def engine_on(self, pool: str) -> str:
        """Return the (first) engine of this replica pinned to ``pool``, or ""."""
        return next((e.name for e in self.engines if e.pool == pool), "")


@dataclass(frozen=True)
class Fleet:
    """Every InferenceCluster and every ModelReplica the scheduler can see.

    Attributes:
        complete: False when some InferenceCluster could not be read at all, so a
            cluster missing here may still exist: its replicas then move, make before
            break, rather than go.
    """

    clusters: tuple[FleetCluster, ...] = ()
    replicas: tuple[ExistingReplica, ...] = field(default_factory=tuple)
    complete: bool = True


def clusters_by_name(clusters: Iterable[FleetCluster]) -> dict[str, FleetCluster]:
    """Index clusters by name, sorted; of two with one name, the lesser by content wins."""
    found: dict[str, FleetCluster] = {}
    for cluster in clusters:
        other = found.get(cluster.name)
        if other is None or repr(cluster) < repr(other):
            found[cluster.name] = cluster
    return dict(sorted(found.items()))


def _place(replica: ExistingReplica) -> tuple[str, int, str]:
    return replica.cluster, replica.index, replica.name


def in_place_order(replicas: Iterable[ExistingReplica]) -> list[ExistingReplica]:
    """Sort replicas by cluster, index and name, then by their pins where those tie.

    Names and pins break ties, so duplicates resolve the same whatever the input order.
    The same order as sorting by place and pins at once (sorts are stable), but the
    pins, deep-copied to compare, are read only for the rare duplicates.
    """
    out: list[ExistingReplica] = []
    for _, tied in itertools.groupby(sorted(replicas, key=_place), key=_place):
        group = list(tied)
        if len(group) > 1:
            group.sort(key=lambda r: [astuple(e) for e in r.engines])
        out.extend(group)
    return out
