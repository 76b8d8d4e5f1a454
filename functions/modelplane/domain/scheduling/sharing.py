"""Pools whose pods share nodes: what a node offers, and where a pool's pods fit on its nodes.

A pool opts in with ``capacity: Devices`` (off by default: the docs charge a whole node
per pod). Its nodes are then counted in devices: a node offers, per DeviceClass, the sum
of the counts of the pool's ``claim: DRA`` device entries of that class (Synthetic
devices are never claimed; ``count: 0`` offers none), and a pod needs everything it
claims on ONE node, as DRA allocates a pod's claims from the node it is bound to.

:func:`pack` places a pool's pods on its nodes: largest pod first (most devices; ties by
what it claims), each on the fullest node that still has room for it (best fit). The
answer depends only on which pods there are, never on the order they were charged, so
charging and releasing in any order gives the same free nodes, and the scheduler stays a
pure function of its inputs. Nodes with the same devices free are one group, so a pool of
a thousand identical nodes packs as fast as a pool of one.

:func:`pack_in_order` places running pods where they are instead: replica by replica in
admission order (a total order every reconcile computes the same way, see
:mod:`.admission`), each where the earlier ones left room; only new pods are packed
together, on what is left. A gang's pods (marked :data:`GANG`) take a node each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from modelplane.domain.scheduling.fleet import Demand, Pods, PoolDevice

Vector = tuple[int, ...]  # devices per class, in :attr:`NodeShape.classes` order

GANG = "gang.modelplane.ai/pod"
"""A mark in what a gang's pod claims: it takes a node of its own (docs: a gang's worker
pods run one per node, and its Leader needs a node too), so no two of a gang's pods,
nor any other pod, share its node. The workload composes the gang's pods with a pod
anti-affinity to match. Not a DeviceClass: no node offers it."""


@dataclass(frozen=True)
class NodeShape:
    """What one node of a pool offers: devices per DeviceClass (classes sorted)."""

    classes: tuple[str, ...]
    per_node: Vector

    def vector(self, demand: Demand) -> Vector | None:
        """What a pod claims, as a vector; None when it claims a class no node offers.

        A gang's pod (marked :data:`GANG`) takes every device of its node.
        """
        counts = dict(demand)
        whole = counts.pop(GANG, 0) > 0
        if any(c not in self.classes for c in counts):
            return None
        if whole:
            pairs = zip(self.classes, self.per_node, strict=True)
            return self.per_node if all(counts.get(c, 0) <= n for c, n in pairs) else None
        return tuple(counts.get(c, 0) for c in self.classes)

    def totals(self, vector: Vector) -> tuple[tuple[str, int], ...]:
        """A vector as ``(class, count)`` pairs."""
        return tuple(zip(self.classes, vector, strict=True))


def shape(devices: Sequence[PoolDevice]) -> NodeShape:
    """Return what one node of a pool with these device entries offers to claims."""
    per_class: dict[str, int] = defaultdict(int)
    for entry in devices:
        if entry.claim == "DRA" and entry.count > 0:
            per_class[entry.device_class_name] += entry.count
    classes = tuple(sorted(per_class))
    return NodeShape(classes, tuple(per_class[c] for c in classes))


def demand(claims: Iterable[tuple[str, int]]) -> Demand:
    """What one pod claims, from its ``(deviceClassName, count)`` requests, one pair per class."""
    per_class: dict[str, int] = defaultdict(int)
    for device_class, count in claims:
        if count > 0:
            per_class[device_class] += count
    return tuple(sorted(per_class.items()))


def gang(claimed: Demand) -> Demand:
    """What a gang's pod claims, marked so that it takes a node of its own (:data:`GANG`)."""
    if not claimed or any(c == GANG for c, _ in claimed):
        return claimed
    return tuple(sorted((*claimed, (GANG, 1))))


def claimed_devices(claimed: Demand) -> Demand:
    """What a pod claims, without the gang mark (for messages)."""
    return tuple((c, n) for c, n in claimed if c != GANG)


def is_gang(claimed: Demand) -> bool:
    """Tell whether a pod is a gang's (it takes a node of its own)."""
    return any(c == GANG for c, _ in claimed)


def pods(entries: Iterable[tuple[Demand, int]]) -> Pods:
    """An engine's pods as ``(demand, how many)``, one pair per demand, sorted.

    Pods that claim nothing take no devices and are left out.
    """
    counts: dict[Demand, int] = defaultdict(int)
    for claimed, count in entries:
        if claimed and count > 0:
            counts[claimed] += count
    return tuple(sorted(counts.items()))


