"""The fleet scenarios: Modelplane on real workload clusters (make e2e-fleet).

Each workload cluster is a real API server with KWOK nodes; provider-kubernetes applies
our Objects there; the real kube-scheduler allocates each pod's DRA devices from the
ResourceSlices. The checks read both sides: what Modelplane reports on the control plane
and what the workload clusters run.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane.domain.dra import cel
from modelplane.domain.dra.device import Attribute, Device

from e2e.fleet import plan as fleet_plan
from e2e.kube import Kube, Obj, condition_true, conditions, dig, wait_until
from e2e.scenarios import GATEWAY_API, METALLB_FIRST, ML, MP, Context

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

    def placed(self) -> dict[str, str]:
        """Replica name -> the cluster our scheduler placed it on."""
        return {r["metadata"]["name"]: str(dig(r, "spec", "clusterName")) for r in self.replicas()}

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
                attrs = {
                    k: Attribute(kind, value)
                    for k, v in (dev.get("attributes") or {}).items()
                    for kind, value in v.items()
                }
                capacity = {k: str(v["value"]) for k, v in (dev.get("capacity") or {}).items()}
                return Device.build(spec["driver"], attrs, capacity)
    return None


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


def check_running(ctx: Fleet, replica: str, cluster: str) -> list[str]:
    """The replica's workloads Available on its cluster, each pod Running on a node of the
    pinned pool with its devices allocated by kube-scheduler to our selector."""
    kube = ctx.clusters[cluster]
    workloads = ctx.workloads_of(replica)
    assert workloads, f"ModelReplica {replica} applies no Deployment or LeaderWorkerSet"
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
            devices = check_claims(kube, pod, deployment_selectors(ctx))
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


def deploy(ctx: Fleet) -> None:
    platform(ctx)
    ctx.ensure_namespace(ML)
    ctx.apply_file(DEPLOYMENT)
    md = ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=300)
    assert dig(md, "status", "replicas") == {"total": 1, "ready": 1}, md.get("status")
    for replica, cluster in ctx.placed().items():
        check_replica(ctx, replica, cluster)
    ctx.apply_file(SERVICE)
    check_service(ctx)


def check_replica(ctx: Fleet, replica: str, cluster: str) -> None:
    got = ctx.wait_ready(MP, "ModelReplica", replica, ML, timeout=180)
    assert condition_true(got, "ModelReady"), ctx.explain(got)
    for line in check_running(ctx, replica, cluster):
        ctx.step(f"{replica} on {cluster}: {line}")
    ic = ctx.get(MP, "InferenceCluster", cluster)
    want = f"http://{dig(ic, 'status', 'gateway', 'address')}/{ML}/{replica}/v1"
    ep = ctx.wait_for(
        f"ModelEndpoint of {replica} Ready at {want}",
        lambda: next(
            (
                e
                for e in ctx.endpoints()
                if dig(e, "spec", "url") == want and condition_true(e, "Ready")
            ),
            None,
        ),
        90,
        lambda: str([(dig(e, "spec", "url"), conditions(e).keys()) for e in ctx.endpoints()]),
    )
    ctx.step(f"ModelReplica {replica} ModelReady=True; ModelEndpoint {ep['metadata']['name']}")


def check_service(ctx: Fleet) -> None:
    """The ModelService Ready at the gateway, routing to the gateways of the running replicas."""
    ms = ctx.wait_ready(MP, "ModelService", "qwen", ML, timeout=180)
    want = f"http://{METALLB_FIRST}/{ML}/qwen"
    assert dig(ms, "status", "address") == want, dig(ms, "status")
    running = {
        str(dig(ctx.get(MP, "InferenceCluster", c), "status", "gateway", "address"))
        for c in ctx.placed().values()
    }
    ctx.wait_for(
        f"ModelService qwen at {want} routing to {sorted(running)}",
        lambda: routed_addresses(ctx) == running,
        120,
        lambda: f"routes to {sorted(routed_addresses(ctx))}",
    )
    ctx.step(f"ModelService qwen at {want}, routing to the gateways {sorted(running)}")


def routed_addresses(ctx: Fleet) -> set[str]:
    """Where the ModelService's routes send traffic: its backends' endpoint addresses."""
    ms = ctx.kube.get(MP, "ModelService", "qwen", ML)
    out: set[str] = set()
    if ms is None:
        return out
    for ref, route in ctx.composed(ms):
        if ref["kind"] != "HTTPRoute" or route is None:
            continue
        for rule in dig(route, "spec", "rules") or []:
            for backend in rule.get("backendRefs") or []:
                ns = backend.get("namespace") or route["metadata"]["namespace"]
                out |= backend_addresses(ctx.kube, str(backend["name"]), ns)
    return out


def backend_addresses(kube: Kube, service: str, ns: str) -> set[str]:
    svc = kube.get("v1", "Service", service, ns)
    if svc is None:
        return set()
    if dig(svc, "spec", "type") == "ExternalName":
        return {str(dig(svc, "spec", "externalName"))}
    slices = kube.list("discovery.k8s.io/v1", "EndpointSlice", ns, {SERVICE_LABEL: service})
    return {a for s in slices for e in s.get("endpoints") or [] for a in e.get("addresses") or []}


def gpu_devices(ctx: Fleet) -> int:
    planned, _ = fleet_plan.load(ctx.fleet_state / "plan.json")
    return sum(
        p.nodes * sum(int(d.get("count", 1)) for d in p.devices)
        for c in planned
        for p in c.pools
        if c.name in ctx.clusters
    )


PROBE_NS = "fleet-probe"
PROBE_SELECTORS = (
    # the getting-started deployment's, then ones that split the fleet's classes
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('23034Mi'))",
    'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace"',
    'device.attributes["gpu.nvidia.com"].architecture.startsWith("Hop")',
    '!("cudaComputeCapability" in device.attributes["gpu.nvidia.com"])',
)


def selectors(ctx: Fleet) -> None:
    """Our CEL against Kubernetes' own: for each selector and cluster, whether our
    evaluator finds a device in the cluster's ResourceSlices, and whether kube-scheduler
    allocates a claim with that selector (a probe pod), while every device is free."""
    disagree: list[str] = []
    checked = 0
    for name, kube in ctx.clusters.items():
        kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NS}})
        devices = slice_devices(kube)
        for i, expr in enumerate(PROBE_SELECTORS):
            ours = any(cel.matches(expr, d).matched for d in devices)
            theirs = probe(kube, f"probe-{i}", expr)
            checked += 1
            verdict = "allocates" if theirs else "does not allocate"
            ctx.step(f"{name}: {expr!r}: ours {'matches' if ours else 'no match'}, "
                     f"kube-scheduler {verdict}")  # fmt: skip
            if ours != theirs:
                disagree.append(f"{name}: {expr!r}: ours {ours}, kube-scheduler {theirs}")
    ctx.stats["selector_probes"] = checked
    ctx.stats["selector_disagreements"] = len(disagree)
    print(f"  selectors: {checked} probes, {len(disagree)} disagreements with kube-scheduler")
    assert not disagree, "\n".join(disagree)


def slice_devices(kube: Kube) -> list[Device]:
    out = []
    for rs in kube.list(RESOURCE, "ResourceSlice"):
        for dev in rs["spec"].get("devices") or []:
            found = device_of(kube, {"driver": rs["spec"]["driver"],
                                     "pool": rs["spec"]["pool"]["name"], "device": dev["name"]})  # fmt: skip
            if found is not None:
                out.append(found)
    return out


def probe(kube: Kube, name: str, expr: str) -> bool:
    """Whether kube-scheduler binds a pod claiming one device with the selector ``expr``."""
    claim = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": PROBE_NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "count": 1,
            "selectors": [{"cel": {"expression": expr}}]}}]}},
    }  # fmt: skip
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": PROBE_NS},
        "spec": {
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": name}],
            "containers": [{"name": "probe", "image": "probe",
                            "resources": {"claims": [{"name": "gpu"}]}}],
        },
    }  # fmt: skip
    kube.create(claim)
    kube.create(pod)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            got = kube.get("v1", "Pod", name, PROBE_NS)
            why = pending(got) if got else "gone"
            if why is None:
                return True
            if "cannot allocate all claims" in why:
                return False
            time.sleep(0.5)
        msg = f"probe {name}: neither bound nor refused in 30s: {why}"
        raise AssertionError(msg)
    finally:
        kube.delete("v1", "Pod", name, PROBE_NS)
        wait_until(
            f"probe pod {name} gone", lambda: kube.get("v1", "Pod", name, PROBE_NS) is None, 60
        )
        kube.delete(RESOURCE, "ResourceClaim", name, PROBE_NS)
        wait_until(f"probe claim {name} gone",
                   lambda: kube.get(RESOURCE, "ResourceClaim", name, PROBE_NS) is None, 60)  # fmt: skip


def agreement(ctx: Fleet) -> None:
    """Scale to what our scheduler says fits; kube-scheduler allocates every placed replica."""
    fits = gpu_devices(ctx)
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, f"--replicas={fits}")
    ctx.step(f"kubectl scale --replicas={fits} (the fleet's {fits} GPUs, one per replica)")
    ctx.wait_for(
        f"{fits} replicas placed",
        lambda: len([c for c in ctx.placed().values() if c]) == fits,
        240,
        lambda: str(ctx.placed()),
    )
    disagree = placed_but_pending(ctx, 150)
    ctx.stats["placed"] = len(ctx.placed())
    ctx.stats["disagreements"] = len(disagree)
    print(f"  agreement: {len(ctx.placed()) - len(disagree)}/{len(ctx.placed())} replicas our "
          f"scheduler placed were allocated by kube-scheduler; {len(disagree)} disagreements")  # fmt: skip
    for line in disagree:
        print(f"    disagreement: {line}")
    assert not disagree, f"{len(disagree)} replicas placed by us, not by kube-scheduler"
    ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=180)


def placed_but_pending(ctx: Fleet, timeout: float) -> list[str]:
    """Replicas whose pods kube-scheduler has not bound within ``timeout``: why."""
    deadline = time.monotonic() + timeout
    while True:
        out = []
        for replica, cluster in ctx.placed().items():
            kube = ctx.clusters[cluster]
            for kind, ns, name in ctx.workloads_of(replica):
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


def capacity(ctx: Fleet) -> None:
    """Past the fleet's GPUs our scheduler reports a shortfall; no GPU pod is left Pending."""
    fits = gpu_devices(ctx)
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, f"--replicas={fits + 1}")
    ctx.step(f"kubectl scale --replicas={fits + 1}")

    def shortfall() -> Mapping[str, Any] | None:
        md = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
        c = conditions(md).get("ReplicasScheduled", {})
        return c if c.get("status") == "False" else None

    cond = ctx.wait_for(
        "ReplicasScheduled=False reports the shortfall",
        shortfall,
        120,
        lambda: ctx.explain(ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), 0),
    )
    ctx.step(f"ReplicasScheduled: {cond.get('reason')}: {cond.get('message')}")
    assert len(ctx.placed()) == fits, f"placed {ctx.placed()}, expected {fits}"
    time.sleep(10)
    stuck = [
        f"{name}: pod {p['metadata']['name']}: {why}"
        for name, kube in ctx.clusters.items()
        for p in gpu_pods(kube)
        if (why := pending(p))
    ]
    assert not stuck, "GPU pods Pending:\n" + "\n".join(stuck)
    ctx.step(f"no workload cluster has a Pending GPU pod ({fits} replicas running)")
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, "--replicas=1")
    ctx.wait_for("one replica left", lambda: len(ctx.placed()) == 1, 180, lambda: str(ctx.placed()))
    ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=180)
    gone = ctx.wait_for(
        "the scaled-down replicas' pods gone from the workload clusters",
        lambda: sum(len(gpu_pods(k)) for k in ctx.clusters.values()) == 1,
        120,
        lambda: str({n: len(gpu_pods(k)) for n, k in ctx.clusters.items()}),
    )
    assert gone


