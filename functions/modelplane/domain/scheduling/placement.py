"""What the scheduler returns: the placement, and typed reasons for everything it did not do.

Reasons are data; :mod:`modelplane.domain.scheduling.explain` turns them into words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from modelplane.domain.scheduling.admission import OverCommit
from modelplane.domain.taints import Taint

# --- why a pool does not fit a member ---------------------------------------------------


@dataclass(frozen=True)
class OnRequest:
    """What every miss of one device request of the member names: that request."""

    request: str


@dataclass(frozen=True)
class SelectorMiss(OnRequest):
    """No device of the pool satisfies this selector of the request (with the others)."""

    selector: str


@dataclass(frozen=True)
class CountMiss(OnRequest):
    """Devices match the request, but a node has fewer of them than each pod needs."""

    want: int
    have: int


@dataclass(frozen=True)
class NothingOffered(OnRequest):
    """The pool's class offers no devices at all (none, or only ``count: 0``)."""


@dataclass(frozen=True)
class ConflictMiss:
    """Each request fits alone, but a node lacks devices for all of them at once."""

    requests: tuple[str, ...]


@dataclass(frozen=True)
class SyntheticOnly:
    """The member would claim only Synthetic devices here, though another pool has real ones."""

    requests: tuple[str, ...]


RequestMiss = SelectorMiss | CountMiss | NothingOffered
"""A miss of one device request (an :class:`OnRequest`)."""

Miss = RequestMiss | ConflictMiss | SyntheticOnly


@dataclass(frozen=True)
class PoolMiss:
    """Why one pool does not fit one member of an engine."""

    pool: str
    role: str
    miss: Miss


@dataclass(frozen=True)
class Shortage:
    """A pool that fits an engine but lacks free nodes for the replica."""

    pool: str
    free: int
    nodes: int
    needed: int


@dataclass(frozen=True)
class DeviceShortage:
    """A pool whose pods share nodes fits an engine, but its nodes lack the free devices
    for the replica's pods (each pod needs all it claims on one node).

    Attributes:
        free: Free devices per DeviceClass, over the whole pool.
        devices: Devices per DeviceClass, over the whole pool.
        needed: The replica's pods on this pool: ``(what one pod claims, how many)``.
        roomiest: The most devices free on any one node (per class, of the node with the
            most free), which tells fragmentation apart from a full pool.
    """

    pool: str
    free: tuple[tuple[str, int], ...]
    devices: tuple[tuple[str, int], ...]
    needed: tuple[tuple[tuple[tuple[str, int], ...], int], ...]
    roomiest: tuple[tuple[str, int], ...] = ()


# --- why a cluster was passed over ----------------------------------------------------


@dataclass(frozen=True)
class NotSelected:
    """The cluster lacks a label the deployment's ``clusterSelector`` asks for."""

    key: str
    want: str
    got: str | None

    @staticmethod
    def first(selector: Mapping[str, str], labels: Mapping[str, str]) -> NotSelected | None:
        """Return the first label (by key) of ``selector`` that ``labels`` lack, if any."""
        for key, want in sorted(selector.items()):
            got = labels.get(key)
            if got != want:
                return NotSelected(key, want, got)
        return None


@dataclass(frozen=True)
class OutsideCache:
    """The cluster is outside the referenced ModelCache's footprint."""

    cache: str


@dataclass(frozen=True)
class NotReady:
    """The cluster is not Ready."""


@dataclass(frozen=True)
class NoGateway:
    """The cluster has no gateway address yet."""


@dataclass(frozen=True)
class Repelled:
    """The cluster carries taints the deployment does not tolerate."""

    taints: tuple[Taint, ...]


@dataclass(frozen=True)
class NoPools:
    """The cluster publishes no GPU pools (or has not published them yet)."""

    unknown: bool = False


@dataclass(frozen=True)
class NoPoolFits:
    """No pool of the cluster fits an engine; ``draining``: the cluster's draining pools,
    which take nothing new whatever they fit."""

    engine: str
    misses: tuple[PoolMiss, ...]
    draining: tuple[str, ...] = ()


@dataclass(frozen=True)
class NoRoom:
    """Pools fit, but they lack free nodes for one more replica."""

    shortages: tuple[Shortage | DeviceShortage, ...]


