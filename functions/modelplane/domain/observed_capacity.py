"""Observed capacity: what a workload cluster's Nodes and ResourceSlices say its pools hold.

An InferenceCluster declares its pools' sizes; the cluster itself may hold fewer usable
nodes (a node lost, cordoned, NotReady, tainted by an operator) or devices (a driver that
publishes fewer than the class declares). provider-kubernetes observes the cluster's
Nodes and ResourceSlices (observe-only Objects of an ObservedObjectCollection), and this
module counts, per pool:

- **nodes**: labelled ``modelplane.ai/pool=<pool>``, not being deleted, condition Ready
  True, not cordoned (``spec.unschedulable``), and with no NoSchedule or NoExecute taint
  that a Modelplane engine pod does not tolerate (it tolerates the GPU taint only);
- **devices**: per driver, the devices the current generation of the ResourceSlices
  bound to those nodes (``spec.nodeName``) publish, in total and per node
  (:attr:`ObservedPool.layout`: the nodes grouped by what they publish), since a pod
  needs all it claims on one node: two nodes publishing 2 GPUs each do not hold a pod
  that claims 4.

Pure: it takes the observed manifests as plain maps. An observation that is incomplete
(a member not observed yet) is ``None``: the declared size stands, never a guess. When
no ResourceSlice is observed at all (:data:`DEVICES_UNKNOWN`), the devices are unknown
rather than zero: the declared devices stand (see ``compose/cluster_capacity.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from modelplane.domain import api
from modelplane.domain import taints as taint_rules
from modelplane.domain.workload.pods import GPU_TOLERATION

# Why a node of a pool is not counted, in the order a node is checked.
DELETING = "Deleting"
NOT_READY = "NotReady"
CORDONED = "Cordoned"
TAINTED = "Tainted"
_ENGINE_TOLERATIONS = (
    taint_rules.Toleration(
        key=GPU_TOLERATION["key"],
        operator="Exists",
        effect=taint_rules.NO_SCHEDULE,  # GPU_TOLERATION's effect (a test holds them equal)
    ),
)
_EFFECTS = (taint_rules.NO_SCHEDULE, taint_rules.NO_EXECUTE)


@dataclass(frozen=True)
class NodeVerdict:
    """One observed node of a pool: whether new engine pods can land there, and why not."""

    name: str
    pool: str
    reason: str = ""  # "" when usable; else DELETING | NOT_READY | CORDONED | TAINTED
    detail: str = ""  # the untolerated taints, for TAINTED

    @property
    def usable(self) -> bool:
        """Tell whether the node counts toward its pool's capacity."""
        return not self.reason

    def __str__(self) -> str:
        """Say why the node is left out, as a platform team reads it."""
        detail = f" ({self.detail})" if self.detail else ""
        return f"{self.name} {self.reason}{detail}"


DriverCounts = tuple[tuple[str, int], ...]  # (driver, devices) pairs, sorted by driver
Layout = tuple[tuple[DriverCounts, int], ...]  # (what a node publishes, how many nodes)


@dataclass(frozen=True)
class ObservedPool:
    """What the workload cluster shows of one pool.

    Attributes:
        devices: Driver -> devices on the usable nodes; None while unknown (no
            ResourceSlice observed at all).
        layout: The usable nodes grouped by the devices each publishes, most nodes
            first (at most :data:`MAX_LAYOUTS` groups); None while unknown.
    """

    name: str
    nodes: int  # usable nodes
    devices: Mapping[str, int] | None = field(default_factory=dict)
    left_out: tuple[NodeVerdict, ...] = ()  # the pool's nodes that are not usable
    layout: Layout | None = ()

    def status(self) -> dict[str, Any]:
        """Return the pool's ``status.gpuPools[].observed`` entry."""
        entry: dict[str, Any] = {"nodes": self.nodes}
        if self.devices is not None:
            entry["devices"] = [{"driver": d, "count": n} for d, n in sorted(self.devices.items())]
        if self.layout is not None:
            entry["nodeDevices"] = [
                {"nodes": n, "devices": [{"driver": d, "count": c} for d, c in counts]}
                for counts, n in _bounded(self.layout)
            ]
        if self.left_out:
            entry["unavailable"] = [
                {"name": v.name, "reason": v.reason, **({"detail": v.detail} if v.detail else {})}
                for v in self.left_out[:MAX_UNAVAILABLE]
            ]
        return entry


MAX_UNAVAILABLE = 16  # the XRD's maxItems: enough to act on, bounded for big pools
MAX_TAINTS_NAMED = 4  # keeps a detail within the XRD's 1024 characters
MAX_LAYOUTS = 32
"""The XRD's maxItems for ``nodeDevices``. The nodes of the groups past the first 31 are
published as one group that publishes nothing: fewer pods, never an over-commit (a pool
of 33 different device layouts is a broken driver, not a design)."""


def node_verdict(node: Mapping[str, Any]) -> NodeVerdict | None:
    """Judge one observed Node; None if it belongs to no pool (or is no Node at all)."""
    meta = _mapping(node.get("metadata"))
    pool = _mapping(meta.get("labels")).get(api.POOL_LABEL)
    name = meta.get("name")
    if not isinstance(pool, str) or not pool or not isinstance(name, str):
        return None
    if meta.get("deletionTimestamp"):
        return NodeVerdict(name, pool, DELETING)
    if not _ready(node):
        return NodeVerdict(name, pool, NOT_READY)
    spec = _mapping(node.get("spec"))
    if spec.get("unschedulable") is True:
        return NodeVerdict(name, pool, CORDONED)
    repelling = taint_rules.untolerated(_taints(spec), _ENGINE_TOLERATIONS)
    if repelling:
        named = ", ".join(map(str, repelling[:MAX_TAINTS_NAMED]))
        more = len(repelling) - MAX_TAINTS_NAMED
        return NodeVerdict(name, pool, TAINTED, named + (f" and {more} more" if more > 0 else ""))
    return NodeVerdict(name, pool)


