"""The ModelDeployment function on generated fleets: latency, memory, identical placements.

Fleets (every cluster publishes 8 GPU pools of 6 InferenceClasses; every object carries
a ``uid`` and ``resourceVersion``, as objects read from the API server do):

- S: 20 clusters, 100 ModelReplicas in the fleet;
- M: 200 clusters, 1,000 ModelReplicas;
- L: 1,000 clusters, 10,000 ModelReplicas;
- 5xL: 5,000 clusters, 50,000 ModelReplicas.

The deployment under test wants one replica per 10 clusters and already has half of
them, so each call retains, fills and explains. Each size runs against its own served
function (``modelplane-function`` in a subprocess, over a local socket), so its peak
RSS is its own. Figures are medians:

- ``grpc new``: a whole round trip (decoding included) with a fleet the server has never
  seen (every object gets a fresh uid, other teams' replicas new pod templates);
- ``grpc warm``: the same request again (nothing changed: the steady state);
- ``enc``: what encoding the request costs the client, which the round trips leave out
  (they send it encoded, as Crossplane encodes its requests itself: in Python it took
  some 70 ms at L, a third of the round trip);
- ``first`` / ``steady``: the function in process, decoding included (the fleet kept
  encoded: ``wire.decode_request``), with nothing remembered / after the same call;
  ``ratio`` is steady / first; ``decode`` / ``wire`` decoding alone, whole / fleet
  encoded;
- ``cpu new`` / ``cpu warm``: the served function's CPU time per call (all its
  processes; 10 ms ticks), which, unlike wall time, hardly grows when other work shares
  the cores;
- ``RSS``: the served function's peak resident memory (VmHWM; with several processes,
  the largest).

The served figures use whatever request decoder the server registers; the fleet-encoded
one (``wire.add_function_runner`` / ``wire.decode_request``) is what ``first`` and
``steady`` measure.

Every response is checked against the digest of the response recorded before the
speed work (``benches/placements.json``): placements, conditions and events must be
byte-identical. ``python -m benches.bench_scheduler --record`` records them afresh.

``python -m benches`` runs every size; ``python -m benches.bench_scheduler S M`` picks.
"""

from __future__ import annotations

import cProfile
import hashlib
import itertools
import json
import os
import platform
import pstats
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from crossplane.function import logging, resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from modelplane import registry, server
from modelplane.compose import model_deployment as md
from modelplane.compose.model_deployment import wire
from modelplane.domain import naming

API = "modelplane.ai/v1alpha1"
SIZES = {"S": (20, 100), "M": (200, 1_000), "L": (1_000, 10_000), "5xL": (5_000, 50_000)}
# Issue 13's targets: a round trip in ms (fleet never seen, and warm), peak RSS in MiB,
# and steady / first.
TARGET_MS = {"M": 30.0, "L": 250.0, "5xL": 1_500.0}
TARGET_RSS_MIB = {"5xL": 400.0}
TARGET_RATIO = 1 / 3
REPEAT = {"S": (30, 10), "M": (15, 8), "L": (5, 3), "5xL": (3, 2)}  # (warm, new fleet)
DIGESTS = Path(__file__).with_name("placements.json")
RUN_FUNCTION = "/apiextensions.fn.proto.v1.FunctionRunnerService/RunFunction"
POOLS_PER_CLUSTER = 8
MAX_MESSAGE = 256 * 1024 * 1024


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
                md.DEPLOYMENT_LABEL: deployment,
                md.CLUSTER_LABEL: cluster_,
                md.INDEX_LABEL: str(index),
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
    found = req.required_resources[md.CLUSTERS]
    for i in range(clusters):
        found.items.add().resource.CopyFrom(resource.dict_to_struct(cluster(i)))
    fleet = req.required_resources[md.REPLICAS]
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
    for name in (md.CLUSTERS, md.REPLICAS):
        for item in req.required_resources[name].items:
            fields = item.resource.fields
            fields["metadata"].struct_value.fields["uid"].string_value = uid(generation, serial)
            serial += 1
            labels = fields["metadata"].struct_value.fields["labels"].struct_value.fields
            if name == md.REPLICAS and labels[md.DEPLOYMENT_LABEL].string_value != "qwen":
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
    "read XR": (("_kit.py", "composite"), ("__init__.py", "read_deployment")),
    "read fleet": (("fleet.py", "read_fleet"), ("fleet.py", "read_cache")),
    "schedule": (("scheduler.py", "schedule"),),
    "compose": (
        ("manifests.py", "compose_replicas"),
        ("manifests.py", "compose_endpoints"),
        ("manifests.py", "observed_replicas"),
        ("report.py", "report"),
    ),
}


def where_time_goes(req: fnv1.RunFunctionRequest) -> dict[str, float]:
    """Split one steady run by phase: shares of the profiled run's cumulative time."""
    profile = cProfile.Profile()
    profile.enable()
    server.run(req, registry.COMPOSERS)
    profile.disable()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    cumulative = {
        (path.rsplit("/", 1)[-1], func): c for (path, _, func), (_, _, _, c, _) in stats.items()
    }
    total = cumulative.get(("server.py", "run"), 0.0)
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
        grpc.channel_ready_future(self.channel).result(timeout=30)
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
        """The peak resident memory of the server's busiest process (Linux; 0 elsewhere).

        With ``--workers`` the served process supervises and its workers serve, so this
        is the largest peak among it and its descendants.
        """
        return max((_peak_rss_mib(pid) for pid in _process_tree(self.proc.pid)), default=0.0)

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