@dataclass(frozen=True)
class NotNeeded:
    """The cluster could take a replica, but every wanted replica is placed."""


@dataclass(frozen=True)
class Held:
    """New placement is held (see :attr:`Placement.hold`), so the cluster was not tried."""


ClusterReason = (
    NotSelected
    | OutsideCache
    | NotReady
    | NoGateway
    | Repelled
    | NoPools
    | NoPoolFits
    | NoRoom
    | NotNeeded
    | Held
)

# --- why an existing replica was dropped ------------------------------------------------


@dataclass(frozen=True)
class ClusterGone:
    """The replica's cluster is not in the fleet the scheduler sees.

    Attributes:
        selecting: The deployment has a ``clusterSelector``, and a fleet read through it
            leaves out the clusters it no longer matches, so the cluster may still exist.
    """

    selecting: bool = False


@dataclass(frozen=True)
class ClusterDeselected:
    """The replica's cluster no longer matches the deployment's ``clusterSelector``."""

    reason: NotSelected


@dataclass(frozen=True)
class Evicted:
    """The replica's cluster carries a NoExecute taint the deployment does not tolerate."""

    taints: tuple[Taint, ...]


@dataclass(frozen=True)
class OnPinnedPool:
    """What every reason about an engine's pinned pool names: the engine and that pool."""

    engine: str
    pool: str


@dataclass(frozen=True)
class PoolGone(OnPinnedPool):
    """An engine's pinned pool is no longer published by the cluster."""


@dataclass(frozen=True)
class PoolDraining(OnPinnedPool):
    """An engine's pinned pool is draining: removed from (or replaced in) its cluster's
    spec, kept only until the replicas pinned there have moved (make before break)."""


@dataclass(frozen=True)
class PoolNoLongerFits(OnPinnedPool):
    """An engine's pinned pool no longer fits its (edited) device selectors."""

    miss: PoolMiss


@dataclass(frozen=True)
class NoPoolForEngine:
    """An engine added to the deployment fits no pool with room on the replica's cluster."""

    engine: str


@dataclass(frozen=True)
class Overcommitted(OnPinnedPool):
    """An edit grew the replica's footprint beyond what its pinned pool has free."""

    needed: int
    free: int


@dataclass(frozen=True)
class NotAdmitted:
    """Its pool charges more than it has, and replicas before it in admission order fill it.

    Attributes:
        engine: The engine pinned to the pool.
        over: The pool, what it has, what is charged before this replica, what it needs.
    """

    engine: str
    over: OverCommit


@dataclass(frozen=True)
class Unschedulable:
    """Its pods stayed unschedulable on its cluster beyond the grace period."""

    message: str


@dataclass(frozen=True)
class ScaledDown:
    """The deployment wants fewer replicas."""


@dataclass(frozen=True)
class Duplicate:
    """Another ModelReplica already holds this cluster and index."""

    name: str


DropReason = (
    ClusterGone
    | ClusterDeselected
    | Evicted
    | PoolGone
    | PoolDraining
    | PoolNoLongerFits
    | NoPoolForEngine
    | Overcommitted
    | NotAdmitted
    | Unschedulable
    | ScaledDown
    | Duplicate
)

# Reasons a replica must move because of an edit (or a cluster a clusterSelector no
# longer returns): it keeps running, as it is, until replacements are Ready (make before
# break). The others take it away at once: the user scaled down, a NoExecute taint
# evicts it (the docs' rule: delete, then reschedule), its cluster was deleted (the docs:
# its replicas stop being emitted), or another replica holds its place.
MOVE_REASONS = (
    ClusterGone,
    ClusterDeselected,
    PoolGone,
    PoolDraining,
    PoolNoLongerFits,
    NoPoolForEngine,
    Overcommitted,
    NotAdmitted,
    Unschedulable,
)

# --- why nothing new was placed ---------------------------------------------------------


@dataclass(frozen=True)
class InvalidSelector:
    """A device selector does not compile: the user's error, named precisely."""

    engine: str
    role: str
    request: str
    selector: str
    error: str


