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

``tools/bench/loop.sh`` starts a fresh control plane per size, runs this in it and stops it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from modelplane.runtime import callstats

from e2e.kube import Kube, condition_true, dig, wait_until

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MP = "modelplane.ai/v1alpha1"
NAMESPACE = "ml-team"
SYSTEM = "modelplane-system"
CLASS = "h100-8x-byo"
POOL = "gpu-h100"
METRICS = "http://127.0.0.1:8080/metrics"  # Crossplane's, inside the stack's namespace
COMPONENTS = ("crossplane", "kube-apiserver", "etcd", "functions")
OTHERS = ("providers", "package-runtime", "kube-controller-manager")
"""Measured apart: they stand in for what a real install runs elsewhere, or do no loop work."""
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


# -- measuring ----------------------------------------------------------------------------------


def _children(proc: Path = Path("/proc")) -> dict[int, list[int]]:
    """Each process's children, from every process's stat."""
    kids: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stat = _stat_fields(entry / "stat")
        if stat:
            kids.setdefault(int(stat[1]), []).append(int(entry.name))
    return kids


def _stat_fields(path: Path) -> list[str]:
    """A /proc stat's fields from the state on (field 3 is index 0); [] if it is gone.

    The command name (field 2) may hold spaces and parentheses: it ends at the last ')'.
    """
    try:
        text = path.read_text()
    except OSError:
        return []
    return text[text.rindex(")") + 2 :].split()


def cpu_seconds_of(fields: Sequence[str], ticks: int) -> float:
    """utime + stime + cutime + cstime (fields 14-17) of a stat, in seconds."""
    return sum(int(fields[i]) for i in range(11, 15)) / ticks


def tree_cpu_seconds(
    pid: int, kids: Mapping[int, Sequence[int]], proc: Path = Path("/proc")
) -> float:
    """CPU seconds of ``pid`` and every descendant (threads included: /proc/<pid>/stat sums
    them; a reaped child is in its parent's cutime + cstime)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        fields = _stat_fields(proc / str(current) / "stat")
        if fields:
            total += cpu_seconds_of(fields, ticks)
        todo.extend(kids.get(current, ()))
    return total


def component_pids(state: Path, names: Sequence[str]) -> dict[str, int]:
    """The pids cluster.sh recorded (its pid files), of the components that have one."""
    pids = {}
    for name in names:
        path = state / "pids" / f"{name}.pid"
        if path.is_file():
            pids[name] = int(path.read_text().strip())
    return pids


def parse_metrics(text: str) -> dict[str, dict[str, float]]:
    """Composite reconciles per controller and RunFunction requests per function."""
    out: dict[str, dict[str, float]] = {"reconciles": {}, "function_requests": {}}
    wanted = {
        "controller_runtime_reconcile_total{": ("reconciles", "controller"),
        "function_run_function_request_total{": ("function_requests", "function_name"),
    }
    for line in text.splitlines():
        for prefix, (key, label) in wanted.items():
            if not line.startswith(prefix):
                continue
            labels, value = line.rsplit(" ", 1)
            name = labels.split(f'{label}="', 1)[1].split('"', 1)[0]
            if key == "reconciles" and not name.startswith("composite/"):
                continue
            name = name.removeprefix("composite/")
            out[key][name] = out[key].get(name, 0.0) + float(value)
    return out


def _scrape(url: str = METRICS) -> dict[str, dict[str, float]]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return parse_metrics(resp.read().decode())


def parse_api_requests(text: str) -> dict[str, float]:
    """The API server's requests by verb and resource (``apiserver_request_total``)."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels, value = line.rsplit(" ", 1)
        found = dict(part.split("=", 1) for part in labels[labels.index("{") + 1 : -1].split('",'))
        verb = found.get("verb", "").strip('"')
        resource = found.get("resource", "").strip('"')
        sub = found.get("subresource", "").strip('"')
        key = f"{verb} {resource}" + (f"/{sub}" if sub else "")
        out[key] = out.get(key, 0.0) + float(value)
    return out


