"""The ModelDeployment function on generated fleets: latency, memory, identical placements.

Fleets (every cluster publishes 8 GPU pools of 6 InferenceClasses; every object carries
a ``uid`` and ``resourceVersion``, as objects read from the API server do):

- S: 20 clusters, 100 ModelReplicas in the fleet;
- M: 200 clusters, 1,000 ModelReplicas;
- L: 1,000 clusters, 10,000 ModelReplicas;
- 5xL: 5,000 clusters, 50,000 ModelReplicas.

The deployment under test wants one replica per 10 clusters and already has half of
them, so each call retains, fills and explains. Each size runs against its own served
function (``modelplane-function`` in a subprocess, over a local socket, its default
workers), so its peak RSS is its own. Every served figure comes from the Go client
(:mod:`benches.goclient`, ``tools/benchclient``), which builds each request from the
fleet's objects and encodes it as Crossplane does: Go's protobuf, a new map order on
every call, so the server never sees the same bytes twice (a Python client would send
identical bytes, which Crossplane never does). Figures are medians:

- ``cpu new``: the server's CPU time per reconcile, summed over its processes (10 ms
  ticks), with a fleet it has never seen (every object a fresh uid, other teams'
  replicas new pod templates): what every call paid after a restart;
- ``cpu steady``: the same objects again, re-encoded (nothing changed: the steady
  state); ``ratio`` is steady / new;
- ``wall new`` / ``wall steady``: the round trips (encoding left out: ``Go enc`` is
  the client's encoding per call, as Crossplane pays it);
- ``RSS``: the server's peak resident memory, summed over its processes (VmHWM): a
  page they share (the fork server's modules, mapped copy-on-write by every worker) is
  counted once per process;
- ``PSS``: the peak of the sum of their proportional set sizes, sampled every 20 ms: a
  shared page counted once, split among the processes that map it (what the machine
  pays; a peak shorter than 20 ms may be missed).

The profile line splits a steady in-process call of the Python client by phase.

Every response is checked against the digest of the response recorded before the
speed work (``benches/placements.json``): placements, conditions and events must be
byte-identical. ``python -m benches.bench_scheduler --record`` records them afresh.

``python -m benches`` runs every size; ``python -m benches.bench_scheduler S M`` picks.
"""

from __future__ import annotations

import cProfile
import functools
import hashlib
import json
import os
import platform
import pstats
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import grpc
from crossplane.function import logging, resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import planning, registry, runtime
from modelplane.domain import api, naming

from benches import goclient

API = api.MODELPLANE
SIZES = {"S": (20, 100), "M": (200, 1_000), "L": (1_000, 10_000), "5xL": (5_000, 50_000)}
# Issue 24's targets: the server's CPU per reconcile in ms, summed over its processes (a
# fleet never seen, and steady), peak RSS summed over its processes in MiB, and steady / new.
TARGET_MS = {"M": 30.0, "L": 250.0, "5xL": 1_500.0}
TARGET_RSS_MIB = {"5xL": 500.0}
TARGET_RATIO = 1 / 3
REPEAT = {"S": (30, 10), "M": (15, 8), "L": (5, 3), "5xL": (3, 2)}  # (warm, new fleet)
DIGESTS = Path(__file__).with_name("placements.json")
T = TypeVar("T")
RUN_FUNCTION = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
POOLS_PER_CLUSTER = 8
MAX_MESSAGE = 256 * 1024 * 1024
STARTUP_SECONDS = 300  # the served function's start, workers included, on a loaded machine


def _gpu(memory: str, count: int, arch: str) -> dict[str, Any]:
    return {
        "name": "gpu",
        "claim": "DRA",
        "driver": "gpu.nvidia.com",
        "deviceClassName": "gpu.nvidia.com",
        "count": count,
        "attributes": {"architecture": {"string": arch}},
        "capacity": {"memory": {"value": memory}},
    }


