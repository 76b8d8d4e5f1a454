"""Capacity that tells the truth, on real workload clusters (make e2e-fleet).

Four scenarios, each on one-GPU ModelDeployments whose selector (>= 16Gi of GPU memory)
fits the fleet's node-granular pools (one pod per node): the V100, L4 and L40S pools.

- ``capacity-burst``: several ModelDeployments in one ``kubectl apply`` against pools
  with room for fewer: exactly the room is placed and Running, the rest report
  InsufficientCapacity.
- ``capacity-node-lost``: the GPU node under a replica deleted from its workload
  cluster (the pod garbage collector removes its pods, as in a real cluster): the
  replica is replaced where there is room; the node is restored after.
- ``capacity-cordon``: the free node cordoned: a new deployment is not placed there
  (InsufficientCapacity) until it is uncordoned.
- ``capacity-shrink``: a pool's declared ``nodeCount`` lowered under its running
  replica: the Ready replica keeps running (never moved for over-commit) and nothing
  new lands on the pool; restored after.

Each ends settled: no GPU pod Pending on any workload cluster, every replica our
scheduler placed allocated by kube-scheduler (0 disagreements), and every Ready
ModelReplica with all its engine pods Running on its cluster (read there, not from our
status). Each records how long the fleet took to settle and the counts (placed,
Running, Pending, disagreements) in ``ctx.stats["capacity"]``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from e2e.context import EXAMPLES, ML, MP
from e2e.fleet import plan as fleet_plan
from e2e.fleet.context import (
    APPS,
    DEPLOYMENT,
    Fleet,
    gpu_pods,
    matching_per_node,
    pending,
    placed_but_pending,
    planned_pools,
    platform,
    pods_of,
)
from e2e.kube import Obj, condition_true, conditions, dig

SELECTOR = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) >= 0'
PREFIX = "cap-"
SETTLE_SECONDS = 300


@dataclass(frozen=True)
class Tally:
    """The fleet once settled: our placements and what the workload clusters run."""

    seconds: float
    placed: int
    running: int
    pending: int
    disagreements: int

    def line(self) -> str:
        return (
            f"settled in {self.seconds:.0f}s: {self.placed} placed, {self.running} GPU pods "
            f"Running, {self.pending} Pending, {self.disagreements} disagreements"
        )


# -- the deployments ------------------------------------------------------------------------


def deployment(name: str) -> Obj:
    """The getting-started ModelDeployment, renamed, one replica of one >= 16Gi GPU."""
    md = next(d for d in Fleet.documents(EXAMPLES / DEPLOYMENT) if d["kind"] == "ModelDeployment")
    md["metadata"]["name"] = name
    md["spec"]["replicas"] = 1
    (member,) = md["spec"]["template"]["spec"]["engines"][0]["members"]
    member["nodeSelector"]["devices"] = [
        {"name": "gpu", "count": 1, "selectors": [{"cel": SELECTOR}]}
    ]
    return md


def ours(ctx: Fleet) -> list[str]:
    """The scenarios' ModelDeployments that exist now."""
    return sorted(
        d["metadata"]["name"]
        for d in ctx.kube.list(MP, "ModelDeployment", ML)
        if d["metadata"]["name"].startswith(PREFIX)
    )


def apply_together(ctx: Fleet, names: list[str]) -> None:
    """One ``kubectl apply`` of every deployment, as a GitOps sync applies a folder."""
    path = ctx.state / "capacity-burst.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment(n) for n in names]})
    )
    ctx.kubectl("apply", "-f", str(path))
    ctx.step(f"kubectl apply of {len(names)} ModelDeployments at once: {', '.join(names)}")


def delete_deployments(ctx: Fleet, names: Iterable[str]) -> None:
    names = list(names)
    for name in names:
        ctx.kube.delete(MP, "ModelDeployment", name, ML)
    ctx.wait_gone(
        f"{', '.join(names)} and their replicas gone",
        lambda: [n for n in names if ctx.kube.get(MP, "ModelDeployment", n, ML) or ctx.replicas(n)],
        180,
    )


# -- the fleet's pools ------------------------------------------------------------------------


def selected_pools(ctx: Fleet) -> list[tuple[str, fleet_plan.Pool]]:
    """The node-granular pools whose every node has a device the selector matches."""
    return [
        (c, p)
        for c, p in planned_pools(ctx)
        if p.capacity != "Devices" and matching_per_node(p, [SELECTOR])
    ]


def pool_nodes(ctx: Fleet, cluster: str, pool: str) -> list[Obj]:
    return ctx.clusters[cluster].list("v1", "Node", None, {fleet_plan.POOL_LABEL: pool})


