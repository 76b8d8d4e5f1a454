"""The fleet scenarios: Modelplane on real workload clusters (make e2e-fleet).

Each workload cluster is a real API server with KWOK nodes; provider-kubernetes applies
our Objects there; the real kube-scheduler allocates each pod's DRA devices from the
ResourceSlices. The checks read both sides: what Modelplane reports on the control plane
and what the workload clusters run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane.domain import dra as cel
from modelplane.domain.dra import Attribute, Device

from e2e.fleet import plan as fleet_plan
from e2e.kube import Kube, KubeError, Obj, condition_true, conditions, dig, wait_until
from e2e.scenarios import EXAMPLES, GATEWAY_API, METALLB_FIRST, ML, MP, Context

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


def deploy(ctx: Fleet) -> None:
    platform(ctx)
    ctx.ensure_namespace(ML)
    ctx.apply_file(DEPLOYMENT)
    md = ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=300)
    expected = {"total": 1, "ready": 1, "updated": 1, "updatedReady": 1}
    assert dig(md, "status", "replicas") == expected, md.get("status")
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


PROBE_NS = "fleet-probe"
PROBE_SELECTORS = (
    # the getting-started deployment's, then ones that split the fleet's classes
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    "device.capacity['gpu.nvidia.com'].memory.isGreaterThan(quantity('23034Mi'))",
    'device.attributes["gpu.nvidia.com"].architecture == "Ada Lovelace"',
    'device.attributes["gpu.nvidia.com"].architecture.startsWith("Hop")',
    '!("cudaComputeCapability" in device.attributes["gpu.nvidia.com"])',
    # the pools e2e/fleet/pools.yaml adds: T4 (15360Mi) below, V100 (16384Mi) at the bound
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("16Gi")) < 0',
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
    return [
        slice_device(rs["spec"]["driver"], dev)
        for rs in kube.list(RESOURCE, "ResourceSlice")
        for dev in rs["spec"].get("devices") or []
    ]


def probe(kube: Kube, name: str, expr: str) -> bool:
    """Whether kube-scheduler binds a pod claiming one device with the selector ``expr``."""
    try:
        return start_probe(kube, name, expr)
    finally:
        delete_probe(kube, name)


def start_probe(kube: Kube, name: str, expr: str, count: int = 1, pool: str = "") -> bool:
    """Create a pod claiming ``count`` devices with the selector ``expr`` (on ``pool``'s
    nodes if given); whether kube-scheduler binds it (False: it cannot allocate them)."""
    claim = {
        "apiVersion": RESOURCE,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": PROBE_NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.nvidia.com", "count": count,
            "selectors": [{"cel": {"expression": expr}}]}}]}},
    }  # fmt: skip
    pod: dict[str, Any] = {
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
    if pool:
        pod["spec"]["nodeSelector"] = {fleet_plan.POOL_LABEL: pool}
    kube.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NS}})
    kube.create(claim)
    kube.create(pod)
    deadline = time.monotonic() + 30
    why: str | None = "not seen yet"
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


def delete_probe(kube: Kube, name: str) -> None:
    kube.delete("v1", "Pod", name, PROBE_NS)
    wait_until(f"probe pod {name} gone", lambda: kube.get("v1", "Pod", name, PROBE_NS) is None, 60)
    kube.delete(RESOURCE, "ResourceClaim", name, PROBE_NS)
    wait_until(f"probe claim {name} gone",
               lambda: kube.get(RESOURCE, "ResourceClaim", name, PROBE_NS) is None, 60)  # fmt: skip


def agreement(ctx: Fleet) -> None:
    """Scale to what our scheduler says fits; kube-scheduler allocates every placed replica."""
    most = fits(ctx)
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, f"--replicas={most}")
    ctx.step(f"kubectl scale --replicas={most} (the {most} nodes whose GPUs our selector matches)")
    ctx.wait_for(
        f"{most} replicas placed",
        lambda: len([c for c in ctx.placed().values() if c]) == most,
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


def capacity(ctx: Fleet) -> None:
    """Past the fleet's GPUs our scheduler reports a shortfall; no GPU pod is left Pending."""
    most = fits(ctx)
    ctx.kubectl("scale", "modeldeployment", "qwen-demo", "-n", ML, f"--replicas={most + 1}")
    ctx.step(f"kubectl scale --replicas={most + 1}")

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
    assert len(ctx.placed()) == most, f"placed {ctx.placed()}, expected {most}"
    time.sleep(10)
    stuck = [
        f"{name}: pod {p['metadata']['name']}: {why}"
        for name, kube in ctx.clusters.items()
        for p in gpu_pods(kube)
        if (why := pending(p))
    ]
    assert not stuck, "GPU pods Pending:\n" + "\n".join(stuck)
    ctx.step(f"no workload cluster has a Pending GPU pod ({most} replicas running)")
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


