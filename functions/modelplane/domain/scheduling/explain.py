"""Words for the scheduler's typed reasons, for conditions, events and ``modelplane plan``.

Messages read like kubectl's: short, lower case, naming the cluster, pool, engine and
device request at fault, for example ``no pool fits engine qwen: gpu needs memory >=
40Gi`` or ``pool gpu-h100 has 0 of 2 nodes free, needs 1``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from modelplane.domain.scheduling import placement, sharing
from modelplane.domain.scheduling.admission import OverCommit
from modelplane.domain.scheduling.fleet import Demand
from modelplane.domain.taints import Taint
from modelplane.domain.text import cut

# The usual condition message limit people can read at a glance in `kubectl describe`.
SUMMARY_LIMIT = 1024
NAMES_PER_GROUP = 3
MISSES_SHOWN = 3
SELECTOR_WIDTH = 96

_QUOTE = '"'
_CAPACITY = re.compile(
    r'^device\.capacity\["[^"]+"\]\.(\w+)\.compareTo\(quantity\("([^"]+)"\)\)\s*'
    r"(>=|>|<=|<|==|!=)\s*0$"
)
_VERSION = re.compile(
    r'^device\.attributes\["[^"]+"\]\.(\w+)\.(isGreaterThan|isLessThan)\(semver\("([^"]+)"\)\)$'
)
_ATTRIBUTE = re.compile(r'^device\.attributes\["[^"]+"\]\.(\w+)\s*(==|!=)\s*("[^"]*"|\w+)$')
_DRIVER = re.compile(r'^device\.driver\s*(==|!=)\s*"([^"]*)"$')
_PRESENCE = re.compile(r'^"([^"]+)"\s+in\s+device\.(attributes|capacity)$')


def selector(expression: str) -> str:
    """Return a CEL device selector in a few words, or the expression itself, shortened.

    The docs' idioms read as ``memory >= 40Gi``, ``architecture == Hopper``,
    ``cudaComputeCapability > 8.9.0`` or ``driver == dra.net``; ``&&`` reads as ``and``.
    """
    text = " ".join(expression.split())
    parts = [p.strip() for p in text.split("&&")]
    words = [_idiom(p) for p in parts]
    if all(w is not None for w in words):
        return " and ".join(w for w in words if w is not None)
    return cut(text, SELECTOR_WIDTH)


def _idiom(part: str) -> str | None:
    if m := _CAPACITY.match(part):
        return f"{m[1]} {m[3]} {m[2]}"
    if m := _VERSION.match(part):
        return f"{m[1]} {'>' if m[2] == 'isGreaterThan' else '<'} {m[3]}"
    if m := _ATTRIBUTE.match(part):
        return f"{m[1]} {m[2]} {m[3].strip(_QUOTE)}"
    if m := _DRIVER.match(part):
        return f"driver {m[1]} {m[2]}"
    if m := _PRESENCE.match(part):
        return f"{m[1]} {m[2]}"
    return None


def miss(reason: placement.Miss) -> str:
    """Say why a pool does not fit a member."""
    match reason:
        case placement.OnRequest(request):
            return f"{request} needs {_needs(reason)}"
        case placement.ConflictMiss(requests):
            return f"{_and(requests)} do not fit on one node together"
        case placement.SyntheticOnly(requests):
            return f"{_and(requests)} would match only Synthetic devices"


def _needs(reason: placement.RequestMiss) -> str:
    """Say what one device request needs that the pool lacks."""
    match reason:
        case placement.SelectorMiss(_, expression):
            return selector(expression)
        case placement.CountMiss(_, want, have):
            return f"{want} per node, the pool has {have}"
        case placement.NothingOffered():
            return "a device, the pool's class offers none"


def pool_miss(reason: placement.PoolMiss) -> str:
    """Say why a pool does not fit a member, naming the member unless it is Standalone."""
    text = miss(reason.miss)
    return text if reason.role == "Standalone" else f"{reason.role} {text}"


def taints(found: Sequence[Taint]) -> str:
    """Name taints the way kubectl prints them."""
    noun = "taint" if len(found) == 1 else "taints"
    return f"{noun} {', '.join(str(t) for t in found)}"


def cluster_reason(reason: placement.ClusterReason) -> str:
    """Say why a cluster was passed over."""
    match reason:
        case placement.NotSelected(key, want, got):
            have = "no such label" if got is None else f"{key}={got}"
            return f"clusterSelector wants {key}={want}, cluster has {have}"
        case placement.OutsideCache(cache):
            return f"outside the footprint of ModelCache {cache}"
        case placement.NotReady():
            return "not Ready"
        case placement.NoGateway():
            return "no gateway address"
        case placement.Repelled(found):
            return f"{taints(found)} not tolerated"
        case placement.NoPools(unknown):
            return "GPU pools not published yet" if unknown else "publishes no GPU pools"
        case placement.NoPoolFits(engine, misses, draining):
            drains = f" (draining, taking nothing new: {', '.join(draining)})" if draining else ""
            return f"no pool fits engine {engine}{_misses(misses)}{drains}"
        case placement.NoRoom(shortages):
            return "; ".join(_shortage(s) for s in shortages)
        case placement.NotNeeded():
            return "not needed: every wanted replica is placed"
        case placement.Held():
            return "not tried: placement is held"


def _shortage(shortage: placement.Shortage | placement.DeviceShortage) -> str:
    """``pool p has 0 of 2 nodes free, needs 1``; a pool whose pods share nodes in devices:
    ``pool p has 4 of 16 gpu.nvidia.com free, needs 1 pod of 8 gpu.nvidia.com on one node``."""
    if isinstance(shortage, placement.Shortage):
        s = shortage
        return f"pool {s.pool} has {max(s.free, 0)} of {s.nodes} nodes free, needs {s.needed}"
    have = dict(shortage.devices)
    free = ", ".join(f"{n} of {have[c]} {c}" for c, n in shortage.free) or "no devices"
    pods = "; ".join(_pods(claimed, n) for claimed, n in shortage.needed)
    each = "on one node" if sum(n for _, n in shortage.needed) == 1 else "each on one node"
    text = f"pool {shortage.pool} has {free} free, needs {pods} {each}"
    return text + _fragmented(shortage)


def _fragmented(shortage: placement.DeviceShortage) -> str:
    """When enough devices are free in all but no node has them together, say so."""
    free = dict(shortage.free)
    wanted: dict[str, int] = {}
    for claimed, n in shortage.needed:
        for c, k in sharing.claimed_devices(claimed):
            wanted[c] = wanted.get(c, 0) + k * n
    if not wanted or any(free.get(c, 0) < k for c, k in wanted.items()):
        return ""
    most = ", ".join(f"{n} {c}" for c, n in shortage.roomiest if n) or "no devices"
    return (
        f": enough are free in all, but spread over nodes (at most {most} on one node); "
        "a node frees up when the pods on it go, or add nodes to the pool"
    )


def _pods(claimed: Demand, n: int) -> str:
    devices = " + ".join(f"{k} {c}" for c, k in sharing.claimed_devices(claimed))
    text = f"{n} {'pod' if n == 1 else 'pods'} of {devices}"
    return f"{text}, a node of its own (gang)" if sharing.is_gang(claimed) else text


def _misses(misses: Sequence[placement.PoolMiss]) -> str:
    if not misses:
        return ""
    texts = _unique(pool_miss(m) for m in misses)
    if len(texts) == 1:
        return f": {texts[0]}"
    shown = [f"{m.pool}: {pool_miss(m)}" for m in misses[:MISSES_SHOWN]]
    more = f"; {len(misses) - MISSES_SHOWN} more pools" if len(misses) > MISSES_SHOWN else ""
    return f" ({'; '.join(shown)}{more})"


def drop_reason(reason: placement.DropReason) -> str:
    """Say why an existing replica leaves its cluster."""
    match reason:
        case placement.ClusterGone(selecting):
            if selecting:
                return "its cluster no longer exists or no longer matches the clusterSelector"
            return "its cluster no longer exists"
        case placement.ClusterDeselected(why):
            return f"its cluster no longer matches: {cluster_reason(why)}"
        case placement.Evicted(found):
            return f"{taints(found)} not tolerated"
        case placement.PoolGone(engine, pool):
            return f"pool {pool} of engine {engine} is no longer published"
        case placement.PoolDraining(engine, pool):
            return f"pool {pool} of engine {engine} is draining"
        case placement.PoolNoLongerFits(engine, pool, why):
            return f"pool {pool} no longer fits engine {engine}: {pool_miss(why)}"
        case placement.NoPoolForEngine(engine):
            return f"no pool with room on its cluster fits new engine {engine}"
        case placement.Overcommitted(engine, pool, needed, free):
            return f"engine {engine} now needs {needed} nodes of pool {pool}, which has {free} free"
        case placement.NotAdmitted(engine, over):
            return f"engine {engine}: {overcommit(over)}"
        case placement.Unschedulable(message):
            return f"its pods stayed unschedulable beyond the grace period: {message}"
        case placement.ScaledDown():
            return "scaled down"
        case placement.Duplicate(name):
            return f"{name} already holds its cluster and index"


def overcommit(over: OverCommit) -> str:
    """Say why a pool does not admit a replica: what it has, what is charged before it.

    For example ``pool gpu on c1 is over-committed: it has 1 node (observed; fewer than
    declared), replicas admitted before this one take 1, this one needs 1``.
    """
    has = f"{over.capacity} {'node' if over.capacity == 1 else 'nodes'}"
    if over.observed:
        # a pool whose pods share nodes also loses room to a node publishing fewer devices
        fewer = "fewer nodes or devices" if over.unit == "pods" else "fewer"
        has += f" (observed; {fewer} than declared)"
    if over.unit == "pods":
        charged = f"pods admitted before this replica use {over.charged} of them"
        needs = f"its {over.needed} {'pod finds' if over.needed == 1 else 'pods find'} no node"
        needs += " with room for all it claims"
    else:
        charged = f"replicas admitted before this one take {over.charged}"
        needs = f"this one needs {over.needed}"
    return f"pool {over.pool} on {over.cluster} is over-committed: it has {has}, {charged}, {needs}"


def hold(reason: placement.Hold) -> str:
    """Say why nothing new is placed."""
    match reason:
        case placement.CostlySelector(engine, role, request, expression, error):
            # An admitted selector may be 10 KiB: shortened, so the error still shows.
            text = cut(" ".join(expression.split()), 120)
            return f"engine {engine} {role} device {request}: selector {text!r} {error}"
        case placement.InvalidSelector(engine, role, request, expression, error):
            text = " ".join(expression.split())
            return f"engine {engine} {role} device {request}: selector {text!r} is invalid: {error}"
        case placement.CacheUnresolved(cache):
            return f"ModelCache {cache} is not resolved"


# Clusters that nearly fit come first: they are what an operator can act on.
_ORDER: dict[type, int] = {
    placement.NoRoom: 0,
    placement.NoPoolFits: 1,
    placement.Repelled: 2,
    placement.NotReady: 3,
    placement.NoGateway: 3,
    placement.NoPools: 3,
    placement.OutsideCache: 4,
    placement.NotSelected: 5,
    placement.Held: 6,
    placement.NotNeeded: 7,
}


def summary(passed_over: Iterable[placement.PassedOver], limit: int = SUMMARY_LIMIT) -> str:
    """Say, per cluster, why it was passed over, in at most ``limit`` characters.

    Clusters with the same reasons are grouped; groups that nearly fit come first.

    Returns:
        For example ``nebius-1: pool gpu-h100 has 0 of 2 nodes free, needs 1;
        gke-a, gke-b: taint modelplane.ai/maintenance:NoSchedule not tolerated``.
    """
    groups: dict[str, list[str]] = {}
    rank: dict[str, int] = {}
    for entry in passed_over:
        text = ", ".join(cluster_reason(r) for r in entry.reasons)
        groups.setdefault(text, []).append(entry.cluster)
        rank[text] = min(_ORDER.get(type(r), 9) for r in entry.reasons)
    ordered = sorted(groups, key=lambda t: (rank[t], groups[t][0]))
    parts = [f"{_names(groups[t])}: {t}" for t in ordered]
    return _cap(parts, limit)


def _names(clusters: Sequence[str]) -> str:
    if len(clusters) <= NAMES_PER_GROUP:
        return ", ".join(clusters)
    shown = ", ".join(clusters[:NAMES_PER_GROUP])
    return f"{shown} and {len(clusters) - NAMES_PER_GROUP} more"


def _cap(parts: Sequence[str], limit: int) -> str:
    """Join parts with ``; `` in at most ``limit`` characters, saying how many are left out."""
    kept: list[str] = []
    length = 0
    for i, part in enumerate(parts):
        later = len(parts) - i - 1
        tail = len(f"; and {later} more") if later else 0
        grown = length + (2 if kept else 0) + len(part)
        if grown + tail > limit:
            break
        kept.append(part)
        length = grown
    if not kept:
        return cut(parts[0], limit) if parts else ""
    left = len(parts) - len(kept)
    return "; ".join(kept) + (f"; and {left} more" if left else "")


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _unique(texts: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(texts))