def busy_nodes(ctx: Fleet, cluster: str) -> set[str]:
    """Nodes of ``cluster`` a GPU pod is bound to."""
    return {
        str(dig(p, "spec", "nodeName"))
        for p in gpu_pods(ctx.clusters[cluster])
        if dig(p, "spec", "nodeName")
    }


def room(ctx: Fleet) -> int:
    """Nodes of the selected pools that exist, take pods and hold no GPU pod yet."""
    free = 0
    for cluster, pool in selected_pools(ctx):
        busy = busy_nodes(ctx, cluster)
        for node in pool_nodes(ctx, cluster, pool.name):
            if not dig(node, "spec", "unschedulable") and node["metadata"]["name"] not in busy:
                free += 1
    return free


# -- settling ---------------------------------------------------------------------------------


def not_running(ctx: Fleet, names: Iterable[str]) -> list[str]:
    """Why the fleet is not settled: a GPU pod Pending, a placed replica not Ready, or a
    Ready replica whose engine pods are not all Running on its cluster."""
    out = [
        f"{c}: pod {p['metadata']['name']} Pending: {why}"
        for c, kube in ctx.clusters.items()
        for p in gpu_pods(kube)
        if (why := pending(p))
    ]
    for name in names:
        for replica in ctx.replicas(name):
            rname, cluster = replica["metadata"]["name"], str(dig(replica, "spec", "clusterName"))
            if not condition_true(replica, "Ready"):
                out.append(f"{rname} on {cluster}: not Ready")
                continue
            out += engine_pods_not_running(ctx, rname, cluster)
    return out


def engine_pods_not_running(ctx: Fleet, replica: str, cluster: str) -> list[str]:
    """A Ready replica's engine workloads: every desired pod Running (on the cluster)."""
    kube = ctx.clusters[cluster]
    out = []
    workloads = ctx.workloads_of(replica)
    if not workloads:  # Ready before its Objects are listed: nothing to check yet
        out.append(f"{replica}: applies no Deployment or LeaderWorkerSet yet")
    for kind, ns, name in workloads:
        workload = kube.get(APPS[kind], kind, name, ns)
        if workload is None:
            out.append(f"{replica}: {kind} {ns}/{name} missing on {cluster}")
            continue
        if kind != "Deployment":
            continue  # no LeaderWorkerSet controller here: its pods do not exist
        workload.setdefault("kind", kind)
        pods = [p for p in pods_of(kube, workload) if not dig(p, "metadata", "deletionTimestamp")]
        running = [p for p in pods if dig(p, "status", "phase") == "Running"]
        want = int(dig(workload, "spec", "replicas") or 1)
        if len(running) < want:
            out.append(
                f"{replica} Ready but {kind} {name} on {cluster} has {len(running)} of {want} pods Running"
            )
    return out


def settle(
    ctx: Fleet, what: str, names: list[str], started: float, check: Callable[[], str] | None = None
) -> Tally:
    """Wait until the fleet settles (and ``check`` says "" ), then count and record it."""

    def settled() -> bool:
        return not not_running(ctx, names) and not (check() if check else "")

    ctx.wait_for(
        f"{what}: settled",
        settled,
        SETTLE_SECONDS,
        lambda: "\n".join(not_running(ctx, names) + ([check()] if check else [])),
        interval=3,
    )
    seconds = time.monotonic() - started
    disagree = [line for n in names for line in placed_but_pending(ctx, 0, n)]
    pods = [p for kube in ctx.clusters.values() for p in gpu_pods(kube)]
    tally = Tally(
        seconds=seconds,
        placed=sum(1 for n in names for r in ctx.replicas(n) if dig(r, "spec", "clusterName")),
        running=sum(1 for p in pods if dig(p, "status", "phase") == "Running"),
        pending=sum(1 for p in pods if pending(p)),
        disagreements=len(disagree),
    )
    ctx.stats.setdefault("capacity", {})[what] = tally
    print(f"  {what}: {tally.line()}")
    for line in disagree:
        print(f"    disagreement: {line}")
    assert tally.pending == 0, "GPU pods Pending"
    assert not disagree, f"{len(disagree)} replicas placed by us, not by kube-scheduler"
    return tally


def scheduled(ctx: Fleet, name: str) -> dict[str, Any]:
    md = ctx.kube.get(MP, "ModelDeployment", name, ML)
    return dict(conditions(md).get("ReplicasScheduled", {}))


def placement(ctx: Fleet, name: str) -> tuple[str, str] | None:
    """(cluster, node) of a one-replica deployment's engine pod, once Running."""
    for replica in ctx.replicas(name):
        cluster = str(dig(replica, "spec", "clusterName"))
        for kind, ns, wname in ctx.workloads_of(replica["metadata"]["name"]):
            workload = ctx.clusters[cluster].get(APPS[kind], kind, wname, ns)
            if workload is None:
                continue
            workload.setdefault("kind", kind)
            for pod in pods_of(ctx.clusters[cluster], workload):
                if dig(pod, "status", "phase") == "Running" and dig(pod, "spec", "resourceClaims"):
                    return cluster, str(dig(pod, "spec", "nodeName"))
    return None