CLASSES: list[list[dict[str, Any]]] = [
    [_gpu("23034Mi", 1, "Ada Lovelace")],
    [_gpu("46068Mi", 1, "Ada Lovelace")],
    [_gpu("40960Mi", 1, "Ampere")],
    [_gpu("24564Mi", 1, "Ampere")],
    [
        _gpu("81559Mi", 8, "Hopper"),
        {
            "name": "nic",
            "claim": "Synthetic",
            "driver": "nic.nvidia.com",
            "count": 8,
            "attributes": {"linkType": {"string": "infiniband"}},
        },
    ],
    [
        _gpu("140Gi", 8, "Hopper"),
        {
            "name": "efa",
            "claim": "DRA",
            "driver": "dra.net",
            "deviceClassName": "efa.networking.k8s.aws",
            "count": 16,
        },
    ],
]
SELECTORS = [
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("20Gi")) >= 0\n',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0\n',
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
]


def uid(generation: int, serial: int) -> str:
    """A UUID-shaped uid, distinct per object and per generation of the fleet."""
    return f"{generation:08x}-0000-4000-8000-{serial:012x}"


def cluster(i: int) -> dict[str, Any]:
    name = f"cluster-{i:04}"
    pools = [
        {
            "name": f"pool-{p}",
            "nodes": 4 + (i + p) % 13,
            "devices": CLASSES[(i + p) % len(CLASSES)],
        }
        for p in range(POOLS_PER_CLUSTER)
    ]
    return {
        "apiVersion": API,
        "kind": "InferenceCluster",
        "metadata": {
            "name": name,
            "uid": uid(0, i),
            "resourceVersion": str(1000 + i),
            "labels": {"modelplane.ai/region": ["us", "eu", "ap"][i % 3], "tier": "gpu"},
        },
        "spec": {
            "cluster": {"source": "EKS", "eks": {"region": "us-east-1"}},
            "nodePools": [
                {"name": p["name"], "className": f"class-{(i + n) % 6}", "nodeCount": p["nodes"]}
                for n, p in enumerate(pools)
            ],
        },
        "status": {
            "gpuPools": pools,
            "gateway": {"address": f"198.51.100.{i % 250}"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "Available"}],
        },
    }


def member_template(model: str) -> dict[str, Any]:
    return {
        "spec": {
            "containers": [
                {
                    "name": "engine",
                    "image": "vllm/vllm-openai:v0.23.0",
                    "args": [
                        f"--model={model}",
                        "--served-model-name=qwen",
                        "--max-model-len=32768",
                        "--enable-auto-tool-choice",
                        "--tool-call-parser=hermes",
                    ],
                    "env": [
                        {
                            "name": "HF_TOKEN",
                            "valueFrom": {"secretKeyRef": {"name": "hf", "key": "HF_TOKEN"}},
                        }
                    ],
                }
            ]
        }
    }


def replica(
    deployment: str, namespace: str, cluster_: str, index: int, pool: str
) -> dict[str, Any]:
    return {
        "apiVersion": API,
        "kind": "ModelReplica",
        "metadata": {
            "name": naming.replica_name(deployment, cluster_, index),
            "namespace": namespace,
            "uid": "",  # set by fleet_request
            "resourceVersion": "7",
            "labels": {
                api.DEPLOYMENT_LABEL: deployment,
                api.CLUSTER_LABEL: cluster_,
                api.INDEX_LABEL: str(index),
            },
        },
        "spec": {
            "clusterName": cluster_,
            "engines": [
                {
                    "name": "engine",
                    "members": [
                        {
                            "role": "Standalone",
                            "nodePoolName": pool,
                            "deviceRequests": [
                                {
                                    "name": "gpu",
                                    "deviceClassName": "gpu.nvidia.com",
                                    "count": 1,
                                    "selectors": [{"cel": SELECTORS[0]}],
                                }
                            ],
                            "template": member_template(f"org/{deployment}"),
                        }
                    ],
                }
            ],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "Available"}]},
    }


def deployment(replicas: int) -> dict[str, Any]:
    member = {
        "role": "Standalone",
        "nodeSelector": {
            "devices": [{"name": "gpu", "count": 1, "selectors": [{"cel": SELECTORS[1]}]}]
        },
        "template": member_template("Qwen/Qwen3-8B"),
    }
    return {
        "apiVersion": API,
        "kind": "ModelDeployment",
        "metadata": {"name": "qwen", "namespace": "ml-team"},
        "spec": {
            "replicas": replicas,
            "template": {
                "metadata": {"labels": {"app": "qwen"}},
                "spec": {"engines": [{"name": "engine", "members": [member]}]},
            },
        },
    }