def no_gpu_pod_pending(ctx: Fleet) -> None:
    stuck = [
        f"{name}: pod {p['metadata']['name']}: {why}"
        for name, kube in ctx.clusters.items()
        for p in gpu_pods(kube)
        if (why := pending(p))
    ]
    assert not stuck, "GPU pods Pending:\n" + "\n".join(stuck)
    ctx.step("no workload cluster has a Pending GPU pod")


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
    cluster: the one on the lost cluster keeps its cluster but is not Ready
    (``ModelReady=False ClusterUnreachable``: every Object fails to sync), the deployment
    says how many are ready, the lost replica's ModelEndpoint goes (endpoints exist only
    for Ready replicas) and the ModelService routes to the survivors only. The API
    server restarted, the replica is Ready again and the service routes to it again."""
    before = replica_per_cluster(ctx)
    lost = sorted(ctx.clusters)[0]
    on_lost = sorted(r for r, c in before.items() if c == lost)
    assert on_lost, f"no replica on {lost}: {before}"
    assert set(before.values()) - {lost}, f"no replica off {lost}: {before}"
    uids = {r["metadata"]["name"]: r["metadata"]["uid"] for r in ctx.replicas()}
    stopped = stop_apiserver(ctx, lost)
    try:
        check_unreachable(ctx, lost, on_lost, len(before))
        check_routes_around(ctx, lost, before)
        now = {r["metadata"]["name"]: r["metadata"]["uid"] for r in ctx.replicas()}
        assert now == uids, f"replicas changed while {lost} was unreachable: {uids} -> {now}"
        assert ctx.placed() == before, f"replicas moved: {before} -> {ctx.placed()}"
        ctx.step(f"every replica kept its cluster (same names, uids): {before}")
        objs = [o for r in on_lost for o in ctx.objects_of(r)]
        unsynced = [o for o in objs if not condition_true(o, "Synced")]
        ctx.step(f"{len(unsynced)} of the {len(objs)} Objects on {lost} Synced=False "
                 "(provider-kubernetes cannot reach it)")  # fmt: skip
        ctx.step(
            f"reported: InferenceCluster {lost}: {_conds_of(ctx.get(MP, 'InferenceCluster', lost))}"
        )
    finally:
        restart_apiserver(ctx, lost, stopped)
    check_back(ctx, lost, on_lost)


def replica_per_cluster(ctx: Fleet) -> dict[str, str]:
    """Scale qwen-demo to a replica on every cluster, each running and routed to."""
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
    placed = ctx.placed()
    for replica, cluster in placed.items():
        check_running(ctx, replica, cluster)
    check_service(ctx)
    return placed


def check_routes_around(ctx: Fleet, lost: str, placed: Mapping[str, str]) -> None:
    """The lost cluster's replicas' ModelEndpoints go, the others' stay; the ModelService
    routes to the other clusters' gateways only."""
    gateways = {c: gateway_of(ctx, c) for c in ctx.clusters}
    kept = {endpoint_url(gateways[c], r) for r, c in placed.items() if c != lost}
    survivors = {gateways[c] for c in placed.values() if c != lost}
    ctx.wait_for(
        f"the ModelEndpoints on {lost} gone, the others kept",
        lambda: endpoint_urls(ctx) == kept,
        120,
        lambda: str(sorted(endpoint_urls(ctx))),
    )
    ctx.wait_for(
        f"the ModelService routes to {sorted(survivors)} only, not {lost} ({gateways[lost]})",
        lambda: routed_addresses(ctx) == survivors,
        120,
        lambda: f"routes to {sorted(routed_addresses(ctx))}",
    )


def check_back(ctx: Fleet, lost: str, on_lost: list[str]) -> None:
    """The cluster answers again: its replicas Ready, their endpoints back, routed to."""
    try:
        for replica in on_lost:
            check_replica(ctx, replica, lost)
    except AssertionError as exc:
        state = describe_cluster(ctx.clusters[lost])
        msg = f"{exc}\n{lost} after its API server restarted:\n{state}"
        raise AssertionError(msg) from None
    ctx.wait_ready(MP, "ModelDeployment", "qwen-demo", ML, timeout=180)
    check_service(ctx)
    ctx.step(f"{lost} back: its replica Ready, its endpoint back, the service routes to it")


def describe_cluster(kube: Kube) -> str:
    """Each node's and pod's readiness, to say why a workload is not available."""
    lines = [
        f"    node {n['metadata']['name']}: Ready={conditions(n).get('Ready', {}).get('status')}"
        for n in kube.list("v1", "Node")
    ]
    for p in kube.list("v1", "Pod", ML):
        ready = conditions(p).get("Ready", {})
        lines.append(
            f"    pod {p['metadata']['name']}: {dig(p, 'status', 'phase')} on "
            f"{dig(p, 'spec', 'nodeName')}, Ready={ready.get('status')} {ready.get('reason') or ''}"
        )
    return "\n".join(lines)