def observed_nodes(ctx: Fleet, cluster: str, pool: str) -> int | None:
    ic = ctx.kube.get(MP, "InferenceCluster", cluster)
    for entry in dig(ic, "status", "gpuPools") or []:
        if entry.get("name") == pool:
            found = dig(entry, "observed", "nodes")
            return found if isinstance(found, int) else None
    return None


def wait_observed(ctx: Fleet, cluster: str, pool: str, nodes: int) -> None:
    """The InferenceCluster publishes what its workload cluster now shows of the pool."""
    ctx.wait_for(
        f"InferenceCluster {cluster} observes {nodes} usable node(s) in {pool}",
        lambda: observed_nodes(ctx, cluster, pool) == nodes,
        120,
        lambda: json.dumps(
            dig(ctx.kube.get(MP, "InferenceCluster", cluster), "status", "gpuPools")
        ),
    )


def pool_of(ctx: Fleet, cluster: str, node: str) -> str:
    got = ctx.clusters[cluster].get("v1", "Node", node)
    return str(dig(got, "metadata", "labels", fleet_plan.POOL_LABEL))


# -- the scenarios ----------------------------------------------------------------------------


def burst(ctx: Fleet) -> None:
    platform(ctx)
    ctx.ensure_namespace(ML)
    delete_deployments(ctx, ours(ctx))
    free = room(ctx)
    assert free >= 2, f"the scenarios need 2 free nodes the selector fits, found {free}"
    names = [f"{PREFIX}burst-{i}" for i in range(free + 2)]
    ctx.step(f"{free} free nodes fit {SELECTOR!r}; {len(names)} deployments want one each")
    started = time.monotonic()
    apply_together(ctx, names)

    def shortfalls() -> str:
        placed = [n for n in names if any(dig(r, "spec", "clusterName") for r in ctx.replicas(n))]
        short = [n for n in names if scheduled(ctx, n).get("reason") == "InsufficientCapacity"]
        if len(placed) != free or len(short) != len(names) - free or set(placed) & set(short):
            return f"placed {placed}, InsufficientCapacity {short} (want {free} and {len(names) - free})"
        return ""

    tally = settle(ctx, "burst", names, started, shortfalls)
    assert tally.placed == free, tally
    for name in names:
        cond = scheduled(ctx, name)
        if cond.get("status") == "False":
            ctx.step(f"{name}: ReplicasScheduled {cond.get('reason')}: {cond.get('message')}")


def node_lost(ctx: Fleet) -> None:
    names = ours(ctx)
    placed = [n for n in names if placement(ctx, n)]
    assert placed, f"capacity-burst leaves a placed deployment: {names}"
    mover = placed[0]
    delete_deployments(ctx, [n for n in names if n != mover])
    cluster, node = placement(ctx, mover) or ("", "")
    pool = pool_of(ctx, cluster, node)
    ctx.step(f"{mover} runs on {cluster}/{node} (pool {pool}); {room(ctx)} free node(s) elsewhere")
    kube = ctx.clusters[cluster]
    saved = kube.get("v1", "Node", node)
    assert saved is not None
    started = time.monotonic()
    kube.delete("v1", "Node", node)
    ctx.step(f"deleted Node {node} from {cluster}")
    try:

        def moved() -> str:
            where = placement(ctx, mover)
            return "" if where and where[1] != node else f"{mover} runs on {where}"

        tally = settle(ctx, "node-lost", [mover], started, moved)
        assert tally.placed == 1, tally
        ctx.step(f"{mover} replaced: now on {placement(ctx, mover)}")
    finally:
        restore_node(ctx, cluster, saved)
    wait_observed(ctx, cluster, pool, len(pool_nodes(ctx, cluster, pool)))


def restore_node(ctx: Fleet, cluster: str, saved: Obj) -> None:
    """Put a deleted KWOK node back as the fleet created it (KWOK makes it Ready)."""
    kube = ctx.clusters[cluster]
    name = saved["metadata"]["name"]
    labels = dig(saved, "metadata", "labels") or {}
    node = fleet_plan.node(
        name, labels.get(fleet_plan.POOL_LABEL), dig(saved, "spec", "taints") or []
    )
    status = node.pop("status")
    kube.apply(node)
    kube.patch("v1", "Node", name, {"status": status}, sub="status")
    ctx.wait_for(
        f"Node {name} back and Ready on {cluster}",
        lambda: condition_true(kube.get("v1", "Node", name), "Ready"),
        60,
    )


