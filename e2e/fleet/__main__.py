"""Run the fleet scenarios against the running control plane and fleet (make e2e-fleet).

    python -m e2e.fleet                  every scenario, in order
    python -m e2e.fleet deploy drain     only these (and what they need)
    python -m e2e.fleet --list

Prints each scenario and its checks as they pass, time and peak memory of everything in
the namespace (control plane and workload clusters), then ``N passed, N failed``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from e2e.__main__ import PeakMemory, run, stack_rss_mib
from e2e.fleet import scenarios as fleet
from e2e.kube import Kube
from e2e.scenarios import Scenario

SCENARIOS = (
    Scenario(
        "selectors",
        "our CEL against Kubernetes': each selector's verdict per cluster, ours from the "
        "ResourceSlices, theirs from kube-scheduler allocating a probe pod's claim",
        fleet.selectors,  # type: ignore[arg-type]
    ),
    Scenario(
        "deploy",
        "the getting-started ModelDeployment on real workload clusters: pods Running on the "
        "pinned pool, devices allocated by kube-scheduler to our selector, endpoints, service",
        fleet.deploy,  # type: ignore[arg-type]
    ),
    Scenario(
        "agreement",
        "scaled to the fleet's GPUs: every replica our scheduler placed, kube-scheduler allocated",
        fleet.agreement,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "capacity",
        "one more: our scheduler reports the shortfall, no workload cluster has a Pending GPU pod",
        fleet.capacity,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "sharing",
        "2-GPU pods on 4-GPU nodes: a capacity: Devices pool packs them to its devices, every "
        "placed pod Running with kube-scheduler's allocation; a pool without it, a node per pod",
        fleet.sharing,  # type: ignore[arg-type]
    ),
    Scenario(
        "drain",
        "a NoExecute taint on the InferenceCluster: the replica moves, the service follows",
        fleet.drain,  # type: ignore[arg-type]
        ("deploy",),
    ),
    Scenario(
        "cluster-lost",
        "a workload cluster's API server stopped: its replica is retained (docs) but not Ready "
        "(ClusterUnreachable), the ModelService routes to the survivor; restarted, it is back",
        fleet.cluster_lost,  # type: ignore[arg-type]
        ("deploy",),
    ),
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("only", nargs="*", help="scenario names (default: all)")
    parser.add_argument("--list", action="store_true", help="list the scenarios")
    args = parser.parse_args()
    if args.list:
        for scenario in SCENARIOS:
            print(f"{scenario.name}: {scenario.title}")
        return 0
    names = [s.name for s in SCENARIOS]
    unknown = [n for n in args.only if n not in names]
    if unknown:
        parser.error(f"unknown scenarios {unknown}; known: {names}")
    wanted = set(args.only or names)
    for scenario in SCENARIOS:
        if scenario.name in wanted:
            wanted.update(scenario.needs)
    memory = PeakMemory()
    memory.start()
    ctx = fleet.Fleet.make(
        Kube(),
        Path(os.environ.get("E2E_STATE", "build/e2e")),
        Path(os.environ.get("FLEET_STATE", "build/fleet")),
    )
    print(f"workload clusters: {', '.join(ctx.clusters)}")
    passed: list[str] = []
    failed: list[str] = []
    skipped: list[str] = []
    started = time.monotonic()
    for scenario in SCENARIOS:
        if scenario.name not in wanted:
            continue
        print(f"\n=== {scenario.name}: {scenario.title}", flush=True)
        missing = [n for n in scenario.needs if n not in passed]
        if missing:
            skipped.append(scenario.name)
            print(f"--- SKIP {scenario.name}: needs {', '.join(missing)}, which did not pass")
            continue
        (passed if run(scenario, ctx) else failed).append(scenario.name)
    memory.stop.set()
    memory.peak = max(memory.peak, stack_rss_mib())
    print(
        f"\nscenarios took {time.monotonic() - started:.0f}s; peak resident memory of the "
        f"control plane and {len(ctx.clusters)} workload clusters {memory.peak:.0f} MiB"
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
    if failed:
        print(f"failed: {', '.join(failed)}")
    if skipped:
        print(f"skipped: {', '.join(skipped)}")
    line = f"{len(passed)} passed, {len(failed)} failed"
    if skipped:
        line += f", {len(skipped)} skipped"
    print(line, flush=True)
    return 1 if failed or skipped else 0


if __name__ == "__main__":
    sys.exit(main())
