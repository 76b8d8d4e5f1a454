"""The ModelDeployment function on generated fleets: latency, request size, peak memory.

Fleets (every cluster publishes 8 GPU pools of 6 InferenceClasses):

- S: 20 clusters, 100 ModelReplicas in the fleet;
- M: 200 clusters, 1,000 ModelReplicas;
- L: 1,000 clusters, 10,000 ModelReplicas.

The deployment under test wants one replica per 10 clusters and already has half of
them, so each call retains, fills and explains. Figures are medians of repeated calls:
``decode`` is parsing the request bytes (what gRPC does before the function runs),
``run`` is the function itself in process, with the fleet objects it read on earlier
calls remembered (the steady state: most of a fleet is unchanged between calls), and
``cold`` the same with nothing remembered; ``grpc`` a whole round trip to a served
function over a local socket (decoding included). ``heap MiB`` is the Python heap's peak
during a cold run (tracemalloc: protobuf's C arena is not counted); ``RSS MiB`` the
served function's peak resident memory so far. ``where`` splits one run by phase
(profiled, so shares only).

``python -m benches`` runs it; ``python -m benches.bench_scheduler S M`` picks sizes.
"""

from __future__ import annotations

import cProfile
import itertools
import platform
import pstats
import socket
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
from crossplane.function import logging, resource
from crossplane.function.proto.v1 import run_function_pb2 as fnv1
from crossplane.function.proto.v1 import run_function_pb2_grpc as grpcv1
from modelplane import registry, server
from modelplane.compose import model_deployment as md
from modelplane.compose.model_deployment import fleet
from modelplane.domain import naming

API = "modelplane.ai/v1alpha1"
SIZES = {"S": (20, 100), "M": (200, 1_000), "L": (1_000, 10_000)}
TARGETS_MS = {"M": 100.0, "L": 1_000.0}
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
        fleet.items.add().resource.CopyFrom(resource.dict_to_struct(item))
    return req


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def peak_mib(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 2**20


PHASES = {
    "read XR": (("_kit.py", "composite"), ("__init__.py", "read_deployment")),
    "read fleet": (("fleet.py", "read_fleet"), ("fleet.py", "read_cache")),
    "schedule": (("scheduler.py", "schedule"),),
    "  of which CEL": (("cel.py", "evaluate"), ("cel.py", "compile_selector")),
    "compose": (
        ("manifests.py", "compose_replicas"),
        ("manifests.py", "compose_endpoints"),
        ("manifests.py", "observed_ready"),
        ("report.py", "report"),
    ),
}


def where_time_goes(req: fnv1.RunFunctionRequest) -> dict[str, float]:
    """Split one run by phase: shares of the profiled run's cumulative time."""
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
        self.stub = grpcv1.FunctionRunnerServiceStub(self.channel)  # type: ignore[no-untyped-call]
        return self

    def peak_rss_mib(self) -> float:
        """The server process's peak resident memory so far (Linux; 0 elsewhere)."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0.0
        line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), "VmHWM: 0 kB")
        return int(line.split()[1]) / 1024

    def __exit__(self, *_: object) -> None:
        self.channel.close()
        self.proc.terminate()
        self.proc.wait(timeout=10)


def bench(size: str, served: Served | None) -> dict[str, Any]:
    clusters, replicas = SIZES[size]
    req = fleet_request(clusters, replicas)
    data = req.SerializeToString()
    repeat = {"S": 30, "M": 15, "L": 5}[size]
    decoded = fnv1.RunFunctionRequest.FromString(data)
    rsp = server.run(decoded, registry.COMPOSERS)

    def cold() -> None:
        fleet.forget()
        server.run(decoded, registry.COMPOSERS)

    placed = sum(1 for r in rsp.desired.resources.values() if r.resource["kind"] == "ModelReplica")
    result = {
        "size": size,
        "clusters": clusters,
        "replicas": replicas,
        "request MiB": len(data) / 2**20,
        "placed": placed,
        "decode ms": median_ms(lambda: fnv1.RunFunctionRequest.FromString(data), repeat),
        "cold ms": median_ms(cold, repeat),
        "run ms": median_ms(lambda: server.run(decoded, registry.COMPOSERS), repeat),
        "peak MiB": peak_mib(cold),
        "where": where_time_goes(decoded),
    }
    if served is not None:
        result["grpc ms"] = median_ms(lambda: served.stub.RunFunction(req, timeout=60), repeat)
        result["server MiB"] = served.peak_rss_mib()
    return result


def main(sizes: list[str] | None = None) -> None:
    chosen = sizes or list(SIZES)
    logging.configure(logging.Level.INFO)
    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}; medians in ms")  # fmt: skip
    results = []
    with Served() as served:
        for size in chosen:
            results.append(bench(size, served))
    header = f"{'size':4} {'clusters':>8} {'replicas':>8} {'req MiB':>8} {'decode':>7} "
    header += f"{'cold':>7} {'run':>7} {'grpc':>7} {'heap MiB':>9} {'RSS MiB':>8} {'target':>7}"
    print(header)
    for r in results:
        target = TARGETS_MS.get(r["size"])
        verdict = "" if target is None else ("ok" if r["run ms"] < target else "MISSED")
        print(
            f"{r['size']:4} {r['clusters']:>8} {r['replicas']:>8} {r['request MiB']:>8.2f} "
            f"{r['decode ms']:>7.1f} {r['cold ms']:>7.1f} {r['run ms']:>7.1f} "
            f"{r.get('grpc ms', 0):>7.1f} {r['peak MiB']:>9.1f} {r.get('server MiB', 0):>8.0f} "
            f"{verdict:>7}"
        )
    for r in results:
        shares = ", ".join(f"{k} {v:.0%}" for k, v in r["where"].items())
        print(f"{r['size']}: placed {r['placed']}; time: {shares}")
    for small, large in itertools.pairwise(results):
        for column in ("cold ms", "run ms"):
            growth = (large[column] / small[column]) / (large["replicas"] / small["replicas"])
            print(
                f"{column[:-3]} {small['size']}->{large['size']}: {growth:.2f} of linear "
                "(1.00 = time grows with the fleet; below: fixed costs amortized)"
            )


if __name__ == "__main__":
    main(sys.argv[1:] or None)