def _peak_rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
    return int(line.split()[1]) / 1024


def bench(size: str) -> dict[str, Any]:
    """Measure one size: in process (first, steady) and served (new fleet, warm)."""
    clusters, replicas = SIZES[size]
    req = fleet_request(clusters, replicas)
    data = req.SerializeToString()
    warm_repeat, new_repeat = REPEAT[size]
    digests: set[str] = set()

    def first() -> None:
        md.forget()
        digests.add(digest(server.run(wire.decode_request(data), registry.COMPOSERS)))

    def steady() -> None:
        digests.add(digest(server.run(wire.decode_request(data), registry.COMPOSERS)))

    result: dict[str, Any] = {"size": size, "clusters": clusters, "replicas": replicas}
    result["request MiB"] = len(data) / 2**20
    result["first ms"] = median_ms(first, new_repeat)
    result["steady ms"] = median_ms(steady, warm_repeat)
    result["decode ms"] = median_ms(lambda: fnv1.RunFunctionRequest.FromString(data), new_repeat)
    result["wire ms"] = median_ms(lambda: wire.decode_request(data), new_repeat)
    result["encode ms"] = median_ms(req.SerializeToString, new_repeat)
    result["where"] = where_time_goes(wire.decode_request(data))
    md.forget()
    with Served() as served:
        generations = itertools.count(1)

        def new_fleet() -> None:
            renew(req, next(generations))
            encoded = req.SerializeToString()  # renewing and encoding are the client's work
            start = time.perf_counter()
            rsp = served.call(encoded)
            samples.append((time.perf_counter() - start) * 1e3)
            digests.add(digest(rsp))

        samples: list[float] = []
        cpu = served.cpu_seconds()
        for _ in range(new_repeat):
            new_fleet()
        result["grpc new ms"] = statistics.median(samples)
        result["new cpu ms"] = (served.cpu_seconds() - cpu) / new_repeat * 1e3
        encoded = req.SerializeToString()
        answers: list[fnv1.RunFunctionResponse] = []
        cpu = served.cpu_seconds()
        result["grpc warm ms"] = median_ms(
            lambda: answers.append(served.call(encoded)), warm_repeat
        )
        result["warm cpu ms"] = (served.cpu_seconds() - cpu) / warm_repeat * 1e3
        digests.update(digest(rsp) for rsp in answers)
        result["RSS MiB"] = served.peak_rss_mib()
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
        out += [("grpc new", r["grpc new ms"], target), ("grpc warm", r["grpc warm ms"], target)]
    if r["size"] in TARGET_RSS_MIB:
        out.append(("RSS MiB", r["RSS MiB"], TARGET_RSS_MIB[r["size"]]))
    out.append(("steady/first", r["steady ms"] / r["first ms"], TARGET_RATIO))
    return out


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
    print(f"machine: {machine()}; medians in ms")
    header = (
        f"{'size':4} {'clusters':>8} {'replicas':>8} {'req MiB':>8} {'grpc new':>9} "
        f"{'grpc warm':>9} {'cpu new':>8} {'cpu warm':>8} {'first':>7} {'steady':>7} "
        f"{'ratio':>6} {'decode':>7} {'wire':>6} {'enc':>6} {'RSS MiB':>8}  placements  targets"
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
            f"{r['grpc new ms']:>9.1f} {r['grpc warm ms']:>9.1f} {r['new cpu ms']:>8.0f} "
            f"{r['warm cpu ms']:>8.0f} {r['first ms']:>7.1f} "
            f"{r['steady ms']:>7.1f} {r['steady ms'] / r['first ms']:>6.2f} {r['decode ms']:>7.1f} "
            f"{r['wire ms']:>6.1f} {r['encode ms']:>6.1f} {r['RSS MiB']:>8.0f}  "
            f"{same_placements(r, digests):10}  {'missed: ' + ', '.join(missed) if missed else 'ok'}",
            flush=True,
        )
    for r in results:
        shares = ", ".join(f"{k} {v:.0%}" for k, v in r["where"].items())
        print(f"{r['size']}: steady time: {shares}")
    print(f"against issue 13's targets (machine: {machine()}):")
    for r in results:
        checks = "; ".join(
            f"{what} {got:.2f} <= {want:.2f} {'ok' if got <= want else 'MISSED'}"
            if what == "steady/first"
            else f"{what} {got:.0f} <= {want:.0f} {'ok' if got <= want else 'MISSED'}"
            for what, got, want in verdicts(r)
        )
        print(f"  {r['size']}: {checks}; placements {same_placements(r, digests)}")
    if recording:
        record(results)
        print(f"recorded digests of {', '.join(chosen)} in {DIGESTS.name}")


if __name__ == "__main__":
    main()