def move(ctx: Fleet, what: str, act: Any, undo: Any) -> None:
    """Act on the cluster running the one replica; it moves; the service follows."""
    before = ctx.placed()
    assert len(before) == 1, f"one replica expected, found {before}"
    (old, cluster), = before.items()  # fmt: skip
    act(cluster)
    ctx.step(f"{what} {cluster} (running {old})")
    try:
        moved = ctx.wait_for(
            f"the replica moved off {cluster}",
            lambda: (
                p
                if (p := ctx.placed())
                and len(p) == 1
                and cluster not in p.values()
                and all(p.values())
                else None
            ),
            240,
            lambda: str(ctx.placed()),
        )
        (new, target), = moved.items()  # fmt: skip
        check_replica(ctx, new, target)
        check_service(ctx)
        ctx.step(f"{new} runs on {target}; the ModelService routes there only")
    finally:
        undo(cluster)


def drain(ctx: Fleet) -> None:
    def taint(cluster: str, taints: list[dict[str, str]] | None) -> None:
        ctx.kube.patch(MP, "InferenceCluster", cluster, {"spec": {"taints": taints}})

    move(
        ctx,
        "InferenceCluster tainted modelplane.ai/maintenance:NoExecute:",
        lambda c: taint(c, [{"key": "modelplane.ai/maintenance", "effect": "NoExecute"}]),
        lambda c: taint(c, None),
    )