def _api_requests(kube: Kube) -> dict[str, float]:
    """What the API server served so far; empty if its metrics cannot be read."""
    try:
        resp = kube._send("GET", "/metrics", accept="text/plain")
    except Exception:  # a figure missing is said in the report, never a failed run
        return {}
    return parse_api_requests(resp.data.decode())


def uptime() -> str:
    try:
        return subprocess.run(
            ["uptime"], capture_output=True, text=True, check=False
        ).stdout.strip()
    except OSError:
        return Path("/proc/loadavg").read_text().strip()


@dataclass
class Snapshot:
    """Counters at one instant; the difference of two is what a phase cost."""

    at: float
    cpu: dict[str, float]
    metrics: dict[str, dict[str, float]]
    calls: dict[str, dict[str, float]]
    load: str
    api: dict[str, float] = field(default_factory=dict)


def snapshot(state: Path, stats_dir: Path, kube: Kube | None = None) -> Snapshot:
    kids = _children()
    pids = component_pids(state, (*COMPONENTS, *OTHERS))
    return Snapshot(
        at=time.monotonic(),
        cpu={name: tree_cpu_seconds(pid, kids) for name, pid in pids.items()},
        metrics=_scrape(),
        calls=callstats.read_totals(stats_dir),
        load=uptime(),
        api=_api_requests(kube) if kube is not None else {},
    )


