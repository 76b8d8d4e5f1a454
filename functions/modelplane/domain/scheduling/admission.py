"""Admission: which replicas a pool holds when more is charged there than it has.

Deployments are reconciled concurrently, each reading the fleet as it was when its call
began, so two can take a pool's last node; a pool can also shrink under its replicas
(its ``nodeCount`` lowered, nodes lost or cordoned). Every reconcile of every deployment
then decides who stays the same way, from the same fleet, in one order:

1. Ready replicas first: their pods run, so they hold what they run on;
2. then the oldest first, by ``metadata.creationTimestamp``;
3. then by namespace, then name (then cluster and index, for what has no name).

Each replica in turn is admitted on a pool if what it charges there fits what the
replicas admitted before it left (whole nodes, or on a ``capacity: Devices`` pool its
pods packed where the earlier ones left room: :func:`.sharing.pack_in_order`). One that
does not fit is over-committed there. Its deployment places a replacement where there
is room and lets it go once the replacement is Ready (make before break); a Ready one is
never moved for this, only reported. A replica stuck (its pods unschedulable beyond the
grace period) is over-committed wherever it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from modelplane.domain.scheduling.fleet import ExistingReplica

Rank = tuple[int, str, str, str, str, int]
"""A replica's place in admission order (lower is admitted first)."""


def rank(replica: ExistingReplica) -> Rank:
    """Return a replica's place in admission order (see the module)."""
    return (
        0 if replica.ready else 1,
        replica.created,
        replica.namespace,
        replica.name,
        replica.cluster,
        replica.index,
    )


@dataclass(frozen=True)
class OverCommit:
    """A pool that charges more than it has, seen from one replica not admitted there.

    Attributes:
        cluster: The pool's cluster.
        pool: The pool.
        capacity: What it has: nodes, or devices per class on a Devices pool.
        charged: What the replicas admitted before this one charge there.
        needed: What this replica charges there.
        unit: ``nodes``, or ``pods`` on a pool whose pods share nodes.
        observed: The capacity is what the cluster shows (smaller than declared).
    """

    cluster: str
    pool: str
    capacity: int
    charged: int
    needed: int
    unit: str = "nodes"
    observed: bool = False