@dataclass(frozen=True)
class CostlySelector(InvalidSelector):
    """A device selector ran past Kubernetes' runtime cost limit on a device, or the
    deployment's selectors together past the call's ceiling (``error`` says which).

    Counted in CEL cost units, so it is the same verdict on any machine at any load; it
    holds like an invalid selector: nothing new is placed, nothing placed is dropped.
    """


@dataclass(frozen=True)
class CacheUnresolved:
    """The referenced ModelCache is missing or not yet known."""

    cache: str


Hold = InvalidSelector | CacheUnresolved

# --- the placement ------------------------------------------------------------------------


@dataclass(frozen=True)
class ClaimedRequest:
    """A ``claim: DRA`` device request of a member, as its ResourceClaim asks for it."""

    name: str
    device_class_name: str
    count: int
    selectors: tuple[str, ...]


@dataclass(frozen=True)
class MemberPlacement:
    """A member's claims on its engine's pool (empty: it claims nothing, costs nothing)."""

    role: str
    claims: tuple[ClaimedRequest, ...] = ()


@dataclass(frozen=True)
class EnginePlacement:
    """An engine's pool and the node cost it charges there.

    Attributes:
        pods: What its pods claim, ``(demand, how many pods)`` with a demand's
            ``(deviceClassName, count)`` pairs: a pool whose pods share nodes charges these.
    """

    engine: str
    pool: str
    nodes: int
    members: tuple[MemberPlacement, ...]
    pods: tuple[tuple[tuple[tuple[str, int], ...], int], ...] = ()


@dataclass(frozen=True)
class PlacedReplica:
    """One replica of the deployment and where it runs.

    Attributes:
        engines: Each engine's pool and claims; None when the replica is kept exactly as
            it exists (the selectors do not compile, or the cluster has not published
            its pools), so its existing spec must be kept too.
        new: True when this call placed it, False when it was retained.
    """

    cluster: str
    index: int
    engines: tuple[EnginePlacement, ...] | None
    new: bool = False


@dataclass(frozen=True)
class DroppedReplica:
    """An existing replica of the deployment that is no longer placed, and why."""

    cluster: str
    index: int
    name: str
    reason: DropReason


@dataclass(frozen=True)
class PoolUsage:
    """A pool's nodes, free before this placement (as observed) and after it."""

    cluster: str
    pool: str
    nodes: int
    free_before: int
    free_after: int


@dataclass(frozen=True)
class PassedOver:
    """A cluster that cannot take (another) replica, or was not needed, and why."""

    cluster: str
    reasons: tuple[ClusterReason, ...]


@dataclass(frozen=True)
class KeptOvercommitted:
    """A Ready replica of the deployment on an over-committed pool: kept, and reported.

    A Ready replica runs, so it is never moved for over-commit; the replicas after it
    in admission order (or the pool's lost capacity) are what must give way.
    """

    cluster: str
    index: int
    name: str
    engine: str
    over: OverCommit


@dataclass(frozen=True)
class Placement:
    """The scheduler's whole answer for one deployment.

    Attributes:
        wanted: ``spec.replicas``.
        replicas: Every placed replica, sorted by cluster then index.
        dropped: Existing replicas no longer placed, sorted by cluster then index.
        passed_over: Every cluster that cannot take one more replica, or was not
            needed, with its reasons, sorted by cluster name.
        hold: Why nothing new was placed, if it was held.
        selected: How many clusters match the deployment's ``clusterSelector``.
        pools: Every published pool's free nodes before and after, sorted.
        moving: Existing replicas that must move but keep running, exactly as they
            are, until enough replacements are Ready; sorted by cluster then index.
        overcommitted: Ready replicas kept on a pool that admission says is
            over-committed under them (reported, never moved).
    """

    wanted: int
    replicas: tuple[PlacedReplica, ...]
    dropped: tuple[DroppedReplica, ...] = ()
    passed_over: tuple[PassedOver, ...] = ()
    hold: Hold | None = None
    selected: int = 0
    pools: tuple[PoolUsage, ...] = ()
    moving: tuple[DroppedReplica, ...] = ()
    overcommitted: tuple[KeptOvercommitted, ...] = ()

    @property
    def short(self) -> int:
        """How many wanted replicas are not placed."""
        return max(self.wanted - len(self.replicas), 0)
