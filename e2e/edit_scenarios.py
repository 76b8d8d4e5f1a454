"""Day-two edits on the tour's fleet: quiet, scale, flap, drain, invalid-edit, deletion."""

from __future__ import annotations

import copy
import functools
import threading
import time
from collections.abc import Mapping
from typing import Any

from e2e.context import (
    FLAPS,
    INFRA,
    ML,
    MP,
    OBJECT,
    SYSTEM,
    Context,
    conds_summary,
    in_use,
    obj_name,
)
from e2e.kube import KubeError, Obj, condition_true, conditions, dig
from e2e.tour_scenarios import check_replica

# -- quiet ------------------------------------------------------------------------------------

COMPOSITE_KINDS = (
    (MP, "InferenceGateway"), (MP, "InferenceClass"), (MP, "InferenceCluster"),
    (MP, "ModelCache"), (MP, "ModelDeployment"), (MP, "ModelReplica"), (MP, "ModelEndpoint"),
    (MP, "ModelService"), (INFRA, "EKSCluster"), (INFRA, "ServingStack"),
)  # fmt: skip


def quiet(ctx: Context, seconds: float = 20) -> None:
    """Once everything is Ready, no composite's state changes: nothing loops."""
    stop = threading.Event()
    changed: dict[str, int] = {}
    lock = threading.Lock()

    def watch(api: str, kind: str) -> None:
        listed: set[str] = set()
        for event, obj in ctx.kube.watch(api, kind, stop, timeout=int(seconds) + 5):
            name = f"{kind} {obj_name(obj)}"
            if event == "ADDED" and name not in listed:
                listed.add(name)
                continue
            with lock:
                changed[name] = changed.get(name, 0) + 1

    threads = [threading.Thread(target=watch, args=kind, daemon=True) for kind in COMPOSITE_KINDS]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    assert not changed, f"composites still changing after {seconds:.0f}s: {changed}"
    ctx.step(f"no composite changed in {seconds:.0f}s: nothing loops")


# -- scale ------------------------------------------------------------------------------------


def wait_replicas(ctx: Context, total: int, timeout: float = 240) -> Obj:
    def probe() -> Obj | None:
        md = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
        reps = dig(md, "status", "replicas") or {}
        ok = reps.get("total") == total and reps.get("ready") == total
        return md if ok and condition_true(md, "Ready") and len(ctx.replicas()) == total else None

    def show() -> str:
        md = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
        reps = [
            f"{obj_name(r)} on {dig(r, 'spec', 'clusterName')}: {conds_summary(r)}"
            for r in ctx.replicas()
        ]
        return (
            f"status.replicas {dig(md, 'status', 'replicas')}\n{ctx.explain(md, 1)}\n"
            f"ModelReplicas: {reps}"
        )

    md: Obj = ctx.wait_for(f"qwen-demo: {total} replicas placed and Ready", probe, timeout, show)
    return md


def scale(ctx: Context) -> None:
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, "--replicas=2")
    r = ctx.kube.resource(MP, "ModelDeployment")
    got = ctx.kube.request("GET", r.path(ML, "qwen-demo", "scale"))
    assert dig(got, "spec", "replicas") == 2, f"scale subresource: {got}"
    ctx.step("kubectl scale --replicas=2 (the scale subresource reads spec.replicas 2)")
    wait_replicas(ctx, 2)
    clusters = sorted(str(dig(x, "spec", "clusterName")) for x in ctx.replicas())
    assert clusters == ["byo-us-east", "eks-us-east"], f"replicas spread over {clusters}"
    for replica in ctx.replicas():
        check_replica(ctx, replica)
    ms = ctx.wait_ready(MP, "ModelService", "qwen", ML, timeout=120)
    assert condition_true(ms, "EndpointsResolved"), ctx.explain(ms)
    got = ctx.kube.request("GET", r.path(ML, "qwen-demo", "scale"))
    assert dig(got, "status", "replicas") == 2, f"scale subresource status: {got}"
    ctx.step("scale subresource status.replicas 2; ModelService still Ready")

    dropped = [x for x in ctx.replicas() if dig(x, "spec", "clusterName") == "eks-us-east"]
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, "--replicas=1")
    ctx.step("kubectl scale --replicas=1")
    wait_replicas(ctx, 1)
    left = [str(dig(x, "spec", "clusterName")) for x in ctx.replicas()]
    # Scale-down drops from the most-loaded cluster first; ties: the greater cluster name.
    assert left == ["byo-us-east"], f"after scaling down, replicas on {left}"
    gone = dropped[0]["metadata"]["name"]
    ctx.wait_gone(
        f"the dropped replica {gone}'s Objects garbage-collected",
        lambda: [o["metadata"]["name"] for o in ctx.objects_of(gone)],
    )
    ctx.wait_gone(
        f"the dropped replica {gone}'s ModelEndpoint removed",
        lambda: [
            e["metadata"]["name"]
            for e in ctx.endpoints()
            if dig(e, "metadata", "labels", "modelplane.ai/cluster") == "eks-us-east"
        ],
    )