def observe_pools(
    nodes: Iterable[Mapping[str, Any]], slices: Iterable[Mapping[str, Any]]
) -> dict[str, ObservedPool]:
    """Count each pool's usable nodes and the devices their ResourceSlices publish.

    Only pools that have at least one observed node appear; a declared pool missing
    from the result has no node on the cluster at all (see :func:`for_pools`).
    """
    verdicts = sorted(
        (v for v in map(node_verdict, nodes) if v is not None), key=lambda v: (v.pool, v.name)
    )
    usable = {v.name: v.pool for v in verdicts if v.usable}
    per_node = _devices_by_node(slices, usable)
    pools: dict[str, ObservedPool] = {}
    for pool in dict.fromkeys(v.pool for v in verdicts):
        mine = [v for v in verdicts if v.pool == pool]
        counts = [per_node.get(v.name, {}) for v in mine if v.usable]
        pools[pool] = ObservedPool(
            name=pool,
            nodes=len(counts),
            devices=_summed(counts),
            left_out=tuple(v for v in mine if not v.usable),
            layout=_layout(counts),
        )
    return pools


def devices_unknown(observed: Mapping[str, ObservedPool]) -> dict[str, ObservedPool]:
    """The pools with their devices unknown (no ResourceSlice observed at all): the nodes
    count, the declared devices stand."""
    return {k: replace(p, devices=None, layout=None) for k, p in observed.items()}


def with_autoscaling(
    observed: Mapping[str, ObservedPool], ceilings: Mapping[str, int]
) -> dict[str, ObservedPool]:
    """Let autoscaled pools count the nodes their autoscaler would add.

    A pool that scales (min below max) may run fewer nodes than its max, down to none,
    and still take a pod: a Pending pod is what makes the autoscaler add a node. So its
    observed capacity is its max less the nodes that exist but take no pods (cordoned,
    NotReady, tainted: they hold a slot of the max); only a fixed pool's capacity is the
    nodes it runs. ``ceilings`` maps each autoscaled pool to its max.
    """
    out = dict(observed)
    for name, ceiling in ceilings.items():
        pool = observed.get(name)
        if pool is not None:
            room = max(0, ceiling - len(pool.left_out))
            out[name] = replace(pool, nodes=max(pool.nodes, room))
    return out


def for_pools(
    observed: Mapping[str, ObservedPool], names: Sequence[str]
) -> dict[str, ObservedPool]:
    """Return an entry for every declared pool: a pool with no node on the cluster has 0."""
    return {name: observed.get(name) or ObservedPool(name, 0) for name in names}


def _bounded(layout: Layout) -> Layout:
    if len(layout) <= MAX_LAYOUTS:
        return layout
    rest = sum(n for _, n in layout[MAX_LAYOUTS - 1 :])
    return (*layout[: MAX_LAYOUTS - 1], ((), rest))


def _summed(counts: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for per_driver in counts:
        for driver, n in per_driver.items():
            total[driver] = total.get(driver, 0) + n
    return total


def _layout(counts: Sequence[Mapping[str, int]]) -> Layout:
    """Group nodes by what they publish: most nodes first, then by the devices."""
    groups: dict[DriverCounts, int] = {}
    for per_driver in counts:
        key = tuple(sorted((d, n) for d, n in per_driver.items() if n > 0))
        groups[key] = groups.get(key, 0) + 1
    return tuple(sorted(groups.items(), key=lambda g: (-g[1], g[0])))


def _devices_by_node(
    slices: Iterable[Mapping[str, Any]], usable: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    """Sum, per usable node and driver, the devices of the newest generation of each
    slice pool. A DRA driver replaces a pool's slices by bumping its generation; until
    the old ones are gone both exist, and only the newest counts."""
    newest: dict[tuple[str, str], int] = {}
    current: list[tuple[str, str, str, int, int]] = []  # driver, slice pool, node, gen, devices
    for item in slices:
        spec = _mapping(item.get("spec"))
        node, driver = spec.get("nodeName"), spec.get("driver")
        if not isinstance(node, str) or node not in usable or not isinstance(driver, str):
            continue
        slice_pool = _mapping(spec.get("pool"))
        name = str(slice_pool.get("name", node))
        generation = _int(slice_pool.get("generation"))
        newest[(driver, name)] = max(newest.get((driver, name), generation), generation)
        devices = spec.get("devices")
        current.append(
            (driver, name, node, generation, len(devices) if isinstance(devices, list) else 0)
        )
    totals: dict[str, dict[str, int]] = {}
    for driver, name, node, generation, count in current:
        if generation == newest[(driver, name)]:
            per_driver = totals.setdefault(node, {})
            per_driver[driver] = per_driver.get(driver, 0) + count
    return totals


def _ready(node: Mapping[str, Any]) -> bool:
    conditions = _mapping(node.get("status")).get("conditions")
    for cond in conditions if isinstance(conditions, list) else ():
        if isinstance(cond, Mapping) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False  # a node that has never reported is not Ready


def _taints(spec: Mapping[str, Any]) -> list[taint_rules.Taint]:
    found = spec.get("taints")
    out = []
    for raw in found if isinstance(found, list) else ():
        if not isinstance(raw, Mapping) or raw.get("effect") not in _EFFECTS:
            continue  # PreferNoSchedule never keeps a pod off a node
        out.append(
            taint_rules.Taint(str(raw.get("key", "")), raw["effect"], str(raw.get("value") or ""))
        )
    return out


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
