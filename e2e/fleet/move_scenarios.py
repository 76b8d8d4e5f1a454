"""drain, cluster-lost: replicas that move (a NoExecute taint) or stay retained but not
Ready (a workload cluster's API server stopped), and the ModelService that follows.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from e2e.context import ML, MP
from e2e.fleet.context import Fleet, check_running, conds_of
from e2e.fleet.deploy_scenarios import check_replica, check_service, routed_addresses
from e2e.kube import Kube, KubeError, condition_true, conditions, dig, wait_until


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
            f"reported: InferenceCluster {lost}: {conds_of(ctx.get(MP, 'InferenceCluster', lost))}"
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
                 f"{cond.get('message')}; {conds_of(got)}")  # fmt: skip
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
             f"{cond.get('message')}; {conds_of(md)}")  # fmt: skip


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