# -- flap -------------------------------------------------------------------------------------


def uids(ctx: Context, roots: list[tuple[str, str, str, str | None]]) -> dict[str, str]:
    """uid -> description of every object under the roots (two levels of composition)."""
    out: dict[str, str] = {}

    def walk(obj: Obj | None, depth: int) -> None:
        if obj is None:
            return
        out[obj["metadata"]["uid"]] = f"{obj.get('kind')} {obj_name(obj)}"
        if depth and dig(obj, "spec", "crossplane"):
            for ref, got in ctx.composed(obj):
                if got is not None:
                    got.setdefault("kind", ref["kind"])
                    walk(got, depth - 1)

    for api, kind, name, ns in roots:
        walk(ctx.kube.get(api, kind, name, ns), 3)
    for replica in ctx.replicas():
        walk(replica, 1)
    return out


def set_flaps(ctx: Context, patterns: list[str]) -> None:
    ctx.kube.apply(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": FLAPS, "namespace": "crossplane-system"},
            "data": {"notReady": "\n".join(patterns)},
        }
    )


def flap(ctx: Context) -> None:
    roots = [
        (MP, "InferenceCluster", "eks-us-east", None),
        (MP, "ModelDeployment", "qwen-demo", ML),
    ]
    before = uids(ctx, roots)
    eks = ctx.get(INFRA, "EKSCluster", "eks-us-east", SYSTEM)
    target = next(
        (
            ref
            for ref in dig(eks, "spec", "crossplane", "resourceRefs") or []
            if ref["kind"] == "Cluster" and ref["apiVersion"].startswith("eks.aws.")
        ),
        None,
    )
    assert target, f"EKSCluster composed no eks Cluster: {dig(eks, 'spec', 'crossplane')}"
    api, name = target["apiVersion"], target["name"]
    pattern = f"Cluster.{api.split('/')[0]} {SYSTEM}/{name}"
    set_flaps(ctx, [pattern])
    ctx.step(f"the AWS provider reports the EKS Cluster {name} not Ready")
    try:
        ctx.wait_for(
            f"Cluster {name} Ready=False",
            lambda: not condition_true(ctx.kube.get(api, "Cluster", name, SYSTEM), "Ready"),
            60,
        )
        ctx.wait_for(
            "EKSCluster eks-us-east no longer Ready",
            lambda: not condition_true(
                ctx.kube.get(INFRA, "EKSCluster", "eks-us-east", SYSTEM), "Ready"
            ),
            90,
            lambda: ctx.explain(ctx.kube.get(INFRA, "EKSCluster", "eks-us-east", SYSTEM), 1),
        )
        time.sleep(20)
        during = uids(ctx, roots)
        deleted = {u: d for u, d in before.items() if u not in during}
        assert not deleted, f"deleted while the cluster flapped: {sorted(deleted.values())}"
        ctx.step(f"20s later nothing of the {len(before)} objects was deleted")
    finally:
        set_flaps(ctx, [])
    ctx.step("the provider reports it Ready again")
    ctx.wait_ready(INFRA, "EKSCluster", "eks-us-east", SYSTEM, timeout=120)
    ctx.wait_ready(MP, "InferenceCluster", "eks-us-east", timeout=120)
    ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=120)
    after = uids(ctx, roots)
    deleted = {u: d for u, d in before.items() if u not in after}
    assert not deleted, f"replaced after the flap: {sorted(deleted.values())}"
    ctx.step(f"everything Ready again; all {len(before)} objects kept (same uids)")


# -- drain ------------------------------------------------------------------------------------


def taint(ctx: Context, cluster: str, taints: list[dict[str, str]] | None) -> None:
    ctx.kube.patch(MP, "InferenceCluster", cluster, {"spec": {"taints": taints}})


def drain(ctx: Context) -> None:
    before = ctx.replicas()
    on = {str(dig(r, "spec", "clusterName")): r["metadata"]["name"] for r in before}
    assert list(on) == ["byo-us-east"], f"expected one replica on byo-us-east, found {on}"
    old = on["byo-us-east"]
    taint(ctx, "byo-us-east", [{"key": "modelplane.ai/maintenance", "effect": "NoExecute"}])
    ctx.step("InferenceCluster byo-us-east tainted modelplane.ai/maintenance:NoExecute")

    def moved() -> bool:
        reps = ctx.replicas()
        return [str(dig(r, "spec", "clusterName")) for r in reps] == ["eks-us-east"]

    ctx.wait_for(
        "the replica rescheduled onto eks-us-east",
        moved,
        180,
        lambda: str(
            [(r["metadata"]["name"], dig(r, "spec", "clusterName")) for r in ctx.replicas()]
        ),
    )
    ctx.wait_gone(
        f"the old replica {old} and its Objects removed",
        lambda: [o["metadata"]["name"] for o in ctx.objects_of(old)]
        + ([old] if ctx.kube.get(MP, "ModelReplica", old, ML) else []),
    )
    wait_replicas(ctx, 1)
    check_replica(ctx, ctx.replicas()[0])
    taint(ctx, "byo-us-east", None)
    ctx.step("taint removed")
    time.sleep(20)
    left = [str(dig(r, "spec", "clusterName")) for r in ctx.replicas()]
    assert left == ["eks-us-east"], f"after the taint was removed, replicas on {left}"
    ctx.step("20s later the replica stays on eks-us-east (nothing moves back)")


