"""The loop benchmark's report: a markdown table per size, the growth from one size to the
next, and a cost model fitted to the first and last size and extrapolated to larger fleets."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from benches.loop_measure import COMPONENTS, OTHERS

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
