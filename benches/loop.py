"""The loop benchmark (``make bench-loop``): what the control plane pays to converge a fleet
and to keep it, on the ``make e2e`` control plane with fake providers.

A fleet of N Existing InferenceClusters (each publishing one pool of its InferenceClass)
and D ModelDeployments of R replicas each is applied at once; the benchmark waits until
every cluster and deployment is Ready (every replica placed and Ready), then watches the
fleet for a steady window. For each phase it measures:

- wall time (converge only: from the first apply to all Ready);
- CPU seconds of Crossplane, kube-apiserver, etcd and the function server, from
  ``/proc/<pid>/stat`` (utime + stime of every thread, summed over each process and its
  descendants, the function server's forked workers included; a child already reaped is
  in its parent's cutime + cstime); the fake providers' too, apart (they stand in for the
  providers, they are not the product);
- reconciles per kind (Crossplane's ``controller_runtime_reconcile_total`` of each
  composite controller) and RunFunction calls per function (its
  ``function_run_function_request_total``);
- per composite kind, the calls the function server answered, the bytes of their
  requests counted at the server and its compose CPU
  (:mod:`modelplane.runtime.callstats`, switched on by ``MODELPLANE_CALL_STATS_DIR``).

    python -m benches.loop run S --out build/bench-loop/S.json   (inside the stack's namespace)
    python -m benches.loop report build/bench-loop/S.json build/bench-loop/M.json

What it measures is in :mod:`benches.loop_measure`, how it reports in
:mod:`benches.loop_report`. ``tools/bench/loop.sh`` starts a fresh control plane per size,
runs this in it and stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from modelplane import runtime

from benches.loop_measure import phase, snapshot, uptime
from benches.loop_report import cost_model, growth, table
from e2e.kube import Kube, condition_true, dig, wait_until

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MP = "modelplane.ai/v1alpha1"
NAMESPACE = "ml-team"
SYSTEM = "modelplane-system"
CLASS = "h100-8x-byo"
POOL = "gpu-h100"
POLL_SECONDS = 5.0
Obj = dict[str, Any]


@dataclass(frozen=True)
class Size:
    """A fleet: clusters, deployments and the replicas of each deployment."""

    name: str
    clusters: int
    deployments: int
    replicas: int  # per deployment

    @property
    def total_replicas(self) -> int:
        return self.deployments * self.replicas


SIZES = {
    "S": Size("S", clusters=5, deployments=10, replicas=2),
    # 20 clusters x 50 deployments would take ~40 minutes to converge on 2 cores shared
    # with other work (S took ~6 at load ~20); 15 x 30 grows the fan-in 9x in ~20.
    "M": Size("M", clusters=15, deployments=30, replicas=2),
}


# -- the fleet ----------------------------------------------------------------------------------


def cluster_name(i: int) -> str:
    return f"bench-{i:04d}"


def deployment_name(i: int) -> str:
    return f"model-{i:04d}"


def fleet(size: Size) -> list[Obj]:
    """The fleet's objects in apply order: kubeconfig Secrets, clusters, deployments."""
    docs: list[Obj] = []
    for i in range(size.clusters):
        docs.append(_kubeconfig_secret(cluster_name(i)))
        docs.append(_existing_cluster(cluster_name(i), nodes_per_cluster(size)))
    docs.extend(_deployment(deployment_name(i), size.replicas) for i in range(size.deployments))
    return docs


def _kubeconfig_secret(cluster: str) -> Obj:
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": f"https://{cluster}.bench.invalid"}}],
        "users": [{"name": "admin", "user": {"token": "bench"}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "admin"}}],
        "current-context": cluster,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": f"{cluster}-kubeconfig", "namespace": SYSTEM},
        "stringData": {"kubeconfig": yaml.safe_dump(kubeconfig)},
    }