# -- invalid edit ------------------------------------------------------------------------------


def invalid_edit(ctx: Context) -> None:
    md = ctx.get(MP, "ModelDeployment", "qwen-demo", ML)
    template = copy.deepcopy(md["spec"]["template"])
    kept = {r["metadata"]["uid"]: r["metadata"]["name"] for r in ctx.replicas()}
    selector = template["spec"]["engines"][0]["members"][0]["nodeSelector"]["devices"][0]
    good = selector["selectors"][0]["cel"]
    bad = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >='
    selector["selectors"][0]["cel"] = bad
    refused: KubeError | None = None
    try:
        ctx.kube.patch(MP, "ModelDeployment", "qwen-demo", {"spec": {"template": template}}, ML)
    except KubeError as exc:
        refused = exc
    if refused is not None:
        assert refused.status == 422, f"refused with {refused}"
        ctx.step(f"the API server refused the edit: {refused.message}")
    else:
        ctx.step(f"edited the selector to {bad!r}")

        def reported() -> Mapping[str, Any] | None:
            got = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
            c = conditions(got).get("ReplicasScheduled", {})
            return (
                c
                if c.get("status") == "False" and c.get("reason") == "InvalidNodeSelector"
                else None
            )

        cond = ctx.wait_for(
            "ReplicasScheduled=False, reason InvalidNodeSelector",
            reported,
            90,
            lambda: ctx.explain(ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), 0),
        )
        ctx.step(f"condition message: {cond.get('message')}")
        time.sleep(15)
        now = {r["metadata"]["uid"]: r["metadata"]["name"] for r in ctx.replicas()}
        assert now == kept, f"running replicas changed: before {kept}, after {now}"
        for replica in ctx.replicas():
            got = ctx.kube.get(MP, "ModelReplica", replica["metadata"]["name"], ML)
            assert condition_true(got, "Ready"), ctx.explain(got)
        ctx.step(f"15s later the running replicas stay, Ready: {sorted(kept.values())}")
    selector["selectors"][0]["cel"] = good
    ctx.kube.patch(MP, "ModelDeployment", "qwen-demo", {"spec": {"template": template}}, ML)
    ctx.step("selector restored")
    md = ctx.wait_for(
        "ReplicasScheduled True again",
        lambda: condition_true(
            ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), "ReplicasScheduled"
        ),
        90,
        lambda: ctx.explain(ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), 0),
    )
    wait_replicas(ctx, 1)


# -- deletion ---------------------------------------------------------------------------------


def deletion(ctx: Context) -> None:
    replicas = [r["metadata"]["name"] for r in ctx.replicas()]
    endpoints = [e["metadata"]["name"] for e in ctx.endpoints()]
    objects = [o["metadata"]["name"] for r in replicas for o in ctx.objects_of(r)]
    ctx.step(f"qwen-demo has replicas {replicas}, endpoints {endpoints}, {len(objects)} Objects")
    ctx.kubectl("delete", "modeldeployment", "qwen-demo", "-n", ML, "--wait=false")
    ctx.step("kubectl delete modeldeployment qwen-demo")

    def left() -> list[str]:
        out = [f"ModelReplica {n}" for n in replicas if ctx.kube.get(MP, "ModelReplica", n, ML)]
        out += [f"ModelEndpoint {n}" for n in endpoints if ctx.kube.get(MP, "ModelEndpoint", n, ML)]
        out += [f"Object {n}" for n in objects if ctx.kube.get(OBJECT, "Object", n, ML)]
        if ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML):
            out.append("ModelDeployment qwen-demo")
        return out

    ctx.wait_gone("the deployment, its replicas, endpoints and Objects deleted", left, 180)

    # The clusters are still held, by the ModelCache alone now.
    for cluster in ("eks-us-east", "byo-us-east"):

        def cache_only(c: str = cluster) -> bool:
            users = in_use(ctx, c)
            return "ModelCache" in users and "ModelReplica" not in users

        ctx.wait_for(
            f"InferenceCluster {cluster} InUse names the ModelCache and no ModelReplica",
            cache_only,
            90,
            functools.partial(in_use, ctx, cluster),
        )
