"""pool-removal: a node pool removed from an InferenceCluster's spec under a running
replica (make e2e-fleet, issue 23 scenario (c)).

The fleet's InferenceClusters are Existing ones: each pool's nodes are its workload
cluster's KWOK nodes labelled ``modelplane.ai/pool=<pool>``, and the pool, as far as
Modelplane goes, is what the InferenceCluster publishes in ``status.gpuPools`` (what the
scheduler places on; on a provisioned cluster, also the node group it composes). The
scenario removes the pool qwen-demo's replica runs on, and at every observation (every
two seconds) checks:

- while the old replica exists, its pool is still published, ``draining: true`` once the
  InferenceCluster has reconciled (never unpublished under it), and its engine pod keeps
  Running on a node of that pool until a replacement is Ready (make before break);
- at least one replica of qwen-demo is Ready throughout.

It ends when the replacement is Ready on another pool with its pod Running there, the
old replica is gone, and the pool is no longer published; then its nodes run no GPU pod
(a node group deleted now would evict nothing). The ModelService routes to the new
replica's gateway. The pool is put back after (published, not draining). The timeline
(seconds, Ready replicas, where they run, the pool's state) is printed at the end.
"""

from __future__ import annotations

import time

from e2e.context import MP
from e2e.fleet import plan as fleet_plan
from e2e.fleet.context import Fleet, gpu_pods
from e2e.fleet.deploy_scenarios import check_replica, check_service
from e2e.fleet.serving import scale_ready
from e2e.kube import Obj, condition_true, conditions, dig

SETTLE_SECONDS = 300
INTERVAL = 2.0


def pinned_pool(replica: Obj) -> str:
    """The pool a (one-engine, one-member) replica is pinned to."""
    engines = dig(replica, "spec", "engines") or [{}]
    members = engines[0].get("members") or [{}]
    return str(members[0].get("nodePoolName") or "")


def published(ctx: Fleet, cluster: str, pool: str) -> str:
    """How ``cluster`` publishes ``pool``: ``published``, ``draining`` or ``gone``."""
    ic = ctx.kube.get(MP, "InferenceCluster", cluster) or {}
    for entry in dig(ic, "status", "gpuPools") or []:
        if entry.get("name") == pool:
            return "draining" if entry.get("draining") else "published"
    return "gone"


def pods_on_pool(ctx: Fleet, cluster: str, pool: str) -> list[str]:
    """GPU pods bound to the pool's nodes and not being deleted, as ``pod@node``."""
    kube = ctx.clusters[cluster]
    nodes = {
        n["metadata"]["name"] for n in kube.list("v1", "Node", None, {fleet_plan.POOL_LABEL: pool})
    }
    return [
        f"{p['metadata']['name']}@{dig(p, 'spec', 'nodeName')}"
        for p in gpu_pods(kube)
        if dig(p, "spec", "nodeName") in nodes and not dig(p, "metadata", "deletionTimestamp")
    ]


def running_pods(ctx: Fleet, cluster: str, pool: str) -> list[str]:
    kube = ctx.clusters[cluster]
    nodes = {
        n["metadata"]["name"] for n in kube.list("v1", "Node", None, {fleet_plan.POOL_LABEL: pool})
    }
    return [
        p["metadata"]["name"]
        for p in gpu_pods(kube)
        if dig(p, "spec", "nodeName") in nodes and dig(p, "status", "phase") == "Running"
    ]