def gateway_of(ctx: Fleet, cluster: str) -> str:
    return str(dig(ctx.get(MP, "InferenceCluster", cluster), "status", "gateway", "address"))


def endpoint_url(gateway: str, replica: str) -> str:
    return f"http://{gateway}/{ML}/{replica}/v1"


def endpoint_urls(ctx: Fleet) -> set[str]:
    return {str(dig(e, "spec", "url")) for e in ctx.endpoints()}


def check_unreachable(ctx: Fleet, lost: str, on_lost: list[str], total: int) -> None:
    """Each replica on ``lost``: ModelReady=False ClusterUnreachable, not Ready; the
    deployment's ReplicasReady=False names how many of ``total`` are ready."""
    for replica in on_lost:

        def unreachable(replica: str = replica) -> Mapping[str, Any] | None:
            got = ctx.kube.get(MP, "ModelReplica", replica, ML)
            cond = conditions(got).get("ModelReady", {})
            return cond if cond.get("reason") == "ClusterUnreachable" else None

        cond = ctx.wait_for(
            f"ModelReplica {replica} ModelReady=False ClusterUnreachable",
            unreachable,
            180,
            lambda replica=replica: ctx.explain(ctx.kube.get(MP, "ModelReplica", replica, ML)),  # type: ignore[misc]
        )
        assert cond.get("status") == "False", cond
        got = ctx.get(MP, "ModelReplica", replica, ML)
        assert not condition_true(got, "Ready"), ctx.explain(got, 0)
        assert dig(got, "spec", "clusterName") == lost, f"{replica} left {lost}: {got['spec']}"
        ctx.step(f"ModelReplica {replica}: ModelReady=False ClusterUnreachable: "
                 f"{cond.get('message')}; {_conds_of(got)}")  # fmt: skip
    want = f"{total - len(on_lost)} of {total} replicas ready"

    def not_all_ready() -> Mapping[str, Any] | None:
        md = ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML)
        cond = conditions(md).get("ReplicasReady", {})
        return cond if cond.get("status") == "False" and want in cond.get("message", "") else None

    cond = ctx.wait_for(
        f"ModelDeployment qwen-demo ReplicasReady=False: {want}",
        not_all_ready,
        120,
        lambda: ctx.explain(ctx.kube.get(MP, "ModelDeployment", "qwen-demo", ML), 0),
    )
    md = ctx.get(MP, "ModelDeployment", "qwen-demo", ML)
    ctx.step(f"ModelDeployment qwen-demo ReplicasReady=False {cond.get('reason')}: "
             f"{cond.get('message')}; {_conds_of(md)}")  # fmt: skip


def stop_apiserver(ctx: Fleet, cluster: str) -> tuple[int, list[str]]:
    """Stop a workload cluster's API server (SIGTERM); return its pid and command line."""
    pid = int((ctx.fleet_state / "pids" / f"{cluster}-kube-apiserver.pid").read_text())
    command = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]
    os.kill(pid, signal.SIGTERM)
    kube = ctx.clusters[cluster]
    wait_until(f"{cluster}'s API server (pid {pid}) no longer answers",
               lambda: not answers(kube), 30)  # fmt: skip
    ctx.step(f"stopped the API server of {cluster} (pid {pid})")
    return pid, command


def restart_apiserver(ctx: Fleet, cluster: str, old: tuple[int, list[str]]) -> None:
    """Start the API server again with the same command line, once the old one has exited
    (killed if it still drains); fleet.sh down stops it by the pid file it reads."""
    pid, command = old
    if not wait_exit(pid, 30):
        os.kill(pid, signal.SIGKILL)
        assert wait_exit(pid, 10), f"{cluster}'s old API server (pid {pid}) does not exit"
    with (ctx.fleet_state / "logs" / f"{cluster}-kube-apiserver.log").open("ab") as log:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    (ctx.fleet_state / "pids" / f"{cluster}-kube-apiserver.pid").write_text(f"{proc.pid}\n")
    kube = ctx.clusters[cluster]
    ctx.wait_for(f"the API server of {cluster} answers again (pid {proc.pid})",
                 lambda: answers(kube), 90)  # fmt: skip


def wait_exit(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def answers(kube: Kube) -> bool:
    try:
        return kube.get("v1", "Namespace", "default") is not None
    except KubeError:
        return False


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie, stopped but not yet reaped, does not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def _conds_of(obj: Obj) -> str:
    return ", ".join(
        f"{k}={c.get('status')}" + (f" ({c.get('reason')})" if c.get("status") != "True" else "")
        for k, c in conditions(obj).items()
    )
