"""The fleet scenarios' context: Modelplane on real workload clusters (make e2e-fleet).

Each workload cluster is a real API server with KWOK nodes; provider-kubernetes applies
our Objects there; the real kube-scheduler allocates each pod's DRA devices from the
ResourceSlices. The checks read both sides: what Modelplane reports on the control plane
and what the workload clusters run. This module holds the context (``Fleet``) and the
reads and checks the scenario families share.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane.domain import dra as cel
from modelplane.domain.dra import Attribute, Device

from e2e.context import GATEWAY_API, ML, MP, Context
from e2e.fleet import plan as fleet_plan
from e2e.kube import Kube, Obj, condition_true, conditions, dig

DEPLOYMENT = "getting-started/deploying-a-model/eks/model-deployment.yaml"
GATEWAY = "getting-started/build-the-platform/inference-gateway.yaml"
SERVICE = "getting-started/deploying-a-model/model-service.yaml"
WORKLOAD_KINDS = ("Deployment", "LeaderWorkerSet")
APPS = {"Deployment": "apps/v1", "LeaderWorkerSet": "leaderworkerset.x-k8s.io/v1"}
RESOURCE = "resource.k8s.io/v1"
SERVICE_LABEL = "kubernetes.io/service-name"


@dataclass
class Fleet(Context):
    """The e2e context plus a client per workload cluster."""

    clusters: dict[str, Kube] = field(default_factory=dict)
    fleet_state: Path = Path("build/fleet")
    stats: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def make(cls, kube: Kube, state: Path, fleet_state: Path) -> Fleet:
        planned, _ = fleet_plan.load(fleet_state / "plan.json")
        clients = {c.name: Kube(str(fleet_state / c.name / "kubeconfig")) for c in planned}
        return cls(kube, state, clusters=clients, fleet_state=fleet_state)

    def placed(self, deployment: str = "qwen-demo") -> dict[str, str]:
        """Replica name -> the cluster our scheduler placed it on."""
        return {
            r["metadata"]["name"]: str(dig(r, "spec", "clusterName"))
            for r in self.replicas(deployment)
        }

    def workloads_of(self, replica: str) -> list[tuple[str, str, str]]:
        """(kind, namespace, name) of the Deployments/LeaderWorkerSets a replica applies."""
        out = []
        for o in self.objects_of(replica):
            m = dig(o, "spec", "forProvider", "manifest") or {}
            if m.get("kind") in WORKLOAD_KINDS:
                meta = m.get("metadata") or {}
                out.append((str(m["kind"]), str(meta.get("namespace") or ML), str(meta["name"])))
        return out


# -- reading a workload cluster ----------------------------------------------------------------


def pods_of(kube: Kube, workload: Obj) -> list[Obj]:
    labels = dig(workload, "spec", "selector", "matchLabels") or {}
    if workload["kind"] == "LeaderWorkerSet":
        labels = {"leaderworkerset.sigs.k8s.io/name": workload["metadata"]["name"]}
    return kube.list("v1", "Pod", workload["metadata"]["namespace"], labels)


def gpu_pods(kube: Kube) -> list[Obj]:
    """Every pod that claims DRA devices, in every namespace."""
    return [p for p in kube.list("v1", "Pod") if dig(p, "spec", "resourceClaims")]


def pending(pod: Obj) -> str | None:
    """Why the pod is not scheduled (None when it is)."""
    cond = conditions(pod).get("PodScheduled", {})
    if cond.get("status") == "True":
        return None
    return str(cond.get("message") or cond.get("reason") or "not scheduled yet")


def device_of(kube: Kube, result: Mapping[str, Any]) -> Device | None:
    """The allocated device as its ResourceSlice publishes it, for our CEL."""
    for rs in kube.list(RESOURCE, "ResourceSlice"):
        spec = rs["spec"]
        if spec["driver"] != result["driver"] or spec["pool"]["name"] != result["pool"]:
            continue
        for dev in spec.get("devices") or []:
            if dev["name"] == result["device"]:
                return slice_device(spec["driver"], dev)
    return None


def slice_device(driver: str, dev: Mapping[str, Any]) -> Device:
    """A ResourceSlice's device entry as our CEL sees it."""
    attrs = {
        k: Attribute(kind, value)
        for k, v in (dev.get("attributes") or {}).items()
        for kind, value in v.items()
    }
    capacity = {k: str(v["value"]) for k, v in (dev.get("capacity") or {}).items()}
    return Device.build(driver, attrs, capacity)


