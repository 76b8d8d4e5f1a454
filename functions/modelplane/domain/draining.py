"""Draining node pools: an InferenceCluster never takes a node pool away under replicas.

A pool leaves its cluster's spec when it is removed or renamed (a rename is a removal
and an addition), and its nodes would be replaced when a class change alters what the
cloud provisions (instance type, GPUs, disk, fabric, zones). Deleting or replacing a
node group evicts every pod on it at once; the deployments promise to keep a replica
until its replacement is Ready. So, while any ModelReplica pins the pool
(``spec.engines[].members[].nodePoolName``):

- the cloud cluster keeps the pool's node group exactly as it was composed (held, as
  observed);
- ``status.gpuPools`` keeps publishing it, as it was shown, with ``draining: true``: the
  scheduler places nothing new there and moves the replicas pinned there like any
  make-before-break move (their replacements land elsewhere first; the old ones go once
  the replacements are Ready);
- once no ModelReplica pins it, the pool goes (a removed one), or takes its new shape
  (a replaced one), and publishing resumes from the spec.

A replaced pool keeps its name: the nodes are cordoned in the sense that matters to
the fleet (nothing new is placed), emptied by the moves, then re-created with the new
shape, as GKE's blue-green node pool upgrade cordons, drains, then deletes the old
nodes. To keep serving on the same cluster through a class change, add a pool of the
new class under a new name and remove the old one: the replicas move across.

Pure: plain manifests in, plain values out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

REMOVED = "Removed"
REPLACED = "Replaced"
# A cloud node pool's fields that only scale it: changing them keeps its nodes.
SCALING_FIELDS = frozenset({"name", "role", "nodeCount", "minNodeCount", "maxNodeCount"})


@dataclass(frozen=True)
class Drain:
    """A pool kept only for the ModelReplicas pinned to it.

    Attributes:
        why: ``Removed`` (gone from ``spec.nodePools``, or renamed) or ``Replaced`` (a
            class change would replace its nodes).
        replicas: The pinned replicas, as ``namespace/name``, sorted.
    """

    pool: str
    why: str
    replicas: tuple[str, ...]

    def __str__(self) -> str:
        """Say what is kept and for whom, in the words a platform team uses."""
        what = (
            "removed from spec.nodePools" if self.why == REMOVED else "its nodes would be replaced"
        )
        names = ", ".join(f"ModelReplica {r}" for r in self.replicas)
        return f"pool {self.pool} ({what}) drains until {names} move off it"


def pins(replicas: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    """Return, for each pool a ModelReplica's members are pinned to, those replicas
    (``namespace/name``, sorted). Unreadable entries pin nothing."""
    found: dict[str, set[str]] = defaultdict(set)
    for replica in replicas:
        meta = replica.get("metadata") if isinstance(replica, Mapping) else None
        if not isinstance(meta, Mapping) or not meta.get("name"):
            continue
        who = f"{meta.get('namespace') or ''}/{meta['name']}"
        for pool in _pinned(replica.get("spec")):
            found[pool].add(who)
    return {pool: tuple(sorted(who)) for pool, who in sorted(found.items())}


def _pinned(spec: Any) -> set[str]:
    pools: set[str] = set()
    engines = spec.get("engines") if isinstance(spec, Mapping) else None
    for engine in engines if isinstance(engines, list) else ():
        members = engine.get("members") if isinstance(engine, Mapping) else None
        for member in members if isinstance(members, list) else ():
            pool = member.get("nodePoolName") if isinstance(member, Mapping) else None
            if isinstance(pool, str) and pool:
                pools.add(pool)
    return pools


def drains(
    declared: Sequence[str],
    existing: Iterable[str],
    replaced: Iterable[str],
    pinned: Mapping[str, tuple[str, ...]],
) -> list[Drain]:
    """Return the pools kept draining, sorted by name.

    Args:
        declared: The pools ``spec.nodePools`` declares.
        existing: The pools that exist: published before or provisioned.
        replaced: Declared pools whose nodes the spec would replace.
        pinned: The replicas pinned to each pool (:func:`pins`).
    """
    found = [Drain(p, REMOVED, pinned[p]) for p in set(existing) - set(declared) if pinned.get(p)]
    found += [Drain(p, REPLACED, pinned[p]) for p in set(replaced) if pinned.get(p)]
    return sorted(found, key=lambda d: d.pool)


def replaced(
    desired: Sequence[Mapping[str, Any]], observed: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Return the cloud node pools whose desired entry would replace the observed one's
    nodes: a field it sets, other than the counts (:data:`SCALING_FIELDS`), differs.

    Only the fields the function sets are compared: the API server fills in defaults
    (the cloud composite's XRD) that the desired entry leaves out, and those replace
    nothing.
    """
    before = {p.get("name"): p for p in observed if isinstance(p, Mapping)}
    names = []
    for pool in desired:
        old = before.get(pool.get("name"))
        if old is not None and _reshapes(old, pool):
            names.append(str(pool["name"]))
    return names


def _reshapes(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    return any(old.get(k) != v for k, v in new.items() if k not in SCALING_FIELDS)


def held_node_pools(
    desired: Sequence[Mapping[str, Any]],
    observed: Sequence[Mapping[str, Any]],
    draining: Sequence[Drain],
) -> list[dict[str, Any]]:
    """Return the cloud cluster's ``nodePools``: the desired ones, a replaced one as it is
    observed, then the removed ones still draining, as observed, in observed order."""
    before = {p.get("name"): p for p in observed if isinstance(p, Mapping)}
    kept = {d.pool for d in draining}
    pools = [
        dict(before[p["name"]]) if p["name"] in kept and p["name"] in before else dict(p)
        for p in desired
    ]
    names = {p["name"] for p in desired}
    pools += [dict(p) for p in observed if p.get("name") in kept and p.get("name") not in names]
    return pools


def published(
    fresh: Sequence[Mapping[str, Any]],
    shown: Sequence[Any],
    draining: Sequence[Drain],
) -> list[dict[str, Any]]:
    """Return ``status.gpuPools``: the fresh entries (a replaced pool's as shown before),
    then the removed pools still draining, as shown before; each draining entry says
    ``draining: true``. A draining pool never shown before is published from the fresh
    entry if any, else not at all (the scheduler never placed anything there)."""
    before = {p.get("name"): p for p in shown if isinstance(p, Mapping)}
    why = {d.pool: d.why for d in draining}
    entries = []
    for entry in fresh:
        name = entry.get("name")
        shown_as = before.get(name) if name in why else None
        entries.append(_marked(shown_as or entry, name in why))
    names = {e.get("name") for e in fresh}
    for drain in draining:
        if drain.pool not in names and drain.pool in before:
            entries.append(_marked(before[drain.pool], True))
    return entries


def _marked(entry: Mapping[str, Any], draining: bool) -> dict[str, Any]:
    marked = {k: v for k, v in entry.items() if k != "draining"}
    if draining:
        marked["draining"] = True
    return marked
