"""Observed devices: what each observed node of a pool offers, against what its class declares.

An InferenceCluster publishes, per pool, its usable nodes grouped by the devices their
ResourceSlices publish (``status.gpuPools[].observed.nodeDevices``). A pod needs all it
claims on one node, so the scheduler charges each node with what it publishes, never
more than its class declares:

- on a pool that charges whole nodes, a node publishing fewer devices than its class
  declares is not counted (:func:`short_nodes`): a pod charged a whole node may claim
  every device of it;
- on a pool whose pods share nodes (``capacity: Devices``), each node offers what it
  publishes (:func:`layout`), so a driver that publishes 2 of a node's 4 GPUs leaves
  room for fewer pods there.

A device entry offers its declared count less what its driver misses on the node
(``declared for the driver - published``); with one entry per driver (the usual class)
that is exactly the published count, and with several entries of one driver every
entry is charged the whole shortfall: fewer pods, never a pod DRA cannot allocate.
Until the devices are observed (no ``nodeDevices``), every node offers what its class
declares, as before.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from modelplane.domain.scheduling.fleet import DriverCounts, Pool, PoolDevice

Vector = tuple[int, ...]  # devices per DeviceClass, in the order asked for


def _claimed(devices: Sequence[PoolDevice]) -> list[PoolDevice]:
    return [d for d in devices if d.claim == "DRA" and d.count > 0]


def _offered(entries: Sequence[PoolDevice], published: DriverCounts) -> list[int]:
    """What each entry offers on a node that publishes ``published``."""
    declared: dict[str, int] = defaultdict(int)
    for entry in entries:
        declared[entry.device.driver] += entry.count
    have = dict(published)
    return [
        max(0, e.count - max(0, declared[e.device.driver] - have.get(e.device.driver, 0)))
        for e in entries
    ]


def short_nodes(pool: Pool) -> int:
    """Observed nodes of a pool that publish fewer devices than its class declares."""
    observed = pool.observed
    entries = _claimed(pool.devices)
    if observed is None or observed.node_devices is None or not entries:
        return 0
    wanted = [e.count for e in entries]
    return sum(n for counts, n in observed.node_devices if _offered(entries, counts) != wanted)


def layout(pool: Pool, classes: Sequence[str], per_node: Vector) -> dict[Vector, int]:
    """What each node of a pool whose pods share nodes offers, per DeviceClass (``classes``
    order): ``{offer: nodes}``, at most the pool's usable nodes, the roomiest first.

    ``per_node`` is what the class declares per node; nodes not observed yet (none
    published, or an autoscaled pool's nodes to come) offer it.
    """
    usable = pool.usable_nodes
    observed = pool.observed
    if observed is None or observed.node_devices is None:
        return {per_node: usable} if usable > 0 else {}
    entries = _claimed(pool.devices)
    groups: dict[Vector, int] = defaultdict(int)
    for counts, nodes in observed.node_devices:
        groups[_vector(entries, _offered(entries, counts), classes)] += max(nodes, 0)
    known = sum(n for _, n in observed.node_devices)
    groups[per_node] += max(observed.nodes - known, 0)
    return _roomiest(groups, usable)


def _vector(
    entries: Sequence[PoolDevice], offered: Sequence[int], classes: Sequence[str]
) -> Vector:
    per_class: dict[str, int] = defaultdict(int)
    for entry, count in zip(entries, offered, strict=True):
        per_class[entry.device_class_name] += count
    return tuple(per_class[c] for c in classes)


def _roomiest(groups: Mapping[Vector, int], limit: int) -> dict[Vector, int]:
    """Keep ``limit`` nodes, the roomiest first (a pool holds no more than it declares)."""
    out: dict[Vector, int] = {}
    for offer, nodes in sorted(groups.items(), key=lambda g: (-sum(g[0]), tuple(-n for n in g[0]))):
        take = min(nodes, limit)
        if take > 0:
            out[offer] = take
            limit -= take
    return out
