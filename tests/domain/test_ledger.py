"""The ledger's batch steps read as the one-at-a-time ones they replace.

The scheduler charges every replica of the fleet on each call, so it charges them in
one loop (:meth:`Ledger.charge_replicas`), reads every pool's usage at once
(:meth:`Ledger.usage`), and admission (:func:`refusals`) charges only the pools the
deployment's own replicas use. Each must say what charging engine by engine says.
"""

from __future__ import annotations

from modelplane.domain.scheduling.admission import rank
from modelplane.domain.scheduling.ledger import Ledger, refusals
from modelplane.domain.scheduling.placement import NotAdmitted, PoolUsage

from tests.domain.scheduler_kit import cluster, existing, pool

CLUSTERS = (cluster("a", pool("l4", 2), pool("big", 4)), cluster("b", pool("l4", 1)))
REPLICAS = (
    existing("x", "a", 0, {"e": ("l4", 1)}),
    existing("y", "a", 0, {"e": ("l4", 2), "f": ("big", 3)}),
    existing("z", "b", 0, {"e": ("l4", 2)}),
    existing("w", "gone", 0, {"e": ("l4", 1)}),  # a cluster the ledger does not open
)


def _one_by_one() -> Ledger:
    ledger = Ledger(CLUSTERS)
    for replica in REPLICAS:
        for pinned in replica.engines:
            ledger.charge(replica.cluster, pinned.pool, pinned.nodes, pinned.pods, rank(replica))
    return ledger


def test_charging_replicas_at_once_reads_as_charging_each_engine() -> None:
    ledger = Ledger(CLUSTERS)
    ledger.charge_replicas(REPLICAS, 1)
    expected = _one_by_one()
    assert (
        ledger.snapshot()
        == expected.snapshot()
        == {
            ("a", "l4"): -1,
            ("a", "big"): 1,
            ("b", "l4"): -1,
        }
    )
    for key in expected:
        assert ledger.overcommitted(*key) == expected.overcommitted(*key)
    assert [r[0][3] for r in ledger.overcommitted("a", "l4")] == ["y-a-0"]


def test_releasing_replicas_at_once_gives_back_what_they_charged() -> None:
    ledger = Ledger(CLUSTERS)
    ledger.charge_replicas(REPLICAS, 1)
    ledger.charge_replicas(REPLICAS, -1)
    assert ledger.snapshot() == Ledger(CLUSTERS).snapshot()
    assert all(ledger.overcommitted(*key) == [] for key in ledger)


def test_usage_lists_every_pool_sorted_with_its_free_nodes_before_and_now() -> None:
    ledger = Ledger(CLUSTERS)
    before = ledger.snapshot()
    ledger.charge_replicas(REPLICAS[:2], 1)
    assert ledger.usage(before) == (
        PoolUsage("a", "big", 4, 4, 1),
        PoolUsage("a", "l4", 2, 2, -1),
        PoolUsage("b", "l4", 1, 1, 1),
    )


def test_admission_reads_only_the_pools_the_deployment_uses() -> None:
    own = [existing("y", "a", 0, {"e": ("l4", 2), "f": ("big", 3)})]
    others = [r for r in REPLICAS if r.deployment != "y"]
    refused = refusals(CLUSTERS, others, own)
    # "x" came first in admission order (by name) and holds one of a/l4's two nodes;
    # b/l4, overcommitted too, is none of the deployment's business.
    assert list(refused) == [rank(own[0])]
    reason = refused[rank(own[0])]
    assert isinstance(reason, NotAdmitted)
    assert (reason.engine, reason.over.pool, reason.over.charged) == ("e", "l4", 1)