def check_claims(kube: Kube, pod: Obj, want: list[str]) -> list[str]:
    """Each claim of the pod carries the selectors ``want`` (the ModelDeployment's) and is
    allocated a device that our CEL says satisfies every selector of its request."""
    ns = pod["metadata"]["namespace"]
    statuses = dig(pod, "status", "resourceClaimStatuses") or []
    assert statuses, f"pod {pod['metadata']['name']} has no ResourceClaim: {pod.get('status')}"
    seen = []
    for st in statuses:
        claim = kube.get(RESOURCE, "ResourceClaim", st["resourceClaimName"], ns)
        assert claim is not None, f"ResourceClaim {ns}/{st['resourceClaimName']} not found"
        results = dig(claim, "status", "allocation", "devices", "results") or []
        assert results, f"ResourceClaim {claim['metadata']['name']} not allocated"
        requests = {r["name"]: r for r in dig(claim, "spec", "devices", "requests") or []}
        for res in results:
            request = requests[res["request"]]
            exprs = [s["cel"]["expression"] for s in dig(request, "exactly", "selectors") or []]
            missing = [w for w in want if w.strip() not in {e.strip() for e in exprs}]
            assert not missing, f"claim {claim['metadata']['name']} lacks our selectors {missing}"
            device = device_of(kube, res)
            assert device is not None, f"{res} is not in any ResourceSlice"
            for expr in exprs:
                verdict = cel.matches(expr, device)
                assert verdict.matched, (
                    f"kube-scheduler allocated {res['pool']}/{res['device']} to "
                    f"{claim['metadata']['name']}, which our CEL says does not satisfy {expr!r}"
                    f" ({verdict.error or 'false'})"
                )
            seen.append(f"{res['pool']}/{res['device']}")
    return seen


def check_running(
    ctx: Fleet, replica: str, cluster: str, deployment: str = "qwen-demo"
) -> list[str]:
    """The replica's workloads Available on its cluster, each pod Running on a node of the
    pinned pool with its devices allocated by kube-scheduler to our selector."""
    kube = ctx.clusters[cluster]
    # A replica just placed lists its Objects a reconcile later: wait for them.
    workloads = ctx.wait_for(
        f"ModelReplica {replica} applies a Deployment or LeaderWorkerSet",
        lambda: ctx.workloads_of(replica),
        60,
    )
    placed = []
    for kind, ns, name in workloads:

        def available(kind: str = kind, ns: str = ns, name: str = name) -> Obj | None:
            got = kube.get(APPS[kind], kind, name, ns)
            return got if condition_true(got, "Available") else None

        workload = ctx.wait_for(
            f"{kind} {ns}/{name} Available on {cluster}",
            available,
            120,
            lambda kind=kind, ns=ns, name=name: describe_pods(kube, ns),  # type: ignore[misc]
        )
        workload.setdefault("kind", kind)
        pool = dig(workload, "spec", "template", "spec", "nodeSelector", fleet_plan.POOL_LABEL)
        pods = pods_of(kube, workload)
        if kind == "LeaderWorkerSet":
            ctx.step(f"{kind} {name}: Available by the status faker (no LWS controller: no pods)")
            continue
        assert pods, f"{kind} {ns}/{name} on {cluster} has no pods"
        gpu = bool(dig(workload, "spec", "template", "spec", "resourceClaims"))
        for pod in pods:
            pname = pod["metadata"]["name"]
            assert dig(pod, "status", "phase") == "Running", f"pod {pname}: {pod.get('status')}"
            if not gpu:  # the endpoint picker: no device, no pool
                placed.append(f"{pname} Running on {dig(pod, 'spec', 'nodeName')} (no GPU)")
                continue
            node = kube.get("v1", "Node", str(dig(pod, "spec", "nodeName")))
            node_pool = dig(node, "metadata", "labels", fleet_plan.POOL_LABEL)
            assert pool, f"{kind} {name} claims devices but pins no {fleet_plan.POOL_LABEL}"
            assert node_pool == pool, (
                f"pod {pname} runs on {dig(pod, 'spec', 'nodeName')} of pool {node_pool}, "
                f"pinned to {pool}"
            )
            devices = check_claims(kube, pod, deployment_selectors(ctx, deployment))
            placed.append(
                f"{pname} Running on {dig(pod, 'spec', 'nodeName')} (pool {pool}), "
                f"kube-scheduler allocated {', '.join(devices)}"
            )
    return placed


def deployment_selectors(ctx: Fleet, name: str = "qwen-demo") -> list[str]:
    """The CEL selectors of a ModelDeployment's members, as its user wrote them."""
    md = ctx.get(MP, "ModelDeployment", name, ML)
    return [
        str(sel["cel"])
        for engine in dig(md, "spec", "template", "spec", "engines") or []
        for member in engine.get("members") or []
        for dev in dig(member, "nodeSelector", "devices") or []
        for sel in dev.get("selectors") or []
        if sel.get("cel")
    ]


def describe_pods(kube: Kube, ns: str) -> str:
    lines = []
    for p in kube.list("v1", "Pod", ns):
        lines.append(
            f"    pod {p['metadata']['name']}: {dig(p, 'status', 'phase')} "
            f"node={dig(p, 'spec', 'nodeName')} {pending(p) or ''}"
        )
    return "\n".join(lines) or "    (no pods)"


# -- scenarios ---------------------------------------------------------------------------------