def fleet_request(clusters: int, replicas: int) -> fnv1.RunFunctionRequest:
    """A second-call request: the XR, the fleet's clusters and every replica."""
    wanted = max(clusters // 10, 1)
    req = fnv1.RunFunctionRequest(meta=fnv1.RequestMeta(tag="bench"))
    req.observed.composite.resource.CopyFrom(resource.dict_to_struct(deployment(wanted)))
    found = req.required_resources[planning.CLUSTERS]
    for i in range(clusters):
        found.items.add().resource.CopyFrom(resource.dict_to_struct(cluster(i)))
    fleet = req.required_resources[planning.REPLICAS]
    own = wanted // 2
    for i in range(replicas):
        if i < own:
            # This deployment's own replicas: one per cluster, on a pool that fits it.
            item = replica("qwen", "ml-team", f"cluster-{i * 7 % clusters:04}", 0, "pool-1")
        else:
            where = f"cluster-{i % clusters:04}"
            item = replica(
                f"model-{i % 97}", f"team-{i % 13}", where, i // clusters, f"pool-{i % 8}"
            )
        item["metadata"]["uid"] = uid(0, clusters + i)
        fleet.items.add().resource.CopyFrom(resource.dict_to_struct(item))
    return req


def renew(req: fnv1.RunFunctionRequest, generation: int) -> None:
    """Make the fleet one the server never saw: a fresh uid on every object, and new pod
    templates on other deployments' replicas (what they charge and where they run stay;
    the deployment's own keep theirs, which it composes again as they are)."""
    serial = 0
    for name in (planning.CLUSTERS, planning.REPLICAS):
        for item in req.required_resources[name].items:
            fields = item.resource.fields
            fields["metadata"].struct_value.fields["uid"].string_value = uid(generation, serial)
            serial += 1
            labels = fields["metadata"].struct_value.fields["labels"].struct_value.fields
            if name == planning.REPLICAS and labels[api.DEPLOYMENT_LABEL].string_value != "qwen":
                engine = fields["spec"].struct_value.fields["engines"].list_value.values[0]
                member = engine.struct_value.fields["members"].list_value.values[0]
                template = member.struct_value.fields["template"].struct_value.fields
                template["generation"].string_value = str(generation)


def digest(rsp: fnv1.RunFunctionResponse) -> str:
    """The response's digest: placements, composed resources, conditions and events."""
    return hashlib.sha256(rsp.SerializeToString(deterministic=True)).hexdigest()


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


PHASES = {
    "read XR": (("request.py", "composite"), ("planner.py", "read_deployment")),
    "read fleet": (("fleet.py", "read_fleet"), ("cache.py", "read_cache")),
    "schedule": (("scheduler.py", "schedule"),),
    "compose": (
        ("endpoints.py", "compose_replicas"),
        ("endpoints.py", "compose_endpoints"),
        ("endpoints.py", "observed_replicas"),
        ("report.py", "report"),
    ),
}


def where_time_goes(req: fnv1.RunFunctionRequest) -> dict[str, float]:
    """Split one steady run by phase: shares of the profiled run's cumulative time."""
    profile = cProfile.Profile()
    profile.enable()
    runtime.run(req, registry.COMPOSERS)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    cumulative = {
        (path.rsplit("/", 1)[-1], func): c for (path, _, func), (_, _, _, c, _) in stats.items()
    }
    total = cumulative.get(("dispatch.py", "run"), 0.0)
    if not total:
        return {}
    return {
        phase: sum(cumulative.get(key, 0.0) for key in keys) / total
        for phase, keys in PHASES.items()
    }


class Served:
    """The function served by ``modelplane-function`` in a subprocess, for gRPC round trips."""

    def __enter__(self) -> Served:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        address = f"127.0.0.1:{port}"
        self.address = address
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "modelplane",
                "modeldeployment",
                "--insecure",
                "--address",
                address,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        options = [
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ]
        self.channel = grpc.insecure_channel(address, options=options)
        grpc.channel_ready_future(self.channel).result(timeout=STARTUP_SECONDS)
        self.stub = self.channel.unary_unary(
            RUN_FUNCTION,
            request_serializer=None,  # requests are sent as encoded
            response_deserializer=fnv1.RunFunctionResponse.FromString,
        )
        return self

    def call(self, data: bytes) -> fnv1.RunFunctionResponse:
        """One round trip of an encoded request."""
        rsp: fnv1.RunFunctionResponse = self.stub(data, timeout=120)
        return rsp

    def cpu_seconds(self) -> float:
        """The CPU time the server's processes have used so far (Linux; 0 elsewhere).

        Unlike wall time, it hardly grows when other work shares the cores.
        """
        return sum(_cpu_seconds(pid) for pid in _process_tree(self.proc.pid))

    def peak_rss_mib(self) -> float:
        """The peak resident memory of the server, summed over its processes (Linux).

        With ``--workers`` the served process receives every request and its workers
        compose them: each holds its own peak, and the machine pays for all of them.
        """
        return sum(_peak_rss_mib(pid) for pid in _process_tree(self.proc.pid))

    def peak_pss_mib(self, during: Callable[[], T]) -> tuple[T, float]:
        """Run ``during`` and return what it returns with the server's peak memory over it,
        summed over its processes as proportional set sizes (sampled every 20 ms).

        Summed peak RSS counts every page the processes share (the fork server's modules,
        which each worker maps copy-on-write) once per process; PSS splits a shared page
        among the processes that map it, so the sum is what the machine pays.
        """
        peak, done = 0.0, threading.Event()

        def sample() -> None:
            nonlocal peak
            while not done.is_set():
                peak = max(peak, sum(_pss_mib(p) for p in _process_tree(self.proc.pid)))
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            out = during()
        finally:
            done.set()
            sampler.join()
        return out, peak

    def __exit__(self, *_: object) -> None:
        self.channel.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _process_tree(pid: int) -> list[int]:
    """A process and all its descendants (Linux; the process alone elsewhere)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except OSError:
                continue
    return found


def _cpu_seconds(pid: int) -> float:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()  # after the command, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def _pss_mib(pid: int) -> float:
    """A process's proportional set size now (Linux; 0 elsewhere)."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0
    line = next((x for x in rollup.splitlines() if x.startswith("Pss:")), "Pss: 0 kB")
    return int(line.split()[1]) / 1024


def _peak_rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) / 1024


