"""sharing: 2-GPU pods on 4-GPU nodes; a ``capacity: Devices`` pool packs them to its
devices, a pool without it takes a node per pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from e2e.context import EXAMPLES, ML, MP
from e2e.fleet import plan as fleet_plan
from e2e.fleet.context import (
    DEPLOYMENT,
    RESOURCE,
    Fleet,
    check_running,
    fits,
    gpu_pods,
    matching_per_node,
    no_gpu_pod_pending,
    placed_but_pending,
    planned_pools,
    platform,
)
from e2e.fleet.selector_scenarios import delete_probe, start_probe
from e2e.kube import Kube, Obj, conditions, dig

SHARED_SELECTOR = 'device.attributes["gpu.nvidia.com"].architecture == "Turing"'
WHOLE_SELECTOR = 'device.attributes["gpu.nvidia.com"].architecture == "Volta"'
POD_GPUS = 2  # each sharing replica's one pod claims 2 GPUs of a 4-GPU node


def sharing(ctx: Fleet) -> None:
    """Pods that share nodes (``capacity: Devices``), and node-granular counting without it.

    A pool that opts in: our scheduler fits as many 2-GPU pods as its nodes' devices hold;
    scaled one past that, it reports the shortfall; every pod it placed is Running with
    its claim allocated by kube-scheduler, pods share nodes, and no GPU pod is Pending. A
    pool that does not: one pod per node, however few GPUs it claims; kube-scheduler
    could fit more there (probe pods show how many). Both numbers are printed."""
    platform(ctx)
    ctx.ensure_namespace(ML)
    baseline = {n: len(gpu_pods(k)) for n, k in ctx.clusters.items()}
    names = ("shared-t4", "whole-v100")
    try:
        shared(ctx, names[0])
        whole(ctx, names[1])
    finally:
        for name in names:
            ctx.kube.delete(MP, "ModelDeployment", name, ML)
    ctx.wait_for(
        f"{' and '.join(names)} deleted: their replicas and pods gone",
        lambda: not any(ctx.replicas(n) for n in names)
        and {n: len(gpu_pods(k)) for n, k in ctx.clusters.items()} == baseline,
        180,
        lambda: str({n: len(gpu_pods(k)) for n, k in ctx.clusters.items()}),
    )


def only_pool(ctx: Fleet, expr: str, capacity: str) -> tuple[str, fleet_plan.Pool]:
    """The one pool whose devices match ``expr``; it must be of ``capacity`` and have room
    for two pods per node."""
    found = [(c, p) for c, p in planned_pools(ctx) if matching_per_node(p, [expr])]
    assert len(found) == 1, (
        f"one pool should match {expr!r}, found {[f'{c}/{p.name}' for c, p in found]}: "
        "make e2e-fleet adds it with e2e/fleet/pools.yaml (tools/fleet/run.sh's FLEET)"
    )
    cluster, pool = found[0]
    assert pool.capacity == capacity, f"{cluster}/{pool.name}: capacity {pool.capacity}"
    per_node = matching_per_node(pool, [expr])
    assert per_node >= 2 * POD_GPUS, f"{cluster}/{pool.name}: {per_node} devices per node"
    return cluster, pool


def sharing_deployment(name: str, expr: str, replicas: int) -> Obj:
    """The getting-started ModelDeployment, renamed, its pod claiming POD_GPUS of ``expr``."""
    md = next(d for d in Fleet.documents(EXAMPLES / DEPLOYMENT) if d["kind"] == "ModelDeployment")
    md["metadata"]["name"] = name
    md["spec"]["replicas"] = replicas
    (member,) = md["spec"]["template"]["spec"]["engines"][0]["members"]
    member["nodeSelector"]["devices"] = [
        {"name": "gpu", "count": POD_GPUS, "selectors": [{"cel": expr}]}
    ]
    return md


def scale_to_shortfall(ctx: Fleet, name: str, expr: str, want: int) -> dict[str, str]:
    """Ask for one replica more than ``want`` fit; our scheduler places ``want`` and reports
    the shortfall; kube-scheduler binds every placed replica's pod. Return the placement."""
    ctx.kube.apply(sharing_deployment(name, expr, want + 1))
    ctx.step(f"ModelDeployment {name}: {want + 1} replicas of one {POD_GPUS}-GPU pod, {expr!r}")
    assert fits(ctx, name) == want, f"fits({name}) = {fits(ctx, name)}, expected {want}"

    def shortfall() -> Mapping[str, Any] | None:
        md = ctx.kube.get(MP, "ModelDeployment", name, ML)
        cond = conditions(md).get("ReplicasScheduled", {})
        placed = ctx.placed(name)
        done = cond.get("status") == "False" and len(placed) == want and all(placed.values())
        return cond if done else None

    cond = ctx.wait_for(
        f"{want} placed, ReplicasScheduled=False reports the shortfall",
        shortfall,
        240,
        lambda: f"{ctx.placed(name)}\n"
        + ctx.explain(ctx.kube.get(MP, "ModelDeployment", name, ML), 0),
    )
    ctx.step(f"ReplicasScheduled: {cond.get('reason')}: {cond.get('message')}")
    placed = ctx.placed(name)
    disagree = placed_but_pending(ctx, 150, name)
    for line in disagree:
        print(f"    disagreement: {line}")
    ctx.stats["sharing_placed"] = ctx.stats.get("sharing_placed", 0) + len(placed)
    ctx.stats["sharing_disagreements"] = ctx.stats.get("sharing_disagreements", 0) + len(disagree)
    print(f"  agreement: {len(placed) - len(disagree)}/{len(placed)} replicas of {name} our "
          f"scheduler placed were allocated by kube-scheduler")  # fmt: skip
    assert not disagree, f"{len(disagree)} replicas of {name} placed by us, not by kube-scheduler"
    for replica, cluster in sorted(placed.items()):
        for line in check_running(ctx, replica, cluster, name):
            ctx.step(f"{replica} on {cluster}: {line}")
    no_gpu_pod_pending(ctx)
    return placed