def _sub(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    return {k: round(v - before.get(k, 0.0), 3) for k, v in sorted(after.items())}


def phase(before: Snapshot, after: Snapshot) -> dict[str, Any]:
    """What happened between two snapshots."""
    return {
        "seconds": round(after.at - before.at, 1),
        "cpu_seconds": _sub(after.cpu, before.cpu),
        "reconciles": _sub(after.metrics["reconciles"], before.metrics["reconciles"]),
        "function_requests": _sub(
            after.metrics["function_requests"], before.metrics["function_requests"]
        ),
        "calls": {
            kind: _sub(counts, before.calls.get(kind, {}))
            for kind, counts in sorted(after.calls.items())
        },
        "api_requests": _sub(after.api, before.api),
        "uptime_start": before.load,
        "uptime_end": after.load,
    }


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
    time.sleep(2 * callstats.FLUSH_SECONDS + 1)  # the call counts' last write
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


# -- reporting ----------------------------------------------------------------------------------

KIND_OF_CONTROLLER = {
    "inferenceclusters.modelplane.ai": "InferenceCluster",
    "modeldeployments.modelplane.ai": "ModelDeployment",
    "modelreplicas.modelplane.ai": "ModelReplica",
    "modelendpoints.modelplane.ai": "ModelEndpoint",
    "servingstacks.infrastructure.modelplane.ai": "ServingStack",
}


def table(result: Mapping[str, Any]) -> str:
    """A markdown report of one size: the phases' figures side by side."""
    size = result["size"]
    conv, steady = result["converge"], result["steady"]
    minutes = steady["seconds"] / 60
    head = (
        f"### {size['name']}: {size['clusters']} clusters, {size['deployments']} deployments x "
        f"{size['replicas']} replicas\n\n"
        f"converge: `{conv['uptime_start']}` .. `{conv['uptime_end']}`  \n"
        f"steady: `{steady['uptime_start']}` .. `{steady['uptime_end']}`\n\n"
        "| figure | converge | steady (per minute) |\n|---|---|---|\n"
        f"| wall seconds | {conv['seconds']:.0f} | {steady['seconds']:.0f} s window |\n"
    )
    rows = []
    for name in (*COMPONENTS, *OTHERS):
        if name in conv["cpu_seconds"]:
            a, b = conv["cpu_seconds"][name], steady["cpu_seconds"].get(name, 0.0) / minutes
            tag = "" if name in COMPONENTS else " (not the product)"
            rows.append(f"| CPU s, {name}{tag} | {a:.1f} | {b:.2f} |")
    product = sum(conv["cpu_seconds"].get(n, 0.0) for n in COMPONENTS)
    product_steady = sum(steady["cpu_seconds"].get(n, 0.0) for n in COMPONENTS) / minutes
    rows.append(f"| CPU s, the four together | {product:.1f} | {product_steady:.2f} |")
    for ctrl, kind in KIND_OF_CONTROLLER.items():
        a = conv["reconciles"].get(ctrl, 0.0)
        b = steady["reconciles"].get(ctrl, 0.0) / minutes
        rows.append(f"| reconciles, {kind} | {a:.0f} | {b:.1f} |")
    for kind in ("InferenceCluster", "ModelDeployment", "ModelReplica", "ServingStack"):
        c, s = conv["calls"].get(kind, {}), steady["calls"].get(kind, {})
        rows.append(
            f"| RunFunction calls, {kind} | {c.get('calls', 0):.0f} | "
            f"{s.get('calls', 0) / minutes:.1f} |"
        )
        rows.append(
            f"| function CPU s, {kind} | {c.get('cpu_seconds', 0):.1f} | "
            f"{s.get('cpu_seconds', 0) / minutes:.2f} |"
        )
    md_c, md_s = (
        conv["calls"].get("ModelDeployment", {}),
        steady["calls"].get("ModelDeployment", {}),
    )
    rows.append(
        f"| ModelDeployment request bytes (MiB) | {md_c.get('request_bytes', 0) / 2**20:.1f} | "
        f"{md_s.get('request_bytes', 0) / 2**20 / minutes:.2f} |"
    )
    rows.append(
        f"| bytes per ModelDeployment request (KiB, mean) | {_mean_kib(md_c)} | {_mean_kib(md_s)} |"
    )
    all_bytes = [
        sum(k.get("request_bytes", 0) for k in p["calls"].values()) for p in (conv, steady)
    ]
    rows.append(
        f"| request bytes, every kind (MiB) | {all_bytes[0] / 2**20:.1f} | "
        f"{all_bytes[1] / 2**20 / minutes:.2f} |"
    )
    objects = ", ".join(f"{k} {v}" for k, v in result["objects"].items())
    return head + "\n".join(rows) + f"\n\nat the end: {objects}\n" + _api_table(steady)


def _api_table(steady: Mapping[str, Any], top: int = 10) -> str:
    """The API server's busiest requests while steady, per minute."""
    api = steady.get("api_requests") or {}
    if not api:
        return ""
    minutes = steady["seconds"] / 60
    busiest = sorted(api.items(), key=lambda kv: -kv[1])[:top]
    rows = "\n".join(f"| {key} | {count / minutes:.1f} |" for key, count in busiest)
    return f"\nsteady API requests per minute (busiest):\n\n| verb resource | per minute |\n|---|---|\n{rows}\n"


def _mean_kib(counts: Mapping[str, float]) -> str:
    calls = counts.get("calls", 0)
    return f"{counts.get('request_bytes', 0) / calls / 1024:.1f}" if calls else "-"


def steady_per_minute(result: Mapping[str, Any]) -> dict[str, float]:
    """The steady figures the cost model grows: CPU of the four, and the ModelDeployment's."""
    steady = result["steady"]
    minutes = steady["seconds"] / 60
    md = steady["calls"].get("ModelDeployment", {})
    return {
        "cpu": sum(steady["cpu_seconds"].get(n, 0.0) for n in COMPONENTS) / minutes,
        "md_calls": md.get("calls", 0) / minutes,
        "md_bytes": md.get("request_bytes", 0) / minutes,
        "md_cpu": md.get("cpu_seconds", 0) / minutes,
        "fn_cpu": sum(k.get("cpu_seconds", 0) for k in steady["calls"].values()) / minutes,
    }


def growth(results: Sequence[Mapping[str, Any]]) -> str:
    """How the steady cost grew from one size to the next, beside how the fleet grew."""
    lines = [
        "| from -> to | deployments x replicas | CPU of the four /min | ModelDeployment calls /min "
        "| ModelDeployment bytes /min | ModelDeployment function CPU /min |",
        "|---|---|---|---|---|---|",
    ]
    for a, b in itertools.pairwise(results):
        sa, sb = steady_per_minute(a), steady_per_minute(b)
        fan = (b["size"]["deployments"] * b["size"]["deployments"] * b["size"]["replicas"]) / (
            a["size"]["deployments"] * a["size"]["deployments"] * a["size"]["replicas"]
        )

        def x(key: str, sa: Mapping[str, float] = sa, sb: Mapping[str, float] = sb) -> str:
            return f"{sb[key] / sa[key]:.1f}x" if sa[key] else "-"

        lines.append(
            f"| {a['size']['name']} -> {b['size']['name']} | {fan:.1f}x | {x('cpu')} | "
            f"{x('md_calls')} | {x('md_bytes')} | {x('md_cpu')} |"
        )
    return "\n".join(lines) + "\n"


PAPER_FLEETS = (
    # (name, clusters, deployments, replicas per deployment): fleet-read-cost.md's L
    ("L", 1_000, 1_000, 10),
    ("10xL", 10_000, 10_000, 10),
)


def composites(clusters: int, deployments: int, replicas: int) -> int:
    """Composites reconciled once a minute: InferenceCluster and ServingStack per
    cluster, ModelReplica and ModelEndpoint per replica, the deployments, and the
    platform's InferenceClass and InferenceGateway."""
    return 2 * clusters + 2 * deployments * replicas + deployments + 2


def fan_in(clusters: int, deployments: int, replicas: int) -> int:
    """Fleet objects the deployments' reconciles of a minute carry: D x (R + C)."""
    return deployments * (deployments * replicas + clusters)


def cost_model(results: Sequence[Mapping[str, Any]]) -> str:
    """Fit steady CPU/min = a x composites + b x fan-in to the first and last size, and
    extrapolate it, with the ModelDeployment bytes per fleet object, to L and 10xL."""
    if len(results) < 2:
        return ""
    first, last = results[0], results[-1]
    points = []
    for r in (first, last):
        z = r["size"]
        shape = (z["clusters"], z["deployments"], z["replicas"])
        points.append((composites(*shape), fan_in(*shape), steady_per_minute(r)))
    (x1, f1, s1), (x2, f2, s2) = points
    det = x1 * f2 - x2 * f1
    b = (s2["cpu"] * x1 - s1["cpu"] * x2) / det
    a = (s1["cpu"] - b * f1) / x1
    per_object = s2["md_bytes"] / s2["md_calls"] / (f2 / last["size"]["deployments"])
    lines = [
        f"fit to {first['size']['name']} and {last['size']['name']}: CPU s/min = "
        f"{a * 1000:.1f} ms x composites + {b * 1e6:.0f} us x D x (R + C); "
        f"{per_object / 1024:.1f} KiB per fleet object in a ModelDeployment request "
        f"({last['size']['name']})\n",
        "| fleet | composites | D x (R + C) | CPU cores, steady | of which the fan-in "
        "| ModelDeployment bytes / min |",
        "|---|---|---|---|---|---|",
    ]
    fleets = [
        (r["size"]["name"], r["size"]["clusters"], r["size"]["deployments"], r["size"]["replicas"])
        for r in results
    ]
    for name, clusters, deployments, replicas in (*fleets, *PAPER_FLEETS):
        x, f = composites(clusters, deployments, replicas), fan_in(clusters, deployments, replicas)
        cpu = a * x + b * f
        lines.append(
            f"| {name} ({clusters} clusters, {deployments} x {replicas}) | {x:,} | {f:,} | "
            f"{cpu / 60:,.2f} | {b * f / cpu:.0%} | {_bytes(f * per_object)} |"
        )
    return "\n".join(lines) + "\n"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


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