def bench(size: str) -> dict[str, Any]:
    """Measure one size, served, from the Go client (never seen, steady), and profile it."""
    clusters, replicas = SIZES[size]
    req = fleet_request(clusters, replicas)
    steady_repeat, new_repeat = REPEAT[size]
    result: dict[str, Any] = {"size": size, "clusters": clusters, "replicas": replicas}
    result["where"] = where_time_goes(planning.decode_request(req.SerializeToString()))
    planning.forget()
    with Served() as served, goclient.GoClient(served.address, req) as client:
        digests = {client.run("steady", 1).digest}  # connected, and every worker started
        pss = 0.0
        for what, repeat in (("new", new_repeat), ("steady", steady_repeat)):
            cpu = served.cpu_seconds()
            answer, peak = served.peak_pss_mib(functools.partial(client.run, what, repeat))
            pss = max(pss, peak)
            result[f"{what} cpu ms"] = (served.cpu_seconds() - cpu) / repeat * 1e3
            result[f"{what} ms"] = statistics.median(answer.seconds) * 1e3
            result["encode ms"] = answer.encode_seconds / repeat * 1e3
            result["request MiB"] = answer.sizes[-1] / 2**20
            digests.add(answer.digest)
        result["RSS MiB"] = served.peak_rss_mib()
        result["PSS MiB"] = pss
    result["digests"] = digests
    return result


def recorded() -> dict[str, str]:
    """The digests recorded before the speed work, per size."""
    if not DIGESTS.exists():
        return {}
    found: dict[str, str] = json.loads(DIGESTS.read_text())
    return found