def platform(ctx: Fleet) -> None:
    """The InferenceGateway and the fleet's Existing clusters Ready through real Objects."""
    ctx.apply_file(GATEWAY)
    ig = ctx.wait_ready(MP, "InferenceGateway", "default", timeout=240)
    ctx.step(f"InferenceGateway default serves {dig(ig, 'status', 'address')}")
    for name, kube in ctx.clusters.items():
        ic = ctx.wait_ready(MP, "InferenceCluster", name, timeout=300)
        pools = [p.get("name") for p in dig(ic, "status", "gpuPools") or []]
        address = dig(ic, "status", "gateway", "address")
        gw = kube.get(GATEWAY_API, "Gateway", "modelplane", fleet_plan.SYSTEM_NAMESPACE)
        real = dig(gw, "status", "addresses", 0, "value")
        assert address, f"InferenceCluster {name} has no status.gateway.address"
        assert address == real, (
            f"InferenceCluster {name} gateway {address!r}, its cluster's Gateway says {real!r}"
        )
        ctx.step(f"InferenceCluster {name} Ready: pools {pools}, gateway {address} (real Gateway)")


def planned_pools(ctx: Fleet) -> list[tuple[str, fleet_plan.Pool]]:
    """(cluster, pool) for every pool of the running workload clusters."""
    planned, _ = fleet_plan.load(ctx.fleet_state / "plan.json")
    return [(c.name, p) for c in planned if c.name in ctx.clusters for p in c.pools]


def matching_per_node(pool: fleet_plan.Pool, exprs: list[str]) -> int:
    """How many of one node's published devices satisfy every selector (our CEL)."""
    return sum(
        all(cel.matches(e, slice_device(rs["spec"]["driver"], d)).matched for e in exprs)
        for rs in fleet_plan.resource_slice("node", pool.devices)
        for d in rs["spec"]["devices"]
    )


def pool_fits(pool: fleet_plan.Pool, exprs: list[str], per_pod: int) -> int:
    """Pods of ``per_pod`` devices our scheduler fits on the pool: a whole node each
    (Nodes, the default), or as many as a node's devices hold (Devices)."""
    have = matching_per_node(pool, exprs)
    if have < per_pod:
        return 0
    return pool.nodes * (have // per_pod if pool.capacity == "Devices" else 1)


def fits(ctx: Fleet, deployment: str = "qwen-demo") -> int:
    """Replicas (one pod each) of the deployment our scheduler fits on the fleet."""
    exprs = deployment_selectors(ctx, deployment)
    per_pod = devices_per_pod(ctx, deployment)
    return sum(pool_fits(p, exprs, per_pod) for _, p in planned_pools(ctx))


def devices_per_pod(ctx: Fleet, name: str) -> int:
    md = ctx.get(MP, "ModelDeployment", name, ML)
    return sum(
        int(dev.get("count", 1))
        for engine in dig(md, "spec", "template", "spec", "engines") or []
        for member in engine.get("members") or []
        for dev in dig(member, "nodeSelector", "devices") or []
    )


def placed_but_pending(ctx: Fleet, timeout: float, deployment: str = "qwen-demo") -> list[str]:
    """Replicas whose pods kube-scheduler has not bound within ``timeout``: why."""
    deadline = time.monotonic() + timeout
    while True:
        out = []
        for replica, cluster in ctx.placed(deployment).items():
            kube = ctx.clusters[cluster]
            workloads = ctx.workloads_of(replica)
            if not workloads:  # not composed yet: nothing checked is no agreement
                out.append(f"{replica}: applies no Deployment or LeaderWorkerSet yet")
            for kind, ns, name in workloads:
                workload = kube.get(APPS[kind], kind, name, ns)
                if workload is None:
                    out.append(f"{replica}: {kind} {ns}/{name} not on {cluster} yet")
                    continue
                workload.setdefault("kind", kind)
                pods = pods_of(kube, workload) if kind == "Deployment" else []
                if kind == "Deployment" and not pods:
                    out.append(f"{replica}: no pods of {name} on {cluster} yet")
                out += [
                    f"{replica} on {cluster}: pod {p['metadata']['name']} Pending: {why}"
                    for p in pods
                    if (why := pending(p))
                ]
        if not out or time.monotonic() > deadline:
            return out
        time.sleep(3)


def no_gpu_pod_pending(ctx: Fleet, running: str = "") -> None:
    """Assert no workload cluster has a Pending GPU pod; ``running`` says what runs."""
    stuck = [
        f"{name}: pod {p['metadata']['name']}: {why}"
        for name, kube in ctx.clusters.items()
        for p in gpu_pods(kube)
        if (why := pending(p))
    ]
    assert not stuck, "GPU pods Pending:\n" + "\n".join(stuck)
    ctx.step("no workload cluster has a Pending GPU pod" + (f" ({running})" if running else ""))


def conds_of(obj: Obj) -> str:
    return ", ".join(
        f"{k}={c.get('status')}" + (f" ({c.get('reason')})" if c.get("status") != "True" else "")
        for k, c in conditions(obj).items()
    )
