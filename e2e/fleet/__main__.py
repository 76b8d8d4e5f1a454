"""Run the fleet scenarios against the running control plane and fleet (make e2e-fleet).

    python -m e2e.fleet                  every scenario, in order
    python -m e2e.fleet deploy drain     only these (and what they need)
    python -m e2e.fleet --list

Prints each scenario and its checks as they pass, time and peak memory of everything in
the namespace (control plane and workload clusters), then ``N passed, N failed``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from e2e.__main__ import circuit_breaker_opens, run_all, wanted_scenarios
from e2e.fleet import capacity_scenarios as capacity
from e2e.fleet import deploy_scenarios as deploy
from e2e.fleet import move_scenarios as moves
from e2e.fleet import pool_scenarios as pools
from e2e.fleet import rollout_scenarios as rollouts
from e2e.fleet import selector_scenarios as selectors
from e2e.fleet import sharing_scenarios as sharing
from e2e.fleet.context import Fleet
from e2e.kube import Kube
from e2e.scenarios import Scenario

SCENARIOS = (
    Scenario(
        "selectors",
        "our CEL against Kubernetes': each selector's verdict per cluster, ours from the "
        "ResourceSlices, theirs from kube-scheduler allocating a probe pod's claim",
        selectors.selectors,  # type: ignore[arg-type]
    ),
    Scenario(
        "capacity-burst",
        "several ModelDeployments in one kubectl apply against room for fewer: exactly the room "
        "placed and Running, the rest InsufficientCapacity, no GPU pod Pending",
        capacity.burst,  # type: ignore[arg-type]
    ),
    Scenario(
        "capacity-node-lost",
        "the GPU node under a replica deleted from its workload cluster: the replica is "
        "replaced where there is room",
        capacity.node_lost,  # type: ignore[arg-type]
        ("capacity-burst",),
    ),
    Scenario(
        "capacity-cordon",
        "a free node cordoned: nothing new lands there until it is uncordoned",
        capacity.cordon,  # type: ignore[arg-type]
        ("capacity-burst",),
    ),
    Scenario(
        "capacity-shrink",
        "a pool's declared nodeCount lowered under its running replica: it keeps running, "
        "nothing new lands there",
        capacity.shrink,  # type: ignore[arg-type]
        ("capacity-burst",),
    ),
    Scenario(
        "deploy",
        "the getting-started ModelDeployment on real workload clusters: pods Running on the "
        "pinned pool, devices allocated by kube-scheduler to our selector, endpoints, service",
        deploy.deploy,  # type: ignore[arg-type]
    ),
    Scenario(
        "agreement",
        "scaled to the fleet's GPUs: every replica our scheduler placed, kube-scheduler allocated",
        deploy.agreement,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "capacity",
        "one more: our scheduler reports the shortfall, no workload cluster has a Pending GPU pod",
        deploy.capacity,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "sharing",
        "2-GPU pods on 4-GPU nodes: a capacity: Devices pool packs them to its devices, every "
        "placed pod Running with kube-scheduler's allocation; a pool without it, a node per pod",
        sharing.sharing,  # type: ignore[arg-type]
    ),
    Scenario(
        "drain",
        "a NoExecute taint on the InferenceCluster: the replica moves, the service follows",
        moves.drain,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "cluster-lost",
        "a workload cluster's API server stopped: its replica is retained (docs) but not Ready "
        "(ClusterUnreachable), the ModelService routes to the survivor; restarted, it is back",
        moves.cluster_lost,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "pool-removal",
        "the pool under the replica removed from its InferenceCluster's spec: published "
        "draining while the replica runs there, the replica moves (make before break) and is "
        "Ready elsewhere, then the pool goes",
        pools.pool_removal,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "rollout",
        "an image edit on three replicas (maxSurge 0, maxUnavailable 1): at every observation "
        "two Ready and routed to, at the end all three run the new image",
        rollouts.rollout,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "bad-image",
        "an image whose pod never runs: the rollout stops after one replica and says so, "
        "the other two keep serving the previous image",
        rollouts.bad_image,  # type: ignore[arg-type]
        ("deploy",),
    ),
)


def main() -> int:
    wanted = wanted_scenarios(SCENARIOS, __doc__)
    if wanted is None:
        return 0
    ctx = Fleet.make(
        Kube(),
        Path(os.environ.get("E2E_STATE", "build/e2e")),
        Path(os.environ.get("FLEET_STATE", "build/fleet")),
    )
    print(f"workload clusters: {', '.join(ctx.clusters)}")
    outcome = run_all(SCENARIOS, wanted, ctx)
    print(
        f"\nscenarios took {outcome.seconds:.0f}s; peak resident memory of the "
        f"control plane and {len(ctx.clusters)} workload clusters {outcome.peak_mib:.0f} MiB"
    )
    if "disagreements" in ctx.stats:
        print(
            f"agreement: {ctx.stats['disagreements']} disagreements between our placements and "
            f"kube-scheduler's allocations ({ctx.stats['placed']} replicas placed)"
        )
    if "sharing_placed" in ctx.stats:
        print(
            f"sharing: {ctx.stats['sharing_disagreements']} disagreements between our placements "
            f"and kube-scheduler's allocations ({ctx.stats['sharing_placed']} replicas placed)"
        )
    if "conservative" in ctx.stats:
        pool, ours, theirs = ctx.stats["conservative"]
        print(
            f"node-granular: {pool}: our scheduler places {ours} pods, kube-scheduler fits {theirs}"
        )
    if "selector_probes" in ctx.stats:
        print(
            f"selectors: {ctx.stats['selector_disagreements']} disagreements between our CEL "
            f"and kube-scheduler in {ctx.stats['selector_probes']} probes"
        )
    for key in ("rollout_timeline", "bad_image_timeline", "pool_removal_timeline"):
        if key in ctx.stats:
            print(f"{key.replace('_', ' ')}: {ctx.stats[key]}")
    capacity.summary(ctx)
    breakers = circuit_breaker_opens()
    if breakers:  # a composite whose circuit opened reconciles at most every 30 s
        print(f"Crossplane's watch circuit breaker opened: {breakers}")
    return outcome.summary()


if __name__ == "__main__":
    sys.exit(main())