def cordon(ctx: Fleet) -> None:
    free = free_nodes(ctx)
    assert free, "capacity-cordon needs a free node the selector fits"
    cluster, node, pool = free[0]
    others = len(free) - 1
    kube = ctx.clusters[cluster]
    kube.patch("v1", "Node", node, {"spec": {"unschedulable": True}})
    ctx.step(f"cordoned {cluster}/{node} (pool {pool}); {others} other free node(s)")
    name = f"{PREFIX}cordon"
    try:
        wait_observed(ctx, cluster, pool, len(pool_nodes(ctx, cluster, pool)) - 1)
        started = time.monotonic()
        ctx.kube.apply(deployment(name))

        def kept_off() -> str:
            where = placement(ctx, name)
            if others and not where:
                return f"{name} not placed yet ({others} other free node(s))"
            if where and where[1] == node:
                return f"{name} landed on the cordoned {node}"
            if others == 0 and scheduled(ctx, name).get("reason") != "InsufficientCapacity":
                return f"{name}: ReplicasScheduled {scheduled(ctx, name)}"
            return ""

        settle(ctx, "cordon", [*ours(ctx)], started, kept_off)
        assert not [p for p in gpu_pods(kube) if dig(p, "spec", "nodeName") == node], (
            f"GPU pod on cordoned {node}"
        )
    finally:
        kube.patch("v1", "Node", node, {"spec": {"unschedulable": None}})
        ctx.step(f"uncordoned {node}")
    if others == 0:
        wait_observed(ctx, cluster, pool, len(pool_nodes(ctx, cluster, pool)))
        ctx.wait_for(
            f"{name} placed once {node} takes pods again",
            lambda: placement(ctx, name),
            SETTLE_SECONDS,
        )
    delete_deployments(ctx, [name])


def free_nodes(ctx: Fleet) -> list[tuple[str, str, str]]:
    out = []
    for cluster, pool in selected_pools(ctx):
        busy = busy_nodes(ctx, cluster)
        for node in pool_nodes(ctx, cluster, pool.name):
            if node["metadata"]["name"] not in busy and not dig(node, "spec", "unschedulable"):
                out.append((cluster, node["metadata"]["name"], pool.name))
    return sorted(out)


def shrink(ctx: Fleet) -> None:
    names = ours(ctx)
    running = [n for n in names if placement(ctx, n)]
    assert running, f"capacity-shrink needs a running deployment of the earlier scenarios: {names}"
    name = running[0]
    cluster, node = placement(ctx, name) or ("", "")
    pool = pool_of(ctx, cluster, node)
    ic = ctx.get(MP, "InferenceCluster", cluster)
    pools = dig(ic, "spec", "nodePools")
    declared = next(int(p.get("nodeCount", 1)) for p in pools if p["name"] == pool)
    started = time.monotonic()
    set_node_count(ctx, cluster, pool, declared - 1)
    ctx.step(
        f"{cluster}: pool {pool} nodeCount {declared} -> {declared - 1} under {name}'s replica"
    )
    try:
        ctx.wait_for(
            f"{cluster} publishes {declared - 1} node(s) for {pool}",
            lambda: any(
                e.get("name") == pool and e.get("nodes") == declared - 1
                for e in dig(ctx.kube.get(MP, "InferenceCluster", cluster), "status", "gpuPools")
                or []
            ),
            120,
        )

        def kept() -> str:
            where = placement(ctx, name)
            return "" if where == (cluster, node) else f"{name} left {cluster}/{node}: now {where}"

        settle(ctx, "shrink", names, started, kept)
        replica = ctx.replicas(name)[0]
        assert condition_true(replica, "Ready"), "the Ready replica must keep running"
        md = ctx.kube.get(MP, "ModelDeployment", name, ML)
        for typ, cond in sorted(conditions(md).items()):
            ctx.step(
                f"{name} {typ}={cond.get('status')} {cond.get('reason')}: {cond.get('message')}"
            )
    finally:
        set_node_count(ctx, cluster, pool, declared)
        ctx.step(f"{cluster}: pool {pool} nodeCount back to {declared}")
    delete_deployments(ctx, ours(ctx))


def set_node_count(ctx: Fleet, cluster: str, pool: str, count: int) -> None:
    ic = ctx.get(MP, "InferenceCluster", cluster)
    pools = [
        dict(p, nodeCount=count) if p["name"] == pool else p for p in dig(ic, "spec", "nodePools")
    ]
    ctx.kube.patch(MP, "InferenceCluster", cluster, {"spec": {"nodePools": pools}})


def summary(ctx: Fleet) -> None:
    """Print each capacity scenario's settle time and counts."""
    for what, tally in (ctx.stats.get("capacity") or {}).items():
        print(f"capacity {what}: {tally.line()}")