@dataclass(frozen=True)
class Packing:
    """A pool's pods placed on its nodes.

    Attributes:
        free: Nodes grouped by the devices they have free: ``(free vector, nodes)``.
        unplaced: Pods that found no node with room (what runs there overcommits it).
    """

    shape: NodeShape
    free: tuple[tuple[Vector, int], ...]
    unplaced: int

    @property
    def fits(self) -> bool:
        """Tell whether every pod found a node."""
        return self.unplaced == 0

    @property
    def empty_nodes(self) -> int:
        """Nodes no pod uses."""
        return sum(n for v, n in self.free if v == self.shape.per_node)

    @property
    def free_devices(self) -> Vector:
        """Free devices per class, over the whole pool."""
        width = len(self.shape.classes)
        return tuple(sum(v[i] * n for v, n in self.free) for i in range(width))


def pack(node: NodeShape, nodes: int, charged: Mapping[Demand, int]) -> Packing:
    """Place the pods ``charged`` (demand -> how many) on ``nodes`` nodes of ``node``'s shape.

    Largest pod first, each on the fullest node with room (best fit): deterministic, and
    exact in that every pod placed has all it claims on one node.
    """
    free: dict[Vector, int] = {node.per_node: nodes} if nodes > 0 else {}
    unplaced = _place_all(node, free, charged)
    groups = tuple(sorted((v, n) for v, n in free.items() if n > 0))
    return Packing(node, groups, unplaced)


def pack_in_order(
    node: NodeShape,
    nodes: int | Mapping[Vector, int],
    admitted: Sequence[Mapping[Demand, int]],
    later: Mapping[Demand, int] | None = None,
) -> tuple[Packing, tuple[bool, ...]]:
    """Place pods where they run, replica by replica in admission order, then new ones.

    Running pods do not move: each replica's pods (``admitted``, in admission order) are
    placed on what the replicas before it left, largest pod first, best fit, the way
    they arrived. A replica whose pods do not all fit takes nothing: it is over-committed
    (its pods count as unplaced). Only the ``later`` pods (new placements) are packed
    together, on what is left.

    ``nodes`` is how many nodes of ``node``'s shape the pool has, or what each offers
    (``{offer: nodes}``) where some offer less than their class declares (observed
    devices: :mod:`.observed_devices`).

    Returns:
        The packing, and whether each ``admitted`` entry fits.
    """
    free = _start(node, nodes)
    unplaced = 0
    fits: list[bool] = []
    for charged in admitted:
        trial = dict(free)
        missing = _place_all(node, trial, charged)
        fits.append(missing == 0)
        if missing:
            unplaced += sum(n for n in charged.values() if n > 0)
        else:
            free = trial
    if later:
        unplaced += _place_all(node, free, later)
    groups = tuple(sorted((v, n) for v, n in free.items() if n > 0))
    return Packing(node, groups, unplaced), tuple(fits)


def _start(node: NodeShape, nodes: int | Mapping[Vector, int]) -> dict[Vector, int]:
    if isinstance(nodes, int):
        return {node.per_node: nodes} if nodes > 0 else {}
    return {v: n for v, n in nodes.items() if n > 0}


def _place_all(node: NodeShape, free: dict[Vector, int], charged: Mapping[Demand, int]) -> int:
    """Place pods largest first on ``free`` (changed in place); return how many found none."""
    unplaced = 0
    order = sorted(
        ((d, n) for d, n in charged.items() if n > 0), key=lambda p: (-_size(p[0]), p[0])
    )
    for claimed, count in order:
        need = node.vector(claimed)
        if need is None or not any(need):
            unplaced += count if need is None else 0
            continue
        unplaced += _place(free, need, count)
    return unplaced


def _place(free: dict[Vector, int], need: Vector, count: int) -> int:
    """Place ``count`` pods needing ``need`` on the nodes ``free``; return how many found none.

    The fullest node with room takes pods until it has no room: after one pod it is
    fuller still, so best fit would pick it again.
    """
    while count:
        room = [v for v, n in free.items() if n > 0 and _within(need, v)]
        if not room:
            return count
        best = min(room, key=lambda v: (sum(v), v))
        many = min(count, *(have // want for have, want in zip(best, need, strict=True) if want))
        after = tuple(have - want * many for have, want in zip(best, need, strict=True))
        free[best] -= 1
        free[after] = free.get(after, 0) + 1
        count -= many
    return 0


def _within(need: Vector, have: Vector) -> bool:
    return all(w <= h for w, h in zip(need, have, strict=True))


def _size(claimed: Demand) -> int:
    return sum(count for _, count in claimed)