class Watch:
    """Each observation's invariants, and the timeline as it changes."""

    def __init__(self, ctx: Fleet, old: str, cluster: str, pool: str) -> None:
        self.ctx, self.old, self.cluster, self.pool = ctx, old, cluster, pool
        self.started = time.monotonic()
        self.timeline: list[str] = []
        self.broken: list[str] = []
        self.saw_draining = False
        self.replacement_ready = False
        self.was_ready: set[str] = set()
        self.last_line = ""

    def observe(self) -> tuple[Obj, str] | None:
        """Check one observation; return the Ready replacement and its cluster once done."""
        replicas = self.ctx.replicas()
        state = published(self.ctx, self.cluster, self.pool)
        self.saw_draining |= state == "draining"
        names = {r["metadata"]["name"] for r in replicas}
        ready = [r for r in replicas if condition_true(r, "Ready")]
        others = [r for r in ready if r["metadata"]["name"] != self.old]
        self.replacement_ready |= bool(others)
        where = ", ".join(
            f"{r['metadata']['name']}@{dig(r, 'spec', 'clusterName')}/{pinned_pool(r)}"
            f"{' Ready' if condition_true(r, 'Ready') else ''}"
            for r in sorted(replicas, key=lambda r: r["metadata"]["name"])
        )
        line = f"{len(ready)} Ready [{where}] pool {self.pool}: {state}"
        if line != self.last_line:
            self.timeline.append(f"{time.monotonic() - self.started:.0f}s: {line}")
            self.last_line = line
        at = f"at {time.monotonic() - self.started:.0f}s"
        now_ready = {r["metadata"]["name"] for r in ready}
        for lost in sorted(self.was_ready - now_ready):
            gone = next((r for r in replicas if r["metadata"]["name"] == lost), None)
            self.timeline.append(f"{at}: {lost} no longer Ready: {_why_not_ready(gone)}")
        self.was_ready = now_ready
        if not ready:
            self.broken.append(f"{at}: no Ready replica of qwen-demo")
        if self.old in names:
            if state == "gone":
                self.broken.append(
                    f"{at}: pool {self.pool} unpublished while {self.old} runs there"
                )
            if not self.replacement_ready and not running_pods(self.ctx, self.cluster, self.pool):
                self.broken.append(
                    f"{at}: {self.old}'s pod not Running on {self.pool} before a replacement is Ready"
                )
            return None
        if state != "gone" or len(others) != 1 or pinned_pool(others[0]) == self.pool:
            return None
        return others[0], str(dig(others[0], "spec", "clusterName"))


def _why_not_ready(replica: Obj | None) -> str:
    """A replica's Ready and ModelReady reasons and messages: what a flicker was."""
    if replica is None:
        return "deleted"
    found = conditions(replica)
    return "; ".join(
        f"{kind} {c.get('status')} {c.get('reason')}: {c.get('message', '')}".strip()
        for kind in ("Ready", "ModelReady")
        if (c := found.get(kind))
    )


def pool_removal(ctx: Fleet) -> None:
    replicas = scale_ready(ctx, 1)
    old = replicas[0]["metadata"]["name"]
    cluster, pool = str(dig(replicas[0], "spec", "clusterName")), pinned_pool(replicas[0])
    assert condition_true(replicas[0], "Ready"), f"{old} should be Ready first"
    ic = ctx.get(MP, "InferenceCluster", cluster)
    saved = dig(ic, "spec", "nodePools")
    remaining = [p for p in saved if p["name"] != pool]
    ctx.kube.patch(MP, "InferenceCluster", cluster, {"spec": {"nodePools": remaining}})
    ctx.step(f"removed pool {pool} from {cluster}'s spec.nodePools under {old}")
    watch = Watch(ctx, old, cluster, pool)
    try:
        done = ctx.wait_for(
            f"{old} replaced off {pool} and Ready, and {pool} no longer published",
            watch.observe,
            SETTLE_SECONDS,
            lambda: "\n".join(watch.timeline),
            INTERVAL,
        )
        ctx.stats["pool_removal_timeline"] = "; ".join(watch.timeline)
        for line in watch.timeline:
            ctx.step(f"timeline {line}")
        assert not watch.broken, "\n".join(watch.broken)
        assert watch.saw_draining, f"{cluster} never published {pool} draining"
        new, target = done[0]["metadata"]["name"], done[1]
        ctx.wait_gone(
            f"no GPU pod left on {cluster}'s {pool} nodes (deleting them now evicts nothing)",
            lambda: pods_on_pool(ctx, cluster, pool),
            60,
        )
        check_replica(ctx, new, target)
        check_service(ctx)
    finally:
        ctx.kube.patch(MP, "InferenceCluster", cluster, {"spec": {"nodePools": saved}})
        ctx.wait_for(
            f"pool {pool} back in {cluster}'s spec and published, not draining",
            lambda: published(ctx, cluster, pool) == "published",
            120,
        )