def nodes_per_cluster(size: Size) -> int:
    """Nodes per cluster's pool: room for twice the fleet's replicas (a pod takes a
    whole node, the docs' rule), so every replica places and a rolling surge fits."""
    return max(2, -(-2 * size.total_replicas // size.clusters))


def _existing_cluster(name: str, nodes: int) -> Obj:
    """The docs' Existing cluster (8x H100 nodes), one pool of ``nodes`` nodes."""
    return {
        "apiVersion": MP,
        "kind": "InferenceCluster",
        "metadata": {"name": name, "labels": {"modelplane.ai/region": "us-east"}},
        "spec": {
            "cluster": {
                "source": "Existing",
                "existing": {"secretRef": {"name": f"{name}-kubeconfig", "key": "kubeconfig"}},
            },
            "nodePools": [{"name": POOL, "className": CLASS, "nodeCount": nodes}],
        },
    }


def _deployment(name: str, replicas: int) -> Obj:
    """The getting-started ModelDeployment (one GPU of >= 20Gi per replica), renamed."""
    path = EXAMPLES / "getting-started/deploying-a-model/eks/model-deployment.yaml"
    doc: Obj = yaml.safe_load(path.read_text())
    doc["metadata"] = {"name": name, "namespace": NAMESPACE}
    doc["spec"]["replicas"] = replicas
    return doc


# -- running ------------------------------------------------------------------------------------


@dataclass
class Result:
    size: Size
    converge: dict[str, Any] = field(default_factory=dict)
    steady: dict[str, Any] = field(default_factory=dict)
    objects: dict[str, int] = field(default_factory=dict)


def run(size: Size, steady_seconds: float, timeout: float, say: Callable[[str], None]) -> Result:
    """Apply the fleet, wait for all Ready, watch it steady; what each phase cost."""
    kube = Kube()
    state = Path(os.environ["E2E_STATE"])
    stats_dir = Path(os.environ["MODELPLANE_CALL_STATS_DIR"])
    platform(kube, say)
    settle = 30.0
    say(f"platform Ready; {settle:.0f} s for it to settle before measuring")
    time.sleep(settle)
    result = Result(size)
    start = snapshot(state, stats_dir, kube)
    say(f"applying {size}: {uptime()}")
    for doc in fleet(size):
        kube.apply(doc)
    wait_converged(kube, size, timeout, say)
    time.sleep(2 * runtime.callstats.FLUSH_SECONDS + 1)  # the call counts' last write
    ready = snapshot(state, stats_dir, kube)
    result.converge = phase(start, ready)
    say(f"converged in {result.converge['seconds']} s; steady for {steady_seconds:.0f} s")
    time.sleep(steady_seconds)
    end = snapshot(state, stats_dir, kube)
    result.steady = phase(ready, end)
    result.objects = count_objects(kube, size)
    return result


def platform(kube: Kube, say: Callable[[str], None]) -> None:
    """What the fleet stands on: the InferenceGateway, the InferenceClass, the namespace."""
    docs = [
        *yaml.safe_load_all(
            (EXAMPLES / "getting-started/build-the-platform/inference-gateway.yaml").read_text()
        ),
        *yaml.safe_load_all(
            (EXAMPLES / "platform/inference-class/inference-class-h100-byo.yaml").read_text()
        ),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
    ]
    for doc in docs:
        if isinstance(doc, dict):
            kube.apply(doc)
    for kind, name in (("InferenceGateway", "default"), ("InferenceClass", CLASS)):
        wait_until(f"{kind} {name} Ready", _is_ready(kube, kind, name), 600, 2)
    say("platform applied: InferenceGateway default, InferenceClass " + CLASS)


def _is_ready(kube: Kube, kind: str, name: str) -> Callable[[], bool]:
    return lambda: condition_true(kube.get(MP, kind, name), "Ready")


def converged(clusters: Sequence[Obj], deployments: Sequence[Obj], size: Size) -> str:
    """Empty when every cluster and deployment is Ready; else what is not, in a few words."""
    ready_clusters = [c for c in clusters if condition_true(c, "Ready")]
    done = [
        d
        for d in deployments
        if condition_true(d, "Ready") and (dig(d, "status", "replicas", "ready") == size.replicas)
    ]
    if len(ready_clusters) == size.clusters and len(done) == size.deployments:
        return ""
    return (
        f"{len(ready_clusters)}/{size.clusters} clusters Ready, "
        f"{len(done)}/{size.deployments} deployments with {size.replicas} replicas Ready"
    )


def wait_converged(kube: Kube, size: Size, timeout: float, say: Callable[[str], None]) -> None:
    t0 = time.monotonic()
    last = ""
    while True:
        missing = converged(
            kube.list(MP, "InferenceCluster"), kube.list(MP, "ModelDeployment", NAMESPACE), size
        )
        if not missing:
            return
        if missing != last:
            say(f"{time.monotonic() - t0:.0f} s: {missing}")
            last = missing
        if time.monotonic() - t0 > timeout:
            msg = f"not converged after {timeout:.0f} s: {missing}"
            raise TimeoutError(msg)
        time.sleep(POLL_SECONDS)


def count_objects(kube: Kube, size: Size) -> dict[str, int]:
    replicas = kube.list(MP, "ModelReplica", NAMESPACE)
    counts = {
        "InferenceCluster": len(kube.list(MP, "InferenceCluster")),
        "ModelDeployment": len(kube.list(MP, "ModelDeployment", NAMESPACE)),
        "ModelReplica": len(replicas),
        "ModelReplica Ready": sum(condition_true(r, "Ready") for r in replicas),
    }
    counts["expected replicas"] = size.total_replicas
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="run one size on the running control plane")
    go.add_argument("size", choices=sorted(SIZES))
    go.add_argument("--steady", type=float, default=300.0, help="steady window, seconds")
    go.add_argument("--timeout", type=float, default=2700.0, help="converge timeout, seconds")
    go.add_argument("--out", type=Path, required=True)
    rep = sub.add_parser("report", help="print the tables and the growth of runs' results")
    rep.add_argument("results", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":

        def say(text: str) -> None:
            print(f"  bench-loop {args.size}: {text}", flush=True)

        result = run(SIZES[args.size], args.steady, args.timeout, say)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(asdict(result), indent=1, sort_keys=True))
        print(table(asdict(result)))
        return 0
    results = [json.loads(p.read_text()) for p in args.results]
    for result in results:
        print(table(result))
    if len(results) > 1:
        print(growth(results))
        print(cost_model(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
