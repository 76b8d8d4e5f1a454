"""deploy, agreement, capacity: the getting-started ModelDeployment on the workload
clusters, scaled to the fleet's GPUs and one past them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from e2e.context import METALLB_FIRST, ML, MP
from e2e.fleet.context import (
    DEPLOYMENT,
    SERVICE,
    SERVICE_LABEL,
    Fleet,
    check_running,
    fits,
    gpu_pods,
    no_gpu_pod_pending,
    placed_but_pending,
    platform,
)
from e2e.kube import Kube, condition_true, conditions, dig


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
    no_gpu_pod_pending(ctx, f"{most} replicas running")
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