def cluster_lost(ctx: Fleet) -> None:
    """A workload cluster's API server stops. The docs ("Scaling, retention, and
    re-placement"): a degraded cluster is still retained, transient outages surface
    through the deployment's conditions, not re-placement. So, with a replica on each
    cluster: the one on the lost cluster keeps its cluster, the other keeps running, and
    the ModelService keeps routing to it. What Modelplane reports meanwhile is printed."""
    n = len(ctx.clusters)
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, f"--replicas={n}")
    ctx.step(f"kubectl scale --replicas={n}: a replica on every cluster")
    ctx.wait_for(
        f"{n} replicas on {n} clusters",
        lambda: len(set(ctx.placed().values()) - {""}) == n,
        240,
        lambda: str(ctx.placed()),
    )
    ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=180)
    before = ctx.placed()
    lost, survivor = sorted(ctx.clusters)[0], sorted(ctx.clusters)[-1]
    for replica, cluster in before.items():
        check_running(ctx, replica, cluster)
    uids = {r["metadata"]["name"]: r["metadata"]["uid"] for r in ctx.replicas()}
    pid_file = ctx.fleet_state / "pids" / f"{lost}-kube-apiserver.pid"
    os.kill(int(pid_file.read_text()), signal.SIGTERM)
    ctx.step(f"stopped the API server of {lost}")
    gateway = str(dig(ctx.get(MP, "InferenceCluster", survivor), "status", "gateway", "address"))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = {r["metadata"]["name"]: r["metadata"]["uid"] for r in ctx.replicas()}
        assert now == uids, f"replicas changed while {lost} was unreachable: {uids} -> {now}"
        routed = routed_addresses(ctx)
        assert gateway in routed, f"the ModelService stopped routing to {survivor}: {routed}"
        time.sleep(5)
    ctx.step(f"60s on, every replica kept its cluster (same uids); the ModelService still "
             f"routes to {survivor} ({gateway})")  # fmt: skip
    on_lost = [r for r, c in before.items() if c == lost]
    for replica in on_lost:
        got = ctx.get(MP, "ModelReplica", replica, ML)
        ctx.step(f"reported: ModelReplica {replica} on {lost}: {_conds_of(got)}")
    ctx.step(
        f"reported: InferenceCluster {lost}: {_conds_of(ctx.get(MP, 'InferenceCluster', lost))}"
    )
    md = ctx.get(MP, "ModelDeployment", "qwen-demo", ML)
    ctx.step(f"reported: ModelDeployment qwen-demo: {_conds_of(md)}")
    objs = [o for r in on_lost for o in ctx.objects_of(r)]
    unsynced = [o for o in objs if not condition_true(o, "Synced")]
    ctx.step(f"reported: {len(unsynced)} of the {len(objs)} Objects on {lost} Synced=False "
             "(provider-kubernetes cannot reach it)")  # fmt: skip
    ctx.step(f"the ModelService routes to {sorted(routed_addresses(ctx))}")


def _conds_of(obj: Obj) -> str:
    return ", ".join(
        f"{k}={c.get('status')}" + (f" ({c.get('reason')})" if c.get("status") != "True" else "")
        for k, c in conditions(obj).items()
    )