def devices_by_node(kube: Kube, pool: str) -> dict[str, list[str]]:
    """Node of ``pool`` -> the devices allocated to the GPU pods bound there."""
    out: dict[str, list[str]] = {}
    for pod in gpu_pods(kube):
        node = str(dig(pod, "spec", "nodeName"))
        labels = dig(kube.get("v1", "Node", node), "metadata", "labels") or {}
        if labels.get(fleet_plan.POOL_LABEL) != pool:
            continue
        ns = pod["metadata"]["namespace"]
        for st in dig(pod, "status", "resourceClaimStatuses") or []:
            claim = kube.get(RESOURCE, "ResourceClaim", st["resourceClaimName"], ns)
            results = dig(claim, "status", "allocation", "devices", "results") or []
            out.setdefault(node, []).extend(f"{r['pool']}/{r['device']}" for r in results)
    return out


def shared(ctx: Fleet, name: str) -> None:
    cluster, pool = only_pool(ctx, SHARED_SELECTOR, "Devices")
    per_node = matching_per_node(pool, [SHARED_SELECTOR])
    want = pool.nodes * (per_node // POD_GPUS)
    ctx.step(f"{cluster}/{pool.name}: capacity Devices, {pool.nodes} nodes of {per_node} GPUs: "
             f"{want} pods of {POD_GPUS} GPUs fit")  # fmt: skip
    scale_to_shortfall(ctx, name, SHARED_SELECTOR, want)
    by_node = devices_by_node(ctx.clusters[cluster], pool.name)
    for node, devices in sorted(by_node.items()):
        ctx.step(f"{node}: {len(devices) // POD_GPUS} pods share it: {', '.join(devices)}")
    allocated = [d for devices in by_node.values() for d in devices]
    assert len(allocated) == len(set(allocated)) == want * POD_GPUS, by_node
    assert len(by_node) == pool.nodes, f"pods on {sorted(by_node)}, the pool has {pool.nodes}"
    assert all(len(d) == per_node for d in by_node.values()), f"not every node full: {by_node}"


def whole(ctx: Fleet, name: str) -> None:
    cluster, pool = only_pool(ctx, WHOLE_SELECTOR, "Nodes")
    per_node = matching_per_node(pool, [WHOLE_SELECTOR])
    ours = pool.nodes
    ctx.step(f"{cluster}/{pool.name}: capacity Nodes (the default), {pool.nodes} nodes of "
             f"{per_node} GPUs: a whole node per pod, {ours} pods")  # fmt: skip
    scale_to_shortfall(ctx, name, WHOLE_SELECTOR, ours)
    kube = ctx.clusters[cluster]
    more = 0
    try:
        while more < pool.nodes * per_node // POD_GPUS:
            if not start_probe(kube, f"fill-{more}", WHOLE_SELECTOR, POD_GPUS, pool.name):
                break
            more += 1
        by_node = devices_by_node(kube, pool.name)
    finally:
        for i in range(more + 1):
            delete_probe(kube, f"fill-{i}")
    theirs = ours + more
    ctx.stats["conservative"] = (f"{cluster}/{pool.name}", ours, theirs)
    print(f"  node-granular: on {cluster}/{pool.name} our scheduler places {ours} pods of "
          f"{POD_GPUS} GPUs; kube-scheduler fits {theirs} ({more} probe pods bound beside ours)")  # fmt: skip
    for node, devices in sorted(by_node.items()):
        ctx.step(f"{node}: {len(devices)} of {per_node} GPUs allocated: {', '.join(devices)}")
    assert theirs > ours, f"kube-scheduler fits {theirs}, no more than our {ours}"
