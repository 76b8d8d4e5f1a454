"""The loop benchmark's measuring: CPU of the control plane's processes from /proc, the
composite reconciles and RunFunction requests from Crossplane's metrics, the API server's
requests, and the function server's call counts, as snapshots whose difference is a phase."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelplane import runtime

from benches.procfs import stat_fields
from e2e.kube import Kube

METRICS = "http://127.0.0.1:8080/metrics"  # Crossplane's, inside the stack's namespace
COMPONENTS = ("crossplane", "kube-apiserver", "etcd", "functions")
OTHERS = ("providers", "package-runtime", "kube-controller-manager")
"""Measured apart: they stand in for what a real install runs elsewhere, or do no loop work."""


def _children(proc: Path = Path("/proc")) -> dict[int, list[int]]:
    """Each process's children, from every process's stat."""
    kids: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        stat = stat_fields(entry / "stat")
        if stat:
            kids.setdefault(int(stat[1]), []).append(int(entry.name))
    return kids


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
        fields = stat_fields(proc / str(current) / "stat")
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
        calls=runtime.callstats.read_totals(stats_dir),
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