def record(results: list[dict[str, Any]]) -> None:
    """Record each size's digest (one per size: every call must have answered the same)."""
    found = recorded()
    for r in results:
        if len(r["digests"]) != 1:
            msg = f"{r['size']}: calls answered differently, nothing recorded"
            raise SystemExit(msg)
        found[r["size"]] = next(iter(r["digests"]))
    DIGESTS.write_text(json.dumps(found, indent=2, sort_keys=True) + "\n")


def same_placements(r: dict[str, Any], digests: dict[str, str]) -> str:
    want = digests.get(r["size"])
    if want is None:
        return "unrecorded"
    return "identical" if r["digests"] == {want} else "CHANGED"


def verdicts(r: dict[str, Any]) -> list[tuple[str, float, float]]:
    """Each target of the size: (what, measured, target)."""
    out = []
    if r["size"] in TARGET_MS:
        target = TARGET_MS[r["size"]]
        out += [("cpu new", r["new cpu ms"], target), ("cpu steady", r["steady cpu ms"], target)]
    if r["size"] in TARGET_RSS_MIB:
        out.append(("RSS MiB", r["RSS MiB"], TARGET_RSS_MIB[r["size"]]))
        out.append(("PSS MiB", r["PSS MiB"], TARGET_RSS_MIB[r["size"]]))
    out.append(("steady/new", ratio(r), TARGET_RATIO))
    return out


def ratio(r: dict[str, Any]) -> float:
    """Steady CPU over never-seen CPU."""
    return float(r["steady cpu ms"]) / max(float(r["new cpu ms"]), 1e-9)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_implementation()} "
        f"{platform.python_version()}, load average {load}"
    )


def main(sizes: list[str] | None = None) -> None:
    args = sizes if sizes is not None else sys.argv[1:]
    recording = "--record" in args
    chosen = [a for a in args if a != "--record"] or list(SIZES)
    logging.configure(logging.Level.INFO)
    print(f"machine: {machine()}")
    print(
        "served figures from the Go client (tools/benchclient: requests built and encoded as "
        "Crossplane does, a new map order on every call, one connection); cpu = the server's "
        "CPU per reconcile summed over its processes; wall = median round trip; RSS = peak, "
        "summed over its processes (pages they share counted once per process); PSS = peak "
        "of the sum of their proportional set sizes (shared pages counted once: what the "
        "machine pays), sampled every 20 ms"
    )
    header = (
        f"{'size':4} {'clusters':>8} {'replicas':>8} {'req MiB':>8} {'cpu new':>8} "
        f"{'cpu steady':>10} {'ratio':>6} {'wall new':>9} {'wall steady':>11} {'Go enc':>7} "
        f"{'RSS MiB':>8} {'PSS MiB':>8}  placements  targets"
    )
    print(header)
    digests = recorded()
    results = []
    for size in chosen:
        r = bench(size)
        results.append(r)
        missed = [what for what, got, want in verdicts(r) if got > want]
        print(
            f"{r['size']:4} {r['clusters']:>8} {r['replicas']:>8} {r['request MiB']:>8.1f} "
            f"{r['new cpu ms']:>8.0f} {r['steady cpu ms']:>10.0f} {ratio(r):>6.2f} "
            f"{r['new ms']:>9.0f} {r['steady ms']:>11.0f} {r['encode ms']:>7.0f} "
            f"{r['RSS MiB']:>8.0f} {r['PSS MiB']:>8.0f}  {same_placements(r, digests):10}  "
            f"{'missed: ' + ', '.join(missed) if missed else 'ok'}  (load {_load()})",
            flush=True,
        )
    for r in results:
        shares = ", ".join(f"{k} {v:.0%}" for k, v in r["where"].items())
        print(f"{r['size']}: profile of a steady call (Python client, in process): {shares}")
    print(f"against issue 24's targets (machine: {machine()}):")
    for r in results:
        checks = "; ".join(
            f"{what} {got:.2f} <= {want:.2f} {'ok' if got <= want else 'MISSED'}"
            if what == "steady/new"
            else f"{what} {got:.0f} <= {want:.0f} {'ok' if got <= want else 'MISSED'}"
            for what, got, want in verdicts(r)
        )
        print(f"  {r['size']}: {checks}; placements {same_placements(r, digests)}")
    if recording:
        record(results)
        print(f"recorded digests of {', '.join(chosen)} in {DIGESTS.name}")


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
